"""Hot path: CPU per agent run of the SDK + BatchSpanProcessor alone vs with ToolScoreSpanProcessor in front.

Two workloads, each every run scored against a rule (score attributes on the root copy, an
evaluation log record, the histogram and counters):

* ``genai7``: the scripted GenAI agent — 1 ``invoke_agent`` span, 1 ``chat`` span, 5 ``execute_tool``
  spans (content captured on the spans or not);
* ``openinference30``: a LangGraph-shaped OpenInference run — a bare ``weather_agent`` root (its kind
  set later), 7 steps of CHAIN → LLM (flattened ``llm.output_messages`` tool calls) and CHAIN → TOOL,
  and a final LLM call: 30 spans.

Two figures per configuration, both CPU time (not wall time, so a busy machine blurs them less):

* ``agent``: ``time.thread_time`` of the application's own threads (what the agent's latency pays);
* ``total``: ``time.process_time`` of the whole process from the first run to the end of a final
  ``force_flush`` of every provider — the work moved to background threads (our worker and emitter,
  the BatchSpanProcessor's exporter thread) is paid for here.

Targets (issue 10): ``agent`` ≤ 1.10 x and ``total`` ≤ 1.30 x the SDK alone, 1 and 8 threads.
The candidate's rows also break its process CPU down by thread (our worker, our emitter, the rest).
"""

from __future__ import annotations

import gc
import json
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.trace import set_span_in_context

from otel_toolscore import Expectation

from .common import Result
from .pipelines import AGENT, Pipeline, baseline_pipeline, candidate_pipeline, one_run

TARGET_AGENT = 1.10
TARGET_TOTAL = 1.30
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


_OURS = ("otel-toolscore-worker", "otel-toolscore-emitter")


def _measure(make: Callable[[], Pipeline], workload: str, runs: int, threads: int, content: bool) -> dict[str, Any]:
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
        agent_cpu[k] = time.thread_time() - t0

    pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    ours0 = _thread_cpu(_OURS)
    p0 = time.process_time()
    barrier.wait()
    for t in pool:
        t.join()
    pipe.flush()
    total = time.process_time() - p0
    ours1 = _thread_cpu(_OURS)
    n = per * threads
    info: dict[str, Any] = {
        "agent": sum(agent_cpu) / n,
        "total": total / n,
        "exported_spans": pipe.spans.spans - WARMUP * spans_per_run,
        "expected_spans": n * spans_per_run,
    }
    for name in _OURS:
        info[name] = (ours1[name] - ours0[name]) / n
    scored = pipe.spans.scored_roots  # roots exported with a score attribute (none for the SDK alone)
    info["scored_roots"] = scored - WARMUP if scored else 0
    if pipe.processor is not None:
        info["pending_after"] = pipe.processor.pending_traces
    pipe.close()
    return info


def _compare(workload: str, runs: int, rounds: int, threads: int, content: bool) -> dict[str, list[dict[str, Any]]]:
    expectation = WORKLOADS[workload][2]
    out: dict[str, list[dict[str, Any]]] = {"baseline": [], "candidate": []}
    for r in range(rounds):
        order = ("baseline", "candidate") if r % 2 == 0 else ("candidate", "baseline")
        for which in order:
            if which == "baseline":
                out[which].append(_measure(baseline_pipeline, workload, runs, threads, content))
            else:
                out[which].append(
                    _measure(lambda: candidate_pipeline(expectations=(expectation,)), workload, runs, threads, content)
                )
    return out


def _ratio(pairs: dict[str, list[dict[str, Any]]], key: str) -> tuple[float, float, float]:
    ratios = [c[key] / b[key] for b, c in zip(pairs["baseline"], pairs["candidate"]) if b[key] > 0]
    return statistics.median(ratios), min(ratios), max(ratios)


def run(result: Result, *, quick: bool) -> None:
    rounds = 2 if quick else 7
    configs = [("genai7", False), ("genai7", True), ("openinference30", True)]
    for workload, content in configs:
        runs = (48 if quick else 1_200) if workload == "genai7" else (16 if quick else 300)
        for threads in (1, 8):
            pairs = _compare(workload, runs, rounds, threads, content)
            agent, agent_lo, agent_hi = _ratio(pairs, "agent")
            total, total_lo, total_hi = _ratio(pairs, "total")
            base = pairs["baseline"]
            cand = pairs["candidate"]
            med = lambda rows, key: statistics.median(r[key] for r in rows)  # noqa: E731
            result.add(
                name=f"{workload}, {threads} thread{'s' if threads > 1 else ''}, content {'on' if content else 'off'}",
                workload=workload,
                threads=threads,
                content_captured=content,
                runs_per_round=runs,
                rounds=rounds,
                baseline_agent_us_per_run=round(med(base, "agent") * 1e6, 1),
                candidate_agent_us_per_run=round(med(cand, "agent") * 1e6, 1),
                ratio_agent=round(agent, 3),
                ratio_agent_min_max=[round(agent_lo, 3), round(agent_hi, 3)],
                baseline_total_us_per_run=round(med(base, "total") * 1e6, 1),
                candidate_total_us_per_run=round(med(cand, "total") * 1e6, 1),
                ratio_total=round(total, 3),
                ratio_total_min_max=[round(total_lo, 3), round(total_hi, 3)],
                worker_us_per_run=round(med(cand, "otel-toolscore-worker") * 1e6, 1),
                emitter_us_per_run=round(med(cand, "otel-toolscore-emitter") * 1e6, 1),
                target_agent=TARGET_AGENT,
                target_total=TARGET_TOTAL,
                verdict_agent="PASS" if agent <= TARGET_AGENT else "MISS",
                verdict_total="PASS" if total <= TARGET_TOTAL else "MISS",
                spans_dropped_by_bsp_baseline=sum(i["expected_spans"] - i["exported_spans"] for i in base),
                spans_dropped_by_bsp_candidate=sum(i["expected_spans"] - i["exported_spans"] for i in cand),
                roots_scored_and_exported=sum(i.get("scored_roots", 0) for i in cand),
            )
