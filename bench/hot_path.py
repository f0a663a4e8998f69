"""Hot path: CPU per agent run of the SDK + BatchSpanProcessor alone, with the yardstick's minimal
processor in front, with ToolScoreSpanProcessor in front, and with the lean full design in front —
the four in the same interleaved rounds.

Workloads (``bench/workloads.py``), each every run scored against a rule (score attributes on the
root copy, an evaluation log record, the histogram and counters): ``genai7`` (7 GenAI spans,
content captured or not) and ``openinference30`` (30 OpenInference spans, LangGraph-shaped), at 1
and 8 application threads.

Two figures per configuration, both CPU time (not wall time, so a busy machine blurs them less):

* ``agent``: ``time.thread_time`` of the application's own threads (what the agent's latency pays);
* ``total``: ``time.process_time`` of the whole process from the first run to the end of a final
  ``force_flush`` of every provider — the work moved to background threads (our worker and emitter,
  the yardstick's worker, the BatchSpanProcessor's exporter thread) is paid for here.

Targets: ``agent`` ≤ 1.10 x the SDK alone; ``total`` ≤ 1 + 2 x the yardstick's own overhead
(``bench/yardstick.py``: its worker-thread minimal processor on the same workload, measured in the
same rounds), so each row carries its own whole-process target. Each round runs the four pipelines
back to back, the order reversed every other round; ratios are medians of per-round ratios.
The candidate's rows also break its process CPU down by thread (our worker, our emitter, the rest).

The lean full design (``bench/lean_design.py``: the whole design — both conventions through key
tables, runs split by parent links, calls merged by id, bounded and counted state, root copy,
evaluation record, histogram point, counters — at its leanest) is the floor of *this design*: each
row prints its agent and whole-process ratios (``lean_ratio_*``), its worker's thread CPU per run
(``lean_worker_us_per_run``), our gap to it in the same rounds (``gap_*``: the median per-round ratio
of ours over the lean design's CPU per run) and a verdict against the *same* targets as ours
(``lean_verdict_*``: whether the targets are reachable by a full design at all on this machine;
the targets themselves are not changed by it).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from .common import Result
from .lean_design import WORKER_THREAD as LEAN_WORKER
from .lean_design import lean_pipeline
from .pipelines import Pipeline, baseline_pipeline, candidate_pipeline
from .workloads import WORKLOADS, measure
from .yardstick import TARGET_AGENT, MinimalWorkerProcessor, minimal_pipeline, total_target

__all__ = ["TARGET_AGENT", "run"]

CONFIGS = (("genai7", False), ("genai7", True), ("openinference30", True))
#: The trickle row's pause after each run: agents wait on their model between runs, so in production
#: spans arrive a run at a time, and what background threads cost while the application waits (their
#: wake-ups) is part of the whole-process figure.
TRICKLE_PAUSE_S = 0.005
PIPELINES = ("baseline", "yardstick", "candidate", "lean")


def _pipelines(workload: str) -> dict[str, Callable[[], Pipeline]]:
    expectation = WORKLOADS[workload][2]
    return {
        "baseline": baseline_pipeline,
        "yardstick": lambda: minimal_pipeline(MinimalWorkerProcessor, workload),
        "candidate": lambda: candidate_pipeline(expectations=(expectation,)),
        "lean": lambda: lean_pipeline(expectation),
    }


def _compare(
    workload: str, runs: int, rounds: int, threads: int, content: bool, pause_s: float = 0.0
) -> dict[str, list[dict[str, Any]]]:
    makers = _pipelines(workload)
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in PIPELINES}
    for r in range(rounds):
        for which in PIPELINES if r % 2 == 0 else PIPELINES[::-1]:
            out[which].append(measure(makers[which], workload, runs, threads, content, pause_s))
    return out


def _ratios(
    pairs: dict[str, list[dict[str, Any]]], which: str, key: str, over: str = "baseline"
) -> tuple[float, float, float]:
    """Median, min and max over rounds of ``which``'s ``key`` over ``over``'s (the SDK alone) in the same round."""
    ratios = [c[key] / b[key] for b, c in zip(pairs[over], pairs[which]) if b[key] > 0]
    return statistics.median(ratios), min(ratios), max(ratios)


def _verdict(ratio: float, target: float) -> str:
    return "PASS" if ratio <= target else "MISS"


def _us(rows: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in rows) * 1e6, 1)


def _rows(quick: bool) -> list[tuple[str, bool, int, int, int, float]]:
    """(workload, content, threads, runs, rounds, pause) of each row: every configuration with runs
    back to back at 1 and 8 threads (the targets' rows), then GenAI runs trickling in 5 ms apart."""
    rounds = 2 if quick else 7
    rows = []
    for workload, content in CONFIGS:
        runs = (48 if quick else 1_200) if workload == "genai7" else (16 if quick else 300)
        rows += [(workload, content, threads, runs, rounds, 0.0) for threads in (1, 8)]
    rows.append(("genai7", False, 1, 24 if quick else 300, 2 if quick else 5, TRICKLE_PAUSE_S))
    return rows


def run(result: Result, *, quick: bool) -> None:
    for workload, content, threads, runs, rounds, pause in _rows(quick):
        pairs = _compare(workload, runs, rounds, threads, content, pause)
        agent, agent_lo, agent_hi = _ratios(pairs, "candidate", "agent")
        total, total_lo, total_hi = _ratios(pairs, "candidate", "total")
        y_agent, y_agent_lo, y_agent_hi = _ratios(pairs, "yardstick", "agent")
        y_total, y_total_lo, y_total_hi = _ratios(pairs, "yardstick", "total")
        l_agent, l_agent_lo, l_agent_hi = _ratios(pairs, "lean", "agent")
        l_total, l_total_lo, l_total_hi = _ratios(pairs, "lean", "total")
        gap_agent = _ratios(pairs, "candidate", "agent", over="lean")
        gap_total = _ratios(pairs, "candidate", "total", over="lean")
        # verdicts on the figures as printed: what the table shows is what is judged
        agent, total, y_total = round(agent, 3), round(total, 3), round(y_total, 3)
        l_agent, l_total = round(l_agent, 3), round(l_total, 3)
        target_total = round(total_target(y_total), 3)
        base, yard, cand, lean = pairs["baseline"], pairs["yardstick"], pairs["candidate"], pairs["lean"]
        result.add(
            name=f"{workload}, {threads} thread{'s' if threads > 1 else ''}, content {'on' if content else 'off'}"
            + (f", runs {pause * 1000:g} ms apart" if pause else ""),
            workload=workload,
            threads=threads,
            pause_between_runs_ms=pause * 1000,
            content_captured=content,
            runs_per_round=runs,
            rounds=rounds,
            baseline_agent_us_per_run=_us(base, "agent"),
            candidate_agent_us_per_run=_us(cand, "agent"),
            ratio_agent=agent,
            ratio_agent_min_max=[round(agent_lo, 3), round(agent_hi, 3)],
            baseline_total_us_per_run=_us(base, "total"),
            candidate_total_us_per_run=_us(cand, "total"),
            ratio_total=total,
            ratio_total_min_max=[round(total_lo, 3), round(total_hi, 3)],
            worker_us_per_run=_us(cand, "otel-toolscore-worker"),
            emitter_us_per_run=_us(cand, "otel-toolscore-emitter"),
            yardstick_agent_us_per_run=_us(yard, "agent"),
            yardstick_total_us_per_run=_us(yard, "total"),
            yardstick_ratio_agent=round(y_agent, 3),
            yardstick_ratio_agent_min_max=[round(y_agent_lo, 3), round(y_agent_hi, 3)],
            yardstick_ratio_total=y_total,
            yardstick_ratio_total_min_max=[round(y_total_lo, 3), round(y_total_hi, 3)],
            target_agent=TARGET_AGENT,
            target_total=target_total,
            verdict_agent=_verdict(agent, TARGET_AGENT),
            verdict_total=_verdict(total, target_total),
            lean_agent_us_per_run=_us(lean, "agent"),
            lean_total_us_per_run=_us(lean, "total"),
            lean_ratio_agent=l_agent,
            lean_ratio_agent_min_max=[round(l_agent_lo, 3), round(l_agent_hi, 3)],
            lean_ratio_total=l_total,
            lean_ratio_total_min_max=[round(l_total_lo, 3), round(l_total_hi, 3)],
            lean_worker_us_per_run=_us(lean, LEAN_WORKER),
            lean_verdict_agent=_verdict(l_agent, TARGET_AGENT),
            lean_verdict_total=_verdict(l_total, target_total),
            gap_agent=round(gap_agent[0], 3),
            gap_agent_min_max=[round(gap_agent[1], 3), round(gap_agent[2], 3)],
            gap_total=round(gap_total[0], 3),
            gap_total_min_max=[round(gap_total[1], 3), round(gap_total[2], 3)],
            spans_dropped_by_bsp_baseline=sum(i["expected_spans"] - i["exported_spans"] for i in base),
            spans_dropped_by_bsp_yardstick=sum(i["expected_spans"] - i["exported_spans"] for i in yard),
            spans_dropped_by_bsp_candidate=sum(i["expected_spans"] - i["exported_spans"] for i in cand),
            spans_dropped_by_bsp_lean=sum(i["expected_spans"] - i["exported_spans"] for i in lean),
            yardstick_roots_scored_and_exported=sum(i["scored_roots"] for i in yard),
            roots_scored_and_exported=sum(i.get("scored_roots", 0) for i in cand),
            lean_roots_scored_and_exported=sum(i["scored_roots"] for i in lean),
        )
        if y_total < 1.0:  # it does more than the SDK alone: below 1 is noise, and so is the target
            result.notes.append(f"{workload}, {threads} threads, content {'on' if content else 'off'}: the "
                                f"yardstick measured {y_total:.3f}x the SDK alone (noise); its target is unreliable")
