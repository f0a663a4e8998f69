"""The offline reader parses a model span's input only for a run that needs it, and holds the
collector's full passes off while it reads (``extract/_gc.py``), restoring the caller's setting."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore.extract import extract_runs_with_report, iter_runs
from otel_toolscore.extract._gc import FULL_COLLECTION_EVERY, full_collections_held

CORPUS = Path(__file__).parents[1] / "corpus"


def _user(text: str) -> str:
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}])


def _asks(call_id: str, name: str) -> str:
    return json.dumps([{"role": "assistant", "finish_reason": "tool_call",
                        "parts": [{"type": "tool_call", "id": call_id, "name": name, "arguments": {"q": 1}}]}])


def _answer(text: str) -> str:
    return json.dumps([{"role": "assistant", "finish_reason": "stop", "parts": [{"type": "text", "content": text}]}])


def _file(tmp_path: Path, build: Any) -> Path:
    """The spans ``build(tracer)`` makes, through the SDK, as an OTLP protobuf file."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build(provider.get_tracer("t"))
    provider.shutdown()
    path = tmp_path / "spans.pb"
    path.write_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
    return path


def _agent(tracer: Any, **attrs: str) -> Any:
    return tracer.start_as_current_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", **attrs}
    )


def _chat(tracer: Any, inputs: str, outputs: str) -> Any:
    return tracer.start_as_current_span("chat m", attributes={
        "gen_ai.operation.name": "chat", "gen_ai.input.messages": inputs, "gen_ai.output.messages": outputs})


def test_a_model_input_no_run_needs_is_not_parsed(tmp_path: Path) -> None:
    def build(tracer: Any) -> None:
        with _agent(tracer, **{"gen_ai.input.messages": _user("weather in Paris?")}):
            # the history is no JSON: parsed, it would be reported; every call ran, so nothing reads it
            with _chat(tracer, "{not json", _asks("c1", "get_weather")):
                pass
            with tracer.start_as_current_span("execute_tool get_weather", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "c1", "gen_ai.tool.call.result": "18C"}):
                pass
            with _chat(tracer, "{not json either", _answer("18C in Paris")):
                pass

    (run,), report = extract_runs_with_report(_file(tmp_path, build))
    assert report.ok, report.problems()
    assert run.user_query == "weather in Paris?"
    assert run.final_output == "18C in Paris"
    assert [(c.name, c.call_id, c.result) for c in run.tool_calls] == [("get_weather", "c1", "18C")]


def test_the_request_is_read_from_the_first_model_input_that_names_one(tmp_path: Path) -> None:
    def build(tracer: Any) -> None:
        with _agent(tracer):
            with _chat(tracer, _user("first question"), _answer("done")):
                pass
            with _chat(tracer, _user("not the request"), _answer("later")):
                pass

    (run,), report = extract_runs_with_report(_file(tmp_path, build))
    assert report.ok, report.problems()
    assert run.user_query == "first question"


def test_a_call_no_tool_span_ran_takes_its_result_from_the_history(tmp_path: Path) -> None:
    def build(tracer: Any) -> None:
        with _agent(tracer, **{"gen_ai.input.messages": _user("look it up")}):
            with _chat(tracer, _user("look it up"), _asks("c9", "lookup")):
                pass
            history = json.dumps([
                {"role": "user", "parts": [{"type": "text", "content": "look it up"}]},
                {"role": "assistant", "parts": [{"type": "tool_call", "id": "c9", "name": "lookup", "arguments": {"q": 1}}]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c9", "response": "Error: no such tool"}]},
            ])
            with _chat(tracer, history, _answer("sorry")):
                pass

    (run,), _ = extract_runs_with_report(_file(tmp_path, build))
    (call,) = run.tool_calls
    assert (call.name, call.call_id, call.source, call.result) == ("lookup", "c9", "requested", "Error: no such tool")


@pytest.mark.parametrize("stack", ["openinference", "openllmetry"])
def test_a_call_only_a_langgraph_tools_task_was_given_takes_its_result_from_the_history(stack: str) -> None:
    # the model asked for a tool the agent does not have: LangGraph's tools task got the call, no tool
    # span ran it, and the error the model was then given is the call's result
    runs, report = extract_runs_with_report(CORPUS / "langgraph" / stack / "unknown_tool.traces.jsonl")
    assert report.ok
    (forecast,) = [c for r in runs for c in r.tool_calls if c.name == "get_forecast"]
    assert forecast.status == "error"
    assert forecast.result == "Error: get_forecast is not a valid tool, try one of [get_weather]."


@pytest.fixture
def threshold() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def test_full_collections_are_held_while_reading_and_the_callers_setting_restored(
    threshold: tuple[int, int, int]
) -> None:
    seen: list[tuple[int, int, int]] = []
    with full_collections_held():
        seen.append(gc.get_threshold())
        with full_collections_held():  # nested readers share one hold
            seen.append(gc.get_threshold())
        seen.append(gc.get_threshold())
    assert seen == [(700, 10, FULL_COLLECTION_EVERY)] * 3
    assert gc.get_threshold() == threshold
    with full_collections_held():
        gc.set_threshold(900, 10, 10)  # someone else's setting while reading: theirs stays
    assert gc.get_threshold() == (900, 10, 10)


def test_iter_runs_holds_them_only_while_it_reads(threshold: tuple[int, int, int]) -> None:
    path = CORPUS / "langgraph" / "openinference" / "unknown_tool.traces.jsonl"
    inside = [gc.get_threshold() for _ in iter_runs(path)]
    assert inside and set(inside) == {threshold}  # the caller's code between runs: the caller's setting
    extract_runs_with_report(path)
    assert gc.get_threshold() == threshold
