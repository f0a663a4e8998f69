"""Input content left unparsed changes no run.

The assembler parses what the models were given (their histories, the results of earlier calls) only
for a trace whose runs it can change (``extract/_assemble.py``: ``needs_inputs``): a requested call no
tool span ran, or a model call that recorded no output and is followed by another (its calls are read
from the next one's input). A model span that shows no output inside, or around, one that does is part
of that model call (a Strands event-loop cycle and its chat span); the trace's last model call has no
later input to read. Parsing every input instead must give the same runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore.extract import ExtractOptions, extract_runs, read_span, record_from_readable
from otel_toolscore.extract import _assemble as assemble

CORPUS = Path(__file__).parents[1] / "corpus"
FILES = sorted(p for p in CORPUS.rglob("*.traces.jsonl") if "node_modules" not in p.parts)


def _dumps(runs: list[Any]) -> list[dict[str, Any]]:
    return [r.model_dump() for r in runs]


@pytest.mark.parametrize("content", [True, False], ids=["content", "names-only"])
def test_every_corpus_run_is_the_same_with_every_input_parsed(monkeypatch: pytest.MonkeyPatch, content: bool) -> None:
    opts = ExtractOptions(capture_content=content)
    asked: list[bool] = []
    original = assemble.needs_inputs

    def counted(*args: Any, **kwargs: Any) -> bool:
        asked.append(original(*args, **kwargs))
        return asked[-1]

    monkeypatch.setattr(assemble, "needs_inputs", counted)
    lean = [_dumps(extract_runs(path, options=opts)) for path in FILES]
    monkeypatch.setattr(assemble, "needs_inputs", lambda *args, **kwargs: True)
    full = [_dumps(extract_runs(path, options=opts)) for path in FILES]
    for path, mine, everything in zip(FILES, lean, full):
        assert mine == everything, path
    assert asked.count(False) > 300 and asked.count(True) > 50, (asked.count(False), asked.count(True))


def _trace(build: Any) -> tuple[list[Any], dict[str, str | None]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build(provider.get_tracer("strands.telemetry.tracer"))
    records = [record_from_readable(s) for s in exporter.get_finished_spans()]
    opts = ExtractOptions(capture_content=False)
    facts = [f for f in (read_span(r, opts) for r in records) if f is not None]
    for f in facts:
        f.materialize(opts, defer_inputs=True)
    return facts, {r.span_id: r.parent_span_id for r in records}


def _history(*calls: str) -> str:
    parts = [{"type": "tool_call", "id": f"c_{n}", "name": n, "arguments": {}} for n in calls]
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": "go"}]}] + (
        [{"role": "assistant", "parts": parts}] if parts else []))


def _output(*calls: str) -> str:
    parts = [{"type": "tool_call", "id": f"c_{n}", "name": n, "arguments": {}} for n in calls] or [{"type": "text"}]
    return json.dumps([{"role": "assistant", "parts": parts}])


def _cycle(tracer: Any, n: int, asked: tuple[str, ...], history: tuple[str, ...], chat_output: bool) -> None:
    """One Strands event-loop cycle (a model span that shows no output) around its chat span."""
    with tracer.start_as_current_span(f"execute_event_loop_cycle {n}", attributes={"gen_ai.operation.name": "chat"}):
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": _history(*history)}
        if chat_output:
            attrs["gen_ai.output.messages"] = _output(*asked)
        with tracer.start_as_current_span("chat", attributes=attrs):
            pass
        for name in asked:
            with tracer.start_as_current_span(f"execute_tool {name}", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": f"c_{name}"}):
                pass


def test_a_silent_span_around_a_reporting_one_and_a_last_silent_call_need_no_inputs() -> None:
    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}):
            _cycle(tracer, 1, ("search",), (), chat_output=True)
            _cycle(tracer, 2, ("fetch",), ("search",), chat_output=True)
            with tracer.start_as_current_span("chat last", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.input.messages": _history("search", "fetch"),
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": []}])}):
                pass  # the final answer, nothing recorded of it: the last model call

    facts, parents = _trace(build)
    assert not assemble.needs_inputs(facts, parents=parents)
    assert assemble.needs_inputs(facts)  # without the trace's parent links: every silent span counts


def test_a_silent_model_call_followed_by_another_needs_its_inputs() -> None:
    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}):
            _cycle(tracer, 1, ("search",), (), chat_output=False)  # asked for search: shown by the next input
            _cycle(tracer, 2, (), ("search",), chat_output=True)

    facts, parents = _trace(build)
    assert assemble.needs_inputs(facts, parents=parents)
    opts = ExtractOptions(capture_content=False)
    (run,) = assemble.assemble_runs(facts, parents, options=opts)
    assert [(c.name, c.call_id) for c in run.tool_calls] == [("search", "c_search")]
