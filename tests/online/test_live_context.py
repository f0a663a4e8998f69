"""The application's word reaches its run whatever the root looks like at start.

Spans are made by the real SDK exactly as the frameworks make them: LangGraph under OpenInference
(a root ``weather_agent`` that starts with no attributes, its kind set later), LlamaIndex
(``FunctionAgent.run``), GenAI roots whose attributes arrive after start, the README's hand-written
loop wrapped in one span, a web request's server span around the agent, nested agents, and baggage
from a remote parent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import baggage, context, trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from otel_toolscore import Expectation, expect
from otel_toolscore.scripted import run_scripted_agent
from tests.online.test_processor import Pipeline, make_pipeline


@pytest.fixture
def pipe() -> Iterator[Pipeline]:
    p = make_pipeline(expectations=[Expectation(agent_name="ruled_agent", expected_tool="from_rules")])
    yield p
    p.provider.shutdown()


def _score(p: Pipeline, name: str) -> dict[str, Any]:
    p.flush()
    (span,) = [s for s in p.spans.get_finished_spans() if s.name == name]
    return dict(span.attributes or {})


def _oi_tool(tracer: Any, name: str) -> None:
    with tracer.start_as_current_span(name) as tool:
        tool.set_attribute("openinference.span.kind", "TOOL")
        tool.set_attribute("tool.name", name)
        tool.set_attribute("input.value", json.dumps({"city": "Paris"}))


def test_langgraph_root_that_starts_bare(pipe: Pipeline) -> None:
    """OpenInference's LangGraph root: no attributes at start, CHAIN kind set later, tools below."""
    tracer = pipe.tracer
    with expect(expected_tool="get_weather"):
        with tracer.start_as_current_span("weather_agent") as root:
            with tracer.start_as_current_span("agent") as step:
                step.set_attribute("openinference.span.kind", "CHAIN")
            with tracer.start_as_current_span("tools") as tools:
                tools.set_attribute("openinference.span.kind", "CHAIN")
                _oi_tool(tracer, "get_weather")
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", json.dumps({"messages": [["user", "Weather in Paris?"]]}))
    attrs = _score(pipe, "weather_agent")
    assert attrs["toolscore.code.expected_tool"] == "get_weather"
    assert attrs["toolscore.code.score"] == 1.0
    assert pipe.counter("toolscore.runs", **{"toolscore.outcome": "no_expectation"}) == 0


def _graph(tracer: Any, name: str, tool: str) -> None:
    """A LangGraph graph as OpenInference records it: a root that starts bare, CHAIN set later."""
    with tracer.start_as_current_span(name) as graph:
        with tracer.start_as_current_span("tools") as tools:
            tools.set_attribute("openinference.span.kind", "CHAIN")
            _oi_tool(tracer, tool)
        graph.set_attribute("openinference.span.kind", "CHAIN")


@pytest.mark.parametrize("parent_kind", ["TOOL", "CHAIN"])
def test_a_graph_under_a_tool_span_is_a_run_of_its_own(parent_kind: str) -> None:
    """LangGraph's agent-as-tool: a graph whose root is a child of a TOOL span roots a run of its own
    (the core decides that when the batch is settled, from the parent's facts); under any other
    span it is a step of the enclosing run."""
    p = make_pipeline(
        expectations=[
            Expectation(agent_name="supervisor", expected_tool="translate"),
            Expectation(agent_name="translator", expected_tool="lookup_word"),
        ]
    )
    try:
        tracer = p.tracer
        with tracer.start_as_current_span("supervisor") as root:
            with tracer.start_as_current_span("translate") as tool:
                tool.set_attribute("openinference.span.kind", parent_kind)
                if parent_kind == "TOOL":
                    tool.set_attribute("tool.name", "translate")
                _graph(tracer, "translator", "lookup_word")
            root.set_attribute("openinference.span.kind", "CHAIN")
        nested = _score(p, "translator")
        outer = _score(p, "supervisor")
        if parent_kind == "TOOL":
            assert nested["toolscore.code.expected_tool"] == "lookup_word"
            assert nested["toolscore.code.score"] == 1.0
            assert list(outer["toolscore.code.actual_tools"]) == ["translate"]
            assert outer["toolscore.code.score"] == 1.0
        else:
            assert not any(k.startswith("toolscore.") for k in nested)
            assert list(outer["toolscore.code.actual_tools"]) == ["lookup_word"]
            assert outer["toolscore.code.score"] == 0.0
    finally:
        p.provider.shutdown()


def test_llamaindex_function_agent_root(pipe: Pipeline) -> None:
    tracer = pipe.tracer
    with expect(expected_tool_order=["search", "get_weather"]):
        with tracer.start_as_current_span("FunctionAgent.run") as root:
            _oi_tool(tracer, "search")
            _oi_tool(tracer, "get_weather")
            root.set_attribute("openinference.span.kind", "AGENT")
    attrs = _score(pipe, "FunctionAgent.run")
    assert list(attrs["toolscore.code.expected_tool_order"]) == ["search", "get_weather"]
    assert attrs["toolscore.code.score"] == 1.0


def test_genai_root_whose_attributes_arrive_after_start(pipe: Pipeline) -> None:
    tracer = pipe.tracer
    with expect(expected_tool="lookup"):
        with tracer.start_as_current_span("invoke_agent helper") as root:
            with tracer.start_as_current_span("execute_tool lookup") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "lookup")
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            root.set_attribute("gen_ai.agent.name", "helper")
    attrs = _score(pipe, "invoke_agent helper")
    assert attrs["toolscore.code.expected_tool"] == "lookup"
    assert attrs["toolscore.code.score"] == 1.0


def _chat(tracer: Any, *calls: str) -> None:
    with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.CLIENT) as chat:
        chat.set_attribute("gen_ai.operation.name", "chat")
        parts = [{"type": "tool_call", "id": f"c_{name}", "name": name, "arguments": {}} for name in calls]
        chat.set_attribute(
            "gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}])
        )


@pytest.mark.parametrize("block", ["around the span", "inside the span"])
def test_faq_wrap_the_loop_in_one_span(pipe: Pipeline, block: str) -> None:
    """README FAQ: a hand-written loop wrapped in one span is one run; ``expect()`` applies to it
    whether the block encloses the span or is opened inside it."""
    tracer = pipe.tracer
    if block == "around the span":
        with expect(expected_tool_order=["search", "fetch"]), tracer.start_as_current_span("my_loop"):
            _chat(tracer, "search")
            _chat(tracer, "fetch")
    else:
        with tracer.start_as_current_span("my_loop"), expect(expected_tool_order=["search", "fetch"]):
            _chat(tracer, "search")
            _chat(tracer, "fetch")
    attrs = _score(pipe, "my_loop")
    assert list(attrs["toolscore.code.expected_tool_order"]) == ["search", "fetch"]
    assert attrs["toolscore.code.score"] == 1.0


def test_server_span_started_before_the_block(pipe: Pipeline) -> None:
    """A web framework's server span (the local root) starts before the handler opens ``expect()``:
    the agent run started inside the block gets it."""
    tracer = pipe.tracer
    with tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER):
        with expect(expected_tool="get_weather"):
            run_scripted_agent(tracer, "web_agent", "q", ["get_weather"])
    attrs = _score(pipe, "invoke_agent web_agent")
    assert attrs["toolscore.code.expected_tool"] == "get_weather"
    assert attrs["toolscore.code.score"] == 1.0


def test_expect_applies_to_the_top_level_run_of_its_block(pipe: Pipeline) -> None:
    """The outer run's block does not score the nested agent (rules do); a block opened around the
    nested agent's call scores that agent."""
    tracer = pipe.tracer
    outer = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "outer"}
    ask = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ask"}
    with expect(expected_tool="ask"), tracer.start_as_current_span("invoke_agent outer", attributes=outer):
        with tracer.start_as_current_span("execute_tool ask", attributes=ask):
            run_scripted_agent(tracer, "ruled_agent", "q", ["from_rules"])
    with tracer.start_as_current_span("invoke_agent outer", attributes=outer):
        with tracer.start_as_current_span("execute_tool ask", attributes=ask), expect(expected_tool="inner_tool"):
            run_scripted_agent(tracer, "inner", "q", ["inner_tool"])
    pipe.flush()
    roots = sorted(
        (s for s in pipe.spans.get_finished_spans() if s.name.startswith("invoke_agent")), key=lambda s: s.start_time
    )
    by = [(s.name, dict(s.attributes or {})) for s in roots]
    assert by[0][0] == "invoke_agent outer" and by[0][1]["toolscore.code.expected_tool"] == "ask"
    assert by[1][0] == "invoke_agent ruled_agent" and by[1][1]["toolscore.code.expected_tool"] == "from_rules"
    assert by[2][0] == "invoke_agent outer" and "toolscore.code.score" not in by[2][1]  # no word, no rule
    assert by[3][0] == "invoke_agent inner" and by[3][1]["toolscore.code.expected_tool"] == "inner_tool"


def test_baggage_from_a_remote_parent(pipe: Pipeline) -> None:
    """Another service set ``toolscore.expect.*`` baggage; the agent runs under a remote parent."""
    remote = SpanContext(0x1234, 0x99, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    ctx = trace.set_span_in_context(NonRecordingSpan(remote))
    ctx = baggage.set_baggage("toolscore.expect.tool_order", "a,b", context=ctx)
    token = context.attach(ctx)
    try:
        with pipe.tracer.start_as_current_span("handle", kind=SpanKind.SERVER):
            run_scripted_agent(pipe.tracer, "any_agent", "q", ["a", "b"])
    finally:
        context.detach(token)
    attrs = _score(pipe, "invoke_agent any_agent")
    assert list(attrs["toolscore.code.expected_tool_order"]) == ["a", "b"]
    assert attrs["toolscore.code.score"] == 1.0


def test_precedence_attributes_then_expect_then_baggage(pipe: Pipeline) -> None:
    token = context.attach(baggage.set_baggage("toolscore.expect.tool", "from_baggage"))
    try:
        with expect(expected_tool="from_expect"):
            run_scripted_agent(pipe.tracer, "a1", "q", ["x"], attributes={"toolscore.expect.tool": "from_attr"})
            run_scripted_agent(pipe.tracer, "a2", "q", ["x"])
        run_scripted_agent(pipe.tracer, "a3", "q", ["x"])
    finally:
        context.detach(token)
    assert _score(pipe, "invoke_agent a1")["toolscore.code.expected_tool"] == "from_attr"
    assert _score(pipe, "invoke_agent a2")["toolscore.code.expected_tool"] == "from_expect"
    assert _score(pipe, "invoke_agent a3")["toolscore.code.expected_tool"] == "from_baggage"


def test_expectation_is_read_at_start_not_at_end(pipe: Pipeline) -> None:
    """The block closes before the root ends (a framework ending its span later): the word given where
    the run started still applies."""
    tracer = pipe.tracer
    with expect(expected_tool="t"):
        root = tracer.start_span("weather_agent")
    ctx = trace.set_span_in_context(root)
    tool = tracer.start_span("t", context=ctx)
    tool.set_attribute("openinference.span.kind", "TOOL")
    tool.set_attribute("tool.name", "t")
    tool.end()
    root.set_attribute("openinference.span.kind", "AGENT")
    root.end()
    attrs = _score(pipe, "weather_agent")
    assert attrs["toolscore.code.expected_tool"] == "t"
