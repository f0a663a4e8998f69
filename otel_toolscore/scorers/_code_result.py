"""The code scorer's Mastra-shaped result: pydantic models and the per-call explanation.

:meth:`ToolCallAccuracyCodeScorer.verdict <otel_toolscore.scorers.code.ToolCallAccuracyCodeScorer.verdict>`
scores a run without any of this (the span processor's hot path, and its import path, load no
pydantic); :meth:`~otel_toolscore.scorers.code.ToolCallAccuracyCodeScorer.result` and ``run()``
build these models, loading this module on their first call.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ._verdict import CodeVerdict, ExpectedCalls, MatchMode, PassFail, summary_line

if TYPE_CHECKING:
    from ..model import AgentRun, ToolCall

__all__ = ["CallMatch", "CodePreprocessResult", "CodeScoreResult", "ToolCallInfo", "code_score_result"]


class _Result(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, defer_build=True)


class ToolCallInfo(_Result):
    tool_name: str
    tool_call_id: str
    message_index: int
    invocation_index: int


class CallMatch(_Result):
    """One line of the explanation: an expected call and what became of it, or an extra call."""

    expected_index: int | None = None
    expected_tool: str | None = None
    actual_index: int | None = None
    actual_tool: str | None = None
    tool_call_id: str | None = None
    outcome: Literal["matched", "missing", "args_mismatch", "out_of_order", "unexpected", "extra_call"]
    detail: str


class CodePreprocessResult(_Result):
    expected_tool: str | None
    actual_tools: list[str]
    strict_mode: bool
    expected_tool_order: list[str] | None
    has_tool_calls: bool
    correct_tool_called: bool
    correct_order_called: bool | None
    tool_call_infos: list[ToolCallInfo]


class CodeScoreResult(_Result, PassFail):
    run_id: str
    score: float
    preprocess_step_result: CodePreprocessResult
    match: MatchMode = "ordered"
    explanation: list[CallMatch] = Field(default_factory=list)

    def summary(self) -> str:
        """One line for humans and for ``gen_ai.evaluation.explanation``: expected vs called."""
        p = self.preprocess_step_result
        return summary_line(self.label, p.expected_tool, p.expected_tool_order, p.strict_mode, self.match, p.actual_tools)


def code_score_result(
    scorer: ExpectedCalls, run: AgentRun, verdict: CodeVerdict, *, explain: bool = True
) -> CodeScoreResult:
    """The full, Mastra-shaped result of ``scorer``'s ``verdict`` on ``run``."""
    calls = verdict.calls
    infos = [
        ToolCallInfo(
            tool_name=c.name,
            tool_call_id=c.call_id or f"{_idx(c.message_index, 0)}-{_idx(c.invocation_index, i)}",
            message_index=_idx(c.message_index, 0),
            invocation_index=_idx(c.invocation_index, i),
        )
        for i, c in enumerate(calls)
    ]
    return CodeScoreResult(
        run_id=run.run_id,
        score=verdict.score,
        match=scorer.match,
        explanation=explain_calls(scorer, calls, verdict.ok) if explain else [],
        preprocess_step_result=CodePreprocessResult(
            expected_tool=scorer.expected_tool,
            actual_tools=verdict.actual_tools,
            strict_mode=scorer.strict_mode,
            expected_tool_order=scorer.expected_tool_order,
            has_tool_calls=bool(calls),
            correct_tool_called=verdict.correct_tool_called,
            correct_order_called=verdict.correct_order_called,
            tool_call_infos=infos,
        ),
    )


def _idx(value: int | None, fallback: int) -> int:
    return fallback if value is None else value


# -- the explanation (opt-out with explain=False; linear too) --------------------------------------------
# Every expected entry appears exactly once (matched / missing / args_mismatch / out_of_order) and
# every actual call at most once; calls paired with no expected entry are listed as
# ``unexpected`` (a tool not expected at all) or ``extra_call`` (an expected tool called more
# often than expected). Whether those extra entries fail the run depends on the mode.
def explain_calls(scorer: ExpectedCalls, calls: list[ToolCall], ok: list[bool]) -> list[CallMatch]:
    """What became of each expected call and each actual one, under ``scorer``'s mode."""
    expected = scorer.expected_list()
    if scorer.match != "ordered" or scorer.expected_tool_order is None:
        # single-tool mode is the multiset comparison against [expected_tool]
        allowed = scorer.match == "superset" or (scorer.match == "ordered" and not scorer.strict_mode)
        return _explain_multiset(expected, calls, ok, allowed)
    if scorer.strict_mode:
        return _explain_strict_order(expected, calls, ok)
    return _explain_lenient_order(expected, calls, ok)


def _note(
    expected_index: int | None,
    expected_tool: str | None,
    actual_index: int | None,
    call: ToolCall | None,
    outcome: Any,
    detail: str,
) -> CallMatch:
    return CallMatch(
        expected_index=expected_index,
        expected_tool=expected_tool,
        actual_index=actual_index,
        actual_tool=call.name if call else None,
        tool_call_id=call.call_id if call else None,
        outcome=outcome,
        detail=detail,
    )


def _leftovers(expected: Sequence[str], calls: list[ToolCall], used: list[bool], allowed: bool) -> list[CallMatch]:
    """Calls paired with no expected entry: an expected tool called once more, or a tool not expected."""
    names = set(expected)
    suffix = "; allowed in this mode" if allowed else ""
    notes: list[CallMatch] = []
    for i, c in enumerate(calls):
        if used[i]:
            continue
        if c.name in names:
            detail = f"{c.name} called more often than expected (call #{i}){suffix}"
            notes.append(_note(None, None, i, c, "extra_call", detail))
        else:
            notes.append(_note(None, None, i, c, "unexpected", f"{c.name} was not expected (call #{i}){suffix}"))
    return notes


def _explain_multiset(
    expected: Sequence[str], calls: list[ToolCall], ok: list[bool], extras_allowed: bool
) -> list[CallMatch]:
    """Pair expected names with calls regardless of order: good calls first, then ones with other arguments."""
    slots: dict[str, deque[int]] = defaultdict(deque)
    for k, name in enumerate(expected):
        slots[name].append(k)
    paired: dict[int, tuple[int, str]] = {}
    used = [False] * len(calls)
    for want_ok in (True, False):
        for i, c in enumerate(calls):
            if ok[i] is want_ok and slots.get(c.name):
                paired[slots[c.name].popleft()] = (i, "matched" if want_ok else "args_mismatch")
                used[i] = True
    notes: list[CallMatch] = []
    for k, name in enumerate(expected):
        if k not in paired:
            notes.append(_note(k, name, None, None, "missing", f"{name} was not called"))
            continue
        i, outcome = paired[k]
        detail = f"{name} called as call #{i}" if outcome == "matched" else f"{name} called with other arguments (call #{i})"
        notes.append(_note(k, name, i, calls[i], outcome, detail))
    return notes + _leftovers(expected, calls, used, extras_allowed)


def _explain_strict_order(expected: Sequence[str], calls: list[ToolCall], ok: list[bool]) -> list[CallMatch]:
    """Position by position: the call at position k must be expected tool k."""
    notes: list[CallMatch] = []
    for k, name in enumerate(expected):
        if k >= len(calls):
            notes.append(_note(k, name, None, None, "missing", f"position {k}: {name} was not called"))
            continue
        c = calls[k]
        if c.name == name:
            outcome = "matched" if ok[k] else "args_mismatch"
            detail = f"position {k}: {name}" + ("" if ok[k] else " called with other arguments")
        else:
            outcome, detail = "out_of_order", f"position {k}: expected {name}, called {c.name}"
        notes.append(_note(k, name, k, c, outcome, detail))
    used = [i < len(expected) for i in range(len(calls))]
    return notes + _leftovers(expected, calls, used, False)


def _explain_lenient_order(expected: Sequence[str], calls: list[ToolCall], ok: list[bool]) -> list[CallMatch]:
    """Subsequence alignment that skips an expected tool it cannot place and goes on with the next.

    Without a skip this is the greedy match of the rule, so all entries are ``matched`` exactly when
    the run passes. A per-name cursor over call positions keeps it linear.
    """
    positions: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(calls):
        if ok[i]:
            positions[c.name].append(i)
    cursor: dict[str, int] = defaultdict(int)
    paired: dict[int, int] = {}
    used = [False] * len(calls)
    last = -1
    for k, name in enumerate(expected):
        pos, n = positions.get(name, []), cursor[name]
        while n < len(pos) and pos[n] <= last:
            n += 1
        if n < len(pos):
            paired[k], last = pos[n], pos[n]
            used[pos[n]] = True
            n += 1
        cursor[name] = n
    # An expected tool that could not be placed: called elsewhere (out of order), with other
    # arguments, or not at all.
    spare_ok: dict[str, deque[int]] = defaultdict(deque)
    spare_bad: dict[str, deque[int]] = defaultdict(deque)
    for i, c in enumerate(calls):
        if not used[i]:
            (spare_ok if ok[i] else spare_bad)[c.name].append(i)
    notes: list[CallMatch] = []
    for k, name in enumerate(expected):
        if k in paired:
            i = paired[k]
            notes.append(_note(k, name, i, calls[i], "matched", f"{name} matched call #{i}"))
        elif spare_ok.get(name):
            i = spare_ok[name].popleft()
            used[i] = True
            notes.append(_note(k, name, i, calls[i], "out_of_order", f"{name} called (call #{i}), but not in the expected order"))
        elif spare_bad.get(name):
            i = spare_bad[name].popleft()
            used[i] = True
            notes.append(_note(k, name, i, calls[i], "args_mismatch", f"{name} called with other arguments (call #{i})"))
        else:
            notes.append(_note(k, name, None, None, "missing", f"{name} was not called"))
    return notes + _leftovers(expected, calls, used, True)
