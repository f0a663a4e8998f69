"""Property tests of the span processor's ``on_start`` / ``on_end`` with arbitrary spans.

Two sources of input:

* through the real SDK: random span trees (any nesting, any end order — children ending after their
  parents included) whose attributes are any values the SDK accepts, under the keys the convention
  readers look at: huge strings, invalid or truncated JSON in message/argument attributes, wrong
  types (an int where a name is expected, lists where JSON is expected), expectation attributes;
* straight into the processor: ``ReadableSpan`` objects with attribute values no SDK would let
  through (nested lists, dicts, bytes, ``None``, arbitrary objects), as a buggy exporter-side
  replay or a hand-built span could deliver.

Properties: nothing raises out; every span is handed on downstream exactly once; once every span
has ended and the processor is flushed nothing is pending (``pending_traces`` and the
``toolscore.trace.pending`` up-down counter are 0); every run that got an outcome is counted once
in ``toolscore.runs``; what the processor could not read is counted in ``toolscore.dropped``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from opentelemetry import trace as trace_api
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, TraceFlags

from otel_toolscore import Expectation, ToolScoreSpanProcessor
from tests.support.telemetry import counter_total

pytestmark = pytest.mark.timeout(120)

KEYS = [
    "gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.input.messages", "gen_ai.output.messages",
    "gen_ai.system_instructions", "gen_ai.tool.definitions", "gen_ai.conversation.id", "gen_ai.request.model",
    "gen_ai.prompt", "gen_ai.completion", "gen_ai.prompt.0.role", "gen_ai.prompt.0.content",
    "gen_ai.completion.0.tool_calls.0.name", "gen_ai.completion.0.tool_calls.0.arguments",
    "openinference.span.kind", "input.value", "output.value", "input.mime_type", "llm.tools.0.tool.json_schema",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments", "tool.name", "tool.parameters",
    "traceloop.span.kind", "traceloop.entity.name", "traceloop.entity.input", "traceloop.entity.output",
    "ai.operationId", "ai.toolCall.name", "ai.toolCall.args", "ai.toolCall.result", "ai.prompt.messages",
    "ai.response.toolCalls", "tool_arguments", "tool_response", "agent_name", "logfire.msg", "pydantic_ai.all_messages",
    "gcp.vertex.agent.tool_call_args", "gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response",
    "toolscore.expect.tool", "toolscore.expect.tool_order", "toolscore.expect.strict", "error.type",
]
NAMES = [
    "invoke_agent weather_agent", "invoke_agent", "chat gpt", "execute_tool get_weather", "execute_tool",
    "agent run", "running tool", "running tools", "call_llm", "agent_run [a]", "ai.generateText",
    "ai.toolCall", "LangGraph", "handle_request",
]
OPS = ["invoke_agent", "chat", "execute_tool", "create_agent", "text_completion", "embeddings", ""]

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
    max_leaves=12,
)
_json_text = _json.map(json.dumps)
_messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "tool", "system", 3]),
         "parts": st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_call", "tool_call_response", "x"]),
                                                  "name": st.text(max_size=8) | st.integers(),
                                                  "arguments": _json, "content": _json}), max_size=3)}
    ),
    max_size=3,
).map(json.dumps)
_broken_json = st.one_of(_json_text, _messages).flatmap(lambda s: st.integers(0, max(0, len(s) - 1)).map(lambda i: s[:i]))
_text = st.one_of(
    st.text(max_size=40),
    _json_text,
    _messages,
    _broken_json,
    st.sampled_from(["{not json", "[1, 2, {", "null", '"str"', "{}", "[]", "\x00\ud7ff"]),
    st.integers(1_000, 200_000).map(lambda n: "x" * n),  # huge strings
)
SDK_VALUE = st.one_of(
    _text,
    st.sampled_from(OPS),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    st.lists(st.text(max_size=10), max_size=5),
    st.lists(st.integers(-5, 5), max_size=5),
    st.lists(st.floats(allow_nan=False), max_size=3),
    st.lists(st.booleans(), max_size=3),
)
_attrs = st.dictionaries(st.sampled_from(KEYS) | st.text(min_size=1, max_size=12), SDK_VALUE, max_size=8)


@st.composite
def span_trees(draw: Any) -> list[tuple[int | None, str, dict[str, Any]]]:
    """Nodes (parent index or None, name, attributes); node 0 is the trace's first span."""
    n = draw(st.integers(1, 10))
    nodes = []
    for i in range(n):
        parent = None if i == 0 else draw(st.one_of(st.none(), st.integers(0, i - 1)) if i > 1 else st.just(0))
        name = draw(st.sampled_from(NAMES) | st.text(max_size=15))
        attrs = draw(_attrs)
        if draw(st.booleans()):
            attrs["gen_ai.operation.name"] = draw(st.sampled_from(OPS))
        nodes.append((parent, name, attrs))
    return nodes


@dataclass
class Rig:
    processor: ToolScoreSpanProcessor
    provider: TracerProvider
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    logs: InMemoryLogRecordExporter

    def counter(self, name: str, **attrs: Any) -> int:
        return counter_total(self.metrics, name, **attrs)


def rig(**options: Any) -> Rig:
    spans, reader, logs = InMemorySpanExporter(), InMemoryMetricReader(), InMemoryLogRecordExporter()
    lp = LoggerProvider()
    lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
    processor = ToolScoreSpanProcessor(
        SimpleSpanProcessor(spans),
        expectations=[
            Expectation(agent_name="weather_agent", expected_tool="get_weather"),
            Expectation(name="refunds", query_regex="(?i)refund", expected_tool_order=("auth", "refund")),
            Expectation(name="catch_all", expected_tool="get_weather", match="superset"),
        ],
        meter_provider=MeterProvider(metric_readers=[reader]),
        logger_provider=lp,
        root_grace_ms=options.pop("root_grace_ms", 0),
        **options,
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    return Rig(processor, provider, spans, reader, logs)


# No shrinking phase: shrinking huge-string examples through a threaded pipeline can take minutes;
# every bug found here has a minimal deterministic test below instead. No example database either.
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck),
                phases=[Phase.explicit, Phase.generate], database=None)


@FUZZ
@given(trees=st.lists(span_trees(), min_size=1, max_size=3), data=st.data(), capture=st.booleans(),
       limit=st.sampled_from([1, 2, 10_000]), max_calls=st.sampled_from([1, 1_000]))
def test_sdk_spans_with_any_attributes(trees: list[Any], data: Any, capture: bool, limit: int, max_calls: int) -> None:
    r = rig(capture_content=capture, max_pending_traces=limit, max_calls_per_run=max_calls, max_content_chars=64)
    tracer = r.provider.get_tracer("fuzz")
    created: list[int] = []
    for nodes in trees:
        live: list[Any] = []
        for parent, name, attrs in nodes:
            ctx = trace_api.set_span_in_context(live[parent]) if parent is not None else None
            span = tracer.start_span(name, context=ctx, attributes=attrs)
            live.append(span)
            created.append(span.get_span_context().span_id)
        for i in data.draw(st.permutations(range(len(live)))):
            if data.draw(st.booleans()):
                live[i].set_attribute(data.draw(st.sampled_from(KEYS)), data.draw(SDK_VALUE))
            live[i].end()
    assert r.processor.force_flush(10_000)
    exported = [s.context.span_id for s in r.spans.get_finished_spans()]
    assert sorted(exported) == sorted(created)  # every span handed on, exactly once
    assert r.processor.pending_traces == 0
    assert r.counter("toolscore.trace.pending") == r.counter("toolscore.pending_traces") == 0
    # An exception inside the processor is swallowed and counted; with SDK-valid input there should be none.
    assert r.counter("toolscore.dropped", **{"toolscore.reason": "malformed_span"}) == 0
    roots = [s for s in r.spans.get_finished_spans() if "toolscore.code.score" in (s.attributes or {})]
    scored = r.counter("toolscore.runs", **{"toolscore.outcome": "scored"})
    # Every scored run writes one evaluation record parented to its root; the root's copy carries the
    # score unless the root had already been handed on: with no grace (root_grace_ms=0), a root whose
    # end the worker took before any GenAI span of its trace had ended leaves unscored, and its run,
    # found when a later root of the trace is scored, is written as record and metric only.
    records = [
        lr.log_record for lr in r.logs.get_finished_logs()
        if lr.log_record.event_name == "gen_ai.evaluation.result"
        and (lr.log_record.attributes or {}).get("gen_ai.evaluation.name") == "tool_call_accuracy"
    ]
    assert len(records) == scored >= len(roots)
    assert {s.context.span_id for s in roots} <= {rec.span_id for rec in records}
    for s in roots:
        assert s.attributes["toolscore.code.score"] in (0.0, 1.0)
    r.provider.shutdown()


class _Weird:
    """A value whose conversion to text or JSON fails."""

    def __repr__(self) -> str:  # hypothesis prints examples with repr()
        return "<weird>"

    def __str__(self) -> str:
        raise RuntimeError("str fails")

    def __len__(self) -> int:
        raise RuntimeError("len fails")


RAW_VALUE = st.recursive(
    st.one_of(SDK_VALUE, st.none(), st.binary(max_size=20), st.just(_Weird()), st.just(math.nan)),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3) | st.tuples(c, c),
    max_leaves=8,
)
RAW_ATTRS = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=12), RAW_VALUE, max_size=8),
)


@st.composite
def raw_spans(draw: Any) -> list[ReadableSpan]:
    trace_id = draw(st.integers(1, 2**128 - 1))
    n = draw(st.integers(1, 8))
    ids = draw(st.lists(st.integers(1, 2**64 - 1), min_size=n, max_size=n, unique=True))
    out = []
    for i, sid in enumerate(ids):
        parent_idx = None if i == 0 else draw(st.one_of(st.none(), st.integers(0, i - 1)))
        remote = draw(st.booleans()) if parent_idx is None and i == 0 else False
        parent = None
        if parent_idx is not None:
            parent = SpanContext(trace_id, ids[parent_idx], is_remote=False, trace_flags=TraceFlags(1))
        elif remote:
            parent = SpanContext(trace_id, draw(st.integers(1, 2**64 - 1)), is_remote=True, trace_flags=TraceFlags(1))
        out.append(
            ReadableSpan(
                name=draw(st.sampled_from(NAMES) | st.text(max_size=10)),
                context=SpanContext(trace_id, sid, is_remote=False, trace_flags=TraceFlags(1)),
                parent=parent,
                attributes=draw(RAW_ATTRS),
                start_time=i,
                end_time=draw(st.one_of(st.none(), st.integers(0, 100))),
            )
        )
    return out


@FUZZ
@given(spans=raw_spans(), data=st.data(), capture=st.booleans())
def test_hand_built_spans_with_values_no_sdk_allows(spans: list[ReadableSpan], data: Any, capture: bool) -> None:
    """Nothing raises and every span is forwarded. A span the processor cannot read may leave its trace
    pending, but only until the trace timeout, and that eviction is counted."""
    r = rig(capture_content=capture, trace_timeout_ms=200)
    for s in spans:
        r.processor.on_start(s)  # type: ignore[arg-type]  # the service replays ReadableSpans the same way
    for i in data.draw(st.permutations(range(len(spans)))):
        r.processor.on_end(spans[i])
    assert r.processor.force_flush(10_000)
    assert sorted(s.context.span_id for s in r.spans.get_finished_spans()) == sorted(s.context.span_id for s in spans)
    deadline = time.monotonic() + 5
    while r.processor.pending_traces and time.monotonic() < deadline:
        time.sleep(0.02)
    assert r.processor.force_flush(10_000)
    assert r.processor.pending_traces == 0
    assert r.counter("toolscore.trace.pending") == r.counter("toolscore.pending_traces") == 0
    if r.counter("toolscore.dropped", **{"toolscore.reason": "malformed_span"}) == 0:
        assert r.counter("toolscore.dropped", **{"toolscore.reason": "trace_timeout"}) == 0
    r.provider.shutdown()


# -- minimal cases of what the properties above found ---------------------------------------------
def _one_trace(r: Rig, root_attrs: dict[str, Any]) -> None:
    tracer = r.provider.get_tracer("fuzz")
    root = tracer.start_span("invoke_agent weather_agent", attributes={"gen_ai.operation.name": "invoke_agent",
                                                                       "gen_ai.agent.name": "weather_agent"})
    ctx = trace_api.set_span_in_context(root)
    tracer.start_span("execute_tool get_weather", context=ctx,
                      attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"}).end()
    for k, v in root_attrs.items():
        root.set_attribute(k, v)
    root.end()
    assert r.processor.force_flush(5_000)


@pytest.mark.parametrize("value", [False, 3, 2.5])
def test_non_text_expectation_attribute_is_ignored_not_fatal(value: Any) -> None:
    """``toolscore.expect.tool_order`` set to a bool/number (valid OTel values) must not break the run."""
    r = rig()
    _one_trace(r, {"toolscore.expect.tool_order": value})
    (root,) = [s for s in r.spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert root.attributes["toolscore.code.score"] == 1.0  # scored by the rule, the bad attribute ignored
    assert r.processor.pending_traces == 0
    assert r.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 1
    r.provider.shutdown()


def test_unreadable_span_does_not_keep_its_trace_pending() -> None:
    """A span whose attributes the readers choke on is counted and forgotten: its trace does not stay
    pending until the trace timeout."""
    r = rig()
    trace_id, root_id, tool_id = 0xABC, 0x1, 0x2
    root = ReadableSpan(
        name="invoke_agent weather_agent",
        context=SpanContext(trace_id, root_id, is_remote=False, trace_flags=TraceFlags(1)),
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"},
    )
    tool = ReadableSpan(
        name="execute_tool get_weather",
        context=SpanContext(trace_id, tool_id, is_remote=False, trace_flags=TraceFlags(1)),
        parent=root.context,
        attributes={"gen_ai.operation.name": ["execute_tool"], "gen_ai.tool.name": "get_weather"},  # a list
    )
    r.processor.on_start(root)  # type: ignore[arg-type]
    r.processor.on_start(tool)  # type: ignore[arg-type]
    r.processor.on_end(tool)
    r.processor.on_end(root)
    assert r.processor.force_flush(5_000)
    assert len(r.spans.get_finished_spans()) == 2
    assert r.processor.pending_traces == 0
    assert r.counter("toolscore.runs") == 1
    r.provider.shutdown()


class _Collect(SpanProcessor):
    def __init__(self) -> None:
        self.ended: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)


def test_span_without_context_or_attributes_is_forwarded() -> None:
    downstream = _Collect()
    processor = ToolScoreSpanProcessor(downstream, expectations=[Expectation(expected_tool="t")],
                                       meter_provider=MeterProvider(), logger_provider=LoggerProvider())
    odd = ReadableSpan(name="invoke_agent x", context=None, attributes=None)
    processor.on_start(odd)  # type: ignore[arg-type]
    processor.on_end(odd)
    assert processor.force_flush(5_000)
    assert downstream.ended == [odd]
    assert processor.pending_traces == 0
    processor.shutdown()


def test_a_root_handed_on_before_its_trace_had_facts_is_still_scored_as_record_and_metric() -> None:
    """What the fuzz test's record count allows for: with no grace, a local root whose end the worker
    takes before any GenAI span under it has ended is handed on unscored (nothing to score yet); the
    run it roots, found when a nested agent's run is scored, is written as an evaluation record and a
    metric point on the root's span id, with no score on a span (that one has left)."""
    r = rig()
    worker = r.processor._worker
    worker._stopped = True
    worker._wake.set()
    worker._thread.join()  # the test takes the worker's batches itself, at the moments it picks
    queue = r.processor._queue

    def take_batch() -> None:
        batch = list(queue)
        queue.clear()
        r.processor._process(batch)
        r.processor._idle()

    tracer = r.provider.get_tracer("test")
    root = tracer.start_span("handle_request")
    in_root = trace_api.set_span_in_context(root)
    agent = tracer.start_span("invoke_agent weather_agent", context=in_root,
                              attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"})
    tool = tracer.start_span("execute_tool get_weather", context=trace_api.set_span_in_context(agent),
                             attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"})
    direct = tracer.start_span("execute_tool get_weather", context=in_root,
                               attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"})
    root.end()
    take_batch()  # the root ends first: no GenAI span of its trace has ended
    for span in (tool, agent, direct):
        span.end()
    take_batch()
    worker._stopped = False
    assert r.processor._score_queued()
    r.processor._hand_on()
    assert r.processor.outputs.wait_idle(time.monotonic() + 10)

    exported = {s.name: s for s in r.spans.get_finished_spans()}
    assert "toolscore.code.score" not in (exported["handle_request"].attributes or {})
    assert exported["invoke_agent weather_agent"].attributes["toolscore.code.score"] == 1.0
    records = [lr.log_record for lr in r.logs.get_finished_logs() if lr.log_record.event_name == "gen_ai.evaluation.result"]
    assert sorted(rec.span_id for rec in records) == sorted([root.get_span_context().span_id,
                                                              agent.get_span_context().span_id])
    assert r.counter("toolscore.runs", **{"toolscore.outcome": "scored"}) == 2
    r.provider.shutdown()
