"""An OTLP/HTTP capture server (a stand-in backend on 127.0.0.1) and helpers to send agent traces."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from otel_toolscore.extract._records import any_value

_KINDS = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/logs": (ExportLogsServiceRequest, ExportLogsServiceResponse),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
}


class Capture:
    """What an OTLP backend received: parsed export requests per path."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: dict[str, list[Any]] = {p: [] for p in _KINDS}

    # -- views ------------------------------------------------------------------------------------
    def spans(self) -> list[dict[str, Any]]:
        out = []
        with self.lock:
            reqs = list(self.requests["/v1/traces"])
        for r in reqs:
            for rs in r.resource_spans:
                for ss in rs.scope_spans:
                    for sp in ss.spans:
                        out.append(
                            {
                                "trace_id": sp.trace_id.hex(),
                                "span_id": sp.span_id.hex(),
                                "parent_span_id": sp.parent_span_id.hex() or None,
                                "name": sp.name,
                                "attributes": {kv.key: any_value(kv.value) for kv in sp.attributes},
                            }
                        )
        return out

    def logs(self) -> list[dict[str, Any]]:
        out = []
        with self.lock:
            reqs = list(self.requests["/v1/logs"])
        for r in reqs:
            for rl in r.resource_logs:
                for sl in rl.scope_logs:
                    for lr in sl.log_records:
                        out.append(
                            {
                                "trace_id": lr.trace_id.hex(),
                                "span_id": lr.span_id.hex(),
                                "event_name": lr.event_name,
                                "attributes": {kv.key: any_value(kv.value) for kv in lr.attributes},
                            }
                        )
        return out

    def metric_points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """(attributes, data point) of every point of metric ``name`` in the latest export per resource."""
        out = []
        with self.lock:
            reqs = list(self.requests["/v1/metrics"])
        for r in reqs:
            for rm in r.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        if m.name != name:
                            continue
                        which = m.WhichOneof("data")
                        for dp in getattr(m, which).data_points:
                            out.append(({kv.key: any_value(kv.value) for kv in dp.attributes}, dp))
        return out

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 15.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        return predicate()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        kinds = _KINDS.get(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if kinds is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        req = kinds[0]()
        req.ParseFromString(body)
        with self.server.capture.lock:
            self.server.capture.requests[self.path].append(req)
        out = kinds[1]().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    capture: Capture


@contextmanager
def capture_server() -> Iterator[tuple[str, Capture]]:
    """An OTLP/HTTP backend on 127.0.0.1: yields (base endpoint URL, capture)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.capture = Capture()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.capture
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


@contextmanager
def grpc_capture_server() -> Iterator[tuple[str, Capture]]:
    """An OTLP/gRPC backend on 127.0.0.1: yields (``http://127.0.0.1:port``, capture); requests are
    filed under the same paths as the HTTP server's (``/v1/traces`` …)."""
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    capture = Capture()

    def keep(path: str, request: Any) -> Any:
        with capture.lock:
            capture.requests[path].append(request)
        return _KINDS[path][1]()

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            return keep("/v1/traces", request)

    class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            return keep("/v1/metrics", request)

    class Logs(logs_service_pb2_grpc.LogsServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            return keep("/v1/logs", request)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"http://127.0.0.1:{port}", capture
    finally:
        server.stop(0)


def drain_after_first_request(service: Any, seen: list[Any], timeout_s: float, thread: str) -> tuple[float, list[str]]:
    """Once a backend has seen a first request (``seen``), drain ``service`` within ``timeout_s``:
    (seconds the drain took, the threads named ``thread`` still alive a moment later)."""
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:
        time.sleep(0.05)
    assert seen, "a batch was sent"
    t0 = time.monotonic()
    service.shutdown(timeout_s=timeout_s)
    took = time.monotonic() - t0
    time.sleep(0.3)
    return took, [t.name for t in threading.enumerate() if t.name == thread]


@contextmanager
def scripted_http(responses: list[tuple[int, dict[str, str]]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An OTLP/HTTP endpoint answering with ``responses`` in turn (the last one repeats)."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append({"headers": {k.lower(): v for k, v in self.headers.items()}, "body": body, "at": time.monotonic()})
            status, headers = responses[min(len(seen) - 1, len(responses) - 1)]
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", seen
    finally:
        server.shutdown()
        server.server_close()
