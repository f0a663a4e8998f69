"""The code scorer against every point of docs/code-scorer.md, plus Mastra's documented examples.

Where Mastra's code and the spec differ, these tests assert the spec (each such test says so).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from otel_toolscore.model import AgentRun, ToolCall
from otel_toolscore.scorers.code import (
    CallMatch,
    CodeScoreResult,
    ToolCallAccuracyCodeScorer,
    create_tool_call_accuracy_scorer_code,
)
from otel_toolscore.testing import (
    create_agent_test_run,
    create_test_message,
    create_tool_invocation,
)

ALL_OUTCOMES = {"matched", "missing", "args_mismatch", "out_of_order", "unexpected", "extra_call"}


def run_of(*names: str, run_id: str = "run-1") -> AgentRun:
    """A trace-shaped run (no messages): the calls in order."""
    return AgentRun(run_id=run_id, tool_calls=[ToolCall(name=n, call_id=f"c{i}") for i, n in enumerate(names)])


def mastra_run(*names: str, user: str = "Do the thing") -> AgentRun:
    """A Mastra-shaped run: one assistant message carrying the calls as ``toolInvocations``."""
    return create_agent_test_run(
        input_messages=[create_test_message(user, role="user", id="input-1")],
        output=[
            create_test_message(
                "On it.",
                role="assistant",
                id="output-1",
                tool_invocations=[
                    create_tool_invocation(f"call-{i}", n, args={}, result={}, state="result")
                    for i, n in enumerate(names)
                ],
            )
        ],
    )


def score(scorer: ToolCallAccuracyCodeScorer, *names: str) -> float:
    return scorer.run(run_of(*names)).score


def check_explanation(scorer: ToolCallAccuracyCodeScorer, result: CodeScoreResult, n_calls: int) -> None:
    """The explanation accounts for every expected entry once and every call at most once, and agrees with the score."""
    expected: list[str | None] = (
        list(scorer.expected_tool_order) if scorer.expected_tool_order else [scorer.expected_tool]
    )
    notes: list[CallMatch] = result.explanation
    assert {n.outcome for n in notes} <= ALL_OUTCOMES
    by_expected = [n for n in notes if n.expected_index is not None]
    assert sorted(n.expected_index for n in by_expected if n.expected_index is not None) == list(range(len(expected)))
    for n in by_expected:
        assert n.expected_index is not None
        assert n.expected_tool == expected[n.expected_index]
        assert n.outcome in {"matched", "missing", "args_mismatch", "out_of_order"}
        assert (n.actual_index is None) == (n.outcome == "missing")
    actual = [n.actual_index for n in notes if n.actual_index is not None]
    assert len(actual) == len(set(actual)), "a call is explained twice"
    assert all(0 <= i < n_calls for i in actual)
    for n in notes:
        if n.expected_index is None:
            assert n.outcome in {"unexpected", "extra_call"}
            assert n.actual_index is not None
            assert (n.outcome == "extra_call") == (n.actual_tool in expected)
    all_matched = all(n.outcome == "matched" for n in by_expected)
    no_extras = not any(n.outcome in {"unexpected", "extra_call"} for n in notes)
    no_bad = not any(n.outcome == "args_mismatch" for n in notes)
    if scorer.match == "subset":
        rule = no_extras and no_bad
    elif scorer.match == "unordered" or (scorer.match == "ordered" and scorer.strict_mode):
        rule = all_matched and no_extras
    else:  # lenient single/order, superset (which ignores strict_mode): extra calls are allowed
        rule = all_matched
    assert result.score == (1.0 if (n_calls > 0 and rule) else 0.0), (result.score, notes)


# -- construction -----------------------------------------------------------------------------------
def test_neither_expectation_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"^Either expectedTool or expectedToolOrder must be provided$"):
        create_tool_call_accuracy_scorer_code()
    with pytest.raises(ValueError, match="Either expectedTool or expectedToolOrder must be provided"):
        create_tool_call_accuracy_scorer_code(expected_tool="")


def test_empty_expected_order_is_an_error() -> None:
    """(differs from Mastra's code, where [] silently yields a scorer that always returns 0)"""
    with pytest.raises(ValueError, match="expectedToolOrder"):
        create_tool_call_accuracy_scorer_code(expected_tool_order=[])
    with pytest.raises(ValueError, match="expectedToolOrder"):
        create_tool_call_accuracy_scorer_code(expected_tool="a", expected_tool_order=[])


def test_bad_options_are_errors() -> None:
    with pytest.raises(TypeError):
        create_tool_call_accuracy_scorer_code(expected_tool_order="abc")
    with pytest.raises(ValueError):
        create_tool_call_accuracy_scorer_code(expected_tool_order=["a", ""])
    with pytest.raises(ValueError, match="match"):
        create_tool_call_accuracy_scorer_code(expected_tool="a", match="sorted")
    with pytest.raises(ValueError, match="args_match"):
        create_tool_call_accuracy_scorer_code(expected_tool="a", args_match="fuzzy", expected_arguments={"a": {}})
    with pytest.raises(ValueError, match="expected_arguments"):
        create_tool_call_accuracy_scorer_code(expected_tool="a", args_match="exact")
    with pytest.raises(ValueError, match="args_match"):
        create_tool_call_accuracy_scorer_code(expected_tool="a", expected_arguments={"a": {"x": 1}})


# -- the score ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs",
    [
        {"expected_tool": "a"},
        {"expected_tool": "a", "strict_mode": True},
        {"expected_tool_order": ["a"]},
        {"expected_tool_order": ["a", "b"], "strict_mode": True},
        {"expected_tool_order": ["a"], "match": "subset"},
        {"expected_tool_order": ["a"], "match": "superset"},
        {"expected_tool_order": ["a"], "match": "unordered"},
    ],
)
def test_no_calls_scores_zero_in_every_mode(kwargs: dict[str, Any]) -> None:
    scorer = create_tool_call_accuracy_scorer_code(**kwargs)
    result = scorer.run(run_of())
    assert result.score == 0.0
    assert result.preprocess_step_result.has_tool_calls is False
    assert result.preprocess_step_result.actual_tools == []
    check_explanation(scorer, result, 0)


@pytest.mark.parametrize(
    ("names", "lenient", "strict"),
    [
        (["a"], 1.0, 1.0),
        (["b", "a"], 1.0, 0.0),
        (["a", "a"], 1.0, 0.0),
        (["b"], 0.0, 0.0),
        (["A"], 0.0, 0.0),  # case-sensitive
        (["a "], 0.0, 0.0),  # no trimming
    ],
)
def test_single_tool_mode(names: list[str], lenient: float, strict: float) -> None:
    lenient_scorer = create_tool_call_accuracy_scorer_code(expected_tool="a")
    strict_scorer = create_tool_call_accuracy_scorer_code(expected_tool="a", strict_mode=True)
    assert score(lenient_scorer, *names) == lenient
    assert score(strict_scorer, *names) == strict
    for s, expected in ((lenient_scorer, lenient), (strict_scorer, strict)):
        p = s.run(run_of(*names)).preprocess_step_result
        assert p.correct_tool_called is (expected == 1.0)
        assert p.correct_order_called is None  # no order given


@pytest.mark.parametrize(
    ("order", "names", "lenient", "strict"),
    [
        (["a", "b"], ["a", "b"], 1.0, 1.0),
        (["a", "b"], ["b", "a"], 0.0, 0.0),
        # (differs from Mastra's code: first-occurrence positions fail b,a,b; the spec is a subsequence)
        (["a", "b"], ["b", "a", "b"], 1.0, 0.0),
        (["a", "a"], ["a", "a"], 1.0, 1.0),  # (differs from Mastra's code: [a,a] could never pass there)
        (["a", "a"], ["a", "x", "a"], 1.0, 0.0),
        (["a", "a"], ["a"], 0.0, 0.0),  # a name expected twice must be called twice
        (["a", "b"], ["x", "a", "y", "b", "z"], 1.0, 0.0),  # extra tools anywhere
        (["a", "b"], ["a"], 0.0, 0.0),
        (["a", "b"], ["a", "b", "c"], 1.0, 0.0),  # strict: no extra tools
        (["a", "b", "c"], ["a", "c", "b"], 0.0, 0.0),
        (["a", "b"], ["A", "B"], 0.0, 0.0),
    ],
)
def test_order_mode(order: list[str], names: list[str], lenient: float, strict: float) -> None:
    lenient_scorer = create_tool_call_accuracy_scorer_code(expected_tool_order=order)
    strict_scorer = create_tool_call_accuracy_scorer_code(expected_tool_order=order, strict_mode=True)
    for s, expected in ((lenient_scorer, lenient), (strict_scorer, strict)):
        result = s.run(run_of(*names))
        assert result.score == expected
        assert result.preprocess_step_result.correct_order_called is (expected == 1.0)
        check_explanation(s, result, len(names))


def test_order_mode_ignores_expected_tool_but_still_reports_correct_tool_called() -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool="x", expected_tool_order=["a", "b"])
    result = scorer.run(run_of("a", "b"))
    assert result.score == 1.0  # expectedTool is ignored for the score in order mode
    assert result.preprocess_step_result.correct_tool_called is False
    assert result.preprocess_step_result.correct_order_called is True
    result = scorer.run(run_of("x", "b"))
    assert result.score == 0.0
    assert result.preprocess_step_result.correct_tool_called is True
    strict = create_tool_call_accuracy_scorer_code(expected_tool="a", strict_mode=True, expected_tool_order=["a", "b"])
    p = strict.run(run_of("a", "b")).preprocess_step_result
    assert (p.correct_tool_called, p.correct_order_called) == (False, True)  # strict single rule: one call only


def test_correct_tool_called_is_false_without_expected_tool() -> None:
    result = create_tool_call_accuracy_scorer_code(expected_tool_order=["a"]).run(run_of("a"))
    assert result.score == 1.0
    assert result.preprocess_step_result.correct_tool_called is False
    assert result.preprocess_step_result.expected_tool is None


def test_tool_call_infos_and_fallback_ids() -> None:
    run = create_agent_test_run(
        input_messages=[create_test_message("hi", role="user")],
        output=[
            create_test_message("", role="assistant", tool_invocations=[create_tool_invocation("id-1", "a")]),
            create_test_message(
                "",
                role="assistant",
                tool_invocations=[
                    {"toolName": "p", "state": "partial-call"},  # not counted, but keeps its position
                    {"toolName": "b", "state": "call"},  # no id: falls back to "<message>-<invocation>"
                ],
            ),
        ],
    )
    result = create_tool_call_accuracy_scorer_code(expected_tool="a").run(run)
    infos = [i.model_dump() for i in result.preprocess_step_result.tool_call_infos]
    assert infos == [
        {"tool_name": "a", "tool_call_id": "id-1", "message_index": 0, "invocation_index": 0},
        {"tool_name": "b", "tool_call_id": "1-1", "message_index": 1, "invocation_index": 1},
    ]
    # A trace-shaped call without message indices falls back to message 0 and its position.
    trace_run = AgentRun(run_id="t", tool_calls=[ToolCall(name="a"), ToolCall(name="b", call_id="")])
    infos2 = create_tool_call_accuracy_scorer_code(expected_tool="a").run(trace_run).preprocess_step_result
    assert [(i.tool_call_id, i.invocation_index) for i in infos2.tool_call_infos] == [("0-0", 0), ("0-1", 1)]


def test_result_dump_uses_mastra_camel_case_keys() -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool="weather-tool")
    run = mastra_run("weather-tool")
    dumped = scorer.run(run).model_dump(by_alias=True)
    assert dumped["runId"] == run.run_id
    assert dumped["score"] == 1.0
    p = dumped["preprocessStepResult"]
    assert set(p) == {
        "expectedTool",
        "actualTools",
        "strictMode",
        "expectedToolOrder",
        "hasToolCalls",
        "correctToolCalled",
        "correctOrderCalled",
        "toolCallInfos",
    }
    assert p["expectedTool"] == "weather-tool"
    assert p["actualTools"] == ["weather-tool"]
    assert p["strictMode"] is False
    assert p["expectedToolOrder"] is None
    assert p["hasToolCalls"] is True
    assert p["correctToolCalled"] is True
    assert p["correctOrderCalled"] is None
    assert p["toolCallInfos"] == [
        {"toolName": "weather-tool", "toolCallId": "call-0", "messageIndex": 0, "invocationIndex": 0}
    ]
    # And it reads back from Mastra's JSON.
    assert CodeScoreResult.model_validate(dumped) == scorer.run(run)


def test_actual_tools_keep_order_and_repeats() -> None:
    p = create_tool_call_accuracy_scorer_code(expected_tool="a").run(run_of("b", "a", "b", "a")).preprocess_step_result
    assert p.actual_tools == ["b", "a", "b", "a"]


def test_failed_calls_count() -> None:
    """(differs from Mastra's code, which silently drops failed calls)"""
    run = AgentRun(run_id="r", tool_calls=[ToolCall(name="a", status="error")])
    result = create_tool_call_accuracy_scorer_code(expected_tool="a", strict_mode=True).run(run)
    assert result.score == 1.0
    assert result.preprocess_step_result.actual_tools == ["a"]


def test_framework_calls_are_not_scored_unless_asked() -> None:
    run = AgentRun(run_id="r", tool_calls=[ToolCall(name="a"), ToolCall(name="handoff", kind="framework")])
    assert create_tool_call_accuracy_scorer_code(expected_tool="a", strict_mode=True).run(run).score == 1.0
    with_fw = create_tool_call_accuracy_scorer_code(expected_tool="a", strict_mode=True, include_framework_calls=True)
    assert with_fw.run(run).score == 0.0


def test_mastra_shaped_run_without_messages_is_an_error_but_a_trace_run_is_not() -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool="a")
    broken = AgentRun(run_id="r", conventions=["mastra-messages"], tool_calls=[ToolCall(name="a")])
    with pytest.raises(ValueError, match=r"^Input and output messages cannot be null or empty$"):
        scorer.run(broken)
    assert scorer.run(run_of("a")).score == 1.0  # runs extracted from traces need no messages


def test_arun_and_explain_off() -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool_order=["a", "b"])
    run = run_of("a", "x", "b")
    result = asyncio.run(scorer.arun(run))
    assert result == scorer.run(run)
    quiet = scorer.run(run, explain=False)
    assert quiet.score == result.score == 1.0
    assert quiet.explanation == []
    assert quiet.preprocess_step_result == result.preprocess_step_result


def test_summary_and_label() -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool_order=["a", "b"], strict_mode=True)
    result = scorer.run(run_of("a", "c"))
    assert (result.passed, result.label) == (False, "fail")
    assert result.summary() == "fail: expected a -> b (strict, ordered); called a, c"
    ok = create_tool_call_accuracy_scorer_code(expected_tool="a").run(run_of())
    assert ok.summary() == "fail: expected a (lenient); called no tools"


# -- Mastra's documented examples, one by one ----------------------------------------------------------
def _weather_input() -> list[Any]:
    return [create_test_message("What is the weather like in New York today?", role="user", id="input-1")]


def test_mastra_example_correct_tool() -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool="weather-tool")
    output = [
        create_test_message(
            "Let me check the weather for you.",
            role="assistant",
            id="output-1",
            tool_invocations=[
                create_tool_invocation(
                    tool_call_id="call-123",
                    tool_name="weather-tool",
                    args={"location": "New York"},
                    result={"temperature": "72°F", "condition": "sunny"},
                    state="result",
                )
            ],
        )
    ]
    result = scorer.run(create_agent_test_run(input_messages=_weather_input(), output=output))
    assert result.score == 1
    assert result.preprocess_step_result.correct_tool_called is True


def test_mastra_example_strict_mode() -> None:
    strict_scorer = create_tool_call_accuracy_scorer_code(expected_tool="weather-tool", strict_mode=True)
    output = [
        create_test_message(
            "Let me help you with that.",
            role="assistant",
            id="output-1",
            tool_invocations=[
                create_tool_invocation("call-1", "search-tool", args={}, result={}, state="result"),
                create_tool_invocation(
                    "call-2", "weather-tool", args={"location": "New York"}, result={"temperature": "20°C"}
                ),
            ],
        )
    ]
    result = strict_scorer.run(create_agent_test_run(input_messages=_weather_input(), output=output))
    assert result.score == 0  # fails: more than one tool called
    lenient = create_tool_call_accuracy_scorer_code(expected_tool="weather-tool")
    assert lenient.run(create_agent_test_run(input_messages=_weather_input(), output=output)).score == 1


def _auth_fetch_output(*names: str) -> list[Any]:
    args = {
        "auth-tool": {"token": "abc123"},
        "log-tool": {"message": "Starting fetch"},
        "fetch-tool": {"endpoint": "/data"},
    }
    return [
        create_test_message(
            "I will authenticate and fetch the data.",
            role="assistant",
            id="output-1",
            tool_invocations=[
                create_tool_invocation(f"call-{i + 1}", n, args=args.get(n, {}), result={}, state="result")
                for i, n in enumerate(names)
            ],
        )
    ]


def test_mastra_example_order_validation() -> None:
    order_scorer = create_tool_call_accuracy_scorer_code(
        expected_tool="auth-tool",  # ignored when an order is given
        expected_tool_order=["auth-tool", "fetch-tool"],
        strict_mode=True,
    )
    inputs = [create_test_message("Fetch my data", role="user", id="input-1")]
    run = create_agent_test_run(input_messages=inputs, output=_auth_fetch_output("auth-tool", "fetch-tool"))
    assert order_scorer.run(run).score == 1
    extra = create_agent_test_run(
        input_messages=inputs, output=_auth_fetch_output("auth-tool", "log-tool", "fetch-tool")
    )
    assert order_scorer.run(extra).score == 0  # strict: no extra tools
    swapped = create_agent_test_run(input_messages=inputs, output=_auth_fetch_output("fetch-tool", "auth-tool"))
    assert order_scorer.run(swapped).score == 0


def test_mastra_example_flexible_order() -> None:
    flexible = create_tool_call_accuracy_scorer_code(
        expected_tool="auth-tool", expected_tool_order=["auth-tool", "fetch-tool"], strict_mode=False
    )
    inputs = [create_test_message("Run the full operation", role="user", id="input-1")]
    run = create_agent_test_run(input_messages=inputs, output=_auth_fetch_output("auth-tool", "log-tool", "fetch-tool"))
    assert flexible.run(run).score == 1  # auth-tool comes before fetch-tool
    swapped = create_agent_test_run(
        input_messages=inputs, output=_auth_fetch_output("fetch-tool", "log-tool", "auth-tool")
    )
    assert flexible.run(swapped).score == 0


def test_mastra_example_comparison_code_side() -> None:
    """The code half of Mastra's 'comparing both scorers' example: the wrong tool scores 0."""
    code = create_tool_call_accuracy_scorer_code(expected_tool="weather-tool", strict_mode=False)
    assert code.run(mastra_run("search-tool", user="What's the weather?")).score == 0


# -- opt-in extras ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("match", "names", "expected"),
    [
        ("unordered", ["b", "a"], 1.0),
        ("unordered", ["b", "a", "a"], 0.0),
        ("unordered", ["a"], 0.0),
        ("unordered", ["a", "b", "x"], 0.0),
        ("subset", ["a"], 1.0),
        ("subset", ["b", "a"], 1.0),
        ("subset", ["a", "a"], 0.0),  # multiset: a expected once
        ("subset", ["a", "x"], 0.0),
        ("superset", ["x", "b", "y", "a"], 1.0),
        ("superset", ["a"], 0.0),
        ("superset", ["a", "b", "b"], 1.0),
    ],
)
def test_multiset_modes(match: str, names: list[str], expected: float) -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool_order=["a", "b"], match=match)
    result = scorer.run(run_of(*names))
    assert result.score == expected
    assert result.match == match
    check_explanation(scorer, result, len(names))


def test_multiset_with_single_expected_tool_and_defaults_unchanged() -> None:
    superset = create_tool_call_accuracy_scorer_code(expected_tool="a", match="superset")
    assert score(superset, "x", "a") == 1.0
    subset = create_tool_call_accuracy_scorer_code(expected_tool="a", match="subset")
    assert score(subset, "x", "a") == 0.0
    default = create_tool_call_accuracy_scorer_code(expected_tool="a")
    assert default.match == "ordered"
    assert default.run(run_of("a")).match == "ordered"


def _args_run(*calls: tuple[str, Any]) -> AgentRun:
    return AgentRun(run_id="r", tool_calls=[ToolCall(name=n, arguments=a) for n, a in calls])


def test_args_match_exact_and_subset() -> None:
    expected = {"weather": {"city": "Paris"}}
    exact = create_tool_call_accuracy_scorer_code(
        expected_tool="weather", args_match="exact", expected_arguments=expected
    )
    subset = create_tool_call_accuracy_scorer_code(
        expected_tool="weather", args_match="subset", expected_arguments=expected
    )
    assert exact.run(_args_run(("weather", {"city": "Paris"}))).score == 1.0
    assert exact.run(_args_run(("weather", {"city": "Paris", "unit": "C"}))).score == 0.0
    assert subset.run(_args_run(("weather", {"city": "Paris", "unit": "C"}))).score == 1.0
    assert subset.run(_args_run(("weather", {"city": "Rome"}))).score == 0.0
    assert subset.run(_args_run(("weather", None))).score == 0.0
    # JSON-encoded arguments (as captured on spans) compare as the value they encode.
    assert exact.run(_args_run(("weather", '{"city": "Paris"}'))).score == 1.0
    assert exact.run(_args_run(("weather", "not json"))).score == 0.0
    # Nested subset.
    nested = create_tool_call_accuracy_scorer_code(
        expected_tool="book", args_match="subset", expected_arguments={"book": {"trip": {"to": "NYC"}}}
    )
    assert nested.run(_args_run(("book", {"trip": {"to": "NYC", "from": "SFO"}, "seats": 2}))).score == 1.0
    assert nested.run(_args_run(("book", {"trip": {"to": "LAX"}}))).score == 0.0
    # Tools without expected arguments match on the name alone.
    assert subset.run(_args_run(("other", 1), ("weather", {"city": "Paris"}))).score == 1.0


def test_args_mismatch_fails_order_and_lenient_uses_another_good_call() -> None:
    expected = {"a": {"x": 1}}
    lenient = create_tool_call_accuracy_scorer_code(
        expected_tool_order=["a", "b"], args_match="exact", expected_arguments=expected
    )
    assert lenient.run(_args_run(("a", {"x": 2}), ("b", {}))).score == 0.0
    assert lenient.run(_args_run(("a", {"x": 2}), ("a", {"x": 1}), ("b", {}))).score == 1.0
    strict = create_tool_call_accuracy_scorer_code(
        expected_tool="a", strict_mode=True, args_match="exact", expected_arguments=expected
    )
    result = strict.run(_args_run(("a", {"x": 2})))
    assert result.score == 0.0
    assert [n.outcome for n in result.explanation] == ["args_mismatch"]


def test_predicates_and_raising_predicate_is_a_mismatch() -> None:
    def boom(_: Any) -> bool:
        raise RuntimeError("bad predicate")

    scorer = create_tool_call_accuracy_scorer_code(
        expected_tool_order=["search", "book"],
        args_match={"search": lambda a: a.get("q") == "flights", "book": boom},
    )
    result = scorer.run(_args_run(("search", {"q": "flights"}), ("book", {})))
    assert result.score == 0.0
    assert [n.outcome for n in result.explanation] == ["matched", "args_mismatch"]
    check_explanation(scorer, result, 2)
    ok = create_tool_call_accuracy_scorer_code(expected_tool="search", args_match={"search": lambda a: "q" in a})
    assert ok.run(_args_run(("search", {"q": 1}))).score == 1.0
    assert ok.run(_args_run(("search", 5))).score == 0.0  # TypeError inside the predicate: a mismatch


# -- the explanation, mode by mode ----------------------------------------------------------------------
def outcomes(result: CodeScoreResult) -> list[tuple[str, int | None, int | None]]:
    return [(n.outcome, n.expected_index, n.actual_index) for n in result.explanation]


def test_explanation_single_modes() -> None:
    lenient = create_tool_call_accuracy_scorer_code(expected_tool="a")
    r = lenient.run(run_of("x", "a", "a"))
    assert outcomes(r) == [("matched", 0, 1), ("unexpected", None, 0), ("extra_call", None, 2)]
    assert r.explanation[0].tool_call_id == "c1"
    assert outcomes(lenient.run(run_of("x"))) == [("missing", 0, None), ("unexpected", None, 0)]
    assert r.explanation[1].detail.endswith("allowed in this mode")  # extra calls do not fail lenient mode
    strict = create_tool_call_accuracy_scorer_code(expected_tool="a", strict_mode=True)
    assert outcomes(strict.run(run_of("a"))) == [("matched", 0, 0)]
    r = strict.run(run_of("a", "b"))
    assert r.score == 0.0
    assert outcomes(r) == [("matched", 0, 0), ("unexpected", None, 1)]
    assert "allowed" not in r.explanation[1].detail


def test_explanation_lenient_order() -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool_order=["a", "b", "c"])
    # b was called, but before a: out of order; c still matched after a.
    r = scorer.run(run_of("b", "a", "c"))
    assert r.score == 0.0
    assert outcomes(r) == [("matched", 0, 1), ("out_of_order", 1, 0), ("matched", 2, 2)]
    # b never called: missing, and c is not blamed.
    r = scorer.run(run_of("a", "c"))
    assert outcomes(r) == [("matched", 0, 0), ("missing", 1, None), ("matched", 2, 1)]
    # A name expected twice but called once is missing, not "out of order".
    twice = create_tool_call_accuracy_scorer_code(expected_tool_order=["a", "b", "a"])
    assert outcomes(twice.run(run_of("a", "b"))) == [("matched", 0, 0), ("matched", 1, 1), ("missing", 2, None)]
    # Passing with extras: the extras are listed, the expected entries all matched.
    r = scorer.run(run_of("a", "x", "b", "a", "c"))
    assert r.score == 1.0
    assert outcomes(r) == [
        ("matched", 0, 0),
        ("matched", 1, 2),
        ("matched", 2, 4),
        ("unexpected", None, 1),
        ("extra_call", None, 3),
    ]


def test_explanation_strict_order() -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool_order=["a", "b"], strict_mode=True)
    assert outcomes(scorer.run(run_of("b", "a"))) == [("out_of_order", 0, 0), ("out_of_order", 1, 1)]
    assert outcomes(scorer.run(run_of("a"))) == [("matched", 0, 0), ("missing", 1, None)]
    assert outcomes(scorer.run(run_of("a", "b", "x", "a"))) == [
        ("matched", 0, 0),
        ("matched", 1, 1),
        ("unexpected", None, 2),
        ("extra_call", None, 3),
    ]


def test_explanation_multiset() -> None:
    scorer = create_tool_call_accuracy_scorer_code(
        expected_tool_order=["a", "b"], match="unordered", args_match="exact", expected_arguments={"a": 1}
    )
    # the bad a does not steal the slot of the good a
    r = scorer.run(_args_run(("a", 2), ("b", None), ("a", 1)))
    assert outcomes(r) == [("matched", 0, 2), ("matched", 1, 1), ("extra_call", None, 0)]
    assert r.score == 0.0
    r = scorer.run(_args_run(("a", 2), ("b", None)))
    assert outcomes(r) == [("args_mismatch", 0, 0), ("matched", 1, 1)]


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(
    "names",
    [[], ["a"], ["b", "a", "b"], ["a", "a", "a"], ["c", "b", "a"], ["a", "b", "c", "d"], ["x"], ["b", "b", "a", "a"]],
)
@pytest.mark.parametrize("match", ["ordered", "unordered", "subset", "superset"])
def test_explanation_is_coherent_everywhere(strict: bool, names: Sequence[str], match: str) -> None:
    for kwargs in (
        {"expected_tool": "a"},
        {"expected_tool_order": ["a", "b"]},
        {"expected_tool_order": ["a", "b", "a"]},
    ):
        scorer = create_tool_call_accuracy_scorer_code(strict_mode=strict, match=match, **kwargs)
        result = scorer.run(run_of(*names))
        check_explanation(scorer, result, len(names))
        assert scorer.run(run_of(*names), explain=False).score == result.score


# -- the scenarios of Mastra's own unit tests for the code scorer, as a table ---------------------------
MASTRA_UNIT_SCENARIOS = [
    # (expected_tool, expected_tool_order, strict, called tools, score, correct_tool, correct_order)
    ("weather-tool", None, False, ["weather-tool"], 1, True, None),
    ("weather-tool", None, False, ["calculator-tool"], 0, False, None),
    ("weather-tool", None, False, [], 0, False, None),
    ("weather-tool", None, False, ["search-tool", "weather-tool", "calendar-tool"], 1, True, None),
    ("weather-tool", None, True, ["search-tool", "weather-tool", "calendar-tool"], 0, False, None),
    ("weather-tool", None, True, ["weather-tool"], 1, True, None),
    ("search-tool", ["search-tool", "weather-tool"], True, ["search-tool", "weather-tool"], 1, False, True),
    ("search-tool", ["search-tool", "weather-tool"], True, ["weather-tool", "search-tool"], 0, False, False),
    (
        "search-tool",
        ["search-tool", "weather-tool"],
        False,
        ["search-tool", "calendar-tool", "weather-tool"],
        1,
        True,
        True,
    ),
    (
        "search-tool",
        ["search-tool", "weather-tool"],
        False,
        ["weather-tool", "calendar-tool", "search-tool"],
        0,
        True,
        False,
    ),
    (
        "search-tool",
        ["search-tool", "weather-tool", "calendar-tool"],
        False,
        ["search-tool", "weather-tool"],
        0,
        True,
        False,
    ),
    (
        "search-tool",
        ["search-tool", "weather-tool"],
        True,
        ["search-tool", "log-tool", "weather-tool"],
        0,
        False,
        False,
    ),
]


@pytest.mark.parametrize(
    ("tool", "order", "strict", "called", "expected_score", "correct_tool", "correct_order"), MASTRA_UNIT_SCENARIOS
)
def test_mastra_unit_scenarios(
    tool: str,
    order: list[str] | None,
    strict: bool,
    called: list[str],
    expected_score: int,
    correct_tool: bool,
    correct_order: bool | None,
) -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool=tool, strict_mode=strict, expected_tool_order=order)
    result = scorer.run(mastra_run(*called) if called else _no_tool_run())
    p = result.preprocess_step_result
    assert result.score == expected_score
    assert p.actual_tools == called
    assert p.correct_tool_called is correct_tool
    assert p.correct_order_called is correct_order


def _no_tool_run() -> AgentRun:
    return create_agent_test_run(
        input_messages=[create_test_message("What is the weather?", role="user", id="input-1")],
        output=[create_test_message("I cannot help with that.", role="assistant", id="output-1")],
    )


def test_mastra_call_state_counts() -> None:
    run = create_agent_test_run(
        input_messages=[create_test_message("What is the weather?", role="user")],
        output=[
            create_test_message(
                "Checking.",
                role="assistant",
                tool_invocations=[create_tool_invocation("c", "weather-tool", state="call")],
            )
        ],
    )
    assert create_tool_call_accuracy_scorer_code(expected_tool="weather-tool").run(run).score == 1


def test_mastra_v2_parts_only_storage_is_scored() -> None:
    """Mastra issue #17297: calls stored only in ``content.parts`` (no legacy list) must be seen."""
    output = [
        {
            "id": "output-1",
            "role": "assistant",
            "content": {
                "format": 2,
                "parts": [
                    {
                        "type": "tool-invocation",
                        "toolInvocation": {
                            "state": "result",
                            "toolCallId": "call-1",
                            "toolName": "weather-tool",
                            "args": {"location": "New York"},
                            "result": {"temperature": "20°C"},
                        },
                    },
                    {"type": "text", "text": "It is 20°C in New York."},
                ],
                "content": "It is 20°C in New York.",
            },
            "createdAt": "2025-01-01T00:00:00.000Z",
        }
    ]
    run = create_agent_test_run(
        input_messages=[create_test_message("What is the weather?", role="user")], output=output
    )
    result = create_tool_call_accuracy_scorer_code(expected_tool="weather-tool").run(run)
    assert (result.score, result.preprocess_step_result.actual_tools) == (1, ["weather-tool"])


def test_failed_call_in_messages_counts_for_the_scorer() -> None:
    """(differs from Mastra's code) a call whose tool raised was still selected by the agent."""
    run = create_agent_test_run(
        input_messages=[create_test_message("Book it", role="user")],
        output=[
            {
                "role": "assistant",
                "parts": [
                    {"type": "tool-book", "toolCallId": "b1", "state": "output-error", "input": {}, "errorText": "down"}
                ],
            }
        ],
    )
    result = create_tool_call_accuracy_scorer_code(expected_tool="book", strict_mode=True).run(run)
    assert result.score == 1
    assert run.tool_calls[0].status == "error"
