"""Langfuse: code scores and judgments become Langfuse scores through the real ``langfuse`` SDK's API
client, its HTTP captured by a local server on 127.0.0.1 standing in for Langfuse (the payload is
what ``POST /api/public/scores`` receives); and the documented recipe (examples/langfuse_scores.py)
runs against the same stand-in."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore import (
    Expectation,
    Judge,
    JudgeSampler,
    ToolScoreSpanProcessor,
    create_tool_call_accuracy_scorer_llm,
)
from otel_toolscore.scripted import run_scripted_agent
from otel_toolscore.settings import ConfigError
from otel_toolscore.sinks import LangfuseSink, ScoreRecord, SinkError
from otel_toolscore.sinks._langfuse import score_id
from tests.support.json_capture import Answer, JsonCaptureServer
from tests.support.openai_server import OpenAITestServer, echo_judge

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
SCORES = "/api/public/scores"
ACCEPTED = Answer(202, {"message": "Accepted"})
PK, SK = "pk-lf-test", "sk-lf-test"


@pytest.fixture
def langfuse() -> Iterator[JsonCaptureServer]:
    with JsonCaptureServer(lambda request: ACCEPTED) as server:
        yield server


def _posted(server: JsonCaptureServer) -> list[dict[str, Any]]:
    return [score for request in server.posted(SCORES) for score in request.json]


def _record(**kw: Any) -> ScoreRecord:
    base: dict[str, Any] = {
        "trace_id": "0af7651916cd43dd8448eb211c80319c", "span_id": "b7ad6b7169203331", "name": "tool_call_accuracy",
        "annotator_kind": "CODE", "score": 1.0, "label": "pass", "explanation": "pass: expected get_weather",
    }
    return ScoreRecord(**{**base, **kw})


def test_code_scores_and_judgments_become_langfuse_scores(langfuse: JsonCaptureServer) -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    with OpenAITestServer(echo_judge(appropriate=lambda tool: tool == "get_weather", reason="judge says so")) as llm:
        scorer = create_tool_call_accuracy_scorer_llm("test-judge", ["get_weather", "search_web"], base_url=llm.base_url,
                                                      api_key="sk-test-local", max_retries=0)
        judge = Judge(scorer, sampler=JudgeSampler(ratio=1.0, max_per_minute=None, max_tokens_per_hour=None),
                      tracer_provider=provider)
        sink = LangfuseSink(public_key=PK, secret_key=SK, base_url=langfuse.url, environment="production", environ={})
        processor = ToolScoreSpanProcessor(
            SimpleSpanProcessor(spans), expectations=[Expectation(agent_name="weather_agent", expected_tool="get_weather")],
            judge=judge, sinks=[sink], meter_provider=MeterProvider(), logger_provider=LoggerProvider(),
        )
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("t")
        run_scripted_agent(tracer, "weather_agent", "Weather in Paris?", ["get_weather"], "Sunny.")
        run_scripted_agent(tracer, "weather_agent", "Weather in Oslo?", ["search_web"], "Rain.")
        provider.shutdown()

    requests = langfuse.posted(SCORES)
    assert requests, "nothing reached the scores API"
    expected_auth = "Basic " + base64.b64encode(f"{PK}:{SK}".encode()).decode()
    assert {r.headers["authorization"] for r in requests} == {expected_auth}
    assert {r.headers["x-langfuse-public-key"] for r in requests} == {PK}
    posted = _posted(langfuse)
    roots = [s for s in spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert len(roots) == 2 and len(posted) == 8  # 2 runs x (code, judge) x (numeric, label)
    by_key = {(s["traceId"], s["observationId"], s["name"]): s for s in posted}
    for root in roots:
        assert root.context is not None and root.attributes is not None
        trace_id, span_id = f"{root.context.trace_id:032x}", f"{root.context.span_id:016x}"
        label = str(root.attributes["toolscore.code.label"])
        score = 1.0 if label == "pass" else 0.0
        for name, kind, comment in (
            ("tool_call_accuracy", "CODE", f"{label}: expected get_weather (lenient); called "),
            ("tool_call_accuracy_llm", "LLM", "judge says so"),
        ):
            numeric = by_key[(trace_id, span_id, name)]
            categorical = by_key[(trace_id, span_id, name + ".label")]
            # The exact body of each score, as the SDK serialised it (no null fields).
            assert set(numeric) == {"id", "traceId", "observationId", "name", "value", "dataType", "comment",
                                    "metadata", "environment"}
            assert (numeric["dataType"], numeric["value"]) == ("NUMERIC", score)
            assert (categorical["dataType"], categorical["value"]) == ("CATEGORICAL", label)
            assert numeric["comment"].startswith(comment) and categorical["comment"] == numeric["comment"]
            assert numeric["environment"] == "production"
            assert numeric["metadata"]["annotator_kind"] == kind
            assert numeric["metadata"]["identifier"] == "otel-toolscore"
            assert numeric["metadata"]["gen_ai.agent.name"] == "weather_agent"
            assert numeric["id"] != categorical["id"]
        assert by_key[(trace_id, span_id, "tool_call_accuracy_llm")]["metadata"]["toolscore.judge.model"] == "test-judge"
        assert by_key[(trace_id, span_id, "tool_call_accuracy")]["metadata"]["toolscore.expected_tool"] == "get_weather"


def test_a_rescore_keeps_the_score_ids(langfuse: JsonCaptureServer) -> None:
    """Langfuse upserts scores by id: the same (trace, span, name, producer) always gets the same id."""
    sink = LangfuseSink(public_key=PK, secret_key=SK, base_url=langfuse.url, environ={})
    assert sink.export([_record()]) is None
    assert sink.export([_record(score=0.0, label="fail", explanation="fail: rescored")]) is None
    first, second = langfuse.posted(SCORES)
    assert [s["id"] for s in first.json] == [s["id"] for s in second.json]
    assert [s["value"] for s in second.json] == [0.0, "fail"]
    assert first.json[0]["id"] == score_id(_record(), "tool_call_accuracy")
    other = _record(span_id="00f067aa0ba902b7")
    assert score_id(other, "tool_call_accuracy") != first.json[0]["id"]
    # No label: the numeric score alone; no explanation: no comment key.
    assert sink.export([_record(label=None, explanation=None)]) is None
    (only,) = langfuse.posted(SCORES)[-1].json
    assert only["name"] == "tool_call_accuracy" and "comment" not in only and "environment" not in only


def test_partial_rejections_errors_and_retries(langfuse: JsonCaptureServer) -> None:
    sink = LangfuseSink(public_key=PK, secret_key=SK, base_url=langfuse.url, max_retries=1, environ={})
    langfuse.enqueue(Answer(207, {"accepted": 3, "rejected": 1, "errors": [{"message": "bad value"}]}))
    assert sink.export([_record(), _record(span_id="00f067aa0ba902b7")]) == 1  # not retried (as the API asks)
    assert len(langfuse.posted(SCORES)) == 1
    langfuse.enqueue(Answer(503, {"message": "busy"}, {"Retry-After": "0"}))
    assert sink.export([_record()]) is None  # retried once
    assert len(langfuse.posted(SCORES)) == 3
    langfuse.enqueue(Answer(503, {}, {"Retry-After": "0"}), Answer(500, {}, {"Retry-After": "0"}))
    with pytest.raises(SinkError, match="500"):
        sink.export([_record()])  # out of attempts
    assert len(langfuse.posted(SCORES)) == 5
    langfuse.enqueue(Answer(401, {"message": "Invalid credentials"}))
    with pytest.raises(SinkError, match="401"):
        sink.export([_record()])
    assert len(langfuse.posted(SCORES)) == 6


def test_the_sink_from_the_environment(langfuse: JsonCaptureServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TOOLSCORE_SINKS", "langfuse")
    monkeypatch.setenv("OTEL_TOOLSCORE_LANGFUSE_MAX_BATCH", "1")
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PK)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SK)
    monkeypatch.delenv("LANGFUSE_BASE_URL", raising=False)
    monkeypatch.setenv("LANGFUSE_HOST", langfuse.url)  # the older name the SDK still reads
    provider = TracerProvider()
    processor = ToolScoreSpanProcessor(None, expected_tool="get_weather", meter_provider=MeterProvider(),
                                       logger_provider=LoggerProvider())
    provider.add_span_processor(processor)
    assert processor.sinks is not None
    (sink,) = processor.sinks.sinks
    assert isinstance(sink, LangfuseSink) and sink.max_batch == 1 and sink.base_url == langfuse.url
    for _ in range(2):
        run_scripted_agent(provider.get_tracer("t"), "weather_agent", "q", ["get_weather"])
    provider.shutdown()
    assert [len(r.json) for r in langfuse.posted(SCORES)] == [2, 2]  # one record (two scores) per request
    # A bad value: from the environment a warning (the sink is left out), named as an argument an error.
    monkeypatch.setenv("LANGFUSE_HOST", "ftp://x")
    without = ToolScoreSpanProcessor(None, meter_provider=MeterProvider(), logger_provider=LoggerProvider())
    assert without.sinks is None
    without.shutdown()
    with pytest.raises(ConfigError, match="LANGFUSE_HOST: 'ftp://x' must start with http"):
        ToolScoreSpanProcessor(None, sinks=["langfuse"])
    with pytest.raises(ConfigError, match="base_url: 'ftp://x' must start with http"):
        LangfuseSink(public_key=PK, secret_key=SK, base_url="ftp://x")


def test_the_recipe_runs_against_a_local_langfuse(langfuse: JsonCaptureServer, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "LANGFUSE_"))}
    env.update(LANGFUSE_BASE_URL=langfuse.url, LANGFUSE_PUBLIC_KEY=PK, LANGFUSE_SECRET_KEY=SK,
               NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "langfuse_scores.py")], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    posted = _posted(langfuse)
    assert sorted((s["name"], s["value"]) for s in posted) == [
        ("tool_call_accuracy", 0.0), ("tool_call_accuracy", 1.0),
        ("tool_call_accuracy.label", "fail"), ("tool_call_accuracy.label", "pass"),
    ]
    # Keyed to the ids the example printed, which are the spans' own (sent to the OTLP endpoint).
    for s in posted:
        assert f"trace {s['traceId']} observation {s['observationId']}" in out.stdout
    (otlp,) = {r.path for r in langfuse.requests if r.path != SCORES}
    assert otlp == "/api/public/otel/v1/traces"
    assert {r.headers["authorization"] for r in langfuse.requests} == {"Basic " + base64.b64encode(f"{PK}:{SK}".encode()).decode()}
