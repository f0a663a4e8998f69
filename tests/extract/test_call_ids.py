"""Executed calls are matched to the model's requested calls by the tool-call ids wherever the
instrumentation records them (issue: parallel calls whose tool spans start out of request order).

Real SDK spans in the shapes ``tests/corpus/langgraph/README.md`` records (``parallel_request_order``):
one model output requests ``get_weather(Paris)``, ``get_weather(Tokyo)``, ``get_calendar(Monday)``; the
tool spans start Tokyo, calendar, Paris. Each id source is tried on its own, with the extractor's
content capture on and off (ids and names are not content): each call must be paired with the span
that ran it. The recordings themselves are checked by ``tests/extract/test_corpus.py`` and, live against
offline with the span each call was paired with, by ``tests/online/test_processor_corpus.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore.extract import ExtractOptions, extract_runs

OLL = "opentelemetry.instrumentation.langchain"
OI = "openinference.instrumentation.langchain"
REQUESTED = [("call_1", "get_weather", {"city": "Paris"}), ("call_2", "get_weather", {"city": "Tokyo"}),
             ("call_3", "get_calendar", {"day": "Monday"})]
STARTED = [REQUESTED[1], REQUESTED[2], REQUESTED[0]]  # the order the tool spans start in


class Spans:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.ran: dict[str, str] = {}  # call id -> span id (hex) of the tool span that ran it

    @contextmanager
    def span(self, scope: str, name: str, attrs: dict[str, Any]) -> Iterator[Any]:
        with self.provider.get_tracer(scope).start_as_current_span(name, attributes=attrs) as span:
            yield span


def _tool_message_oll(call_id: str, content: str, name: str) -> str:
    return json.dumps({"output": {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"],
                                  "kwargs": {"content": content, "type": "tool", "name": name, "tool_call_id": call_id,
                                             "status": "success"}}})


def _tool_message_oi(call_id: str, content: str, name: str) -> str:
    return json.dumps({"type": "tool", "data": {"content": content, "type": "tool", "name": name, "id": None,
                                                "tool_call_id": call_id, "status": "success"}})


def _context(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"__type": "tool_call_with_context", "tool_call": {"name": name, "args": args, "id": call_id, "type": "tool_call"},
            "state": {"messages": []}}


def _openllmetry(sp: Spans, source: str) -> None:
    """OpenLLMetry + LangGraph: ``invoke_agent`` → chat span → one ``execute_task tools`` per call."""
    parts = [{"type": "tool_call", "id": cid, "name": name, "arguments": args} for cid, name, args in REQUESTED]
    with sp.span(OLL, "invoke_agent assistant_agent", {"gen_ai.operation.name": "invoke_agent",
                                                       "gen_ai.agent.name": "assistant_agent"}):
        with sp.span(OLL, "ScriptedChatModel.chat", {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": parts}])}):
            pass
        for cid, name, args in STARTED:
            task = {"traceloop.span.kind": "task", "traceloop.entity.name": "tools", "gen_ai.operation.name": "execute_task"}
            if source == "task input":
                task["traceloop.entity.input"] = json.dumps({"inputs": _context(cid, name, args)})
            with sp.span(OLL, "execute_task tools", task):
                # an argument record the model's arguments cannot be matched with (an injected argument)
                tool = {"traceloop.span.kind": "tool", "traceloop.entity.name": name, "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name, "gen_ai.tool.call.arguments": json.dumps(
                            {"input_str": repr({**args, "state": "<injected>"}), "tags": [], "metadata": {}})}
                if source == "tool result":
                    tool["gen_ai.tool.call.result"] = _tool_message_oll(cid, f"{name} {args}", name)
                with sp.span(OLL, f"execute_tool {name}", tool) as s:
                    sp.ran[cid] = format(s.get_span_context().span_id, "016x")


def _openinference(sp: Spans, source: str) -> None:
    """OpenInference + LangGraph: the graph root (AGENT) → LLM span → ``tools`` CHAIN span(s) → TOOL spans."""
    with sp.span(OI, "assistant_agent", {"openinference.span.kind": "AGENT"}):
        llm: dict[str, Any] = {"openinference.span.kind": "LLM", "llm.output_messages.0.message.role": "assistant"}
        for m, (cid, name, args) in enumerate(REQUESTED):
            prefix = f"llm.output_messages.0.message.tool_calls.{m}.tool_call."
            llm |= {prefix + "id": cid, prefix + "function.name": name, prefix + "function.arguments": json.dumps(args)}
        with sp.span(OI, "ScriptedChatModel", llm):
            pass
        # "tool output": one ``tools`` node runs every call (ToolNode without Send): only the tools' own
        # results name the calls; "task input": one ``tools`` task per call, results not recorded
        with sp.span(OI, "tools", {"openinference.span.kind": "CHAIN", "input.value": json.dumps({"messages": []})}) if (
                source == "tool output") else _nothing():
            for cid, name, args in STARTED:
                with sp.span(OI, "tools", {"openinference.span.kind": "CHAIN", "input.value": json.dumps(
                        _context(cid, name, args))}) if source == "task input" else _nothing():
                    tool = {"openinference.span.kind": "TOOL", "tool.name": name, "input.value": next(iter(args.values()))}
                    if source == "tool output":
                        tool["output.value"] = _tool_message_oi(cid, f"{name} {args}", name)
                    with sp.span(OI, name, tool) as s:
                        sp.ran[cid] = format(s.get_span_context().span_id, "016x")


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


CASES = [("openllmetry", "tool result"), ("openllmetry", "task input"), ("openinference", "tool output"),
         ("openinference", "task input")]


@pytest.mark.parametrize("capture", [True, False], ids=["content", "names-only"])
@pytest.mark.parametrize(("instrumentation", "source"), CASES, ids=[f"{i}: {s}" for i, s in CASES])
def test_each_call_is_paired_with_the_span_that_ran_it(instrumentation: str, source: str, capture: bool) -> None:
    sp = Spans()
    (_openllmetry if instrumentation == "openllmetry" else _openinference)(sp, source)
    [run] = extract_runs(sp.exporter.get_finished_spans(), options=ExtractOptions(capture_content=capture))
    assert [(c.name, c.call_id) for c in run.tool_calls] == [(name, cid) for cid, name, _ in REQUESTED]  # the model's order
    assert [c.span_id for c in run.tool_calls] == [sp.ran[cid] for cid, _, _ in REQUESTED]
    if capture:
        assert [c.arguments for c in run.tool_calls][2] in ({"day": "Monday"}, {"day": "Monday", "state": "<injected>"})


@pytest.mark.parametrize("result", [
    json.dumps({"output": {"content": "x", "tool_call_id": "call_2"}}),  # no serialized ToolMessage
    json.dumps({"output": {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
                           "kwargs": {"tool_call_id": "call_2"}}}),
    json.dumps({"type": "ai", "data": {"tool_call_id": "call_2"}}),
    "{'tool_call_id': 'call_2'}",  # a repr, not JSON
    json.dumps(["tool_call_id", "call_2"]),
], ids=["plain dict", "another message class", "another message type", "repr", "list"])
def test_a_result_that_is_no_tool_message_names_no_call(result: str) -> None:
    sp = Spans()
    with sp.span(OLL, "invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
        with sp.span(OLL, "execute_tool get_weather", {"traceloop.span.kind": "tool", "gen_ai.operation.name": "execute_tool",
                                                       "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.result": result}):
            pass
    [run] = extract_runs(sp.exporter.get_finished_spans())
    assert [(c.name, c.call_id) for c in run.tool_calls] == [("get_weather", None)]


def test_the_id_of_a_tool_message_is_read_from_a_langchain_scope_only() -> None:
    """Another framework's tool result that happens to look like a ToolMessage is that tool's output."""
    sp = Spans()
    with sp.span("my.app", "invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
        with sp.span("my.app", "execute_tool get_weather", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                                                             "gen_ai.tool.call.result": _tool_message_oll("call_9", "x", "get_weather")}):
            pass
    [run] = extract_runs(sp.exporter.get_finished_spans())
    assert run.tool_calls[0].call_id is None
