"""The pipelines the benchmark compares: the SDK with a BatchSpanProcessor alone, and with our processor.

Both export to no-op exporters (the export itself is not what is measured), and the candidate gets a
real ``MeterProvider`` and ``LoggerProvider`` (periodic/batch processors over no-op exporters) so the
score's attributes, event and metrics are all really written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from otel_toolscore import Expectation, ToolScoreSpanProcessor
from otel_toolscore.scripted import ScriptedCall, run_scripted_agent

__all__ = [
    "AGENT",
    "CALLS",
    "EXPECTATION",
    "Pipeline",
    "baseline_pipeline",
    "candidate_pipeline",
    "one_run",
    "root_copy",
    "scoring_pipeline",
    "without_worker",
]

AGENT = "bench_agent"
#: 5 tool spans per run (with the agent span and the chat span: 7 spans per run).
CALLS: Sequence[ScriptedCall] = tuple(ScriptedCall(f"tool_{i}", {"i": i, "q": "x" * 16}) for i in range(5))
EXPECTATION = Expectation(agent_name=AGENT, expected_tool_order=("tool_0", "tool_2", "tool_4"))


class NoopSpanExporter(SpanExporter):
    """Counts what it is given (so drops by the BatchSpanProcessor are visible) and sends nothing."""

    def __init__(self) -> None:
        self.spans = 0
        self.scored_roots = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        for s in spans:
            if s.attributes and "toolscore.code.score" in s.attributes:
                self.scored_roots += 1
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


class NoopLogExporter(LogRecordExporter):
    def __init__(self) -> None:
        self.records = 0

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        self.records += len(batch)
        return LogRecordExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        return None


class NoopMetricExporter(MetricExporter):
    def __init__(self) -> None:
        super().__init__(preferred_temporality={}, preferred_aggregation={})
        self.exports = 0

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        self.exports += 1
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        return None


@dataclass
class Pipeline:
    provider: TracerProvider
    spans: NoopSpanExporter
    processor: ToolScoreSpanProcessor | None = None
    meter_provider: MeterProvider | None = None
    logger_provider: LoggerProvider | None = None
    logs: NoopLogExporter | None = None

    @property
    def tracer(self) -> Any:
        return self.provider.get_tracer("bench")

    def flush(self) -> None:
        self.provider.force_flush(60_000)
        if self.logger_provider is not None:
            self.logger_provider.force_flush(60_000)

    def close(self) -> None:
        self.provider.shutdown()
        if self.logger_provider is not None:
            self.logger_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()


def baseline_pipeline() -> Pipeline:
    exporter = NoopSpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(_bsp(exporter))
    return Pipeline(provider, exporter)


def candidate_pipeline(*, expectations: Sequence[Expectation] = (EXPECTATION,), **settings: Any) -> Pipeline:
    def ours(downstream: SpanProcessor, mp: MeterProvider, lp: LoggerProvider) -> ToolScoreSpanProcessor:
        return ToolScoreSpanProcessor(
            downstream, expectations=list(expectations), meter_provider=mp, logger_provider=lp, **settings
        )

    return scoring_pipeline(ours)


def scoring_pipeline(make: Callable[[SpanProcessor, MeterProvider, LoggerProvider], SpanProcessor]) -> Pipeline:
    """The SDK + BatchSpanProcessor with the processor ``make(downstream, meter_provider,
    logger_provider)`` builds in front, its providers real (periodic/batch processors over no-op
    exporters) so that every score's attributes, record and metric points are really written."""
    exporter = NoopSpanExporter()
    logs = NoopLogExporter()
    lp = LoggerProvider()
    lp.add_log_record_processor(BatchLogRecordProcessor(logs))
    mp = MeterProvider(metric_readers=[PeriodicExportingMetricReader(NoopMetricExporter(), export_interval_millis=60_000)])
    processor = make(_bsp(exporter), mp, lp)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    ours = processor if isinstance(processor, ToolScoreSpanProcessor) else None
    return Pipeline(provider, exporter, ours, mp, lp, logs)


def without_worker(pipe: Pipeline) -> Any:
    """The scoring processor of ``pipe`` (ours, or the lean design's) with its worker thread stopped:
    its hooks still queue every span, and the caller does the worker's job on its own thread — ours:
    ``_process`` of each batch the worker would take; the lean design's: ``_loop()``, which returns
    once the queue is empty. For tools that measure or count the worker's own work
    (``bench/instructions.py``, ``bench/worker_stages.py``)."""
    proc: Any = pipe.processor
    if proc is not None:
        worker = proc._worker
        worker._stopped = True
        worker._wake.set()
        worker._thread.join()
    else:
        proc = pipe.provider._active_span_processor._span_processors[0]
        proc._stopped = True
        proc._wake.set()
        proc._worker.join()
    return proc


def root_copy(span: ReadableSpan, attributes: dict[str, Any]) -> ReadableSpan:
    """An ended span again with ``attributes`` (an ended span is immutable): the scored root's copy
    the bench's own processors (the yardstick, the lean design) hand on."""
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _bsp(exporter: SpanExporter) -> BatchSpanProcessor:
    # A queue large enough that neither pipeline drops spans (the default 2,048 drops under 8 threads
    # when the producer is fast, which would make the faster pipeline do less work, not the same work).
    return BatchSpanProcessor(exporter, max_queue_size=65_536)


_QUERIES = [f"what is the weather in city {i}?" for i in range(97)]


def one_run(tracer: Any, capture_content: bool, i: int = 0) -> None:
    run_scripted_agent(tracer, AGENT, _QUERIES[i % 97], CALLS, answer="sunny", capture_content=capture_content)
