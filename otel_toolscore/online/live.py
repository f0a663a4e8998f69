"""Deprecated location of :class:`~otel_toolscore.core.ScoredRun` (now in :mod:`otel_toolscore.core`).

The live pipeline's worker side moved to the core package every adapter shares; this name stays
importable here for code written against earlier releases.
"""

from __future__ import annotations

from .._scored import ScoredRun

__all__ = ["ScoredRun"]
