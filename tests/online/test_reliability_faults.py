"""Faults around the processor: the agent's spans still flow, nothing blocks the span's thread, and the
scores still leave as metrics.

* the downstream exporter raises, hangs (blocks forever) or is slow;
* OTLP exporters (HTTP and gRPC, spans/logs/metrics) point at a closed 127.0.0.1 port, or at a port
  that accepts connections and never answers;
* the process exits with work still queued (no explicit shutdown): the atexit drain hands every span,
  event and metric to the exporters before the providers shut down.

Judge faults (server down, slow, 5xx, 429, invalid JSON) are in ``test_judge_online.py``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from otel_toolscore import Expectation, ToolScoreSpanProcessor
from otel_toolscore.scripted import run_scripted_agent
from tests.support.telemetry import counter_total, evaluation_events

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
EXPECT = [Expectation(agent_name="weather_agent", expected_tool="get_weather")]
#: A span end that waits on an exporter would take at least this long; runs take milliseconds.
MAX_RUN_S = 1.0


class RaisingExporter(SpanExporter):
    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += 1
        raise RuntimeError("exporter exploded")

    def shutdown(self) -> None:
        return None


class HangingExporter(SpanExporter):
    """Blocks in ``export`` until released (a collector connection that never answers)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.release.wait()
        self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


class SlowExporter(SpanExporter):
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        time.sleep(self.delay)
        self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


class Rig:
    def __init__(self, downstream: Any, *, log_processor: Any = None, metric_readers: Sequence[Any] = ()) -> None:
        self.reader = InMemoryMetricReader()
        self.logs = InMemoryLogRecordExporter()
        self.lp = LoggerProvider()
        self.lp.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        if log_processor is not None:
            self.lp.add_log_record_processor(log_processor)
        self.mp = MeterProvider(metric_readers=[self.reader, *metric_readers])
        self.processor = ToolScoreSpanProcessor(downstream, expectations=EXPECT, meter_provider=self.mp,
                                                logger_provider=self.lp)
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("faults")

    def runs(self, n: int) -> float:
        """Run ``n`` agent runs; the longest single run in seconds."""
        worst = 0.0
        for i in range(n):
            t0 = time.perf_counter()
            run_scripted_agent(self.tracer, "weather_agent", f"q{i}", ["get_weather"] if i % 2 else ["search"])
            worst = max(worst, time.perf_counter() - t0)
        return worst

    def counter(self, name: str, **attrs: Any) -> int:
        return counter_total(self.reader, name, **attrs)

    def evaluation_events(self) -> int:
        return len(evaluation_events(self.logs.get_finished_logs()))


def _drain(rig: Rig, n: int, timeout: float = 10.0) -> None:
    """Wait until the processor has counted all ``n`` runs and written their events (its own queues,
    not the downstream's). Runs are counted when scored; events follow on the emitter's thread."""
    deadline = time.monotonic() + timeout
    while (rig.counter("toolscore.runs") < n or rig.evaluation_events() < n) and time.monotonic() < deadline:
        time.sleep(0.02)


def test_raising_exporter() -> None:
    exporter = RaisingExporter()
    rig = Rig(BatchSpanProcessor(exporter, schedule_delay_millis=10))
    worst = rig.runs(100)
    rig.processor.force_flush(5_000)
    assert worst < MAX_RUN_S
    assert exporter.calls > 0
    assert rig.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 100
    assert rig.evaluation_events() == 100
    rig.provider.shutdown()


def test_hanging_exporter_never_blocks_span_end() -> None:
    exporter = HangingExporter()
    bsp = BatchSpanProcessor(exporter, max_queue_size=128, max_export_batch_size=32, schedule_delay_millis=5)
    rig = Rig(bsp)
    try:
        worst = rig.runs(200)  # 600 spans, far more than the queue: the SDK drops, nothing waits
        assert exporter.entered.wait(5)
        assert worst < MAX_RUN_S
        _drain(rig, 200)
        assert rig.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 200  # the scores still leave
        assert rig.evaluation_events() == 200
    finally:
        exporter.release.set()
    rig.provider.shutdown()


def test_force_flush_respects_its_timeout_when_the_exporter_hangs() -> None:
    """``force_flush(timeout)`` (also what the atexit drain calls) returns within its timeout, reporting
    failure, even when the downstream exporter never returns: a hung collector must not hang the
    application's flush or its exit."""
    exporter = HangingExporter()
    rig = Rig(BatchSpanProcessor(exporter, schedule_delay_millis=5))
    result: list[bool] = []
    try:
        rig.runs(20)
        assert exporter.entered.wait(5)
        flusher = threading.Thread(target=lambda: result.append(rig.processor.force_flush(300)), daemon=True)
        flusher.start()
        flusher.join(5.0)
        assert not flusher.is_alive(), "force_flush(300) still blocked after 5 s"
        assert result == [False]
    finally:
        exporter.release.set()
    rig.provider.shutdown()


def test_slow_exporter_does_not_slow_the_agent() -> None:
    exporter = SlowExporter(0.05)
    rig = Rig(BatchSpanProcessor(exporter, max_export_batch_size=16, schedule_delay_millis=5))
    worst = rig.runs(150)
    assert worst < MAX_RUN_S
    assert rig.processor.force_flush(30_000)
    assert exporter.exported == 150 * 3
    assert rig.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 150
    rig.provider.shutdown()


# -- unreachable collector ------------------------------------------------------------------------------
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections (kernel backlog) and never reads or answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    try:
        yield int(s.getsockname()[1])
    finally:
        s.close()


def _otlp_rig(protocol: str, port: int) -> Rig:
    if protocol == "http":
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        base = f"http://127.0.0.1:{port}"
        spans: Any = OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=1)
        logs: Any = OTLPLogExporter(endpoint=f"{base}/v1/logs", timeout=1)
        metrics: Any = OTLPMetricExporter(endpoint=f"{base}/v1/metrics", timeout=1)
    else:
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GLog
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GMetric
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GSpan

        endpoint = f"127.0.0.1:{port}"
        spans = GSpan(endpoint=endpoint, insecure=True, timeout=1)
        logs = GLog(endpoint=endpoint, insecure=True, timeout=1)
        metrics = GMetric(endpoint=endpoint, insecure=True, timeout=1)
    return Rig(
        BatchSpanProcessor(spans, schedule_delay_millis=50, export_timeout_millis=1_000),
        log_processor=BatchLogRecordProcessor(logs, schedule_delay_millis=50, export_timeout_millis=1_000),
        metric_readers=[PeriodicExportingMetricReader(metrics, export_interval_millis=100, export_timeout_millis=1_000)],
    )


def _unreachable(rig: Rig) -> None:
    worst = rig.runs(150)
    assert worst < MAX_RUN_S
    _drain(rig, 150)
    assert rig.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 150
    assert rig.evaluation_events() == 150
    t0 = time.monotonic()
    rig.processor.force_flush(2_000)  # may fail (nothing reachable) but must respect its timeout
    assert time.monotonic() - t0 < 6.0
    t0 = time.monotonic()
    rig.provider.shutdown()
    rig.lp.shutdown()
    rig.mp.shutdown(timeout_millis=3_000)
    assert time.monotonic() - t0 < 60.0


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_collector_port_closed(protocol: str) -> None:
    _unreachable(_otlp_rig(protocol, _closed_port()))


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_collector_accepts_but_never_answers(protocol: str, silent_port: int) -> None:
    _unreachable(_otlp_rig(protocol, silent_port))


# -- process exit with queued work ------------------------------------------------------------------------
_CHILD = textwrap.dedent(
    """
    import json, sys
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, PeriodicExportingMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from otel_toolscore import Expectation, ToolScoreSpanProcessor
    from otel_toolscore.scripted import run_scripted_agent

    out = open(sys.argv[1], "a", buffering=1)
    N = int(sys.argv[2])

    class Spans(SpanExporter):
        def export(self, spans):
            scored = sum(1 for s in spans if "toolscore.code.score" in (s.attributes or {}))
            out.write(json.dumps({"spans": len(spans), "scored_roots": scored}) + "\\n")
            return SpanExportResult.SUCCESS
        def shutdown(self):
            out.write(json.dumps({"shutdown": "spans"}) + "\\n")

    class Logs(LogRecordExporter):
        def export(self, batch):
            n = sum(1 for r in batch if r.log_record.event_name == "gen_ai.evaluation.result")
            out.write(json.dumps({"events": n}) + "\\n")
            return LogRecordExportResult.SUCCESS
        def force_flush(self, timeout_millis=30000):
            return True
        def shutdown(self):
            pass

    class Metrics(MetricExporter):
        def __init__(self):
            super().__init__(preferred_temporality={}, preferred_aggregation={})
        def export(self, data, timeout_millis=10000, **kw):
            for rm in data.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        if m.name == "toolscore.runs":
                            v = sum(p.value for p in m.data.data_points)
                            out.write(json.dumps({"runs_metric": v}) + "\\n")
            return MetricExportResult.SUCCESS
        def force_flush(self, timeout_millis=10000):
            return True
        def shutdown(self, timeout_millis=30000, **kw):
            pass

    lp = LoggerProvider()
    lp.add_log_record_processor(BatchLogRecordProcessor(Logs(), schedule_delay_millis=60000))
    mp = MeterProvider(metric_readers=[PeriodicExportingMetricReader(Metrics(), export_interval_millis=60000)])
    processor = ToolScoreSpanProcessor(
        BatchSpanProcessor(Spans(), schedule_delay_millis=60000, max_queue_size=100000),
        expectations=[Expectation(expected_tool="get_weather")],
        meter_provider=mp,
        logger_provider=lp,
    )
    tp = TracerProvider()
    tp.add_span_processor(processor)
    tracer = tp.get_tracer("child")
    for i in range(N):
        run_scripted_agent(tracer, "weather_agent", "q", ["get_weather"])
    out.write(json.dumps({"done": N}) + "\\n")
    # No shutdown, no flush: the process just ends with everything still queued.
    """
)


def test_process_exit_with_queued_work_loses_nothing(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    out = tmp_path / "out.jsonl"
    n = 300
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(script), str(out), str(n)], cwd=ROOT, capture_output=True, text=True,
                          timeout=90, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert time.monotonic() - t0 < 60
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert {"done": n} in lines
    assert sum(x.get("spans", 0) for x in lines) == n * 3  # every span exported at exit
    assert sum(x.get("scored_roots", 0) for x in lines) == n  # with its score
    assert sum(x.get("events", 0) for x in lines) == n  # every evaluation event
    runs = [x["runs_metric"] for x in lines if "runs_metric" in x]
    assert runs and runs[-1] == n  # and the last metric export counts every run
