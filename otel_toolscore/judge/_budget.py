"""The judge's limits on spending: a rate limit and a token budget, both over rolling windows.

* **Rate limit** (:class:`RollingLimit`) — at most ``limit`` judgments started in any rolling
  window (a strict rolling window rather than a refilling bucket: it is what providers' RPM limits
  mean).
* **Token budget** (:class:`TokenBudget`) — at most ``max_tokens`` in any rolling period. A
  judgment reserves its worst-case estimate before its request and the :class:`Reservation` is
  corrected to the usage the endpoint reports, so the budget cannot be overrun by requests in
  flight. Usage is kept in one-second buckets, so memory is bounded by the period, not the traffic.

Both are checked by the judge's workers just before a request, never on the span's thread; their
clock is injectable for tests.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["Reservation", "RollingLimit", "TokenBudget"]


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
