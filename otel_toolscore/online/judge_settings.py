"""Deprecated import path: the judge's settings live in :mod:`otel_toolscore.judge._settings`.

Kept so that ``from otel_toolscore.online.judge_settings import JudgeSettings`` keeps working;
import from ``otel_toolscore.judge`` (or ``otel_toolscore``) instead.
"""

from __future__ import annotations

from ..judge._settings import JUDGE_ENV_PREFIX, JudgeSettings, load_tools_file

__all__ = ["JUDGE_ENV_PREFIX", "JudgeSettings", "load_tools_file"]
