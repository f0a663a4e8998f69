"""OTLP receivers of the scoring service: gRPC (TraceService, LogsService) and HTTP (protobuf, JSON).

Both answer overload with OTLP's retryable responses: gRPC ``RESOURCE_EXHAUSTED`` carrying a
``google.rpc.RetryInfo`` (OTLP makes that code retryable only with it), HTTP 429 with
``Retry-After``; a draining service answers gRPC ``UNAVAILABLE`` / HTTP 503 with ``Retry-After``,
so the sender (a Collector) keeps the data and retries, or sends it to another replica.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import zlib
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import grpc  # type: ignore[import-untyped,unused-ignore]
from google.protobuf import any_pb2, duration_pb2, json_format
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped,unused-ignore]
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from .decode import DecodeError, parse_logs_request, parse_trace_request

if TYPE_CHECKING:
    from .app import IntakeResult, ScoringService
    from .settings import ServiceSettings

__all__ = ["GrpcReceiver", "HttpReceiver"]

_log = logging.getLogger(__name__)


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def _retry_status(code: int, message: str, retry_after_s: int) -> status_pb2.Status:
    info = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=retry_after_s))
    detail = any_pb2.Any()
    detail.Pack(info)
    return status_pb2.Status(code=code, message=message, details=[detail])


# -- gRPC -------------------------------------------------------------------------------------------
class _GrpcAnswers:
    def __init__(self, service: ScoringService, settings: ServiceSettings) -> None:
        self.service = service
        self.retry_after_s = settings.retry_after_s

    def refuse(self, context: grpc.ServicerContext, result: IntakeResult) -> None:
        if result.reason == "draining":
            code, grpc_code, msg = code_pb2.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE, "scoring service is draining"
        else:
            code, grpc_code = code_pb2.RESOURCE_EXHAUSTED, grpc.StatusCode.RESOURCE_EXHAUSTED
            msg = "scoring service buffer is full; retry later"
        status = _retry_status(code, msg, self.retry_after_s)
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


class _TraceServicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, answers: _GrpcAnswers) -> None:
        self._a = answers

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        result = self._a.service.accept_spans(request)
        if not result.accepted:
            self._a.refuse(context, result)
        response = trace_service_pb2.ExportTraceServiceResponse()
        if result.rejected:
            response.partial_success.rejected_spans = result.rejected
            response.partial_success.error_message = "spans without a trace id or span id"
        return response


class _LogsServicer(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, answers: _GrpcAnswers) -> None:
        self._a = answers

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        result = self._a.service.accept_logs(request)
        if not result.accepted:
            self._a.refuse(context, result)
        return logs_service_pb2.ExportLogsServiceResponse()


class GrpcReceiver:
    def __init__(self, service: ScoringService, settings: ServiceSettings) -> None:
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="otel-toolscore-grpc"),
            options=[
                ("grpc.max_receive_message_length", settings.max_request_bytes),
                ("grpc.so_reuseport", 0),  # a second replica on the same port must fail, not share it
            ],
            maximum_concurrent_rpcs=64,
        )
        answers = _GrpcAnswers(service, settings)
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call,unused-ignore]
            _TraceServicer(answers), self._server
        )
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(  # type: ignore[no-untyped-call,unused-ignore]
            _LogsServicer(answers), self._server
        )
        self.address = _hostport(settings.host, settings.grpc_port)
        self.port = self._server.add_insecure_port(self.address)
        if self.port == 0:
            raise OSError(f"cannot bind OTLP/gRPC on {self.address}")

    def start(self) -> None:
        self._server.start()

    def stop(self, grace: float) -> None:
        self._server.stop(grace).wait(grace + 1)


# -- HTTP -------------------------------------------------------------------------------------------
_PROTOBUF = "application/x-protobuf"
MAX_CONCURRENT_HTTP_REQUESTS = 32
_JSON = "application/json"


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("otlp/http %s - %s", self.address_string(), format % args)

    # -- answers ---------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _status(self, http_status: int, code: int, message: str, json_body: bool, headers: dict[str, str] | None = None) -> None:
        status = status_pb2.Status(code=code, message=message)
        if json_body:
            self._send(http_status, json_format.MessageToJson(status).encode(), _JSON, headers)
        else:
            self._send(http_status, status.SerializeToString(), _PROTOBUF, headers)

    # -- health ----------------------------------------------------------------------------------
    def do_GET(self) -> None:
        service = self.server.service
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._send(200, b'{"status":"ok"}', _JSON)
        elif path == "/readyz":
            ready = service.ready
            body = {
                "ready": ready,
                "draining": service.draining,
                "pending_spans": service.buffer.spans,
                "pending_bytes": service.buffer.bytes,
                "pending_traces": service.buffer.traces,
            }
            self._send(200 if ready else 503, json.dumps(body).encode(), _JSON)
        else:
            self._send(404, b"not found\n", "text/plain")

    do_HEAD = do_GET

    # -- OTLP ------------------------------------------------------------------------------------
    def do_POST(self) -> None:
        # Bounded concurrency: the server makes a thread per connection, so past the limit a request
        # is answered at once (retryable) instead of piling up threads and bodies in memory.
        if not self.server.slots.acquire(blocking=False):
            self.close_connection = True
            self.server.service.refuse("spans" if "traces" in self.path else "logs", "overload", 1)
            retry = {"Retry-After": str(self.server.settings.retry_after_s)}
            self._status(429, code_pb2.RESOURCE_EXHAUSTED, "too many concurrent requests; retry later", False, retry)
            return
        try:
            self._post()
        finally:
            self.server.slots.release()

    def _post(self) -> None:
        service = self.server.service
        settings = self.server.settings
        path = self.path.split("?", 1)[0].rstrip("/")
        if path not in ("/v1/traces", "/v1/logs"):
            self._discard_body()
            self._send(404, b"not found (this service receives /v1/traces and /v1/logs)\n", "text/plain")
            return
        signal = "spans" if path == "/v1/traces" else "logs"
        content_type = (self.headers.get("Content-Type") or _PROTOBUF).split(";", 1)[0].strip().lower()
        json_body = content_type == _JSON
        if content_type not in (_JSON, _PROTOBUF):
            self._discard_body()
            self._status(415, code_pb2.INVALID_ARGUMENT, f"unsupported content type {content_type!r}", False)
            return
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            self.close_connection = True
            self._status(411, code_pb2.INVALID_ARGUMENT, "Content-Length required", json_body)
            return
        length = int(length_header)
        if length > settings.max_request_bytes:
            self.close_connection = True
            service.refuse(signal, "too_large", 1)
            self._status(413, code_pb2.INVALID_ARGUMENT, "request too large", json_body)
            return
        body = self.rfile.read(length)
        encoding = (self.headers.get("Content-Encoding") or "").strip().lower()
        try:
            if encoding == "gzip":
                body = _gunzip(body, settings.max_request_bytes)
            elif encoding not in ("", "identity"):
                raise DecodeError(f"unsupported Content-Encoding {encoding!r}")
            if signal == "spans":
                result = service.accept_spans(parse_trace_request(body, content_type))
            else:
                result = service.accept_logs(parse_logs_request(body, content_type))
        except DecodeError as exc:
            service.refuse(signal, "invalid", 1)
            self._status(400, code_pb2.INVALID_ARGUMENT, str(exc), json_body)
            return
        if not result.accepted:
            retry = {"Retry-After": str(settings.retry_after_s)}
            if result.reason == "draining":
                self._status(503, code_pb2.UNAVAILABLE, "scoring service is draining", json_body, retry)
            else:
                self._status(429, code_pb2.RESOURCE_EXHAUSTED, "scoring service buffer is full; retry later", json_body, retry)
            return
        response: Any
        if signal == "spans":
            response = trace_service_pb2.ExportTraceServiceResponse()
            if result.rejected:
                response.partial_success.rejected_spans = result.rejected
                response.partial_success.error_message = "spans without a trace id or span id"
        else:
            response = logs_service_pb2.ExportLogsServiceResponse()
        if json_body:
            self._send(200, json_format.MessageToJson(response).encode(), _JSON)
        else:
            self._send(200, response.SerializeToString(), _PROTOBUF)

    def _discard_body(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if 0 < length <= self.server.settings.max_request_bytes:
            self.rfile.read(length)
        else:
            self.close_connection = True


def _gunzip(data: bytes, limit: int) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise DecodeError(f"bad gzip body: {exc}") from None
    if len(out) > limit or d.unconsumed_tail:
        raise DecodeError("decompressed request too large")
    return out


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    service: ScoringService
    settings: ServiceSettings
    #: Requests handled at once (each holds its body in memory while it is decoded).
    slots = threading.BoundedSemaphore(MAX_CONCURRENT_HTTP_REQUESTS)


class _Server6(_Server):
    address_family = socket.AF_INET6


class HttpReceiver:
    def __init__(self, service: ScoringService, settings: ServiceSettings) -> None:
        cls = _Server6 if ":" in settings.host else _Server
        self._server = cls((settings.host, settings.http_port), _Handler)
        self._server.service = service
        self._server.settings = settings
        self._server.slots = threading.BoundedSemaphore(MAX_CONCURRENT_HTTP_REQUESTS)  # per server
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="otel-toolscore-http", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self, grace: float) -> None:
        self._server.shutdown()
        self._server.server_close()
