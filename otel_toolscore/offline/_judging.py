"""Offline judging: the online judge over runs read from files, with the online judge's own limits.

Nothing here re-implements a limit. The :class:`~otel_toolscore.online.judge.Judge` built from the
same ``OTEL_TOOLSCORE_JUDGE_*`` settings supplies the scorer, the sampler (ratio on the trace id and
the priorities), the circuit breaker, the token budget and the rate limit; :meth:`Judge.attempt`
runs each judgment within them. What batch use changes:

* a judgment refused by the rate limit waits for the next free slot instead of being skipped (a
  batch has no newer traffic to prefer); the token budget and an open circuit still skip;
* ``max_judgments`` caps the judgments of one command run (runs beyond it are ``max_judgments``);
* concurrency is a bounded thread pool (``settings.workers`` by default);
* :func:`estimate` prices a plan before anything is sent (the dry run).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..core import ScoredRun
from ..judge import Judge, JudgeSampler
from ..model import AgentRun
from ..telemetry import RunRef
from ._results import FileRunScore, Judgment

__all__ = ["DryRunEstimate", "JudgePlan", "JudgeTotals", "estimate", "judge_runs", "plan_judgments"]

#: Longest single wait for a rate-limit slot (the window is a minute; re-checked after each wait).
_MAX_RATE_WAIT_S = 5.0


def _id(text: str | None, bits: int) -> int:
    try:
        return int(text or "0", 16) & ((1 << bits) - 1)
    except ValueError:
        return 0


def scored_run(item: FileRunScore) -> ScoredRun:
    """The online pipeline's view of a run read from a file (what the sampler decides on)."""
    run = item.run
    ref = RunRef(trace_id=_id(run.trace_id, 128), span_id=_id(run.root_span_id, 64), agent_name=run.agent_name,
                 conversation_id=run.conversation_id)
    verdict = scorer = None
    if item.expectation is not None:
        scorer = item.expectation.scorer
        verdict = scorer.verdict(run)
    return ScoredRun(run, ref, "scored" if verdict is not None else "no_expectation", verdict, item.expectation, scorer)


@dataclass
class JudgePlan:
    """Which runs are judged (index into the items, and why they were sampled), and why the others are not."""

    selected: list[tuple[int, str]] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)


def plan_judgments(items: Sequence[FileRunScore], sampler: JudgeSampler, max_judgments: int | None = None) -> JudgePlan:
    """The runs the sampler selects, as it would online, at most ``max_judgments`` of them."""
    plan = JudgePlan()
    for i, item in enumerate(items):
        sampled_by = sampler.select(scored_run(item))
        if sampled_by is None:
            plan.skipped[i] = "not_sampled"
        elif not item.run.has_content:
            plan.skipped[i] = "no_content"
        elif max_judgments is not None and len(plan.selected) >= max_judgments:
            plan.skipped[i] = "max_judgments"
        else:
            plan.selected.append((i, sampled_by))
    return plan


@dataclass
class DryRunEstimate:
    """What a plan would cost, before anything is sent."""

    judgments: int
    requests: int  # one per judgment (two with separate_reason_call), before any corrective retry
    input_tokens: int
    output_tokens: int  # at the judge's output estimate (max_output_tokens when set)
    worst_case_tokens: int  # every question retried once (what the budget reserves)
    max_tokens_per_hour: int | None
    max_per_minute: int | None
    skipped: dict[str, int]

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def minimum_minutes(self) -> float:
        """Shortest wall time the rate limit allows (0 without a rate limit)."""
        if not self.max_per_minute or self.judgments <= self.max_per_minute:
            return 0.0
        return (self.judgments - 1) // self.max_per_minute * 1.0

    @property
    def fits_budget(self) -> bool | None:
        return None if self.max_tokens_per_hour is None else self.worst_case_tokens <= self.max_tokens_per_hour

    def cost(self, price_input: float | None, price_output: float | None) -> float | None:
        """Money at the given prices per million tokens (``None`` without prices)."""
        if price_input is None and price_output is None:
            return None
        return (self.input_tokens * (price_input or 0.0) + self.output_tokens * (price_output or 0.0)) / 1_000_000

    def to_dict(self, price_input: float | None = None, price_output: float | None = None) -> dict[str, Any]:
        return {
            "judgments": self.judgments,
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tokens": self.tokens,
            "worst_case_tokens": self.worst_case_tokens,
            "max_tokens_per_hour": self.max_tokens_per_hour,
            "fits_budget": self.fits_budget,
            "max_per_minute": self.max_per_minute,
            "minimum_minutes": self.minimum_minutes,
            "cost": self.cost(price_input, price_output),
            "not_judged": self.skipped,
        }


def estimate(items: Sequence[FileRunScore], plan: JudgePlan, judge: Judge) -> DryRunEstimate:
    scorer = judge.scorer
    questions = 2 if scorer.separate_reason_call else 1
    input_tokens = output_tokens = worst = 0
    for i, _ in plan.selected:
        prompt = scorer.estimate_prompt_tokens(items[i].run)
        input_tokens += prompt * questions
        output_tokens += judge.output_estimate * questions
        worst += judge.reservation_size(prompt)
    sampler = judge.sampler
    return DryRunEstimate(
        judgments=len(plan.selected),
        requests=len(plan.selected) * questions,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        worst_case_tokens=worst,
        max_tokens_per_hour=sampler.max_tokens_per_hour,
        max_per_minute=sampler.max_per_minute,
        skipped=dict(Counter(plan.skipped.values())),
    )


@dataclass
class JudgeTotals:
    """What judging came to: outcomes, skips, tokens and latency."""

    model: str
    outcomes: Counter[str] = field(default_factory=Counter)  # ok / JudgeError kinds
    skipped: Counter[str] = field(default_factory=Counter)  # not_sampled, budget, rate_limit, ...
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    latencies: list[float] = field(default_factory=list)

    @property
    def judged(self) -> int:
        return self.outcomes.get("ok", 0)

    @property
    def failed(self) -> int:
        return sum(n for k, n in self.outcomes.items() if k != "ok")

    def to_dict(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return {
            "model": self.model,
            "outcomes": dict(self.outcomes),
            "not_judged": dict(self.skipped),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "requests": self.requests,
            "latency_s": {
                "mean": round(sum(lat) / len(lat), 3) if lat else None,
                "p50": round(lat[len(lat) // 2], 3) if lat else None,
                "max": round(lat[-1], 3) if lat else None,
            },
        }


def judge_one(judge: Judge, run: AgentRun, stop: threading.Event | None = None) -> Any:
    """One :meth:`Judge.attempt`, waiting for a rate-limit slot rather than skipping."""
    rate = judge.sampler.rate
    while True:
        attempt = judge.attempt(run)
        if attempt.skipped != "rate_limit" or rate is None:
            return attempt
        wait = min(_MAX_RATE_WAIT_S, max(0.05, rate.next_free_in()))
        if stop is not None:
            if stop.wait(wait):
                return attempt
        else:
            time.sleep(wait)


def judge_runs(
    items: Sequence[FileRunScore],
    plan: JudgePlan,
    judge: Judge,
    *,
    concurrency: int,
    on_done: Callable[[FileRunScore], None] | None = None,
) -> JudgeTotals:
    """Judge the planned runs, ``concurrency`` at a time; each item gets its :class:`Judgment`."""
    totals = JudgeTotals(model=judge.model)
    lock = threading.Lock()
    stop = threading.Event()
    for i, reason in plan.skipped.items():
        items[i].judgment = Judgment(outcome=reason, message=_SKIP_WORDS.get(reason, reason))
        totals.skipped[reason] += 1

    def work(index: int, sampled_by: str) -> None:
        item = items[index]
        attempt = judge_one(judge, item.run, stop)
        if attempt.skipped is not None:
            judgment = Judgment(outcome=attempt.skipped, sampled_by=sampled_by,
                                message=_SKIP_WORDS.get(attempt.skipped, attempt.skipped))
        else:
            result = attempt.result
            judgment = Judgment(
                outcome=attempt.outcome, sampled_by=sampled_by, result=result,
                label=judge.label(result.score) if result is not None else None,
                message=attempt.error.message if attempt.error is not None else None,
            )
        item.judgment = judgment
        with lock:
            if attempt.skipped is not None:
                totals.skipped[attempt.skipped] += 1
            else:
                totals.outcomes[attempt.outcome] += 1
                totals.input_tokens += attempt.input_tokens
                totals.output_tokens += attempt.output_tokens
                totals.requests += attempt.requests
                totals.latencies.append(attempt.duration_s)
            if on_done is not None:
                on_done(item)

    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="otel-toolscore-offline-judge")
    try:
        futures = [pool.submit(work, i, by) for i, by in plan.selected]
        for f in futures:
            f.result()
    except BaseException:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return totals


_SKIP_WORDS = {
    "not_sampled": "not in the judge's sample (ratio and priorities of OTEL_TOOLSCORE_JUDGE_*)",
    "no_content": "the run carries no request or answer to show the judge",
    "max_judgments": "beyond --max-judgments",
    "budget": "the token budget (OTEL_TOOLSCORE_JUDGE_MAX_TOKENS_PER_HOUR) was spent",
    "rate_limit": "the rate limit (OTEL_TOOLSCORE_JUDGE_MAX_PER_MINUTE) had no free slot",
    "circuit_open": "the judge failed too often in a row; its circuit was open",
}
