"""OTLP receivers of the scoring service: gRPC (TraceService, LogsService) and HTTP (protobuf, JSON).

Both answer overload with OTLP's retryable responses: gRPC ``RESOURCE_EXHAUSTED`` carrying a
``google.rpc.RetryInfo`` (OTLP makes that code retryable only with it), HTTP 429 with
``Retry-After``; a draining service answers gRPC ``UNAVAILABLE`` / HTTP 503 with ``Retry-After``,
so the sender (a Collector) keeps the data and retries, or sends it to another replica. A body that
is not OTLP is ``INVALID_ARGUMENT`` / 400 and one over ``max_request_bytes`` is ``RESOURCE_EXHAUSTED``
without RetryInfo / 413 (not retryable: the same bytes would fail again), each with the reason and
counted in ``toolscore.service.refused``.

The gRPC server sets no concurrent-RPC or concurrent-stream limit: grpcio's own refusal
("Concurrent RPC limit exceeded!") carries no RetryInfo, so OTLP senders would drop the data, and a
stream limit is enforced by resetting streams (``REFUSED_STREAM``, seen as ``UNAVAILABLE``) before
the sender has learnt it; neither is counted. Instead a call waits for one of
:data:`GRPC_WORKERS` workers, its message is read only when a worker takes it (until then HTTP/2
flow control holds the sender), and the buffer's limits refuse (retryable, counted) what does not fit.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import zlib
from collections.abc import Iterable
from concurrent import futures
from typing import TYPE_CHECKING, Any

import grpc  # type: ignore[import-untyped,unused-ignore]
from google.protobuf import any_pb2, duration_pb2, json_format
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped,unused-ignore]
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from .._version import __version__
from ..telemetry import names
from ._decode import DecodeError, parse_logs_request, trace_request
from ._http_server import Answer, HttpLimits, HttpServer
from ._intake import Intake, IntakeResult

if TYPE_CHECKING:
    from .settings import ServiceSettings

__all__ = ["GRPC_WORKERS", "GrpcReceiver", "HttpReceiver"]

_log = logging.getLogger(__name__)

#: Threads handling gRPC calls (decoding is CPU-bound; calls beyond them wait, unread, in order).
GRPC_WORKERS = 8
_OVERLOAD_MESSAGE = "scoring service buffer is full; retry later"
_REJECTED_MESSAGE = "spans without a trace id or span id"


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def _bind_problem(what: str, host: str, port: int, exc: OSError, flag: str) -> str:
    reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
    return f"cannot listen for {what} on {_hostport(host, port)}: {reason} (choose another port with {flag})"


def _check_free(host: str, port: int, what: str, flag: str) -> None:
    """Bind ``host:port`` as the receiver will (``SO_REUSEADDR``, no ``SO_REUSEPORT``) and let it go;
    ``OSError`` naming the port and the flag when it cannot be had."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError):
        return  # the receiver's own bind says why
    for family, kind, proto, _name, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                raise OSError(_bind_problem(what, host, port, exc, flag)) from None


def _retry_status(code: int, message: str, retry_after_ms: int) -> status_pb2.Status:
    delay = duration_pb2.Duration(seconds=retry_after_ms // 1000, nanos=retry_after_ms % 1000 * 1_000_000)
    info = error_details_pb2.RetryInfo(retry_delay=delay)
    detail = any_pb2.Any()
    detail.Pack(info)
    return status_pb2.Status(code=code, message=message, details=[detail])


# -- gRPC -------------------------------------------------------------------------------------------
class _GrpcExport:
    """One Export method (traces or logs): raw bytes in, so size and parse failures are ours to answer and count."""

    def __init__(self, service: Intake, settings: ServiceSettings, signal: str) -> None:
        self.service = service
        self.signal = signal
        self.retry_after_ms = settings.retry_after_ms
        self.max_bytes = settings.max_request_bytes

    def __call__(self, body: bytes, context: grpc.ServicerContext) -> Any:
        service = self.service
        if len(body) > self.max_bytes:
            service.refuse(self.signal, "too_large", 1)
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"request of {len(body)} bytes is over the limit of {self.max_bytes} (max_request_bytes)",
            )
        try:
            if self.signal == "spans":
                result = service.accept_spans(trace_request(body))
            else:
                result = service.accept_logs(parse_logs_request(body))
        except DecodeError as exc:
            service.refuse(self.signal, "invalid", 1)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if not result.accepted:
            self.refuse(context, result)
        if self.signal == "logs":
            return logs_service_pb2.ExportLogsServiceResponse()
        response = trace_service_pb2.ExportTraceServiceResponse()
        if result.rejected:
            response.partial_success.rejected_spans = result.rejected
            response.partial_success.error_message = _REJECTED_MESSAGE
        return response

    def refuse(self, context: grpc.ServicerContext, result: IntakeResult) -> None:
        if result.reason == "draining":
            code, grpc_code, msg = code_pb2.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE, "scoring service is draining"
        else:
            code, grpc_code, msg = code_pb2.RESOURCE_EXHAUSTED, grpc.StatusCode.RESOURCE_EXHAUSTED, _OVERLOAD_MESSAGE
        status = _retry_status(code, msg, self.retry_after_ms)
        info = error_details_pb2.RetryInfo()
        status.details[0].Unpack(info)
        context.set_trailing_metadata(
            (
                ("grpc-status-details-bin", status.SerializeToString()),
                # What the OpenTelemetry Python exporter reads for the delay.
                ("google.rpc.retryinfo-bin", info.SerializeToString()),
            )
        )
        context.abort(grpc_code, msg)


def _serialize(message: Any) -> bytes:
    return message.SerializeToString()  # type: ignore[no-any-return]


class GrpcReceiver:
    def __init__(self, service: Intake, settings: ServiceSettings) -> None:
        # The transport's own size check answers RESOURCE_EXHAUSTED uncounted; let messages up to
        # twice the limit through to ours (it counts and names the limit). Calls are read one
        # worker at a time, so this bounds memory at GRPC_WORKERS * 2 * max_request_bytes.
        transport_limit = min(2 * settings.max_request_bytes, 2**31 - 1)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=GRPC_WORKERS, thread_name_prefix="otel-toolscore-grpc"),
            options=[
                ("grpc.max_receive_message_length", transport_limit),
                ("grpc.so_reuseport", 0),  # a second replica on the same port must fail, not share it
            ],
        )
        handlers = []
        for service_name, signal in (
            ("opentelemetry.proto.collector.trace.v1.TraceService", "spans"),
            ("opentelemetry.proto.collector.logs.v1.LogsService", "logs"),
        ):
            method = grpc.unary_unary_rpc_method_handler(
                _GrpcExport(service, settings, signal), request_deserializer=None, response_serializer=_serialize
            )
            handlers.append(grpc.method_handlers_generic_handler(service_name, {"Export": method}))
        self._server.add_generic_rpc_handlers(handlers)
        self.address = _hostport(settings.host, settings.grpc_port)
        # grpcio logs its own line (through its C core, on stderr) and raises a RuntimeError when the
        # port is taken: a taken port is found first, and said once, naming the flag.
        _check_free(settings.host, settings.grpc_port, "OTLP/gRPC", "--grpc-port")
        try:
            self.port = self._server.add_insecure_port(self.address)
        except RuntimeError:  # taken between the check and grpcio's bind
            self.port = 0
        if self.port == 0:
            raise OSError(f"cannot listen for OTLP/gRPC on {self.address} (choose another port with --grpc-port)")

    def start(self) -> None:
        self._server.start()

    def stop(self, grace: float) -> None:
        self._server.stop(grace).wait(grace + 1)


# -- HTTP -------------------------------------------------------------------------------------------
_PROTOBUF = "application/x-protobuf"
_JSON = "application/json"
_SIGNALS = {"/v1/traces": "spans", "/v1/logs": "logs"}
#: What the connection layer reports, as the reason of ``toolscore.service.refused`` (a request refused).
_REFUSED = {"too_large": "too_large", "length_required": "invalid", "protocol_error": "invalid",
            "overload": "overload", "read_timeout": "read_timeout"}


def _status_answer(
    http_status: int, code: int, message: str, json_body: bool, headers: dict[str, str] | None = None, close: bool = False
) -> Answer:
    status = status_pb2.Status(code=code, message=message)
    if json_body:
        return Answer(http_status, json_format.MessageToJson(status).encode(), _JSON, headers or {}, close)
    return Answer(http_status, status.SerializeToString(), _PROTOBUF, headers or {}, close)


class HttpReceiver:
    """OTLP/HTTP on :class:`~._http_server.HttpServer`: ``/v1/traces``, ``/v1/logs``, ``/healthz``, ``/readyz``."""

    def __init__(self, service: Intake, settings: ServiceSettings) -> None:
        self.service = service
        self.settings = settings
        meter = service.meter_provider.get_meter(names.SCOPE_NAME, __version__)
        self._closed = meter.create_counter(
            names.METRIC_SERVICE_HTTP_CLOSED,
            unit="{connection}",
            description="OTLP/HTTP connections the service closed or refused, by reason (connection_limit, "
            "read_timeout, idle_timeout, protocol_error).",
        )
        limits = HttpLimits(
            max_request_bytes=settings.max_request_bytes,
            read_timeout_s=settings.http_read_timeout_ms / 1000,
            idle_timeout_s=settings.http_idle_timeout_ms / 1000,
            max_connections=settings.http_max_connections,
            retry_after=settings.retry_after_header,
        )
        try:
            self._server = HttpServer(
                settings.host, settings.http_port, limits, handle=self._handle, precheck=self._precheck,
                observe=self._observe,
            )
        except OSError as exc:
            raise OSError(_bind_problem("OTLP/HTTP", settings.host, settings.http_port, exc, "--http-port")) from None
        self.port: int = self._server.port

        def open_connections(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(self._server.connections)]

        self._connections_gauge = meter.create_observable_gauge(
            names.METRIC_SERVICE_HTTP_CONNECTIONS, [open_connections], unit="{connection}",
            description="Open OTLP/HTTP connections.",
        )

    @property
    def saturated(self) -> bool:
        return self._server.saturated

    def start(self) -> None:
        self._server.start()

    def stop(self, grace: float) -> None:
        self._server.stop(grace)

    # -- what the connection layer reports ------------------------------------------------------------
    def _observe(self, event: str, path: str | None) -> None:
        signal = _SIGNALS.get((path or "").rstrip("/"))
        if signal is not None and event in _REFUSED:
            self.service.refuse(signal, _REFUSED[event], 1)
        else:
            self._closed.add(1, {names.ATTR_REASON: event})

    def _precheck(self, path: str, headers: dict[str, str]) -> Answer | None:
        """Refuse before the body is read: unknown path, content type or encoding."""
        if path.rstrip("/") not in _SIGNALS:
            return Answer(404, b"not found (this service receives /v1/traces and /v1/logs)\n", close=True)
        content_type = (headers.get("content-type") or _PROTOBUF).split(";", 1)[0].strip().lower()
        if content_type not in (_JSON, _PROTOBUF):
            self.service.refuse(_SIGNALS[path.rstrip("/")], "invalid", 1)
            return _status_answer(415, code_pb2.INVALID_ARGUMENT, f"unsupported content type {content_type!r}", False, close=True)
        encoding = (headers.get("content-encoding") or "").strip().lower()
        if encoding not in ("", "identity", "gzip"):
            self.service.refuse(_SIGNALS[path.rstrip("/")], "invalid", 1)
            return _status_answer(
                415, code_pb2.INVALID_ARGUMENT, f"unsupported Content-Encoding {encoding!r}", content_type == _JSON, close=True
            )
        return None

    # -- requests -------------------------------------------------------------------------------------
    def _handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
        if method in ("GET", "HEAD"):
            return self._health(path)
        return self._post(path.rstrip("/"), headers, body)

    def _health(self, path: str) -> Answer:
        service = self.service
        if path == "/healthz":
            return Answer(200, b'{"status":"ok"}', _JSON)
        if path == "/readyz":
            ready = service.ready
            doc = {
                "ready": ready,
                "draining": service.draining,
                "pending_spans": service.buffer.spans,
                "pending_bytes": service.buffer.bytes,
                "pending_traces": service.buffer.traces,
                "forward_backlog": service.forward_backlog,
                "http_connections": self._server.connections,
                "http_inflight_bytes": self._server.inflight_bytes,
            }
            return Answer(200 if ready else 503, json.dumps(doc).encode(), _JSON)
        return Answer(404, b"not found\n")

    def _post(self, path: str, headers: dict[str, str], body: bytes) -> Answer:
        service = self.service
        settings = self.settings
        signal = _SIGNALS[path]
        content_type = (headers.get("content-type") or _PROTOBUF).split(";", 1)[0].strip().lower()
        json_body = content_type == _JSON
        encoding = (headers.get("content-encoding") or "").strip().lower()
        try:
            if encoding == "gzip":
                body = _gunzip(body, settings.max_request_bytes)
            if signal == "spans":
                result = service.accept_spans(trace_request(body, content_type))
            else:
                result = service.accept_logs(parse_logs_request(body, content_type))
        except DecodeError as exc:
            service.refuse(signal, "invalid", 1)
            return _status_answer(400, code_pb2.INVALID_ARGUMENT, str(exc), json_body)
        if not result.accepted:
            retry = {"Retry-After": settings.retry_after_header}
            if result.reason == "draining":
                return _status_answer(503, code_pb2.UNAVAILABLE, "scoring service is draining", json_body, retry)
            return _status_answer(429, code_pb2.RESOURCE_EXHAUSTED, _OVERLOAD_MESSAGE, json_body, retry)
        response: Any
        if signal == "spans":
            response = trace_service_pb2.ExportTraceServiceResponse()
            if result.rejected:
                response.partial_success.rejected_spans = result.rejected
                response.partial_success.error_message = _REJECTED_MESSAGE
        else:
            response = logs_service_pb2.ExportLogsServiceResponse()
        if json_body:
            return Answer(200, json_format.MessageToJson(response).encode(), _JSON)
        return Answer(200, response.SerializeToString(), _PROTOBUF)


def _gunzip(data: bytes, limit: int) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise DecodeError(f"bad gzip body: {exc}") from None
    if len(out) > limit or d.unconsumed_tail:
        raise DecodeError("decompressed request too large")
    return out
