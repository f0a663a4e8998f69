"""Deprecated import path: this module moved to :mod:`otel_toolscore._scored`.

Kept so that code written against earlier releases keeps working; import from ``otel_toolscore._scored``.
"""

from __future__ import annotations

from .._scored import ScoredRun

__all__ = ["ScoredRun"]
