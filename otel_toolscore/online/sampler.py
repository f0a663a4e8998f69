"""Deprecated import path: the judge's sampler lives in :mod:`otel_toolscore.judge._sampler`.

Kept so that ``from otel_toolscore.online.sampler import JudgeSampler`` keeps working; import from
``otel_toolscore.judge`` (or ``otel_toolscore``) instead.
"""

from __future__ import annotations

from ..judge._budget import Reservation, RollingLimit, TokenBudget
from ..judge._sampler import JudgeSampler, SequenceMemory, ratio_threshold, trace_id_in_ratio

__all__ = [
    "JudgeSampler",
    "Reservation",
    "RollingLimit",
    "SequenceMemory",
    "TokenBudget",
    "ratio_threshold",
    "trace_id_in_ratio",
]
