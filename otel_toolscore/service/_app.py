"""The scoring service: OTLP in, the scoring core in the middle, OTLP out.

Received spans are decoded into views read in place (:mod:`._decode`, :mod:`otel_toolscore.core._otlp_spans`:
no SDK span per span, attribute values decoded when a reader looks them up) and buffered by trace
(:mod:`._buffer`). When a trace is complete, the scorer thread runs it through the same core the span
processor runs (:class:`~otel_toolscore.core.Core`: starts in start order, log facts, ends in end
order, as a live process would have), with the same outputs (:class:`~otel_toolscore.core.Outputs`:
events, metrics, sinks, callbacks, the judge). In enrich-and-forward mode every span is handed to the
forwarding queue as it was received (its encoded bytes, never re-encoded), a run's root with the
encoded score attributes appended to them (:mod:`._wire`, :mod:`._forward`, :mod:`._otlp_sender`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from .._deadline import Deadline
from .._version import __version__
from .._workers import IDLE_POLL_S, WakeGate
from ..core import Release, ScoredRun, build_core
from ..core._otlp_spans import OTLP_SPANS, OtlpSpan
from ..extract import SpanFacts, read_log
from ..extract._records import log_views_from_proto
from ..telemetry import names
from ._buffer import PendingTrace, TraceBuffer
from ._decode import DecodedSpan, TraceRequest, as_trace_request
from ._drain import DrainPlan, within
from ._forward import ForwardQueue
from ._intake import IntakeResult
from ._outputs import BorrowedProcessor, build_outputs, service_resource
from ._receivers import GrpcReceiver, HttpReceiver
from ._replay import replay
from ._spool import SpoolingIntake, spool_for
from ._wire import with_attributes, with_new_attributes
from .settings import ServiceConfig

if TYPE_CHECKING:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from ..expectations import Expectation
    from ..sinks._base import ScoreSink

__all__ = ["IntakeResult", "ScoringService", "service_resource"]

_log = logging.getLogger(__name__)

class ScoringService:
    """Buffers OTLP spans and log records by trace and scores each completed trace.

    The receivers (:mod:`._receivers`) call :meth:`accept_spans` / :meth:`accept_logs`; :meth:`start`
    starts them and the scorer thread; :meth:`shutdown` drains (refuse new data, score everything
    buffered, flush the exports).

    Args:
        config: service and scoring settings (:func:`~otel_toolscore.service.settings.load_config`).
        expectations: rules or a rules file (default: ``config.scoring.rules``).
        judge: an optional LLM judge, offered every scored run.
        meter_provider, logger_provider, span_exporter: injected outputs (tests, embedding);
            by default they are built from the export settings.
        on_scored: called with every :class:`~otel_toolscore.core.ScoredRun`.
        judge_from_environment: build the LLM judge from ``OTEL_TOOLSCORE_JUDGE_*`` (when
            ``OTEL_TOOLSCORE_JUDGE_MODEL`` is set) unless ``judge`` is given; its carrier spans are
            exported with the service's own resource.
        environ: the environment read for the judge (default ``os.environ``).
        sinks: score sinks (objects or built-in names); default
            ``config.scoring.sinks`` (``OTEL_TOOLSCORE_SINKS``, ``scoring.sinks`` in the config file).
    """

    def __init__(
        self,
        config: ServiceConfig,
        *,
        expectations: Sequence[Expectation] | str | Path | None = None,
        judge: Any = None,
        meter_provider: MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        span_exporter: SpanExporter | None = None,
        on_scored: Callable[[ScoredRun], None] | None = None,
        judge_from_environment: bool = False,
        environ: Mapping[str, str] | None = None,
        sinks: Sequence[ScoreSink | str] | None = None,
    ) -> None:
        self.config = config
        svc = config.service
        out = build_outputs(svc, meter_provider, logger_provider, span_exporter, self._count_drop)
        self._owned = out.owned  # providers built here, shut down here
        self._resource = out.resource
        self.meter_provider = out.meter_provider
        self.logger_provider = out.logger_provider
        self._log_export = out.log_export  # the evaluation records, encoded (shut down first)
        self._sender = out.sender
        self._span_exporter = out.span_exporter
        downstream: SpanProcessor | None = None
        self._forward: ForwardQueue | None = None
        # --queue-dir: requests on disk until their spans are forwarded (.spool); only with forwarding
        self._spool = spool_for(svc, self._sender is not None, self.meter_provider, self._count_drop)
        if svc.forward and self._sender is not None:
            downstream = self._forward = ForwardQueue(
                self._sender, svc.forward_queue_spans, self._count_drop,
                request_bytes=svc.forward_request_bytes, capacity_bytes=svc.forward_queue_bytes,
                on_done=self._spool.forwarded if self._spool is not None else None,
            )
        # The service's own spans (the judge's carrier spans). With forwarding they share the forwarded
        # spans' forwarding queue (shut down after the judge is drained).
        self.tracer_provider = TracerProvider(resource=self._resource)
        if downstream is not None:
            self.tracer_provider.add_span_processor(BorrowedProcessor(downstream))
        elif self._span_exporter is not None:
            self.tracer_provider.add_span_processor(BatchSpanProcessor(self._span_exporter))
        if judge is None and judge_from_environment:
            from ..judge import judge_from_env

            judge = judge_from_env(environ, tracer_provider=self.tracer_provider)
        # The core the span processor runs, driven here by the scorer thread: a complete trace goes
        # straight into it (no span processor, no queue, no worker in between).
        scoring = config.scoring
        self._core, self.outputs = build_core(
            scoring,
            source=OTLP_SPANS,
            expectations=expectations,
            judge=judge,
            meter_provider=self.meter_provider,
            logger_provider=self.logger_provider,
            on_scored=on_scored,
            sinks=sinks,
        )
        self.rules = self._core.rules
        self.emitter = self.outputs.emitter
        self._judge = judge
        if judge is not None:
            self.outputs.bind_judge()  # every trace is scored before a flush asks: nothing to hand over
        self.extract_options = self._core.options
        self.buffer = TraceBuffer(
            max_spans=svc.max_pending_spans,
            max_bytes=svc.max_pending_bytes,
            quiet_period_s=svc.quiet_period_ms / 1000,
            hard_timeout_s=svc.hard_timeout_ms / 1000,
            recent_traces=svc.recent_traces,
        )
        self._instruments()
        self._stop = threading.Event()
        # The scorer thread looks every tick while traces are pending, and sleeps while none is: the
        # first span or log record accepted wakes it (each timed wake-up costs CPU, found work or not;
        # docs/architecture.md, "When the background threads wake").
        self._scorer_wake = WakeGate()
        self._draining = False
        self._drain_deadline: Deadline | None = None  # scoring stops here while draining
        self._started = False
        self._scorer = threading.Thread(target=self._run_scorer, name="otel-toolscore-service-scorer", daemon=True)
        self._score_lock = threading.Lock()
        self._receivers: list[Any] = []

    def _instruments(self) -> None:
        meter = self.meter_provider.get_meter(names.SCOPE_NAME, __version__)
        self._received = meter.create_counter(
            names.METRIC_SERVICE_RECEIVED, unit="{item}", description="Spans and log records the service accepted, by signal."
        )
        self._refused = meter.create_counter(
            names.METRIC_SERVICE_REFUSED,
            unit="{item}",
            description="Spans and log records refused (the sender keeps them and retries), by signal and reason.",
        )
        self._traces = meter.create_counter(
            names.METRIC_SERVICE_TRACES, unit="{trace}", description="Buffered traces scored, by why they were taken."
        )
        buffer_ref = self  # read at collection time

        def pending_spans(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(buffer_ref.buffer.spans)]

        def pending_bytes(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(buffer_ref.buffer.bytes)]

        self._pending_spans_gauge = meter.create_observable_gauge(
            names.METRIC_SERVICE_PENDING_SPANS, [pending_spans], unit="{span}", description="Spans buffered by the service."
        )

        def forward_backlog(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(buffer_ref.forward_backlog)] if buffer_ref._forward is not None else []

        self._forward_gauge = meter.create_observable_gauge(
            names.METRIC_SERVICE_FORWARD_BACKLOG, [forward_backlog], unit="{span}",
            description="Enrich-and-forward: spans handed to the exporter and not yet exported.",
        )
        self._pending_bytes_gauge = meter.create_observable_gauge(
            names.METRIC_SERVICE_PENDING_BYTES,
            [pending_bytes],
            unit="By",
            description="Estimated bytes buffered by the service (twice the encoded size plus per-span overhead).",
        )

    def _count_drop(self, reason: str, amount: int) -> None:
        self.emitter.count_drop(reason, amount)

    # -- intake (called by the receivers, on their threads) --------------------------------------------
    @property
    def draining(self) -> bool:
        return self._draining

    @property
    def forward_backlog(self) -> int:
        """Spans handed to the forwarding exporter and not yet exported (0 without ``--forward``)."""
        return 0 if self._forward is None else self._forward.held

    @property
    def ready(self) -> bool:
        """Whether a new request would be taken now (what ``/readyz`` answers)."""
        return (
            self._started
            and not self._draining
            and not self.buffer.saturated
            and not (self._forward is not None and self._forward.backlogged)
            and not any(getattr(r, "saturated", False) for r in self._receivers)
        )

    def refuse(self, signal: str, reason: str, count: int) -> None:
        """Count items refused before decoding (invalid or too-large bodies)."""
        if count > 0:
            self._refused.add(count, {names.ATTR_SIGNAL: signal, names.ATTR_REASON: reason})

    def accept_spans(self, request: ExportTraceServiceRequest | TraceRequest) -> IntakeResult:
        """Buffer the spans of a trace export request (the receivers hand over a parsed
        :class:`~._decode.TraceRequest`; a decoded standard message is taken too)."""
        received = as_trace_request(request)
        total = received.total
        if self._draining:
            self.refuse("spans", "draining", total)
            return IntakeResult(False, "draining")
        # Refuse before spending CPU on decoding: the buffer is full, or forwarding is behind (the
        # sender keeps the data until the exporter catches up, rather than the queue dropping it).
        if self.buffer.saturated or (self._forward is not None and self._forward.backlogged):
            self.refuse("spans", "overload", total)
            return IntakeResult(False, "overload")
        decoded = received.decoded(keep_wire=self._forward is not None)
        invalid = total - len(decoded)
        admission = self.buffer.add_spans(decoded)
        if not admission.accepted:
            self.refuse("spans", "overload", total)
            return IntakeResult(False, "overload")
        if invalid:
            self.emitter.count_drop("invalid_span", invalid)
        if admission.duplicates:
            self.emitter.count_drop("duplicate_span", admission.duplicates)
        if len(decoded) > admission.duplicates:
            self._received.add(len(decoded) - admission.duplicates, {names.ATTR_SIGNAL: "spans"})
            self._scorer_wake.nudge()
        if admission.late:
            self._late(admission.late)
        return IntakeResult(True, rejected=invalid)

    def _late(self, late: list[DecodedSpan]) -> None:
        """Spans of a trace already scored: forwarded unscored (enrich-and-forward), counted."""
        self.emitter.count_drop("late_span", len(late))
        if self._forward is not None:
            for d in late:
                try:
                    if d.wire is not None:
                        self._forward.put(d.wire, wait=False)  # a receiver thread: never waits
                except Exception:
                    self.emitter.count_drop("downstream_error")

    def accept_logs(self, request: ExportLogsServiceRequest) -> IntakeResult:
        total = sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)
        if self._draining:
            self.refuse("logs", "draining", total)
            return IntakeResult(False, "draining")
        options = self.extract_options  # the same options the core reads spans with
        kept: list[tuple[int, SpanFacts]] = []
        for view in log_views_from_proto(request):
            if not view.trace_id:
                continue  # outside any trace: nothing to attach it to (not ours to store)
            try:
                facts = read_log(view, options)
            except Exception:
                self.emitter.count_drop("malformed_span")
                continue
            if facts is not None:
                kept.append((int(view.trace_id, 16), facts))
        accepted, late = self.buffer.add_log_facts(kept)
        if not accepted:
            self.refuse("logs", "overload", total)
            return IntakeResult(False, "overload")
        if total:
            self._received.add(total, {names.ATTR_SIGNAL: "logs"})
            self._scorer_wake.nudge()
        if late:
            self.emitter.count_drop("late_log", late)
        return IntakeResult(True)

    # -- scoring ----------------------------------------------------------------------------------------
    def _run_scorer(self) -> None:
        quiet = self.config.service.quiet_period_ms / 1000
        tick = min(0.05, max(0.005, quiet / 4))
        stop = self._stop
        gate = self._scorer_wake
        while not stop.is_set():
            if self.buffer.traces or self._core.table:
                gate.wait(tick)  # quiet periods, timeouts and held roots to watch
            else:
                gate.idle = True
                if not self.buffer.traces:  # nothing buffered as it went idle (that sender saw it busy)
                    gate.wait(IDLE_POLL_S)
                gate.idle = False
            if stop.is_set():
                return
            try:
                self.score_due()
            except Exception:
                _log.exception("otel-toolscore serve: scoring failed")

    def score_due(self, *, everything: bool = False) -> int:
        """Score the traces that are due now (all of them with ``everything``); how many.

        While draining, scoring stops at the drain's deadline: traces left are counted in
        ``toolscore.dropped`` (``drain_timeout``, per span) and released.
        """
        with self._score_lock:
            due = self.buffer.take_due(everything=everything)
            scored = 0
            taken: dict[str, int] = {}  # traces scored by why they were taken: counted once per call
            try:
                for i, (trace, why) in enumerate(due):
                    deadline = self._drain_deadline
                    if deadline is not None and deadline.expired:
                        self._abandon(due[i:])
                        break
                    try:
                        self._score(trace)
                    finally:
                        self.buffer.release(trace)
                        taken[why] = taken.get(why, 0) + 1
                    scored += 1
            finally:
                for why, count in taken.items():
                    self._traces.add(count, {names.ATTR_OUTCOME: why})
            self._release(self._core.sweep())  # roots held past their grace, traces past the timeout
            return scored

    def _abandon(self, traces: Sequence[tuple[PendingTrace, str]]) -> None:
        spans = logs = 0
        for trace, _ in traces:
            spans += len(trace.spans)
            logs += len(trace.log_facts)
            self.buffer.release(trace)
        self.emitter.count_drop("drain_timeout", spans + logs)
        _log.warning(
            "otel-toolscore serve: drain deadline reached; %d traces (%d spans, %d log records) not scored",
            len(traces), spans, logs,
        )

    def _score(self, trace: PendingTrace) -> None:
        """Run a complete trace through the core as the live worker takes a batch holding it all
        (:func:`~._replay.replay`): log facts, then ends in end order (a child before its parent on
        ties). A span that roots no run leaves as received at once; the core releases the others."""
        if not trace.spans:
            # Log records whose spans never came: nothing to score them against.
            self.emitter.count_drop("orphan_logs", len(trace.log_facts))
            return
        items, passed = replay(trace, forwarding=self._forward is not None)
        if passed:
            self._forward_wires(passed)
        self._release(self._core.feed(items))

    def _release(self, release: Release) -> None:
        """Hand on what the core released (roots with their scores), then its runs and counts."""
        if self._forward is not None and release.spans:
            self._forward_wires([w for w in (self._scored_wire(span, attrs) for span, attrs in release.spans) if w])
        self.outputs.deliver(release)

    def _malformed(self) -> None:
        _log.debug("otel-toolscore serve: a span or log record could not be scored", exc_info=True)
        self._core.drop("malformed_span")

    def _forward_wires(self, wires: list[Any]) -> None:
        """Hand spans to the forwarding queue as received; the scorer waits for room."""
        forward = self._forward
        if forward is None:
            return
        try:
            forward.put_many(wires, wait=True)
        except Exception:
            self.emitter.count_drop("downstream_error", len(wires))

    def _scored_wire(self, span: OtlpSpan, added: dict[str, Any] | None) -> Any:
        """A span as it leaves: as received; a root the core scored, with the score attributes it
        gained encoded after its received bytes (a key the sender already set: its message
        re-encoded with the value replaced). ``None`` for a span that cannot be sent (counted)."""
        wire = span.wire
        if wire is None or not added:
            return wire
        try:
            resource, scope, encoded = wire
            if any(k in span._dict for k in added):  # a score the sender already set: replaced
                encoded = with_attributes(Span.FromString(encoded), added).SerializeToString()
            else:
                encoded = with_new_attributes(encoded, added)
            return (resource, scope, encoded)
        except Exception:
            self.emitter.count_drop("downstream_error")
            return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Add the counts made so far to the metrics, and wait — within ``timeout_millis`` — for the
        events, sinks, callbacks and judgments queued, then for the forwarding exporter."""
        deadline = Deadline.after(timeout_millis / 1000)
        ok = self._flush_counts(deadline)
        ok = self.outputs.wait_idle(deadline.instant) and ok
        if self._judge is not None:
            ok = self._judge.force_flush(deadline.remaining()) and ok
            ok = self.outputs.wait_idle(deadline.instant) and ok
        if self._forward is not None:
            ok = self._forward.force_flush(int(deadline.remaining() * 1000)) and ok
        return ok

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the scorer thread and the OTLP receivers."""
        svc = self.config.service
        self._scorer.start()
        intake = self if self._spool is None else SpoolingIntake(self, self._spool)
        try:
            self._receivers = [GrpcReceiver(intake, svc), HttpReceiver(intake, svc)]
            for r in self._receivers:
                r.start()
        except Exception:
            self.shutdown()
            raise
        self._started = True
        if self._spool is not None:
            self._spool.start_replay(self, retry_after_s=svc.retry_after_ms / 1000)

    def _drain_outputs(self, deadline: Deadline) -> None:
        """Events, sinks, callbacks and the judge, within ``deadline``; then their threads stop."""
        self.outputs.wait_idle(Deadline.after(deadline.remaining() / 2).instant)
        if self._judge is not None:
            self._judge.shutdown(deadline.remaining() * 0.5)
            self.outputs.wait_idle(deadline.instant)
        self._flush_counts(deadline)
        self.outputs.stop(max(Deadline.after(0.1).instant, deadline.instant))

    def _flush_counts(self, deadline: Deadline) -> bool:
        """The core's counts to the metrics, waiting for the scorer no longer than ``deadline``."""
        if not self._score_lock.acquire(timeout=deadline.remaining()):
            return False
        try:
            self.outputs.deliver(self._core.take())
        finally:
            self._score_lock.release()
        return True

    @property
    def grpc_port(self) -> int:
        return int(self._receivers[0].port)

    @property
    def http_port(self) -> int:
        return int(self._receivers[1].port)

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Drain within ``timeout_s`` (default ``drain_timeout_ms``): refuse new data, finish in-flight
        requests, score what the time allows, flush exports. What is left at the deadline is counted
        in ``toolscore.dropped`` (``drain_timeout``), never waited for."""
        if self._stop.is_set():
            return
        budget = self.config.service.drain_timeout_ms / 1000 if timeout_s is None else timeout_s
        plan = DrainPlan(budget)
        self._draining = True
        self._drain_deadline = plan.scored_by
        if self._forward is not None:
            self._forward.set_deadline(plan.scored_by.instant)
        grpc_recv = self._receivers[0] if self._receivers else None
        if grpc_recv is not None:
            grpc_recv.stop(grace=min(2.0, budget / 4))
        self._stop.set()
        self._scorer_wake.set()
        if self._scorer.is_alive():
            self._scorer.join(timeout=max(0.1, plan.scored_by.remaining()))
        self.score_due(everything=True)
        if self._forward is not None:
            self._forward.set_deadline(plan.flushed_by.instant)
        self._drain_outputs(plan.flushed_by)
        if self._forward is not None:
            within(self._forward.shutdown, plan.flushed_by)
            self._forward.abandon()  # spans the exporter did not take in time: counted before the metrics' last export
        within(self.tracer_provider.shutdown, plan.flushed_by)
        if self._log_export is not None:
            # records not sent by their deadline (a backend down, retried) are counted before the metrics' last export
            within(self._log_export.shutdown, plan.logs_by())
            self._log_export.abandon()
        for provider in self._owned:
            within(provider.shutdown, plan.end)
        # The HTTP receiver last: /healthz answers while draining.
        for r in self._receivers[1:]:
            r.stop(grace=0)
        if self._spool is not None:
            self._spool.close()  # what was not released stays on disk for the next start


