"""Service: spans per second ingested, scored and forwarded by ``otel-toolscore serve --forward``, and
its CPU per span, beside rotel forwarding the same OTLP load in the same rounds.

The load is recorded once: the scripted agent's runs (7 spans each, content captured) encoded as
OTLP/protobuf export requests of 70 runs (490 spans), 98,000 spans in all. In every round the same
requests (with fresh trace ids) are POSTed over OTLP/HTTP by ``SENDERS`` concurrent clients (one
connection each, the requests dealt out in turn; a refusal retried after its ``Retry-After``, at most
1 s, as the SDK's exporter backs off first), to:

* ``direct``: the sink itself (the harness ceiling: clients and sink alone, in this process);
* ``rotel``: a rotel collector (PyPI ``rotel``, its own process) forwarding over OTLP/HTTP to the
  sink. At this load its batches fill (8,192 spans) long before its 100 ms batch timeout, which is
  left only as the tail of its last batch (as the service's quiet period is its own): rotel is
  CPU-bound, and its ``cpu_cores`` column (CPU seconds over wall seconds) says how busy it was;
* ``service``: ``otel-toolscore serve --forward`` (its own process, as rotel), forwarding to the
  same sink and exporting its evaluation records and metrics there, scoring every run (the
  expectation matches every run).

A configuration's time runs from the first request until the sink has received every span (and,
for the service, every run's root carrying its score). The CPU of rotel and of the service is read
from ``/proc/<pid>/stat`` (user + system time of every thread, live or ended) before the round and
after it — for the service once its evaluation records have arrived too (or a settle time has
passed), so that all of its per-run work is paid for. The sink decodes with upb protobuf and counts
spans, scored roots and log records. Each round runs the three back to back, the order reversed
every other round, after one untimed warm-up pass each; figures are medians over rounds.

Targets for the service: ≥ 12,000 spans/s in one process and ≤ 60 µs of CPU per span.
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
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
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
SENDERS = 4
TARGET_SPANS_PER_S = 12_000
TARGET_CPU_US_PER_SPAN = 60.0
#: After the last scored root, how long the service's evaluation records may take to arrive before
#: its CPU is read anyway (its log batches leave every second, or when full).
RECORDS_SETTLE_S = 5.0
TARGETS = ("direct", "rotel", "service")


class Sink:
    """An OTLP/HTTP receiver that counts spans, scored roots and log records (metrics accepted, uncounted)."""

    def __init__(self) -> None:
        self.spans = 0
        self.scored = 0  # spans carrying a code score (the service's enriched roots)
        self.records = 0  # log records (the service's evaluation records)
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
                elif self.path.endswith("/v1/logs"):
                    logs = ExportLogsServiceRequest.FromString(body)
                    records = sum(len(sl.log_records) for rl in logs.resource_logs for sl in rl.scope_logs)
                    with sink._changed:
                        sink.records += records
                        sink._changed.notify_all()
                    payload = ExportLogsServiceResponse().SerializeToString()
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

    def wait_for(self, timeout: float, *, spans: int = 0, scored: int = 0, records: int = 0) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.spans < spans or self.scored < scored or self.records < records:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(min(remaining, 0.1))
        return True

    def reset(self) -> None:
        with self._lock:
            self.spans = self.scored = self.records = 0

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
    """The recorded requests with trace ids made unique to this round (first two bytes)."""
    prefix = round_no.to_bytes(2, "big")
    out = []
    for req in requests:
        copy = ExportTraceServiceRequest()
        copy.CopyFrom(req)
        for rs in copy.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    span.trace_id = prefix + span.trace_id[2:]
        out.append(copy.SerializeToString())
    return out


def _post_all(port: int, payloads: list[bytes], timeout: float) -> tuple[int, float]:
    """POST every payload on one connection, retrying refusals as an OTLP exporter would (after the
    ``Retry-After`` given, at most 1 s: the SDK exporter's first back-off); returns (refusals, seconds waited)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    refused = 0
    waited = 0.0
    deadline = time.monotonic() + timeout
    try:
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
                retry_after = resp.getheader("Retry-After")
                delay = min(float(retry_after), 1.0) if retry_after and retry_after.isdigit() else 0.05
                time.sleep(delay)
                waited += delay
    finally:
        conn.close()
    return refused, waited


def _send(port: int, payloads: list[bytes], senders: int, timeout: float) -> tuple[int, float]:
    """``payloads`` dealt out to ``senders`` concurrent connections: (refusals, seconds senders waited on them)."""
    refused = [(0, 0.0)] * senders
    errors: list[BaseException] = []

    def one(k: int) -> None:
        try:
            refused[k] = _post_all(port, payloads[k::senders], timeout)
        except BaseException as exc:  # handed to the caller below
            errors.append(exc)

    pool = [threading.Thread(target=one, args=(k,), name=f"bench-sender-{k}") for k in range(senders)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]
    return sum(r for r, _ in refused), sum(w for _, w in refused)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by every thread of process ``pid`` (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # fields 14 and 15: utime, stime


def _child_pid(comm_prefix: str) -> int:
    """The pid of this process's child whose command name starts with ``comm_prefix`` (Linux ``/proc``)."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm, rest = (entry / "stat").read_text().split("(", 1)[1].rsplit(")", 1)
        except (OSError, ValueError):
            continue  # gone meanwhile, or not ours to read
        if comm.startswith(comm_prefix) and int(rest.split()[1]) == me:  # field 4: the parent's pid
            return int(entry.name)
    raise RuntimeError(f"no child process named {comm_prefix}*")


@contextmanager
def _service(sink: Sink) -> Iterator[tuple[int, int]]:
    """``otel-toolscore serve --forward`` forwarding to (and exporting to) ``sink``: (pid, HTTP port)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_toolscore", "serve", "--grpc-port", "0", "--http-port", "0",
         "--forward", "--export", "--export-endpoint", f"http://127.0.0.1:{sink.port}",
         "--export-protocol", "http/protobuf", "--quiet-period-ms", "100", "--metric-export-interval-ms", "60000",
         "--expected-order", ",".join(EXPECTATION.expected_tool_order or ()), "--log-level", "WARNING"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        yield proc.pid, int(info["http_port"])
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def _one_pass(sink: Sink, which: str, port: int, pid: int | None, payloads: list[bytes], runs: int,
              senders: int, timeout: float) -> dict[str, Any]:
    """Send ``payloads`` to ``which`` and wait until the sink has them all: wall and CPU seconds."""
    spans = runs * 7
    sink.reset()
    cpu0 = cpu_seconds(pid) if pid is not None else 0.0
    t0 = time.perf_counter()
    refused, waited = _send(port, payloads, senders, timeout)
    ok = sink.wait_for(timeout, spans=spans, scored=runs if which == "service" else 0)
    wall = time.perf_counter() - t0
    records_ok = True
    if which == "service":  # its evaluation records are part of its per-run work
        records_ok = sink.wait_for(RECORDS_SETTLE_S, records=runs)
    cpu = cpu_seconds(pid) - cpu0 if pid is not None else None
    return {"wall": wall, "cpu": cpu, "cpu_wall": time.perf_counter() - t0, "complete": ok,
            "records_complete": records_ok, "refused": refused, "retry_wait": waited, "records": sink.records,
            "scored": sink.scored}


def run(result: Result, *, quick: bool) -> None:
    from tests.tools.external import rotel

    runs = 140 if quick else 14_000
    rounds = 1 if quick else 3
    senders = 2 if quick else SENDERS
    timeout = 60.0 if quick else 300.0
    requests = record_load(runs)
    warmup = requests[: max(1, len(requests) // 10)]
    warmup_runs = sum(len(ss.spans) for req in warmup for rs in req.resource_spans for ss in rs.scope_spans) // 7
    total = runs * 7
    sink = Sink()
    passes: dict[str, list[dict[str, Any]]] = {k: [] for k in TARGETS}
    try:
        with tempfile.TemporaryDirectory() as tmp, _service(sink) as (service_pid, service_port), rotel(
            Path(tmp), f"http://127.0.0.1:{sink.port}", protocol="http"
        ) as (_grpc, rotel_http):
            where = {"direct": (sink.port, None), "rotel": (rotel_http, _child_pid("rotel")),
                     "service": (service_port, service_pid)}
            batch = 1
            for which in TARGETS:  # untimed: the first requests pay for imports, caches and connections
                _one_pass(sink, which, *where[which], _payloads(warmup, batch), warmup_runs, senders, timeout)
                batch += 1
                time.sleep(0.2)
            for r in range(rounds):
                for which in TARGETS if r % 2 == 0 else TARGETS[::-1]:
                    payloads = _payloads(requests, batch)
                    batch += 1
                    passes[which].append(_one_pass(sink, which, *where[which], payloads, runs, senders, timeout))
                    time.sleep(0.2)  # let the previous target's exports settle before the next one
    finally:
        sink.stop()
    figures: dict[str, dict[str, Any]] = {}
    for which in TARGETS:
        got = passes[which]
        wall = statistics.median(p["wall"] for p in got)
        row: dict[str, Any] = {
            "name": f"service load, {which}",
            "target": which,
            "runs": runs,
            "spans": total,
            "senders": senders,
            "rounds": rounds,
            "spans_per_s": round(total / wall),
            "complete": all(p["complete"] for p in got),
            "refused": sum(p["refused"] for p in got),
            "retry_wait_s": round(sum(p["retry_wait"] for p in got), 2),  # summed over senders and rounds
        }
        if which != "direct":
            cpu = statistics.median(p["cpu"] for p in got)
            row["cpu_us_per_span"] = round(cpu / total * 1e6, 1)
            row["cpu_cores"] = round(statistics.median(p["cpu"] / p["cpu_wall"] for p in got), 2)
        figures[which] = row
    service, rotel_row = figures["service"], figures["rotel"]
    got = passes["service"]
    service.update(
        runs_scored=min(p["scored"] for p in got),
        evaluation_records=min(p["records"] for p in got),
        records_complete=all(p["records_complete"] for p in got),
        rotel_spans_per_s=rotel_row["spans_per_s"],
        rotel_cpu_us_per_span=rotel_row["cpu_us_per_span"],
        ratio=round(statistics.median(r["wall"] / s["wall"] for r, s in zip(passes["rotel"], got)), 3),
        cpu_ratio_to_rotel=round(service["cpu_us_per_span"] / rotel_row["cpu_us_per_span"], 1)
        if rotel_row["cpu_us_per_span"] else None,
        target_spans_per_s=TARGET_SPANS_PER_S,
        verdict_spans_per_s="PASS" if service["spans_per_s"] >= TARGET_SPANS_PER_S else "MISS",
        target_cpu_us_per_span=TARGET_CPU_US_PER_SPAN,
        verdict_cpu="PASS" if service["cpu_us_per_span"] <= TARGET_CPU_US_PER_SPAN else "MISS",
    )
    for which in TARGETS:
        result.add(**figures[which])
    result.notes.append(
        f"service: `otel-toolscore serve --forward` and rotel each in their own process; {senders} OTLP/HTTP "
        "client connections, refusals retried after their Retry-After (at most 1 s; retry wait s: summed over "
        "senders and rounds); the service's time includes its quiet period (100 ms after a trace's last span) "
        "before scoring, rotel's its 100 ms batch timeout on the last batch; CPU per span from /proc/<pid>/stat "
        "(the service's read once its evaluation records have arrived); cores busy = CPU s / wall s over the "
        "same window."
    )
    if rotel_row.get("cpu_cores", 0) < 0.5:
        result.notes.append(f"service: rotel used {rotel_row.get('cpu_cores')} cores over its passes — not "
                            "CPU-bound at this load; its spans/s is the harness's, its CPU per span still holds")
