"""A/B of two revisions on one hot-path row: whole-process CPU over the SDK alone, in alternating fresh
processes, so a change worth a few hundredths of a ratio shows through this machine's noise.

A ``make bench`` row compares the four pipelines of *one* revision; whether a change helped needs the
same row of the revision before it and after it, measured side by side. One hot-path row of one
revision moves by ±0.2 between sittings on a shared 2-core machine, and by ±0.05 between processes
of one sitting; alternating the two revisions process by process, and taking the mean of several
processes' medians, resolves differences of ~0.03. Not part of ``make bench`` (a minute per pair of
figures):

    python bench/compare.py REV_A REV_B [--workload genai7|openinference30] [--threads N]
                            [--content] [--pause-ms 0] [--pairs 6] [--rounds 7]

``REV_A``/``REV_B``: a directory holding a source tree (``otel_toolscore/`` and ``bench/``), or a git
revision of this repository, checked out to a temporary worktree for the run. Each process measures
the SDK alone and our processor on the row, ``--rounds`` times alternately, and reports the median of
their ratios (whole process, final flush included; and the agent's threads alone) and the collector's
time per run; the summary gives each revision's processes sorted, their mean, the mean agent-thread
ratio, and B - A of both. Six pairs resolve ~0.03 on 1 thread; 8-thread rows take ``--pairs 12``.
``--pause-ms 5`` is the trickle row (each application thread sleeps that long after every run; 300
runs per round).

``--stages`` compares the worker's stages instead (``bench/worker_stages.py``, µs per run, the
interpreter held still; one thread, no pause), in the same alternating processes: each stage's mean
for A and B and B - A. The stage view's figures drift by several percent between sittings while two
processes back to back agree within 1-2 µs, so a change to one stage is told only this way. The lean
design's own loop is measured in every process too: its B - A is the drift left between the two
revisions' processes, the floor of what the stages' B - A can resolve.
(``--child`` and ``--child-stages`` are the measuring processes, internal.)
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _child(tree: str, workload: str, threads: int, content: bool, rounds: int, pause_s: float) -> None:
    sys.path.insert(0, tree)
    from bench.hot_path import _pipelines
    from bench.workloads import measure

    makers = _pipelines(workload)
    runs = 1_200 if workload == "genai7" and not pause_s else 300  # as the hot-path section's rows
    collecting: dict[str, float] = {}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collecting["since"] = time.perf_counter()
        else:
            collecting["total"] = collecting.get("total", 0.0) + time.perf_counter() - collecting["since"]

    gc.callbacks.append(on_gc)
    ratios, agent_ratios, gc_us = [], [], []
    for r in range(rounds):
        figures = {}
        for which in ("baseline", "candidate") if r % 2 == 0 else ("candidate", "baseline"):
            collecting.clear()
            figures[which] = measure(makers[which], workload, runs, threads, content, pause_s)
            if which == "candidate":
                gc_us.append(collecting.get("total", 0.0) / runs * 1e6)
        ratios.append(figures["candidate"]["total"] / figures["baseline"]["total"])
        agent_ratios.append(figures["candidate"]["agent"] / figures["baseline"]["agent"])
    print(json.dumps({"ratio": statistics.median(ratios), "agent_ratio": statistics.median(agent_ratios),
                      "gc_us_per_run": statistics.median(gc_us)}))


def _child_stages(tree: str, workload: str, content: bool, rounds: int) -> None:
    sys.path.insert(0, tree)
    from bench.worker_stages import worker_stages

    print(json.dumps(worker_stages(workload, content, rounds=rounds)))


@contextlib.contextmanager
def _tree(rev: str) -> Iterator[str]:
    """``rev`` as a source tree: the directory itself, or a temporary worktree of the git revision."""
    if Path(rev, "otel_toolscore").is_dir():
        yield str(Path(rev).resolve())
        return
    with tempfile.TemporaryDirectory(prefix="toolscore-ab-") as tmp:
        where = str(Path(tmp) / "tree")
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", where, rev], check=True,
                       capture_output=True)
        try:
            yield where
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", where], check=False,
                           capture_output=True)


def _measure(tree: str, args: argparse.Namespace) -> dict[str, float]:
    content = "on" if args.content else "off"
    if args.stages:
        cmd = [sys.executable, __file__, "--child-stages", tree, args.workload, content, str(args.rounds)]
    else:
        cmd = [sys.executable, __file__, "--child", tree, args.workload, str(args.threads), content, str(args.rounds),
               str(args.pause_ms / 1000)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=tree)
    if proc.returncode != 0:
        raise SystemExit(f"measuring {tree} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        tree, workload, threads, content, rounds, pause_s = argv[1:7]
        _child(tree, workload, int(threads), content == "on", int(rounds), float(pause_s))
        return 0
    if argv[:1] == ["--child-stages"]:
        tree, workload, content, rounds = argv[1:5]
        _child_stages(tree, workload, content == "on", int(rounds))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev_a")
    parser.add_argument("rev_b")
    parser.add_argument("--workload", choices=("genai7", "openinference30"), default="genai7")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--content", action="store_true", help="content recorded on the spans")
    parser.add_argument("--pause-ms", type=float, default=0.0,
                        help="each application thread sleeps this long after every run (the trickle row: 5)")
    parser.add_argument("--pairs", type=int, default=6, help="processes per revision (alternating)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per process")
    parser.add_argument("--stages", action="store_true",
                        help="the worker's stages (bench/worker_stages.py) instead of the hot-path ratio")
    args = parser.parse_args(argv)
    if args.threads < 1 or args.pairs < 1 or args.rounds < 1:
        parser.error("--threads, --pairs and --rounds must be at least 1")
    if not 0 <= args.pause_ms <= 1000:
        parser.error("--pause-ms must be between 0 and 1000")
    if args.stages and (args.threads != 1 or args.pause_ms):
        parser.error("--stages measures the worker on one thread, runs back to back (no --threads, --pause-ms)")
    found: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    with _tree(args.rev_a) as tree_a, _tree(args.rev_b) as tree_b:
        for _ in range(args.pairs):
            found["A"].append(_measure(tree_a, args))
            found["B"].append(_measure(tree_b, args))
    if args.stages:
        _print_stages(found, args)
        return 0
    row = f"{args.workload}, {args.threads} thread{'s' if args.threads > 1 else ''}, content {'on' if args.content else 'off'}"
    if args.pause_ms:
        row += f", runs {args.pause_ms:g} ms apart"
    print(f"{row}: whole process over the SDK alone, {args.pairs} processes x {args.rounds} rounds each")
    means, agent_means = {}, {}
    for name, rev in (("A", args.rev_a), ("B", args.rev_b)):
        ratios = sorted(f["ratio"] for f in found[name])
        means[name] = statistics.mean(ratios)
        agent_means[name] = statistics.mean(f["agent_ratio"] for f in found[name])
        gc_us = statistics.median(f["gc_us_per_run"] for f in found[name])
        shown = " ".join(f"{r:.3f}" for r in ratios)
        print(f"  {name} {rev}: mean {means[name]:.3f}  [{shown}]  agent thread {agent_means[name]:.3f}"
              f"  collector {gc_us:.0f} us/run")
    print(f"  B - A: {means['B'] - means['A']:+.3f} (agent thread {agent_means['B'] - agent_means['A']:+.3f})")
    return 0


def _print_stages(found: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> None:
    print(f"{args.workload}, content {'on' if args.content else 'off'}: worker stages, us per run, "
          f"{args.pairs} processes x {args.rounds} rounds each")
    print(f"  {'stage':12s} {'A':>8s} {'B':>8s} {'B - A':>8s}")
    for stage in found["A"][0]:
        a = statistics.mean(f[stage] for f in found["A"])
        b = statistics.mean(f[stage] for f in found["B"])
        print(f"  {stage:12s} {a:8.1f} {b:8.1f} {b - a:+8.1f}")
    print(f"  A {args.rev_a}; B {args.rev_b}; lean_total: the lean design's loop in the same processes (the drift)")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
