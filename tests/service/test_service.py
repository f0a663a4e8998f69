"""`otel-toolscore serve` with real OTLP exporters from the SDK, on 127.0.0.1 ephemeral ports."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore.expectations import Expectation
from otel_toolscore.online._log_processor import ToolScoreLogRecordProcessor
from otel_toolscore.online.processor import ScoredRun, ToolScoreSpanProcessor
from otel_toolscore.scripted import run_scripted_agent
from otel_toolscore.service import ScoringService, load_config
from otel_toolscore.settings import ConfigError
from tests.support.telemetry import counter_total, evaluation_events
from tests.tools.otlp import capture_server, wait_port

CLI = [sys.executable, "-c", "import sys; from otel_toolscore.cli import main; sys.exit(main())"]
RULES = [
    Expectation(name="weather", agent_name="weather_agent", expected_tool="get_weather"),
    Expectation(name="refund", agent_name="billing_agent", expected_tool_order=("auth", "refund")),
]
# (agent, query, tools called)
SCRIPT: list[tuple[str, str, list[str]]] = [
    ("weather_agent", "What's the weather in Paris?", ["get_weather"]),
    ("weather_agent", "Weather in Oslo", ["search_web"]),
    ("weather_agent", "Weather in Rome and the time", ["get_weather", "get_time"]),
    ("billing_agent", "Refund my last order", ["auth", "fetch_order", "refund"]),
    ("billing_agent", "Refund order 42", ["refund", "auth"]),
    ("support_agent", "Hello!", []),
]


@dataclass
class Running:
    service: ScoringService
    scored: list[ScoredRun] = field(default_factory=list)
    metrics: InMemoryMetricReader | None = None
    logs: InMemoryLogRecordExporter | None = None

    def wait_scored(self, n: int, timeout: float = 15.0) -> list[ScoredRun]:
        deadline = time.monotonic() + timeout
        while len(self.scored) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.scored) >= n, f"{len(self.scored)} runs scored, expected {n}"
        return list(self.scored)

    def by_trace(self) -> dict[str, tuple[Any, ...]]:
        return {format(s.ref.trace_id, "032x"): summary(s) for s in self.scored}

    def counter(self, name: str, **attrs: Any) -> int:
        assert self.metrics is not None
        self.service.force_flush(5_000)
        return counter_total(self.metrics, name, **attrs)

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.service.http_port}"

    @property
    def grpc_target(self) -> str:
        return f"127.0.0.1:{self.service.grpc_port}"


def summary(s: ScoredRun) -> tuple[Any, ...]:
    return (
        s.run.agent_name,
        tuple(c.name for c in s.run.tool_calls),
        s.outcome,
        None if s.result is None else s.result.score,
        None if s.result is None else s.result.label,
    )


def start_service(
    *, forward: bool = False, export_endpoint: str | None = None, **service: Any
) -> Running:
    service.setdefault("quiet_period_ms", 100)
    overrides: dict[str, Any] = {"grpc_port": 0, "http_port": 0, "forward": forward, **service}
    if export_endpoint is not None:
        overrides.update(export_endpoint=export_endpoint, export_protocol="http/protobuf", metric_export_interval_ms=200)
        config = load_config(environ={}, service_overrides=overrides)
        running = Running(service=None)  # type: ignore[arg-type]
        running.service = ScoringService(config, expectations=RULES, on_scored=running.scored.append)
    else:
        overrides["export"] = False
        config = load_config(environ={}, service_overrides=overrides)
        reader = InMemoryMetricReader()
        logs = InMemoryLogRecordExporter()
        lp = LoggerProvider()
        lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
        running = Running(service=None, metrics=reader, logs=logs)  # type: ignore[arg-type]
        running.service = ScoringService(
            config,
            expectations=RULES,
            meter_provider=MeterProvider(metric_readers=[reader]),
            logger_provider=lp,
            on_scored=running.scored.append,
        )
    running.service.start()
    return running


@pytest.fixture
def svc() -> Iterator[Running]:
    running = start_service()
    yield running
    running.service.shutdown(timeout_s=5)


def live_pipeline(exporter: Any, log_exporter: Any = None) -> tuple[TracerProvider, LoggerProvider | None, list[ScoredRun]]:
    """An agent process: the in-process processor scores live and forwards every span to ``exporter``."""
    live: list[ScoredRun] = []
    lp_local = LoggerProvider()
    processor = ToolScoreSpanProcessor(
        BatchSpanProcessor(exporter, schedule_delay_millis=50),
        expectations=RULES,
        meter_provider=MeterProvider(),
        logger_provider=lp_local,
        on_scored=live.append,
    )
    tp = TracerProvider()
    tp.add_span_processor(processor)
    lp: LoggerProvider | None = None
    if log_exporter is not None:
        lp = LoggerProvider()
        lp.add_log_record_processor(ToolScoreLogRecordProcessor(processor))
        lp.add_log_record_processor(BatchLogRecordProcessor(log_exporter, schedule_delay_millis=50))
    return tp, lp, live


def run_script(tp: TracerProvider) -> None:
    tracer = tp.get_tracer("test.agent")
    for agent, query, tools in SCRIPT:
        run_scripted_agent(tracer, agent, query, tools)


# -- scoring parity: the service scores what the in-process processor scores ------------------------------
@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_service_scores_like_the_in_process_processor(svc: Running, transport: str) -> None:
    exporter = (
        HttpSpanExporter(endpoint=f"{svc.http}/v1/traces")
        if transport == "http"
        else GrpcSpanExporter(endpoint=svc.grpc_target, insecure=True)
    )
    tp, _, live = live_pipeline(exporter)
    run_script(tp)
    tp.shutdown()
    served = svc.wait_scored(len(SCRIPT))
    assert len(live) == len(SCRIPT) == len(served)
    assert svc.by_trace() == {format(s.ref.trace_id, "032x"): summary(s) for s in live}
    scores = sorted((a, t, sc) for a, t, _, sc, _ in svc.by_trace().values())
    assert ("weather_agent", ("get_weather",), 1.0) in scores
    assert ("weather_agent", ("search_web",), 0.0) in scores
    assert ("billing_agent", ("refund", "auth"), 0.0) in scores
    assert svc.counter("toolscore.service.received", **{"toolscore.signal": "spans"}) == sum(
        2 + len(t) for _, _, t in SCRIPT
    )
    assert svc.counter("toolscore.service.traces", **{"toolscore.outcome": "complete"}) == len(SCRIPT)
    assert svc.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 5
    assert svc.counter("toolscore.runs", **{"toolscore.outcome": "no_expectation"}) == 1
    assert svc.logs is not None
    events = evaluation_events(svc.logs.get_finished_logs())
    assert len(events) == 5
    assert {format(e.trace_id, "032x") for e in events} <= set(svc.by_trace())


def otlp_json(spans: list[ReadableSpan]) -> bytes:
    """OTLP/JSON as OTLP/HTTP senders write it: camelCase, hex ids, enums as numbers."""
    doc = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)

    def hexify(node: Any) -> Any:
        import base64

        if isinstance(node, dict):
            return {
                k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str) else hexify(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [hexify(v) for v in node]
        return node

    return json.dumps(hexify(doc)).encode()


def recorded_spans() -> list[ReadableSpan]:
    mem = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(mem))
    run_script(tp)
    tp.shutdown()
    return list(mem.get_finished_spans())


def post(url: str, body: bytes, content_type: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": content_type, **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@pytest.mark.parametrize("gzipped", [False, True])
def test_otlp_json_over_http(svc: Running, gzipped: bool) -> None:
    spans = recorded_spans()
    body = otlp_json(spans)
    headers = {"Content-Encoding": "gzip"} if gzipped else {}
    status, hdrs, answer = post(f"{svc.http}/v1/traces", gzip.compress(body) if gzipped else body, "application/json", **headers)
    assert status == 200, answer
    assert hdrs["Content-Type"] == "application/json"
    assert json.loads(answer) == {}
    served = svc.wait_scored(len(SCRIPT))
    assert {format(s.ref.trace_id, "032x") for s in served} == {format(s.context.trace_id, "032x") for s in spans if s.parent is None}
    assert sorted(summary(s)[3] for s in served if s.result is not None) == [0.0, 0.0, 1.0, 1.0, 1.0]


def test_bad_bodies_are_answered_and_counted(svc: Running) -> None:
    status, _, _ = post(f"{svc.http}/v1/traces", b"\xff\x00garbage", "application/x-protobuf")
    assert status == 400
    status, _, _ = post(f"{svc.http}/v1/traces", b"{not json", "application/json")
    assert status == 400
    status, _, _ = post(f"{svc.http}/v1/traces", b"x", "text/plain")
    assert status == 415
    status, _, _ = post(f"{svc.http}/v1/metrics", b"", "application/x-protobuf")
    assert status == 404
    assert svc.counter("toolscore.service.refused", **{"toolscore.reason": "invalid"}) == 3  # the 415 too


def test_log_records_join_the_runs(svc: Running) -> None:
    """Tool calls that only an event carries (GenAI <= 1.36 `gen_ai.choice`) reach the service's runs too."""
    tp, lp, live = live_pipeline(
        HttpSpanExporter(endpoint=f"{svc.http}/v1/traces"), HttpLogExporter(endpoint=f"{svc.http}/v1/logs")
    )
    assert lp is not None
    tracer = tp.get_tracer("test.agent")
    logger = lp.get_logger("test.agent")
    from opentelemetry.trace import SpanKind

    with tracer.start_as_current_span(
        "invoke_agent weather_agent",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"},
    ):
        with tracer.start_as_current_span("chat scripted", kind=SpanKind.CLIENT) as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            logger.emit(
                event_name="gen_ai.choice",
                body={
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
                        ],
                    },
                },
                attributes={"gen_ai.system": "openai"},
            )
    lp.force_flush()  # the events reach the service before the spans do
    tp.shutdown()
    lp.shutdown()
    served = svc.wait_scored(1)
    assert len(live) == 1
    assert svc.by_trace() == {format(s.ref.trace_id, "032x"): summary(s) for s in live}
    assert summary(served[0])[1] == ("get_weather",)
    assert svc.counter("toolscore.service.received", **{"toolscore.signal": "logs"}) == 1


def test_grpc_logs_are_accepted(svc: Running) -> None:
    exporter = GrpcLogExporter(endpoint=svc.grpc_target, insecure=True)
    lp = LoggerProvider()
    lp.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    lp.get_logger("t").emit(event_name="app.started", body="no trace: not buffered")
    lp.shutdown()
    assert svc.counter("toolscore.service.received", **{"toolscore.signal": "logs"}) == 1
    assert svc.service.buffer.traces == 0


# -- completion: quiet period, missing parents, hard timeout, late spans ------------------------------------
def _send(svc: Running, spans: list[ReadableSpan]) -> None:
    status, _, answer = post(f"{svc.http}/v1/traces", encode_spans(spans).SerializeToString(), "application/x-protobuf")
    assert status == 200, answer


def test_a_trace_waits_for_its_root() -> None:
    running = start_service(quiet_period_ms=50, hard_timeout_ms=30_000)
    try:
        spans = recorded_spans()
        first = [s for s in spans if s.context.trace_id == spans[0].context.trace_id]
        roots = [s for s in first if s.parent is None]
        assert len(roots) == 1
        _send(running, [s for s in first if s.parent is not None])
        time.sleep(0.4)
        assert running.scored == []  # the root has not arrived: not complete however quiet
        _send(running, roots)
        (run,) = running.wait_scored(1)
        assert summary(run)[:2] == ("weather_agent", ("get_weather",))
        assert summary(run)[3] == 1.0
    finally:
        running.service.shutdown(timeout_s=5)


def _with_parent(span: ReadableSpan, parent_span_id: int) -> ReadableSpan:
    from opentelemetry.trace import SpanContext

    assert span.context is not None
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=SpanContext(span.context.trace_id, parent_span_id, is_remote=False),
        resource=span.resource,
        attributes=span.attributes,
        kind=span.kind,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def test_quiet_period_and_hard_timeout() -> None:
    running = start_service(quiet_period_ms=200, hard_timeout_ms=1000)
    try:
        tp = TracerProvider()
        mem = InMemorySpanExporter()
        tp.add_span_processor(SimpleSpanProcessor(mem))
        tracer = tp.get_tracer("t")
        run_scripted_agent(tracer, "weather_agent", "q", ["get_weather"])
        run_scripted_agent(tracer, "weather_agent", "q", ["get_weather"])
        tp.shutdown()
        spans = list(mem.get_finished_spans())
        first, second = sorted({s.context.trace_id for s in spans})
        complete = [s for s in spans if s.context.trace_id == first]
        # The second trace with a tool span whose parent never comes (it names an unknown span).
        orphaned = [
            _with_parent(s, 0xDEAD) if s.name.startswith("execute_tool") else s
            for s in spans
            if s.context.trace_id == second
        ]
        t0 = time.monotonic()
        _send(running, complete + orphaned)
        running.wait_scored(1, timeout=5)
        assert time.monotonic() - t0 >= 0.2  # the quiet period
        assert running.scored[0].ref.trace_id == first
        running.wait_scored(2, timeout=5)  # the hard timeout takes the other trace as it is
        assert time.monotonic() - t0 >= 1.0
        assert running.counter("toolscore.service.traces", **{"toolscore.outcome": "timeout"}) == 1
        assert running.counter("toolscore.service.traces", **{"toolscore.outcome": "complete"}) == 1
        # A span of a trace already scored is late: counted, not scored again.
        _send(running, [s for s in spans if s.context.trace_id == first][:1])
        assert running.counter("toolscore.dropped", **{"toolscore.reason": "late_span"}) == 1
        time.sleep(0.4)
        assert len(running.scored) == 2
    finally:
        running.service.shutdown(timeout_s=5)


# -- overload: retryable refusals, bounded buffer, every refusal counted -----------------------------------
def test_overload_is_refused_with_retry_information() -> None:
    running = start_service(quiet_period_ms=60_000, hard_timeout_ms=120_000, max_pending_spans=8, retry_after_ms=3000)
    try:
        spans = recorded_spans()
        by_trace: dict[int, list[ReadableSpan]] = {}
        for s in spans:
            by_trace.setdefault(s.context.trace_id, []).append(s)
        batches = list(by_trace.values())
        assert [len(b) for b in batches] == [3, 3, 4, 5, 4, 2]
        _send(running, batches[0] + batches[1])  # 6 spans: under the limit of 8
        assert running.service.buffer.spans == 6
        status, headers, _ = post(
            f"{running.http}/v1/traces", encode_spans(batches[2]).SerializeToString(), "application/x-protobuf"
        )
        assert status == 429
        assert headers["Retry-After"] == "3"
        # gRPC: RESOURCE_EXHAUSTED with a RetryInfo (what makes it retryable in OTLP).
        channel = grpc.insecure_channel(running.grpc_target)
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.Export(encode_spans(batches[2]), timeout=5)
        err = info.value
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        retry = error_details_pb2.RetryInfo()
        retry.ParseFromString(dict(err.trailing_metadata())["google.rpc.retryinfo-bin"])
        assert retry.retry_delay.seconds == 3
        channel.close()
        assert running.service.buffer.spans == 6  # nothing of the refused requests was kept
        refused = running.counter("toolscore.service.refused", **{"toolscore.reason": "overload"})
        assert refused == 2 * len(batches[2])
        # Saturated (8 of 8): not ready, still healthy.
        _send(running, batches[3][:2])
        with urllib.request.urlopen(f"{running.http}/healthz", timeout=5) as resp:
            assert resp.status == 200
        with pytest.raises(urllib.error.HTTPError) as ready:
            urllib.request.urlopen(f"{running.http}/readyz", timeout=5)
        assert ready.value.code == 503
        assert json.loads(ready.value.read())["pending_spans"] == 8
        # Once scored (here: drained), the memory is released.
        running.service.score_due(everything=True)
        assert running.service.buffer.spans == 0 and running.service.buffer.bytes == 0
        with urllib.request.urlopen(f"{running.http}/readyz", timeout=5) as resp:
            assert resp.status == 200
    finally:
        running.service.shutdown(timeout_s=5)


def test_the_sdk_exporter_retries_after_overload() -> None:
    """A real OTLP/gRPC exporter that gets RESOURCE_EXHAUSTED keeps the batch and succeeds later."""
    running = start_service(quiet_period_ms=50, max_pending_spans=4, retry_after_ms=1000)
    try:
        spans = recorded_spans()
        first = [s for s in spans if s.context.trace_id == spans[0].context.trace_id]
        _send(running, first)  # the buffer is at its limit until this trace is scored (50 ms)
        exporter = GrpcSpanExporter(endpoint=running.grpc_target, insecure=True, timeout=20)
        result = exporter.export([s for s in spans if s not in first])
        assert result.name == "SUCCESS"
        running.wait_scored(len(SCRIPT))
    finally:
        running.service.shutdown(timeout_s=5)


def test_draining_refuses_with_unavailable_and_scores_what_it_holds() -> None:
    running = start_service(quiet_period_ms=60_000)
    spans = recorded_spans()
    _send(running, spans)
    assert running.scored == []
    stopper = threading.Thread(target=running.service.shutdown, kwargs={"timeout_s": 5})
    running.service._draining = True  # the first thing shutdown() does; observe it before the receivers close
    status, headers, _ = post(f"{running.http}/v1/traces", encode_spans(spans[:1]).SerializeToString(), "application/x-protobuf")
    assert status == 503 and headers["Retry-After"]
    stopper.start()
    stopper.join(10)
    assert sorted(summary(s)[3] for s in running.scored if s.result is not None) == [0.0, 0.0, 1.0, 1.0, 1.0]
    assert len(running.scored) == len(SCRIPT)


# -- exports over OTLP and enrich-and-forward ---------------------------------------------------------------
def test_exports_scores_metrics_and_forwarded_spans_over_otlp() -> None:
    with capture_server() as (endpoint, backend):
        running = start_service(forward=True, export_endpoint=endpoint)
        try:
            tp, _, _ = live_pipeline(GrpcSpanExporter(endpoint=running.grpc_target, insecure=True))
            run_script(tp)
            tp.shutdown()
            running.wait_scored(len(SCRIPT))
        finally:
            running.service.shutdown(timeout_s=10)
        received = sum(2 + len(t) for _, _, t in SCRIPT)
        spans = backend.spans()
        assert len(spans) == received  # every span forwarded once
        roots = [s for s in spans if s["name"].startswith("invoke_agent")]
        scored_roots = [s for s in roots if "toolscore.code.score" in s["attributes"]]
        assert len(scored_roots) == 5
        assert {r["attributes"]["toolscore.code.label"] for r in scored_roots} == {"pass", "fail"}
        assert any(k.startswith("annotations.") for k in scored_roots[0]["attributes"])
        events = [e for e in backend.logs() if e["event_name"] == "gen_ai.evaluation.result"]
        assert len(events) == 5
        assert {e["trace_id"] for e in events} == {r["trace_id"] for r in scored_roots}
        assert all(e["attributes"]["gen_ai.evaluation.name"] == "tool_call_accuracy" for e in events)
        hist = backend.metric_points("gen_ai.evaluation.score")
        assert sum(dp.count for _, dp in hist[-20:] if True) >= 5
        assert backend.metric_points("toolscore.service.received")
        assert backend.metric_points("toolscore.runs")


# -- settings -----------------------------------------------------------------------------------------------
def test_settings_precedence_and_unknown_keys(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("service:\n  grpc_port: 5000\n  http_port: 5001\n  quiet_period_ms: 250\nscoring:\n  max_pending_traces: 77\n  expected_tool: x\n")
    env = {"OTEL_TOOLSCORE_SERVICE_HTTP_PORT": "6001", "OTEL_TOOLSCORE_EXPECTED_TOOL": "from_env"}
    c = load_config(config_file=cfg, environ=env, service_overrides={"quiet_period_ms": 10})
    assert (c.service.grpc_port, c.service.http_port, c.service.quiet_period_ms) == (5000, 6001, 10)
    assert c.scoring.max_pending_traces == 77 and c.scoring.expected_tool == "from_env"
    assert c.service.host == "127.0.0.1"
    # From the environment: warned about (naming the variable) and ignored.
    defaults = load_config(environ={})
    for key, value in (("OTEL_TOOLSCORE_SERVICE_QUIET_PERIOD", "5"), ("OTEL_TOOLSCORE_SERVICE_GRPC_PORT", "seventy"),
                       ("OTEL_TOOLSCORE_MAX_PENDING", "5"), ("OTEL_TOOLSCORE_SERVICE_FORWARD", "yes")):
        caplog.clear()
        assert load_config(environ={key: value}) == defaults
        assert key in caplog.text and "ignored" in caplog.text
    # Seconds names, in every source, still work (deprecated).
    caplog.clear()
    assert load_config(environ={"OTEL_TOOLSCORE_SERVICE_HARD_TIMEOUT_S": "2.5"}).service.hard_timeout_ms == 2500
    assert "OTEL_TOOLSCORE_SERVICE_HARD_TIMEOUT_S is deprecated" in caplog.text
    with pytest.warns(DeprecationWarning):
        assert load_config(environ={}, service_overrides={"drain_timeout_s": 4}).service.drain_timeout_ms == 4000
    old = tmp_path / "old.yaml"
    old.write_text("service:\n  retry_after_s: 3\nscoring:\n  trace_timeout_s: 60\n")
    with pytest.warns(DeprecationWarning):
        c = load_config(config_file=old, environ={})
    assert (c.service.retry_after_ms, c.service.retry_after_header, c.scoring.trace_timeout_ms) == (3000, "3", 60_000)
    # Explicit: a flag or a config-file key fails at once.
    with pytest.raises(ConfigError, match="--grpc-port"):
        load_config(environ={}, service_overrides={"grpc_port": "seventy"})
    bad = tmp_path / "bad.toml"
    bad.write_text("[service]\nhostname = 'x'\n")
    with pytest.raises(ConfigError, match="hostname"):
        load_config(config_file=bad, environ={})
    bad.write_text("[scoring]\nmax_pending = 3\n")
    with pytest.raises(ConfigError, match=r"scoring\.max_pending"):
        load_config(config_file=bad, environ={})


# -- the command line: SIGTERM drains -----------------------------------------------------------------------
def test_serve_command_drains_on_sigterm(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: weather\n    agent_name: weather_agent\n    expected_tool: get_weather\n")
    with capture_server() as (endpoint, backend):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
        env.update(OTEL_TOOLSCORE_SERVICE_QUIET_PERIOD_MS="60000", OTEL_TOOLSCORE_RULES=str(rules))
        proc = subprocess.Popen(
            [*CLI, "serve", "--grpc-port", "0", "--http-port", "0",
             "--export-endpoint", endpoint, "--export-protocol", "http/protobuf", "--forward"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            line = proc.stdout.readline() if proc.stdout else ""
            info = json.loads(line)
            assert info["event"] == "listening" and info["host"] == "127.0.0.1"
            wait_port(info["http_port"])
            exporter = HttpSpanExporter(endpoint=f"http://127.0.0.1:{info['http_port']}/v1/traces")
            tp = TracerProvider()
            tp.add_span_processor(SimpleSpanProcessor(exporter))
            run_scripted_agent(tp.get_tracer("t"), "weather_agent", "q", ["get_weather"])
            tp.shutdown()
            time.sleep(0.2)
            assert backend.logs() == []  # a 60 s quiet period: nothing scored yet
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, err
        assert '"stopped"' in out
        events = [e for e in backend.logs() if e["event_name"] == "gen_ai.evaluation.result"]
        assert [e["attributes"]["gen_ai.evaluation.score.value"] for e in events] == [1.0]
        assert any("toolscore.code.score" in s["attributes"] for s in backend.spans())


def test_serve_command_warns_about_unknown_service_variables_and_starts() -> None:
    from tests.support.serve_cli import serve_until_listening

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_TOOLSCORE_SERVICE_QUIET_MS"] = "5"
    code, err = serve_until_listening("--grpc-port", "0", "--http-port", "0", "--no-export", env=env)
    assert code == 0
    assert "OTEL_TOOLSCORE_SERVICE_QUIET_MS is not one of the service settings" in err
    assert "OTEL_TOOLSCORE_SERVICE_QUIET_PERIOD_MS" in err  # the name meant
    # A misspelt flag is refused.
    refused = subprocess.run([*CLI, "serve", "--quiet-ms", "5"], env=env, capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "--quiet-ms" in refused.stderr


def test_gzip_grpc_and_partial_success(svc: Running) -> None:
    """A span without ids is reported in partial_success and counted; gzip gRPC (the Collector's default) works."""
    spans = recorded_spans()
    request = encode_spans(spans)
    bad = request.resource_spans[0].scope_spans[0].spans.add()
    bad.name = "no ids"
    channel = grpc.insecure_channel(svc.grpc_target, compression=grpc.Compression.Gzip)
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)
    response = stub.Export(request, timeout=5)
    channel.close()
    assert isinstance(response, trace_service_pb2.ExportTraceServiceResponse)
    assert response.partial_success.rejected_spans == 1
    svc.wait_scored(len(SCRIPT))
    assert svc.counter("toolscore.dropped", **{"toolscore.reason": "invalid_span"}) == 1


# -- the LLM judge in the service ------------------------------------------------------------------------------
def test_service_runs_the_llm_judge_from_the_environment() -> None:
    """OTEL_TOOLSCORE_JUDGE_* enable the judge in the service: its verdicts leave as evaluation events,
    carrier spans (in the evaluated trace) and metrics, over OTLP, next to the code scores."""
    from tests.support.openai_server import OpenAITestServer, echo_judge

    with OpenAITestServer(echo_judge(appropriate=True)) as llm, capture_server() as (endpoint, backend):
        env = {
            "OTEL_TOOLSCORE_JUDGE_MODEL": "judge-model",
            "OTEL_TOOLSCORE_JUDGE_BASE_URL": llm.base_url,
            "OTEL_TOOLSCORE_JUDGE_API_KEY": "sk-test-local",
            "OTEL_TOOLSCORE_JUDGE_RATIO": "1",
        }
        config = load_config(
            environ={},
            service_overrides={
                "grpc_port": 0, "http_port": 0, "quiet_period_ms": 50, "forward": True,
                "export_endpoint": endpoint, "export_protocol": "http/protobuf", "metric_export_interval_ms": 200,
            },
        )
        scored: list[ScoredRun] = []
        service = ScoringService(config, expectations=RULES, on_scored=scored.append, judge_from_environment=True, environ=env)
        service.start()
        try:
            exporter = HttpSpanExporter(endpoint=f"http://127.0.0.1:{service.http_port}/v1/traces")
            tp = TracerProvider()
            tp.add_span_processor(SimpleSpanProcessor(exporter))
            run_scripted_agent(tp.get_tracer("t"), "weather_agent", "What's the weather in Paris?", ["get_weather"])
            tp.shutdown()
            deadline = time.monotonic() + 15
            while not scored and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            service.shutdown(timeout_s=15)
        assert llm.requests, "the judge called the OpenAI-compatible endpoint"
        events = [e for e in backend.logs() if e["event_name"] == "gen_ai.evaluation.result"]
        assert {e["attributes"]["gen_ai.evaluation.name"] for e in events} == {"tool_call_accuracy", "tool_call_accuracy_llm"}
        carriers = [s for s in backend.spans() if s["name"] == "evaluate tool_call_accuracy_llm"]
        (root,) = [s for s in backend.spans() if s["name"].startswith("invoke_agent")]
        assert len(carriers) == 1 and carriers[0]["trace_id"] == root["trace_id"]
        assert backend.metric_points("toolscore.judge.requests")


def test_every_service_setting_has_a_flag() -> None:
    from otel_toolscore.cli import build_parser
    from otel_toolscore.service.settings import ServiceSettings

    serve = build_parser()._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    flags = {a.dest for a in serve._actions}
    assert set(ServiceSettings.model_fields) <= flags
    args = serve.parse_args(["--grpc-port", "0", "--no-forward", "--recent-traces", "5"])
    assert (args.grpc_port, args.forward, args.recent_traces) == (0, False, 5)


def test_log_drops_are_counted_and_otlp_json_logs_accepted() -> None:
    """Log events whose spans never come are dropped at the hard timeout (counted), and events of a
    trace already scored are late (counted); OTLP/JSON log bodies with hex ids are read."""
    running = start_service(quiet_period_ms=50, hard_timeout_ms=500)
    try:
        choice = {
            "resourceLogs": [{
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
                "scopeLogs": [{
                    "scope": {"name": "test"},
                    "logRecords": [{
                        "timeUnixNano": "1",
                        "eventName": "gen_ai.choice",
                        "traceId": "5b8efff798038103d269b633813fc60c",
                        "spanId": "eee19b7ec3c1b174",
                        "body": {"kvlistValue": {"values": [
                            {"key": "index", "value": {"intValue": "0"}},
                            {"key": "message", "value": {"kvlistValue": {"values": [
                                {"key": "role", "value": {"stringValue": "assistant"}},
                                {"key": "tool_calls", "value": {"arrayValue": {"values": [{"kvlistValue": {"values": [
                                    {"key": "id", "value": {"stringValue": "c1"}},
                                    {"key": "type", "value": {"stringValue": "function"}},
                                    {"key": "function", "value": {"kvlistValue": {"values": [
                                        {"key": "name", "value": {"stringValue": "get_weather"}},
                                        {"key": "arguments", "value": {"stringValue": "{}"}},
                                    ]}}},
                                ]}}]}}},
                            ]}}},
                        ]}},
                    }],
                }],
            }]
        }
        status, _, _ = post(f"{running.http}/v1/logs", json.dumps(choice).encode(), "application/json")
        assert status == 200
        assert running.service.buffer.traces == 1  # kept: it may meet its spans
        time.sleep(1.0)  # past the hard timeout: no span ever came
        assert running.service.buffer.traces == 0
        assert running.counter("toolscore.dropped", **{"toolscore.reason": "orphan_logs"}) == 1
        # A trace scored already: its late event is counted, not kept.
        spans = recorded_spans()
        first = [s for s in spans if s.context.trace_id == spans[0].context.trace_id]
        _send(running, first)
        running.wait_scored(1)
        choice["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["traceId"] = format(first[0].context.trace_id, "032x")
        status, _, _ = post(f"{running.http}/v1/logs", json.dumps(choice).encode(), "application/json")
        assert status == 200
        assert running.counter("toolscore.dropped", **{"toolscore.reason": "late_log"}) == 1
        assert running.service.buffer.traces == 0
    finally:
        running.service.shutdown(timeout_s=5)


def test_an_idle_scorer_sleeps_until_spans_arrive(monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing pending the scorer thread sleeps (here: 60 s) instead of ticking; the first
    accepted request wakes it, and the run is scored once its quiet period has passed."""
    from otel_toolscore.service import _app

    monkeypatch.setattr(_app, "IDLE_POLL_S", 60.0)
    running = start_service()
    service = running.service
    try:
        deadline = time.monotonic() + 5
        while not service._scorer_wake.idle and time.monotonic() < deadline:
            time.sleep(0.005)
        assert service._scorer_wake.idle  # asleep: nothing pending
        exporter = HttpSpanExporter(endpoint=f"{running.http}/v1/traces")
        tp, _, _ = live_pipeline(exporter)
        run_scripted_agent(tp.get_tracer("test.agent"), "weather_agent", "Weather in Paris?", ["get_weather"])
        tp.shutdown()
        (scored,) = running.wait_scored(1, timeout=10)  # long before the 60 s sleep would have ended
        assert summary(scored)[:2] == ("weather_agent", ("get_weather",))
        deadline = time.monotonic() + 5
        while not service._scorer_wake.idle and time.monotonic() < deadline:
            time.sleep(0.005)
        assert service._scorer_wake.idle  # nothing pending any more: asleep again
    finally:
        service.shutdown(timeout_s=5)
