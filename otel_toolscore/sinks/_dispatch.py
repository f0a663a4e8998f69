"""``SinkDispatcher``: every score record to every sink, off the span's thread, bounded and counted.

Each sink has its own bounded queue and thread (a :class:`~otel_toolscore._workers.QueueWorker`,
as the event emitter has), so a slow or unreachable backend holds only its own queue. Producers (the
emitter's thread for code scores, the judge's workers for judgments) never wait: a full queue drops
the record and counts it. Exports run with OpenTelemetry's suppress-instrumentation keys set, so an
instrumented HTTP client records nothing of them.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from pydantic import BaseModel, ConfigDict

from .._workers import QueueWorker
from ..redact import redact
from ._base import ScoreSink
from ._record import ScoreRecord, score_record

if TYPE_CHECKING:
    from ..telemetry import RunRef

__all__ = ["SinkDispatcher", "SinkStats"]

_log = logging.getLogger(__name__)

QUEUE_FULL = "sink_queue_full"
FAILED = "sink_failed"


class SinkStats(BaseModel):
    """What one sink did so far (the same numbers as ``toolscore.dropped`` for its reasons)."""

    model_config = ConfigDict(frozen=True)

    name: str
    delivered: int
    failed: int
    dropped: int
    queued: int


class _Lane:
    """One sink, its queue and thread, and its counts."""

    def __init__(self, sink: ScoreSink, capacity: int, count_drop: Callable[[str, int], None]) -> None:
        self.sink = sink
        self.batch = max(1, int(sink.max_batch))
        self.count_drop = count_drop
        self.delivered = 0
        self.failed = 0
        self.dropped = 0
        self.warned = False
        self.in_hand = 0  # taken from the queue, not exported yet
        self.abandoned = False
        self.lock = threading.Lock()
        self.worker = QueueWorker(f"otel-toolscore-sink-{sink.name}", self.handle, capacity, wake_at=self.batch)

    def handle(self, batch: list[ScoreRecord]) -> None:
        ctx = otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True)
        token = otel_context.attach(otel_context.set_value(otel_context._SUPPRESS_HTTP_INSTRUMENTATION_KEY, True, ctx))
        try:
            with self.lock:
                self.in_hand = len(batch)
            for start in range(0, len(batch), self.batch):
                chunk = batch[start : start + self.batch]
                failed = self.export(chunk)
                with self.lock:
                    if self.abandoned:
                        return  # counted by stop() when it gave up on this thread
                    self.in_hand -= len(chunk)
                    self.delivered += len(chunk) - failed
                    self.failed += failed
                if failed:
                    self.count_drop(FAILED, failed)
        finally:
            otel_context.detach(token)

    def export(self, chunk: list[ScoreRecord]) -> int:
        """Records of ``chunk`` not delivered (the whole chunk when the sink raised)."""
        try:
            rejected = self.sink.export(chunk)
        except Exception as exc:
            self.warn(exc)
            return len(chunk)
        if rejected is None:
            return 0
        return min(len(chunk), max(0, int(rejected)))

    def warn(self, exc: BaseException) -> None:
        # Once per sink at WARNING (a backend that is down fails every batch); the rest at debug.
        if not self.warned:
            self.warned = True
            _log.warning("otel-toolscore sink %r failed: %r (counted in toolscore.dropped; further failures at debug)",
                         self.sink.name, exc)
        else:
            _log.debug("otel-toolscore sink %r failed", self.sink.name, exc_info=exc)

    def offer(self, record: ScoreRecord) -> None:
        if not self.worker.put(record):
            with self.lock:
                self.dropped += 1
            self.count_drop(QUEUE_FULL, 1)

    def stats(self) -> SinkStats:
        with self.lock:
            return SinkStats(
                name=self.sink.name,
                delivered=self.delivered,
                failed=self.failed,
                dropped=self.dropped,
                queued=len(self.worker.queue),
            )


def _redacted(record: ScoreRecord) -> ScoreRecord:
    conversation = record.conversation_id
    if not conversation:
        return record
    try:
        cleaned = redact(conversation)
    except Exception:  # a redactor failing must not let the id through
        cleaned = "[REDACTED]"
    return record if cleaned == conversation else record.model_copy(update={"conversation_id": cleaned})


class SinkDispatcher:
    """Hands every record to every sink through one bounded queue per sink.

    Args:
        sinks: the destinations; the dispatcher owns them (:meth:`stop` shuts them down).
        queue_size: records waiting per sink; beyond it a record is dropped (``sink_queue_full``).
        count_drop: ``(reason, amount)`` for ``toolscore.dropped`` (the emitter's ``count_drop``).
    """

    def __init__(
        self, sinks: Sequence[ScoreSink], *, queue_size: int, count_drop: Callable[[str, int], None]
    ) -> None:
        self._lanes = [_Lane(sink, queue_size, count_drop) for sink in sinks]
        self._count_drop = count_drop
        self._stopped = False

    @property
    def sinks(self) -> list[ScoreSink]:
        return [lane.sink for lane in self._lanes]

    def offer(self, record: ScoreRecord) -> None:
        """Queue ``record`` for every sink; never blocks, never raises (a full queue is counted).

        The conversation id comes from the application's data: it goes through the built-in
        redaction (:func:`otel_toolscore.redact.redact`) before any sink sees it."""
        if not self._lanes:
            return
        record = _redacted(record)
        for lane in self._lanes:
            lane.offer(record)

    def offer_evaluation(
        self,
        ref: RunRef,
        name: str,
        score: float,
        label: str | None,
        explanation: str | None,
        *attribute_maps: Mapping[str, Any] | None,
    ) -> None:
        """One evaluation with a score (the code scorer's or the judge's), written for ``ref``, as a
        :class:`ScoreRecord` for every sink; never raises (a record that cannot be built is counted
        as ``sink_failed``, once per sink that misses it)."""
        if not self._lanes:
            return
        try:
            record = score_record(ref, name, score, label, explanation, *attribute_maps)
        except Exception:
            _log.debug("otel-toolscore could not build a score record", exc_info=True)
            self._count_drop(FAILED, len(self._lanes))
            return
        self.offer(record)

    def stats(self) -> list[SinkStats]:
        return [lane.stats() for lane in self._lanes]

    def wait_idle(self, deadline: float) -> bool:
        """Until every queue is empty and every export returned, or ``deadline`` (monotonic)."""
        ok = True
        for lane in self._lanes:
            ok = lane.worker.wait_idle(deadline) and ok
        return ok

    def stop(self, deadline: float) -> bool:
        """Deliver what is queued until ``deadline``, then shut every sink down. Records not delivered
        by then (a backend that hangs past its own timeouts) are counted as ``sink_failed``."""
        if self._stopped:
            return True
        self._stopped = True
        ok = True
        for lane in self._lanes:
            ok = lane.worker.stop(deadline) and ok
        for lane in self._lanes:
            with lane.lock:
                lane.abandoned = True
                left = len(lane.worker.queue) + lane.in_hand
                lane.worker.queue.clear()
                lane.in_hand = 0
                lane.failed += left
            if left:
                lane.count_drop(FAILED, left)
            if not lane.worker.alive:  # a thread stuck in an export may still use the sink
                with contextlib.suppress(Exception):
                    lane.sink.shutdown()
        return ok
