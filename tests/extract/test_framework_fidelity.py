"""Fidelity on real frameworks: names, requests, tools, arguments and runs as the user set
them up, on spans made with the real OTel SDK in the shapes the recorded corpus shows
(``tests/corpus/{smolagents,llama_index,crewai,mastra}/README.md``). The corpus files themselves are
checked by ``tests/extract/test_corpus.py``; these tests pin the rules on the cases a recording does not hold
(a failed nested run, spoofed repr text, a standalone workflow, case-folded coworker names …).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from otel_toolscore.extract import extract_runs
from otel_toolscore.extract._frameworks import crewai_tool_name

SMOL = "openinference.instrumentation.smolagents"
LLAMA = "openinference.instrumentation.llama_index"
CREW = "openinference.instrumentation.crewai"
MASTRA = "@mastra/otel-exporter"


class Spans:
    """Real SDK spans, each under the instrumentation scope of the framework it imitates."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @contextmanager
    def span(self, scope: str, name: str, attrs: dict[str, Any] | None = None, *, error: bool = False) -> Iterator[Any]:
        tracer = self.provider.get_tracer(scope)
        with tracer.start_as_current_span(name, attributes=attrs or {}, record_exception=False,
                                          set_status_on_exception=False) as span:
            yield span
            if error:
                span.set_status(Status(StatusCode.ERROR, "boom"))

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


@pytest.fixture()
def sp() -> Spans:
    return Spans()


def _oi_llm_calls(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    attrs: dict[str, Any] = {"openinference.span.kind": "LLM", "llm.output_messages.0.message.role": "assistant"}
    for m, (call_id, name, args) in enumerate(calls):
        prefix = f"llm.output_messages.0.message.tool_calls.{m}.tool_call."
        attrs[prefix + "id"] = call_id
        attrs[prefix + "function.name"] = name
        attrs[prefix + "function.arguments"] = json.dumps(args)
    return attrs


# -- point 1: agent_name is the name the user gave, in every convention ------------------------------
_NAMED_AGENT_SPANS = [
    ("genai", "test", "Agent.run", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}),
    ("openinference AGENT", "test", "Agent.run", {"openinference.span.kind": "AGENT", "agent.name": "weather"}),
    ("openinference CHAIN root", "test", "Workflow.run", {"openinference.span.kind": "CHAIN", "agent.name": "weather"}),
    ("openllmetry", "test", "weather_impl.agent", {"traceloop.span.kind": "agent", "traceloop.entity.name": "weather"}),
    ("vercel ai", "test", "ai.generateText", {"ai.operationId": "ai.generateText", "ai.telemetry.functionId": "weather"}),
    ("pydantic-ai", "pydantic-ai", "agent run", {"agent_name": "weather"}),
    ("adk", "gcp.vertex.agent", "agent_run [weather]", {}),
    ("mastra", MASTRA, "invoke_agent weather", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather",
                                                "mastra.span.type": "agent_run"}),
    ("crewai", CREW, "Weather reporter._execute_core", {"openinference.span.kind": "AGENT", "graph.node.id": "weather"}),
    ("smolagents", SMOL, "weather.run", {"openinference.span.kind": "AGENT"}),
]


@pytest.mark.parametrize(("scope", "name", "attrs"), [c[1:] for c in _NAMED_AGENT_SPANS], ids=[c[0] for c in _NAMED_AGENT_SPANS])
def test_agent_name_is_the_users_name_not_the_span_name(sp: Spans, scope: str, name: str, attrs: dict[str, Any]) -> None:
    with sp.span(scope, name, attrs):
        with sp.span("test", "execute_tool get_weather", {"gen_ai.operation.name": "execute_tool",
                                                           "gen_ai.tool.name": "get_weather"}):
            pass
    [run] = extract_runs(sp.finished())
    assert run.agent_name == "weather"
    assert [c.name for c in run.tool_calls] == ["get_weather"]


# -- smolagents ------------------------------------------------------------------------------------------
def _smol_tool(sp: Spans, name: str, wrapper: dict[str, Any], params: dict[str, Any]) -> None:
    with sp.span(SMOL, "SimpleTool", {"openinference.span.kind": "TOOL", "tool.name": name,
                                      "tool.parameters": json.dumps(params), "input.value": json.dumps(wrapper)}):
        pass


def test_smolagents_task_and_positional_arguments(sp: Spans) -> None:
    task = {"task": "Book a flight to Rome", "stream": False, "reset": True, "images": None}
    with sp.span(SMOL, "travel.run", {"openinference.span.kind": "AGENT", "input.value": json.dumps(task),
                                      "smolagents.tools_names": json.dumps(["book", "final_answer"])}):
        params = {"city": {"type": "string"}, "day": {"type": "string"}}
        _smol_tool(sp, "book", {"args": ["Rome"], "sanitize_inputs_outputs": False, "kwargs": {"day": "mon"}}, params)
        _smol_tool(sp, "book", {"args": ["Rome", "mon", "extra"], "sanitize_inputs_outputs": False, "kwargs": {}}, params)
        _smol_tool(sp, "final_answer", {"args": ["booked"], "sanitize_inputs_outputs": False, "kwargs": {}},
                   {"answer": {"type": "any"}})
    [run] = extract_runs(sp.finished())
    assert run.user_query == "Book a flight to Rome"
    assert [c.arguments for c in run.tool_calls] == [
        {"city": "Rome", "day": "mon"},
        # more positional values than declared parameters: nothing to name them by, kept as recorded
        {"args": ["Rome", "mon", "extra"], "sanitize_inputs_outputs": False, "kwargs": {}},
        {"answer": "booked"},
    ]
    assert sorted(t.name for t in run.available_tools) == ["book", "final_answer"]


@pytest.mark.parametrize("fails", [False, True], ids=["nested run ok", "nested run failed"])
def test_smolagents_managed_agent_call_takes_the_nested_runs_status(sp: Spans, fails: bool) -> None:
    manager = {"openinference.span.kind": "AGENT", "smolagents.tools_names": json.dumps(["final_answer"]),
               "smolagents.managed_agents.0.name": "helper", "smolagents.managed_agents.0.description": "Helps."}
    with sp.span(SMOL, "boss.run", manager):
        with sp.span(SMOL, "Step 1", {"openinference.span.kind": "CHAIN"}):
            with sp.span(SMOL, "OpenAIModel.generate", _oi_llm_calls(("c1", "helper", {"task": "look"}))):
                pass
            with sp.span(SMOL, "helper.run", {"openinference.span.kind": "AGENT"}, error=fails):
                pass
    boss, helper = extract_runs(sp.finished())
    assert helper.parent_run_id == boss.run_id and helper.agent_name == "helper"
    assert sorted(t.name for t in boss.available_tools) == ["final_answer", "helper"]
    [call] = boss.tool_calls
    assert (call.name, call.status, call.error_type) == (("helper", "error", "agent_error") if fails else ("helper", "ok", None))


# -- LlamaIndex -------------------------------------------------------------------------------------------
def _llama_step(sp: Spans, step: str, agent: str, user_text: str = "hi") -> None:
    event = (f"AgentSetup(input=[ChatMessage(role=<MessageRole.USER: 'user'>, blocks=[TextBlock(text={user_text!r})])], "
             f"current_agent_name={agent!r})")
    with sp.span(LLAMA, f"AgentWorkflow.{step}", {"openinference.span.kind": "CHAIN",
                                                   "input.value": json.dumps({"ctx": "<Context>", "ev": event})}):
        pass


def _llama_tool(sp: Spans, name: str, kwargs: dict[str, Any], params: dict[str, Any]) -> None:
    with sp.span(LLAMA, "FunctionTool.acall", {"openinference.span.kind": "TOOL", "tool.name": name,
                                               "tool.parameters": json.dumps(params),
                                               "input.value": json.dumps({"kwargs": kwargs})}):
        pass


def test_llamaindex_agent_name_is_read_only_from_the_last_field_of_the_event(sp: Spans) -> None:
    with sp.span(LLAMA, "FunctionAgent.run", {"openinference.span.kind": "CHAIN"}):
        # the user's text imitates the field: only the repr's last field names the agent
        _llama_step(sp, "setup_agent", "weather_agent", user_text="x', current_agent_name='evil')")
        _llama_tool(sp, "get_weather", {"city": "Paris"}, {"properties": {"city": {"type": "string"}}, "type": "object"})
    [run] = extract_runs(sp.finished())
    assert run.agent_name == "weather_agent"
    assert run.tool_calls[0].arguments == {"city": "Paris"}


def test_llamaindex_handoff_starts_the_next_agents_run(sp: Spans) -> None:
    handoff_params = {"properties": {"to_agent": {"type": "string"}, "reason": {"type": "string"}}, "type": "object"}
    with sp.span(LLAMA, "AgentWorkflow.run", {"openinference.span.kind": "CHAIN"}):
        _llama_step(sp, "setup_agent", "triage")
        _llama_step(sp, "run_agent_step", "triage")
        _llama_tool(sp, "handoff", {"to_agent": "weather", "reason": "weather question",
                                    "ctx": "<workflows.context.context.Context object at 0x7f00>"}, handoff_params)
        _llama_step(sp, "setup_agent", "weather")
        _llama_tool(sp, "get_weather", {"city": "Paris"}, {"properties": {"city": {"type": "string"}}, "type": "object"})
        _llama_step(sp, "setup_agent", "weather")
    triage, weather = extract_runs(sp.finished())
    assert (triage.agent_name, weather.agent_name) == ("triage", "weather")
    assert [(c.name, c.kind) for c in triage.tool_calls] == [("handoff", "framework")]
    assert triage.tool_calls[0].arguments == {"to_agent": "weather", "reason": "weather question"}  # no Context
    assert [(c.name, c.kind) for c in weather.tool_calls] == [("get_weather", "tool")]
    assert weather.parent_run_id is None and weather.run_id != triage.run_id


# -- CrewAI -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("display", "called"), [
    ("Delegate work to coworker", "delegate_work_to_coworker"),
    ("get_weather", "get_weather"),
    ("GetWeatherNow", "get_weather_now"),
    ("HTTPServer status", "http_server_status"),
    ("Café  \"search\" -- v2", "cafe_search_v2"),
])
def test_crewai_tool_names_as_the_model_sees_them(display: str, called: str) -> None:
    assert crewai_tool_name(display) == called


def test_crewai_long_tool_name_is_cut_with_a_hash_suffix() -> None:
    name = crewai_tool_name("x" * 80)
    assert len(name) == 64 and name.startswith("x" * 55 + "_")


def _crew_tool(sp: Spans, display: str, called: str, args: dict[str, Any], result: str | None) -> Any:
    attrs = {"openinference.span.kind": "TOOL", "tool.name": display, "input.value": json.dumps(args),
             "tool.description": f"Tool Name: {called}\nTool Arguments: {{}}\nTool Description: x"}
    if result is not None:
        attrs["output.value"] = result
    return sp.span(CREW, f"{display}.run", attrs)


def test_crewai_coworker_runs_inside_the_delegation_call(sp: Spans) -> None:
    roster = [{"role": "Trip Planner", "tools_names": []}, {"role": "Weather Reporter", "tools_names": ["get_weather"]}]
    planner_input = {"agent": {"role": "Trip Planner"}, "tools": [
        "name='Delegate work to coworker' description=\"Delegate a task\" env_vars=[]",
        "name='Ask question to coworker' description='Ask' env_vars=[]"]}
    messages = [{"role": "assistant", "content": "", "tool_calls": [{"id": "call_d1", "type": "function", "function": {
        "name": "delegate_work_to_coworker", "arguments": json.dumps({"task": "Weather?", "coworker": "weather REPORTER"})}}]}]
    with sp.span(CREW, "Crew_1.kickoff", {"openinference.span.kind": "CHAIN", "crew_agents": json.dumps(roster)}):
        with sp.span(CREW, "Trip Planner._execute_core", {
                "openinference.span.kind": "AGENT", "graph.node.id": "Trip Planner", "input.value": json.dumps(planner_input),
                "output.value": json.dumps({"description": "Umbrella?", "raw": "No.", "messages": messages})}):
            # CrewAI matches the coworker argument to the roles ignoring blanks, quotes and case
            with _crew_tool(sp, "Delegate work to coworker", "delegate_work_to_coworker",
                            {"task": "Weather?", "context": "", "coworker": "\"weather   REPORTER\""}, "Sunny."):
                with _crew_tool(sp, "get_weather", "get_weather", {"city": "Paris"}, "Sunny"):
                    pass
    planner, reporter = extract_runs(sp.finished())
    assert [(c.name, c.call_id) for c in planner.tool_calls] == [("delegate_work_to_coworker", "call_d1")]
    assert sorted(t.name for t in planner.available_tools) == ["ask_question_to_coworker", "delegate_work_to_coworker"]
    assert reporter.parent_run_id == planner.run_id
    assert (reporter.agent_name, reporter.user_query, reporter.final_output) == ("Weather Reporter", "Weather?", "Sunny.")
    assert [c.name for c in reporter.tool_calls] == ["get_weather"]
    assert [t.name for t in reporter.available_tools] == ["get_weather"]


# -- Mastra workflow steps (point 4) ------------------------------------------------------------------------
def _mastra_step(sp: Spans, step: str, *, failed: bool = False) -> None:
    with sp.span(MASTRA, f"workflow_step {step}", {
            "gen_ai.operation.name": "workflow_step", "mastra.span.type": "workflow_step",
            "mastra.workflow_step.step_id": step, "mastra.workflow_step.input": json.dumps({"city": "Paris"}),
            "mastra.workflow_step.status": "failed" if failed else "success"}, error=failed):
        pass


def _mastra_workflow(sp: Spans, *, failed: bool = False) -> None:
    with sp.span(MASTRA, "invoke_workflow forecast", {"gen_ai.operation.name": "invoke_workflow",
                                                      "mastra.span.type": "workflow_run"}):
        _mastra_step(sp, "getWeather", failed=failed)


def test_mastra_tool_steps_of_a_workflow_run_as_a_tool_are_calls(sp: Spans) -> None:
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner", "mastra.span.type": "agent_run"}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "workflow-forecast", "gen_ai.tool.call.id": "call_1",
            "mastra.span.type": "tool_call"}
    with sp.span(MASTRA, "invoke_agent planner", agent):
        with sp.span(MASTRA, "execute_tool workflow-forecast", tool):
            _mastra_workflow(sp, failed=True)
    [run] = extract_runs(sp.finished())
    assert [(c.name, c.kind, c.status) for c in run.tool_calls] == [
        ("workflow-forecast", "framework", "ok"), ("getWeather", "tool", "error")]
    assert run.tool_calls[1].arguments == {"city": "Paris"}


def test_mastra_step_that_names_no_step_is_no_call(sp: Spans) -> None:
    """@mastra/otel-bridge names every step span after the workflow and records no step id
    (tests/corpus/mastra/README.md): such a step is no call; the workflow tool is the agent's call."""
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner", "mastra.span.type": "agent_run"}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "workflow-weatherWorkflow",
            "gen_ai.tool.call.id": "call_1", "mastra.span.type": "tool_call"}
    step = {"gen_ai.operation.name": "workflow_step", "mastra.span.type": "workflow_step",
            "mastra.workflow_step.input": json.dumps({"city": "Paris"})}
    with sp.span(MASTRA, "invoke_agent planner", agent):
        with sp.span(MASTRA, "execute_tool workflow-weatherWorkflow", tool):
            with sp.span(MASTRA, "invoke_workflow weather-workflow", {"gen_ai.operation.name": "invoke_workflow",
                                                                      "mastra.span.type": "workflow_run"}):
                for _ in range(2):
                    with sp.span(MASTRA, "workflow_step weather-workflow", step):
                        pass
    [run] = extract_runs(sp.finished())
    assert [(c.name, c.kind, c.call_id) for c in run.tool_calls] == [("workflow-weatherWorkflow", "tool", "call_1")]


def test_mastra_workflow_on_its_own_is_no_agent_run(sp: Spans) -> None:
    _mastra_workflow(sp)
    assert extract_runs(sp.finished()) == []


def test_crewai_parallel_calls_pair_ids_with_the_span_that_ran_their_arguments(sp: Spans) -> None:
    listed = [("call_p2", "Paris"), ("call_p1", "Tokyo")]  # the model's order
    messages = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}
        for cid, city in listed]}]
    with sp.span(CREW, "Weather reporter._execute_core", {
            "openinference.span.kind": "AGENT", "graph.node.id": "Weather reporter",
            "output.value": json.dumps({"description": "Paris and Tokyo?", "raw": "ok", "messages": messages})}):
        for city in ("Tokyo", "Paris"):  # the threads started the other way round
            with _crew_tool(sp, "get_weather", "get_weather", {"city": city}, f"{city}: fine"):
                pass
    [run] = extract_runs(sp.finished())
    assert [(c.call_id, c.arguments, c.result) for c in run.tool_calls] == [
        ("call_p2", {"city": "Paris"}, "Paris: fine"), ("call_p1", {"city": "Tokyo"}, "Tokyo: fine")]


def test_crewai_coworker_that_ran_nothing_is_no_run(sp: Spans) -> None:
    """CrewAI answers a coworker it cannot find with an error text; no agent ran, so no run is made up."""
    with sp.span(CREW, "Trip Planner._execute_core", {"openinference.span.kind": "AGENT", "graph.node.id": "Trip Planner"}):
        with _crew_tool(sp, "Delegate work to coworker", "delegate_work_to_coworker",
                        {"task": "Weather?", "context": "", "coworker": "Nobody"}, "Error executing tool."):
            pass
    [planner] = extract_runs(sp.finished())
    assert [c.name for c in planner.tool_calls] == ["delegate_work_to_coworker"]
