"""Background threads of the live pipeline: a bounded queue drained by one daemon thread.

Producers never wait: :meth:`QueueWorker.put` refuses (returns ``False``) when the queue is full, and
the caller counts the refusal. The thread polls instead of being signalled per item, so a producer
pays one ``deque.append``: every 20 ms while items keep coming. Once a look found nothing the thread is
idle: it sleeps until its periodic work is due (the ``idle`` hook says when; 1 s without one), and the
first item queued (:meth:`~QueueWorker.put`, or the producer's :meth:`~QueueWorker.nudge`) wakes it at
once. ``wake()`` shortens the wait when work piles up or a flush asks.

Each wake-up costs the process CPU whether it finds work or not (a timed wait returning: 40 to 70 µs on
the shared 2-core machine the benchmarks run on, ``docs/performance.md``), so the thread wakes as
seldom as the latency allows: when spans trickle in (a run every few milliseconds, as agents run in
production) a poll every 2 ms, backing off from there, cost more than the work it found.
``wait_idle`` and ``stop`` keep the caller's deadline whatever the handler does (a handler that hangs
costs its own thread, never the caller's).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from time import monotonic
from typing import Any

from ._deadline import Deadline

__all__ = ["IDLE_POLL_S", "QueueWorker", "WakeGate"]

_log = logging.getLogger(__name__)
#: the slow poll: nothing was found at the last look and periodic work is due this often (a producer
#: may nudge the thread meanwhile)
_POLL_S = 0.05
#: the idle sleep of a thread with no periodic work due (its producers wake it)
IDLE_POLL_S = 1.0
#: the poll while items keep coming: the latency of a span handed on or a run scored, at most
_BUSY_POLL_S = 0.02


class WakeGate:
    """A wake-up signal for the one thread that waits on it: :meth:`set` from any thread; :meth:`wait`
    returns ``True`` once set (taking the signal) or ``False`` at its timeout; a signal given while
    nobody waits is kept for the next wait. A lock used as a binary semaphore: both sides are a single
    C call, where ``threading.Event.wait`` runs a ``Condition`` in Python (a lock allocated per wait,
    a waiters list): about a third less CPU per wake-up.

    ``idle``: the waiting thread says it sleeps for want of work (it sets the flag before its wait and
    clears it after); :meth:`nudge` signals it only then, so a producer pays an attribute read while
    the thread is busy and one signal after a quiet period."""

    __slots__ = ("_lock", "idle")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self.idle = False

    def nudge(self) -> None:
        if self.idle:
            self.idle = False
            self.set()

    def set(self) -> None:
        lock = self._lock
        if lock.locked():
            try:
                lock.release()
            except RuntimeError:  # another thread set it in between
                pass

    def wait(self, timeout: float) -> bool:
        return self._lock.acquire(timeout=timeout)


class QueueWorker:
    """One daemon thread handling the items of a bounded queue in order.

    Args:
        name: the thread's name.
        handle: called with a batch (a list) of items; exceptions are logged at debug level.
        capacity: most items queued; :meth:`put` refuses beyond it.
        idle: called after every batch and on every poll with nothing queued (periodic work); it
            returns how long the thread may then sleep idle before it is due again (seconds; ``None``:
            the slow poll, 50 ms). Without it the thread sleeps :data:`IDLE_POLL_S` when idle.
        wake_at: queued items that wake the thread before its next poll.
        lock: held while a batch is taken from the queue and handled, so another thread holding it
            may drain the queue itself (items are handled in queue order either way).
        max_batch: most items handed to ``handle`` at once.
    """

    def __init__(
        self,
        name: str,
        handle: Callable[[list[Any]], None],
        capacity: int,
        *,
        idle: Callable[[], float | None] | None = None,
        wake_at: int = 512,
        lock: threading.Lock | None = None,
        max_batch: int = 4096,
    ) -> None:
        self.queue: deque[Any] = deque()
        self._max_batch = max_batch
        self.capacity = capacity
        self._handle = handle
        self._idle_hook = idle
        self._wake_at = wake_at
        self._lock: AbstractContextManager[Any] = lock if lock is not None else contextlib.nullcontext()
        self._wake = WakeGate()
        self._cond = threading.Condition()
        self._busy = False
        self._idle_poll = _POLL_S if idle is not None else IDLE_POLL_S
        #: increases after every batch and poll: a thread whose count stands still is stuck
        self.progress = 0
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, item: Any) -> bool:
        """Queue ``item``; ``False`` (nothing queued) when the queue is full."""
        q = self.queue
        if len(q) >= self.capacity:
            return False
        q.append(item)
        if len(q) >= self._wake_at:  # a pile
            self._wake.set()
        else:  # the first item after a quiet period
            self._wake.nudge()
        return True

    def take_batch(self) -> list[Any]:
        """Up to ``max_batch`` items from the head of the queue, in order: what the thread hands to
        ``handle`` at once, and what a caller holding ``lock`` takes to drain the queue itself."""
        q = self.queue
        limit = self._max_batch
        batch: list[Any] = []
        while q and len(batch) < limit:
            try:
                batch.append(q.popleft())
            except IndexError:  # another consumer took the last item
                break
        return batch

    def wake(self) -> None:
        self._wake.set()

    def nudge(self) -> None:
        """Wake the thread only if it sleeps idle (:meth:`WakeGate.nudge`)."""
        self._wake.nudge()

    def _run(self) -> None:
        q = self.queue
        gate = self._wake
        poll = self._idle_poll
        # Sparse traffic: a busy poll found nothing, so after the next batch the thread goes straight
        # back to its idle sleep (one wake-up per nudge, not two); dense again once items follow an
        # idle sleep within a busy poll.
        sparse = False
        slept_at = 0.0
        while True:
            idle = poll > _BUSY_POLL_S
            gate.idle = idle
            if idle:
                slept_at = monotonic()
            if not (idle and q):  # an item queued as the thread went idle (its producer saw it busy)
                gate.wait(poll)
            gate.idle = False
            # Busy: look again after the busy poll (items are picked up within it while they keep
            # coming, without the producer signalling). Nothing found: straight to the idle sleep, where
            # a producer's nudge wakes the thread (no back-off of wake-ups that find nothing).
            busy = bool(q)
            if not idle:
                sparse = not busy
            elif busy and sparse and monotonic() - slept_at < _BUSY_POLL_S:
                sparse = False
            with self._cond:
                self._busy = True
            try:
                while q:
                    with self._lock:
                        batch = self.take_batch()
                        try:
                            self._handle(batch)
                        except Exception:
                            _log.debug("otel-toolscore background handler failed", exc_info=True)
                    self._run_idle_hook()
                if not q:
                    self._run_idle_hook()
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
            if self._stopped and not q:
                return
            poll = _BUSY_POLL_S if q or (busy and not sparse) else self._idle_poll

    def _run_idle_hook(self) -> None:
        self.progress += 1
        if self._idle_hook is not None:
            try:
                due = self._idle_hook()
                self._idle_poll = _POLL_S if due is None else min(IDLE_POLL_S, max(_BUSY_POLL_S, float(due)))
            except Exception:
                self._idle_poll = _POLL_S
                _log.debug("otel-toolscore background hook failed", exc_info=True)

    def wait_idle(self, deadline: float) -> bool:
        """Wait until the queue is empty and the thread idle, or ``deadline`` (monotonic) passes."""
        if not self._thread.is_alive():
            return not self.queue
        until = Deadline(deadline)
        with self._cond:
            while self.queue or self._busy:
                if until.expired:
                    return False
                self._wake.set()
                self._cond.wait(min(until.remaining(), _POLL_S))
        return True

    def stop(self, deadline: float) -> bool:
        """Drain what is queued (until ``deadline``) and end the thread; ``True`` when it ended."""
        self._stopped = True
        self._wake.set()
        self._thread.join(Deadline(deadline).remaining())
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()
