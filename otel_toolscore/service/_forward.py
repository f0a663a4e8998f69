"""Enrich-and-forward's exporting queue, bounded and counted: nothing leaves it silently.

It holds spans *as received* (:mod:`._wire`: each span's encoded bytes with its resource's and
scope's) and sends them in batches — up to 4,096 spans (:data:`FORWARD_BATCH_SPANS`) and
``request_bytes``, or after 1 s — through a
:class:`~._otlp_sender.TraceSender`. SDK spans (the service's own judge carrier spans) are encoded
once with the SDK's public encoder and join the same queue.

It sits behind a count of the spans taken and not yet through the sender (queued or being sent),
and of their encoded bytes, each with a capacity:

- the service refuses new requests (retryable) while either is at half its capacity
  (:attr:`ForwardQueue.backlogged`), so the sender holds the data;
- the scorer, handing over a span when the queue is full, waits for room (up to a deadline);
- a span that still finds no room, or that the sender fails to send (after its retries), is
  counted in ``toolscore.dropped`` (``forward_queue_full``, ``forward_failed``).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from ._otlp_sender import TraceSender
from ._wire import Envelope, WireSpan, build_request, encode_sdk_span

__all__ = ["FORWARD_BATCH_SPANS", "FORWARD_WAIT_S", "ForwardQueue"]

_log = logging.getLogger(__name__)

#: Longest wait of the scorer for room in a full queue (a sender retries for up to its own timeout).
FORWARD_WAIT_S = 30.0

#: Most spans in one forwarded request (a quarter of the queue's capacity when that is smaller).
#: Sending a request costs about the same CPU whatever its size (1.3 to 2.7 ms through the HTTP
#: client, measured on the test machine): 4,096 spans a request cost 0.6 µs a span where 512
#: cost 2.6 to 5.6; a request is cut at ``request_bytes`` first when its spans are large.
FORWARD_BATCH_SPANS = 4096

#: Longest a forwarded span waits for its batch to fill before it is sent anyway.
FORWARD_SCHEDULE_DELAY_MS = 1000

DropCounter = Callable[[str, int], None]

#: Most bytes a length-delimited field's tag and length take around its payload (under 256 MiB).
_FRAMING = 6


class ForwardQueue(SpanProcessor):
    """A bounded batching queue of received spans in front of a sender; see the module docstring.

    It is also the span processor of the service's own tracer provider (judge carrier spans)."""

    def __init__(
        self,
        sender: TraceSender,
        capacity: int,
        count_drop: DropCounter,
        *,
        request_bytes: int = 4 * 1024 * 1024,
        capacity_bytes: int = 64 * 1024 * 1024,
        on_done: Callable[[list[WireSpan]], None] | None = None,
        schedule_delay_ms: float = FORWARD_SCHEDULE_DELAY_MS,
        batch_size: int | None = None,
        reasons: tuple[str, str, str] = ("forward_queue_full", "forward_failed", "drain_timeout"),
        name: str = "otel-toolscore-forward",
    ) -> None:
        self.capacity = capacity
        self.capacity_bytes = capacity_bytes
        self.request_bytes = request_bytes
        self.sender = sender
        self._count_drop = count_drop
        # told of every span the sender is done with (sent, or given up and counted): `--queue-dir`
        self._on_done = on_done
        self._cond = threading.Condition()
        self._queue: collections.deque[WireSpan] = collections.deque()
        self._held = 0  # taken, not yet through the sender
        self._held_bytes = 0  # their encoded size
        self._closed = False
        self._abandoned = False
        self._stopping = False
        self._flushing = 0
        self._sender_stopped = False
        self.deadline: float | None = None  # a drain's deadline: waits end there (set with set_deadline)
        # Batches of at most a quarter of the capacity, so one is due well before requests are refused.
        self.batch_size = max(1, min(FORWARD_BATCH_SPANS, capacity // 4) if batch_size is None else min(batch_size, capacity))
        self._delay = schedule_delay_ms / 1000
        #: what a span that finds no room, one the sender could not send, and one a drain cut off
        #: (taken after the queue closed, or left at its end) are counted as
        self._full_reason, self._failed_reason, self._drain_reason = reasons
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def held(self) -> int:
        return self._held

    @property
    def backlogged(self) -> bool:
        return self._held >= self.capacity // 2 or self._held_bytes >= self.capacity_bytes // 2

    @property
    def held_bytes(self) -> int:
        return self._held_bytes

    def _full(self, size: int) -> bool:
        """No room for a span of ``size`` bytes (one larger than the byte capacity goes in alone)."""
        return self._held >= self.capacity or (self._held > 0 and self._held_bytes + size > self.capacity_bytes)

    def set_deadline(self, deadline: float) -> None:
        """A drain began: no wait for room lasts past ``deadline`` (waiting scorers are told now)."""
        with self._cond:
            self.deadline = deadline
            self._cond.notify_all()

    # -- taking spans ------------------------------------------------------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None and span.context.trace_flags.sampled:
            try:
                self.put(encode_sdk_span(span), wait=True)
            except Exception:
                _log.debug("otel-toolscore forward: could not encode a span", exc_info=True)
                self._count_drop("downstream_error", 1)

    def put(self, span: WireSpan, *, wait: bool) -> bool:
        """Queue ``span``; waits for room when ``wait`` (up to :data:`FORWARD_WAIT_S` or the drain's deadline)."""
        return self.put_many((span,), wait=wait) == 1

    def put_many(self, spans: Sequence[WireSpan], *, wait: bool) -> int:
        """Queue ``spans`` in order, under one lock, each as :meth:`put` would; how many were taken."""
        give_up = time.monotonic() + FORWARD_WAIT_S if wait else 0.0
        taken = 0
        dropped: list[WireSpan] = []
        with self._cond:
            if not self._closed:
                # room for them all (what is almost always so): taken at once
                count = len(spans)
                size = sum([len(span[2]) for span in spans])
                if self._held + count <= self.capacity and self._held_bytes + size <= self.capacity_bytes:
                    self._held += count
                    self._held_bytes += size
                    self._queue.extend(spans)
                    if len(self._queue) >= self.batch_size:
                        self._cond.notify_all()
                    return count
            for span in spans:
                size = len(span[2])
                while self._full(size) and not self._closed:
                    limit = give_up if self.deadline is None else min(give_up, self.deadline)
                    remaining = limit - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                if not (self._closed or self._full(size)):
                    self._held += 1
                    self._held_bytes += size
                    self._queue.append(span)
                    taken += 1
                    if len(self._queue) >= self.batch_size:
                        self._cond.notify_all()
                    continue
                draining = self._closed or self.deadline is not None
                self._count_drop(self._drain_reason if draining else self._full_reason, 1)
                if not draining:
                    dropped.append(span)
        if dropped:
            self._done(dropped)  # dropped and counted; a drain's leftovers stay in the on-disk queue
        return taken

    # -- the sending thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        delay = self._delay
        while True:
            with self._cond:
                due = time.monotonic() + delay
                while not self._stopping and not self._flushing and len(self._queue) < self.batch_size:
                    remaining = due - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                if not self._queue:
                    if self._stopping:
                        return
                    continue
                batch = self._next_batch()
            ok = False
            try:
                ok = self.sender.send(build_request(batch), len(batch))
            except Exception:
                _log.exception("otel-toolscore forward: sending a batch failed")
            if not self._abandoned:
                self._done(batch)
            self._sent(len(batch), sum(len(item[2]) for item in batch), ok)

    def _done(self, batch: list[WireSpan]) -> None:
        if self._on_done is not None:
            try:
                self._on_done(batch)
            except Exception:
                _log.debug("otel-toolscore forward: on_done failed", exc_info=True)

    def _next_batch(self) -> list[WireSpan]:
        """Up to ``batch_size`` spans whose request (spans, their resources' and scopes' fields and
        the framing) stays within ``request_bytes`` (at least one span): a receiver refuses a larger
        message for good (gRPC's default limit is 4 MiB)."""
        queue = self._queue
        batch: list[WireSpan] = []
        size = 0
        seen: set[int] = set()
        limit = self.request_bytes
        most = self.batch_size
        last_resource: Envelope | None = None
        last_scope: Envelope | None = None
        while queue and len(batch) < most:
            resource, scope, span = queue[0]
            more = len(span) + _FRAMING
            # the spans of one request come one after another with the same envelopes (objects)
            new_resource = resource is not last_resource and id(resource) not in seen
            new_scope = scope is not last_scope and id(scope) not in seen
            if new_resource:
                more += len(resource[0]) + len(resource[1]) + _FRAMING
            if new_scope:
                more += len(scope[0]) + len(scope[1]) + _FRAMING
            if batch and size + more > limit:
                break
            size += more
            if new_resource:
                seen.add(id(resource))
            if new_scope:
                seen.add(id(scope))
            last_resource, last_scope = resource, scope
            batch.append(queue.popleft())
        return batch

    def _sent(self, count: int, size: int, ok: bool) -> None:
        with self._cond:
            if not self._abandoned:
                if not ok:
                    self._count_drop(self._failed_reason, count)
                self._held = max(0, self._held - count)
                self._held_bytes = max(0, self._held_bytes - size)
            self._cond.notify_all()

    # -- flush, shutdown ------------------------------------------------------------------------------------
    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Send everything taken so far; ``False`` if it is not through the sender by the timeout."""
        deadline = time.monotonic() + timeout_millis / 1000
        with self._cond:
            self._flushing += 1
            self._cond.notify_all()
            try:
                while self._held > 0 and not self._abandoned:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or not self._thread.is_alive():
                        return False
                    self._cond.wait(min(remaining, 0.1))
                return True
            finally:
                self._flushing -= 1

    def shutdown(self) -> None:
        """Send what is queued, then stop the thread and the sender (bounded by the caller)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._stop_sender()

    def _stop_sender(self) -> None:
        with self._cond:
            if self._sender_stopped:
                return
            self._sender_stopped = True
        try:
            self.sender.shutdown()
        except Exception:
            _log.debug("otel-toolscore forward: sender shutdown failed", exc_info=True)

    def abandon(self) -> int:
        """At exit: stop taking spans; count what was not sent (``drain_timeout``, or the reason
        given for a drain); how many."""
        with self._cond:
            self._closed = self._abandoned = self._stopping = True
            left, self._held, self._held_bytes = self._held, 0, 0
            self._queue.clear()
            self._cond.notify_all()
        if left:
            self._count_drop(self._drain_reason, left)
        self._stop_sender()  # ends a send still retrying (its back-off waits on the sender's stop)
        return left
