"""The span processor end to end with the real SDK: in-memory exporters, metric reader and log exporter."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import baggage, context
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore import Expectation, ToolScoreSpanProcessor, expect
from otel_toolscore.scripted import ScriptedCall, run_scripted_agent
from tests.support.telemetry import counter_total, evaluation_events, metric_points


@dataclass
class Pipeline:
    processor: ToolScoreSpanProcessor
    provider: TracerProvider
    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter
    metrics: InMemoryMetricReader

    @property
    def tracer(self) -> Any:
        return self.provider.get_tracer("test")

    def flush(self) -> None:
        assert self.processor.force_flush(5_000)

    def roots(self) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name.startswith("invoke_agent")]

    def events(self) -> list[Any]:
        return evaluation_events(self.logs.get_finished_logs())

    def metric_points(self, name: str) -> list[Any]:
        return metric_points(self.metrics, name)

    def counter(self, name: str, **attrs: Any) -> int:
        return counter_total(self.metrics, name, **attrs)


def make_pipeline(downstream: SpanProcessor | None = None, **options: Any) -> Pipeline:
    spans = InMemorySpanExporter()
    logs = InMemoryLogRecordExporter()
    reader = InMemoryMetricReader()
    lp = LoggerProvider()
    lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
    mp = MeterProvider(metric_readers=[reader])
    processor = ToolScoreSpanProcessor(
        downstream if downstream is not None else SimpleSpanProcessor(spans),
        meter_provider=mp,
        logger_provider=lp,
        **options,
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    return Pipeline(processor, provider, spans, logs, reader)


@pytest.fixture
def pipe() -> Iterator[Pipeline]:
    p = make_pipeline(expectations=[Expectation(agent_name="weather_agent", expected_tool="get_weather")])
    yield p
    p.provider.shutdown()


def test_scores_the_root_and_forwards_every_span(pipe: Pipeline) -> None:
    run_scripted_agent(pipe.tracer, "weather_agent", "Weather in Paris?", [ScriptedCall("get_weather", {"city": "Paris"})])
    pipe.flush()
    spans = pipe.spans.get_finished_spans()
    assert sorted(s.name for s in spans) == ["chat model", "execute_tool get_weather", "invoke_agent weather_agent"]
    (root,) = pipe.roots()
    a = root.attributes
    assert a["toolscore.code.score"] == 1.0
    assert a["toolscore.code.label"] == "pass"
    assert a["toolscore.code.expected_tool"] == "get_weather"
    assert list(a["toolscore.code.actual_tools"]) == ["get_weather"]
    assert a["toolscore.code.strict_mode"] is False
    assert a["toolscore.code.correct_tool_called"] is True
    assert "toolscore.code.correct_order_called" not in a
    assert a["toolscore.tool_call_count"] == 1
    assert a["annotations.0.annotation.name"] == "tool_call_accuracy"
    assert a["annotations.0.annotation.score"] == 1.0
    assert a["annotations.0.annotation.label"] == "pass"
    assert a["annotations.0.annotation.annotator_kind"] == "CODE"
    # The copy keeps the original's identity and data.
    assert a["gen_ai.agent.name"] == "weather_agent"
    others = [s for s in spans if s is not root]
    assert all("toolscore.code.score" not in s.attributes for s in others)


def test_event_is_parented_to_the_root_and_metrics_recorded(pipe: Pipeline) -> None:
    run_scripted_agent(pipe.tracer, "weather_agent", "Weather?", ["search_web"])
    pipe.flush()
    (root,) = pipe.roots()
    (event,) = pipe.events()
    assert event.trace_id == root.context.trace_id
    assert event.span_id == root.context.span_id
    attrs = event.attributes
    assert attrs["gen_ai.evaluation.name"] == "tool_call_accuracy"
    assert attrs["gen_ai.evaluation.score.value"] == 0.0
    assert attrs["gen_ai.evaluation.score.label"] == "fail"
    assert "get_weather" in attrs["gen_ai.evaluation.explanation"]
    assert "search_web" in attrs["gen_ai.evaluation.explanation"]
    assert attrs["gen_ai.agent.name"] == "weather_agent"
    (hist,) = pipe.metric_points("gen_ai.evaluation.score")
    assert hist.count == 1 and hist.sum == 0.0
    assert dict(hist.attributes) == {
        "gen_ai.evaluation.name": "tool_call_accuracy",
        "gen_ai.evaluation.score.label": "fail",
        "gen_ai.agent.name": "weather_agent",
        "toolscore.expected_tool": "get_weather",
    }
    assert list(hist.explicit_bounds)[0] == 0.0 and list(hist.explicit_bounds)[-1] == 0.99
    assert pipe.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 1
    # Exemplars link the histogram to the evaluated trace.
    ex = [e for e in hist.exemplars]
    assert ex and ex[0].trace_id == root.context.trace_id


def test_no_expectation_is_counted_not_scored(pipe: Pipeline) -> None:
    run_scripted_agent(pipe.tracer, "other_agent", "hi", ["x"])
    pipe.flush()
    (root,) = pipe.roots()
    assert "toolscore.code.score" not in root.attributes
    assert pipe.events() == []
    assert pipe.counter("toolscore.runs", **{"toolscore.outcome": "no_expectation"}) == 1


def test_expect_context_wins_over_rules(pipe: Pipeline) -> None:
    with expect(expected_tool_order=["auth", "fetch"], strict_mode=True):
        run_scripted_agent(pipe.tracer, "weather_agent", "q", ["auth", "fetch"])
    with expect(expected_tool_order=["auth", "fetch"], strict_mode=True):
        run_scripted_agent(pipe.tracer, "weather_agent", "q", ["auth", "log", "fetch"])
    pipe.flush()
    first, second = sorted(pipe.roots(), key=lambda s: s.start_time)
    assert first.attributes["toolscore.code.score"] == 1.0
    assert list(first.attributes["toolscore.code.expected_tool_order"]) == ["auth", "fetch"]
    assert first.attributes["toolscore.code.correct_order_called"] is True
    assert second.attributes["toolscore.code.score"] == 0.0
    assert second.attributes["toolscore.code.strict_mode"] is True


def test_expectation_from_span_attributes_and_baggage(pipe: Pipeline) -> None:
    run_scripted_agent(pipe.tracer, "any", "q", ["lookup"], attributes={"toolscore.expect.tool": "lookup"})
    token = context.attach(baggage.set_baggage("toolscore.expect.tool_order", "a,b"))
    try:
        run_scripted_agent(pipe.tracer, "any", "q", ["a", "b"])
    finally:
        context.detach(token)
    pipe.flush()
    first, second = sorted(pipe.roots(), key=lambda s: s.start_time)
    assert first.attributes["toolscore.code.score"] == 1.0
    assert first.attributes["toolscore.code.expected_tool"] == "lookup"
    assert list(second.attributes["toolscore.code.expected_tool_order"]) == ["a", "b"]
    assert second.attributes["toolscore.code.score"] == 1.0


def test_rules_file_and_query_regex(tmp_path: Any) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "rules:\n"
        "  - name: refunds\n    query_regex: '(?i)refund'\n    expected_tool_order: [auth, refund]\n"
        "  - name: weather\n    agent_name: weather_agent\n    expected_tool: get_weather\n"
    )
    p = make_pipeline(expectations=str(rules))
    run_scripted_agent(p.tracer, "weather_agent", "Please REFUND me", ["auth", "refund"])
    run_scripted_agent(p.tracer, "weather_agent", "weather?", ["get_weather"])
    p.flush()
    first, second = sorted(p.roots(), key=lambda s: s.start_time)
    assert list(first.attributes["toolscore.code.expected_tool_order"]) == ["auth", "refund"]
    assert second.attributes["toolscore.code.expected_tool"] == "get_weather"
    p.provider.shutdown()


def test_default_expectation_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TOOLSCORE_EXPECTED_TOOL", "get_weather")
    p = make_pipeline()
    run_scripted_agent(p.tracer, "a", "q", ["get_weather"])
    p.flush()
    (root,) = p.roots()
    assert root.attributes["toolscore.code.score"] == 1.0
    p.provider.shutdown()


def test_bad_setting_in_the_environment_is_warned_about_and_scoring_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_TOOLSCORE_MAX_PENDING_TRACE", "5")
    monkeypatch.setenv("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "many")
    p = make_pipeline(expectations=[Expectation(expected_tool="get_weather")])
    run_scripted_agent(p.tracer, "weather_agent", "q", ["get_weather"])
    p.flush()
    (root,) = p.roots()
    assert root.attributes["toolscore.code.score"] == 1.0
    p.provider.shutdown()
    text = caplog.text
    assert "OTEL_TOOLSCORE_MAX_PENDING_TRACE is not one of the settings" in text
    assert "OTEL_TOOLSCORE_MAX_PENDING_TRACES='many' is ignored" in text


def test_failed_tool_still_counts(pipe: Pipeline) -> None:
    run_scripted_agent(pipe.tracer, "weather_agent", "q", [ScriptedCall("get_weather", error="TimeoutError")])
    pipe.flush()
    (root,) = pipe.roots()
    assert root.attributes["toolscore.code.score"] == 1.0


def test_tool_span_ending_after_root_is_waited_for() -> None:
    p = make_pipeline(expectations=[Expectation(expected_tool="slow_tool")], root_grace_ms=2_000)
    tracer = p.tracer
    root = tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
    ctx = __import__("opentelemetry.trace", fromlist=["set_span_in_context"]).set_span_in_context(root)
    tool = tracer.start_span(
        "execute_tool slow_tool",
        context=ctx,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "slow_tool"},
    )
    root.end()
    assert p.roots() == []  # held while its descendant is open
    tool.end()
    p.flush()
    (r,) = p.roots()
    assert r.attributes["toolscore.code.score"] == 1.0
    p.provider.shutdown()


def test_held_root_released_after_grace_and_late_span_counted() -> None:
    p = make_pipeline(expectations=[Expectation(expected_tool="t")], root_grace_ms=50)
    tracer = p.tracer
    from opentelemetry.trace import set_span_in_context

    root = tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    tool = tracer.start_span(
        "execute_tool t", context=set_span_in_context(root), attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}
    )
    root.end()
    deadline = time.time() + 5
    while not p.roots() and time.time() < deadline:
        time.sleep(0.02)
    (r,) = p.roots()  # released after the grace; the still-running call counts (it was selected)
    assert r.attributes["toolscore.code.score"] == 1.0
    assert list(r.attributes["toolscore.code.actual_tools"]) == ["t"]
    tool.end()
    p.flush()
    assert len(p.spans.get_finished_spans()) == 2  # the late span is still exported
    assert p.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 1
    assert p.counter("toolscore.dropped", **{"toolscore.reason": "late_span"}) == 1
    p.provider.shutdown()


def test_hand_written_loop_without_agent_span_uses_local_root() -> None:
    p = make_pipeline(expectations=[Expectation(expected_tool="lookup")])
    tracer = p.tracer
    with tracer.start_as_current_span("handle_request"):
        with tracer.start_as_current_span("chat gpt", attributes={"gen_ai.operation.name": "chat"}) as chat:
            chat.set_attribute(
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {}}], "finish_reason": "tool_call"}]),
            )
    p.flush()
    (root,) = [s for s in p.spans.get_finished_spans() if s.name == "handle_request"]
    assert root.attributes["toolscore.code.score"] == 1.0
    p.provider.shutdown()


def test_nested_agent_is_its_own_run() -> None:
    p = make_pipeline(
        expectations=[
            Expectation(agent_name="outer", expected_tool="ask_inner"),
            Expectation(agent_name="inner", expected_tool="lookup"),
        ]
    )
    tracer = p.tracer
    with tracer.start_as_current_span("invoke_agent outer", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "outer"}):
        with tracer.start_as_current_span("execute_tool ask_inner", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ask_inner"}):
            run_scripted_agent(tracer, "inner", "q", ["lookup"])
    p.flush()
    roots = {s.name: s for s in p.roots()}
    assert roots["invoke_agent outer"].attributes["toolscore.code.score"] == 1.0
    assert list(roots["invoke_agent outer"].attributes["toolscore.code.actual_tools"]) == ["ask_inner"]
    assert roots["invoke_agent inner"].attributes["toolscore.code.score"] == 1.0
    p.provider.shutdown()


class _Raising(SpanProcessor):
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("boom")

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("boom")


def test_downstream_that_raises_never_reaches_the_application() -> None:
    p = make_pipeline(downstream=_Raising(), expectations=[Expectation(expected_tool="t")])
    run_scripted_agent(p.tracer, "a", "q", ["t"])
    p.flush()
    assert p.counter("toolscore.dropped", **{"toolscore.reason": "downstream_error"}) >= 2
    assert p.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 1
    p.provider.shutdown()


class _Recording(SpanProcessor):
    """A downstream that notes each span it is handed and the thread that handed it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int, Any]] = []

    def on_end(self, span: ReadableSpan) -> None:
        trace_id = span.context.trace_id if span.context is not None else 0
        self.seen.append((span.name, trace_id, threading.get_ident(), span.attributes.get("toolscore.code.score")))


def test_spans_reach_the_downstream_from_the_worker_in_end_order() -> None:
    """The application's thread only queues an ended span: the worker hands every span on — each
    as it is, in the order they ended, a run's root after its spans as a copy carrying its score —
    so a downstream's ``on_end`` (an exporter's, with I/O) never runs on the application's thread."""
    down = _Recording()
    p = make_pipeline(downstream=down, expectations=[Expectation(expected_tool_order=("a", "b"))])
    ended: list[tuple[str, int]] = []

    class _Order(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            ended.append((span.name, span.context.trace_id if span.context is not None else 0))

    p.provider.add_span_processor(_Order())  # the order the SDK ended them in
    for _ in range(3):
        run_scripted_agent(p.tracer, "agent", "q", ["a", "b"])
    app = threading.get_ident()
    p.flush()
    assert len(down.seen) == len(ended) == 3 * 4
    assert all(t != app for _n, _tr, t, _s in down.seen)
    children = [(n, tr) for n, tr, _t, _s in down.seen if not n.startswith("invoke_agent")]
    assert children == [(n, tr) for n, tr in ended if not n.startswith("invoke_agent")]
    for n, tr, _t, score in down.seen:
        if n.startswith("invoke_agent"):
            assert score == 1.0
            mine = [i for i, item in enumerate(down.seen) if item[1] == tr]
            assert down.seen[mine[-1]][0] == n  # after every span of its run
        else:
            assert score is None
    p.provider.shutdown()
    # shut down: nothing scores a span any more, and it is handed on at once, as it is
    late = p.tracer.start_span("late")
    late.end()
    assert (down.seen[-1][0], down.seen[-1][2]) == ("late", app)


def test_a_span_queued_as_the_worker_stops_is_still_handed_on() -> None:
    """A span whose on_end saw the processor running, queued just after the worker's last look at
    the queue (another thread shutting the processor down): shutdown hands it on, as it is."""
    down = _Recording()
    p = make_pipeline(downstream=down, expectations=[Expectation(expected_tool="t")])
    late = p.tracer.start_span("late")
    worker_stop = p.processor._worker.stop

    def stop_then_end(deadline: float) -> bool:
        ended = worker_stop(deadline)
        p.processor._stopped = False  # what the ending thread saw, an instant before
        late.end()
        p.processor._stopped = True
        return ended

    p.processor._worker.stop = stop_then_end  # type: ignore[method-assign]
    p.processor.shutdown()
    assert [n for n, _tr, _t, _s in down.seen] == ["late"]
    assert not p.processor._queue


def test_malformed_attributes_do_not_raise(pipe: Pipeline) -> None:
    tracer = pipe.tracer
    with tracer.start_as_current_span("invoke_agent weather_agent", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}) as root:
        root.set_attribute("gen_ai.input.messages", "{not json")
        root.set_attribute("gen_ai.output.messages", "[1, 2, {")
        with tracer.start_as_current_span("execute_tool", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": "{{{"}):
            pass
        with tracer.start_as_current_span("execute_tool get_weather", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"}):
            pass
    pipe.flush()
    (r,) = pipe.roots()
    assert r.attributes["toolscore.code.score"] == 1.0


def test_pending_traces_limit_evicts_oldest_and_counts() -> None:
    p = make_pipeline(expectations=[Expectation(expected_tool="t")], max_pending_traces=16)
    tracer = p.tracer
    open_roots = [tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}) for _ in range(100)]
    assert p.processor.pending_traces <= 16
    p.flush()
    # The up-down counter, under its name and (deprecated, one more release) its old plural name.
    assert p.counter("toolscore.trace.pending") == p.counter("toolscore.pending_traces") == 16
    for s in open_roots:
        s.end()
    p.flush()
    assert p.counter("toolscore.dropped", **{"toolscore.reason": "pending_traces_limit"}) >= 84
    assert p.processor.pending_traces == 0
    p.provider.shutdown()


def test_trace_timeout_evicts_runs_whose_root_never_ends() -> None:
    p = make_pipeline(expectations=[Expectation(expected_tool="t")], trace_timeout_ms=50)
    p.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    p.flush()  # the worker has seen the start (the span thread only queued it)
    deadline = time.time() + 5
    while p.processor.pending_traces and time.time() < deadline:
        time.sleep(0.02)
    p.flush()
    assert p.processor.pending_traces == 0
    assert p.counter("toolscore.runs", **{"toolscore.outcome": "evicted"}) == 1
    assert p.counter("toolscore.trace.pending") == p.counter("toolscore.pending_traces") == 0
    p.provider.shutdown()


def test_many_threads_and_tasks_balance() -> None:
    p = make_pipeline(expectations=[Expectation(expected_tool="get_weather")])
    tracer = p.tracer
    per_thread = 50

    def work(i: int) -> None:
        for j in range(per_thread):
            tools = ["get_weather"] if (i + j) % 2 == 0 else ["other"]
            run_scripted_agent(tracer, "weather_agent", "q", tools)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()

    async def task(i: int) -> None:
        for _ in range(10):
            run_scripted_agent(tracer, "weather_agent", "q", ["get_weather"])
            await asyncio.sleep(0)

    async def tasks() -> None:
        await asyncio.gather(*(task(i) for i in range(10)))

    asyncio.run(tasks())
    for t in threads:
        t.join()
    p.flush()
    total = 8 * per_thread + 100
    roots = p.roots()
    assert len(roots) == total
    assert sum(1 for r in roots if r.attributes["toolscore.code.score"] == 1.0) == 4 * per_thread + 100
    assert p.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == total
    assert p.processor.pending_traces == 0
    assert p.counter("toolscore.trace.pending") == p.counter("toolscore.pending_traces") == 0
    hist = p.metric_points("gen_ai.evaluation.score")
    assert sum(h.count for h in hist) == total  # one pass and one fail series
    p.provider.shutdown()


def test_content_is_not_kept_without_a_judge(pipe: Pipeline) -> None:
    run_scripted_agent(pipe.tracer, "weather_agent", "my email is a@b.c", [ScriptedCall("get_weather", {"secret": "x"})])
    pipe.flush()
    (event,) = pipe.events()
    assert "a@b.c" not in json.dumps(dict(event.attributes))
    assert "secret" not in json.dumps(dict(event.attributes))


def test_tool_calls_from_log_events_join_the_run() -> None:
    """GenAI <=1.36 instrumentations put requested calls in `gen_ai.choice` log events, not on spans."""
    from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    from otel_toolscore import ToolScoreLogRecordProcessor

    p = make_pipeline(expectations=[Expectation(expected_tool_order=["get_weather", "get_time"])])
    app_logs = SdkLoggerProvider()
    app_logs.add_log_record_processor(ToolScoreLogRecordProcessor(p.processor))
    app_logs.add_log_record_processor(SimpleLogRecordProcessor(InMemoryLogRecordExporter()))
    logger = app_logs.get_logger("openai-v2-legacy")
    tracer = p.tracer
    with tracer.start_as_current_span("loop"):  # a hand-written loop: no agent span, no tool spans
        with tracer.start_as_current_span("chat gpt-4o", attributes={"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}):
            logger.emit(
                event_name="gen_ai.choice",
                body={
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "call_1", "type": "function", "function": {"name": "get_weather"}},
                            {"id": "call_2", "type": "function", "function": {"name": "get_time"}},
                        ],
                    },
                },
                attributes={"gen_ai.system": "openai"},
            )
    p.flush()
    (root,) = [s for s in p.spans.get_finished_spans() if s.name == "loop"]
    assert list(root.attributes["toolscore.code.actual_tools"]) == ["get_weather", "get_time"]
    assert root.attributes["toolscore.code.score"] == 1.0
    p.provider.shutdown()


def test_an_answer_without_tools_scores_zero_even_when_content_is_not_kept() -> None:
    """The model's text answer was recorded (content dropped by us): no tool call is a real 0."""
    p = make_pipeline(expectations=[Expectation(expected_tool="get_weather")])
    run_scripted_agent(p.tracer, "a", "Hello?", [], answer="Hi! How can I help?")  # content captured
    run_scripted_agent(p.tracer, "a", "Hello?", [], capture_content=False)  # nothing recorded
    p.flush()
    assert p.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 1
    assert p.counter("toolscore.runs", **{"toolscore.outcome": "no_tool_calls_visible"}) == 1
    p.provider.shutdown()


def test_the_scored_copy_of_an_sdk_span_is_the_span_with_the_score_added() -> None:
    """The root handed on is a copy built without the constructor: every field the SDK's snapshot
    has, as the constructor would store it, the attributes a new dict; the snapshot itself unchanged."""
    from otel_toolscore.core import scored_copy

    spans: list[ReadableSpan] = []

    class Keep(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            spans.append(span)

    provider = TracerProvider()
    provider.add_span_processor(Keep())
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("parent"):
        with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}) as s:
            s.add_event("e", {"k": 1})
            s.add_link(s.get_span_context(), {"l": 2})
    root = spans[0]
    added = {"toolscore.code.score": 1.0, "toolscore.code.actual_tools": ["a", "b"]}
    copy = scored_copy(root, added)
    built = ReadableSpan(
        name=root.name, context=root.context, parent=root.parent, resource=root.resource,
        attributes={**root.attributes, **added}, events=root.events, links=root.links, kind=root.kind,
        status=root.status, start_time=root.start_time, end_time=root.end_time,
        instrumentation_scope=root.instrumentation_scope,
    )
    assert copy is not root and type(copy) is ReadableSpan
    assert copy.to_json() == built.to_json()
    assert vars(copy).keys() == vars(built).keys()
    assert dict(copy.attributes) == {"gen_ai.operation.name": "invoke_agent", **added}
    assert "toolscore.code.score" not in root.attributes  # the snapshot the others saw is untouched
    assert copy.dropped_attributes == 0 and copy.events == root.events and copy.links == root.links


def test_an_unsampled_recorded_run_is_scored_with_its_sampled_flag_kept() -> None:
    """A run whose spans are recorded but not sampled (``RECORD_ONLY``) is scored; its event carries
    the run's own trace flags, so a backend never links it as a sampled trace."""
    from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

    class EveryOther(Sampler):
        def __init__(self) -> None:
            self.n = 0

        def should_sample(self, parent_context: Any, trace_id: int, name: str, *args: Any, **kwargs: Any) -> SamplingResult:
            if kwargs.get("parent_context") is None and parent_context is None:
                self.n += 1
            return SamplingResult(Decision.RECORD_AND_SAMPLE if self.n % 2 else Decision.RECORD_ONLY)

        def get_description(self) -> str:
            return "every other trace"

    p = make_pipeline(expectations=[Expectation(expected_tool="get_weather")])
    provider = TracerProvider(sampler=EveryOther())
    provider.add_span_processor(p.processor)
    try:
        for _ in range(4):
            run_scripted_agent(provider.get_tracer("t"), "weather_agent", "q", ["get_weather"])
        p.flush()
        events = p.events()
        assert len(events) == 4
        assert sorted(int(e.trace_flags) for e in events) == [0, 0, 1, 1]
        assert all(e.attributes["gen_ai.evaluation.score.value"] == 1.0 for e in events)
    finally:
        provider.shutdown()


def test_an_idle_worker_wakes_for_a_root_not_for_each_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """Idle (nothing pending), the worker sleeps until a local root ends (a run is complete) or spans
    pile up: not one wake-up per span. Its other polls are pushed out of the way here (60 s)."""
    from opentelemetry.trace import set_span_in_context

    from otel_toolscore import _workers as workers
    from otel_toolscore.online import processor as processor_module

    monkeypatch.setattr(workers, "IDLE_POLL_S", 60.0)
    monkeypatch.setattr(processor_module, "IDLE_POLL_S", 60.0)
    p = make_pipeline(expectations=[Expectation(expected_tool="t")])
    worker = p.processor._worker

    def until(check: Any) -> bool:
        deadline = time.monotonic() + 5
        while not check():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    asleep = lambda: worker._wake.idle and worker._idle_poll > 1  # noqa: E731
    try:
        assert until(asleep)
        tracer = p.tracer
        root = tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
        tool = tracer.start_span(
            "execute_tool t", context=set_span_in_context(root),
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
        )
        tool.end()
        time.sleep(0.3)
        assert len(p.processor._queue) == 3 and p.spans.get_finished_spans() == ()  # still asleep
        root.end()  # the run is complete: the worker wakes and scores it, no flush asked
        assert until(lambda: len(p.roots()) == 1)
        assert p.roots()[0].attributes["toolscore.code.score"] == 1.0
        assert until(asleep)
        # a long run's spans piling up wake it before its root ends
        root = tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
        ctx = set_span_in_context(root)
        for _ in range(600):
            tracer.start_span("step", context=ctx).end()
        assert until(lambda: len(p.spans.get_finished_spans()) >= 2 + 500)
        root.end()
        p.flush()
    finally:
        p.provider.shutdown()
