"""The hot-path workloads and the measurement of one pipeline on one of them (``hot_path`` and ``yardstick``).

Two workloads, each every run scored against a rule:

* ``genai7``: the scripted GenAI agent — 1 ``invoke_agent`` span, 1 ``chat`` span, 5 ``execute_tool``
  spans (content captured on the spans or not);
* ``openinference30``: a LangGraph-shaped OpenInference run — a bare ``weather_agent`` root (its kind
  set later), 7 steps of CHAIN → LLM (flattened ``llm.output_messages`` tool calls) and CHAIN → TOOL,
  and a final LLM call: 30 spans.
"""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.trace import set_span_in_context

from otel_toolscore import Expectation

from .pipelines import AGENT, Pipeline, one_run

__all__ = ["OURS", "WARMUP", "WORKLOADS", "measure", "oi_run"]

WARMUP = 20

OI_EXPECTATION = Expectation(agent_name="weather_agent", expected_tool_order=("tool_0", "tool_3", "tool_6"))


def oi_run(tracer: Any, content: bool, i: int = 0) -> None:
    """30 spans as OpenInference's LangGraph instrumentation makes them (root starts bare)."""
    root = tracer.start_span("weather_agent")
    root_ctx = set_span_in_context(root)
    for step in range(7):
        step_span = tracer.start_span("agent", context=root_ctx)
        step_span.set_attribute("openinference.span.kind", "CHAIN")
        llm = tracer.start_span("ChatOpenAI", context=set_span_in_context(step_span))
        llm.set_attribute("openinference.span.kind", "LLM")
        llm.set_attribute("llm.model_name", "gpt-4o-mini")
        llm.set_attribute("llm.output_messages.0.message.role", "assistant")
        llm.set_attribute("llm.output_messages.0.message.tool_calls.0.tool_call.id", f"call_{step}")
        llm.set_attribute("llm.output_messages.0.message.tool_calls.0.tool_call.function.name", f"tool_{step}")
        if content:
            llm.set_attribute("llm.input_messages.0.message.role", "user")
            llm.set_attribute("llm.input_messages.0.message.content", f"what is the weather in city {i}?")
            llm.set_attribute(
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments", json.dumps({"step": step})
            )
        llm.end()
        step_span.end()
        tools = tracer.start_span("tools", context=root_ctx)
        tools.set_attribute("openinference.span.kind", "CHAIN")
        tool = tracer.start_span(f"tool_{step}", context=set_span_in_context(tools))
        tool.set_attribute("openinference.span.kind", "TOOL")
        tool.set_attribute("tool.name", f"tool_{step}")
        if content:
            tool.set_attribute("input.value", json.dumps({"step": step}))
            tool.set_attribute("output.value", "ok")
        tool.end()
        tools.end()
    final = tracer.start_span("ChatOpenAI", context=root_ctx)
    final.set_attribute("openinference.span.kind", "LLM")
    final.set_attribute("llm.output_messages.0.message.role", "assistant")
    if content:
        final.set_attribute("llm.output_messages.0.message.content", "sunny")
    final.end()
    root.set_attribute("openinference.span.kind", "CHAIN")
    if content:
        root.set_attribute("input.value", json.dumps({"messages": [["user", f"weather in city {i}?"]]}))
    root.end()


WORKLOADS: dict[str, tuple[Callable[[Any, bool, int], None], int, Expectation]] = {
    "genai7": (one_run, 7, Expectation(agent_name=AGENT, expected_tool_order=("tool_0", "tool_2", "tool_4"))),
    "openinference30": (oi_run, 30, OI_EXPECTATION),
}


def _thread_cpu(names: tuple[str, ...]) -> dict[str, float]:
    """CPU seconds used so far by the live threads whose names start with each prefix."""
    out = dict.fromkeys(names, 0.0)
    for t in threading.enumerate():
        for prefix in names:
            if t.name.startswith(prefix) and t.ident is not None:
                try:
                    out[prefix] += time.clock_gettime(time.pthread_getcpuclockid(t.ident))
                except (OSError, AttributeError):
                    pass
    return out


OURS = ("otel-toolscore-worker", "otel-toolscore-emitter")
#: Every background thread whose CPU is reported per run: ours, and the lean design's worker
#: (``bench/lean_design.py``; the name is spelled here so this module need not import it).
THREADS = (*OURS, "lean-design-worker")


def measure(
    make: Callable[[], Pipeline], workload: str, runs: int, threads: int, content: bool, pause_s: float = 0.0
) -> dict[str, Any]:
    """CPU per run of a fresh pipeline from ``make`` on ``workload``: ``agent`` (the application's
    threads), ``total`` (the whole process to the end of a final flush), per background thread
    (ours, the lean design's worker), and counts. ``pause_s``: each application thread sleeps this
    long after every run (runs trickling in, as agents waiting on their model run; the background
    threads' wake-ups while the application sleeps are in ``total``)."""
    run_fn, spans_per_run, _ = WORKLOADS[workload]
    pipe = make()
    tracer = pipe.tracer
    for i in range(WARMUP):  # warm up code paths and caches of this pipeline
        run_fn(tracer, content, i)
    pipe.flush()
    gc.collect()
    per = max(1, runs // threads)
    agent_cpu = [0.0] * threads
    barrier = threading.Barrier(threads + 1)

    def work(k: int) -> None:
        barrier.wait()
        t0 = time.thread_time()
        for i in range(per):
            run_fn(tracer, content, k * per + i)
            if pause_s:
                time.sleep(pause_s)
        agent_cpu[k] = time.thread_time() - t0

    pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    ours0 = _thread_cpu(THREADS)
    p0 = time.process_time()
    barrier.wait()
    for t in pool:
        t.join()
    pipe.flush()
    total = time.process_time() - p0
    ours1 = _thread_cpu(THREADS)
    n = per * threads
    info: dict[str, Any] = {
        "agent": sum(agent_cpu) / n,
        "total": total / n,
        "exported_spans": pipe.spans.spans - WARMUP * spans_per_run,
        "expected_spans": n * spans_per_run,
    }
    for name in THREADS:
        info[name] = (ours1[name] - ours0[name]) / n
    scored = pipe.spans.scored_roots  # roots exported with a score attribute (none for the SDK alone)
    info["scored_roots"] = scored - WARMUP if scored else 0
    if pipe.processor is not None:
        info["pending_after"] = pipe.processor.pending_traces
    pipe.close()
    return info
