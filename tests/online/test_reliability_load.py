"""Load: many threads and asyncio tasks for a fixed number of runs; afterwards the counts balance.

Every run started is counted exactly once in ``toolscore.runs`` by ``toolscore.outcome``
(``scored + no_expectation + no_tool_calls_visible + evicted + error = runs started``), every ended
span is handed on downstream exactly once, and nothing stays pending (``pending_traces`` and the
``toolscore.pending_traces`` up-down counter back to 0).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore import Expectation, ToolScoreSpanProcessor
from otel_toolscore.scripted import run_scripted_agent
from tests.support.telemetry import metric_points

pytestmark = pytest.mark.timeout(120)

OUTCOMES = ("scored", "no_expectation", "no_tool_calls_visible", "evicted", "error")


class Rig:
    def __init__(self, **options: Any) -> None:
        self.spans = InMemorySpanExporter()
        self.reader = InMemoryMetricReader()
        logs = InMemoryLogRecordExporter()
        self.lp = LoggerProvider()
        self.lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
        self.processor = ToolScoreSpanProcessor(
            SimpleSpanProcessor(self.spans),
            expectations=[Expectation(agent_name="weather_agent", expected_tool="get_weather")],
            meter_provider=MeterProvider(metric_readers=[self.reader]),
            logger_provider=self.lp,
            **options,
        )
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("load")

    def points(self, name: str) -> list[Any]:
        return metric_points(self.reader, name)

    def by(self, name: str, key: str) -> Counter[str]:
        c: Counter[str] = Counter()
        for p in self.points(name):
            c[str(p.attributes.get(key))] += int(p.value)
        return c

    def wait_not_pending(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.processor.pending_traces and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.processor.force_flush(10_000)


def _kind(i: int) -> str:
    return ("pass", "fail", "other_agent", "no_calls")[i % 4]


def _run(tracer: Any, i: int) -> int:
    """One run of kind ``_kind(i)``; returns the number of spans it emitted."""
    kind = _kind(i)
    if kind == "pass":
        run_scripted_agent(tracer, "weather_agent", "q", ["lookup", "get_weather"])
        return 4
    if kind == "fail":
        run_scripted_agent(tracer, "weather_agent", "q", ["search_web"])
        return 3
    if kind == "other_agent":
        run_scripted_agent(tracer, "other_agent", "q", ["x"])
        return 3
    run_scripted_agent(tracer, "weather_agent", "q", [], capture_content=False)  # nothing visible to score
    return 2


async def _async_run(tracer: Any, i: int) -> int:
    """The same runs, but yielding to other tasks between every span (interleaved traces on one thread)."""
    kind = _kind(i)
    agent = "other_agent" if kind == "other_agent" else "weather_agent"
    calls = {"pass": ["lookup", "get_weather"], "fail": ["search_web"], "other_agent": ["x"], "no_calls": []}[kind]
    with tracer.start_as_current_span(
        f"invoke_agent {agent}", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    ):
        await asyncio.sleep(0)
        with tracer.start_as_current_span("chat model", attributes={"gen_ai.operation.name": "chat"}):
            await asyncio.sleep(0)
        for name in calls:
            with tracer.start_as_current_span(
                f"execute_tool {name}", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
            ):
                await asyncio.sleep(0)
        await asyncio.sleep(0)
    return 2 + len(calls)


def _expected(indices: list[int]) -> Counter[str]:
    c: Counter[str] = Counter()
    for i in indices:
        kind = _kind(i)
        c["scored" if kind in ("pass", "fail") else "no_expectation" if kind == "other_agent" else "no_tool_calls_visible"] += 1
    return c


def test_threads_and_tasks_balance_with_evictions_by_timeout() -> None:
    rig = Rig(trace_timeout_ms=8000)  # long enough that no run of the load itself times out
    abandoned = [
        rig.tracer.start_span("invoke_agent weather_agent", attributes={"gen_ai.operation.name": "invoke_agent"})
        for _ in range(7)
    ]  # roots that never end: evicted by the timeout
    threads, per_thread, tasks, per_task = 8, 40, 25, 8
    spans_emitted = Counter[str]()
    lock = threading.Lock()

    def work(t: int) -> None:
        n = sum(_run(rig.tracer, t * per_thread + j) for j in range(per_thread))
        with lock:
            spans_emitted["threads"] += n

    async def task(k: int) -> int:
        return sum([await _async_run(rig.tracer, 10_000 + k * per_task + j) for j in range(per_task)])

    async def all_tasks() -> None:
        spans_emitted["tasks"] += sum(await asyncio.gather(*(task(k) for k in range(tasks))))

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    asyncio.run(all_tasks())
    for th in pool:
        th.join()
    rig.wait_not_pending(30)

    indices = [t * per_thread + j for t in range(threads) for j in range(per_thread)]
    indices += [10_000 + k * per_task + j for k in range(tasks) for j in range(per_task)]
    expected = _expected(indices)
    expected["evicted"] = len(abandoned)
    runs = rig.by("toolscore.runs", "toolscore.outcome")
    assert set(runs) <= set(OUTCOMES)
    assert sum(runs.values()) == len(indices) + len(abandoned)  # every run counted exactly once
    assert {k: v for k, v in runs.items() if v} == {k: v for k, v in expected.items() if v}
    assert len(rig.spans.get_finished_spans()) == sum(spans_emitted.values())
    scored_roots = [s for s in rig.spans.get_finished_spans() if "toolscore.code.score" in (s.attributes or {})]
    assert len(scored_roots) == expected["scored"]
    assert sum(p.count for p in rig.points("gen_ai.evaluation.score")) == expected["scored"]
    assert rig.processor.pending_traces == 0
    assert sum(int(p.value) for p in rig.points("toolscore.trace.pending")) == 0
    for s in abandoned:
        s.end()  # late: counted, not scored a second time
    assert rig.processor.force_flush(5_000)
    assert sum(rig.by("toolscore.runs", "toolscore.outcome").values()) == len(indices) + len(abandoned)
    rig.provider.shutdown()


def test_balance_holds_when_the_pending_limit_evicts_under_load() -> None:
    """With far fewer pending slots than concurrent runs, evictions happen while runs are open; a run
    evicted and later ending must still be counted once (evicted), never twice."""
    rig = Rig(max_pending_traces=4)
    threads, per_thread = 8, 30
    started = threading.Barrier(threads)

    def work(t: int) -> None:
        started.wait()
        for j in range(per_thread):
            _run(rig.tracer, t * per_thread + j)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    rig.wait_not_pending(10)
    runs = rig.by("toolscore.runs", "toolscore.outcome")
    assert set(runs) <= set(OUTCOMES)
    assert sum(runs.values()) == threads * per_thread
    assert rig.processor.pending_traces == 0
    assert sum(int(p.value) for p in rig.points("toolscore.trace.pending")) == 0
    dropped = rig.by("toolscore.dropped", "toolscore.reason")
    assert runs["evicted"] <= dropped["pending_traces_limit"]
    rig.provider.shutdown()


def test_interleaved_traces_on_one_thread_keep_their_own_calls() -> None:
    """Two runs open at once on one thread (explicit contexts): calls land in the right run."""
    rig = Rig()
    t = rig.tracer
    roots = {
        name: t.start_span(f"invoke_agent {name}", attributes={"gen_ai.operation.name": "invoke_agent",
                                                                 "gen_ai.agent.name": "weather_agent"})
        for name in ("a", "b")
    }
    for name, tool in (("a", "get_weather"), ("b", "search_web"), ("a", "lookup"), ("b", "get_weather")):
        ctx = trace_api.set_span_in_context(roots[name])
        t.start_span(f"execute_tool {tool}", context=ctx,
                     attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}).end()
    for r in roots.values():
        r.end()
    assert rig.processor.force_flush(5_000)
    got = {s.name: list(s.attributes["toolscore.code.actual_tools"]) for s in rig.spans.get_finished_spans()
           if s.name.startswith("invoke_agent")}
    assert got == {"invoke_agent a": ["get_weather", "lookup"], "invoke_agent b": ["search_web", "get_weather"]}
    rig.provider.shutdown()
