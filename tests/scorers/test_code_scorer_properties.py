"""Properties of the code scorer over generated runs (hypothesis, bounded)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_toolscore.messages import calls_from_messages, parse_message
from otel_toolscore.model import AgentRun, ToolCall
from otel_toolscore.scorers.code import (
    CodeScoreResult,
    ToolCallAccuracyCodeScorer,
    create_tool_call_accuracy_scorer_code,
)

BOUNDED = settings(max_examples=200, deadline=None)

NAMES = st.sampled_from(["a", "b", "c", "d"])
CALLS = st.lists(NAMES, max_size=10)
NONEMPTY_CALLS = st.lists(NAMES, min_size=1, max_size=10)
ORDER = st.lists(NAMES, min_size=1, max_size=5)
MATCH = st.sampled_from(["ordered", "unordered", "subset", "superset"])


def run_of(names: list[str], ok: list[bool] | None = None) -> AgentRun:
    flags = ok if ok is not None else [True] * len(names)
    return AgentRun(run_id="p", tool_calls=[ToolCall(name=n, arguments=f) for n, f in zip(names, flags, strict=True)])


def is_subsequence(expected: list[str], names: list[str]) -> bool:
    it = iter(names)
    return all(any(n == e for n in it) for e in expected)


def scorer_of(
    expected_tool: str | None, order: list[str] | None, strict: bool, match: str = "ordered"
) -> ToolCallAccuracyCodeScorer:
    return create_tool_call_accuracy_scorer_code(
        expected_tool=expected_tool, strict_mode=strict, expected_tool_order=order, match=match
    )


def assert_coherent(scorer: ToolCallAccuracyCodeScorer, result: CodeScoreResult, n_calls: int) -> None:
    """Same invariant as tests/scorers/test_code_scorer.py: the explanation accounts for everything and agrees with the score."""
    expected: list[str | None] = (
        list(scorer.expected_tool_order) if scorer.expected_tool_order else [scorer.expected_tool]
    )
    by_expected = sorted(
        (n for n in result.explanation if n.expected_index is not None), key=lambda n: n.expected_index or 0
    )
    assert [n.expected_index for n in by_expected] == list(range(len(expected)))
    assert all(n.expected_tool == expected[n.expected_index or 0] for n in by_expected)
    actual = [n.actual_index for n in result.explanation if n.actual_index is not None]
    assert len(actual) == len(set(actual))
    assert all(0 <= i < n_calls for i in actual)
    assert all(n.outcome in {"unexpected", "extra_call"} for n in result.explanation if n.expected_index is None)
    all_matched = all(n.outcome == "matched" for n in by_expected)
    extras = any(n.outcome in {"unexpected", "extra_call"} for n in result.explanation)
    bad = any(n.outcome == "args_mismatch" for n in result.explanation)
    if scorer.match == "subset":
        rule = not extras and not bad
    elif scorer.match == "unordered" or (scorer.match == "ordered" and scorer.strict_mode):
        rule = all_matched and not extras
    else:
        rule = all_matched
    assert result.score == (1.0 if n_calls and rule else 0.0)


@BOUNDED
@given(calls=CALLS, tool=NAMES)
def test_single_strict_pass_implies_lenient_pass(calls: list[str], tool: str) -> None:
    if scorer_of(tool, None, True).run(run_of(calls)).score == 1.0:
        assert scorer_of(tool, None, False).run(run_of(calls)).score == 1.0


@BOUNDED
@given(calls=CALLS, order=ORDER)
def test_order_strict_pass_implies_lenient_pass(calls: list[str], order: list[str]) -> None:
    strict = scorer_of(None, order, True).run(run_of(calls)).score
    lenient = scorer_of(None, order, False).run(run_of(calls)).score
    assert strict == (1.0 if calls == order else 0.0)
    assert lenient == (1.0 if calls and is_subsequence(order, calls) else 0.0)
    if strict == 1.0:
        assert lenient == 1.0


@BOUNDED
@given(calls=NONEMPTY_CALLS, data=st.data())
def test_any_subsequence_of_the_calls_passes_lenient_order(calls: list[str], data: st.DataObject) -> None:
    keep = data.draw(st.lists(st.booleans(), min_size=len(calls), max_size=len(calls)))
    order = [n for n, k in zip(calls, keep, strict=True) if k] or [calls[0]]
    assert scorer_of(None, order, False).run(run_of(calls)).score == 1.0


@BOUNDED
@given(calls=NONEMPTY_CALLS, tool=NAMES, extra=NAMES, data=st.data())
def test_adding_a_call_keeps_a_lenient_single_pass(
    calls: list[str], tool: str, extra: str, data: st.DataObject
) -> None:
    scorer = scorer_of(tool, None, False)
    if scorer.run(run_of(calls)).score == 1.0:
        at = data.draw(st.integers(min_value=0, max_value=len(calls)))
        assert scorer.run(run_of([*calls[:at], extra, *calls[at:]])).score == 1.0


@BOUNDED
@given(calls=CALLS, order=ORDER)
def test_multiset_modes(calls: list[str], order: list[str]) -> None:
    got, want = Counter(calls), Counter(order)
    unordered = scorer_of(None, order, False, "unordered").run(run_of(calls)).score
    superset = scorer_of(None, order, False, "superset").run(run_of(calls)).score
    subset = scorer_of(None, order, False, "subset").run(run_of(calls)).score
    assert (unordered == 1.0) == (sorted(calls) == sorted(order))
    assert (superset == 1.0) == all(got[n] >= k for n, k in want.items())
    assert (subset == 1.0) == (bool(calls) and all(k <= want[n] for n, k in got.items()))


@BOUNDED
@given(order=ORDER, extra=CALLS, data=st.data())
def test_superset_passes_whenever_the_calls_contain_the_expected(
    order: list[str], extra: list[str], data: st.DataObject
) -> None:
    merged = data.draw(st.permutations([*order, *extra]))
    assert scorer_of(None, order, False, "superset").run(run_of(list(merged))).score == 1.0


@BOUNDED
@given(
    calls=CALLS,
    tool=st.none() | NAMES,
    order=st.none() | ORDER,
    strict=st.booleans(),
    match=MATCH,
    ok=st.lists(st.booleans(), min_size=10, max_size=10),
)
def test_scores_are_binary_explain_does_not_change_them_and_explanations_are_coherent(
    calls: list[str], tool: str | None, order: list[str] | None, strict: bool, match: str, ok: list[bool]
) -> None:
    if tool is None and order is None:
        tool = "a"
    scorer = create_tool_call_accuracy_scorer_code(
        expected_tool=tool,
        strict_mode=strict,
        expected_tool_order=order,
        match=match,
        args_match={n: bool for n in "abcd"},
    )
    run = run_of(calls, ok[: len(calls)])
    result = scorer.run(run)
    assert result.score in (0.0, 1.0)
    quiet = scorer.run(run, explain=False)
    assert quiet.score == result.score
    assert quiet.preprocess_step_result == result.preprocess_step_result
    assert_coherent(scorer, result, len(calls))
    p = result.preprocess_step_result
    assert p.actual_tools == calls
    assert p.has_tool_calls == bool(calls)
    assert (p.correct_order_called is None) == (order is None)
    if tool is None:
        assert p.correct_tool_called is False


@BOUNDED
@given(calls=CALLS, order=ORDER, ok=st.lists(st.booleans(), min_size=10, max_size=10))
def test_lenient_order_with_arguments_is_a_subsequence_of_the_good_calls(
    calls: list[str], order: list[str], ok: list[bool]
) -> None:
    flags = ok[: len(calls)]
    scorer = create_tool_call_accuracy_scorer_code(expected_tool_order=order, args_match={n: bool for n in "abcd"})
    good = [n for n, f in zip(calls, flags, strict=True) if f]
    assert scorer.run(run_of(calls, flags)).score == (1.0 if calls and is_subsequence(order, good) else 0.0)


STATES = st.sampled_from(["call", "result", "partial-call", "error", None, "output-available", "input-streaming"])
INVOCATION = st.fixed_dictionaries(
    {
        "toolCallId": st.sampled_from(["1", "2", "3", None]),
        "toolName": st.sampled_from(["a", "b", None]),
        "state": STATES,
    }
)


@BOUNDED
@given(legacy=st.lists(INVOCATION, max_size=5), parts=st.lists(INVOCATION, max_size=5))
def test_merged_messages_count_each_call_id_once_and_parts_win(
    legacy: list[dict[str, Any]], parts: list[dict[str, Any]]
) -> None:
    msg = parse_message(
        {
            "role": "assistant",
            "content": {
                "format": 2,
                "parts": [{"type": "tool-invocation", "toolInvocation": p} for p in parts],
                "toolInvocations": legacy,
            },
        }
    )
    ids = [i.tool_call_id for i in msg.tool_invocations if i.tool_call_id]
    assert len(ids) == len(set(ids))
    final: dict[str, dict[str, Any]] = {}
    for entry in [*legacy, *parts]:
        if entry["toolCallId"]:
            final[entry["toolCallId"]] = entry
    for inv in msg.tool_invocations:
        if inv.tool_call_id:
            assert (inv.tool_name, inv.state) == (final[inv.tool_call_id]["toolName"], final[inv.tool_call_id]["state"])
    anonymous = sum(1 for e in [*legacy, *parts] if not e["toolCallId"])
    assert len(msg.tool_invocations) == len(final) + anonymous
    counted = calls_from_messages([msg])
    assert all(c.name and (c.status == "error") == (inv_state(msg, c.invocation_index) == "error") for c in counted)
    assert all(inv_state(msg, c.invocation_index) not in ("partial-call", "input-streaming") for c in counted)


def inv_state(msg: Any, index: int | None) -> str | None:
    assert index is not None
    state: str | None = msg.tool_invocations[index].state
    return state
