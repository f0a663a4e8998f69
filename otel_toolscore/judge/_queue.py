"""The judge's queue of runs, the worker threads that take them, and the funnel's accounting.

The span's thread only ever appends: a run to the bounded queue (:meth:`RunQueue.put`) or a skip
reason to a lock-free deque (:meth:`RunQueue.skip`), which the workers turn into counts and metrics.
Every offered run ends in exactly one place — ``requests`` (by outcome) or ``skipped`` (by reason;
``abandoned`` for runs a shutdown gave up) — so ``requests + skipped = offered`` always holds once
the queue is flushed or shut down. A run's state (queued → running → done | abandoned) is changed
under one lock, so a run that a shutdown abandons while a worker holds it is counted once.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._deadline import Deadline

if TYPE_CHECKING:
    from .._scored import ScoredRun
    from ..model import AgentRun
    from ..scorers.llm import JudgeError, LLMScoreResult
    from ..telemetry import Emitter

_log = logging.getLogger(__name__)

# The longest wait between checks of a flush waiting for the queue to empty.
_POLL_S = 0.2
# How often the first worker wakes to count skip signals when no run comes (the others sleep until a
# run, or shutdown, wakes them: each timed wake-up costs CPU, found work or not).
_SIGNALS_S = 1.0


@dataclass(frozen=True)
class JudgeAttempt:
    """What one :meth:`Judge.attempt` came to: skipped before any request (``skipped`` says why), or
    judged (``outcome`` ``ok`` with a ``result``, else the :class:`JudgeError` kind with the ``error``)."""

    skipped: str | None = None
    outcome: str = "skipped"
    result: LLMScoreResult | None = None
    error: JudgeError | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    duration_s: float = 0.0
    start_ns: int = 0
    end_ns: int = 0


class QueuedRun:
    """A run waiting for (or under) judgment, and why it was sampled."""

    __slots__ = ("sampled_by", "scored", "state")

    def __init__(self, scored: ScoredRun, sampled_by: str) -> None:
        self.scored = scored
        self.sampled_by = sampled_by
        self.state = "queued"  # queued -> running -> done | abandoned


class RunQueue:
    """A bounded queue of :class:`QueuedRun` s served by ``workers`` daemon threads.

    Each worker hands a run to ``judge`` (which returns a :class:`JudgeAttempt`) and a judged run to
    ``write``; both are given at :meth:`start`, with the emitter that receives the skip counts.
    """

    def __init__(self, size: int, workers: int) -> None:
        self.size = size
        self.workers = workers
        # None: shutdown's wake-up for a worker sleeping on an empty queue
        self._queue: queue.Queue[QueuedRun | None] = queue.Queue(maxsize=size)
        # Skip reasons signalled from the span's thread (deque.append is atomic); workers count them.
        self._signals: deque[str] = deque()
        self.emitter: Emitter | None = None
        self._judge: Callable[[AgentRun], JudgeAttempt] | None = None
        self._write: Callable[[QueuedRun, JudgeAttempt], None] | None = None
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()  # worker-side bookkeeping only
        self._drain_lock = threading.Lock()
        self._in_flight: set[QueuedRun] = set()
        self._requests: Counter[str] = Counter()
        self._skipped: Counter[str] = Counter()
        self.closed = False
        self._stop = threading.Event()
        #: shutdown's wake-ups (``None`` items) still in the queue: not runs, never counted as queued
        self._wakeups = 0

    def start(
        self,
        emitter: Emitter,
        judge: Callable[[AgentRun], JudgeAttempt],
        write: Callable[[QueuedRun, JudgeAttempt], None],
    ) -> None:
        """Start the workers, counting into ``emitter``; a queue serves one emitter."""
        with self._lock:
            if self.emitter is emitter:
                return
            if self.emitter is not None:
                raise RuntimeError("this Judge is already bound to another processor; create one Judge per processor")
            if self.closed:
                raise RuntimeError("this Judge was shut down")
            self.emitter, self._judge, self._write = emitter, judge, write
            emitter.observe_judge_queue(self.qsize)
            for i in range(self.workers):
                t = threading.Thread(target=self._work, args=(i,), name=f"otel-toolscore-judge-{i}", daemon=True)
                t.start()
                self._threads.append(t)

    # -- the span's thread ----------------------------------------------------------------------------
    @property
    def accepting(self) -> bool:
        """Started and not shut down (a lock-free read: a stale one only delays a skip)."""
        return not self.closed and self.emitter is not None

    def put(self, scored: ScoredRun, sampled_by: str) -> bool:
        """Queue ``scored``; never blocks. A full queue skips it (``queue_full``): ``False``."""
        try:
            self._queue.put_nowait(QueuedRun(scored, sampled_by))
        except queue.Full:
            self.skip("queue_full")
            return False
        return True

    def skip(self, reason: str) -> None:
        """Count a run skipped before it was queued (the workers record it)."""
        self._signals.append(reason)
        if self.closed or self.emitter is None:
            self.drain_signals()  # no worker will

    # -- workers --------------------------------------------------------------------------------------
    def _work(self, index: int) -> None:
        timeout = _SIGNALS_S if index == 0 else None  # one worker counts skips while no run comes
        while not self._stop.is_set():
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                self.drain_signals()
                continue
            if item is None:  # shutdown's wake-up
                with self._lock:
                    self._wakeups -= 1
                self._queue.task_done()
                continue
            try:
                self.drain_signals()
                self._process(item)
            except Exception:
                _log.debug("otel-toolscore judge worker error", exc_info=True)
            finally:
                self._queue.task_done()

    def drain_signals(self) -> None:
        """Count the skips signalled so far, in the stats and in the metrics."""
        # One drainer at a time, counting and recording together: whoever returns from here (a
        # flush, stats) knows every signal popped so far is in the stats *and* in the metrics.
        with self._drain_lock:
            counts: Counter[str] = Counter()
            signals = self._signals
            while True:
                try:
                    counts[signals.popleft()] += 1
                except IndexError:
                    break
            if not counts:
                return
            with self._lock:
                self._skipped.update(counts)
            emitter = self.emitter
            if emitter is not None:
                for reason, amount in counts.items():
                    emitter.count_judge_skip(reason, amount)

    def _finish_skip(self, item: QueuedRun, reason: str) -> None:
        with self._lock:
            self._in_flight.discard(item)
            if item.state == "abandoned":
                return  # already counted by shutdown
            item.state = "done"
            self._skipped[reason] += 1
        if self.emitter is not None:
            self.emitter.count_judge_skip(reason)

    def _process(self, item: QueuedRun) -> None:
        with self._lock:
            if item.state != "queued":
                return
            if self._stop.is_set():  # taken from the queue as shutdown gave up: abandoned
                item.state = "abandoned"
                self._skipped["abandoned"] += 1
                late = True
            else:
                item.state = "running"
                self._in_flight.add(item)
                late = False
        if late:
            if self.emitter is not None:
                self.emitter.count_judge_skip("abandoned")
            return
        assert self._judge is not None and self._write is not None  # set by start(), before any worker
        attempt = self._judge(item.scored.run)
        if attempt.skipped is not None:
            self._finish_skip(item, attempt.skipped)
            return
        with self._lock:
            self._in_flight.discard(item)
            if item.state == "abandoned":
                return  # shutdown gave up on it and counted it; its providers may be gone
            item.state = "done"
            self._requests[attempt.outcome] += 1
        try:
            self._write(item, attempt)
        except Exception:
            _log.debug("otel-toolscore could not write a judgment", exc_info=True)

    # -- lifecycle ------------------------------------------------------------------------------------
    def counts(self) -> tuple[dict[str, int], dict[str, int], int, int]:
        """``(requests by outcome, skipped by reason, in flight, queued)``, every signal counted."""
        self.drain_signals()
        with self._lock:
            requests = dict(self._requests)
            skipped = dict(self._skipped)
            in_flight = len(self._in_flight)
        return requests, skipped, in_flight, self.qsize()

    def qsize(self) -> int:
        """Runs queued (shutdown's wake-ups left out)."""
        return max(0, self._queue.qsize() - self._wakeups)

    def wait_idle(self, deadline: Deadline) -> bool:
        """Wait until every queued run is judged or skipped, or ``deadline`` passes (``False``)."""
        q = self._queue
        with q.all_tasks_done:
            while q.unfinished_tasks:
                if deadline.expired or not self._threads:
                    return False
                q.all_tasks_done.wait(min(deadline.remaining(), _POLL_S))
        return True

    def shutdown(self, deadline: Deadline) -> bool:
        """Stop accepting runs, let the workers drain the queue until ``deadline``, and count as
        ``skipped{reason=abandoned}`` every run still queued or in flight after it. ``False`` when
        the queue was already shut down."""
        with self._lock:
            if self.closed:
                return False
            self.closed = True
        self.wait_idle(deadline)
        abandoned = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            with self._lock:
                if item is not None and item.state == "queued":
                    item.state = "abandoned"
                    abandoned += 1
            self._queue.task_done()
        with self._lock:
            for item in self._in_flight:
                if item.state == "running":
                    item.state = "abandoned"
                    abandoned += 1
            self._in_flight.clear()
            if abandoned:
                self._skipped["abandoned"] += abandoned
        self._stop.set()
        for _ in self._threads:  # wake the workers sleeping on the empty queue
            with self._lock:
                try:
                    self._queue.put_nowait(None)
                except queue.Full:  # runs put after the close: those workers see the stop after them
                    break
                self._wakeups += 1
        self.drain_signals()
        if abandoned and self.emitter is not None:
            self.emitter.count_judge_skip("abandoned", abandoned)
        for t in self._threads:
            t.join(timeout=0.5)  # a worker stuck in a request is a daemon; its result is discarded
        return True
