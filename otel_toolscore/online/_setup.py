"""Putting the processor in place: a fresh OTel set-up (``configure``) or an existing one (``install``)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry import _logs, metrics, trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, SynchronousMultiSpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

from ..telemetry._exporters import exporters_from_env
from ._log_processor import ToolScoreLogRecordProcessor
from .processor import ToolScoreSpanProcessor

__all__ = ["Installed", "configure", "install", "otlp_endpoint_configured"]

_log = logging.getLogger(__name__)
_lock = threading.Lock()

_ENDPOINT_VARS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
)


def otlp_endpoint_configured() -> bool:
    return any(os.environ.get(v) for v in _ENDPOINT_VARS)


@dataclass
class Installed:
    """What :func:`configure` built; ``shutdown()`` flushes and stops all of it in the right order."""

    processor: ToolScoreSpanProcessor
    tracer_provider: TracerProvider
    meter_provider: MeterProvider | None
    logger_provider: LoggerProvider | None

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()  # scores the last runs and drains the processor's events
        if self.logger_provider is not None:
            self.logger_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()


def configure(
    *,
    export: bool = True,
    resource: Resource | None = None,
    extra_span_processors: Sequence[SpanProcessor] = (),
    metric_readers: Sequence[MetricReader] = (),
    set_global: bool = True,
    **processor_options: Any,
) -> Installed:
    """Tracer, meter and logger providers from the standard ``OTEL_*`` variables, scored.

    For applications with no OpenTelemetry set-up of their own. With ``export=True`` the exporters
    are the ones ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` / ``OTEL_LOGS_EXPORTER`` name
    (default ``otlp``; ``console``, ``none``, comma lists, installed entry points), OTLP over
    ``OTEL_EXPORTER_OTLP_[<SIGNAL>_]PROTOCOL`` (default http/protobuf) to the endpoints of
    ``OTEL_EXPORTER_OTLP_[<SIGNAL>_]ENDPOINT`` — see :mod:`.exporters`. ``processor_options`` go to
    :class:`ToolScoreSpanProcessor`.
    """
    res = resource or Resource.create()
    span_exporters = exporters_from_env("traces") if export else []
    readers: list[MetricReader] = list(metric_readers)
    for item in exporters_from_env("metrics") if export else []:
        readers.append(item if isinstance(item, MetricReader) else PeriodicExportingMetricReader(item))
    meter_provider = MeterProvider(resource=res, metric_readers=readers)
    logger_provider = LoggerProvider(resource=res)
    for log_exporter in exporters_from_env("logs") if export else []:
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter))
    exporting: list[SpanProcessor] = [BatchSpanProcessor(e) for e in span_exporters]
    downstream: SpanProcessor | None = exporting[0] if len(exporting) == 1 and not extra_span_processors else None
    if downstream is None and (exporting or extra_span_processors):
        multi = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]
        for p in [*exporting, *extra_span_processors]:
            multi.add_span_processor(p)
        downstream = multi
    tracer_provider = TracerProvider(resource=res)
    _judge_from_env(processor_options, tracer_provider)
    processor = ToolScoreSpanProcessor(
        downstream, meter_provider=meter_provider, logger_provider=logger_provider, **processor_options
    )
    tracer_provider.add_span_processor(processor)
    # Event-only instrumentations put tool calls in log records: feed them into the same runs.
    logger_provider.add_log_record_processor(ToolScoreLogRecordProcessor(processor))
    if set_global:
        trace.set_tracer_provider(tracer_provider)
        metrics.set_meter_provider(meter_provider)
        _logs.set_logger_provider(logger_provider)
    return Installed(processor, tracer_provider, meter_provider, logger_provider)


def _judge_from_env(processor_options: dict[str, Any], tracer_provider: Any) -> None:
    """Enable the LLM judge from ``OTEL_TOOLSCORE_JUDGE_*`` unless the caller passed one."""
    if processor_options.get("judge") is None:
        from ..judge import judge_from_env

        processor_options["judge"] = judge_from_env(tracer_provider=tracer_provider)


def _is_exporting(p: SpanProcessor) -> bool:
    return isinstance(p, (BatchSpanProcessor, SimpleSpanProcessor)) or hasattr(p, "span_exporter")


def install(tracer_provider: TracerProvider | None = None, **processor_options: Any) -> ToolScoreSpanProcessor:
    """Put a :class:`ToolScoreSpanProcessor` in front of the export processors a provider already has.

    The exporting processors (``BatchSpanProcessor``, ``SimpleSpanProcessor``) become its downstream,
    so the run's root is exported with its score attributes. When the provider's processors cannot be
    reached (not an SDK provider, or an SDK whose layout differs), the processor is added beside them
    with no downstream and a warning: scores then leave as events and metrics only.
    """
    provider = tracer_provider or trace.get_tracer_provider()
    _judge_from_env(processor_options, provider)
    with _lock:
        existing = getattr(provider, "_toolscore_processor", None)
        if isinstance(existing, ToolScoreSpanProcessor):
            return existing
        active = getattr(provider, "_active_span_processor", None)
        current = getattr(active, "_span_processors", None)
        if not isinstance(provider, TracerProvider) or not isinstance(current, tuple):
            _log.warning(
                "otel-toolscore: cannot wrap the export processors of %r; scores leave as events and metrics only",
                type(provider).__name__,
            )
            processor = ToolScoreSpanProcessor(None, **processor_options)
            if hasattr(provider, "add_span_processor"):
                provider.add_span_processor(processor)
            return processor
        exporting = [p for p in current if _is_exporting(p)]
        others = [p for p in current if not _is_exporting(p)]
        downstream: SpanProcessor | None
        if not exporting:
            _log.warning("otel-toolscore: the tracer provider has no export processor; scores leave as events and metrics only")
            downstream = None
        elif len(exporting) == 1:
            downstream = exporting[0]
        else:
            multi = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]
            for p in exporting:
                multi.add_span_processor(p)
            downstream = multi
        processor = ToolScoreSpanProcessor(downstream, **processor_options)
        with active._lock:  # type: ignore[union-attr]
            active._span_processors = (*others, processor)  # type: ignore[union-attr]
        provider._toolscore_processor = processor  # type: ignore[attr-defined]
        lp = _logs.get_logger_provider()
        if isinstance(lp, LoggerProvider):
            lp.add_log_record_processor(ToolScoreLogRecordProcessor(processor))
        return processor
