"""Service: spans per second ingested, scored and forwarded by ``otel-toolscore serve`` vs rotel forwarding
the same OTLP load.

The load is recorded once: the scripted agent's runs (7 spans each, content captured) encoded as
OTLP/protobuf export requests of 70 runs. In every round the same requests (with fresh trace ids)
are POSTed over OTLP/HTTP by one client, to:

* ``direct``: the sink itself (the harness ceiling: client + sink alone);
* ``rotel``: a rotel collector (PyPI ``rotel``) forwarding over OTLP/HTTP to the sink;
* ``service``: the scoring service in enrich-and-forward mode, exporting to the same sink, scoring
  every run (a rule matches every run).

A configuration's time runs from the first request until the sink has received every span (and,
for the service, every run has been scored). The sink decodes with upb protobuf and counts spans.
Rounds are interleaved; ``ratio`` is service spans/s over rotel spans/s.
"""

from __future__ import annotations

import gzip
import http.client
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from .common import Result
from .pipelines import EXPECTATION, NoopLogExporter, NoopMetricExporter, one_run

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RUNS_PER_REQUEST = 70


class Sink:
    """An OTLP/HTTP receiver that counts spans (and accepts, uncounted, logs and metrics)."""

    def __init__(self) -> None:
        self.spans = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True
            wbufsize = 64 * 1024

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding", "").lower() == "gzip":
                    body = gzip.decompress(body)
                if self.path.endswith("/v1/traces"):
                    req = ExportTraceServiceRequest.FromString(body)
                    n = sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
                    with sink._changed:
                        sink.spans += n
                        sink._changed.notify_all()
                    payload = ExportTraceServiceResponse().SerializeToString()
                else:
                    payload = b""
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def wait_for(self, total: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.spans < total:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(min(remaining, 0.1))
        return True

    def reset(self) -> None:
        with self._lock:
            self.spans = 0

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def record_load(runs: int) -> list[ExportTraceServiceRequest]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench.agent")
    requests = []
    for start in range(0, runs, RUNS_PER_REQUEST):
        for i in range(start, min(runs, start + RUNS_PER_REQUEST)):
            one_run(tracer, True, i)
        requests.append(encode_spans(exporter.get_finished_spans()))
        exporter.clear()
    provider.shutdown()
    return requests


def _payloads(requests: list[ExportTraceServiceRequest], round_no: int) -> list[bytes]:
    """The recorded requests with trace ids made unique to this round (first byte)."""
    out = []
    for req in requests:
        copy = ExportTraceServiceRequest()
        copy.CopyFrom(req)
        for rs in copy.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    span.trace_id = bytes([round_no & 0xFF]) + span.trace_id[1:]
        out.append(copy.SerializeToString())
    return out


def _post_all(port: int, payloads: list[bytes], timeout: float) -> int:
    """POST every payload (retrying refusals as an OTLP exporter would); returns refusals seen."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    refused = 0
    deadline = time.monotonic() + timeout
    for body in payloads:
        while True:
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
            resp = conn.getresponse()
            resp.read()
            if resp.status == 200:
                break
            refused += 1
            if resp.status not in (429, 502, 503, 504) or time.monotonic() > deadline:
                raise RuntimeError(f"POST refused with {resp.status}")
            time.sleep(0.05)
    conn.close()
    return refused


def _start_service(sink: Sink, scored: list[int]) -> Any:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    from otel_toolscore.service.app import ScoringService
    from otel_toolscore.service.settings import load_config

    config = load_config(
        environ={},
        service_overrides={
            "grpc_port": 0, "http_port": 0, "forward": True, "quiet_period_ms": 100,
            # forwarded spans leave through the service's own OTLP/HTTP sender, as in production
            "export_endpoint": f"http://127.0.0.1:{sink.port}", "export_protocol": "http/protobuf",
        },
    )
    lp = LoggerProvider()
    lp.add_log_record_processor(BatchLogRecordProcessor(NoopLogExporter()))
    mp = MeterProvider(metric_readers=[PeriodicExportingMetricReader(NoopMetricExporter(), export_interval_millis=60_000)])
    lock = threading.Lock()
    def on_scored(s: Any) -> None:
        if s.outcome == "scored":
            with lock:
                scored[0] += 1

    service = ScoringService(
        config,
        expectations=[EXPECTATION],
        meter_provider=mp,
        logger_provider=lp,
        on_scored=on_scored,
    )
    service.start()
    return service


def run(result: Result, *, quick: bool) -> None:
    from tests.tools.external import rotel

    runs = 140 if quick else 2_100
    rounds = 1 if quick else 3
    timeout = 60.0 if quick else 240.0
    requests = record_load(runs)
    total = runs * 7
    sink = Sink()
    scored = [0]
    service = _start_service(sink, scored)
    times: dict[str, list[float]] = {"direct": [], "rotel": [], "service": []}
    complete: dict[str, bool] = {k: True for k in times}
    try:
        with tempfile.TemporaryDirectory() as tmp, rotel(
            Path(tmp), f"http://127.0.0.1:{sink.port}", protocol="http"
        ) as (_grpc, rotel_http):
            targets = {"direct": sink.port, "rotel": rotel_http, "service": service.http_port}
            for r in range(rounds):
                order = ["direct", "rotel", "service"] if r % 2 == 0 else ["service", "rotel", "direct"]
                for which in order:
                    payloads = _payloads(requests, r * 3 + order.index(which) + 1)
                    sink.reset()
                    scored[0] = 0
                    t0 = time.perf_counter()
                    _post_all(targets[which], payloads, timeout)
                    ok = sink.wait_for(total, timeout)
                    if which == "service":
                        deadline = time.monotonic() + timeout
                        while scored[0] < runs and time.monotonic() < deadline:
                            time.sleep(0.01)
                        ok = ok and scored[0] >= runs
                    times[which].append(time.perf_counter() - t0)
                    complete[which] = complete[which] and ok
                    time.sleep(0.2)  # let the previous target's exports settle before the next one
    finally:
        service.shutdown(timeout_s=10)
        sink.stop()
    med = {k: statistics.median(v) for k, v in times.items()}
    ratios = [s / r for s, r in zip(times["rotel"], times["service"])]
    for which in ("direct", "rotel", "service"):
        row: dict[str, Any] = {
            "name": f"service load, {which}",
            "target": which,
            "runs": runs,
            "spans": total,
            "spans_per_s": round(total / med[which]),
            "complete": complete[which],
        }
        if which == "service":
            row["rotel_spans_per_s"] = round(total / med["rotel"])
            row["ratio"] = round(statistics.median(ratios), 3)
            row["runs_scored"] = runs if complete[which] else scored[0]
        result.add(**row)
    result.notes.append(
        "service: one OTLP/HTTP client thread; the service's time includes its quiet period "
        "(100 ms after a trace's last span) before scoring; it forwards spans as received, in batches "
        "of up to 512 (or after 1 s), through its own OTLP/HTTP sender."
    )
