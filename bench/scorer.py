"""Code scorer: runs per second against the number of calls per run, in every mode, vs a naive reference.

The expected list grows with the run (``m = n``: the expected order / multiset is as long as the
calls), which is the corner where a quadratic implementation shows. The naive reference is written
here the way such checks are often written by hand: slicing and ``list.index`` for the subsequence,
``list.remove`` for the multiset modes — each O(n·m). Both are timed in the same rounds,
interleaved, and must agree on every score.

Scaling is summarised as the exponent ``log10(t(10,000) / t(1,000))``: ~1 is linear, ~2 quadratic.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable
from functools import partial

from otel_toolscore.model import AgentRun, ToolCall
from otel_toolscore.scorers.code import ToolCallAccuracyCodeScorer

from .common import Result

SIZES = (1, 10, 100, 1_000, 10_000)
MODES = ("ordered-lenient", "ordered-strict", "unordered", "subset", "superset")
_POOL = [f"tool_{i}" for i in range(50)]


def _run_and_expected(n: int, mode: str) -> tuple[AgentRun, list[str]]:
    rng = random.Random(n)
    names = [rng.choice(_POOL) for _ in range(n)]
    run = AgentRun(run_id=f"r{n}", tool_calls=[ToolCall(name=x, call_id=f"c{i}") for i, x in enumerate(names)])
    expected = list(names)
    if mode in ("unordered", "subset", "superset"):
        rng.shuffle(expected)  # same multiset, another order: every mode passes, all work is done
    return run, expected


def _scorer(mode: str, expected: list[str]) -> ToolCallAccuracyCodeScorer:
    if mode == "ordered-lenient":
        return ToolCallAccuracyCodeScorer(expected_tool_order=expected)
    if mode == "ordered-strict":
        return ToolCallAccuracyCodeScorer(expected_tool_order=expected, strict_mode=True)
    return ToolCallAccuracyCodeScorer(expected_tool_order=expected, match=mode)  # type: ignore[arg-type]


# -- the naive reference (what a first hand-written version looks like) -----------------------------
def _naive(mode: str, expected: list[str]) -> Callable[[AgentRun], float]:
    def score(run: AgentRun) -> float:
        names = [c.name for c in run.tool_calls if c.kind == "tool"]
        if not names:
            return 0.0
        if mode == "ordered-lenient":
            pos = 0
            for t in expected:
                try:
                    pos += names[pos:].index(t) + 1  # copies the rest of the list every step
                except ValueError:
                    return 0.0
            return 1.0
        if mode == "ordered-strict":
            return 1.0 if len(names) == len(expected) and all(names[i] == expected[i] for i in range(len(names))) else 0.0
        if mode in ("unordered", "superset"):
            remaining = list(names)
            for t in expected:
                try:
                    remaining.remove(t)  # linear scan each time
                except ValueError:
                    return 0.0
            return 1.0 if mode == "superset" or not remaining else 0.0
        # subset: every call is an expected one (within multiplicity)
        pool = list(expected)
        for x in names:
            try:
                pool.remove(x)
            except ValueError:
                return 0.0
        return 1.0

    return score


def _per_call(fn: Callable[[], object], budget_s: float) -> float:
    """Seconds per call of ``fn``, repeating until ``budget_s`` has elapsed (at least once)."""
    n = 0
    t0 = time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= budget_s:
            return elapsed / n


def run(result: Result, *, quick: bool) -> None:
    rounds = 1 if quick else 3
    budget = 0.005 if quick else 0.03
    sizes = SIZES[:4] if quick else SIZES
    for mode in MODES:
        times: dict[str, dict[int, float]] = {"verdict": {}, "full": {}, "naive": {}}
        for n in sizes:
            run_, expected = _run_and_expected(n, mode)
            scorer = _scorer(mode, expected)
            naive = _naive(mode, expected)
            assert scorer.verdict(run_).score == naive(run_) == 1.0, (mode, n)
            samples: dict[str, list[float]] = {"verdict": [], "full": [], "naive": []}
            for r in range(rounds):
                order = ["verdict", "full", "naive"] if r % 2 == 0 else ["naive", "full", "verdict"]
                for which in order:
                    fns: dict[str, Callable[[], object]] = {"verdict": partial(scorer.verdict, run_), "full": partial(scorer.run, run_),
                           "naive": partial(naive, run_)}
                    # Large runs: a longer budget so one GC pause does not decide the figure.
                    samples[which].append(_per_call(fns[which], budget * (3 if n >= 1_000 else 1)))
            for which, s in samples.items():
                times[which][n] = statistics.median(s)
            result.add(
                name=f"code scorer, {mode}, {n} calls",
                mode=mode,
                calls=n,
                runs_per_s=round(1 / times["verdict"][n], 1),
                runs_per_s_with_explanation=round(1 / times["full"][n], 1),
                naive_runs_per_s=round(1 / times["naive"][n], 1),
                speedup_vs_naive=round(times["naive"][n] / times["verdict"][n], 2),
                us_per_call=round(times["verdict"][n] * 1e6 / n, 3),
                us_per_call_with_explanation=round(times["full"][n] * 1e6 / n, 3),
            )
        hi, lo = sizes[-1], sizes[-2]
        result.add(
            name=f"code scorer, {mode}, scaling exponent {lo}->{hi} calls",
            mode=mode,
            scaling_exponent=round(math.log10(times["verdict"][hi] / times["verdict"][lo]) / math.log10(hi / lo), 2),
            scaling_exponent_with_explanation=round(
                math.log10(times["full"][hi] / times["full"][lo]) / math.log10(hi / lo), 2
            ),
            naive_scaling_exponent=round(math.log10(times["naive"][hi] / times["naive"][lo]) / math.log10(hi / lo), 2),
        )
