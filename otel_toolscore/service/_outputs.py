"""Where the service's own output goes: its resource, and the providers and senders that carry its
metrics, its evaluation records, its own spans and the spans it forwards.

Each is injected (tests, embedding) or built from the export settings: ``--export-protocol`` for
every signal, else each signal's ``OTEL_EXPORTER_OTLP_*`` protocol (default ``http/protobuf``, like
every OpenTelemetry SDK). Forwarded spans leave through a sender of encoded requests (as received);
the evaluation records are encoded as they are written (:mod:`._log_export`), not through the SDK.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable
from typing import Any

from opentelemetry import _logs, metrics
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter

from .._version import __version__
from ..telemetry._exporters import otlp_exporter, otlp_protocol
from ._log_export import EncodedLoggerProvider
from ._otlp_sender import ExporterSender, TraceSender, otlp_sender, trace_sender
from .settings import ServiceSettings

__all__ = ["BorrowedProcessor", "ServiceOutputs", "build_outputs", "service_resource"]

_log = logging.getLogger(__name__)

_ENDPOINT_VARS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
)


def service_resource() -> Resource:
    """The service's own resource. OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES win; a per-process
    ``service.instance.id`` keeps the replicas' metric series apart."""
    attrs: dict[str, Any] = {
        "service.name": "otel-toolscore",
        "service.version": __version__,
        "service.instance.id": str(uuid.uuid4()),
    }
    for k, v in Resource.create().attributes.items():
        if k == "service.name" and str(v).startswith("unknown_service"):
            continue  # the SDK's placeholder, not a name the operator chose
        attrs[k] = v
    return Resource(attrs)


class ServiceOutputs:
    """What :func:`build_outputs` built or was given, and what the service shuts down itself (``owned``)."""

    __slots__ = ("log_export", "logger_provider", "meter_provider", "owned", "resource", "sender", "span_exporter")

    def __init__(
        self,
        resource: Resource,
        meter_provider: metrics.MeterProvider,
        logger_provider: _logs.LoggerProvider,
        *,
        log_export: EncodedLoggerProvider | None,
        sender: TraceSender | None,
        span_exporter: SpanExporter | None,
        owned: list[Any],
    ) -> None:
        self.resource = resource
        self.meter_provider = meter_provider
        self.logger_provider = logger_provider
        #: the evaluation records, encoded as written (shut down first); ``None`` when the SDK's provider is used
        self.log_export = log_export
        #: where forwarded spans leave (encoded, as received); ``None`` without an export target
        self.sender = sender
        #: the SDK exporter of the service's own spans (the judge's carrier spans) when not forwarding
        self.span_exporter = span_exporter
        self.owned = owned


def build_outputs(
    svc: ServiceSettings,
    meter_provider: MeterProvider | None,
    logger_provider: LoggerProvider | None,
    span_exporter: SpanExporter | None,
    count_drop: Callable[[str, int], None],
) -> ServiceOutputs:
    """The service's outputs from its settings, with the injected ones used as given."""
    endpoint_known = bool(svc.export_endpoint) or any(os.environ.get(v) for v in _ENDPOINT_VARS)
    exporting = svc.export and endpoint_known and (meter_provider is None or logger_provider is None or span_exporter is None)
    if svc.export and not endpoint_known and (meter_provider is None or logger_provider is None):
        _log.warning(
            "otel-toolscore serve: no export endpoint (--export-endpoint or OTEL_EXPORTER_OTLP_ENDPOINT): "
            "scores are not exported"
        )
    spans_out = metrics_out = logs_out = None
    logs_protocol: str | None = None
    log_export: EncodedLoggerProvider | None = None
    owned: list[Any] = []
    sender: TraceSender | None = ExporterSender(span_exporter) if span_exporter is not None else None
    if exporting:
        if svc.forward and span_exporter is None:
            sender = trace_sender(svc.export_protocol or otlp_protocol("traces"), svc.export_endpoint,
                                  max_response_bytes=svc.forward_max_response_bytes)
        else:
            spans_out = otlp_exporter("traces", svc.export_protocol or otlp_protocol("traces"), svc.export_endpoint)
        metrics_out = otlp_exporter("metrics", svc.export_protocol or otlp_protocol("metrics"), svc.export_endpoint)
        if logger_provider is None and not sdk_disabled():
            logs_protocol = svc.export_protocol or otlp_protocol("logs")
        else:
            logs_out = otlp_exporter("logs", svc.export_protocol or otlp_protocol("logs"), svc.export_endpoint)
    resource = service_resource()
    if meter_provider is None:
        readers = []
        if metrics_out is not None:
            readers.append(PeriodicExportingMetricReader(metrics_out, export_interval_millis=svc.metric_export_interval_ms))
        meter_provider = MeterProvider(resource=resource, metric_readers=readers)
        owned.append(meter_provider)
    logs: _logs.LoggerProvider
    if logger_provider is not None:
        logs = logger_provider
    elif logs_protocol is not None:
        log_sender = otlp_sender("logs", logs_protocol, svc.export_endpoint, max_response_bytes=svc.forward_max_response_bytes)
        logs = log_export = EncodedLoggerProvider(resource, log_sender, count_drop)
    else:
        sdk_logs = LoggerProvider(resource=resource)
        if logs_out is not None:
            sdk_logs.add_log_record_processor(BatchLogRecordProcessor(logs_out))
        logs = sdk_logs
        owned.append(logs)
    return ServiceOutputs(
        resource, meter_provider, logs, log_export=log_export, sender=sender,
        span_exporter=span_exporter if span_exporter is not None else spans_out, owned=owned,
    )


def sdk_disabled() -> bool:
    """``OTEL_SDK_DISABLED=true``: the SDK's providers are no-ops, and so are the service's records."""
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


class BorrowedProcessor(SpanProcessor):
    """Hands spans to a processor owned elsewhere (the forwarding queue): flushes it, never shuts it down."""

    def __init__(self, inner: SpanProcessor) -> None:
        self._inner = inner

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self._inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        self._inner.on_end(span)

    def shutdown(self) -> None:
        self._inner.force_flush()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self._inner.force_flush(timeout_millis))
