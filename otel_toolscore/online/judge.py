"""Deprecated import path: the judge lives in :mod:`otel_toolscore.judge`.

Kept so that ``from otel_toolscore.online.judge import Judge`` keeps working; import from
``otel_toolscore.judge`` (or ``otel_toolscore``) instead.
"""

from __future__ import annotations

from ..judge._judge import Judge, JudgeStats, judge_from_env
from ..judge._queue import JudgeAttempt

__all__ = ["Judge", "JudgeAttempt", "JudgeStats", "judge_from_env"]
