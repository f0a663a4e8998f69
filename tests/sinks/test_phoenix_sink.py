"""The Phoenix sink against a real Arize Phoenix (``tests/tools/phoenix.py``): after scored runs,
Phoenix's annotations API lists a ``CODE`` annotation (the code score) and an ``LLM`` annotation
(the judge's verdict, the judge answering from the local OpenAI-compatible test server) on each
evaluated span; a re-score replaces the annotation instead of adding one; the judge's EVALUATOR
carrier span arrives with its OpenInference annotation attributes.

Select with ``-m phoenix``; it also runs in the default ``make test``.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_toolscore import (
    Expectation,
    Judge,
    JudgeSampler,
    ToolScoreSpanProcessor,
    create_tool_call_accuracy_scorer_llm,
)
from otel_toolscore.online.processor import ScoredRun
from otel_toolscore.scripted import run_scripted_agent
from otel_toolscore.sinks import PhoenixSink, ScoreRecord
from tests.support.openai_server import OpenAITestServer, echo_judge
from tests.tools.phoenix import INSTALL_TIMEOUT_S, PhoenixServer, get_json, phoenix_server, wait_until

pytestmark = [pytest.mark.phoenix, pytest.mark.timeout(INSTALL_TIMEOUT_S + 300)]

PROJECT = "otel-toolscore-sinks"
# Phoenix holds an annotation whose span has not arrived yet and retries it every 10 s.
ANNOTATION_WAIT_S = 90


@pytest.fixture
def phoenix(tmp_path: Path) -> Iterator[PhoenixServer]:
    with phoenix_server(tmp_path) as server:
        yield server


def _annotations(phx: PhoenixServer, span_ids: list[str]) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode([("span_ids", s) for s in span_ids] + [("limit", "100")])
    data: list[dict[str, Any]] = get_json(f"{phx.url}/v1/projects/{PROJECT}/span_annotations?{query}")["data"]
    return data


def _spans(phx: PhoenixServer) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = get_json(f"{phx.url}/v1/projects/{PROJECT}/spans?limit=100")["data"]
    return data


def test_phoenix_lists_code_and_judge_annotations_on_the_evaluated_spans(phoenix: PhoenixServer) -> None:
    scored: list[ScoredRun] = []
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-service", "openinference.project.name": PROJECT}))
    with OpenAITestServer(echo_judge(appropriate=lambda tool: tool == "get_weather", reason="judge says so")) as llm:
        scorer = create_tool_call_accuracy_scorer_llm("test-judge", ["get_weather", "search_web"], base_url=llm.base_url,
                                                      api_key="sk-test-local", max_retries=0)
        judge = Judge(scorer, sampler=JudgeSampler(ratio=1.0, max_per_minute=None, max_tokens_per_hour=None),
                      tracer_provider=provider)
        processor = ToolScoreSpanProcessor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix.url}/v1/traces", timeout=10), schedule_delay_millis=100),
            expectations=[Expectation(agent_name="weather_agent", expected_tool="get_weather")],
            judge=judge,
            sinks=[PhoenixSink(phoenix.url)],
            # Phoenix has no OTLP logs/metrics receiver: events and metrics stay local.
            meter_provider=MeterProvider(),
            logger_provider=LoggerProvider(),
            on_scored=scored.append,
        )
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("weather-agent")
        run_scripted_agent(tracer, "weather_agent", "Weather in Paris?", ["get_weather"], "Sunny.")
        run_scripted_agent(tracer, "weather_agent", "Weather in Oslo?", ["search_web"], "Rain.")
        provider.shutdown()
    assert processor.sinks is not None
    (stats,) = processor.sinks.stats()
    assert (stats.delivered, stats.failed, stats.dropped) == (4, 0, 0), stats

    expected = {f"{r.ref.span_id:016x}": ("pass" if r.passed else "fail", float(r.score or 0.0)) for r in scored}
    assert len(expected) == 2
    root_ids = sorted(expected)

    # -- the annotations, as Phoenix's API lists them --------------------------------------------------
    listed = wait_until(
        f"4 annotations on the roots (log: {phoenix.log})",
        lambda: found if len(found := _annotations(phoenix, root_ids)) >= 4 else None,
        timeout=ANNOTATION_WAIT_S,
    )
    assert len(listed) == 4, listed
    by_key = {(a["span_id"], a["name"]): a for a in listed}
    for span_id, (label, score) in expected.items():
        code = by_key[(span_id, "tool_call_accuracy")]
        assert code["annotator_kind"] == "CODE" and code["source"] == "API" and code["identifier"] == "otel-toolscore"
        assert (code["result"]["score"], code["result"]["label"]) == (score, label)
        assert code["result"]["explanation"].startswith(f"{label}: expected get_weather")
        assert code["metadata"] == {"toolscore.expected_tool": "get_weather", "gen_ai.agent.name": "weather_agent"}
        llm_note = by_key[(span_id, "tool_call_accuracy_llm")]
        assert llm_note["annotator_kind"] == "LLM" and llm_note["identifier"] == "otel-toolscore"
        assert (llm_note["result"]["score"], llm_note["result"]["label"], llm_note["result"]["explanation"]) == (
            score, label, "judge says so"
        )
        assert llm_note["metadata"]["toolscore.judge.model"] == "test-judge"

    # -- a re-score replaces (Phoenix upserts on span, name and identifier) --------------------------------
    span_id = root_ids[0]
    (trace_id,) = {f"{r.ref.trace_id:032x}" for r in scored if f"{r.ref.span_id:016x}" == span_id}
    sink = PhoenixSink(phoenix.url)
    sink.export([ScoreRecord(trace_id=trace_id, span_id=span_id, name="tool_call_accuracy", annotator_kind="CODE",
                             score=0.5, label="rescored", explanation="re-scored by a test")])
    sink.shutdown()

    def rescored() -> list[dict[str, Any]] | None:
        mine = [a for a in _annotations(phoenix, [span_id]) if a["name"] == "tool_call_accuracy"]
        return mine if mine and mine[0]["result"]["label"] == "rescored" else None

    replaced = wait_until("the re-scored annotation", rescored, timeout=ANNOTATION_WAIT_S)
    assert len(replaced) == 1 and replaced[0]["result"]["score"] == 0.5, replaced
    assert len(_annotations(phoenix, root_ids)) == 4  # replaced, not added

    # -- the judge's carrier spans, with OpenInference's annotation attributes ------------------------------
    spans = _spans(phoenix)
    carriers = [s for s in spans if s["name"] == "evaluate tool_call_accuracy_llm"]
    assert len(carriers) == 2, [s["name"] for s in spans]
    for carrier in carriers:
        assert carrier["span_kind"] == "EVALUATOR"
        attrs = carrier["attributes"]
        assert carrier["parent_id"] in expected
        label, score = expected[carrier["parent_id"]]
        assert attrs["annotations.0.annotation.name"] == "tool_call_accuracy_llm"
        assert attrs["annotations.0.annotation.annotator_kind"] == "LLM"
        assert (attrs["annotations.0.annotation.score"], attrs["annotations.0.annotation.label"]) == (score, label)
        assert attrs["gen_ai.evaluation.score.value"] == score  # the GenAI keys are kept
