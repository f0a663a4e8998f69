"""A run its trace's eviction could not see is still counted once.

The processor sends the core no start for a span whose end is in the same batch (only the context
the start captured, as a ``CONTEXT`` item). When another trace's span in that batch evicts the trace,
its agent span is neither open nor ended as far as the core knows: the run it roots is counted as ``evicted`` when its end
arrives, and only then — never a second time, never silently lost.
"""

from __future__ import annotations

from collections import Counter

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore.core import CONTEXT, END, SDK_SPANS, Release, StartContext, build_core
from otel_toolscore.expectations import Expectation
from otel_toolscore.scripted import run_scripted_agent
from otel_toolscore.settings import Settings


def _trace(provider: TracerProvider, exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    exporter.clear()
    run_scripted_agent(provider.get_tracer("t"), "weather_agent", "q", ["get_weather"])
    return list(exporter.get_finished_spans())


def _outcomes(releases: list[Release]) -> Counter[str]:
    out: Counter[str] = Counter()
    for r in releases:
        for (outcome, _agent), n in r.runs_counted.items():
            out[outcome] += n
    return out


def test_a_run_evicted_before_the_core_saw_its_start_is_counted_once_as_evicted() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    first, second = _trace(provider, exporter), _trace(provider, exporter)
    core, _outputs = build_core(
        Settings(max_pending_traces=1), source=SDK_SPANS, expectations=[Expectation(expected_tool="get_weather")]
    )
    root_a = next(s for s in first if s.parent is None)
    root_b = next(s for s in second if s.parent is None)
    # one batch, as the processor hands it over: both roots' contexts (their starts are in the batch
    # with their ends), the second trace evicts the first, then every span ends — the first trace's
    # spans arrive after its eviction
    batch: list[tuple[object, ...]] = [(CONTEXT, root_a, StartContext()), (CONTEXT, root_b, StartContext())]
    batch += [(END, s) for s in (*second, *first)]
    releases = [core.feed(batch), core.sweep(force=True), core.take()]
    outcomes = _outcomes(releases)
    assert outcomes == {"scored": 1, "evicted": 1}, outcomes
    drops: Counter[str] = Counter()
    for r in releases:
        drops.update(r.drops)
    assert drops["pending_traces_limit"] == 1
    assert drops["late_span"] == len(first)
