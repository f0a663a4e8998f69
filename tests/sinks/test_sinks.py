"""Score sinks: every code score and judgment reaches every sink, off the span's thread, bounded,
batched, with failures and drops counted — through the processor, configure()/install(), the
zero-code hook and the scoring service. Real SDK, real HTTP on 127.0.0.1 (the local
OpenAI-compatible judge, a JSON capture server standing in for Phoenix's annotations API)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore import (
    Expectation,
    Judge,
    JudgeSampler,
    ToolScoreSpanProcessor,
    configure,
    create_tool_call_accuracy_scorer_llm,
    install,
)
from otel_toolscore.scripted import run_scripted_agent
from otel_toolscore.service import ScoringService, load_config
from otel_toolscore.settings import ConfigError, Settings
from otel_toolscore.sinks import PhoenixSink, ScoreRecord, ScoreSink, SinkError
from otel_toolscore.telemetry import names
from tests.support.json_capture import Answer, JsonCaptureServer
from tests.support.openai_server import OpenAITestServer, echo_judge
from tests.support.telemetry import metric_points

pytestmark = pytest.mark.timeout(120)

EXPECT = [Expectation(agent_name="weather_agent", expected_tool="get_weather")]
CLI = [sys.executable, "-c", "import sys; from otel_toolscore.cli import main; sys.exit(main())"]


class MemorySink(ScoreSink):
    """Keeps what it gets, with the thread and batch size of every call."""

    name = "memory"

    def __init__(self, max_batch: int = 100) -> None:
        self.max_batch = max_batch
        self.records: list[ScoreRecord] = []
        self.calls: list[tuple[str, int]] = []
        self.closed = False

    def export(self, records: Sequence[ScoreRecord]) -> int | None:
        self.calls.append((threading.current_thread().name, len(records)))
        self.records.extend(records)
        return None

    def shutdown(self) -> None:
        self.closed = True


class Pipe:
    def __init__(self, sinks: Sequence[Any], *, judge_url: str | None = None, **options: Any) -> None:
        self.spans = InMemorySpanExporter()
        self.reader = InMemoryMetricReader()
        self.provider = TracerProvider()
        judge = None
        if judge_url is not None:
            scorer = create_tool_call_accuracy_scorer_llm(
                "test-judge", ["get_weather", "search_web"], base_url=judge_url, api_key="sk-test-local", max_retries=0
            )
            judge = Judge(scorer, sampler=JudgeSampler(ratio=1.0, max_per_minute=None, max_tokens_per_hour=None),
                          tracer_provider=self.provider)
        self.processor = ToolScoreSpanProcessor(
            SimpleSpanProcessor(self.spans), expectations=EXPECT, judge=judge, sinks=sinks,
            meter_provider=MeterProvider(metric_readers=[self.reader]), logger_provider=LoggerProvider(), **options,
        )
        self.provider.add_span_processor(self.processor)

    def run(self, tools: Sequence[str], query: str = "What is the weather in Paris?") -> None:
        run_scripted_agent(self.provider.get_tracer("t"), "weather_agent", query, list(tools), "It is sunny.")

    def roots(self) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name.startswith("invoke_agent")]

    def dropped(self) -> dict[str, int]:
        return {p.attributes[names.ATTR_REASON]: int(p.value) for p in metric_points(self.reader, names.METRIC_DROPPED)}


@pytest.fixture
def judge_server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(echo_judge(appropriate=lambda tool: tool == "get_weather", reason="judge says so")) as s:
        yield s


def _ids(span: ReadableSpan) -> tuple[str, str]:
    assert span.context is not None
    return format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")


# -- what a sink receives ------------------------------------------------------------------------------
def test_code_scores_and_judgments_reach_the_sink(judge_server: OpenAITestServer) -> None:
    sink = MemorySink()
    pipe = Pipe([sink], judge_url=judge_server.base_url)
    pipe.run(["get_weather"], "Weather in Paris?")
    pipe.run(["search_web"], "Weather in Oslo?")
    assert pipe.processor.force_flush(20_000)
    roots = {_ids(r): r for r in pipe.roots()}
    assert len(roots) == 2
    by_key = {(r.trace_id, r.span_id, r.name): r for r in sink.records}
    assert len(by_key) == len(sink.records) == 4, sink.records
    for ids, root in roots.items():
        passed = root.attributes is not None and root.attributes["toolscore.code.label"] == "pass"
        code = by_key[(*ids, names.EVAL_CODE)]
        assert (code.annotator_kind, code.score, code.label) == ("CODE", 1.0 if passed else 0.0, "pass" if passed else "fail")
        assert code.explanation is not None and code.explanation.startswith(("pass: expected get_weather", "fail: expected get_weather"))
        assert code.metadata == {"toolscore.expected_tool": "get_weather"}
        assert (code.agent_name, code.identifier) == ("weather_agent", "otel-toolscore")
        llm = by_key[(*ids, names.EVAL_LLM)]
        assert (llm.annotator_kind, llm.score, llm.label) == ("LLM", 1.0 if passed else 0.0, "pass" if passed else "fail")
        assert llm.explanation == "judge says so"
        assert llm.metadata == {"toolscore.judge.model": "test-judge", "toolscore.judge.sampled_by": "ratio"}
    # Off the span's thread, on the sink's own; the processor owns the sink and shuts it down.
    assert {thread for thread, _ in sink.calls} == {"otel-toolscore-sink-memory"}
    assert pipe.processor.sinks is not None
    assert [s.model_dump() for s in pipe.processor.sinks.stats()] == [
        {"name": "memory", "delivered": 4, "failed": 0, "dropped": 0, "queued": 0}
    ]
    pipe.provider.shutdown()
    assert sink.closed


def test_the_judge_carrier_span_carries_the_openinference_form(judge_server: OpenAITestServer) -> None:
    """OpenInference's post-hoc feedback form (docs/judging.md): a carrier span with exactly one link to
    the evaluated span, kind EVALUATOR, the result as annotations.0.annotation.*; the GenAI keys stay."""
    pipe = Pipe([], judge_url=judge_server.base_url)
    pipe.run(["search_web"], "Weather in Oslo?")
    assert pipe.processor.force_flush(20_000)
    (root,) = pipe.roots()
    (carrier,) = [s for s in pipe.spans.get_finished_spans() if s.name == names.JUDGE_SPAN_NAME]
    assert root.context is not None and carrier.context is not None
    assert [(link.context.trace_id, link.context.span_id) for link in carrier.links] == [
        (root.context.trace_id, root.context.span_id)
    ]
    attrs = dict(carrier.attributes or {})
    assert attrs["openinference.span.kind"] == "EVALUATOR"
    oi = {k.removeprefix("annotations.0.annotation."): v for k, v in attrs.items() if k.startswith("annotations.")}
    assert oi == {
        "name": "tool_call_accuracy_llm",
        "score": 0.0,
        "label": "fail",
        "explanation": "judge says so",
        "annotator_kind": "LLM",
        "identifier": "otel-toolscore",
        "metadata": json.dumps({"toolscore.judge.model": "test-judge", "toolscore.judge.sampled_by": "ratio"}, sort_keys=True),
    }
    assert json.loads(oi["metadata"])["toolscore.judge.model"] == "test-judge"  # a JSON object string
    # The GenAI keys, unchanged and equal.
    assert attrs["gen_ai.evaluation.name"] == oi["name"]
    assert attrs["gen_ai.evaluation.score.value"] == oi["score"]
    assert attrs["gen_ai.evaluation.score.label"] == oi["label"]
    assert attrs["gen_ai.evaluation.explanation"] == oi["explanation"]
    pipe.provider.shutdown()


def test_a_failed_judgment_writes_no_annotation_and_no_record() -> None:
    from tests.support.openai_server import error

    sink = MemorySink()
    with OpenAITestServer(lambda request: error(500, "down")) as server:
        pipe = Pipe([sink], judge_url=server.base_url)
        pipe.run(["get_weather"])
        assert pipe.processor.force_flush(20_000)
        (carrier,) = [s for s in pipe.spans.get_finished_spans() if s.name == names.JUDGE_SPAN_NAME]
        assert not any(k.startswith("annotations.") for k in carrier.attributes or {})
        assert [r.name for r in sink.records] == [names.EVAL_CODE]  # no result, nothing to annotate
        pipe.provider.shutdown()


def test_records_are_batched_by_the_sinks_size() -> None:
    sink = MemorySink(max_batch=3)
    gate = threading.Event()
    original = sink.export

    def slow_first(records: Sequence[ScoreRecord]) -> int | None:
        gate.wait(10)  # the first batch waits until every run is queued: later ones arrive together
        return original(records)

    sink.export = slow_first  # type: ignore[method-assign]
    pipe = Pipe([sink])
    for _ in range(8):
        pipe.run(["get_weather"])
    pipe.processor._score_queued()
    gate.set()
    assert pipe.processor.force_flush(10_000)
    assert len(sink.records) == 8
    assert max(n for _, n in sink.calls) <= 3 and any(n == 3 for _, n in sink.calls), sink.calls
    pipe.provider.shutdown()


# -- bounded: drops and failures are counted --------------------------------------------------------------
class BlockingSink(ScoreSink):
    name = "blocking"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.got = 0

    def export(self, records: Sequence[ScoreRecord]) -> int | None:
        self.entered.set()
        self.release.wait(30)
        self.got += len(records)
        return None


def test_a_full_sink_queue_drops_and_counts() -> None:
    sink = BlockingSink()
    other = MemorySink()
    pipe = Pipe([sink, other], sink_queue_size=2)
    assert pipe.processor.sinks is not None
    memory_lane = pipe.processor.sinks._lanes[1].worker

    def one_run() -> None:
        pipe.run(["get_weather"])
        pipe.processor._score_queued()
        pipe.processor._emit.wait_idle(float("inf"))
        memory_lane.wait_idle(float("inf"))

    one_run()
    assert sink.entered.wait(10)  # the first record is in the blocking sink; its queue holds 2 more
    for _ in range(5):
        one_run()
    sink.release.set()
    assert pipe.processor.force_flush(10_000)
    stats = {s.name: s for s in pipe.processor.sinks.stats()}
    assert (stats["blocking"].delivered, stats["blocking"].dropped) == (3, 3)
    # A slow sink holds only its own queue: the other one got everything.
    assert (stats["memory"].delivered, stats["memory"].dropped) == (6, 0) and len(other.records) == 6
    assert pipe.dropped().get("sink_queue_full") == 3
    pipe.provider.shutdown()


class FailingSink(ScoreSink):
    name = "failing"

    def __init__(self, rejected: int | None = None) -> None:
        self.rejected = rejected

    def export(self, records: Sequence[ScoreRecord]) -> int | None:
        if self.rejected is None:
            raise RuntimeError("backend down")
        return self.rejected


def test_sink_failures_are_counted_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    pipe = Pipe([FailingSink(), FailingSink(rejected=1)])
    with caplog.at_level(logging.WARNING, logger="otel_toolscore"):
        for _ in range(3):
            pipe.run(["get_weather"])
            assert pipe.processor.force_flush(10_000)  # one export per run
    assert pipe.processor.sinks is not None
    failed = [s.failed for s in pipe.processor.sinks.stats()]
    assert failed == [3, 3]  # every record of the raising sink, one per batch of the partial one
    assert pipe.dropped().get("sink_failed") == 6
    warnings = [r for r in caplog.records if "sink 'failing' failed" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
    pipe.provider.shutdown()


def test_a_hanging_sink_does_not_hold_shutdown() -> None:
    sink = BlockingSink()
    sink.max_batch = 1
    pipe = Pipe([sink])
    pipe.run(["get_weather"])
    pipe.run(["get_weather"])
    pipe.processor._score_queued()
    assert sink.entered.wait(10)
    pipe.processor.shutdown(timeout_millis=1_000)  # returns: the stuck export costs its own thread
    assert pipe.processor.sinks is not None
    (stats,) = pipe.processor.sinks.stats()
    # Not delivered by the deadline: the record the sink is stuck on and the one after it.
    assert (stats.delivered, stats.failed) == (0, 2)
    assert pipe.dropped().get("sink_failed") == 2
    sink.release.set()


# -- the Phoenix sink's HTTP: payload, retries, errors --------------------------------------------------------
def _record(**kw: Any) -> ScoreRecord:
    base: dict[str, Any] = {
        "trace_id": "0af7651916cd43dd8448eb211c80319c", "span_id": "b7ad6b7169203331", "name": "tool_call_accuracy",
        "annotator_kind": "CODE", "score": 1.0, "label": "pass", "explanation": "pass: expected get_weather",
        "agent_name": "weather_agent", "metadata": {"toolscore.expected_tool": "get_weather"},
    }
    return ScoreRecord(**{**base, **kw})


def test_phoenix_sink_payload_and_auth() -> None:
    with JsonCaptureServer(lambda r: Answer(200, {"data": []})) as server:
        sink = PhoenixSink(server.url + "/v1/traces", api_key="px-key", headers={"X-Team": "agents"})
        assert sink.url == server.url + "/v1/span_annotations"  # the OTLP path is cut off
        assert sink.export([_record(), _record(name="tool_call_accuracy_llm", annotator_kind="LLM", score=0.5,
                                               label="fail", explanation=None, metadata={})]) is None
        sink.shutdown()
    (request,) = server.posted("/v1/span_annotations")
    assert request.path == "/v1/span_annotations"  # asynchronous on Phoenix's side: no sync=true
    assert request.headers["authorization"] == "Bearer px-key" and request.headers["x-team"] == "agents"
    assert request.json == {
        "data": [
            {
                "span_id": "b7ad6b7169203331", "name": "tool_call_accuracy", "annotator_kind": "CODE",
                "result": {"score": 1.0, "label": "pass", "explanation": "pass: expected get_weather"},
                "identifier": "otel-toolscore",
                "metadata": {"toolscore.expected_tool": "get_weather", "gen_ai.agent.name": "weather_agent"},
            },
            {
                "span_id": "b7ad6b7169203331", "name": "tool_call_accuracy_llm", "annotator_kind": "LLM",
                "result": {"score": 0.5, "label": "fail"}, "identifier": "otel-toolscore",
                "metadata": {"gen_ai.agent.name": "weather_agent"},
            },
        ]
    }


def test_phoenix_sink_retries_are_bounded() -> None:
    busy = Answer(503, {"detail": "busy"}, {"Retry-After": "0"})
    with JsonCaptureServer(lambda r: Answer(200, {"data": []})) as server:
        sink = PhoenixSink(server.url, max_retries=2)
        server.enqueue(busy, Answer(429, {}, {"Retry-After": "0"}))
        assert sink.export([_record()]) is None  # third attempt succeeds
        assert len(server.posted("/v1/span_annotations")) == 3
        server.enqueue(busy, busy, busy)
        with pytest.raises(SinkError, match="503"):
            sink.export([_record()])  # 1 + 2 retries, then it gives up
        assert len(server.posted("/v1/span_annotations")) == 6
        server.enqueue(Answer(422, {"detail": "bad"}))
        with pytest.raises(SinkError, match="422"):
            sink.export([_record()])  # not retried
        assert len(server.posted("/v1/span_annotations")) == 7
        sink.shutdown()


def test_phoenix_sink_timeout_is_a_failure() -> None:
    with JsonCaptureServer(lambda r: Answer(200, {"data": []}, delay_s=5)) as server:
        sink = PhoenixSink(server.url, timeout_s=0.2, max_retries=1)
        with pytest.raises(SinkError, match=r"deadline of 0\.2 s"):
            sink.export([_record()])
        assert len(server.posted("/v1/span_annotations")) == 2
        sink.shutdown()


def test_phoenix_sink_rejects_bad_arguments() -> None:
    for bad in ("localhost:6006", "ftp://x", ""):
        with pytest.raises(ValueError):
            PhoenixSink(bad)
    with pytest.raises(ValueError):
        PhoenixSink(timeout_s=0)


# -- configuration: arguments fail fast, the environment warns ------------------------------------------------
def test_explicit_sink_names_fail_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ConfigError, match="unknown sink 'phenix'"):
        ToolScoreSpanProcessor(None, sinks=["phenix"])
    with pytest.raises(ConfigError, match=r"sink 'langfuse'.*LANGFUSE_PUBLIC_KEY"):
        ToolScoreSpanProcessor(None, sinks=["langfuse"])
    with pytest.raises(ConfigError, match="unknown sink"):
        Settings.from_env({}, sinks="phoenix,phenix")
    assert Settings.from_env({}, sinks="Phoenix, langfuse").sinks == ("phoenix", "langfuse")


def test_environment_typos_warn_and_scoring_goes_on(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    with JsonCaptureServer(lambda r: Answer(200, {"data": []})) as server:
        monkeypatch.setenv("OTEL_TOOLSCORE_SINKS", "phenix, phoenix, langfuse")
        monkeypatch.setenv("OTEL_TOOLSCORE_PHOENIX_ENDPOINT", server.url)
        monkeypatch.setenv("OTEL_TOOLSCORE_PHOENIX_TIMEOUT_MS", "soon")
        monkeypatch.setenv("OTEL_TOOLSCORE_PHOENIX_MAX_RETRIES", "-1")
        monkeypatch.setenv("OTEL_TOOLSCORE_PHOENIX_API_KEY", "")
        monkeypatch.setenv("OTEL_TOOLSCORE_PHOENIX_ENDPIONT", "http://elsewhere")
        for key in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "PHOENIX_API_KEY"):
            monkeypatch.delenv(key, raising=False)
        with caplog.at_level(logging.WARNING, logger="otel_toolscore"):
            pipe = Pipe(None)  # type: ignore[arg-type]  # None: from the settings (the environment)
            pipe.run(["get_weather"])
            assert pipe.processor.force_flush(10_000)
        messages = "\n".join(r.getMessage() for r in caplog.records)
        assert "OTEL_TOOLSCORE_SINKS: unknown sink 'phenix'" in messages
        assert "OTEL_TOOLSCORE_PHOENIX_TIMEOUT_MS='soon'" in messages
        assert "OTEL_TOOLSCORE_PHOENIX_MAX_RETRIES='-1'" in messages
        assert "unknown setting OTEL_TOOLSCORE_PHOENIX_ENDPIONT" in messages
        assert "sink 'langfuse' from OTEL_TOOLSCORE_SINKS not started" in messages
        assert pipe.processor.sinks is not None
        (phoenix,) = pipe.processor.sinks.sinks
        assert isinstance(phoenix, PhoenixSink)
        assert (phoenix.endpoint, phoenix.max_retries, phoenix._timeout_s) == (server.url, 2, 5.0)  # defaults
        (request,) = server.posted("/v1/span_annotations")
        assert request.json["data"][0]["result"]["label"] == "pass"
        assert "authorization" not in request.headers
        pipe.provider.shutdown()


def test_phoenix_variables_are_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    from otel_toolscore.sinks import sink_from_name

    sink = sink_from_name("phoenix", {"PHOENIX_COLLECTOR_ENDPOINT": "https://phoenix.example/s/team", "PHOENIX_API_KEY": "k"})
    assert isinstance(sink, PhoenixSink)
    assert sink.url == "https://phoenix.example/s/team/v1/span_annotations"
    assert sink._headers["Authorization"] == "Bearer k"
    sink = sink_from_name("phoenix", {"PHOENIX_COLLECTOR_ENDPOINT": "https://a.example", "OTEL_TOOLSCORE_PHOENIX_ENDPOINT": "http://b.example:6006"})
    assert isinstance(sink, PhoenixSink) and sink.endpoint == "http://b.example:6006"
    assert isinstance(sink_from_name("phoenix", {}), PhoenixSink) and sink_from_name("phoenix", {}).endpoint == "http://localhost:6006"  # type: ignore[attr-defined]


def test_configure_and_install_take_sinks() -> None:
    sink = MemorySink()
    installed = configure(export=False, set_global=False, sinks=[sink], expectations=EXPECT)
    run_scripted_agent(installed.tracer_provider.get_tracer("t"), "weather_agent", "q", ["get_weather"])
    installed.shutdown()
    assert [(r.name, r.label) for r in sink.records] == [("tool_call_accuracy", "pass")] and sink.closed

    other = MemorySink()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    processor = install(provider, sinks=[other], expectations=EXPECT, meter_provider=MeterProvider(),
                        logger_provider=LoggerProvider())
    run_scripted_agent(provider.get_tracer("t"), "weather_agent", "q", ["search_web"])
    provider.shutdown()
    assert processor.sinks is not None and [(r.name, r.label) for r in other.records] == [("tool_call_accuracy", "fail")]


def test_zero_code_hook_reads_the_sinks_from_the_environment(tmp_path: Path) -> None:
    """Under opentelemetry-instrument: OTEL_TOOLSCORE_SINKS=phoenix posts the code score; a typo in a
    sink setting is a warning and scoring goes on."""
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(
        """
        from opentelemetry import trace
        from otel_toolscore.scripted import run_scripted_agent
        run_scripted_agent(trace.get_tracer("app"), "weather_agent", "q", ["get_weather"])
        """
    ))
    with JsonCaptureServer(lambda r: Answer(200, {"data": []})) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "PHOENIX_", "LANGFUSE_"))}
        env.update(
            OTEL_TOOLSCORE_EXPECTED_TOOL="get_weather",
            OTEL_TOOLSCORE_SINKS="phoenix",
            OTEL_TOOLSCORE_PHOENIX_ENDPOINT=server.url,
            OTEL_TOOLSCORE_PHOENIX_MAX_BATCH="many",
            OTEL_TRACES_EXPORTER="console",
            OTEL_METRICS_EXPORTER="none",
            OTEL_LOGS_EXPORTER="none",
            OTEL_SERVICE_NAME="zero-code-sinks",
        )
        out = subprocess.run(
            [str(Path(sys.executable).parent / "opentelemetry-instrument"), sys.executable, str(app)],
            env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr
        assert "OTEL_TOOLSCORE_PHOENIX_MAX_BATCH='many'" in out.stderr
        (request,) = server.posted("/v1/span_annotations")
    (annotation,) = request.json["data"]
    assert (annotation["name"], annotation["annotator_kind"], annotation["result"]["score"]) == ("tool_call_accuracy", "CODE", 1.0)
    assert f'"span_id": "0x{annotation["span_id"]}"' in out.stdout  # the root span the console exporter printed


# -- the scoring service ----------------------------------------------------------------------------------------
def test_the_service_feeds_its_sinks(monkeypatch: pytest.MonkeyPatch) -> None:
    with JsonCaptureServer(lambda r: Answer(200, {"data": []})) as server:
        monkeypatch.setenv("OTEL_TOOLSCORE_PHOENIX_ENDPOINT", server.url)
        config = load_config(
            environ={"OTEL_TOOLSCORE_SINKS": "phoenix"},
            service_overrides={"grpc_port": 0, "http_port": 0, "quiet_period_ms": 50, "export": False},
        )
        assert config.scoring.sinks == ("phoenix",)
        service = ScoringService(config, expectations=EXPECT, meter_provider=MeterProvider(), logger_provider=LoggerProvider())
        service.start()
        try:
            tp = TracerProvider()
            tp.add_span_processor(SimpleSpanProcessor(HttpSpanExporter(endpoint=f"http://127.0.0.1:{service.http_port}/v1/traces")))
            run_scripted_agent(tp.get_tracer("t"), "weather_agent", "q", ["search_web"])
            tp.shutdown()
            assert server.wait_for(lambda: bool(server.posted("/v1/span_annotations")), timeout=20)
        finally:
            service.shutdown(timeout_s=10)
    (request,) = server.posted("/v1/span_annotations")
    assert [(a["name"], a["result"]["label"]) for a in request.json["data"]] == [("tool_call_accuracy", "fail")]


def test_serve_sinks_flag_fails_fast() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LANGFUSE_"))}
    out = subprocess.run([*CLI, "serve", "--sinks", "phenix"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "unknown sink 'phenix'" in out.stderr, out.stderr
    out = subprocess.run([*CLI, "serve", "--sinks", "langfuse"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "LANGFUSE_PUBLIC_KEY" in out.stderr, out.stderr


def test_conversation_ids_are_redacted_before_any_sink() -> None:
    """A conversation id is application data (an e-mail address, a session token): every sink gets it
    through the built-in redaction, the custom ones too."""
    from otel_toolscore.sinks import SinkDispatcher

    class Keep(ScoreSink):
        name = "keep"

        def __init__(self) -> None:
            self.records: list[ScoreRecord] = []

        def export(self, records: Sequence[ScoreRecord]) -> int | None:
            self.records.extend(records)
            return None

    ids = ["jane.doe@example.com", "session Bearer AbCdEfGhIjKlMnOpQrSt", "conv-42"]
    with JsonCaptureServer(lambda r: Answer(200, {"data": []})) as server:
        keep = Keep()
        dispatcher = SinkDispatcher([PhoenixSink(server.url), keep], queue_size=10, count_drop=lambda *_: None)
        for cid in ids:
            dispatcher.offer(_record(conversation_id=cid))
        assert dispatcher.wait_idle(time.monotonic() + 20)
        dispatcher.stop(time.monotonic() + 5)
        posted = [a["metadata"]["gen_ai.conversation.id"] for r in server.posted("/v1/span_annotations")
                  for a in r.json["data"]]
    expected = ["[REDACTED_EMAIL]", "session Bearer [REDACTED_TOKEN]", "conv-42"]
    assert posted == expected and [r.conversation_id for r in keep.records] == expected
