"""``serve --queue-dir``: accepted requests survive a SIGKILL.

Without it, a SIGKILL under load lost the traces of 5,636 of 16,900 accepted spans: their roots
were held in memory for scoring. With it, a request is on disk before it is acknowledged and
released once its spans are forwarded; the next start replays the rest. The main test runs the real
``serve --forward --queue-dir`` process under load from the SDK's OTLP exporter, SIGKILLs it,
restarts it, and counts at the capture backend the acknowledged spans that arrive; the same run
without ``--queue-dir`` shows what a crash loses. The others check the log itself: torn tails,
damaged records, the byte bound, the lock, the settings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from otel_toolscore.scripted import run_scripted_agent
from otel_toolscore.service import load_config
from otel_toolscore.service._spool import Spool, span_keys, wire_span_key
from otel_toolscore.service._wire import envelope
from otel_toolscore.settings import ConfigError
from tests.service.test_hostile_service import spans_request
from tests.support.serve_cli import CODE
from tests.tools.otlp import Capture, capture_server

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]


def wire_spans_of(request: Any) -> list[Any]:
    """The request's spans as the forwarding queue holds them (each span's encoded bytes)."""
    return [(envelope(rs.resource, rs.schema_url), envelope(ss.scope, ss.schema_url), sp.SerializeToString())
            for rs in request.resource_spans for ss in rs.scope_spans for sp in ss.spans]


# -- the log ------------------------------------------------------------------------------------------------
def test_what_is_not_released_is_replayed_after_a_reopen(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=8 << 20)
    requests = [spans_request(2, 3, seed=i) for i in range(5)]
    seqs = []
    for req in requests:
        seq, why = spool.append(req.SerializeToString())
        assert seq is not None and why is None
        spool.track(seq, span_keys(req))
        seqs.append(seq)
    # requests 0 and 1 forwarded whole, request 2 half
    for req in requests[:2]:
        spool.forwarded(wire_spans_of(req))
    spool.forwarded(wire_spans_of(requests[2])[:3])
    assert spool.held == 3
    spool.close()  # as a SIGKILL would leave it, minus nothing: appends are written before they return
    again = Spool(tmp_path, max_bytes=8 << 20)
    left = list(again.unreleased())
    assert [seq for seq, _ in left] == seqs[2:]
    assert [payload for _, payload in left] == [r.SerializeToString() for r in requests[2:]]
    seq, _ = again.append(requests[0].SerializeToString())
    assert seq == seqs[-1] + 1  # numbering goes on
    again.close()


def test_a_torn_tail_is_cut_and_a_damaged_record_counted(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=8 << 20)
    for i in range(3):
        spool.append(spans_request(1, 3, seed=i).SerializeToString())
    spool.close()
    (segment,) = tmp_path.glob("spans-*.log")
    data = segment.read_bytes()
    segment.write_bytes(data + data[-40:])  # half a record: a kill in the middle of an append
    again = Spool(tmp_path, max_bytes=8 << 20)
    assert len(list(again.unreleased())) == 3 and again.corrupt == 0
    assert segment.stat().st_size == len(data)  # cut back to the last whole record
    again.close()
    damaged = bytearray(segment.read_bytes())
    damaged[-5] ^= 0xFF  # a flipped byte in the last record's payload
    segment.write_bytes(bytes(damaged))
    third = Spool(tmp_path, max_bytes=8 << 20)
    assert len(list(third.unreleased())) == 2 and third.corrupt == 1
    third.close()


def test_the_byte_bound_refuses_and_counts(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=1 << 20)
    body = spans_request(40, 3).SerializeToString()
    taken = refused = 0
    for _ in range(200):
        seq, why = spool.append(body)
        if seq is None:
            assert why == "queue_full"
            refused += 1
        else:
            taken += 1
    assert refused and taken
    assert taken == ((1 << 20) - 23) // (len(body) + 16)  # the segment header, then whole records
    assert spool.bytes <= 1 << 20 and spool.refused["queue_full"] == refused
    spool.close()


def test_one_process_per_directory(tmp_path: Path) -> None:
    first = Spool(tmp_path, max_bytes=1 << 20)
    with pytest.raises(ConfigError, match="in use by another process"):
        Spool(tmp_path, max_bytes=1 << 20)
    first.close()
    Spool(tmp_path, max_bytes=1 << 20).close()


def test_wire_keys_match_request_keys() -> None:
    req = spans_request(3, 3, seed=9)
    assert [wire_span_key(w[2]) for w in wire_spans_of(req)] == span_keys(req)
    assert wire_span_key(b"\x0a\x10") is None and wire_span_key(b"") is None


def test_the_settings(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--queue-dir: the on-disk queue needs enrich-and-forward \(--forward\)"):
        load_config(environ={}, service_overrides={"queue_dir": str(tmp_path)})
    config = load_config(environ={"OTEL_TOOLSCORE_SERVICE_QUEUE_DIR": str(tmp_path),
                                  "OTEL_TOOLSCORE_SERVICE_QUEUE_MAX_BYTES": str(8 << 20),
                                  "OTEL_TOOLSCORE_SERVICE_QUEUE_FSYNC": "true",
                                  "OTEL_TOOLSCORE_SERVICE_FORWARD": "true"})
    assert (config.service.queue_dir, config.service.queue_max_bytes, config.service.queue_fsync) == (
        str(tmp_path), 8 << 20, True)
    assert load_config(environ={}).service.queue_dir is None  # off by default


# -- the real process, SIGKILLed under load --------------------------------------------------------------------
class Acknowledged(SpanExporter):
    """The SDK's OTLP/HTTP exporter, remembering the spans the service acknowledged."""

    def __init__(self, endpoint: str) -> None:
        self.inner = OTLPSpanExporter(endpoint=endpoint, timeout=2)
        self.ids: set[str] = set()
        self.lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            with self.lock:
                self.ids.update(f"{s.context.span_id:016x}" for s in spans if s.context is not None)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()


def _serve(backend: str, *extra: str) -> tuple[subprocess.Popen[str], int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update(NO_PROXY="127.0.0.1", no_proxy="127.0.0.1", OTEL_TOOLSCORE_EXPECTED_TOOL="get_weather")
    proc = subprocess.Popen(
        [sys.executable, "-c", CODE, "serve", "--forward", "--export-endpoint", backend, "--grpc-port", "0",
         "--http-port", "0", "--quiet-period-ms", "1500", "--metric-export-interval-ms", "600000", *extra],
        env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line:
        proc.wait(timeout=30)
        raise AssertionError(f"serve did not start: {proc.stderr.read() if proc.stderr else ''}")
    return proc, int(json.loads(line)["http_port"])


def _captured(capture: Capture) -> set[str]:
    with capture.lock:
        requests = list(capture.requests["/v1/traces"])
    return {sp.span_id.hex() for r in requests for rs in r.resource_spans for ss in rs.scope_spans for sp in ss.spans}


def _load_until_killed(port: int, proc: subprocess.Popen[str], acked_floor: int,
                       forwarded: Callable[[], bool] = lambda: True) -> set[str]:
    """Agent traces from the SDK exporter until ``acked_floor`` spans are acknowledged and
    ``forwarded()`` says the service has forwarded some already (a service that takes requests
    faster than its quiet period passes would otherwise be killed before it released any), then SIGKILL."""
    exporter = Acknowledged(f"http://127.0.0.1:{port}/v1/traces")
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50, max_export_batch_size=256))
    tracer = provider.get_tracer("load")
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            run_scripted_agent(tracer, "weather_agent", "Weather in Paris?", ["get_weather"])

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while (len(exporter.ids) < acked_floor or not forwarded()) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # under load: requests in flight, traces buffered, batches being forwarded
    proc.wait(timeout=30)
    stop.set()
    thread.join(timeout=30)
    provider.shutdown()  # what it still sends fails: the service is gone (not acknowledged, not counted)
    with exporter.lock:
        return set(exporter.ids)


ACKED_FLOOR = 8000


def _crash_and_restart(tmp_path: Path, *queue: str) -> dict[str, int]:
    with capture_server() as (backend, capture):
        proc, port = _serve(backend, *queue)
        try:
            acked = _load_until_killed(port, proc, acked_floor=ACKED_FLOOR, forwarded=lambda: bool(_captured(capture)))
        finally:
            if proc.poll() is None:
                proc.kill()
        before = _captured(capture) & acked
        again, _ = _serve(backend, *queue)
        try:
            # with the queue, until every acknowledged span is there; without, past a quiet period and a batch
            capture.wait_for(lambda: acked <= _captured(capture), timeout=60 if queue else 5)
            time.sleep(0.5)
        finally:
            again.send_signal(signal.SIGTERM)
            again.communicate(timeout=60)
        recovered = _captured(capture) & acked
    return {"acknowledged": len(acked), "at the backend before the restart": len(before),
            "at the backend after the restart": len(recovered), "lost": len(acked - recovered)}


def test_sigkill_under_load_loses_no_acknowledged_span_with_queue_dir(tmp_path: Path) -> None:
    queue = tmp_path / "queue"
    with_queue = _crash_and_restart(tmp_path, "--queue-dir", str(queue))
    without = _crash_and_restart(tmp_path)
    print(f"\nSIGKILL under load, --queue-dir: {with_queue}\nSIGKILL under load, no queue: {without}")
    assert with_queue["acknowledged"] >= ACKED_FLOOR
    # Every span the service acknowledged reaches the backend after the restart (some twice: at least once).
    assert with_queue["lost"] == 0, with_queue
    assert with_queue["at the backend before the restart"] < with_queue["acknowledged"]  # the kill did hit something
    assert with_queue["at the backend before the restart"] > 0  # and requests had been released before it
    # Without the queue the buffered traces die with the process (what the README says).
    assert without["lost"] > 0, without


def test_a_full_queue_refuses_with_a_retryable_answer(tmp_path: Path) -> None:
    """The backend never answers within the test: requests pile up on disk until the byte bound."""
    import socket

    with socket.socket() as silent:  # a backend that accepts connections and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        backend = f"http://127.0.0.1:{silent.getsockname()[1]}"
        proc, port = _serve(backend, "--queue-dir", str(tmp_path / "q"), "--queue-max-bytes", str(1 << 20))
        try:
            body = spans_request(50, 3).SerializeToString()
            statuses: dict[int, int] = {}
            retry_after = None
            for i in range(120):
                body = spans_request(50, 3, seed=i).SerializeToString()
                req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces", data=body, method="POST",
                                             headers={"Content-Type": "application/x-protobuf"})
                try:
                    with urllib.request.urlopen(req, timeout=10) as resp:
                        statuses[resp.status] = statuses.get(resp.status, 0) + 1
                except urllib.error.HTTPError as err:
                    statuses[err.code] = statuses.get(err.code, 0) + 1
                    retry_after = err.headers.get("Retry-After")
            on_disk = sum(p.stat().st_size for p in (tmp_path / "q").glob("spans-*.log"))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    print(f"\n120 requests of {len(body):,} bytes into a 1 MiB queue: {statuses}; {on_disk:,} bytes on disk")
    assert statuses.get(200, 0) > 0 and statuses.get(429, 0) > 0 and retry_after is not None
    assert on_disk <= 1 << 20


def test_the_readme_says_what_a_crash_loses_with_and_without_queue_dir() -> None:
    readme = (ROOT / "README.md").read_text()
    service = (ROOT / "docs" / "service.md").read_text()
    for text in (readme, service):
        assert "--queue-dir" in text and "SIGKILL" in text
    assert "OTEL_TOOLSCORE_SERVICE_QUEUE_DIR" in readme and "toolscore.service.queue.bytes" in readme
    assert "reason=queue_full" in service and "at least once" in service.lower()



def test_a_file_that_is_not_a_segment_is_left_alone(tmp_path: Path) -> None:
    stranger = tmp_path / "spans-0000000000000001.log"
    stranger.write_bytes(b"someone else's file")
    spool = Spool(tmp_path, max_bytes=1 << 20)
    assert list(spool.unreleased()) == [] and stranger.read_bytes() == b"someone else's file"
    spool.close()
