"""The LLM judge of live runs: which runs it sees, within which limits, and what it writes.

:class:`Judge` takes the runs a span processor (or the scoring service, or the offline commands)
hands it, samples them (:class:`JudgeSampler`: a ratio on the trace id and priority rules), queues
them for worker threads that call the LLM scorer within a circuit breaker, a rate limit and a token
budget, and writes each judgment as metrics, an evaluation event and a carrier span.
:class:`JudgeSettings` holds every setting (``OTEL_TOOLSCORE_JUDGE_*``); :func:`judge_from_env`
builds the judge the environment asks for.

Importing this package loads nothing: each name loads its module on first use (the sampler loads
without pydantic or the LLM scorer). The modules, one job each: ``sampler`` (which runs),
``_budget`` (rate limit and token budget), ``_circuit`` (the circuit breaker), ``_queue`` (the queue,
the workers and the accounting), ``_report`` (what a judgment writes), ``settings`` (the settings and
what they build) and ``_judge`` (the :class:`Judge` that ties them together).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from ._budget import Reservation, RollingLimit, TokenBudget
    from ._judge import Judge, JudgeStats, judge_from_env
    from ._queue import JudgeAttempt
    from ._sampler import JudgeSampler, SequenceMemory, ratio_threshold, trace_id_in_ratio
    from ._settings import JUDGE_ENV_PREFIX, JudgeSettings, load_tools_file

__all__ = [
    "JUDGE_ENV_PREFIX",
    "Judge",
    "JudgeAttempt",
    "JudgeSampler",
    "JudgeSettings",
    "JudgeStats",
    "Reservation",
    "RollingLimit",
    "SequenceMemory",
    "TokenBudget",
    "judge_from_env",
    "load_tools_file",
    "ratio_threshold",
    "trace_id_in_ratio",
]

# name -> module that defines it; loaded on first attribute access.
_LAZY: dict[str, str] = {
    "JUDGE_ENV_PREFIX": "._settings",
    "Judge": "._judge",
    "JudgeAttempt": "._queue",
    "JudgeSampler": "._sampler",
    "JudgeSettings": "._settings",
    "JudgeStats": "._judge",
    "Reservation": "._budget",
    "RollingLimit": "._budget",
    "SequenceMemory": "._sampler",
    "TokenBudget": "._budget",
    "judge_from_env": "._judge",
    "load_tools_file": "._settings",
    "ratio_threshold": "._sampler",
    "trace_id_in_ratio": "._sampler",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
