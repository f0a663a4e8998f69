"""The bench's lean full design (``bench/lean_design.py``) is a real design, not a fake floor.

On the hot-path workloads (7-span GenAI with content on and off, 30-span OpenInference), a trace
with a sub-agent, and a trace where the model asked for a call no tool span ran, the lean design and
ours (``ToolScoreSpanProcessor`` as ``bench/pipelines.py``'s ``candidate_pipeline`` builds it, with an
in-memory exporter behind it) give every run the same score, the same tool sequence, the same score
attributes on the root's copy, the same evaluation records and the same metric points. No timing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from bench.lean_design import LeanDesignProcessor, LeanExpectation
from bench.workloads import WORKLOADS
from otel_toolscore import Expectation, ToolScoreSpanProcessor
from tests.support.telemetry import metric_points

Run = Callable[[Any, int], None]


class Outputs:
    """One pipeline's exported spans, log records and metric points."""

    def __init__(self, make: Callable[[SpanProcessor, MeterProvider, LoggerProvider], SpanProcessor]) -> None:
        self.spans = InMemorySpanExporter()
        self.logs = InMemoryLogRecordExporter()
        self.metrics = InMemoryMetricReader()
        self.lp = LoggerProvider()
        self.lp.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        self.mp = MeterProvider(metric_readers=[self.metrics])
        self.processor = make(SimpleSpanProcessor(self.spans), self.mp, self.lp)
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("test")

    def close(self) -> None:
        self.provider.force_flush()
        self.lp.force_flush()
        self.provider.shutdown()
        self.lp.shutdown()
        self.mp.shutdown()

    def scored_roots(self) -> list[tuple[str, dict[str, Any]]]:
        """(span name, score attributes) of every root copy carrying a score, in export order."""
        out = []
        for span in self.spans.get_finished_spans():
            attrs = dict(span.attributes or {})
            if "toolscore.code.score" in attrs:
                added = {k: v for k, v in attrs.items() if k.startswith(("toolscore.", "annotations."))}
                out.append((span.name, {k: list(v) if isinstance(v, tuple) else v for k, v in added.items()}))
        return out

    def records(self) -> list[tuple[str, dict[str, Any], int, int]]:
        """(body, attributes, trace id, span id) of every evaluation record."""
        out = []
        for r in self.logs.get_finished_logs():
            rec = r.log_record
            if rec.event_name == "gen_ai.evaluation.result":
                out.append((str(rec.body), dict(rec.attributes or {}), rec.trace_id or 0, rec.span_id or 0))
        return out

    def points(self, name: str) -> list[tuple[tuple[tuple[str, Any], ...], Any]]:
        out = []
        for p in metric_points(self.metrics, name):
            value = (p.count, p.sum) if hasattr(p, "count") else p.value
            out.append((tuple(sorted((p.attributes or {}).items())), value))
        return sorted(out)


def _key(record: tuple[str, dict[str, Any], int, int]) -> str:
    return json.dumps(record[:2], sort_keys=True)


def _ours(expectation: Expectation) -> Outputs:
    return Outputs(lambda down, mp, lp: ToolScoreSpanProcessor(
        down, expectations=[expectation], meter_provider=mp, logger_provider=lp))


def _lean(expectation: Expectation) -> Outputs:
    return Outputs(lambda down, mp, lp: LeanDesignProcessor(
        down, expectation=LeanExpectation.like(expectation), meter_provider=mp, logger_provider=lp))


def _compare(run: Run, runs: int, expectation: Expectation, spans_per_run: int) -> list[tuple[str, dict[str, Any]]]:
    """Run both pipelines on the same runs; assert they wrote the same things; return the scored roots."""
    results = []
    for make in (_ours, _lean):
        out = make(expectation)
        for i in range(runs):
            run(out.tracer, i)
        out.close()
        spans = out.spans.get_finished_spans()
        assert len(spans) == runs * spans_per_run  # every span handed on, once
        results.append((out.scored_roots(), out.records(), out.points("gen_ai.evaluation.score"),
                        out.points("toolscore.runs"), out))
    (o_roots, o_records, o_hist, o_runs, _), (l_roots, l_records, l_hist, l_runs, lean) = results
    assert l_roots == o_roots  # score, tool sequence, every score attribute, run by run
    # one evaluation record per scored run, the same body and attributes (written in any order),
    # parented to the run's root
    assert sorted(_key(r) for r in l_records) == sorted(_key(r) for r in o_records)
    roots = {(s.context.trace_id, s.context.span_id) for s in lean.spans.get_finished_spans()
             if "toolscore.code.score" in (s.attributes or {})}
    assert {(r[2], r[3]) for r in l_records} == roots
    assert l_hist == o_hist
    assert l_runs == o_runs
    assert not lean.processor.dropped_total  # type: ignore[attr-defined]
    return l_roots


@pytest.mark.parametrize(("workload", "content"), [("genai7", False), ("genai7", True), ("openinference30", True),
                                                   ("openinference30", False)])
def test_hot_path_workloads_score_alike(workload: str, content: bool) -> None:
    run_fn, spans_per_run, expectation = WORKLOADS[workload]
    roots = _compare(lambda tracer, i: run_fn(tracer, content, i), 12, expectation, spans_per_run)
    assert len(roots) == 12
    if workload == "genai7":
        assert all(r[1]["toolscore.code.actual_tools"] == [f"tool_{k}" for k in range(5)] for r in roots)
    else:
        assert all(r[1]["toolscore.code.actual_tools"] == [f"tool_{k}" for k in range(7)] for r in roots)
    assert all(r[1]["toolscore.code.score"] == 1.0 for r in roots)


def _genai_span(tracer: Any, name: str, parent: Any, attrs: dict[str, Any]) -> Any:
    return tracer.start_span(name, context=set_span_in_context(parent) if parent is not None else None,
                             attributes=attrs)


def _chat(tracer: Any, parent: Any, calls: list[tuple[str, str]]) -> None:
    parts = [{"type": "tool_call", "id": cid, "name": name, "arguments": {}} for cid, name in calls]
    chat = _genai_span(tracer, "chat m", parent, {"gen_ai.operation.name": "chat"})
    chat.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": parts}]))
    chat.end()


def _tool(tracer: Any, parent: Any, name: str, cid: str | None, end: bool = True) -> Any:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if cid is not None:
        attrs["gen_ai.tool.call.id"] = cid
    span = _genai_span(tracer, f"execute_tool {name}", parent, attrs)
    if end:
        span.end()
    return span


def _nested(tracer: Any, i: int) -> None:
    """planner → chat (asks lookup, ask_helper) → lookup, ask_helper → [helper → chat (asks search,
    fetch) → search, fetch] → chat (asks finish) → finish. The helper's calls are its own run's."""
    root = _genai_span(tracer, "invoke_agent planner", None,
                       {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"})
    _chat(tracer, root, [(f"p{i}a", "lookup"), (f"p{i}b", "ask_helper")])
    _tool(tracer, root, "lookup", f"p{i}a")
    host = _tool(tracer, root, "ask_helper", f"p{i}b", end=False)
    helper = _genai_span(tracer, "invoke_agent helper", host,
                         {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"})
    _chat(tracer, helper, [(f"h{i}a", "search"), (f"h{i}b", "fetch")])
    _tool(tracer, helper, "search", f"h{i}a")
    _tool(tracer, helper, "fetch", None)  # no id: paired with the request by name
    helper.end()
    host.end()
    _chat(tracer, root, [(f"p{i}c", "finish")])
    _tool(tracer, root, "finish", f"p{i}c")
    root.end()


def test_nested_sub_agent_runs_are_split_alike() -> None:
    expectation = Expectation(expected_tool_order=("lookup", "ask_helper", "finish"))
    roots = _compare(_nested, 6, expectation, 10)
    assert [name for name, _ in roots[:2]] == ["invoke_agent helper", "invoke_agent planner"]
    helper, planner = roots[0][1], roots[1][1]
    assert helper["toolscore.code.actual_tools"] == ["search", "fetch"] and helper["toolscore.code.score"] == 0.0
    assert planner["toolscore.code.actual_tools"] == ["lookup", "ask_helper", "finish"]
    assert planner["toolscore.code.score"] == 1.0


def test_an_expectation_for_one_agent_leaves_the_sub_agent_unscored_alike() -> None:
    expectation = Expectation(agent_name="helper", expected_tool="search", strict_mode=True)
    roots = _compare(_nested, 4, expectation, 10)
    assert [name for name, _ in roots] == ["invoke_agent helper"] * 4
    assert all(r[1]["toolscore.code.score"] == 0.0 for r in roots)  # strict: two calls made


def _requested_only(tracer: Any, i: int) -> None:
    """The model asks for three calls; only the first and the last ran (a tool span with no request
    runs too): the one that never ran still counts, in the model's order."""
    root = _genai_span(tracer, "invoke_agent a", None,
                       {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
    _chat(tracer, root, [(f"c{i}0", "search"), (f"c{i}1", "book"), (f"c{i}2", "notify")])
    _tool(tracer, root, "search", f"c{i}0")
    _tool(tracer, root, "notify", f"c{i}2")
    _tool(tracer, root, "audit", None)
    root.end()


@pytest.mark.parametrize("strict", [False, True])
def test_a_requested_call_without_a_tool_span_counts_alike(strict: bool) -> None:
    expectation = Expectation(expected_tool_order=("search", "book", "notify"), strict_mode=strict)
    roots = _compare(_requested_only, 5, expectation, 5)
    assert all(r[1]["toolscore.code.actual_tools"] == ["search", "book", "notify", "audit"] for r in roots)
    assert all(r[1]["toolscore.code.score"] == (0.0 if strict else 1.0) for r in roots)


def test_the_expectation_it_cannot_score_is_refused() -> None:
    with pytest.raises(ValueError, match="ordered"):
        LeanExpectation.like(Expectation(expected_tool_order=("a",), match="unordered"))
    with pytest.raises(ValueError):
        LeanExpectation()


def _one_run(**limits: Any) -> tuple[LeanDesignProcessor, TracerProvider, InMemorySpanExporter, int]:
    """A lean design over an in-memory exporter, its worker asleep in a 10 s poll, and a genai7 run
    (content off) made through it."""
    spans = InMemorySpanExporter()
    processor = LeanDesignProcessor(SimpleSpanProcessor(spans), expectation=LeanExpectation("tool_0"),
                                    meter_provider=MeterProvider(), logger_provider=LoggerProvider(),
                                    poll_s=10.0, **limits)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    time.sleep(0.05)  # the worker is asleep in its poll
    run_fn, spans_per_run, _ = WORKLOADS["genai7"]
    run_fn(provider.get_tracer("t"), False, 0)
    return processor, provider, spans, spans_per_run


def test_force_flush_does_not_wait_for_the_poll() -> None:
    """A final flush wakes the worker at once and returns when everything queued is handed on
    (a generous ceiling, far below the 10 s poll)."""
    processor, provider, spans, spans_per_run = _one_run()
    t0 = time.monotonic()
    assert processor.force_flush(30_000)
    assert time.monotonic() - t0 < 5.0
    assert len(spans.get_finished_spans()) == spans_per_run
    assert processor.pending_traces == 0
    provider.shutdown()


def test_a_trace_over_its_fact_limit_drops_facts_and_counts_them() -> None:
    processor, provider, spans, spans_per_run = _one_run(max_spans_per_trace=3)
    assert processor.force_flush(30_000)
    assert processor.dropped_total["spans_per_trace_limit"] == 3  # 6 tool/model spans, 3 kept
    assert len(spans.get_finished_spans()) == spans_per_run
    provider.shutdown()


def test_a_full_queue_hands_spans_on_and_counts_them() -> None:
    """Room for two items: the root's start context and the chat span's end; the other six ends are
    handed straight on (not lost) and counted."""
    processor, provider, spans, spans_per_run = _one_run(span_queue_size=2)
    assert len(spans.get_finished_spans()) == spans_per_run - 1
    assert processor.force_flush(30_000)
    assert processor.dropped_total["span_queue_full"] == spans_per_run - 1
    assert len(spans.get_finished_spans()) == spans_per_run
    provider.shutdown()


def test_a_trace_over_the_pending_limit_is_evicted_and_its_late_spans_counted() -> None:
    """Two traces open at once with room for one: the first is evicted when the second starts, and
    its spans that end afterwards are counted as late (handed on all the same)."""
    spans = InMemorySpanExporter()
    processor = LeanDesignProcessor(SimpleSpanProcessor(spans), expectation=LeanExpectation("t"),
                                    meter_provider=MeterProvider(), logger_provider=LoggerProvider(),
                                    max_pending_traces=1)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    first = _genai_span(tracer, "invoke_agent a", None, {"gen_ai.operation.name": "invoke_agent"})
    second = _genai_span(tracer, "invoke_agent b", None, {"gen_ai.operation.name": "invoke_agent"})
    _tool(tracer, second, "t", "1")
    second.end()
    _tool(tracer, first, "t", "2")
    first.end()
    assert processor.force_flush(30_000)
    assert processor.dropped_total["pending_traces_limit"] == 1
    assert processor.dropped_total["late_span"] == 2
    assert len(spans.get_finished_spans()) == 4
    assert [s.name for s in spans.get_finished_spans() if "toolscore.code.score" in (s.attributes or {})] == [
        "invoke_agent b"]
    provider.shutdown()
