"""The judge sampler: deterministic ratio on the trace id, priorities, rolling rate limit, token budget."""

from __future__ import annotations

import math
import random
import time
from typing import Any

import pytest

from otel_toolscore import AgentRun, JudgeSampler, ToolCall, create_tool_call_accuracy_scorer_code
from otel_toolscore.judge import RollingLimit, SequenceMemory, TokenBudget, ratio_threshold, trace_id_in_ratio
from otel_toolscore.online.processor import ScoredRun
from otel_toolscore.telemetry import RunRef

N = 2_000


def _ids(seed: int, n: int = N) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(128) for _ in range(n)]


@pytest.mark.parametrize("ratio", [0.01, 0.05, 0.25, 0.5, 0.9])
def test_ratio_holds_within_statistical_bounds(ratio: float) -> None:
    sampler = JudgeSampler(ratio)
    hits = sum(sampler.in_ratio(t) for t in _ids(seed=int(ratio * 1000)))
    mean = N * ratio
    sigma = math.sqrt(N * ratio * (1 - ratio))
    assert abs(hits - mean) <= 4.5 * sigma + 1, (hits, mean, sigma)


def test_the_same_decision_in_every_instance_and_process() -> None:
    a, b = JudgeSampler(0.1), JudgeSampler(0.1, always_when_code_fails=False)
    ids = _ids(seed=7)
    decisions = [a.in_ratio(t) for t in ids]
    assert decisions == [b.in_ratio(t) for t in ids] == [trace_id_in_ratio(t, 0.1) for t in ids]
    # Only the low 64 bits count (TraceIdRatioBased's): high bits never change it.
    assert decisions == [a.in_ratio(t ^ (0xABCDEF << 80)) for t in ids]


@pytest.mark.parametrize("ratio", [0.0, 1e-6, 0.001, 0.01, 0.05, 0.1, 0.25, 1 / 3, 0.5, 0.75, 0.999, 1.0])
def test_the_same_traces_as_the_sdk_trace_id_ratio_sampler(ratio: float) -> None:
    """Same ratio, same traces: the SDK's own TraceIdRatioBased decides the same for 20,000 random ids
    and for the ids on each side of its bound."""
    from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

    sdk = TraceIdRatioBased(ratio)
    ours = JudgeSampler(ratio)
    bound = sdk.bound
    edges = [b | (high << 64) for b in (bound - 1, bound, bound + 1) if 0 <= b < 1 << 64
             for high in (0, 1, (1 << 64) - 1)]
    for trace_id in [*_ids(seed=round(ratio * 1e6), n=20_000), *edges, 1, (1 << 128) - 1]:
        sampled = sdk.should_sample(None, trace_id, "run").decision is Decision.RECORD_AND_SAMPLE
        assert ours.in_ratio(trace_id) is sampled, (ratio, hex(trace_id))
        assert trace_id_in_ratio(trace_id, ratio) is sampled


def test_known_vectors_and_edges() -> None:
    assert ratio_threshold(0.5) == 1 << 63
    assert trace_id_in_ratio((1 << 63) - 1, 0.5) and not trace_id_in_ratio(1 << 63, 0.5)
    # Bits 56..63 count too (they did not before the judge followed TraceIdRatioBased).
    assert not trace_id_in_ratio(0xFF << 56, 0.5) and trace_id_in_ratio(0x7F << 56, 0.5)
    assert not any(trace_id_in_ratio(t, 0.0) for t in _ids(1, 200))
    assert all(trace_id_in_ratio(t, 1.0) for t in [*_ids(2, 200), (1 << 128) - 1])
    with pytest.raises(ValueError):
        JudgeSampler(1.5)


def test_a_higher_ratio_samples_a_superset() -> None:
    ids = _ids(seed=3)
    low = {t for t in ids if trace_id_in_ratio(t, 0.05)}
    high = {t for t in ids if trace_id_in_ratio(t, 0.25)}
    assert low <= high and len(high) > len(low)


# -- priorities -------------------------------------------------------------------------------------
_CODE = create_tool_call_accuracy_scorer_code(expected_tool="get_weather")
_IN = 0  # low 64 bits zero: inside any ratio > 0
_OUT = (1 << 64) - 1  # outside any ratio < 1


def scored(trace_id: int, calls: list[str], *, attributes: dict[str, Any] | None = None, code: bool = True,
           agent: str = "weather_agent") -> ScoredRun:
    run = AgentRun(run_id="r", agent_name=agent, user_query="weather?", tool_calls=[ToolCall(name=c) for c in calls],
                   attributes=attributes or {})
    verdict = _CODE.verdict(run) if code else None
    return ScoredRun(run, RunRef(trace_id=trace_id, span_id=1, agent_name=agent), "scored", verdict, None, _CODE)


def test_ratio_is_reported_first_so_the_ratio_sample_stays_unbiased() -> None:
    s = JudgeSampler(0.5)
    assert s.select(scored(_IN, ["search_web"])) == "ratio"  # also a code failure and a new sequence


def test_code_failures_win_over_the_ratio() -> None:
    s = JudgeSampler(0.0, always_when_new_sequence=False)
    assert s.select(scored(_OUT, ["search_web"])) == "code_fail"
    assert s.select(scored(_OUT, ["get_weather"])) is None
    assert s.select(scored(_OUT, ["search_web"], code=False)) is None  # not code-scored: no failure known
    off = JudgeSampler(0.0, always_when_code_fails=False, always_when_new_sequence=False)
    assert off.select(scored(_OUT, ["search_web"])) is None


def test_new_sequences_are_selected_once_per_agent_and_sequence() -> None:
    s = JudgeSampler(0.0, always_when_code_fails=False)
    assert s.select(scored(_OUT, ["a", "b"])) == "new_sequence"
    assert s.select(scored(_OUT, ["a", "b"])) is None
    assert s.select(scored(_OUT, ["b", "a"])) == "new_sequence"  # order matters
    assert s.select(scored(_OUT, ["a", "b"], agent="other")) == "new_sequence"


def test_the_application_flag_forces_or_forbids_judging() -> None:
    s = JudgeSampler(0.0, always_when_code_fails=False, always_when_new_sequence=False)
    assert s.select(scored(_OUT, ["x"], attributes={"toolscore.judge": True})) == "flag"
    assert s.select(scored(_OUT, ["x"], attributes={"toolscore.judge": "true"})) == "flag"
    everything = JudgeSampler(1.0)
    assert everything.select(scored(_IN, ["search_web"], attributes={"toolscore.judge": "false"})) is None
    assert everything.select(scored(_IN, ["search_web"], attributes={"toolscore.judge": "maybe"})) == "ratio"
    ignoring = JudgeSampler(1.0, always_when_flagged=False)
    assert ignoring.select(scored(_IN, ["x"], attributes={"toolscore.judge": False})) == "ratio"


def test_a_user_rule() -> None:
    s = JudgeSampler(0.0, always_when_code_fails=False, always_when_new_sequence=False,
                     always_when=lambda sr: len(sr.run.tool_calls) > 2)
    assert s.select(scored(_OUT, ["a", "b", "c"])) == "rule"
    assert s.select(scored(_OUT, ["a"])) is None


def test_select_is_cheap() -> None:
    s = JudgeSampler(0.05)
    runs = [scored(t, ["get_weather"]) for t in _ids(9, 1_000)]
    started = time.perf_counter()
    for _ in range(10):
        for r in runs:
            s.select(r)
    per_run = (time.perf_counter() - started) / 10_000
    assert per_run < 50e-6  # a few microseconds; generous for slow CI machines


def test_sequence_memory_is_a_bounded_lru() -> None:
    m = SequenceMemory(2)
    assert m.is_new(1) and m.is_new(2)
    assert not m.is_new(1)  # 1 is now the most recent
    assert m.is_new(3)  # evicts 2
    assert len(m) == 2
    assert not m.is_new(1) and m.is_new(2)


# -- limits -------------------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_rolling_limit_counts_any_rolling_minute() -> None:
    clock = Clock()
    limit = RollingLimit(3, 60.0, clock)
    assert [limit.try_acquire() for _ in range(4)] == [True, True, True, False]
    clock.now += 59.9
    assert not limit.try_acquire()
    clock.now += 0.1
    assert limit.try_acquire() and limit.try_acquire() and limit.try_acquire() and not limit.try_acquire()
    limit.release_last()
    assert limit.try_acquire()


def test_token_budget_reserves_settles_and_expires() -> None:
    clock = Clock()
    budget = TokenBudget(1_000, 3_600.0, clock)
    r1 = budget.reserve(600)
    assert r1 is not None and budget.used == 600
    assert budget.reserve(500) is None  # would exceed: nothing reserved
    budget.settle(r1, 200)  # the real usage was smaller
    assert budget.used == 200 and budget.remaining == 800
    clock.now += 10
    r2 = budget.reserve(800)
    assert r2 is not None and budget.remaining == 0
    budget.settle(r2, 900)  # more than reserved: counted (the next reservation pays for it)
    assert budget.used == 1_100 and budget.reserve(1) is None
    clock.now += 3_591  # r1's second leaves the window
    assert budget.used == 900
    clock.now += 20
    assert budget.used == 0
    budget.settle(r1, 5_000)  # settling a reservation that already left the window changes nothing
    assert budget.used == 0
    assert budget.reserve(1_000) is not None
