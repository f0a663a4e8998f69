"""A run that called no tool, with content capture off: scored 0.0, or ``no_tool_calls_visible``.

With content off a model span no longer shows what the model answered, so "no call seen" can mean
"no call made" or "calls not recorded". Frameworks whose instrumentation records a tool span for every
tool it runs (docs/frameworks.md, "always a tool span") answer it: model spans and no tool span is no
call, scored 0.0 against an expected tool. A hand-written loop over an instrumented client runs its
tools unseen: it stays ``no_tool_calls_visible``. Recordings replayed live through the span processor,
exactly as the real packages made them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_toolscore import Expectation, ToolScoreSpanProcessor
from otel_toolscore.extract._frameworks import traces_every_tool_call
from otel_toolscore.online.processor import ScoredRun
from otel_toolscore.service._decode import decode_spans, parse_trace_request

CORPUS = Path(__file__).parents[1] / "corpus"

#: content-off recordings of a run that called nothing, and what a live processor must answer
RECORDINGS = [
    ("pydantic_ai/v2_nocontent_no_tool", "scored"),
    ("pydantic_ai/v5_nocontent_no_tool", "scored"),
    ("pydantic_ai/v6_nocontent_no_tool", "scored"),
    ("google_adk/v2_default/no_tool", "scored"),
    ("openai_v2/latest_nocontent_no_tool", "no_tool_calls_visible"),
    ("openinference_openai/nocontent_no_tool", "no_tool_calls_visible"),
    ("openllmetry_openai/attrs_nocontent_no_tool", "no_tool_calls_visible"),
]


def _processor(scored: list[ScoredRun], capture_content: bool) -> ToolScoreSpanProcessor:
    return ToolScoreSpanProcessor(
        None, expectations=[Expectation(name="weather", expected_tool="get_weather")], on_scored=scored.append,
        capture_content=capture_content, root_grace_ms=0, metrics=False, events=False,
    )


def _replay(path: Path, capture_content: bool) -> list[ScoredRun]:
    lines = [line.encode() for line in path.read_text().splitlines() if line.strip()]
    spans = [d.span for line in lines for d in decode_spans(parse_trace_request(line, "application/json"))]
    scored: list[ScoredRun] = []
    processor = _processor(scored, capture_content)
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        processor.on_start(span)  # type: ignore[arg-type]
    for span in sorted(spans, key=lambda s: (s.end_time or 0, -(s.start_time or 0))):
        processor.on_end(span)
    assert processor.force_flush(10_000)
    processor.shutdown()
    return scored


@pytest.mark.parametrize("capture_content", [True, False], ids=["content", "names-only"])
@pytest.mark.parametrize(("stem", "outcome"), RECORDINGS, ids=[r[0] for r in RECORDINGS])
def test_a_recorded_run_without_calls_and_without_content(stem: str, outcome: str, capture_content: bool) -> None:
    scored = _replay(CORPUS / f"{stem}.traces.jsonl", capture_content)
    assert scored, "no run was scored"
    for s in scored:
        assert not s.run.tool_calls
        assert s.outcome == outcome, s.run.conventions
        if outcome == "scored":
            assert s.verdict is not None and s.verdict.score == 0.0


@pytest.mark.parametrize(("conventions", "expected"), [
    (["genai", "pydantic-ai"], True),
    (["genai", "adk"], True),
    (["openinference", "adk"], True),
    (["genai", "strands"], True),
    (["openai-agents", "openinference"], True),
    (["langchain", "openllmetry"], True),
    (["langchain", "openinference"], True),
    (["llamaindex", "openinference"], True),
    (["crewai", "openinference"], True),
    (["vercel-ai"], True),
    (["genai", "mastra"], True),
    (["genai"], False),  # an instrumented client in a hand-written loop, or @ai-sdk/otel's GenAI spans
    (["openinference"], False),
    (["openllmetry"], False),
    (["openinference", "smolagents"], False),  # a managed agent's call has no tool span
    (["openinference", "smolagents", "langchain"], False),  # a LangChain tool in a smolagents agent
    ([], False),
])
def test_which_instrumentations_trace_every_tool_call(conventions: list[str], expected: bool) -> None:
    assert traces_every_tool_call(conventions) is expected


def _agent_run(scope: str, *, model_span: bool) -> list[ScoredRun]:
    """An agent span and (optionally) a model span that recorded no output (content off), no tool span."""
    scored: list[ScoredRun] = []
    processor = _processor(scored, capture_content=True)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer(scope)
    attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}
    with tracer.start_as_current_span("invoke_agent weather_agent", attributes=attrs):
        if model_span:
            with tracer.start_as_current_span("chat scripted-model", attributes={"gen_ai.operation.name": "chat"}):
                pass
    assert processor.force_flush(10_000)
    provider.shutdown()
    return scored


@pytest.mark.parametrize(("scope", "model_span", "outcome"), [
    ("pydantic-ai", True, "scored"),
    ("pydantic-ai", False, "no_tool_calls_visible"),  # nothing shows the agent even asked its model
    ("my.hand.written.loop", True, "no_tool_calls_visible"),
])
def test_model_spans_and_no_tool_span(scope: str, model_span: bool, outcome: str) -> None:
    [s] = _agent_run(scope, model_span=model_span)
    assert s.outcome == outcome
    if outcome == "scored":
        assert s.verdict is not None and s.verdict.score == 0.0
