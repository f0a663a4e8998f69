"""What the application's thread queues for a span: the span itself, no tuple around it, for every
end and for a child's start with no context captured.

The hooks run on the application's thread for every span; a tuple per item was an allocation there
and an object the garbage collector met until the worker took it. The core takes a bare span of the
SDK's started-span class as a ``START`` item and any other bare span as an ``END`` item, so the
scored run, the spans handed on and their order are what they were.
"""

from __future__ import annotations

from collections import Counter

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from otel_toolscore import expect
from otel_toolscore.core import BARE_START, CONTEXT, END, HOLD, SDK_SPANS, START, Release, StartContext, build_core
from otel_toolscore.expectations import Expectation
from otel_toolscore.scripted import ScriptedCall, run_scripted_agent
from otel_toolscore.settings import Settings
from tests.online.test_processor import make_pipeline


def test_an_ended_span_is_queued_as_itself_and_still_scored_and_handed_on() -> None:
    p = make_pipeline(expectations=[Expectation(expected_tool="t")])
    try:
        with p.processor._core_lock:  # the worker takes nothing while the test looks at the queue
            root = p.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
            tool = p.tracer.start_span(
                "execute_tool t",
                context=set_span_in_context(root),
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
            )
            tool.end()
            root.end()
            items = list(p.processor._queue)
        # neither start captured anything (no expect(), no toolscore.* baggage): both starts and both
        # ends are the spans themselves
        assert [type(i) is tuple for i in items] == [False, False, False, False]
        assert items[0] is root and items[1] is tool and type(tool) is BARE_START
        # what the SDK handed on_end (its end snapshot), as it was handed
        assert all(isinstance(i, ReadableSpan) and type(i) is not BARE_START for i in items[2:])
        assert [i.context.span_id for i in items[2:]] == [tool.get_span_context().span_id, root.get_span_context().span_id]
        p.flush()
        assert [s.name for s in p.spans.get_finished_spans()] == ["execute_tool t", "invoke_agent a"]
        (scored,) = p.roots()
        assert scored.attributes["toolscore.code.score"] == 1.0
    finally:
        p.provider.shutdown()


def _outcomes(release: Release) -> Counter[str]:
    return Counter({outcome: n for (outcome, _agent), n in release.runs_counted.items()})


def test_the_core_takes_a_bare_span_as_an_end_item() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run_scripted_agent(provider.get_tracer("t"), "weather_agent", "q", [ScriptedCall("get_weather", {"city": "Paris"})])
    spans: list[ReadableSpan] = list(exporter.get_finished_spans())
    results = []
    for items in ([(END, s) for s in spans], list(spans), [s if i % 2 else (END, s) for i, s in enumerate(spans)]):
        core, _outputs = build_core(Settings(), source=SDK_SPANS, expectations=[Expectation(expected_tool="get_weather")])
        release = core.feed(items)
        assert _outcomes(release) == {"scored": 1}
        (run,) = release.runs
        results.append((run.verdict.score, [c.name for c in run.verdict.calls], [s.name for s, _attrs in release.spans]))
    assert results[0] == results[1] == results[2]
    assert results[0][0] == 1.0 and results[0][1] == ["get_weather"]


def test_a_child_start_inside_expect_keeps_its_context_and_a_live_span_ended_by_hand_stays_an_end() -> None:
    p = make_pipeline()
    try:
        with p.processor._core_lock:
            root = p.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
            with expect(expected_tool="t"):
                tool = p.tracer.start_span(
                    "execute_tool t",
                    context=set_span_in_context(root),
                    attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
                )
            tool.end()
            # someone other than the SDK hands on_end a started span object (the SDK hands a snapshot):
            # it is queued as an end, not mistaken for a start
            p.processor.on_end(root)  # type: ignore[arg-type]
            items = list(p.processor._queue)
        assert items[0] is root  # started outside the block: nothing captured
        assert items[1][0] == START and isinstance(items[1][2], StartContext) and items[1][1] is tool
        assert items[-1] == (END, root)
        p.flush()
        assert p.processor.pending_traces == 0  # the hand-made end ended the trace: nothing waits for it
        (scored,) = p.roots()
        assert scored.attributes["toolscore.code.score"] == 1.0
    finally:
        p.provider.shutdown()


def test_the_worker_matches_each_start_to_its_end_in_the_batch_and_keeps_the_order() -> None:
    """``_prepare`` (one pass, last item first): a start whose end is in the batch is dropped, or
    becomes the context it captured; a start whose end is not stays; an end that may root a run is
    held for the core, any other end is queued to be handed on as it is, in the order the spans ended.
    An unmatched start still works (the core takes it in two steps), so only this test sees a miss."""
    p = make_pipeline(expectations=[Expectation(expected_tool="t")])
    proc = p.processor
    try:
        with proc._core_lock:
            root = p.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
            ctx = set_span_in_context(root)
            with expect(expected_tool="t"):
                first = p.tracer.start_span("execute_tool t", context=ctx,
                                            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"})
            second = p.tracer.start_span("chat m", context=ctx, attributes={"gen_ai.operation.name": "chat"})
            still_open = p.tracer.start_span("execute_tool u", context=ctx,
                                             attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "u"})
            second.end()
            first.end()
            root.end()
            batch = list(proc._queue)
            proc._queue.clear()
            out = proc._prepare(batch)
            forwards = list(proc._forwards)
            proc._forwards.clear()
        ends = batch[-3:]
        assert [e.name for e in ends] == ["chat m", "execute_tool t", "invoke_agent a"]
        assert out == [
            (CONTEXT, first, batch[1][2]),  # its end follows: the context it captured, alone
            still_open,  # no end in the batch: its start stays
            ends[0],
            ends[1],
            (HOLD, ends[2]),  # an agent span: the core hands it on once scored
        ]
        assert forwards == [ends[0], ends[1]]  # the others, in the order they ended
        still_open.end()
    finally:
        p.provider.shutdown()


def test_a_root_start_under_toolscore_baggage_keeps_its_context() -> None:
    from opentelemetry import baggage, context

    p = make_pipeline(expectations=[Expectation(expected_tool="t")])
    try:
        token = context.attach(baggage.set_baggage("toolscore.expected_tool", "t"))
        try:
            with p.processor._core_lock:
                root = p.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
                (item,) = list(p.processor._queue)
                root.end()
        finally:
            context.detach(token)
        assert item[0] == START and item[1] is root and item[2].baggage == {"toolscore.expected_tool": "t"}
    finally:
        p.provider.shutdown()


def test_sdk_span_ids_are_written_as_the_sdk_writes_them() -> None:
    """The core's span ids are 16 hex digits, as ``"%016x"`` writes them, for SDK spans (whose contexts
    are tuples) at every edge of the 64 bits — and an id wider than 64 bits, which no SDK makes, is
    written as before, not refused."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext

    for sid in (0, 1, 0xABC, 2**63, 2**64 - 1, 2**64 + 5):
        for parent in (None, SpanContext(9, sid ^ 1, is_remote=True), SpanContext(9, sid, is_remote=False)):
            span = ReadableSpan("s", context=SpanContext(9, sid, is_remote=False), parent=parent)
            got = SDK_SPANS.ids(span)
            assert got == (9, "%016x" % sid, None if parent is None else "%016x" % parent.span_id,
                           True if parent is None else parent.is_remote)
