"""Memory: bytes per pending run, RSS over many runs (slope), and 100k pending runs at the limit.

* Bytes per pending run (``tracemalloc``): K runs whose chat and tool spans have ended but whose
  root is still open, with the SDK + BatchSpanProcessor alone and with the processor in front; the
  difference per run is what the processor keeps. Measured with content capture off (the default
  without a judge) and on (what a judge needs).
* RSS over many runs: a fresh interpreter runs as many complete runs as fit in a time budget and
  samples RSS every batch; the slope over the second half (bytes per 100k runs) should be ~0.
* 100k pending at the limit: a fresh interpreter opens ``limit + 10%`` run roots with
  ``max_pending_traces = limit``, once without and once with the processor; reports the RSS
  difference per pending trace and checks the table stays at the limit with every eviction counted.

The RSS figures run in child processes because a Python process does not give freed memory back:
two measurements in one process would reuse each other's arenas.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
import tracemalloc
from functools import partial
from pathlib import Path
from typing import Any

from opentelemetry import trace as trace_api

from .common import Result, rss_bytes
from .pipelines import AGENT, CALLS, Pipeline, baseline_pipeline, candidate_pipeline, one_run

ROOT = Path(__file__).resolve().parent.parent


def _open_runs(pipe: Pipeline, k: int, content: bool, tools: bool = True) -> list[Any]:
    """``k`` runs with their child spans ended and their root open; returns the open roots."""
    tracer = pipe.tracer
    roots = []
    for i in range(k):
        root = tracer.start_span(
            f"invoke_agent {AGENT}", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT}
        )
        if tools:
            ctx = trace_api.set_span_in_context(root)
            chat = tracer.start_span("chat model", context=ctx, attributes={"gen_ai.operation.name": "chat"})
            if content:
                chat.set_attribute(
                    "gen_ai.input.messages",
                    json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"weather in city {i}?"}]}]),
                )
            chat.end()
            for j, call in enumerate(CALLS):
                attrs: dict[str, Any] = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.name,
                    "gen_ai.tool.call.id": f"call_{j}",
                }
                if content:
                    attrs["gen_ai.tool.call.arguments"] = json.dumps(call.arguments)
                    attrs["gen_ai.tool.call.result"] = json.dumps({"ok": True, "i": i})
                tracer.start_span(f"execute_tool {call.name}", context=ctx, attributes=attrs).end()
        roots.append(root)
    return roots


def _traced_bytes(make: Any, k: int, content: bool) -> float:
    """Bytes per open run: the growth between ``k`` and ``2k`` open runs (one-time allocations cancel)."""
    pipe = make()
    warm = _open_runs(pipe, 20, content)  # warm-up: instruments, interned strings, first shard dicts
    pipe.provider.force_flush(10_000)
    tracemalloc.start()
    roots = _open_runs(pipe, k, content)
    pipe.provider.force_flush(10_000)  # empty the BatchSpanProcessor queue in both pipelines
    gc.collect()
    first = tracemalloc.take_snapshot()
    roots += _open_runs(pipe, k, content)
    pipe.provider.force_flush(10_000)
    gc.collect()
    second = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in second.compare_to(first, "filename"))
    for r in warm + roots:
        r.end()
    pipe.flush()
    pipe.close()
    return grown / k


def bytes_per_pending_run(result: Result, *, quick: bool) -> None:
    k = 100 if quick else 1_000
    for content in (False, True):
        settings: dict[str, Any] = {"capture_content": True} if content else {}
        base = _traced_bytes(baseline_pipeline, k, content)
        cand = _traced_bytes(partial(candidate_pipeline, **settings), k, content)
        result.add(
            name=f"memory, bytes per pending run, content {'kept' if content else 'off'}",
            pending_runs=k,
            sdk_bytes_per_open_run=round(base),
            with_processor_bytes_per_open_run=round(cand),
            processor_bytes_per_pending_run=round(cand - base),
            ratio=round(cand / base, 2),
        )


# -- child processes ---------------------------------------------------------------------------------
def _child_rss_over_runs(budget_s: float, batch: int) -> dict[str, Any]:
    pipe = candidate_pipeline()
    tracer = pipe.tracer
    samples: list[tuple[int, int]] = []
    done = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < budget_s:
        for i in range(batch):
            one_run(tracer, False, done + i)
        done += batch
        pipe.flush()
        samples.append((done, rss_bytes()))
    assert pipe.processor is not None
    pending = pipe.processor.pending_traces
    exported = pipe.spans.scored_roots
    pipe.close()
    return {"runs": done, "samples": samples, "pending_after": pending, "scored_roots": exported,
            "seconds": time.perf_counter() - t0}


def _child_pending_at_limit(limit: int, with_processor: bool) -> dict[str, Any]:
    from otel_toolscore import ToolScoreSpanProcessor

    pipe = candidate_pipeline(max_pending_traces=limit) if with_processor else baseline_pipeline()
    warm = _open_runs(pipe, 10, False, tools=False)
    gc.collect()
    before = rss_bytes()
    roots = _open_runs(pipe, limit + limit // 20, False, tools=False)
    gc.collect()
    after = rss_bytes()
    out: dict[str, Any] = {"rss_delta": after - before, "opened": len(roots)}
    if with_processor:
        proc = pipe.processor
        assert isinstance(proc, ToolScoreSpanProcessor)
        out["pending"] = proc.pending_traces
    for r in warm + roots:
        r.end()
    pipe.flush()
    if with_processor:
        assert pipe.processor is not None
        out["pending_after_end"] = pipe.processor.pending_traces
    return out


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.memory", *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _result(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    if proc.returncode != 0:
        raise RuntimeError(f"bench.memory {proc.args!r} failed: {err[-2000:]}")
    data: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return data


def _spawn(*args: str, timeout: float) -> dict[str, Any]:
    return _result(_start(*args), timeout)


def _slope(samples: list[tuple[int, int]]) -> float:
    """Least-squares slope (bytes per run) over the second half of the samples."""
    pts = samples[len(samples) // 2 :]
    if len(pts) < 2:
        return 0.0
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / den if den else 0.0


def rss_over_runs(result: Result, *, quick: bool, budget_s: float) -> None:
    batch = 100 if quick else 500
    data = _spawn("rss", str(budget_s), str(batch), timeout=budget_s * 3 + 120)
    samples = [(int(x), int(y)) for x, y in data["samples"]]
    slope = _slope(samples)
    result.add(
        name="memory, RSS over complete runs",
        runs=data["runs"],
        target_runs=1_000_000,
        seconds=round(data["seconds"], 1),
        rss_first_batch_mib=round(samples[0][1] / 2**20, 1),
        rss_last_mib=round(samples[-1][1] / 2**20, 1),
        slope_bytes_per_100k_runs_second_half=round(slope * 100_000),
        samples=len(samples),
        pending_after=data["pending_after"],
        scored_roots_exported=data["scored_roots"],
    )
    if data["runs"] < 1_000_000:
        result.notes.append(
            f"memory: {data['runs']:,} complete runs fit in the {budget_s:.0f} s budget (not 1M); "
            "flatness is judged from the RSS slope over the second half of that range."
        )


def pending_at_limit(result: Result, *, quick: bool) -> None:
    limit = 500 if quick else 100_000
    timeout = 60 if quick else 600
    # Both children at once: each measures its own RSS, so they do not disturb each other's figure.
    base_proc = _start("limit", str(limit), "0")
    cand_proc = _start("limit", str(limit), "1")
    base = _result(base_proc, timeout)
    cand = _result(cand_proc, timeout)
    opened = cand["opened"]
    result.add(
        name=f"memory, {limit:,} pending runs at the limit",
        limit=limit,
        roots_opened=opened,
        pending_with_processor=cand["pending"],
        at_limit="yes" if limit * 0.95 <= cand["pending"] <= limit else "NO",
        pending_after_roots_end=cand["pending_after_end"],
        sdk_rss_delta_mib=round(base["rss_delta"] / 2**20, 1),
        with_processor_rss_delta_mib=round(cand["rss_delta"] / 2**20, 1),
        processor_bytes_per_pending_trace=round((cand["rss_delta"] - base["rss_delta"]) / max(1, cand["pending"])),
    )


def run(result: Result, *, quick: bool, rss_budget_s: float = 60.0) -> None:
    bytes_per_pending_run(result, quick=quick)
    rss_over_runs(result, quick=quick, budget_s=1.0 if quick else rss_budget_s)
    pending_at_limit(result, quick=quick)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "rss":
        print(json.dumps(_child_rss_over_runs(float(sys.argv[2]), int(sys.argv[3]))))
    elif what == "limit":
        print(json.dumps(_child_pending_at_limit(int(sys.argv[2]), sys.argv[3] == "1")))
    else:
        raise SystemExit(f"unknown child {what!r}")
