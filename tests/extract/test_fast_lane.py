"""The fast lanes give exactly what the general code gives.

* :func:`~otel_toolscore.extract._fast_read.read_live_span` (one table lookup for a scalar GenAI span)
  must return the very facts :func:`~otel_toolscore.extract.read_span` returns, or decline.
* :func:`~otel_toolscore.extract._assemble.single_run` (one agent span and what it encloses) must
  return the very runs the general rules return, or decline.

Checked on every recorded corpus file (offline and replayed live), on spans made by the SDK in
every shape the readers tell apart, and on random trace trees.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

from otel_toolscore import Expectation, ToolScoreSpanProcessor
from otel_toolscore.extract import ExtractOptions, extract_runs, read_span, record_from_readable
from otel_toolscore.extract import _assemble as assemble
from otel_toolscore.extract import _fast_read as fast_read
from otel_toolscore.extract import _readers as readers
from otel_toolscore.extract._facts import SpanFacts
from otel_toolscore.model import AgentRun
from otel_toolscore.run_records import as_model
from tests.support.facts import facts_fields

CORPUS = Path(__file__).parents[1] / "corpus"
FILES = sorted(p for p in CORPUS.rglob("*.traces.jsonl") if "node_modules" not in p.parts)
OPTIONS = (ExtractOptions(capture_content=True), ExtractOptions(capture_content=False))


# -- the single-run lane against the general rules ---------------------------------------------------
class _Checked:
    """Wraps a lane (``single_run``, ``lean_run``): every time it answers, the general rules are run on
    a copy of the same facts and must give the same runs."""

    def __init__(self, lane: str = "single_run") -> None:
        self.original = getattr(assemble, lane)
        self.taken = 0
        self.declined = 0
        self.mismatches: list[Any] = []

    def __call__(self, facts: Sequence[SpanFacts], parents: Any, stops: Any, opts: ExtractOptions) -> Any:
        mine = copy.deepcopy(list(facts))
        general_facts = copy.deepcopy(list(facts))
        fast = self.original(mine, parents, stops, opts)
        if fast is None:
            self.declined += 1
            return self.original(facts, parents, stops, opts)
        self.taken += 1
        for f in general_facts:  # what assemble_records does before the general rules
            f.materialize(opts)
        if assemble.needs_inputs(general_facts):
            for f in general_facts:
                f.materialize_inputs(opts)
        general = assemble._assemble(general_facts, parents, stops, opts)
        if _dump(fast) != _dump(general):
            # recorded, not raised: the live core catches what the assembler raises
            self.mismatches.append((_dump(fast), _dump(general)))
        return self.original(facts, parents, stops, opts)


def _dump(runs: list[AgentRun]) -> list[dict[str, Any]]:
    return [as_model(r).model_dump() for r in runs]  # the assembler's records, as the public model


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Checked]:
    wrapper = _Checked()
    monkeypatch.setattr(assemble, "single_run", wrapper)
    yield wrapper
    assert not wrapper.mismatches, wrapper.mismatches[0]


@pytest.fixture
def lean(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Checked]:
    wrapper = _Checked("lean_run")
    monkeypatch.setattr(assemble, "lean_run", wrapper)
    yield wrapper
    assert not wrapper.mismatches, wrapper.mismatches[0]


def test_lean_run_equals_the_general_rules_on_every_corpus_file(lean: _Checked) -> None:
    for path in FILES:
        extract_runs(path, options=OPTIONS[1])  # the lane reads names only
    assert lean.taken >= 10 and lean.declined >= 100, (lean.taken, lean.declined)


def test_lean_run_equals_the_general_rules_live(lean: _Checked) -> None:
    from tests.online.test_processor_corpus import _load, _replay

    for path in FILES:
        logs = path.with_name(path.name.replace(".traces.", ".logs."))
        by_trace, views = _load(path, logs if logs.exists() else None)
        _replay(by_trace, views, capture_content=False)
    assert lean.taken >= 10, (lean.taken, lean.declined)


@pytest.mark.parametrize("seed", range(6))
def test_lean_run_equals_the_general_rules_on_random_trees(lean: _Checked, seed: int) -> None:
    _assemble_random_trees(seed)
    assert lean.taken >= 10 and lean.declined >= 100, (lean.taken, lean.declined)


@pytest.mark.parametrize("opts", OPTIONS, ids=["content", "names-only"])
def test_single_run_equals_the_general_rules_on_every_corpus_file(checked: _Checked, opts: ExtractOptions) -> None:
    for path in FILES:
        extract_runs(path, options=opts)
    # the lane is taken where the shape is common and declined elsewhere (multi-agent, logs, hints …)
    assert checked.taken >= 40, (checked.taken, checked.declined)
    assert checked.declined >= 40, (checked.taken, checked.declined)


@pytest.mark.parametrize("content", [True, False], ids=["content", "names-only"])
def test_single_run_equals_the_general_rules_live(checked: _Checked, content: bool) -> None:
    from tests.online.test_processor_corpus import _load, _replay

    for path in FILES:
        logs = path.with_name(path.name.replace(".traces.", ".logs."))
        by_trace, views = _load(path, logs if logs.exists() else None)
        _replay(by_trace, views, capture_content=content)
    assert checked.taken >= 40


# -- random trees --------------------------------------------------------------------------------
def _random_trace(rng: random.Random, provider: TracerProvider) -> None:
    tracer = provider.get_tracer("random", "1")
    ops = ["invoke_agent", "chat", "execute_tool", "execute_tool", None, "text_completion", "invoke_workflow"]

    openinference = rng.random() < 0.35  # a trace of either convention (both lanes' shapes)
    kinds = ["CHAIN", "LLM", "TOOL", "TOOL", None, "AGENT"]

    def span(depth: int) -> None:
        # mostly one agent (or none) at the top, sometimes nested or several agents
        op = "invoke_agent" if depth == 0 and rng.random() < 0.5 else rng.choice(ops[1:] if rng.random() < 0.8 else ops)
        attrs: dict[str, Any] = {}
        name = "work"
        if openinference:
            kind = "CHAIN" if depth == 0 and rng.random() < 0.6 else rng.choice(kinds[:-1] if rng.random() < 0.85 else kinds)
            if kind is not None:
                attrs["openinference.span.kind"] = kind
                name = rng.choice(["graph", "agent", "tools", "step"])
                if kind == "TOOL":
                    attrs["tool.name"] = name = rng.choice(["a", "b"])
                if kind == "LLM":
                    attrs["llm.output_messages.0.message.role"] = "assistant"
                    attrs["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] = rng.choice(["a", "b"])
        elif op == "invoke_workflow":
            attrs["gen_ai.operation.name"] = op
            name = "invoke_workflow w"
        elif op is not None:
            attrs["gen_ai.operation.name"] = op
            name = f"{op} x"
            if op == "execute_tool":
                attrs["gen_ai.tool.name"] = rng.choice(["a", "b", "final_result", "transfer_to_x"])
                if rng.random() < 0.5:
                    attrs["gen_ai.tool.call.id"] = f"call_{rng.randrange(4)}"
            if op == "invoke_agent" and rng.random() < 0.8:
                attrs["gen_ai.agent.name"] = rng.choice(["alpha", "beta"])
            if rng.random() < 0.2:
                attrs["gen_ai.conversation.id"] = "conv"
        with tracer.start_as_current_span(name, attributes=attrs) as s:
            if rng.random() < 0.15:
                s.set_status(Status(StatusCode.ERROR, rng.choice(["boom", "tool x not found"])))
            if rng.random() < 0.1:
                s.set_attribute("error.type", "Timeout")
            if depth < 4:
                for _ in range(rng.randrange(4)):
                    span(depth + 1)

    remote = rng.random() < 0.3
    if remote:
        parent = SpanContext(rng.getrandbits(128) or 1, rng.getrandbits(64) or 1, True, TraceFlags(1))
        token = trace_api.context_api.attach(trace_api.set_span_in_context(trace_api.NonRecordingSpan(parent)))
        try:
            span(0)
        finally:
            trace_api.context_api.detach(token)
    else:
        span(0)


@pytest.mark.parametrize("seed", range(6))
def test_single_run_equals_the_general_rules_on_random_trees(checked: _Checked, seed: int) -> None:
    _assemble_random_trees(seed)
    assert checked.taken >= 20 and checked.declined >= 20, (checked.taken, checked.declined)


def _assemble_random_trees(seed: int) -> None:
    rng = random.Random(seed)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for _ in range(150):
        _random_trace(rng, provider)
    spans = exporter.get_finished_spans()
    by_trace: dict[int, list[ReadableSpan]] = {}
    for s in spans:
        assert s.context is not None
        by_trace.setdefault(s.context.trace_id, []).append(s)
    for opts in OPTIONS:
        for group in by_trace.values():
            records = [record_from_readable(s) for s in group]
            facts = [f for f in (read_span(r, opts) for r in records) if f is not None]
            parents = {r.span_id: r.parent_span_id for r in records}
            stops = {r.span_id for r, s in zip(records, group) if s.parent is None or s.parent.is_remote}
            assemble.assemble_runs(facts, parents, local_roots=stops, options=opts)


def _one_trace_runs(build: Any, opts: ExtractOptions) -> list[AgentRun]:
    """The runs of the one trace ``build(tracer)`` makes with the SDK (under one root span), read and
    assembled as offline."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build(provider.get_tracer("shapes"))
    records = [record_from_readable(s) for s in exporter.get_finished_spans()]
    facts = [f for f in (read_span(r, opts) for r in records) if f is not None]
    return assemble.assemble_runs(facts, {r.span_id: r.parent_span_id for r in records}, options=opts)


def _text(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def test_single_run_reads_a_wrapper_above_the_agent_as_the_general_rules_do(checked: _Checked) -> None:
    """A span of no run above the agent (ADK's invocation, a swarm) holds the user's own words; the agent
    was given a framework-built prompt. A model call inside a model call is one model call."""

    def build(tracer: Any) -> None:
        with tracer.start_as_current_span(
            "invoke_workflow swarm",
            attributes={"gen_ai.operation.name": "invoke_workflow", "gen_ai.input.messages": _text("user", "Book a flight")},
        ):
            with tracer.start_as_current_span(
                "invoke_agent booker",
                attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "booker",
                            "gen_ai.input.messages": _text("user", "Context: none. User Request: Book a flight")},
            ):
                # both layers report the call (no id): one model call, one call
                output = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "book", "arguments": {}}]}])
                with tracer.start_as_current_span(
                    "call_llm", attributes={"gen_ai.operation.name": "chat", "gen_ai.output.messages": output}
                ), tracer.start_as_current_span(
                    "chat m", attributes={"gen_ai.operation.name": "chat", "gen_ai.output.messages": output}
                ):
                    pass
                with tracer.start_as_current_span(
                    "execute_tool book", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book"}
                ):
                    pass
            with tracer.start_as_current_span("invoke_workflow audit", attributes={"gen_ai.operation.name": "invoke_workflow"}):
                pass  # a sibling of the agent under the wrapper, of no call: no run, skipped

    (run,) = _one_trace_runs(build, OPTIONS[0])
    assert checked.taken == 1 and checked.declined == 0
    assert run.user_query == "Book a flight" and run.agent_name == "booker"
    assert [(c.name, c.source) for c in run.tool_calls] == [("book", "span")]


def test_single_run_leaves_a_task_an_empty_agent_may_adopt_to_the_general_rules(checked: _Checked) -> None:
    """OpenLLMetry's LangGraph: a nested graph's ``invoke_agent X`` span stays empty and its work sits in
    the sibling task span ``X``, which the agent adopts (its conventions join the run)."""

    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("graph"):  # no facts: a plain span
            with tracer.start_as_current_span(
                "invoke_agent planner", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}
            ):
                pass
            with tracer.start_as_current_span(
                "planner.task", attributes={"traceloop.span.kind": "task", "traceloop.entity.name": "planner"}
            ):
                pass

    for opts in OPTIONS:
        runs = _one_trace_runs(build, opts)
        assert [(r.agent_name, "openllmetry" in r.conventions) for r in runs] == [("planner", True)]
    assert checked.taken == 0 and checked.declined == 2


def _agent(name: str | None, **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", **extra}
    if name is not None:
        attrs["gen_ai.agent.name"] = name
    return attrs


def _model_and_tool(tracer: Any, **model: Any) -> None:
    """A model call asking for ``book`` (id c1) and the tool span that ran it."""
    output = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "book", "arguments": {}}]}])
    with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat", "gen_ai.output.messages": output, **model}):
        pass
    with tracer.start_as_current_span("execute_tool book", attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book", "gen_ai.tool.call.id": "c1"}):
        pass


def test_single_run_reads_the_same_agent_seen_twice_as_the_general_rules_do(checked: _Checked) -> None:
    """An agent span directly inside an agent span of the same name is one run, the inner span one of
    its root's facts: the run's request and conversation are read from it before any model call's."""

    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("invoke_agent booker", attributes=_agent("booker")), \
                tracer.start_as_current_span("booker.workflow", attributes=_agent(
                    "booker", **{"gen_ai.conversation.id": "conv-agent", "gen_ai.input.messages": _text("user", "Book")})):
            _model_and_tool(tracer, **{"gen_ai.conversation.id": "conv-model",
                                       "gen_ai.input.messages": _text("user", "Context: x. Book")})

    (run,) = _one_trace_runs(build, OPTIONS[0])
    assert checked.taken == 1
    assert (run.agent_name, run.user_query, run.conversation_id) == ("booker", "Book", "conv-agent")
    assert [c.name for c in run.tool_calls] == ["book"]


def test_single_run_reads_a_wrapper_agent_as_the_general_rules_do(checked: _Checked) -> None:
    """An unnamed agent span around an agent (openai-agents' "Agent workflow") is no run: the inner
    agent's run is, with the wrapper's request. A named agent around one is a run of its own (two
    runs: the general rules)."""

    def wrapped(outer: str | None) -> Any:
        def build(tracer: Any) -> None:
            with tracer.start_as_current_span("Agent workflow", attributes=_agent(
                outer, **{"gen_ai.input.messages": _text("user", "Book a flight")})), \
                    tracer.start_as_current_span("invoke_agent booker", attributes=_agent(
                        "booker", **{"gen_ai.input.messages": _text("user", "You are booker. Book a flight")})):
                _model_and_tool(tracer)
        return build

    (run,) = _one_trace_runs(wrapped(None), OPTIONS[0])
    assert checked.taken == 1 and checked.declined == 0
    assert (run.agent_name, run.user_query, run.parent_run_id) == ("booker", "Book a flight", None)
    runs = _one_trace_runs(wrapped("planner"), OPTIONS[0])
    assert [r.agent_name for r in runs] == ["planner", "booker"] and runs[1].parent_run_id == runs[0].run_id
    assert checked.taken == 1 and checked.declined == 1


# -- the table-driven reader against the readers ---------------------------------------------------
def _span_shapes() -> Iterator[tuple[str, dict[str, Any], str | None, StatusCode, str | None, bool]]:
    """(name, attributes, scope, status, status message, with an exception event)."""
    ops = ["invoke_agent", "execute_tool", "chat", "responses", "generate_content", "create_agent", "agent_handoff", 7]
    tools = [None, "get_weather", "(merged tools)", "final_result", "", 3]
    extras: list[dict[str, Any]] = [
        {},
        {"gen_ai.agent.name": "planner", "gen_ai.agent.id": "a1", "gen_ai.conversation.id": "c1"},
        {"gen_ai.agent.name": "", "gen_ai.conversation.id": 12},
        {"gen_ai.tool.call.id": "  call_1 "},
        {"gen_ai.tool.call.id": "null", "gen_ai.tool.call.arguments": '{"city": "Paris"}'},
        {"gen_ai.tool.call.result": '{"error": true, "message": "bad"}'},
        {"gen_ai.tool.call.result": "sunny", "error.type": "ToolError"},
        {"error.type": ""},
        {"gen_ai.agent.handoff.target.name": "other"},
        {"llm.request.type": "chat"},
        {"openinference.span.kind": "TOOL", "tool.name": "x"},
        {"gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]'},
        {
            "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", '
            '"name": "get_weather", "arguments": {"city": "Paris"}}]}]',
            "gen_ai.tool.definitions": '[{"type": "function", "name": "get_weather"}]',
        },
        {"gen_ai.agent.tools": '["get_weather", "search"]', "gen_ai.tool.call.arguments": "x" * 40_000},
        {"tool_arguments": "{}"},
        {"mastra.span.type": "tool_call"},
        {"long": "x" * 400, "flag": True, "n": 3},
    ]
    names = ["{op} {tool}", "execute_tool (merged)", "agent run", "running tool", "call_llm", "agent_run [a]"]
    scopes = [None, "strands.telemetry.tracer", "pydantic-ai", "gcp.vertex.agent", "opentelemetry.instrumentation.openai_agents"]
    statuses = [(StatusCode.UNSET, None), (StatusCode.ERROR, "Tool get_weather not found"), (StatusCode.ERROR, "boom")]
    for op, tool, extra, name, scope, (code, msg), event in itertools.product(
        ops, tools, extras, names, scopes, statuses, (False, True)
    ):
        attrs: dict[str, Any] = {"gen_ai.operation.name": op, **extra}
        if tool is not None:
            attrs["gen_ai.tool.name"] = tool
        yield name.format(op=op, tool=tool), attrs, scope, code, msg, event


def _facts(f: SpanFacts | None) -> Any:
    """Every field of ``f``, requested calls by value (they compare by identity)."""
    if f is None:
        return None
    if f.plain:  # what the reader promises of facts it marks plain (the lean assembly lane trusts it)
        assert f.materialized and not f.from_log and f.hints is None and f.context_call is None
        assert f.handoff_to is None and f.handoff_from is None and not f.error_message
        assert not f.requested_fallback and (f.role == "llm" or not f.requested)
        assert not f.deferred and not f.history_calls and not f.dropped_calls and not f.unparsed
    return facts_fields(f)


def _check_live_reader(
    reader: Any,
    shapes: Iterator[tuple[str, dict[str, Any], str | None, StatusCode, str | None, bool]],
    at_start: Any,
) -> None:
    """``reader`` on live spans of every shape gives the generic readers' facts, or declines (both often).

    ``at_start(attrs)`` picks the attributes given at start; the rest are set after start, as
    instrumentations do (the SDK hands both to a processor the same way)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    taken = declined = 0
    for name, attrs, scope, code, msg, event in shapes:
        tracer = provider.get_tracer(scope or "plain")
        first = at_start(attrs)
        with tracer.start_as_current_span(name, attributes=first) as s:
            s.set_attributes({k: v for k, v in attrs.items() if k not in first})
            if event:
                s.record_exception(ValueError("bad"))
            s.set_status(Status(code, msg))
        span = exporter.get_finished_spans()[-1]
        exporter.clear()
        for opts in OPTIONS:
            fast = reader(span, opts)
            if fast is None:
                declined += 1
                continue
            taken += 1
            assert _facts(fast) == _facts(read_span(record_from_readable(span), opts)), (name, attrs, scope, code, msg)
    assert taken > 1000 and declined > 1000, (taken, declined)


def test_live_reader_gives_the_readers_facts_or_declines() -> None:
    # the first attribute at start, the rest after
    _check_live_reader(fast_read.read_live_span, _span_shapes(), lambda attrs: dict(list(attrs.items())[:1]))


def _framework_scope_shapes() -> Iterator[tuple[str, dict[str, Any], str | None, StatusCode, str | None, bool]]:
    """GenAI spans of the scopes and conventions whose readers also read GenAI spans (Pydantic AI, ADK,
    OpenLLMetry's tasks), of any operation: each key and name those readers react to, alone, beside none."""
    ops = ["invoke_agent", "execute_tool", "chat", "generate_content", "create_agent", "invoke_workflow", "handoff",
           "execute_task"]
    extras: list[dict[str, Any]] = [
        {},
        # OpenLLMetry: a task (a LangGraph node), one sending a call to a tool, other kinds, a model call
        {"traceloop.span.kind": "task", "traceloop.entity.name": "agent", "traceloop.entity.output": "{}"},
        {"traceloop.span.kind": "task", "traceloop.entity.name": "",
         "traceloop.entity.input": '{"__type": "tool_call_with_context", "tool_call": {"name": "a", "id": "c2"}}'},
        {"traceloop.span.kind": "workflow", "traceloop.entity.name": "graph"},
        {"traceloop.span.kind": "tool", "traceloop.entity.name": "search"},
        {"traceloop.span.kind": "task", "llm.request.type": "chat"},
        {"gen_ai.agent.name": "planner", "gen_ai.conversation.id": "c1", "gen_ai.tool.call.result": "sunny"},
        {"agent_name": "pydantic-agent"},
        {"final_result": "done"},
        {"all_messages_events": '[{"role": "user", "content": "hi"}]'},
        {"tool_response": "sunny"},
        {"gcp.vertex.agent.tool_response": '{"result": "sunny"}'},
        {"gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", '
         '"name": "get_weather", "arguments": {}}]}]'},
    ]
    names = ["{op} {tool}", "call_llm", "agent_run [a]", "agent_run [a", "running tool: x", "invocation"]
    scopes = ["pydantic-ai", "gcp.vertex.agent", "gcp.vertex.agent.x", "opentelemetry.instrumentation.langchain",
              "traceloop.tracer", None]
    statuses = [(StatusCode.UNSET, None), (StatusCode.ERROR, "Tool get_weather not found")]
    for op, tool, extra, name, scope, (code, msg), event in itertools.product(
        ops, (None, "get_weather"), extras, names, scopes, statuses, (False, True)
    ):
        attrs: dict[str, Any] = {"gen_ai.operation.name": op, **extra}
        if tool is not None:
            attrs["gen_ai.tool.name"] = tool
        yield name.format(op=op, tool=tool), attrs, scope, code, msg, event


def test_live_reader_reads_framework_scopes_as_their_readers_do() -> None:
    # every attribute set after start
    _check_live_reader(fast_read.read_live_span, _framework_scope_shapes(), lambda attrs: {})


def _oi_span_shapes() -> Iterator[tuple[str, dict[str, Any], str | None, StatusCode, str | None, bool]]:
    """OpenInference spans: (name, attributes, scope, status, status message, with an exception event)."""
    kinds: list[Any] = ["LLM", "TOOL", "CHAIN", "AGENT", "EVALUATOR", "RETRIEVER", "llm", 7]
    names = ["agent", "model", "tools", "ChatOpenAI", "handoff to billing", "search", "helper.run", "agent run",
             "invoke_agent y", "execute_tool z"]
    scopes = [None, "openinference.instrumentation.langchain", "openinference.instrumentation.llama_index",
              "openinference.instrumentation.crewai", "openinference.instrumentation.smolagents", "pydantic-ai",
              "openinference.instrumentation.openai_agents"]
    extras: list[dict[str, Any]] = [
        {},
        {"tool.name": "get_weather", "tool_call.id": " c1 ", "input.value": '{"city": "Paris"}', "output.value": "sunny"},
        {"tool.name": "handoff", "tool.parameters": '{"to_agent": "x"}', "input.value": '{"args": [], "kwargs": {}}'},
        {"agent.name": "planner", "session.id": "s1", "graph.node.id": "Researcher"},
        {"input.value": '{"__type": "tool_call_with_context", "tool_call": {"name": "a", "args": {}, "id": "c2"}}'},
        {"input.value": "hi", "output.value": '{"messages": [{"role": "ai", "content": "done"}]}'},
        {"metadata": '{"langgraph_node": "agent"}', "output.value": "StopEvent(result=1)"},
        {"llm.output_messages.0.message.role": "assistant",
         "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c3",
         "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
         "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "weather?",
         "llm.tools.0.tool.json_schema": '{"type": "function", "function": {"name": "get_weather"}}'},
        {"output.value": '{"choices": [{"message": {"role": "assistant", "tool_calls": []}}]}', "crew_agents": "[]"},
        # a model call's output with its inputs hidden (nothing to defer), and input messages the
        # first message's keys do not show (a later index only, an index written "01")
        {"llm.output_messages.0.message.role": "assistant"},
        {"llm.output_messages.0.message.role": "assistant", "llm.input_messages.1.message.content": "and now?"},
        {"llm.input_messages.01.message.role": "user", "llm.input_messages.01.message.content": "weather?"},
        {"llm.input_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
         "llm.input_messages.0.message.tool_calls.0.tool_call.id": "c9"},
        {"gen_ai.operation.name": "chat"},
        {"traceloop.span.kind": "task"},
        {"tool_arguments": "{}"},
        {"error.type": "Timeout", "long": "x" * 400},
    ]
    statuses = [(StatusCode.UNSET, None), (StatusCode.ERROR, "Tool get_weather not found")]
    for kind, name, scope, extra, (code, msg), event in itertools.product(
        kinds, names, scopes, extras, statuses, (False, True)
    ):
        yield name, {"openinference.span.kind": kind, **extra}, scope, code, msg, event


def test_live_openinference_reader_gives_the_readers_facts_or_declines() -> None:
    # the kind set after start, as LangGraph's root gets it
    _check_live_reader(
        fast_read.read_live_oi_span,
        _oi_span_shapes(),
        lambda attrs: {k: v for k, v in attrs.items() if k != "openinference.span.kind"},
    )


def test_openinference_inputs_are_deferred_only_where_the_parser_would_read_some() -> None:
    """A model span with no ``llm.input_messages.*`` key defers no input parse (live lane and reader
    alike); where it has none, the parser would have left the facts as they were."""
    from otel_toolscore.extract._content import has_openinference_inputs, openinference_inputs

    rng = random.Random(7)
    pieces = ["llm.input_messages.0.message.role", "llm.input_messages.0.message.content",
              "llm.input_messages.2.message.content", "llm.input_messages.01.message.role",
              "llm.input_messages.0.message.tool_calls.0.tool_call.function.name",
              "llm.input_messages.0.message.tool_calls.0.tool_call.id", "llm.input_messages.x",
              "llm.output_messages.0.message.role", "llm.output_messages.0.message.content",
              "llm.model_name", "input.value", "llm.input_messages", "llm.invocation_parameters"]
    seen = {True: 0, False: 0}
    for _ in range(3000):
        attrs = {k: rng.choice(["user", "tool", "hi", '{"a": 1}', "c1", "get_weather"])
                 for k in rng.sample(pieces, rng.randint(0, 6))}
        has = has_openinference_inputs(attrs)
        seen[has] += 1
        assert has == any(k.startswith("llm.input_messages.") for k in attrs), attrs
        if not has:
            blank, parsed = SpanFacts.new("t", "s", None, "llm", "m", 1, 2), SpanFacts.new("t", "s", None, "llm", "m", 1, 2)
            openinference_inputs(parsed, attrs, OPTIONS[0])
            assert _facts(parsed) == _facts(blank), attrs
    assert seen[True] > 300 and seen[False] > 300, seen


def _oi_graph(tracer: Any, inputs: bool) -> None:
    """A LangGraph-shaped OpenInference run: a bare root, steps of CHAIN -> LLM (a requested call) and
    CHAIN -> TOOL, and a last model call that shows no output but its role; inputs hidden or not."""
    root = tracer.start_span("weather_agent")
    ctx = trace_api.set_span_in_context(root)
    for step in range(3):
        with tracer.start_as_current_span("agent", context=ctx, attributes={"openinference.span.kind": "CHAIN"}):
            with tracer.start_as_current_span("ChatOpenAI", attributes={"openinference.span.kind": "LLM"}) as llm:
                llm.set_attribute("llm.output_messages.0.message.role", "assistant")
                llm.set_attribute("llm.output_messages.0.message.tool_calls.0.tool_call.id", f"call_{step}")
                llm.set_attribute("llm.output_messages.0.message.tool_calls.0.tool_call.function.name", f"tool_{step}")
                if inputs:
                    llm.set_attribute("llm.input_messages.0.message.role", "user")
        with tracer.start_as_current_span("tools", context=ctx, attributes={"openinference.span.kind": "CHAIN"}):
            with tracer.start_as_current_span(f"tool_{step}", attributes={"openinference.span.kind": "TOOL"}) as tool:
                tool.set_attribute("tool.name", f"tool_{step}")
    with tracer.start_as_current_span("ChatOpenAI", context=ctx, attributes={"openinference.span.kind": "LLM"}) as final:
        final.set_attribute("llm.output_messages.0.message.role", "assistant")
        if inputs:
            final.set_attribute("llm.input_messages.0.message.role", "user")
    root.set_attribute("openinference.span.kind", "CHAIN")
    root.end()


@pytest.mark.parametrize("inputs", [False, True], ids=["inputs-hidden", "inputs-recorded"])
def test_lean_run_takes_an_openinference_graph_whose_inputs_are_hidden(lean: _Checked, inputs: bool) -> None:
    """A last model call that shows no output sends a trace to the general rules only where the model
    was given input to read its calls from; with inputs hidden, the lean lane takes it (same run)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _oi_graph(provider.get_tracer("openinference.instrumentation.langchain"), inputs)
    spans = exporter.get_finished_spans()
    facts = [f for f in (fast_read.read_live_oi_span(s, OPTIONS[1]) for s in spans) if f is not None]
    assert len(facts) == len(spans) == 14
    parents = {f.span_id: f.parent_span_id for f in facts}
    runs = assemble.assemble_records(facts, parents, options=OPTIONS[1])
    assert [[c.name for c in r.tool_calls] for r in runs] == [["tool_0", "tool_1", "tool_2"]]
    assert (lean.taken, lean.declined) == ((0, 1) if inputs else (1, 0))


def test_may_root_answers_as_the_table_of_keys() -> None:
    """``SdkSpans.may_root`` (on the worker, for every ended span) answers OpenInference model, tool
    and evaluator spans from their kind and name without asking ``classify_start``: the same answer
    as the rule written out in full — a local root; a GenAI agent operation; an OpenInference kind
    other than a model, tool or evaluator; else, unless a GenAI model or tool operation,
    ``classify_start`` naming an agent — for every GenAI and OpenInference shape, child or root."""
    from otel_toolscore.core._sources import _NEVER_ROOTS, SDK_SPANS

    def rule(name: str, attrs: dict[str, Any]) -> bool:
        op = attrs.get("gen_ai.operation.name")
        if op is not None and op in readers.AGENT_OPS:
            return True
        kind = attrs.get("openinference.span.kind")
        if kind is not None and str(kind).upper() not in _NEVER_ROOTS:
            return True
        if op is not None and op in readers.ROLE_OPS:
            return False
        return readers.classify_start(name, attrs) == "agent"

    provider = TracerProvider()
    tracer = provider.get_tracer("plain")
    answers = {True: 0, False: 0}
    for name, attrs, _scope, _code, _msg, _event in itertools.chain(_span_shapes(), _oi_span_shapes()):
        for child in (True, False):
            with tracer.start_as_current_span("parent") if child else contextlib.nullcontext():
                span = tracer.start_span(name, attributes=attrs)
                span.end()
            expected = not child or rule(name, attrs)
            assert SDK_SPANS.may_root(span) is expected, (name, attrs, child)
            answers[expected] += 1
    assert min(answers.values()) > 1000, answers


def _message_shapes() -> Iterator[dict[str, Any]]:
    """Message attributes of GenAI model and agent spans: the semconv shape, other shapes, bad JSON,
    redaction markers, values that are not strings, and sizes around the small bounds below."""
    call = '{"type": "tool_call", "id": " call_1 ", "name": "get_weather", "arguments": {"city": "Paris"}}'
    text = '{"type": "text", "content": "sunny"}'
    outputs = [
        None,
        f'[{{"role": "assistant", "parts": [{call}, {text}], "finish_reason": "tool_call"}}]',
        f'[{{"role": "assistant", "parts": [{text}]}}]',
        '[{"role": "assistant", "parts": [{"type": "tool_call", "id": "null", "name": "final_result"}]}]',
        '[{"message": {"role": "assistant", "tool_calls": [{"id": "c9", "function": {"name": "search"}}]}}]',
        '[{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "ok"}]}]',
        "[not json",
        "",
        "[REDACTED]",
        ("a", "b"),
        f'[{{"role": "assistant", "parts": [{call}], "extra": "{"x" * 120}"}}]',
    ]
    inputs = [
        None,
        '[{"role": "user", "parts": [{"type": "text", "content": "weather?"}]}]',
        "x" * 80,
        ["[]"],
    ]
    extras: list[dict[str, Any]] = [
        {},
        {"gen_ai.tool.definitions": '[{"type": "function", "name": "get_weather"}]'},
        {"gen_ai.agent.tools": '["get_weather"]'},
        {"gen_ai.agent.name": "planner"},
    ]
    for out, inp, extra in itertools.product(outputs, inputs, extras):
        attrs: dict[str, Any] = dict(extra)
        if out is not None:
            attrs["gen_ai.output.messages"] = out
        if inp is not None:
            attrs["gen_ai.input.messages"] = inp
        yield attrs


def test_live_reader_reads_messages_alone_as_the_readers_do() -> None:
    """A GenAI model or agent span whose only content is its messages, content not kept, is read at
    once (outputs parsed, inputs left in the span by key): the same facts as the readers', with the
    bounds that send it the general way — ``max_deferred_chars`` for the inputs, ``max_parse_chars``
    for the outputs — on both sides of each."""
    small = ExtractOptions(capture_content=False, max_deferred_chars=50, max_parse_chars=100)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    lane = 0
    for op, status in itertools.product(("chat", "invoke_agent"), (StatusCode.UNSET, StatusCode.ERROR)):
        for attrs in _message_shapes():
            with tracer.start_as_current_span(f"{op} x", attributes={"gen_ai.operation.name": op}) as s:
                s.set_attributes(attrs)
                s.set_status(Status(status, "boom" if status is StatusCode.ERROR else None))
            span = exporter.get_finished_spans()[-1]
            exporter.clear()
            for opts in (*OPTIONS, small):
                fast = fast_read.read_live_span(span, opts)
                assert fast is not None, attrs
                assert _facts(fast) == _facts(read_span(record_from_readable(span), opts)), (op, attrs, opts)
                messages = fast_read._messages_alone(span.attributes, opts)
                if not opts.capture_content and messages is not None:
                    lane += 1
                    assert fast.materialized
    assert lane > 150, lane


def test_live_openinference_reader_declines_every_key_another_reader_reacts_to() -> None:
    """Every marker key of the readers is either OpenInference's (or read by its reader), or declined."""
    assert readers._MARKERS - {"openinference.span.kind", "gen_ai.system", "gen_ai.provider.name", "agent_name"} <= (
        fast_read._NOT_OPENINFERENCE_KEYS
    )


def test_live_reader_declines_every_key_another_reader_reacts_to() -> None:
    """Every marker key of the readers is either one the GenAI reader alone reads, or declined."""
    genai_own = {"gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.agent.name", "gen_ai.system",
                 "gen_ai.provider.name", "agent_name", *(key for key, _ in readers.GENAI_CONTENT)}
    assert readers._MARKERS - genai_own <= fast_read._GENERIC_KEYS


def test_processor_scores_the_same_with_and_without_the_lanes(monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: the bench's GenAI run, scored with the lanes and with the general code only."""
    from otel_toolscore.scripted import ScriptedCall, run_scripted_agent

    calls = [ScriptedCall(f"tool_{i}", {"i": i}) for i in range(4)]

    def scores(lanes: bool, content: bool) -> list[Any]:
        if not lanes:
            monkeypatch.setattr(fast_read, "read_live_span", lambda span, opts, *ids: None)
            monkeypatch.setattr("otel_toolscore.core._sources.read_live_span", lambda span, opts, *ids: None)
            monkeypatch.setattr(assemble, "single_run", lambda *a: None)
        out: list[Any] = []
        processor = ToolScoreSpanProcessor(
            None,
            expectations=[Expectation(agent_name="a", expected_tool_order=("tool_0", "tool_2"))],
            on_scored=out.append,
            capture_content=content,
            metrics=False,
            events=False,
        )
        provider = TracerProvider()
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("t")
        for i in range(5):
            run_scripted_agent(tracer, "a", f"q{i}", calls[i % 2 :], answer="ok", capture_content=content)
        provider.force_flush()
        provider.shutdown()
        monkeypatch.undo()
        return [(r.outcome, r.score, r.run.model_dump(exclude={"run_id", "trace_id", "root_span_id"},
                                                      mode="json")) for r in out]

    for content in (True, False):
        fast, general = scores(True, content), scores(False, content)
        assert len(fast) == 5
        for a, b in zip(fast, general):
            a[2]["tool_calls"] = [{k: v for k, v in c.items() if k not in ("span_id", "call_id", "start_time_unix_nano",
                                   "end_time_unix_nano")} for c in a[2]["tool_calls"]]
            b[2]["tool_calls"] = [{k: v for k, v in c.items() if k not in ("span_id", "call_id", "start_time_unix_nano",
                                   "end_time_unix_nano")} for c in b[2]["tool_calls"]]
            assert a == b


# -- the plain OpenInference output lane against the general one --------------------------------------
def _oi_output_shapes(rng: random.Random) -> Iterator[dict[str, Any]]:
    """Flattened ``llm.output_messages.*`` keys of every shape the two ways must agree on (or the lane
    declines): roles, text and redacted content, calls with and without names or ids, more calls and
    messages than the key table holds, content parts, legacy function calls, tool answers, tool
    definitions and values that are not strings."""
    roles: list[Any] = [None, "assistant", "user", "model", "system", "tool", "", 7, "ai"]
    contents: list[Any] = [None, "", "done", "__REDACTED__", "<redacted>", 3, ("a", "b")]
    call_counts = [0, 1, 2, 3, 16, 17]
    for _ in range(3000):
        attrs: dict[str, Any] = {"openinference.span.kind": "LLM"}
        for i in range(rng.choice([0, 1, 1, 2, 4, 5])):
            base = f"llm.output_messages.{i}.message."
            role, content = rng.choice(roles), rng.choice(contents)
            if role is not None:
                attrs[base + "role"] = role
            if content is not None:
                attrs[base + "content"] = content
            for j in range(rng.choice(call_counts)):
                call = f"{base}tool_calls.{j}.tool_call."
                if rng.random() < 0.9:
                    attrs[call + "function.name"] = rng.choice([f"tool_{j}", "final_result", "transfer_to_b", "", 5])
                if rng.random() < 0.7:
                    attrs[call + "id"] = rng.choice([f"call_{i}_{j}", " c ", "null", ""])
                if rng.random() < 0.3:
                    attrs[call + "function.arguments"] = '{"a": 1}'
            odd = rng.random()
            if odd < 0.03:
                attrs[base + "contents.0.message_content.text"] = "part"
            elif odd < 0.06:
                attrs[base + "function_call.name"] = "legacy"
            elif odd < 0.09:
                attrs[base + "tool_call_id"] = "c9"
        if rng.random() < 0.05:
            attrs["llm.tools.0.tool.name"] = "get_weather"
        yield attrs


def test_plain_openinference_outputs_give_the_general_facts_or_decline() -> None:
    from otel_toolscore.extract import _content as content

    rng = random.Random(11)
    taken = declined = 0
    for attrs in _oi_output_shapes(rng):
        for opts in (ExtractOptions(capture_content=False), ExtractOptions(capture_content=False, max_calls_per_run=2)):
            fast = SpanFacts.new("t" * 32, "s" * 16, None, "llm", "m", 1, 5)
            if not content.oi_plain_outputs(fast, attrs, opts):
                declined += 1
                assert _facts(fast) == _facts(SpanFacts.new("t" * 32, "s" * 16, None, "llm", "m", 1, 5))
                continue
            taken += 1
            general = SpanFacts.new("t" * 32, "s" * 16, None, "llm", "m", 1, 5)
            content.openinference_outputs(general, attrs, opts)
            assert _facts(fast) == _facts(general), attrs
    assert taken > 1000 and declined > 1000, (taken, declined)


# -- the OTel GenAI message lane against the general parser -------------------------------------------
def _semconv_message_lists(rng: random.Random) -> Iterator[Any]:
    """Message lists of the conventions' own shape and of its near neighbours: every role, text and
    redacted parts, ADK's "For context:" turns, repr texts, calls with and without ids or names, extra
    keys on a message or a part, tool answers, other parts and values that are not what they seem."""
    roles: list[Any] = ["user", "assistant", "system", "tool", "model", "human", "developer", "ai", "", None, 3]
    texts: list[Any] = ["hi", "", "[REDACTED]", "For context: x", "{'tool_calls': []}", "ResponseFunctionToolCall(x)", 7]
    for _ in range(4000):
        messages: list[Any] = []
        for _m in range(rng.choice([0, 1, 1, 2, 3])):
            parts: list[Any] = []
            for _p in range(rng.choice([0, 1, 2, 3])):
                kind = rng.random()
                if kind < 0.45:
                    part: Any = {"type": "tool_call", "name": rng.choice(["get_weather", "final_result", "", None, 5])}
                    if rng.random() < 0.7:
                        part["id"] = rng.choice(["c1", " c2 ", "null", None, ""])
                    if rng.random() < 0.5:
                        part["arguments"] = rng.choice([{"city": "Paris"}, '{"a": 1}', None])
                    if rng.random() < 0.05:
                        part["toolCallId"] = "x"
                elif kind < 0.85:
                    part = {"type": "text", "content": rng.choice(texts)}
                    if rng.random() < 0.05:
                        part["text"] = "other"
                elif kind < 0.9:
                    part = {"type": "tool_call_response", "id": "c1", "response": "ok"}
                elif kind < 0.95:
                    part = {"type": "reasoning", "content": "think"}
                else:
                    part = rng.choice(["bare text", None, ["nested"]])
                parts.append(part)
            message: Any = {"role": rng.choice(roles), "parts": parts}
            if rng.random() < 0.3:
                message["finish_reason"] = "stop"
            if rng.random() < 0.05:
                message["content"] = "extra"
            if rng.random() < 0.03:
                message = {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}
            if rng.random() < 0.02:
                message = rng.choice(["text", None, [message]])
            messages.append(message)
        yield messages if rng.random() > 0.02 else {"messages": messages}


def test_plain_genai_outputs_give_the_general_facts_or_decline() -> None:
    """Output messages read straight to requested calls (content not kept) give the facts the general
    parser leaves once the answer's text is dropped, for a model and an agent span; anything else is
    declined untouched: other shapes, text that is no JSON, a NaN answer, a redaction marker."""
    import json

    from otel_toolscore.extract import _content as content

    rng = random.Random(17)
    taken = declined = 0
    odd = ["[REDACTED]", "not json", '[{"role": "assistant", "parts": [{"type": "text", "content": NaN}]}]', "", "[]"]
    values = [json.dumps(data) for data in _semconv_message_lists(rng)] + odd
    for text in values:
        for role in ("llm", "agent"):
            for opts in (ExtractOptions(capture_content=False), ExtractOptions(capture_content=False, max_calls_per_run=1)):
                fast = SpanFacts.new("t" * 32, "s" * 16, None, role, "m", 1, 5)
                if not content.genai_plain_outputs(fast, text, opts):
                    declined += 1
                    assert _facts(fast) == _facts(SpanFacts.new("t" * 32, "s" * 16, None, role, "m", 1, 5))
                    continue
                taken += 1
                general = SpanFacts.new("t" * 32, "s" * 16, None, role, "m", 1, 5)
                content.genai_output_messages(general, text, opts)
                general.final_output = None  # content is not kept (what the fast lane's caller leaves)
                assert _facts(fast) == _facts(general), (role, text)
    assert taken > 4000 and declined > 4000, (taken, declined)


def _one_pass_against_general(data: Any) -> tuple[int, int]:
    """(taken, declined) of ``data`` read in one pass at three caps, each reading taken held to what
    trying every shape gives."""
    from otel_toolscore.extract import _values as values

    taken = declined = 0
    fields = [f.name for f in dataclasses.fields(values.ParsedMessages)]
    for cap in (None, 1, 2000):
        fast = values.semconv_messages(data, cap)
        if fast is None:
            declined += 1
            continue
        taken += 1
        general = values._parse_any(data, cap)
        assert [list(getattr(fast, k)) if k == "calls" else getattr(fast, k) for k in fields] == [
            list(getattr(general, k)) if k == "calls" else getattr(general, k) for k in fields
        ], data
    return taken, declined


def test_semconv_messages_give_the_general_parse_or_decline() -> None:
    """The one-pass read of the conventions' own message shape gives what trying every shape gives."""
    rng = random.Random(5)
    taken = declined = 0
    for data in _semconv_message_lists(rng):
        t, d = _one_pass_against_general(data)
        taken, declined = taken + t, declined + d
    assert taken > 1000 and declined > 1000, (taken, declined)


def _history_with_tool_answers(rng: random.Random) -> Iterator[Any]:
    """Model-call histories as GenAI instrumentations record them after the first turn: the user's
    request, the model's calls, the tools' answers in ``tool`` messages, again — with answers of every
    kind (text, error reports, JSON, none) under ``response`` or ``result``, ids that are placeholders
    or no strings, answers in other roles' messages, answer parts with keys the conventions do not
    give them, and text parts whose content was not recorded."""
    ids: list[Any] = ["c1", " c2 ", "call_3", "null", "", None, 5]
    answers: list[Any] = ["ok", "ValueError: bad city", "Tool 'x' not found in agent", {"error": True, "message": "m"},
                          {"temp": 21}, [1, 2], None, "", "[REDACTED]"]
    for _ in range(3000):
        messages: list[Any] = [{"role": "user", "parts": [{"type": "text", "content": "weather?"}]}]
        for _turn in range(rng.choice([1, 1, 2, 3])):
            calls = [{"type": "tool_call", "id": rng.choice(ids[:3]), "name": "get_weather", "arguments": {"city": "P"}}
                     for _ in range(rng.choice([1, 1, 2]))]
            messages.append({"role": "assistant", "parts": calls})
            for _call in calls:
                part: Any = {"type": "tool_call_response", "id": rng.choice(ids)}
                if rng.random() < 0.9:
                    part[rng.choice(["response", "response", "result"])] = rng.choice(answers)  # Pydantic AI: result
                if rng.random() < 0.2:
                    part["name"] = "get_weather"
                if rng.random() < 0.05:
                    part[rng.choice(["is_error", "result", "output"])] = True
                role = "tool" if rng.random() < 0.9 else rng.choice(["user", "assistant"])
                message: Any = {"role": role, "parts": [part]}
                if rng.random() < 0.1:
                    message["parts"].append({"type": "text", "content": rng.choice(["note", "", "For context: y"])})
                if rng.random() < 0.05:
                    message["parts"].append({"type": "text"})  # content not recorded
                if rng.random() < 0.05:
                    message["tool_call_id"] = "c1"
                messages.append(message)
        if rng.random() < 0.5:
            messages.append({"role": "assistant", "parts": [{"type": "text", "content": "sunny"}], "finish_reason": "stop"})
        if rng.random() < 0.2:  # content not recorded: text parts without content
            messages = [{**m, "parts": [{"type": "text"} if p.get("type") == "text" else p for p in m["parts"]]} for m in messages]
        yield messages


def test_semconv_histories_with_tool_answers_give_the_general_parse() -> None:
    """A history's ``tool`` messages (``tool_call_response`` parts) are read in the one pass too — the
    usual input of every model call after the first — and give what trying every shape gives: each
    answer's id, value and error type, in order; anything else is declined, and the output lane
    (content not kept) still declines a tool's answer."""
    from otel_toolscore.extract import _values as values

    rng = random.Random(23)
    taken = declined = 0
    for data in _history_with_tool_answers(rng):
        t, d = _one_pass_against_general(data)
        taken, declined = taken + t, declined + d
        if any(m.get("role") == "tool" for m in data):
            assert values.semconv_output_calls(data, 10) is None
    assert taken > 4000 and declined > 500, (taken, declined)
