"""The deterministic tool-call-accuracy scorer (Mastra's ``createToolCallAccuracyScorerCode``).

Rules: ``spec/scorers.md``. Every check is linear in the number of calls so it can run on the span
processor's hot path; the set modes and argument matching are opt-in and never change the defaults.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..model import AgentRun, ToolCall

__all__ = [
    "ArgsMatch",
    "CallMatch",
    "CodePreprocessResult",
    "CodeScoreResult",
    "MatchMode",
    "ToolCallAccuracyCodeScorer",
    "ToolCallInfo",
    "create_tool_call_accuracy_scorer_code",
]

MatchMode = Literal["ordered", "unordered", "subset", "superset"]
ArgsPredicate = Callable[[Any], bool]
ArgsMatch = Literal["exact", "subset"] | Mapping[str, ArgsPredicate]

NO_EXPECTATION_ERROR = "Either expectedTool or expectedToolOrder must be provided"
EMPTY_ORDER_ERROR = "expectedToolOrder must not be empty"


class _Result(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


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


class CodeScoreResult(_Result):
    run_id: str
    score: float
    preprocess_step_result: CodePreprocessResult
    match: MatchMode = "ordered"
    explanation: list[CallMatch] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.score >= 1.0

    @property
    def label(self) -> str:
        return "pass" if self.passed else "fail"

    def summary(self) -> str:
        """One line for humans and for ``gen_ai.evaluation.explanation``: expected vs called."""
        p = self.preprocess_step_result
        want = " -> ".join(p.expected_tool_order) if p.expected_tool_order else (p.expected_tool or "")
        mode = "strict" if p.strict_mode else "lenient"
        called = ", ".join(p.actual_tools) if p.actual_tools else "no tools"
        return f"{self.label}: expected {want} ({mode}, {self.match}); called {called}"


def _args_subset(expected: Any, actual: Any) -> bool:
    """Expected is contained in actual: mappings key by key (recursively), everything else equal."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and _args_subset(v, actual[k]) for k, v in expected.items()
        )
    return bool(expected == actual)


class ToolCallAccuracyCodeScorer:
    """Scores one run 0 or 1 against an expected tool or an expected order of tools.

    Args:
        expected_tool: the tool that should be called (single-tool mode).
        strict_mode: single-tool: exactly one call and it is the expected tool; order: the called
            names equal ``expected_tool_order`` exactly. Lenient otherwise.
        expected_tool_order: the tools in the order they should be called (order mode).
        match: ``"ordered"`` (default, Mastra) or an opt-in multiset comparison against
            ``expected_tool_order`` (or ``[expected_tool]``): ``"unordered"`` same calls in any order,
            ``"subset"`` nothing called beyond the expected, ``"superset"`` every expected call made.
        expected_arguments: per tool name, the arguments expected (used with ``args_match``).
        args_match: ``"exact"`` / ``"subset"`` comparison with ``expected_arguments``, or a mapping of
            tool name to a predicate over the actual arguments. ``None`` compares names only.
        include_framework_calls: also count ``kind="framework"`` calls (handoffs, output tools).
    """

    name = "tool_call_accuracy"

    def __init__(
        self,
        expected_tool: str | None = None,
        strict_mode: bool = False,
        expected_tool_order: Sequence[str] | None = None,
        *,
        match: MatchMode = "ordered",
        expected_arguments: Mapping[str, Any] | None = None,
        args_match: ArgsMatch | None = None,
        include_framework_calls: bool = False,
    ) -> None:
        if expected_tool_order is not None and len(expected_tool_order) == 0:
            raise ValueError(EMPTY_ORDER_ERROR)
        if not expected_tool_order and not (isinstance(expected_tool, str) and expected_tool):
            raise ValueError(NO_EXPECTATION_ERROR)
        if match not in ("ordered", "unordered", "subset", "superset"):
            raise ValueError(f"match must be ordered, unordered, subset or superset, not {match!r}")
        if isinstance(args_match, str) and args_match not in ("exact", "subset"):
            raise ValueError(f"args_match must be 'exact', 'subset' or a mapping of predicates, not {args_match!r}")
        if isinstance(args_match, str) and expected_arguments is None:
            raise ValueError("args_match='exact'/'subset' needs expected_arguments")
        self.expected_tool = expected_tool or None
        self.strict_mode = bool(strict_mode)
        self.expected_tool_order = list(expected_tool_order) if expected_tool_order else None
        self.match: MatchMode = match
        self.expected_arguments = dict(expected_arguments) if expected_arguments else {}
        self.args_match = args_match
        self.include_framework_calls = include_framework_calls

    # -- matching a call against an expected name -------------------------------------------------
    def _args_ok(self, call: ToolCall) -> bool:
        am = self.args_match
        if am is None:
            return True
        if isinstance(am, str):
            if call.name not in self.expected_arguments:
                return True
            want = self.expected_arguments[call.name]
            return bool(want == call.arguments) if am == "exact" else _args_subset(want, call.arguments)
        predicate = am.get(call.name)
        if predicate is None:
            return True
        try:
            return bool(predicate(call.arguments))
        except Exception:  # a user predicate that raises is a mismatch, not a crash of scoring
            return False

    # -- the rules --------------------------------------------------------------------------------
    def _single(self, calls: list[ToolCall], ok: list[bool], notes: list[CallMatch] | None) -> bool:
        want = self.expected_tool
        assert want is not None
        hits = [i for i, c in enumerate(calls) if c.name == want and ok[i]]
        if self.strict_mode:
            passed = len(calls) == 1 and bool(hits)
        else:
            passed = bool(hits)
        if notes is not None:
            if hits:
                i = hits[0]
                notes.append(_note(0, want, i, calls[i], "matched", f"{want} called as call #{i}"))
            else:
                named = [i for i, c in enumerate(calls) if c.name == want]
                if named:
                    i = named[0]
                    notes.append(_note(0, want, i, calls[i], "args_mismatch", f"{want} called with other arguments"))
                else:
                    notes.append(_note(0, want, None, None, "missing", f"{want} was not called"))
            for i, c in enumerate(calls):
                if not hits or i != hits[0]:
                    outcome = "extra_call" if c.name == want else "unexpected"
                    if self.strict_mode or outcome == "extra_call":
                        notes.append(_note(None, None, i, c, outcome, f"{c.name} is not the single expected call"))
        return passed

    def _ordered(self, calls: list[ToolCall], ok: list[bool], notes: list[CallMatch] | None) -> bool:
        order = self.expected_tool_order
        assert order is not None
        if self.strict_mode:
            passed = len(calls) == len(order) and all(
                c.name == order[i] and ok[i] for i, c in enumerate(calls)
            )
            if notes is not None:
                for i in range(max(len(order), len(calls))):
                    want = order[i] if i < len(order) else None
                    c = calls[i] if i < len(calls) else None
                    if want is not None and c is not None and c.name == want and ok[i]:
                        notes.append(_note(i, want, i, c, "matched", f"position {i}: {want}"))
                    elif want is not None and c is not None:
                        outcome = "args_mismatch" if c.name == want else "out_of_order"
                        notes.append(_note(i, want, i, c, outcome, f"position {i}: expected {want}, called {c.name}"))
                    elif want is not None:
                        notes.append(_note(i, want, None, None, "missing", f"position {i}: {want} was not called"))
                    elif c is not None:
                        notes.append(_note(None, None, i, c, "unexpected", f"position {i}: extra call {c.name}"))
            return passed
        # Lenient: expected order is a subsequence of the calls. Greedy earliest matching is optimal.
        j = 0
        matched: dict[int, int] = {}
        for i, c in enumerate(calls):
            if j < len(order) and c.name == order[j] and ok[i]:
                matched[j] = i
                j += 1
        passed = j == len(order)
        if notes is not None:
            for k, want in enumerate(order):
                if k in matched:
                    i = matched[k]
                    notes.append(_note(k, want, i, calls[i], "matched", f"{want} matched call #{i}"))
                else:
                    anywhere = [i for i, c in enumerate(calls) if c.name == want]
                    if not anywhere:
                        notes.append(_note(k, want, None, None, "missing", f"{want} was not called"))
                    elif any(ok[i] for i in anywhere):
                        i = anywhere[0]
                        notes.append(_note(k, want, i, calls[i], "out_of_order", f"{want} called, but not after the previous expected tool"))
                    else:
                        i = anywhere[0]
                        notes.append(_note(k, want, i, calls[i], "args_mismatch", f"{want} called with other arguments"))
        return passed

    def _multiset(self, calls: list[ToolCall], ok: list[bool], notes: list[CallMatch] | None) -> bool:
        expected = self.expected_tool_order or [self.expected_tool or ""]
        want = Counter(expected)
        got = Counter(c.name for i, c in enumerate(calls) if ok[i])
        bad = sum(1 for i in range(len(calls)) if not ok[i])
        if self.match == "unordered":
            passed = want == got and bad == 0
        elif self.match == "superset":
            passed = all(got[name] >= n for name, n in want.items())
        else:  # subset: every call is an expected one, within the expected multiplicity
            passed = bad == 0 and all(n <= want[name] for name, n in got.items())
        if notes is not None:
            remaining = Counter(want)
            seen: Counter[str] = Counter()
            for i, c in enumerate(calls):
                if ok[i] and remaining[c.name] > 0:
                    remaining[c.name] -= 1
                    seen[c.name] += 1
                    notes.append(_note(None, c.name, i, c, "matched", f"{c.name} expected and called"))
                elif not ok[i] and c.name in want:
                    notes.append(_note(None, c.name, i, c, "args_mismatch", f"{c.name} called with other arguments"))
                elif c.name in want:
                    notes.append(_note(None, None, i, c, "extra_call", f"{c.name} called more often than expected"))
                else:
                    notes.append(_note(None, None, i, c, "unexpected", f"{c.name} was not expected"))
            for name, n in remaining.items():
                for _ in range(n):
                    notes.append(_note(None, name, None, None, "missing", f"{name} was not called"))
        return passed

    # -- public API -------------------------------------------------------------------------------
    def run(self, run: AgentRun, *, explain: bool = True) -> CodeScoreResult:
        """Score one run. Pure and synchronous: no I/O, linear in the number of calls."""
        calls = run.scored_calls(self.include_framework_calls)
        ok = [self._args_ok(c) for c in calls] if self.args_match is not None else [True] * len(calls)
        notes: list[CallMatch] | None = [] if explain else None
        has_calls = bool(calls)
        correct_tool = False
        if self.expected_tool is not None:
            explain_single = not self.expected_tool_order and self.match == "ordered"
            correct_tool = self._single(calls, ok, notes if explain_single else None)
        correct_order: bool | None = None
        if self.expected_tool_order is not None:
            correct_order = self._ordered(calls, ok, notes if self.match == "ordered" else None)
        if not has_calls:
            score = 0.0
        elif self.match != "ordered":
            score = 1.0 if self._multiset(calls, ok, notes) else 0.0
        elif self.expected_tool_order is not None:
            score = 1.0 if correct_order else 0.0
        else:
            score = 1.0 if correct_tool else 0.0
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
            score=score,
            match=self.match,
            explanation=notes or [],
            preprocess_step_result=CodePreprocessResult(
                expected_tool=self.expected_tool,
                actual_tools=[c.name for c in calls],
                strict_mode=self.strict_mode,
                expected_tool_order=self.expected_tool_order,
                has_tool_calls=has_calls,
                correct_tool_called=correct_tool,
                correct_order_called=correct_order,
                tool_call_infos=infos,
            ),
        )

    async def arun(self, run: AgentRun, *, explain: bool = True) -> CodeScoreResult:
        return self.run(run, explain=explain)

    def __repr__(self) -> str:
        return (
            f"ToolCallAccuracyCodeScorer(expected_tool={self.expected_tool!r}, strict_mode={self.strict_mode}, "
            f"expected_tool_order={self.expected_tool_order!r}, match={self.match!r})"
        )


def _idx(value: int | None, fallback: int) -> int:
    return fallback if value is None else value


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


def create_tool_call_accuracy_scorer_code(
    expected_tool: str | None = None,
    strict_mode: bool = False,
    expected_tool_order: Sequence[str] | None = None,
    **options: Any,
) -> ToolCallAccuracyCodeScorer:
    """Mastra's ``createToolCallAccuracyScorerCode`` in Python; ``options`` are the opt-in extras."""
    return ToolCallAccuracyCodeScorer(expected_tool, strict_mode, expected_tool_order, **options)
