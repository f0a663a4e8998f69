"""Sending encoded OTLP requests: what enrich-and-forward hands on, as received, and the service's
own log records, encoded directly (:mod:`._log_export`).

The SDK's OTLP exporters take only SDK objects and encode every item again; their raw paths are
private. Forwarding the spans a sender gave us, untouched, needs a sender of encoded requests, so
this module is one: OTLP/HTTP (protobuf) through ``httpx`` and OTLP/gRPC through ``grpcio``,
configured from the same ``OTEL_EXPORTER_OTLP_*`` variables as the SDK's exporters (the
signal-specific one first, then the generic one; the timeout in seconds, as the Python SDK reads it),
and retrying as the OTLP specification says: HTTP 429/502/503/504 and connection errors honouring
``Retry-After``; gRPC ``UNAVAILABLE``, ``CANCELLED``, ``DEADLINE_EXCEEDED``, ``ABORTED``,
``OUT_OF_RANGE``, ``DATA_LOSS``, and ``RESOURCE_EXHAUSTED`` only with ``RetryInfo`` (whose delay is
honoured) — with exponential back-off and jitter, never past the request's timeout.

An injected SDK ``SpanExporter`` (tests, embedding) is served by :class:`ExporterSender`, which
decodes the request back into SDK spans.
"""

from __future__ import annotations

import gzip
import logging
import os
import random
import ssl
import threading
import time
import zlib
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import urlparse

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.util.re import parse_env_headers

from .._version import __version__
from ..http_limits import (
    DEFAULT_MAX_RESPONSE_BYTES,
    check_max_response_bytes,
    count_http_refusal,
    mask_url,
    retry_after_seconds,
    scrub_body,
)

__all__ = ["ExporterSender", "GrpcTraceSender", "HttpTraceSender", "TraceSender", "otlp_sender", "trace_sender"]

_log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0
_MAX_BACKOFF_S = 32.0
_USER_AGENT = f"otel-toolscore/{__version__}"
#: per signal: the gRPC method, its response type, what one item is called, the HTTP client label
_SIGNALS: dict[str, tuple[str, Any, str, str]] = {
    "traces": ("/opentelemetry.proto.collector.trace.v1.TraceService/Export", ExportTraceServiceResponse, "spans",
               "forward"),
    "logs": ("/opentelemetry.proto.collector.logs.v1.LogsService/Export", ExportLogsServiceResponse, "log records",
             "logs"),
}
#: jitter of the back-off: its own generator, so the process's global ``random`` state is never touched
_JITTER = random.Random()


class TraceSender(Protocol):
    """Sends one encoded export request of ``spans`` items (spans, or log records for a logs
    sender); ``True`` when the receiver took it."""

    def send(self, body: bytes, spans: int) -> bool: ...

    def shutdown(self) -> None: ...


def _env(name: str, environ: Mapping[str, str], signal: str = "traces") -> str | None:
    """``OTEL_EXPORTER_OTLP_<SIGNAL>_<name>``, else ``OTEL_EXPORTER_OTLP_<name>`` (empty = unset)."""
    return environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_{name}") or environ.get(f"OTEL_EXPORTER_OTLP_{name}") or None


def _timeout(environ: Mapping[str, str], signal: str) -> float:
    raw = _env("TIMEOUT", environ, signal)
    if raw is None:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        _log.warning("otel-toolscore: OTEL_EXPORTER_OTLP_TIMEOUT=%r is ignored (seconds > 0)", raw)
        return DEFAULT_TIMEOUT_S
    return value


def _compression(environ: Mapping[str, str], signal: str) -> str:
    raw = (_env("COMPRESSION", environ, signal) or "none").strip().lower()
    if raw not in ("none", "gzip", "deflate"):
        _log.warning("otel-toolscore: OTEL_EXPORTER_OTLP_COMPRESSION=%r is ignored (none, gzip, deflate)", raw)
        return "none"
    return raw


def _headers(environ: Mapping[str, str], signal: str) -> dict[str, str]:
    return {k.lower(): v for k, v in parse_env_headers(_env("HEADERS", environ, signal) or "", liberal=True).items()}


class _Backoff:
    """Exponential back-off (1 s, 2 s, 4 s … 32 s, ±20 % jitter) within one request's deadline."""

    def __init__(self, timeout_s: float, stop: threading.Event) -> None:
        self.deadline = time.monotonic() + timeout_s
        self.attempt = 0
        self._stop = stop

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def wait(self, hint_s: float | None) -> bool:
        """Sleep before the next attempt; ``False`` when it would end past the deadline (or at shutdown)."""
        delay = hint_s if hint_s is not None else min(_MAX_BACKOFF_S, 2.0**self.attempt) * _JITTER.uniform(0.8, 1.2)
        self.attempt += 1
        if delay >= self.remaining():
            return False
        return not self._stop.wait(delay)


# -- OTLP/HTTP ----------------------------------------------------------------------------------------
_RETRYABLE_HTTP = frozenset({429, 502, 503, 504})


class HttpTraceSender:
    """OTLP/HTTP protobuf POSTs to ``endpoint`` (the full ``…/v1/traces`` URL, or ``…/v1/logs`` for
    ``signal="logs"``).

    Through :mod:`otel_toolscore.bounded_http`: each attempt ends by what is left of the timeout,
    connect to last byte; the response body is read up to ``max_response_bytes``; a redirect to
    another origin is not followed; the endpoint's user-info never reaches a log line."""

    def __init__(
        self,
        endpoint: str,
        *,
        headers: Mapping[str, str] | None = None,
        compression: str = "none",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        certificate_file: str | None = None,
        client_key_file: str | None = None,
        client_certificate_file: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        signal: str = "traces",
    ) -> None:
        from ..bounded_http import bounded_client

        _method, _response, self._items, self._client_label = _SIGNALS[signal]
        self._url = endpoint
        self.endpoint = mask_url(endpoint)  # as it may be logged
        self.compression = compression
        self.timeout_s = timeout_s
        self._headers = {"content-type": "application/x-protobuf", "user-agent": _USER_AGENT, **(headers or {})}
        if compression != "none":
            self._headers["content-encoding"] = compression
        tls = ssl.create_default_context(cafile=certificate_file)
        if client_certificate_file and client_key_file:
            tls.load_cert_chain(client_certificate_file, client_key_file)
        self._client = bounded_client(client=self._client_label, origin=endpoint, verify=tls, deadline_s=timeout_s,
                                      max_response_bytes=check_max_response_bytes(max_response_bytes))
        self._stop = threading.Event()

    def send(self, body: bytes, spans: int) -> bool:
        import httpx

        from ..bounded_http import ClientRefusal

        if self.compression == "gzip":
            body = gzip.compress(body, compresslevel=6)
        elif self.compression == "deflate":
            body = zlib.compress(body)
        backoff = _Backoff(self.timeout_s, self._stop)
        while True:
            hint: float | None = None
            try:
                response = self._client.post(self._url, content=body, headers=self._headers,
                                             timeout=max(0.05, backoff.remaining()))
            except httpx.TransportError as exc:  # connection refused/reset, timeouts: retryable
                problem = f"{type(exc).__name__}: {mask_url(exc)}"
            except ClientRefusal as exc:  # an answer over the size limit, a redirect elsewhere: not retried
                _log.error("otel-toolscore %s: %s: %s", self._client_label, self.endpoint, exc)
                return False
            except Exception as exc:
                _log.error("otel-toolscore %s: sending to %s failed: %s", self._client_label, self.endpoint, mask_url(exc))
                return False
            else:
                if 200 <= response.status_code < 300:
                    return True
                problem = f"HTTP {response.status_code}"
                if response.status_code not in _RETRYABLE_HTTP:
                    _log.error("otel-toolscore %s: %s refused a request of %d %s: %s %s", self._client_label,
                               self.endpoint, spans, self._items, problem, scrub_body(response.text, 200))
                    return False
                hint = retry_after_seconds(response.headers.get("retry-after"))
            if not backoff.wait(hint):
                _log.error("otel-toolscore %s: %s: %s; retries exhausted within %.1f s", self._client_label,
                           self.endpoint, problem, self.timeout_s)
                return False

    def shutdown(self) -> None:
        self._stop.set()
        self._client.close()


# -- OTLP/gRPC ----------------------------------------------------------------------------------------
def _retry_info_delay(error: Any) -> float | None:
    """The ``RetryInfo`` delay in a gRPC error's status details, if any."""
    from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped,unused-ignore]

    try:
        for key, value in error.trailing_metadata() or ():
            if key == "grpc-status-details-bin":
                status = status_pb2.Status.FromString(value)
                for detail in status.details:
                    if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                        info = error_details_pb2.RetryInfo()
                        detail.Unpack(info)
                        return float(info.retry_delay.seconds + info.retry_delay.nanos / 1e9)
    except Exception:
        return None
    return None


def _too_large(error: Any) -> bool:
    """Whether grpcio refused the response for its size (our ``max_receive_message_length``)."""
    try:
        return "larger than max" in str(error.details()).lower()
    except Exception:
        return False


class GrpcTraceSender:
    """OTLP/gRPC ``TraceService/Export`` calls to ``target`` (``host:port``); ``LogsService/Export``
    for ``signal="logs"``."""

    def __init__(
        self,
        target: str,
        *,
        insecure: bool,
        headers: Mapping[str, str] | None = None,
        compression: str = "none",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        certificate_file: str | None = None,
        client_key_file: str | None = None,
        client_certificate_file: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        signal: str = "traces",
    ) -> None:
        import grpc  # type: ignore[import-untyped,unused-ignore]

        method, response, self._items, self._client_label = _SIGNALS[signal]
        self.target = mask_url(target)  # as it may be logged
        self.timeout_s = timeout_s
        self._metadata = tuple((k, v) for k, v in {"user-agent": _USER_AGENT, **(headers or {})}.items())
        compress = {"gzip": grpc.Compression.Gzip, "deflate": grpc.Compression.Deflate}.get(compression, grpc.Compression.NoCompression)
        # A response larger than this is refused by grpcio itself (RESOURCE_EXHAUSTED, counted below).
        options = [("grpc.max_receive_message_length", check_max_response_bytes(max_response_bytes))]
        if insecure:
            self._channel = grpc.insecure_channel(target, options=options, compression=compress)
        else:
            def read(path: str | None) -> bytes | None:
                if not path:
                    return None
                with open(path, "rb") as f:
                    return f.read()

            creds = grpc.ssl_channel_credentials(
                read(certificate_file), read(client_key_file), read(client_certificate_file)
            )
            self._channel = grpc.secure_channel(target, creds, options=options, compression=compress)
        self._call = self._channel.unary_unary(
            method,
            request_serializer=bytes,  # requests arrive encoded
            response_deserializer=response.FromString,
        )
        self._retryable = {
            grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED,
            grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DATA_LOSS,
        }
        self._exhausted = grpc.StatusCode.RESOURCE_EXHAUSTED
        self._stop = threading.Event()

    def send(self, body: bytes, spans: int) -> bool:
        import grpc  # type: ignore[import-untyped,unused-ignore]

        backoff = _Backoff(self.timeout_s, self._stop)
        while True:
            try:
                self._call(body, metadata=self._metadata, timeout=max(0.05, backoff.remaining()))
                return True
            except grpc.RpcError as err:
                code = err.code()  # type: ignore[attr-defined,unused-ignore]
                hint = _retry_info_delay(err)
                if code == self._exhausted and _too_large(err):
                    count_http_refusal(self._client_label, "response_too_large")
                if code not in self._retryable and not (code == self._exhausted and hint is not None):
                    _log.error("otel-toolscore %s: %s refused a request of %d %s: %s %s", self._client_label,
                               self.target, spans, self._items, code, err.details())  # type: ignore[attr-defined,unused-ignore]
                    return False
                if not backoff.wait(hint):
                    _log.error("otel-toolscore %s: %s: %s; retries exhausted within %.1f s", self._client_label,
                               self.target, code, self.timeout_s)
                    return False
            except Exception as exc:
                _log.error("otel-toolscore %s: sending to %s failed: %s", self._client_label, self.target, mask_url(exc))
                return False

    def shutdown(self) -> None:
        self._stop.set()
        self._channel.close()


# -- an SDK exporter ------------------------------------------------------------------------------------
class ExporterSender:
    """Hands a request to an SDK ``SpanExporter`` (decoded back into SDK spans)."""

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter

    def send(self, body: bytes, spans: int) -> bool:
        from opentelemetry.sdk.trace.export import SpanExportResult

        from ._decode import decode_spans

        decoded = [d.span for d in decode_spans(ExportTraceServiceRequest.FromString(body))]
        return bool(self.exporter.export(decoded) is SpanExportResult.SUCCESS)

    def shutdown(self) -> None:
        self.exporter.shutdown()


def trace_sender(
    protocol: str,
    endpoint: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> TraceSender:
    """The sender ``otlp_exporter("traces", protocol, endpoint)`` would be (:func:`otlp_sender`)."""
    return otlp_sender("traces", protocol, endpoint, environ, max_response_bytes=max_response_bytes)


def otlp_sender(
    signal: str,
    protocol: str,
    endpoint: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> TraceSender:
    """The sender of encoded ``signal`` (``traces``, ``logs``) requests ``otlp_exporter(signal,
    protocol, endpoint)`` would be: ``endpoint`` is a base URL (``/v1/<signal>`` is appended for
    HTTP; gRPC is plain text unless it is ``https://``); without it the ``OTEL_EXPORTER_OTLP_*``
    variables decide, as for the SDK's exporters. A response larger than ``max_response_bytes`` is
    refused and counted (``toolscore.http.client.refused``)."""
    env = os.environ if environ is None else environ
    tls = {
        "certificate_file": _env("CERTIFICATE", env, signal),
        "client_key_file": _env("CLIENT_KEY", env, signal),
        "client_certificate_file": _env("CLIENT_CERTIFICATE", env, signal),
    }
    common: dict[str, Any] = {"headers": _headers(env, signal), "compression": _compression(env, signal),
                              "timeout_s": _timeout(env, signal), "max_response_bytes": max_response_bytes,
                              "signal": signal, **tls}
    if protocol == "grpc":
        url = endpoint or _env("ENDPOINT", env, signal) or "http://localhost:4317"
        parsed = urlparse(url if "://" in url else f"//{url}")
        target = parsed.netloc or url
        if endpoint is not None:
            insecure = not endpoint.startswith("https://")
        else:
            flag = _env("INSECURE", env, signal)
            insecure = flag.strip().lower() == "true" if flag is not None else parsed.scheme == "http"
        return GrpcTraceSender(target, insecure=insecure, **common)
    specific = f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"
    if endpoint is not None:
        url = f"{endpoint.rstrip('/')}/v1/{signal}"
    elif env.get(specific):
        url = env[specific]
    else:
        url = f"{(env.get('OTEL_EXPORTER_OTLP_ENDPOINT') or 'http://localhost:4318').rstrip('/')}/v1/{signal}"
    return HttpTraceSender(url, **common)
