"""Deprecated import path: this module moved to :mod:`otel_toolscore.expectations`.

Kept so that code written against earlier releases keeps working; import from ``otel_toolscore.expectations``.
"""

from __future__ import annotations

from ..expectations import (
    ATTR_EXPECT_STRICT,
    ATTR_EXPECT_TOOL,
    ATTR_EXPECT_TOOL_ORDER,
    EXPECTATION_CONTEXT,
    Expectation,
    RulesError,
    current_expectation,
    expect,
    expectation_from_attributes,
    load_rules,
    resolve,
)

__all__ = [
    "ATTR_EXPECT_STRICT",
    "ATTR_EXPECT_TOOL",
    "ATTR_EXPECT_TOOL_ORDER",
    "EXPECTATION_CONTEXT",
    "Expectation",
    "RulesError",
    "current_expectation",
    "expect",
    "expectation_from_attributes",
    "load_rules",
    "resolve",
]
