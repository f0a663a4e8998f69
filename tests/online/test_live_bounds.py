"""Hostile sizes, shapes and timings against the live processor.

One test per bound, each sending what was observed to hurt a host process: a backtracking regex,
100,000 tool calls in one message, a million-span trace, hundreds of thousands of open spans, a
parent-id ring, a downstream that blocks, a callback that hangs, full queues. Each asserts that the
application's thread stays O(1) (a generous ceiling on the time ``span.end()`` takes), that memory
and CPU stay bounded (generous ceilings; exact figures live in ``bench/``), and that every drop is
counted under its reason.
"""

from __future__ import annotations

import itertools
import json
import resource
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanContext, TraceFlags, set_span_in_context

from otel_toolscore import Expectation
from otel_toolscore.expectations import RulesError, load_rules
from otel_toolscore.scripted import run_scripted_agent
from tests.online.test_processor import Pipeline, make_pipeline

ROOT = Path(__file__).resolve().parents[2]
#: What ``span.end()`` / ``span.start()`` may take on the application's thread, at most, whatever
#: the input (the real figure is a few microseconds; this only catches work that grows with input).
END_CEILING_S = 0.05


def _dropped(p: Pipeline, reason: str) -> int:
    return p.counter("toolscore.dropped", **{"toolscore.reason": reason})


def _timed_end(span: Any) -> float:
    t0 = time.perf_counter()
    span.end()
    return time.perf_counter() - t0


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 2**20


# -- regexes --------------------------------------------------------------------------------------------
def test_backtracking_regex_cannot_stall_anything() -> None:
    """``(a+)+$`` froze span.end() 3.2 s on a 27-character query with a backtracking engine."""
    p = make_pipeline(expectations=[Expectation(name="evil", query_regex="(a+)+$", expected_tool="t")])
    tracer = p.tracer
    query = "a" * 27 + "!"
    with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}) as root:
        root.set_attribute(
            "gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": query}]}])
        )
        with tracer.start_as_current_span("execute_tool t", attributes={"gen_ai.operation.name": "execute_tool",
                                                                          "gen_ai.tool.name": "t"}):
            pass
        t0 = time.perf_counter()
    assert time.perf_counter() - t0 < END_CEILING_S
    t0 = time.perf_counter()
    p.flush()
    assert time.perf_counter() - t0 < 2.0  # RE2 matches in linear time
    assert p.counter("toolscore.runs", **{"toolscore.outcome": "no_expectation"}) == 1  # searched, no match
    long_query = "a" * 200_000 + "!"
    run_scripted_agent(tracer, "a", long_query, ["t"])
    t0 = time.perf_counter()
    p.flush()
    assert time.perf_counter() - t0 < 2.0
    p.provider.shutdown()


def test_a_pattern_that_cannot_be_bounded_is_refused_at_load(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: echo\n    query_regex: '(\\w+) \\1'\n    expected_tool: t\n")
    with pytest.raises(RulesError, match=r"rule #1 \(echo\).*linear time"):
        load_rules(rules)
    rules.write_text("rules:\n  - name: lookbehind\n    query_regex: '(?<=refund)s'\n    expected_tool: t\n")
    with pytest.raises(RulesError, match=r"lookbehind.*linear time"):
        load_rules(rules)
    with pytest.raises(ValueError, match="does not compile"):
        Expectation(query_regex="(unclosed", expected_tool="t")


# -- calls per run -----------------------------------------------------------------------------------------
def test_a_message_with_100k_tool_calls() -> None:
    """A root message with 100k calls cost 1.8 s in span.end(): calls past the cap are never built.
    (The 7 MB message is under a raised parse limit here; the default refuses it, next test.)"""
    p = make_pipeline(
        expectations=[Expectation(expected_tool="t0")], max_calls_per_run=1_000, max_parse_chars=16 * 2**20
    )
    tracer = p.tracer
    parts = [{"type": "tool_call", "id": f"c{i}", "name": f"t{i % 7}", "arguments": {}} for i in range(100_000)]
    output = json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}])
    root = tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    chat = tracer.start_span("chat m", context=set_span_in_context(root), attributes={"gen_ai.operation.name": "chat"})
    chat.set_attribute("gen_ai.output.messages", output)
    assert _timed_end(chat) < END_CEILING_S
    assert _timed_end(root) < END_CEILING_S
    t0 = time.process_time()
    p.flush()
    assert time.process_time() - t0 < 20.0  # one pass over the JSON (about 1 s here)
    (scored,) = [s for s in p.spans.get_finished_spans() if s.name == "invoke_agent a"]
    assert scored.attributes["toolscore.tool_call_count"] == 1_000
    assert _dropped(p, "calls_per_run_limit") == 99_000
    p.provider.shutdown()


def _longest_stall(work: Any) -> float:
    """Run ``work`` while another thread ticks every millisecond; the longest gap between its ticks
    is how long the application's threads could not run (a C call holding the interpreter lock)."""
    ticks: list[float] = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        work()
    finally:
        done.set()
        ticker.join()
    return max((b - a for a, b in itertools.pairwise(ticks)), default=0.0)


def test_json_too_long_to_parse_is_not_parsed_and_is_counted() -> None:
    """A 28 MB output message held the interpreter lock ~0.9 s in one JSON parse on the worker, and
    every application thread waited: text past max_parse_chars is not parsed, and is counted."""
    p = make_pipeline(expectations=[Expectation(expected_tool="t")])
    part = json.dumps({"type": "tool_call", "id": "c", "name": "t", "arguments": {"q": "x" * 8}})
    output = '[{"role":"assistant","finish_reason":"tool_call","parts":[' + ",".join([part] * 400_000) + "]}]"
    assert len(output) > 25_000_000
    root = p.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    chat = p.tracer.start_span("chat m", context=set_span_in_context(root), attributes={"gen_ai.operation.name": "chat"})
    chat.set_attribute("gen_ai.output.messages", output)
    tool = p.tracer.start_span(
        "execute_tool t", context=set_span_in_context(root),
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "gen_ai.tool.call.id": "c1"},
    )
    tool.end()
    assert _timed_end(chat) < END_CEILING_S
    assert _timed_end(root) < END_CEILING_S
    stall = _longest_stall(p.flush)
    assert stall < 0.5, f"application threads stalled {stall:.3f} s"  # about 5 ms here; parsing took ~900 ms
    (scored,) = [s for s in p.spans.get_finished_spans() if s.name == "invoke_agent a"]
    assert scored.attributes["toolscore.tool_call_count"] == 1  # the executed call; the message was not read
    assert scored.attributes["toolscore.code.score"] == 1.0
    assert _dropped(p, "content_too_large") == 1
    del output
    p.provider.shutdown()


def test_each_piece_of_content_is_held_to_the_parse_limit() -> None:
    """Parsers given a whole attribute mapping (flattened conventions) or a tool's own arguments
    check every piece: a long one is counted and kept as text, the rest of the span is read."""
    scored_runs: list[Any] = []
    p = make_pipeline(expectations=[Expectation(expected_tool="t")], max_parse_chars=1_000, capture_content=True,
                      on_scored=scored_runs.append)
    long_args = json.dumps({"q": "x" * 2_000})
    root = p.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    ctx = set_span_in_context(root)
    p.tracer.start_span("chat m", context=ctx, attributes={  # OpenInference, flattened
        "openinference.span.kind": "LLM",
        "llm.tools.0.tool.json_schema": json.dumps({"name": "t", "parameters": {"d": "y" * 2_000}}),
        "llm.tools.1.tool.json_schema": json.dumps({"name": "u"}),
    }).end()
    p.tracer.start_span("execute_tool t", context=ctx, attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "gen_ai.tool.call.arguments": long_args,
    }).end()
    root.end()
    p.flush()
    (scored,) = [s for s in p.spans.get_finished_spans() if s.name == "invoke_agent a"]
    assert scored.attributes["toolscore.code.score"] == 1.0
    assert _dropped(p, "content_too_large") == 2
    p.processor.shutdown()
    (run,) = [s.run for s in scored_runs]
    assert isinstance(run.tool_calls[0].arguments, str) and run.tool_calls[0].arguments.startswith('{"q": "xxx')
    assert [t.name for t in run.available_tools] == ["u"]  # the long definition is named by nothing parseable
    p.provider.shutdown()


def test_parse_limit_is_a_setting_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from otel_toolscore.settings import Settings

    assert Settings().max_parse_chars == 1_048_576
    monkeypatch.setenv("OTEL_TOOLSCORE_MAX_PARSE_CHARS", "2048")
    assert Settings.from_env().max_parse_chars == 2048


def test_offline_reports_the_json_it_did_not_parse(tmp_path: Path) -> None:
    """The offline reader applies the same limit and names the value in its report."""
    from otel_toolscore.extract import ExtractOptions, extract_runs_with_report

    calls = [{"type": "tool_call", "id": f"c{i}", "name": "t", "arguments": {}} for i in range(50)]
    output = json.dumps([{"role": "assistant", "parts": calls}])

    def span(span_id: str, parent: str, name: str, attrs: dict[str, str]) -> dict[str, Any]:
        return {"traceId": "ab" * 16, "spanId": span_id, "parentSpanId": parent, "name": name,
                "startTimeUnixNano": "1", "endTimeUnixNano": "2",
                "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}

    spans = [span("01" * 8, "", "invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}),
             span("02" * 8, "01" * 8, "chat m", {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output})]
    path = str(tmp_path / "t.jsonl")
    Path(path).write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    (run,), _ = extract_runs_with_report([path])
    assert len(run.tool_calls) == 50
    (run,), report = extract_runs_with_report([path], ExtractOptions(max_parse_chars=1_000))
    assert run.tool_calls == []
    assert any("over max_parse_chars (1,000): not parsed" in p for p in report.problems()), report.problems()


# -- spans per trace --------------------------------------------------------------------------------------
class _Discard(SpanProcessor):
    """A downstream that keeps nothing (an in-memory exporter would hold every span itself)."""

    def on_end(self, span: ReadableSpan) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_one_open_root_and_many_ended_children_stay_bounded() -> None:
    """One open root + 1M ended children grew +182 MB uncounted: links and facts are capped."""
    p = make_pipeline(
        downstream=_Discard(),
        expectations=[Expectation(expected_tool="t")],
        max_known_spans_per_trace=5_000,
        max_spans_per_trace=500,
    )
    tracer = p.tracer
    root = tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    ctx = set_span_in_context(root)
    tool_attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}
    before = _rss_mb()
    worst = 0.0
    for i in range(120_000):
        child = tracer.start_span("db query" if i % 4 else "execute_tool t", context=ctx,
                                  attributes=None if i % 4 else tool_attrs)
        worst = max(worst, _timed_end(child))
        if i % 20_000 == 0:
            p.processor.force_flush(30_000)  # keep the queue from filling: this test is about the trace
    p.processor.force_flush(30_000)
    (state,) = p.processor._core.table.traces.values()
    assert len(state.parents) <= 5_000 and len(state.facts) <= 500
    assert _rss_mb() - before < 150  # the spans themselves are exported and freed; what we keep is capped
    assert worst < END_CEILING_S
    assert _dropped(p, "known_spans_limit") >= 120_000 - 5_000
    assert _dropped(p, "spans_per_trace_limit") >= 30_000 - 500
    assert _timed_end(root) < END_CEILING_S
    p.flush()
    assert p.processor.pending_traces == 0
    assert p.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 1
    p.provider.shutdown()


def test_many_open_spans_stay_bounded() -> None:
    """600k open tool spans grew +1.9 GB: open spans tracked per trace are capped and counted."""
    p = make_pipeline(expectations=[Expectation(expected_tool="t")], max_open_spans_per_trace=1_000)
    tracer = p.tracer
    root = tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    ctx = set_span_in_context(root)
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}
    open_spans = [tracer.start_span("execute_tool t", context=ctx, attributes=attrs) for _ in range(20_000)]
    p.processor.force_flush(30_000)
    (state,) = p.processor._core.table.traces.values()
    assert len(state.open) <= 1_000 and len(state.started) <= 1_000
    assert _dropped(p, "open_spans_limit") == 20_000 + 1 - 1_000
    for s in open_spans:
        s.end()
    root.end()
    p.flush()
    assert p.processor.pending_traces == 0
    assert p.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 1
    p.provider.shutdown()


def test_max_pending_traces_is_exact() -> None:
    p = make_pipeline(expectations=[Expectation(expected_tool="t")], max_pending_traces=1_000)
    roots = [p.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
             for _ in range(1_008)]
    p.processor.force_flush(10_000)
    assert p.processor.pending_traces == 1_000
    assert _dropped(p, "pending_traces_limit") == 8
    assert p.counter("toolscore.runs", **{"toolscore.outcome": "evicted"}) == 8
    for r in roots:
        r.end()
    p.flush()
    assert p.processor.pending_traces == 0
    p.provider.shutdown()


# -- malformed parent links ----------------------------------------------------------------------------------
def _replayed(trace_id: int, span_id: int, parent: int | None, name: str, attrs: dict[str, Any]) -> ReadableSpan:
    flags = TraceFlags(TraceFlags.SAMPLED)
    return ReadableSpan(
        name=name,
        context=SpanContext(trace_id, span_id, is_remote=False, trace_flags=flags),
        parent=SpanContext(trace_id, parent, is_remote=False, trace_flags=flags) if parent is not None else None,
        attributes=attrs,
        start_time=span_id,
        end_time=span_id + 1,
    )


@pytest.mark.parametrize("shape", ["ring", "self-parent"])
def test_parent_cycles_cost_linear_time(shape: str) -> None:
    """A parent-id ring made span.end() take 0.3-0.7 s: every walk is O(spans) and cycle-safe."""
    p = make_pipeline(expectations=[Expectation(expected_tool="t")], root_grace_ms=0)
    n = 4_000
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}
    agent = {"gen_ai.operation.name": "invoke_agent"}
    if shape == "ring":
        spans = [_replayed(7, i, (i % n) + 1, "execute_tool t" if i % 3 else "invoke_agent a", tool if i % 3 else agent)
                 for i in range(1, n + 1)]
    else:
        spans = [_replayed(7, i, i, "invoke_agent a" if i % 2 else "execute_tool t", agent if i % 2 else tool)
                 for i in range(1, n + 1)]
    t0 = time.process_time()
    for s in spans:
        p.processor.on_start(s)  # type: ignore[arg-type]  # as the service replays decoded spans
    for s in spans:
        p.processor.on_end(s)
    p.processor.force_flush(60_000)
    assert time.process_time() - t0 < 30.0  # quadratic walks took minutes here
    assert p.processor.pending_traces == 0
    p.provider.shutdown()


# -- what the host does to us -----------------------------------------------------------------------------
class _BlockingDownstream(SpanProcessor):
    """Blocks in ``on_end`` for as long as the test wants, for what the processor's worker hands on
    (roots): an exporting processor stuck on a lock or a full pipe."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.blocked = threading.Event()
        self.ended = 0

    def on_end(self, span: ReadableSpan) -> None:
        if threading.current_thread().name.startswith("otel-toolscore"):
            self.blocked.set()
            self.release.wait()
        self.ended += 1

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_a_blocking_downstream_cannot_stretch_a_flush() -> None:
    """force_flush(2000) took 20 s behind a downstream blocking in on_end."""
    downstream = _BlockingDownstream()
    p = make_pipeline(downstream=downstream, expectations=[Expectation(expected_tool="t")], span_queue_size=64)
    try:
        run_scripted_agent(p.tracer, "a", "q", ["t"])
        assert downstream.blocked.wait(5)
        t0 = time.monotonic()
        assert p.processor.force_flush(2_000) is False
        assert time.monotonic() - t0 < 3.0
        worst = 0.0
        for _ in range(40):  # the worker is stuck: the queue fills, spans are still handed on, counted
            t0 = time.perf_counter()
            run_scripted_agent(p.tracer, "a", "q", ["t"])
            worst = max(worst, time.perf_counter() - t0)
        assert worst < 1.0
        # once the queue is full, spans go on from the application's thread (roots unscored: the
        # worker that would score them is stuck)
        assert downstream.ended >= 40 * 2
    finally:
        downstream.release.set()
    p.flush()
    assert _dropped(p, "span_queue_full") > 0
    p.provider.shutdown()


def test_flushes_behind_a_stuck_worker_hold_at_most_a_queue_of_spans() -> None:
    """The worker hands every span on; stuck in a downstream's on_end, what it has not handed on
    cannot grow with each flush (a flush scores the queue on its caller's thread): at most one
    queue's worth is held, the rest stays queued and, the queue full, goes on from on_end, counted."""
    downstream = _BlockingDownstream()
    p = make_pipeline(downstream=downstream, expectations=[Expectation(expected_tool="t")], span_queue_size=64)
    try:
        run_scripted_agent(p.tracer, "a", "q", ["t"])
        assert downstream.blocked.wait(5)
        for _ in range(30):
            for _ in range(20):
                run_scripted_agent(p.tracer, "a", "q", ["t"])
            p.processor.force_flush(20)
            assert len(p.processor._forwards) <= 64
        assert _dropped(p, "span_queue_full") > 0
    finally:
        downstream.release.set()
    p.flush()
    assert not p.processor._forwards
    p.provider.shutdown()


_EXIT_CHILD = textwrap.dedent(
    """
    import threading
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from otel_toolscore import Expectation, ToolScoreSpanProcessor
    from otel_toolscore.scripted import run_scripted_agent

    class Stuck(SpanProcessor):
        def on_end(self, span):
            if threading.current_thread().name.startswith("otel-toolscore"):
                threading.Event().wait()

    provider = TracerProvider()
    provider.add_span_processor(ToolScoreSpanProcessor(Stuck(), expectations=[Expectation(expected_tool="t")]))
    run_scripted_agent(provider.get_tracer("x"), "a", "q", ["t"])
    print("ran", flush=True)
    """
)


def test_process_exit_never_hangs_on_a_blocking_downstream() -> None:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _EXIT_CHILD], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ran" in proc.stdout
    assert time.monotonic() - t0 < 20.0  # the exit drain (5 s) and shutdown give up on a stuck worker


def test_a_hanging_callback_never_blocks_scoring_or_counting() -> None:
    """A hanging on_scored left 17,953 runs out of toolscore.runs."""
    gate = threading.Event()
    p = make_pipeline(expectations=[Expectation(expected_tool="t")], on_scored=lambda run: gate.wait(),
                      callback_queue_size=10)
    try:
        for _ in range(200):
            run_scripted_agent(p.tracer, "a", "q", ["t"])
        p.processor.force_flush(1_000)  # the callback thread never drains: False, within its time
        assert p.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 200
        # held at most: the queue (10) and the batch the callback thread took before it hung (<= 10)
        assert _dropped(p, "callback_queue_full") >= 200 - 2 * 10
        assert len([s for s in p.spans.get_finished_spans() if "toolscore.code.score" in (s.attributes or {})]) == 200
    finally:
        gate.set()
    p.provider.shutdown()


class _StuckLogExporter(LogRecordExporter):
    def __init__(self) -> None:
        self.gate = threading.Event()

    def export(self, batch: Any) -> LogRecordExportResult:
        self.gate.wait()
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        self.gate.set()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_a_full_emit_queue_drops_events_not_counts() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_toolscore import ToolScoreSpanProcessor

    exporter = _StuckLogExporter()
    lp = LoggerProvider()
    lp.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    reader = InMemoryMetricReader()
    spans = InMemorySpanExporter()
    processor = ToolScoreSpanProcessor(SimpleSpanProcessor(spans), expectations=[Expectation(expected_tool="t")],
                                       meter_provider=MeterProvider(metric_readers=[reader]), logger_provider=lp,
                                       emit_queue_size=5)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    p = Pipeline(processor, provider, spans, None, reader)  # type: ignore[arg-type]
    try:
        for _ in range(100):
            run_scripted_agent(provider.get_tracer("x"), "a", "q", ["t"])
        processor.force_flush(1_000)
        assert p.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 100
        assert _dropped(p, "emit_queue_full") >= 100 - 2 * 5 - 1
    finally:
        exporter.gate.set()
    provider.shutdown()


def test_a_log_processor_added_later_moves_the_events_off_the_worker() -> None:
    """Events are written on the worker only while every log processor only queues; the answer is
    kept between releases, so adding a processor that may block must be seen at the next release."""
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, InMemoryLogRecordExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_toolscore import ToolScoreSpanProcessor

    class Threads:
        """A log processor that may block (not a batch processor): records where each record is written."""

        def __init__(self) -> None:
            self.threads: list[str] = []

        def on_emit(self, log_record: Any) -> None:
            self.threads.append(threading.current_thread().name)

        emit = on_emit

        def shutdown(self) -> None:
            pass

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return True

    lp = LoggerProvider()
    lp.add_log_record_processor(BatchLogRecordProcessor(InMemoryLogRecordExporter()))
    spans = InMemorySpanExporter()
    processor = ToolScoreSpanProcessor(SimpleSpanProcessor(spans), expectations=[Expectation(expected_tool="t")],
                                       logger_provider=lp)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("x")
    try:
        run_scripted_agent(tracer, "a", "q", ["t"])
        assert processor.force_flush(5_000)
        assert processor.outputs._only_queues() is True
        late = Threads()
        lp.add_log_record_processor(late)  # type: ignore[arg-type]
        for _ in range(3):
            run_scripted_agent(tracer, "a", "q", ["t"])
        assert processor.force_flush(5_000)
        assert late.threads == ["otel-toolscore-emitter"] * 3
    finally:
        provider.shutdown()
