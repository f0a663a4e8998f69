"""Enrich-and-forward's exporting queue, bounded and counted: nothing leaves it silently.

The SDK's ``BatchSpanProcessor`` drops spans with a log line when its queue is full. Here it sits
behind a count of the spans handed to it and not yet through its exporter (queued or being
exported), kept below its queue size, so it never drops on its own:

- the service refuses new requests (retryable) while that count is at half the capacity
  (:attr:`ForwardQueue.backlogged`), so the sender holds the data;
- the scorer, handing over a span when the queue is full, waits for room (up to a deadline);
- a span that still finds no room, or that the exporter fails to send, is counted in
  ``toolscore.dropped`` (``forward_queue_full``, ``forward_failed``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

__all__ = ["FORWARD_WAIT_S", "ForwardQueue"]

#: Longest wait of the scorer for room in a full queue (an exporter retries for up to its own timeout).
FORWARD_WAIT_S = 30.0

#: Longest a forwarded span waits for its batch to fill before it is exported anyway.
FORWARD_SCHEDULE_DELAY_MS = 1000

DropCounter = Callable[[str, int], None]


class _CountingExporter(SpanExporter):
    def __init__(self, inner: SpanExporter, done: Callable[[int, bool], None]) -> None:
        self._inner = inner
        self._done = done

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        ok = False
        try:
            result = self._inner.export(spans)
            ok = result is SpanExportResult.SUCCESS
            return result
        finally:
            self._done(len(spans), ok)

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self._inner.force_flush(timeout_millis))


class ForwardQueue(SpanProcessor):
    """A ``BatchSpanProcessor`` that never drops uncounted; see the module docstring."""

    def __init__(self, exporter: SpanExporter, capacity: int, count_drop: DropCounter) -> None:
        self.capacity = capacity
        self._count_drop = count_drop
        self._cond = threading.Condition()
        self._held = 0  # handed to the batch processor, not yet through the exporter
        self._closed = False
        self._abandoned = False
        self.deadline: float | None = None  # a drain's deadline: waits end there (set with set_deadline)
        # Batches of at most a quarter of the capacity, so one is due well before requests are refused.
        self._batch = BatchSpanProcessor(
            _CountingExporter(exporter, self._exported),
            max_queue_size=capacity + 1,
            max_export_batch_size=max(1, min(512, capacity // 4)),
            schedule_delay_millis=FORWARD_SCHEDULE_DELAY_MS,
        )

    @property
    def held(self) -> int:
        return self._held

    @property
    def backlogged(self) -> bool:
        return self._held >= self.capacity // 2

    def set_deadline(self, deadline: float) -> None:
        """A drain began: no wait for room lasts past ``deadline`` (waiting scorers are told now)."""
        with self._cond:
            self.deadline = deadline
            self._cond.notify_all()

    def _exported(self, count: int, ok: bool) -> None:
        if self._abandoned:
            return  # counted by abandon() already
        if not ok:
            self._count_drop("forward_failed", count)
        with self._cond:
            self._held = max(0, self._held - count)
            self._cond.notify_all()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self.put(span, wait=True)

    def put(self, span: ReadableSpan, *, wait: bool) -> bool:
        """Queue ``span`` for export; waits for room when ``wait`` (up to :data:`FORWARD_WAIT_S` or the drain's deadline)."""
        if not span.context or not span.context.trace_flags.sampled:
            return False  # the batch processor exports sampled spans only
        give_up = time.monotonic() + FORWARD_WAIT_S if wait else 0.0
        with self._cond:
            while self._held >= self.capacity and not self._closed:
                limit = give_up if self.deadline is None else min(give_up, self.deadline)
                remaining = limit - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            if self._closed or self._held >= self.capacity:
                reason = "drain_timeout" if self._closed or self.deadline is not None else "forward_queue_full"
                self._count_drop(reason, 1)
                return False
            self._held += 1
        self._batch.on_end(span)
        return True

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self._batch.force_flush(timeout_millis))

    def shutdown(self) -> None:
        self._batch.shutdown()  # type: ignore[no-untyped-call,unused-ignore]
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def abandon(self) -> int:
        """At exit: stop taking spans; count what was not exported (``drain_timeout``); how many."""
        with self._cond:
            self._closed = self._abandoned = True
            left, self._held = self._held, 0
            self._cond.notify_all()
        if left:
            self._count_drop("drain_timeout", left)
        return left

