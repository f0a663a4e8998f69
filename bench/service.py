"""Service: spans per second ingested, scored and forwarded by ``otel-toolscore serve`` vs rotel forwarding
the same OTLP load.

The load is recorded once: the scripted agent's runs (7 spans each, content captured) encoded as
OTLP/protobuf export requests of 70 runs. In every round the same requests (with fresh trace ids)
are POSTed over OTLP/HTTP by one client, to:

* ``direct``: the sink itself (the harness ceiling: client + sink alone);
* ``rotel``: a rotel collector (PyPI ``rotel``) forwarding over OTLP/HTTP to the sink;
* ``service``: ``otel-toolscore serve --forward`` (its own process, as rotel), forwarding to the
  same sink and exporting its events and metrics there, scoring every run (the expectation matches
  every run).

A configuration's time runs from the first request until the sink has received every span (and,
for the service, every run's root carrying its score). The sink decodes with upb protobuf and
counts spans and scored roots.
Rounds are interleaved; ``ratio`` is service spans/s over rotel spans/s.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import signal
import statistics
import subprocess
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
from .pipelines import EXPECTATION, one_run

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RUNS_PER_REQUEST = 70


class Sink:
    """An OTLP/HTTP receiver that counts spans (and accepts, uncounted, logs and metrics)."""

    def __init__(self) -> None:
        self.spans = 0
        self.scored = 0  # spans carrying a code score (the service's enriched roots)
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
                    spans = [sp for rs in req.resource_spans for ss in rs.scope_spans for sp in ss.spans]
                    scored = sum(1 for sp in spans if sp.name.startswith("invoke_agent")
                                 and any(kv.key == "toolscore.code.score" for kv in sp.attributes))
                    with sink._changed:
                        sink.spans += len(spans)
                        sink.scored += scored
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

    def wait_for(self, total: int, timeout: float, scored: int = 0) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.spans < total or self.scored < scored:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(min(remaining, 0.1))
        return True

    def reset(self) -> None:
        with self._lock:
            self.spans = self.scored = 0

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


def _start_service(sink: Sink) -> tuple[subprocess.Popen[str], int]:
    """``otel-toolscore serve --forward`` forwarding to (and exporting to) ``sink``: (process, HTTP port)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_toolscore", "serve", "--grpc-port", "0", "--http-port", "0",
         "--forward", "--export", "--export-endpoint", f"http://127.0.0.1:{sink.port}",
         "--export-protocol", "http/protobuf", "--quiet-period-ms", "100", "--metric-export-interval-ms", "60000",
         "--expected-order", ",".join(EXPECTATION.expected_tool_order or ()), "--log-level", "WARNING"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
    )
    assert proc.stdout is not None
    info = json.loads(proc.stdout.readline())
    return proc, int(info["http_port"])


def run(result: Result, *, quick: bool) -> None:
    from tests.tools.external import rotel

    runs = 140 if quick else 2_100
    rounds = 1 if quick else 3
    timeout = 60.0 if quick else 240.0
    requests = record_load(runs)
    total = runs * 7
    sink = Sink()
    service, service_port = _start_service(sink)
    times: dict[str, list[float]] = {"direct": [], "rotel": [], "service": []}
    complete: dict[str, bool] = {k: True for k in times}
    try:
        with tempfile.TemporaryDirectory() as tmp, rotel(
            Path(tmp), f"http://127.0.0.1:{sink.port}", protocol="http"
        ) as (_grpc, rotel_http):
            targets = {"direct": sink.port, "rotel": rotel_http, "service": service_port}
            for r in range(rounds):
                order = ["direct", "rotel", "service"] if r % 2 == 0 else ["service", "rotel", "direct"]
                for which in order:
                    payloads = _payloads(requests, r * 3 + order.index(which) + 1)
                    sink.reset()
                    t0 = time.perf_counter()
                    _post_all(targets[which], payloads, timeout)
                    ok = sink.wait_for(total, timeout, scored=runs if which == "service" else 0)
                    times[which].append(time.perf_counter() - t0)
                    complete[which] = complete[which] and ok
                    time.sleep(0.2)  # let the previous target's exports settle before the next one
    finally:
        service.send_signal(signal.SIGTERM)
        try:
            service.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            service.kill()
            service.communicate()
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
            row["runs_scored"] = runs if complete[which] else sink.scored
        result.add(**row)
    result.notes.append(
        "service: `otel-toolscore serve --forward` in its own process (as rotel), one OTLP/HTTP client "
        "thread; its time includes its quiet period (100 ms after a trace's last span) before scoring; it "
        "forwards spans as received, in batches of up to 512 (or after 1 s), and exports its events to the "
        "same sink."
    )
