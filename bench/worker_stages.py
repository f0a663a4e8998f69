"""Where our worker's time goes, stage by stage, beside the lean design's worker on the same spans.

The hot-path rows give the worker's CPU per run with the interpreter as it runs (other threads, the
garbage collector), which moves by several µs between processes. This view holds all of that still,
so a change to one stage shows to within about a microsecond:

* ``runs`` runs are made with the worker thread stopped (the application's hooks queue as usual,
  :func:`~bench.pipelines.without_worker`), then the measuring thread does what the worker does with
  that queue — the batches through the core, the scored runs to events and metrics, the spans on to
  the downstream — with the garbage collector off (its share is the hot-path rows' business, see
  ``docs/performance.md``);
* each stage's CPU (``time.thread_time``) is summed by timing the processor's own calls, once per
  batch or per trace (a few tenths of a µs per run of timing);
* the lean design (``bench/lean_design.py``) reads the same workload on the measuring thread the same
  way: its worker stopped, its worker's own loop run there over what its hooks queued.

Stages, µs per run: ``prepare`` (the batch matched: starts against ends, possible roots held),
``read`` (the core's per-span steps: ids, parent links, facts read), ``assembly`` (the trace's runs),
``scoring`` (expectations, verdicts, score attributes, releasing the roots), ``outputs`` (the
``gen_ai.evaluation.result`` records, the score histogram, the counters), ``hand_on`` (every span to
the downstream ``BatchSpanProcessor``, roots as copies with their score) and ``other`` (taking
batches, the rest). ``outputs`` and ``hand_on`` are mostly the SDK's own calls, which the lean design
makes too.
"""

from __future__ import annotations

import collections
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import otel_toolscore.core._engine as engine

from .lean_design import lean_pipeline
from .pipelines import candidate_pipeline, without_worker
from .workloads import WORKLOADS

__all__ = ["STAGES", "worker_stages"]

STAGES = ("prepare", "read", "assembly", "scoring", "outputs", "hand_on", "other")


def _timed(acc: collections.defaultdict[str, float], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    clock = time.thread_time

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[name] += clock() - t0

    return wrapper


def _ours(workload: str, content: bool, runs: int, rounds: int) -> list[dict[str, float]]:
    run_fn, _spans, expectation = WORKLOADS[workload]
    pipe = candidate_pipeline(expectations=(expectation,))
    proc = without_worker(pipe)
    acc: collections.defaultdict[str, float] = collections.defaultdict(float)
    # the processor's and the core's own calls, timed through instance attributes (the class is left
    # alone); the assembler through the core module's name for it, restored below
    proc._prepare = _timed(acc, "prepare", proc._prepare)
    proc._core.feed = _timed(acc, "feed", proc._core.feed)
    proc._core.settle = _timed(acc, "settle", proc._core.settle)
    proc.outputs.deliver = _timed(acc, "outputs", proc.outputs.deliver)
    assemble = engine.assemble_records  # type: ignore[attr-defined]
    engine.assemble_records = _timed(acc, "assembly", assemble)  # type: ignore[attr-defined]
    out: list[dict[str, float]] = []
    try:
        k = 0
        for r in range(rounds + 1):  # the first round warms up
            for _ in range(runs):
                run_fn(pipe.tracer, content, k)
                k += 1
            acc.clear()
            gc.collect()
            gc.disable()
            try:
                t0 = time.thread_time()
                while proc._queue:  # the worker's loop: a batch at a time, through the core
                    proc._process(proc._worker.take_batch())
                t1 = time.thread_time()
                proc._hand_on()
                t2 = time.thread_time()
            finally:
                gc.enable()
            if r == 0:
                continue
            stage = {
                "prepare": acc["prepare"],
                "read": acc["feed"] - acc["settle"],
                "assembly": acc["assembly"],
                "scoring": acc["settle"] - acc["assembly"],
                "outputs": acc["outputs"],
                "hand_on": t2 - t1,
            }
            stage["other"] = (t1 - t0) - sum(stage.values()) + stage["hand_on"]
            stage["total"] = t2 - t0
            out.append({name: v / runs * 1e6 for name, v in stage.items()})
    finally:
        engine.assemble_records = assemble  # type: ignore[attr-defined]
        pipe.flush()
        pipe.close()
    return out


def _lean(workload: str, content: bool, runs: int, rounds: int) -> list[float]:
    run_fn, _spans, expectation = WORKLOADS[workload]
    pipe = lean_pipeline(expectation)
    lean = without_worker(pipe)
    out: list[float] = []
    try:
        k = 0
        for r in range(rounds + 1):
            for _ in range(runs):
                run_fn(pipe.tracer, content, k)
                k += 1
            gc.collect()
            gc.disable()
            try:
                t0 = time.thread_time()
                lean._loop()  # its worker's own loop: returns once the queue is empty
                t = time.thread_time() - t0
            finally:
                gc.enable()
            if r:
                out.append(t / runs * 1e6)
    finally:
        pipe.flush()
        pipe.close()
    return out


def worker_stages(workload: str, content: bool, *, runs: int = 100, rounds: int = 15) -> dict[str, float]:
    """Medians over ``rounds`` of ``runs`` runs each: our worker's stages (µs per run, ``STAGES`` and
    ``total``), and ``lean_total``, the lean design's worker on the same workload."""
    ours = _ours(workload, content, runs, rounds)
    lean = _lean(workload, content, runs, rounds)
    med = {name: statistics.median(r[name] for r in ours) for name in (*STAGES, "total")}
    med["lean_total"] = statistics.median(lean)
    return med
