"""Which runs the LLM judge sees: a deterministic ratio on the trace id, priority rules, a rate limit
and a token budget.

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
* **Rate limit** — at most ``max_per_minute`` judgments started in any rolling 60 s window (a
  strict rolling window rather than a refilling bucket: it is what providers' RPM limits mean).
* **Token budget** — at most ``max_tokens_per_hour`` tokens in any rolling hour. A judgment
  reserves its worst-case estimate before its request and the reservation is corrected to the
  usage the endpoint reports, so the budget cannot be overrun by requests in flight.

The ratio and priority decision (:meth:`JudgeSampler.select`) runs on the span's thread and costs
a few hash operations; limits are checked by the judge's workers just before a request.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace.sampling import TraceIdRatioBased

from ..telemetry import names

if TYPE_CHECKING:
    from ..core.scored import ScoredRun

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


class RollingLimit:
    """At most ``limit`` acquisitions in any rolling ``window_s``; ``clock`` is injectable for tests."""

    def __init__(self, limit: int, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._times: deque[float] = deque()
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        with self._lock:
            now = self._clock()
            while self._times and now - self._times[0] >= self.window_s:
                self._times.popleft()
            if len(self._times) >= self.limit:
                return False
            self._times.append(now)
            return True

    def next_free_in(self) -> float:
        """Seconds until an acquisition can succeed (0 when one can now): batch callers wait this long
        instead of skipping."""
        with self._lock:
            now = self._clock()
            while self._times and now - self._times[0] >= self.window_s:
                self._times.popleft()
            if len(self._times) < self.limit:
                return 0.0
            return max(0.0, self._times[0] + self.window_s - now)

    def release_last(self) -> None:
        """Give back the most recent acquisition (it was not used)."""
        with self._lock:
            if self._times:
                self._times.pop()

    @property
    def in_window(self) -> int:
        with self._lock:
            now = self._clock()
            return sum(1 for t in self._times if now - t < self.window_s)


class _Bucket:
    __slots__ = ("second", "tokens")

    def __init__(self, second: int, tokens: int) -> None:
        self.second = second
        self.tokens = tokens


class Reservation:
    """Tokens reserved for one judgment; :meth:`TokenBudget.settle` replaces them by the real usage."""

    __slots__ = ("_bucket", "tokens")

    def __init__(self, bucket: _Bucket, tokens: int) -> None:
        self._bucket = bucket
        self.tokens = tokens


class TokenBudget:
    """At most ``max_tokens`` in any rolling ``period_s``; usage kept in one-second buckets (bounded)."""

    def __init__(self, max_tokens: int, period_s: float = 3600.0, clock: Callable[[], float] = time.monotonic) -> None:
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        self.max_tokens = max_tokens
        self.period_s = period_s
        self._clock = clock
        self._buckets: deque[_Bucket] = deque()
        self._used = 0
        self._horizon = -(1 << 62)  # buckets at or below this second have left the window
        self._lock = threading.Lock()

    def _prune(self, now: float) -> None:
        horizon = int(now - self.period_s)
        self._horizon = max(self._horizon, horizon)
        while self._buckets and self._buckets[0].second <= horizon:
            self._used -= self._buckets.popleft().tokens

    def reserve(self, tokens: int) -> Reservation | None:
        """Reserve ``tokens`` now, or ``None`` when that would exceed the budget."""
        tokens = max(0, int(tokens))
        with self._lock:
            now = self._clock()
            self._prune(now)
            if self._used + tokens > self.max_tokens:
                return None
            second = int(now)
            if self._buckets and self._buckets[-1].second == second:
                bucket = self._buckets[-1]
                bucket.tokens += tokens
            else:
                bucket = _Bucket(second, tokens)
                self._buckets.append(bucket)
            self._used += tokens
            return Reservation(bucket, tokens)

    def settle(self, reservation: Reservation, actual_tokens: int) -> None:
        """Replace a reservation by what was really used (may be more or less than reserved)."""
        actual = max(0, int(actual_tokens))
        with self._lock:
            delta = actual - reservation.tokens
            reservation.tokens = actual
            bucket = reservation._bucket
            bucket.tokens += delta
            if bucket.second > self._horizon:  # still inside the window: counts as used
                self._used += delta

    @property
    def used(self) -> int:
        with self._lock:
            self._prune(self._clock())
            return self._used

    @property
    def remaining(self) -> int:
        return max(0, self.max_tokens - self.used)


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
