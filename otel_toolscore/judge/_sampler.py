"""Which runs the LLM judge sees: a deterministic ratio on the trace id and priority rules; the
sampler also holds the judge's rate limit and token budget (:mod:`._budget`).

* **Ratio** — the OpenTelemetry SDK's ``TraceIdRatioBased`` decision: a run is in the sample when
  the low 64 bits of its trace id are below ``round(ratio * 2^64)`` (the bound is the SDK's own
  ``TraceIdRatioBased.get_bound_for_rate``). So the same ratio selects the same traces as a
  ``TraceIdRatioBased`` / ``parentbased_traceidratio`` sampler at that ratio: with head sampling at
  ratio *r* and the judge at ratio *j ≤ r*, every trace the judge samples by ratio was also kept by
  the head sampler. Every process takes the same decision for a trace, every run of a trace gets
  the same decision, and a higher ratio samples a superset of a lower one.
* **Priorities** (each can be switched off) — judged whatever the ratio says: runs that failed the
  code scorer, runs whose tool sequence this process has not seen yet (a bounded LRU of sequence
  hashes), runs the application flagged with ``toolscore.judge=true`` (span attribute or baggage),
  and an optional user predicate. ``toolscore.judge=false`` opts a run out entirely.
* **Limits** — at most ``max_per_minute`` judgments started in any rolling minute and
  ``max_tokens_per_hour`` tokens in any rolling hour (:class:`RollingLimit`, :class:`TokenBudget`).

The ratio and priority decision (:meth:`JudgeSampler.select`) runs on the span's thread and costs
a few hash operations; limits are checked by the judge's workers just before a request.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace.sampling import TraceIdRatioBased

from ..telemetry import names
from ._budget import Reservation, RollingLimit, TokenBudget

if TYPE_CHECKING:
    from .._scored import ScoredRun

__all__ = [
    "JudgeSampler",
    "Reservation",
    "RollingLimit",
    "SequenceMemory",
    "TokenBudget",
    "ratio_threshold",
    "trace_id_in_ratio",
]

# The bits TraceIdRatioBased compares: the low 64 of the 128-bit trace id.
_RATIO_MASK = TraceIdRatioBased.TRACE_ID_LIMIT


def ratio_threshold(ratio: float) -> int:
    """The bound the low 64 bits of a trace id are compared with: ``TraceIdRatioBased``'s, ``round(ratio * 2^64)``."""
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"ratio must be within [0, 1], got {ratio!r}")
    return int(TraceIdRatioBased.get_bound_for_rate(ratio))


def trace_id_in_ratio(trace_id: int, ratio: float) -> bool:
    """Whether ``trace_id`` is in the deterministic ``ratio`` sample: ``TraceIdRatioBased(ratio)``'s decision."""
    return (trace_id & _RATIO_MASK) < ratio_threshold(ratio)


def _flag(attributes: Mapping[str, Any]) -> bool | None:
    """The application's ``toolscore.judge`` flag: True, False or None (not set / unreadable)."""
    value = attributes.get(names.ATTR_JUDGE_FLAG)
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    return None


class SequenceMemory:
    """A bounded LRU of tool-sequence hashes: ``is_new`` says whether a sequence was not seen yet."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._seen: OrderedDict[int, None] = OrderedDict()
        self._lock = threading.Lock()  # held for two dict operations; never around I/O

    def is_new(self, key: int) -> bool:
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return False
            self._seen[key] = None
            if len(self._seen) > self.capacity:
                self._seen.popitem(last=False)
            return True

    def __len__(self) -> int:
        return len(self._seen)


class JudgeSampler:
    """Chooses the runs the LLM judge sees, and holds the rate limit and token budget.

    Args:
        ratio: share of traces judged (0..1), decided on the trace id.
        always_when_code_fails: judge every run the code scorer scored below 1.
        always_when_new_sequence: judge a run whose (agent, tool sequence) this process has not
            seen among the last ``sequence_memory`` sequences.
        always_when_flagged: honour the application's ``toolscore.judge`` flag (true: judge it;
            false: never judge it, whatever else says so).
        always_when: an optional predicate on the :class:`~otel_toolscore.online.processor.ScoredRun`
            (keep it cheap: it runs on the span's thread).
        max_per_minute: judgments started in any rolling minute (``None``: no limit).
        max_tokens_per_hour: judge tokens (input + output) in any rolling hour (``None``: no limit).
    """

    def __init__(
        self,
        ratio: float = 0.05,
        *,
        always_when_code_fails: bool = True,
        always_when_new_sequence: bool = True,
        always_when_flagged: bool = True,
        always_when: Callable[[ScoredRun], bool] | None = None,
        max_per_minute: int | None = 60,
        max_tokens_per_hour: int | None = 200_000,
        sequence_memory: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ratio = float(ratio)
        self._threshold = ratio_threshold(self.ratio)
        self.always_when_code_fails = always_when_code_fails
        self.always_when_new_sequence = always_when_new_sequence
        self.always_when_flagged = always_when_flagged
        self.always_when = always_when
        self.max_per_minute = max_per_minute
        self.max_tokens_per_hour = max_tokens_per_hour
        self.rate = RollingLimit(max_per_minute, 60.0, clock) if max_per_minute is not None else None
        self.budget = TokenBudget(max_tokens_per_hour, 3600.0, clock) if max_tokens_per_hour is not None else None
        self.sequences = SequenceMemory(sequence_memory)

    def in_ratio(self, trace_id: int) -> bool:
        return (trace_id & _RATIO_MASK) < self._threshold

    def select(self, scored: ScoredRun) -> str | None:
        """Why this run is judged (a ``names.JUDGE_SAMPLED_BY`` value), or ``None`` to skip it.

        ``ratio`` wins over the priorities when both apply, so the runs labelled ``ratio`` are
        exactly the unbiased sample whatever the priorities add.
        """
        run = scored.record  # the run's record: no model is built to decide
        flag = _flag(run.attributes) if self.always_when_flagged and run.attributes else None
        if flag is False:
            return None
        new_sequence = False
        if self.always_when_new_sequence:
            key = hash((run.agent_name, tuple([c.name for c in run.tool_calls if c.kind == "tool"])))
            new_sequence = self.sequences.is_new(key)
        if self.in_ratio(scored.ref.trace_id):
            return "ratio"
        if flag:
            return "flag"
        code_score = scored.score  # the verdict's score: never builds the full result here
        if self.always_when_code_fails and code_score is not None and code_score < 1.0:
            return "code_fail"
        if new_sequence:
            return "new_sequence"
        if self.always_when is not None and self.always_when(scored):
            return "rule"
        return None

    def __repr__(self) -> str:
        return (
            f"JudgeSampler(ratio={self.ratio}, always_when_code_fails={self.always_when_code_fails}, "
            f"always_when_new_sequence={self.always_when_new_sequence}, max_per_minute={self.max_per_minute}, "
            f"max_tokens_per_hour={self.max_tokens_per_hour})"
        )
