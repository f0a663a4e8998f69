"""The service's intake and scoring paths that skip work: a trace's ids read once per request, its
activity noted once, the run log reading the run's record, a message parse freed without the
garbage collector. Each is checked against what the plain path gives."""

from __future__ import annotations

import gc
import logging

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore._scored import ScoredRun
from otel_toolscore.extract._values import parse_messages
from otel_toolscore.run_records import RunRecord
from otel_toolscore.scripted import run_scripted_agent
from otel_toolscore.service._buffer import TraceBuffer
from otel_toolscore.service._decode import TraceRequest, decode_spans
from otel_toolscore.telemetry import RunRef


def _interleaved_request() -> tuple[bytes, list[int]]:
    """Two agent runs (two traces) whose spans alternate in one request, with a span whose ids are
    not the SDK's sizes: (the request, the trace ids in the order their spans come)."""
    memory = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(memory))
    tracer = tp.get_tracer("agent")
    run_scripted_agent(tracer, "weather_agent", "Weather in Paris?", ["get_weather"])
    first = list(memory.get_finished_spans())
    memory.clear()
    run_scripted_agent(tracer, "weather_agent", "Weather in Rome?", ["get_weather", "get_time"])
    second = list(memory.get_finished_spans())
    mixed = [s for pair in zip(first, second) for s in pair] + first[len(second):] + second[len(first):]
    request = encode_spans(mixed)
    spans = request.resource_spans[0].scope_spans[0].spans
    odd = spans.add()
    odd.CopyFrom(spans[0])
    odd.trace_id = b"\x01" * 8  # 8 bytes: read as a number, as before
    odd.span_id = b"\x00\x02\x03"
    order = [int.from_bytes(sp.trace_id, "big") for sp in spans]
    return request.SerializeToString(), order


def test_interleaved_traces_keep_their_ids_and_their_activity_order() -> None:
    body, order = _interleaved_request()
    decoded = TraceRequest(body).decoded(keep_wire=True)
    assert [d.trace_id for d in decoded] == order
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    sdk = list(decode_spans(ExportTraceServiceRequest.FromString(body)))  # the SDK-span path, ids decoded alone
    assert [(d.trace_id, d.span_id, d.parent_id) for d in decoded] == [(d.trace_id, d.span_id, d.parent_id) for d in sdk]
    assert [(d.span.trace_hex, d.span.span_hex) for d in decoded] == [
        (f"{d.trace_id:032x}", f"{d.span_id:016x}") for d in sdk
    ]
    buffer = TraceBuffer(max_spans=1000, max_bytes=1 << 30, quiet_period_s=0, hard_timeout_s=30, recent_traces=10)
    assert buffer.add_spans(decoded, now=1.0).accepted
    last_seen = {tid: i for i, tid in enumerate(order)}  # the order of each trace's last span
    assert list(buffer._by_activity) == sorted(last_seen, key=last_seen.__getitem__)
    assert sorted(len(t.spans) for t in buffer._traces.values()) == sorted(order.count(t) for t in set(order))


def test_the_run_log_reads_the_runs_record_and_builds_no_model(caplog: object) -> None:
    from otel_toolscore.cli._serve_cmd import RunLog

    record = RunRecord("run-1", agent_name="weather_agent")
    scored = ScoredRun(record, RunRef(1, 2, "weather_agent"), "no_expectation", None, None)
    log = RunLog()
    with_debug = logging.getLogger("otel_toolscore.serve")
    before = with_debug.level
    with_debug.setLevel(logging.DEBUG)
    try:
        log(scored)
    finally:
        with_debug.setLevel(before)
    assert scored._model is None  # the public model is built only when a consumer asks
    line = log.summary("so far")
    assert line is not None and "weather_agent" in line


def test_a_capped_message_parse_is_freed_without_the_collector() -> None:
    """The calls past the cap are counted, and the parse holds no cycle: reference counting frees
    it (every model call's messages are parsed; a cycle each was work for the collector)."""
    messages = [{"role": "assistant", "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}} for i in range(5)
    ]}]
    parsed = parse_messages(messages, max_calls=3)
    assert [c.call_id for c in parsed.calls] == ["c0", "c1", "c2"] and parsed.dropped_calls == 2
    assert parse_messages(messages).dropped_calls == 0 and len(parse_messages(messages).calls) == 5
    del parsed
    was_enabled = gc.isenabled()
    gc.disable()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds is kept in gc.garbage, to be looked at
    try:
        for _ in range(200):
            parse_messages(messages, max_calls=3)
        gc.collect()
        left = [o for o in gc.garbage if type(o).__module__ == "otel_toolscore.extract._values"]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()
    assert left == []
