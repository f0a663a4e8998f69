"""The processor's settings for the offline commands: ``OTEL_TOOLSCORE_*`` as the processor and
``serve`` read them (:meth:`otel_toolscore.settings.Settings.from_env`), with the command's flags over
them. ``extract`` and ``score`` take from them how runs are read (content kept, text and parse
limits, calls per run) and ``score`` the expectations (rules file, default expected tool or order,
strict mode, framework calls), so a CI gate scores recorded traces the way production does.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..core import core_expectations, core_options
from ..expectations import Expectation
from ..extract import ExtractOptions
from ..settings import Settings

__all__ = ["FLAG_SETTINGS", "expectations", "extract_options", "offline_settings"]

#: argparse dest -> setting, for the flags that override a processor setting.
FLAG_SETTINGS = {
    "max_chars": "max_content_chars",
    "max_parse_chars": "max_parse_chars",
    "rules": "rules",
    "expected_tool": "expected_tool",
    "expected_order": "expected_tool_order",
    "strict": "strict_mode",
    "include_framework_calls": "include_framework_calls",
}


def offline_settings(args: argparse.Namespace) -> Settings:
    """``OTEL_TOOLSCORE_*`` with the flags of ``args`` over them (a bad flag value raises
    :class:`~otel_toolscore.settings.ConfigError`; a bad variable is a warning, as for the processor)."""
    overrides: dict[str, Any] = {}
    for dest, setting in FLAG_SETTINGS.items():
        value = getattr(args, dest, None)
        if value is not None:
            overrides[setting] = tuple(value) if setting == "expected_tool_order" else value
    if getattr(args, "no_content", False):
        overrides["capture_content"] = False
    settings = Settings.from_env(**overrides)
    update: dict[str, Any] = {}
    # A default given on the command line replaces the environment's, whichever form each takes.
    if "expected_tool" in overrides and "expected_tool_order" not in overrides:
        update["expected_tool_order"] = None
    if "expected_tool_order" in overrides and "expected_tool" not in overrides:
        update["expected_tool"] = None
    if settings.capture_content is None:
        update["capture_content"] = True  # offline, the content is what the outputs show
    return settings.model_copy(update=update) if update else settings


def extract_options(settings: Settings) -> ExtractOptions:
    """How the files are read, as the processor reads spans with these settings."""
    return core_options(settings, [], judging=True)


def expectations(settings: Settings, args: argparse.Namespace) -> tuple[list[Expectation], Expectation | None]:
    """The rules and the default expectation, as the processor builds them from ``settings``
    (:class:`~otel_toolscore.expectations.RulesError` for a rules file that cannot be used).
    The default is named after where it came from: ``command line`` or the variable."""
    rules, default = core_expectations(settings, None)
    if default is not None:
        from_flags = any(getattr(args, d, None) is not None for d in ("expected_tool", "expected_order"))
        name = "command line" if from_flags else (
            Settings.env_name("expected_tool_order") if default.expected_tool_order else Settings.env_name("expected_tool"))
        default = default.model_copy(update={"name": name})
    return rules, default
