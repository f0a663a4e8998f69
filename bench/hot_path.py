"""Hot path: the per-run cost of the SDK + BatchSpanProcessor alone vs with ToolScoreSpanProcessor in front.

Workload per run: 1 ``invoke_agent`` span, 1 ``chat`` span, 5 ``execute_tool`` spans (the scripted
agent), every run scored against a rule (attributes on the root copy, an evaluation log record, the
histogram and counters). Two figures per configuration:

* ``agent``: time on the application's threads only (what the agent's latency sees);
* ``total``: the same plus ``force_flush`` of every provider, so the background work we add (the
  emitter thread writing the event and metrics, which competes for the GIL) is paid for too.

The target (issue 4) is ``total`` <= 1.10 x the SDK alone, single-threaded and with 8 threads.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from typing import Any

from .common import Paired, Result
from .pipelines import Pipeline, baseline_pipeline, candidate_pipeline, one_run

TARGET = 1.10
WARMUP = 20


def _measure(make: Callable[[], Pipeline], runs: int, threads: int, content: bool) -> tuple[float, float, dict[str, Any]]:
    pipe = make()
    tracer = pipe.tracer
    for i in range(WARMUP):  # warm up code paths and caches of this pipeline
        one_run(tracer, content, i)
    pipe.flush()
    gc.collect()
    if threads == 1:
        t0 = time.perf_counter()
        for i in range(runs):
            one_run(tracer, content, i)
        t1 = time.perf_counter()
    else:
        per = runs // threads
        barrier = threading.Barrier(threads + 1)

        def work(k: int) -> None:
            barrier.wait()
            for i in range(per):
                one_run(tracer, content, k * per + i)

        pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for t in pool:
            t.start()
        barrier.wait()
        t0 = time.perf_counter()
        for t in pool:
            t.join()
        t1 = time.perf_counter()
        runs = per * threads
    pipe.flush()
    t2 = time.perf_counter()
    info = {"exported_spans": pipe.spans.spans - WARMUP * 7, "expected_spans": runs * 7}
    if pipe.processor is not None:
        info["scored_roots"] = pipe.spans.scored_roots - WARMUP
        info["pending_after"] = pipe.processor.pending_traces
    pipe.close()
    return (t1 - t0) / runs, (t2 - t0) / runs, info


def _compare(runs: int, rounds: int, threads: int, content: bool) -> tuple[Paired, Paired, dict[str, list[dict[str, Any]]]]:
    agent = Paired([], [])
    total = Paired([], [])
    infos: dict[str, list[dict[str, Any]]] = {"baseline": [], "candidate": []}

    def base() -> None:
        a, t, info = _measure(baseline_pipeline, runs, threads, content)
        agent.baseline.append(a)
        total.baseline.append(t)
        infos["baseline"].append(info)

    def cand() -> None:
        a, t, info = _measure(candidate_pipeline, runs, threads, content)
        agent.candidate.append(a)
        total.candidate.append(t)
        infos["candidate"].append(info)

    for r in range(rounds):
        first, second = (base, cand) if r % 2 == 0 else (cand, base)
        first()
        second()
    return agent, total, infos


def run(result: Result, *, quick: bool) -> None:
    rounds = 2 if quick else 5
    runs = 48 if quick else 800
    for content in (False, True):
        for threads in (1, 8):
            agent, total, infos = _compare(runs, rounds, threads, content)
            lo, hi = total.spread
            drops_base = sum(i["expected_spans"] - i["exported_spans"] for i in infos["baseline"])
            drops_cand = sum(i["expected_spans"] - i["exported_spans"] for i in infos["candidate"])
            scored = sum(i.get("scored_roots", 0) for i in infos["candidate"])
            result.add(
                name=f"hot path, {threads} thread{'s' if threads > 1 else ''}, content {'on' if content else 'off'}",
                threads=threads,
                content_captured=content,
                runs_per_round=runs,
                rounds=rounds,
                baseline_us_per_run=round(total.baseline_median * 1e6, 1),
                candidate_us_per_run=round(total.candidate_median * 1e6, 1),
                ratio_total=round(total.ratio, 3),
                ratio_total_min_max=[round(lo, 3), round(hi, 3)],
                ratio_agent_threads=round(agent.ratio, 3),
                overhead_us_per_run=round((total.candidate_median - total.baseline_median) * 1e6, 1),
                overhead_us_per_span=round((total.candidate_median - total.baseline_median) * 1e6 / 7, 2),
                target=TARGET,
                verdict="PASS" if total.ratio <= TARGET else "MISS",
                spans_dropped_by_bsp_baseline=drops_base,
                spans_dropped_by_bsp_candidate=drops_cand,
                roots_scored_and_exported=scored,
            )
