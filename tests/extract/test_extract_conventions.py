"""Per-convention unit tests on spans made with the real OTel SDK (conventions.md §2.1-2.3)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, Tracer

from otel_toolscore.extract import (
    ExtractOptions,
    classify_start,
    extract_runs,
    read_span,
    record_from_readable,
)


class Rec:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer: Tracer = self.provider.get_tracer("test")

    def span(self, name: str, attrs: dict[str, Any] | None = None, *, error: bool = False) -> Any:
        return _Span(self.tracer, name, attrs or {}, error)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


class _Span:
    def __init__(self, tracer: Tracer, name: str, attrs: dict[str, Any], error: bool) -> None:
        self.cm = tracer.start_as_current_span(name, attributes=attrs, record_exception=False, set_status_on_exception=False)
        self.error = error

    def __enter__(self) -> Any:
        self.span = self.cm.__enter__()
        return self.span

    def __exit__(self, *exc: Any) -> None:
        if self.error:
            self.span.set_status(Status(StatusCode.ERROR, "boom"))
        self.cm.__exit__(None, None, None)


@pytest.fixture()
def rec() -> Iterator[Rec]:
    yield Rec()


def _msgs(*parts: dict[str, Any], role: str = "assistant") -> str:
    return json.dumps([{"role": role, "parts": list(parts)}])


def test_genai_agent_tools_requested_and_executed_deduplicated(rec: Rec) -> None:
    with rec.span("invoke_agent weather", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather",
                                           "gen_ai.conversation.id": "conv-1"}):
        with rec.span("chat m", {"gen_ai.operation.name": "chat",
                                 "gen_ai.input.messages": _msgs({"type": "text", "content": "Weather in Paris?"}, role="user"),
                                 "gen_ai.output.messages": _msgs({"type": "tool_call", "id": " c1", "name": "get_weather",
                                                                  "arguments": {"city": "Paris"}},
                                                                 {"type": "tool_call", "id": "c2", "name": "unknown_tool"}),
                                 "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "get_weather"}])}):
            pass
        with rec.span("execute_tool get_weather", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                                                   "gen_ai.tool.call.id": "c1", "gen_ai.tool.call.result": '{"t": 18}'}):
            pass
        with rec.span("chat m", {"gen_ai.operation.name": "chat",
                                 "gen_ai.input.messages": json.dumps([
                                     {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
                                     {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather"}]},
                                     {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "result": "18"}]}]),
                                 "gen_ai.output.messages": _msgs({"type": "text", "content": "18C"})}):
            pass
    [run] = extract_runs(rec.spans())
    assert run.agent_name == "weather" and run.conversation_id == "conv-1"
    assert [(c.name, c.source) for c in run.tool_calls] == [("get_weather", "span"), ("unknown_tool", "requested")]
    assert run.tool_calls[0].arguments == {"city": "Paris"}  # taken from the request, span had none
    assert run.tool_calls[0].call_id == "c1"  # leading blank stripped (registry example)
    assert run.user_query == "Weather in Paris?" and run.final_output == "18C"
    assert [t.name for t in run.available_tools] == ["get_weather"]
    assert run.run_id == run.root_span_id and run.trace_id and "genai" in run.conventions


def test_mastra_tool_definitions_as_list_of_names(rec: Rec) -> None:
    with rec.span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a",
                                     "mastra.span.type": "agent_run",
                                     "gen_ai.tool.definitions": json.dumps(["getWeather", "convert"])}):
        with rec.span("execute_tool getWeather", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "getWeather",
                                                  "gen_ai.tool.call.arguments": '{"city": "[REDACTED]"}'}):
            pass
    [run] = extract_runs(rec.spans())
    assert [t.name for t in run.available_tools] == ["getWeather", "convert"]
    assert run.tool_calls[0].arguments == {"city": "[REDACTED]"}
    assert "mastra" in run.conventions


def test_no_agent_span_local_root_bounds_run_and_content_off_reports_nothing(rec: Rec) -> None:
    with rec.span("my loop"):
        with rec.span("chat gpt", {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}):
            pass
    [run] = extract_runs(rec.spans())
    assert run.tool_calls == [] and run.user_query is None  # nothing guessed


def test_nested_agents_and_agent_as_tool(rec: Rec) -> None:
    with rec.span("invoke_agent boss", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "boss"}):
        with rec.span("execute_tool helper", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "helper"}):
            with rec.span("invoke_agent helper", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}):
                with rec.span("execute_tool lookup", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}):
                    pass
    boss, helper = extract_runs(rec.spans())
    assert [c.name for c in boss.tool_calls] == ["helper"]
    assert [c.name for c in helper.tool_calls] == ["lookup"]
    assert helper.parent_run_id == boss.run_id and boss.parent_run_id is None


def test_framework_calls_and_merged_span(rec: Rec) -> None:
    with rec.span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
        for name in ("get_x", "get_y"):
            with rec.span(f"execute_tool {name}", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}):
                pass
        with rec.span("execute_tool (merged)", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "(merged tools)"}):
            pass
        with rec.span("execute_tool final_result", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "final_result"}):
            pass
    [run] = extract_runs(rec.spans())
    assert [(c.name, c.kind) for c in run.tool_calls] == [("get_x", "tool"), ("get_y", "tool"), ("final_result", "framework")]
    assert [c.name for c in run.scored_calls()] == ["get_x", "get_y"]
    [run2] = extract_runs(rec.spans(), ExtractOptions(include_framework_calls=False))
    assert [c.name for c in run2.tool_calls] == ["get_x", "get_y"]


def test_error_status_and_pydantic_validation_failure(rec: Rec) -> None:
    with rec.span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
        with rec.span("execute_tool t", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
                                         "error.type": "ValueError"}, error=True):
            pass
        with rec.span("execute_tool t", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
                                         "pydantic_ai.tool.failure_stage": "validation"}, error=True):
            pass
    [run] = extract_runs(rec.spans())
    assert [(c.status, c.error_type) for c in run.tool_calls] == [("error", "ValueError"), ("error", "validation")]


def test_pydantic_v2_agent_run_and_running_tool(rec: Rec) -> None:
    with rec.span("agent run", {"agent_name": "bank", "final_result": "done",
                                "pydantic_ai.all_messages": json.dumps([
                                    {"role": "user", "parts": [{"type": "text", "content": "old"}]},
                                    {"role": "assistant", "parts": [{"type": "tool_call", "id": "h1", "name": "old_tool"}]},
                                    {"role": "user", "parts": [{"type": "text", "content": "balance?"}]}])}):
        with rec.span("running tool", {"gen_ai.tool.name": "balance", "gen_ai.tool.call.id": "x",
                                       "tool_arguments": '{"id": 1}', "tool_response": "100"}):
            pass
    [run] = extract_runs(rec.spans())
    assert run.agent_name == "bank" and run.final_output == "done" and run.user_query == "balance?"
    assert [(c.name, c.arguments) for c in run.tool_calls] == [("balance", {"id": 1})]  # history not counted


def test_openinference_tool_llm_and_bare_input(rec: Rec) -> None:
    with rec.span("weather_agent", {"openinference.span.kind": "AGENT", "agent.name": "weather_agent",
                                    "input.value": "Weather in Paris?", "session.id": "s1"}):
        with rec.span("llm", {"openinference.span.kind": "LLM",
                              "llm.output_messages.0.message.role": "assistant",
                              "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
                              "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
                              "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Paris"}',
                              "llm.tools.0.tool.json_schema": json.dumps({"type": "function", "function": {"name": "get_weather"}})}):
            pass
        with rec.span("get_weather", {"openinference.span.kind": "TOOL", "tool.name": "get_weather",
                                      "tool.parameters": '{"type": "object"}', "input.value": "Paris"}):
            pass
    [run] = extract_runs(rec.spans())
    assert run.agent_name == "weather_agent" and run.conversation_id == "s1" and run.user_query == "Weather in Paris?"
    [call] = run.tool_calls
    assert call.source == "span" and call.arguments == {"city": "Paris"}  # model's structured args beat bare value
    assert [t.name for t in run.available_tools] == ["get_weather"]


def test_traceloop_entity_input_and_legacy_completion(rec: Rec) -> None:
    with rec.span("flow.workflow", {"traceloop.span.kind": "workflow", "traceloop.entity.name": "flow"}):
        with rec.span("openai.chat", {"llm.request.type": "chat", "gen_ai.system": "openai",
                                      "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "hi",
                                      "gen_ai.completion.0.role": "assistant",
                                      "gen_ai.completion.0.tool_calls.0.id": "c9",
                                      "gen_ai.completion.0.tool_calls.0.name": "lookup",
                                      "gen_ai.completion.0.tool_calls.0.arguments": '{"q": 1}',
                                      "llm.request.functions.0.name": "lookup"}):
            pass
        with rec.span("lookup.tool", {"traceloop.span.kind": "tool", "traceloop.entity.name": "lookup",
                                      "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"q": 1}})}):
            pass
    [run] = extract_runs(rec.spans())
    assert run.agent_name == "flow" and run.user_query == "hi"
    assert [(c.name, c.arguments, c.call_id) for c in run.tool_calls] == [("lookup", {"q": 1}, "c9")]
    assert [t.name for t in run.available_tools] == ["lookup"]


def test_vercel_ai_v6_json_in_json_input_and_unknown_tool(rec: Rec) -> None:
    with rec.span("ai.generateText", {"ai.operationId": "ai.generateText", "ai.telemetry.functionId": "fn",
                                      "ai.prompt": json.dumps({"prompt": "Go"}), "ai.response.text": "ok"}):
        with rec.span("ai.generateText.doGenerate", {"ai.operationId": "ai.generateText.doGenerate",
                                                     "ai.response.toolCalls": json.dumps([
                                                         {"toolCallId": "1", "toolName": "nope", "input": '{"a": 1}'}])}):
            pass
    [run] = extract_runs(rec.spans())
    assert run.agent_name == "fn" and run.user_query == "Go" and run.final_output == "ok"
    assert [(c.name, c.arguments, c.source) for c in run.tool_calls] == [("nope", {"a": 1}, "requested")]


def test_adk_legacy_args_and_not_specified_id(rec: Rec) -> None:
    with rec.span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
        with rec.span("execute_tool t", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
                                         "gen_ai.tool.call.id": "<not specified>", "gen_ai.tool.type": "FunctionTool",
                                         "gcp.vertex.agent.tool_call_args": '{"x": 2}'}):
            pass
    [run] = extract_runs(rec.spans())
    [call] = run.tool_calls
    assert call.call_id is None and call.arguments == {"x": 2}


def test_span_events_pre_137(rec: Rec) -> None:
    with rec.span("chat", {"gen_ai.operation.name": "chat"}) as span:
        span.add_event("gen_ai.user.message", {"content": "hello"})
        span.add_event("gen_ai.choice", {"message": json.dumps({"tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})})
    [run] = extract_runs(rec.spans())
    assert run.user_query == "hello" and [c.name for c in run.tool_calls] == ["f"]


def test_content_off_option_keeps_names_only(rec: Rec) -> None:
    with rec.span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a",
                                     "gen_ai.input.messages": _msgs({"type": "text", "content": "secret"}, role="user")}):
        with rec.span("execute_tool t", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
                                         "gen_ai.tool.call.arguments": '{"pin": 1234}'}):
            pass
    [run] = extract_runs(rec.spans(), ExtractOptions(capture_content=False))
    assert run.user_query is None and run.tool_calls[0].arguments is None and run.tool_calls[0].name == "t"


def test_truncation(rec: Rec) -> None:
    with rec.span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
        with rec.span("execute_tool t", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
                                         "gen_ai.tool.call.arguments": json.dumps({"blob": "x" * 5000})}):
            pass
    [run] = extract_runs(rec.spans(), ExtractOptions(max_chars=100))
    args = run.tool_calls[0].arguments
    assert isinstance(args, str) and len(args) < 200 and args.endswith("[truncated]")


def test_read_span_rejects_plain_spans_and_classify_start(rec: Rec) -> None:
    with rec.span("GET /", {"http.method": "GET", "http.route": "/"}):
        pass
    assert read_span(record_from_readable(rec.spans()[0])) is None
    assert classify_start("invoke_agent x", {"gen_ai.operation.name": "invoke_agent"}) == "agent"
    assert classify_start("execute_tool (merged)", None) is None
    assert classify_start("x", {"openinference.span.kind": "TOOL"}) == "tool"
    assert classify_start("chat gpt-4o", {"gen_ai.operation.name": "chat"}) == "llm"
    assert classify_start("GET /", {"http.method": "GET"}) is None


def test_wrapper_and_duplicate_agent_spans_are_not_runs(rec: Rec) -> None:
    # openai-agents' unnamed "Agent workflow" wrapper, OpenLLMetry's invoke_agent X → X.workflow pair
    with rec.span("Agent workflow", {"gen_ai.operation.name": "invoke_agent"}):
        with rec.span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
            with rec.span("a.workflow", {"traceloop.span.kind": "workflow", "traceloop.entity.name": "a",
                                         "gen_ai.agent.name": "a"}):
                with rec.span("execute_tool t", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}):
                    pass
    [run] = extract_runs(rec.spans())
    assert run.agent_name == "a" and [c.name for c in run.tool_calls] == ["t"] and run.parent_run_id is None


def test_handoff_makes_the_target_a_child_run(rec: Rec) -> None:
    with rec.span("invoke_swarm", {"gen_ai.operation.name": "invoke_swarm"}):
        with rec.span("invoke_agent triage", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage"}):
            with rec.span("execute_tool handoff_to_agent", {"gen_ai.operation.name": "execute_tool",
                                                            "gen_ai.tool.name": "handoff_to_agent",
                                                            "gen_ai.tool.call.arguments": '{"agent_name": "w"}'}):
                pass
        with rec.span("invoke_agent w", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "w"}):
            with rec.span("execute_tool get", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get"}):
                pass
    triage, w = extract_runs(rec.spans())
    assert triage.tool_calls[0].kind == "framework"
    assert w.parent_run_id == triage.run_id


def test_tool_span_events_and_error_results(rec: Rec) -> None:
    with rec.span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
        with rec.span("execute_tool t", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}) as span:
            span.add_event("gen_ai.tool.message", {"content": '{"x": 1}', "id": "u1"})  # Strands: arguments
            span.add_event("gen_ai.choice", {"message": '[{"text": "ok"}]'})  # Strands: result
        with rec.span("execute_tool t", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
                                         "gen_ai.tool.call.result": '{"error": true, "message": "bad input"}'}):
            pass  # Mastra: invalid arguments answered with status OK and an error result
    [run] = extract_runs(rec.spans())
    first, second = run.tool_calls
    assert first.arguments == {"x": 1} and first.result == [{"text": "ok"}] and first.status == "ok"
    assert second.status == "error" and second.error_type == "tool_error"


def test_plain_loop_split_over_traces_is_stitched_by_call_ids(rec: Rec) -> None:
    first = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "q"}]}])
    second = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "q"}]},
                         {"role": "assistant", "parts": [{"type": "tool_call", "id": "k1", "name": "f"}]},
                         {"role": "tool", "parts": [{"type": "tool_call_response", "id": "k1", "response": "1"}]}])
    with rec.span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": first,
                             "gen_ai.output.messages": _msgs({"type": "tool_call", "id": "k1", "name": "f"})}):
        pass
    with rec.span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": second,
                             "gen_ai.output.messages": _msgs({"type": "text", "content": "done"})}):
        pass
    [run] = extract_runs(rec.spans())  # two traces, one run
    assert [c.name for c in run.tool_calls] == ["f"] and run.final_output == "done" and run.user_query == "q"


def test_requested_only_unknown_tool_is_an_error_when_tools_are_known(rec: Rec) -> None:
    with rec.span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a",
                                     "gen_ai.tool.definitions": '["known"]'}):
        with rec.span("chat m", {"gen_ai.operation.name": "chat",
                                 "gen_ai.output.messages": _msgs({"type": "tool_call", "id": "z", "name": "made_up"})}):
            pass
    [run] = extract_runs(rec.spans())
    assert [(c.name, c.status, c.error_type) for c in run.tool_calls] == [("made_up", "error", "unknown_tool")]


def test_long_content_is_parsed_at_read_time_not_held(rec: Rec) -> None:
    history = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "x" * 50_000}]}])
    with rec.span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": history}):
        pass
    options = ExtractOptions(max_chars=100)
    facts = read_span(record_from_readable(rec.spans()[0]), options)
    assert facts is not None and facts.materialized and not facts.deferred
    assert facts.user_query is not None and len(facts.user_query) < 200
    short = read_span(record_from_readable(rec.spans()[0]), ExtractOptions(max_deferred_chars=10**6))
    assert short is not None and not short.materialized and short.deferred  # small enough to defer
