"""Exporters chosen by the standard variables, as the SDK's own configurator chooses them.

``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` / ``OTEL_LOGS_EXPORTER`` name one exporter or a
comma-separated list (default ``otlp``): ``otlp``, ``console``, ``none``, the Python entry-point
names ``otlp_proto_grpc`` / ``otlp_proto_http``, or any exporter installed under the SDK's entry-point
groups (``opentelemetry_traces_exporter`` …; a metrics entry may be a reader, e.g. Prometheus).
``otlp`` takes its protocol from ``OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL``, then
``OTEL_EXPORTER_OTLP_PROTOCOL``, default ``http/protobuf`` (the specification's default; the Python
SDK's own configurator defaults to gRPC). Each exporter is built without arguments, so it reads its
endpoint, headers, timeout and certificates from ``OTEL_EXPORTER_OTLP_<SIGNAL>_*`` and
``OTEL_EXPORTER_OTLP_*`` itself, exactly as under the SDK's configurator.

As for every variable we read, a value we cannot use (an unknown exporter or protocol) logs a warning
naming the variable and is ignored — where the SDK's configurator raises.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any, Literal

from ..envconfig import warn_env

__all__ = ["DEFAULT_PROTOCOL", "Signal", "exporters_from_env", "otlp_exporter", "otlp_protocol"]

Signal = Literal["traces", "metrics", "logs"]

DEFAULT_PROTOCOL = "http/protobuf"
_PROTOCOLS = ("grpc", "http/protobuf")
_ENTRY_POINT_GROUP = {
    "traces": "opentelemetry_traces_exporter",
    "metrics": "opentelemetry_metrics_exporter",
    "logs": "opentelemetry_logs_exporter",
}


def _exporter_variable(signal: Signal) -> str:
    return f"OTEL_{signal.upper()}_EXPORTER"


def otlp_protocol(signal: Signal, environ: Mapping[str, str] | None = None) -> str:
    """The OTLP protocol of ``signal``: the per-signal variable, then the generic one, then http/protobuf."""
    env = os.environ if environ is None else environ
    for name in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        text = env.get(name, "").strip()
        if not text:
            continue
        value = "http/protobuf" if text.lower() == "http" else text.lower()
        if value in _PROTOCOLS:
            return value
        warn_env(f"{name}={text[:60]!r} is ignored (supported: {', '.join(_PROTOCOLS)})")
    return DEFAULT_PROTOCOL


def otlp_exporter(signal: Signal, protocol: str, endpoint: str | None = None) -> Any:
    """The OTLP exporter of ``signal`` over ``protocol``. ``endpoint=None`` leaves the endpoint (and
    headers, timeout, certificates) to the ``OTEL_EXPORTER_OTLP_*`` variables; an explicit endpoint is
    a base URL (``/v1/<signal>`` is appended for HTTP; plain text unless it is ``https://`` for gRPC)."""
    if protocol == "grpc":
        options: dict[str, Any] = {} if endpoint is None else {"endpoint": endpoint, "insecure": not endpoint.startswith("https://")}
        if signal == "traces":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            return OTLPSpanExporter(**options)
        if signal == "metrics":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

            return OTLPMetricExporter(**options)
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

        return OTLPLogExporter(**options)
    http: dict[str, Any] = {} if endpoint is None else {"endpoint": f"{endpoint.rstrip('/')}/v1/{signal}"}
    if signal == "traces":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter

        return HttpSpanExporter(**http)
    if signal == "metrics":
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetricExporter

        return HttpMetricExporter(**http)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter

    return HttpLogExporter(**http)


def _console(signal: Signal) -> Any:
    if signal == "traces":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if signal == "metrics":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter()
    from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter

    return ConsoleLogRecordExporter()


def _installed(signal: Signal, name: str) -> Any | None:
    """An exporter (or metric reader) registered under the SDK's entry-point group, built without arguments."""
    found = entry_points(group=_ENTRY_POINT_GROUP[signal], name=name)
    for entry in found:
        return entry.load()()
    return None


def exporters_from_env(signal: Signal, environ: Mapping[str, str] | None = None) -> list[Any]:
    """The exporters ``OTEL_<SIGNAL>_EXPORTER`` asks for (default ``otlp``); ``[]`` for ``none``.

    For metrics an item may be a ``MetricReader`` (a pull exporter) rather than an exporter.
    """
    env = os.environ if environ is None else environ
    variable = _exporter_variable(signal)
    text = env.get(variable, "").strip() or "otlp"
    out: list[Any] = []
    seen: set[str] = set()
    for raw in text.split(","):
        name = raw.strip()
        key = name.lower()
        if not name or key == "none" or key in seen:
            continue
        seen.add(key)
        try:
            if key == "otlp":
                out.append(otlp_exporter(signal, otlp_protocol(signal, env)))
            elif key in ("otlp_proto_grpc", "otlp_proto_http"):
                out.append(otlp_exporter(signal, "grpc" if key == "otlp_proto_grpc" else "http/protobuf"))
            elif key == "console":
                out.append(_console(signal))
            else:
                exporter = _installed(signal, name)
                if exporter is None:
                    warn_env(f"{variable}: exporter {name!r} is not installed; it is ignored")
                else:
                    out.append(exporter)
        except Exception as exc:  # an exporter that cannot be built must not stop the application
            warn_env(f"{variable}: exporter {name!r} could not be built ({type(exc).__name__}: {exc}); it is ignored")
    return out
