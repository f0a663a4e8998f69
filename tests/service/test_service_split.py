"""Scale-out by trace id: one stream split across several service instances scores like one instance.

The Collector's `loadbalancing` exporter with `routing_key: traceID` sends every span of a trace to
the same replica. Here the same routing (a hash of the trace id, the only input that matters) splits
one recorded OTLP stream across three `otel-toolscore serve` instances; the union of their scores
equals a single instance's. Splitting by span instead (what a plain round-robin would do) does not.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore.scripted import run_scripted_agent
from tests.service.test_service import Running, start_service

TOOLS = ["get_weather", "get_time", "search_web", "auth", "fetch_order", "refund"]
REPLICAS = 3


def stream(runs: int = 60, batch: int = 7) -> list[list[ReadableSpan]]:
    """A recorded stream of agent traces, exported in batches as a BatchSpanProcessor would (end order,
    spans of neighbouring traces mixed in one batch)."""
    rng = random.Random(20261202)
    mem = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(mem))
    tracer = tp.get_tracer("split.agent")
    for i in range(runs):
        agent = rng.choice(["weather_agent", "billing_agent"])
        calls = rng.sample(TOOLS, rng.randint(0, 3))
        run_scripted_agent(tracer, agent, f"request {i}", calls)
    tp.shutdown()
    spans = list(mem.get_finished_spans())
    return [spans[i : i + batch] for i in range(0, len(spans), batch)]


def by_trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return zlib.crc32(span.context.trace_id.to_bytes(16, "big")) % REPLICAS


def by_span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id % REPLICAS


def send(batches: Sequence[Sequence[ReadableSpan]], instances: Sequence[Running], route: Callable[[ReadableSpan], int]) -> None:
    exporters = [GrpcSpanExporter(endpoint=r.grpc_target, insecure=True) for r in instances]
    for batch in batches:
        parts: dict[int, list[ReadableSpan]] = {}
        for span in batch:
            parts.setdefault(route(span) % len(instances), []).append(span)
        for i, part in sorted(parts.items()):
            assert exporters[i].export(part).name == "SUCCESS"
    for e in exporters:
        e.shutdown()


def scores(instances: Sequence[Running]) -> dict[str, tuple[object, ...]]:
    for r in instances:
        r.service.shutdown(timeout_s=10)  # drains: every buffered trace is scored
    merged: dict[str, tuple[object, ...]] = {}
    for r in instances:
        for trace_id, summary in r.by_trace().items():
            assert trace_id not in merged, "a trace was scored by two instances"
            merged[trace_id] = summary
    return merged


def test_split_by_trace_id_scores_like_one_instance() -> None:
    batches = stream()
    single = [start_service(quiet_period_ms=100, hard_timeout_ms=2000)]
    send(batches, single, lambda s: 0)
    expected = scores(single)
    assert len(expected) == 60
    assert {s[2] for s in expected.values()} >= {"scored"}

    replicas = [start_service(quiet_period_ms=100, hard_timeout_ms=2000) for _ in range(REPLICAS)]
    send(batches, replicas, by_trace_id)
    merged = scores(replicas)
    assert all(len(r.scored) >= 10 for r in replicas), "every replica scored a share of the traces"
    assert merged == expected


def test_split_by_span_scores_differently() -> None:
    """The control: without trace-id routing, runs lose their tool calls to other replicas."""
    batches = stream()
    single = [start_service(quiet_period_ms=100, hard_timeout_ms=2000)]
    send(batches, single, lambda s: 0)
    expected = scores(single)
    replicas = [start_service(quiet_period_ms=100, hard_timeout_ms=1000) for _ in range(REPLICAS)]
    send(batches, replicas, by_span_id)
    assert scores(replicas) != expected
