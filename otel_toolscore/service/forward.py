"""Enrich-and-forward's exporting queue, bounded and counted: nothing leaves it silently.

It holds spans *as received* — the decoded protobuf ``Span`` with its ``Resource`` and scope — and
sends them in batches through a :class:`~.otlp_sender.TraceSender`, so a span that gains nothing is
passed on byte for byte, never rebuilt or re-encoded (a run's root, which gains score attributes,
is a patched copy: see :func:`with_attributes`). SDK spans (the service's own judge carrier spans)
are encoded once with the SDK's public encoder and join the same queue.

It sits behind a count of the spans taken and not yet through the sender (queued or being sent):

- the service refuses new requests (retryable) while that count is at half the capacity
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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from .otlp_sender import TraceSender

__all__ = ["FORWARD_WAIT_S", "ForwardQueue", "WireSpan", "with_attributes"]

_log = logging.getLogger(__name__)

#: Longest wait of the scorer for room in a full queue (a sender retries for up to its own timeout).
FORWARD_WAIT_S = 30.0

#: Longest a forwarded span waits for its batch to fill before it is sent anyway.
FORWARD_SCHEDULE_DELAY_MS = 1000

DropCounter = Callable[[str, int], None]

#: One span as received: (its ``Resource`` message, its ``InstrumentationScope`` message and the
#: schema URLs of both, its ``Span`` message). The messages are the decoded request's own objects.
WireSpan = tuple[Any, str, Any, str, Any]


def _any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, Sequence):
        out = AnyValue()
        out.array_value.values.extend(_any_value(v) for v in value)
        return out
    return AnyValue(string_value=str(value))


def with_attributes(span_pb: Any, added: Mapping[str, Any]) -> Any:
    """A copy of a received ``Span`` message with ``added`` attributes set (replacing same keys)."""
    out = type(span_pb)()
    out.CopyFrom(span_pb)
    if any(kv.key in added for kv in out.attributes):
        kept = [kv for kv in out.attributes if kv.key not in added]
        del out.attributes[:]
        out.attributes.extend(kept)
    out.attributes.extend(KeyValue(key=k, value=_any_value(v)) for k, v in added.items())
    return out


def encode_sdk_span(span: ReadableSpan) -> WireSpan:
    """An SDK span (the service's own) as a wire span, through the SDK's public encoder."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    (rs,) = encode_spans([span]).resource_spans
    (ss,) = rs.scope_spans
    return rs.resource, rs.schema_url, ss.scope, ss.schema_url, ss.spans[0]


def build_request(batch: Sequence[WireSpan]) -> ExportTraceServiceRequest:
    """One export request for ``batch``, spans grouped under their (identical) resource and scope."""
    request = ExportTraceServiceRequest()
    groups: dict[tuple[int, int], Any] = {}
    resources: dict[int, Any] = {}
    for resource, resource_schema, scope, scope_schema, span in batch:
        key = (id(resource), id(scope))
        ss = groups.get(key)
        if ss is None:
            rs = resources.get(id(resource))
            if rs is None:
                rs = request.resource_spans.add()
                rs.resource.CopyFrom(resource)
                rs.schema_url = resource_schema
                resources[id(resource)] = rs
            ss = rs.scope_spans.add()
            ss.scope.CopyFrom(scope)
            ss.schema_url = scope_schema
            groups[key] = ss
        ss.spans.append(span)
    return request


class ForwardQueue(SpanProcessor):
    """A bounded batching queue of received spans in front of a sender; see the module docstring.

    It is also the span processor of the service's own tracer provider (judge carrier spans)."""

    def __init__(
        self, sender: TraceSender, capacity: int, count_drop: DropCounter, *, request_bytes: int = 4 * 1024 * 1024
    ) -> None:
        self.capacity = capacity
        self.request_bytes = request_bytes
        self.sender = sender
        self._count_drop = count_drop
        self._cond = threading.Condition()
        self._queue: collections.deque[WireSpan] = collections.deque()
        self._held = 0  # taken, not yet through the sender
        self._closed = False
        self._abandoned = False
        self._stopping = False
        self._flushing = 0
        self.deadline: float | None = None  # a drain's deadline: waits end there (set with set_deadline)
        # Batches of at most a quarter of the capacity, so one is due well before requests are refused.
        self.batch_size = max(1, min(512, capacity // 4))
        self._thread = threading.Thread(target=self._run, name="otel-toolscore-forward", daemon=True)
        self._thread.start()

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
            self._queue.append(span)
            if len(self._queue) >= self.batch_size:
                self._cond.notify_all()
        return True

    # -- the sending thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        delay = FORWARD_SCHEDULE_DELAY_MS / 1000
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
                ok = self.sender.send(build_request(batch))
            except Exception:
                _log.exception("otel-toolscore forward: sending a batch failed")
            self._sent(len(batch), ok)

    def _next_batch(self) -> list[WireSpan]:
        """Up to ``batch_size`` spans and ``request_bytes`` of them encoded (at least one span):
        a receiver refuses a larger message for good (gRPC's default limit is 4 MiB)."""
        queue = self._queue
        batch = [queue.popleft()]
        size = batch[0][4].ByteSize()
        while queue and len(batch) < self.batch_size:
            more = queue[0][4].ByteSize()
            if size + more > self.request_bytes:
                break
            size += more
            batch.append(queue.popleft())
        return batch

    def _sent(self, count: int, ok: bool) -> None:
        with self._cond:
            if not self._abandoned:
                if not ok:
                    self._count_drop("forward_failed", count)
                self._held = max(0, self._held - count)
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
        try:
            self.sender.shutdown()
        except Exception:
            _log.debug("otel-toolscore forward: sender shutdown failed", exc_info=True)

    def abandon(self) -> int:
        """At exit: stop taking spans; count what was not sent (``drain_timeout``); how many."""
        with self._cond:
            self._closed = self._abandoned = self._stopping = True
            left, self._held = self._held, 0
            self._queue.clear()
            self._cond.notify_all()
        if left:
            self._count_drop("drain_timeout", left)
        return left
