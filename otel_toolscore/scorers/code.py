"""The deterministic tool-call-accuracy scorer (Mastra's ``createToolCallAccuracyScorerCode``).

Rules: ``spec/scorers.md``. Every check is linear in the number of calls so it can run on the span
processor's hot path; the set modes and argument matching are opt-in and never change the defaults.

Call order, as the scorer sees it (``AgentRun.tool_calls``, built by :mod:`otel_toolscore.extract`):
the calls in the order the agent made them — model turn by model turn; within one turn, the calls the
model requested together in the order the model listed them when its output is visible in the trace,
by the tool spans' start times otherwise. Parallel calls executed on threads therefore have one order,
and ``expectedToolOrder`` checks do not depend on which thread started first.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..model import AgentRun, ToolCall

__all__ = [
    "ArgsMatch",
    "CallMatch",
    "CodePreprocessResult",
    "CodeScoreResult",
    "CodeVerdict",
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
#: Mastra's message for a Mastra-shaped run without input or output (``testing.EMPTY_RUN_ERROR``).
EMPTY_RUN_ERROR = "Input and output messages cannot be null or empty"
#: ``AgentRun.conventions`` marker of a run built from Mastra-shaped messages.
MASTRA_MESSAGES = "mastra-messages"


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
        return _summary(self.label, p.expected_tool, p.expected_tool_order, p.strict_mode, self.match, p.actual_tools)


def _summary(
    label: str,
    expected_tool: str | None,
    expected_tool_order: Sequence[str] | None,
    strict_mode: bool,
    match: str,
    actual_tools: Sequence[str],
) -> str:
    want = " -> ".join(expected_tool_order) if expected_tool_order else (expected_tool or "")
    mode = "strict" if strict_mode else "lenient"
    if expected_tool_order or match != "ordered":  # "ordered" says nothing about a single expected tool
        mode = f"{mode}, {match}"
    called = ", ".join(actual_tools) if actual_tools else "no tools"
    return f"{label}: expected {want} ({mode}); called {called}"


@dataclass(frozen=True, slots=True)
class CodeVerdict:
    """The score of a run without the pydantic result: what the span processor needs on its hot path.

    :meth:`ToolCallAccuracyCodeScorer.result` turns it into the full :class:`CodeScoreResult` later
    (off the hot path) when someone needs it.
    """

    score: float
    actual_tools: list[str]
    correct_tool_called: bool
    correct_order_called: bool | None
    expected_tool: str | None
    expected_tool_order: list[str] | None
    strict_mode: bool
    match: MatchMode
    calls: list[ToolCall]
    ok: list[bool]

    @property
    def passed(self) -> bool:
        return self.score >= 1.0

    @property
    def label(self) -> str:
        return "pass" if self.passed else "fail"

    def summary(self) -> str:
        return _summary(
            self.label, self.expected_tool, self.expected_tool_order, self.strict_mode, self.match, self.actual_tools
        )


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
        if isinstance(expected_tool_order, str):
            # A bare string is a Sequence[str] too; list("abc") would silently expect a, b, c.
            raise TypeError("expected_tool_order must be a list of tool names, not a string")
        if expected_tool_order is not None and len(expected_tool_order) == 0:
            raise ValueError(EMPTY_ORDER_ERROR)
        if not expected_tool_order and not (isinstance(expected_tool, str) and expected_tool):
            raise ValueError(NO_EXPECTATION_ERROR)
        if expected_tool_order and not all(isinstance(n, str) and n for n in expected_tool_order):
            raise ValueError("expectedToolOrder must contain non-empty tool names")
        if match not in ("ordered", "unordered", "subset", "superset"):
            raise ValueError(f"match must be ordered, unordered, subset or superset, not {match!r}")
        if isinstance(args_match, str) and args_match not in ("exact", "subset"):
            raise ValueError(f"args_match must be 'exact', 'subset' or a mapping of predicates, not {args_match!r}")
        if isinstance(args_match, str) and expected_arguments is None:
            raise ValueError("args_match='exact'/'subset' needs expected_arguments")
        if args_match is None and expected_arguments:
            # Silently ignoring expected arguments would make a wrong call look right.
            raise ValueError("expected_arguments needs args_match='exact' or 'subset'")
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
            actual = _decoded(call.arguments, want)
            return bool(want == actual) if am == "exact" else _args_subset(want, actual)
        predicate = am.get(call.name)
        if predicate is None:
            return True
        try:
            return bool(predicate(call.arguments))
        except Exception:  # a user predicate that raises is a mismatch, not a crash of scoring
            return False

    # -- the rules (booleans only: this is the hot path) --------------------------------------
    def _single_passed(self, calls: list[ToolCall], ok: list[bool]) -> bool:
        want = self.expected_tool
        if self.strict_mode:
            return len(calls) == 1 and calls[0].name == want and ok[0]
        return any(c.name == want and ok[i] for i, c in enumerate(calls))

    def _ordered_passed(self, calls: list[ToolCall], ok: list[bool]) -> bool:
        order = self.expected_tool_order
        assert order is not None
        if self.strict_mode:
            return len(calls) == len(order) and all(c.name == order[i] and ok[i] for i, c in enumerate(calls))
        # Lenient: the expected order is a subsequence of the calls. Greedy earliest matching is optimal.
        j = 0
        for i, c in enumerate(calls):
            if j < len(order) and c.name == order[j] and ok[i]:
                j += 1
        return j == len(order)

    def _multiset_passed(self, calls: list[ToolCall], ok: list[bool]) -> bool:
        want = Counter(self._expected_list())
        got = Counter(c.name for i, c in enumerate(calls) if ok[i])
        bad = len(calls) - sum(ok)
        if self.match == "unordered":
            return want == got and bad == 0
        if self.match == "superset":
            return all(got[name] >= n for name, n in want.items())
        # subset: every call is an expected one, within the expected multiplicity
        return bad == 0 and all(n <= want[name] for name, n in got.items())

    def _expected_list(self) -> list[str]:
        return self.expected_tool_order or [self.expected_tool or ""]

    # -- the explanation (opt-out with explain=False; linear too) --------------------------------
    # Every expected entry appears exactly once (matched / missing / args_mismatch / out_of_order) and
    # every actual call at most once; calls paired with no expected entry are listed as
    # ``unexpected`` (a tool not expected at all) or ``extra_call`` (an expected tool called more
    # often than expected). Whether those extra entries fail the run depends on the mode.
    def _explain(self, calls: list[ToolCall], ok: list[bool]) -> list[CallMatch]:
        expected = self._expected_list()
        if self.match != "ordered" or self.expected_tool_order is None:
            # single-tool mode is the multiset comparison against [expected_tool]
            allowed = self.match == "superset" or (self.match == "ordered" and not self.strict_mode)
            return _explain_multiset(expected, calls, ok, allowed)
        if self.strict_mode:
            return _explain_strict_order(expected, calls, ok)
        return _explain_lenient_order(expected, calls, ok)

    # -- public API -------------------------------------------------------------------------------
    def verdict(self, run: AgentRun) -> CodeVerdict:
        """The score and the facts behind it, without building the pydantic result (hot path)."""
        if MASTRA_MESSAGES in run.conventions and (not run.input_messages or not run.output_messages):
            raise ValueError(EMPTY_RUN_ERROR)  # a Mastra-shaped run needs both sides, as in Mastra
        calls = run.scored_calls(self.include_framework_calls)
        ok = [self._args_ok(c) for c in calls] if self.args_match is not None else [True] * len(calls)
        correct_tool = self._single_passed(calls, ok) if self.expected_tool is not None else False
        correct_order = self._ordered_passed(calls, ok) if self.expected_tool_order is not None else None
        if not calls:
            score = 0.0
        elif self.match != "ordered":
            score = 1.0 if self._multiset_passed(calls, ok) else 0.0
        elif self.expected_tool_order is not None:
            score = 1.0 if correct_order else 0.0
        else:
            score = 1.0 if correct_tool else 0.0
        return CodeVerdict(
            score=score,
            actual_tools=[c.name for c in calls],
            correct_tool_called=correct_tool,
            correct_order_called=correct_order,
            expected_tool=self.expected_tool,
            expected_tool_order=self.expected_tool_order,
            strict_mode=self.strict_mode,
            match=self.match,
            calls=calls,
            ok=ok,
        )

    def result(self, run: AgentRun, verdict: CodeVerdict, *, explain: bool = True) -> CodeScoreResult:
        """The full, Mastra-shaped result of a :meth:`verdict`."""
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
            match=self.match,
            explanation=self._explain(calls, verdict.ok) if explain else [],
            preprocess_step_result=CodePreprocessResult(
                expected_tool=self.expected_tool,
                actual_tools=verdict.actual_tools,
                strict_mode=self.strict_mode,
                expected_tool_order=self.expected_tool_order,
                has_tool_calls=bool(calls),
                correct_tool_called=verdict.correct_tool_called,
                correct_order_called=verdict.correct_order_called,
                tool_call_infos=infos,
            ),
        )

    def run(self, run: AgentRun, *, explain: bool = True) -> CodeScoreResult:
        """Score one run. Pure and synchronous: no I/O, linear in the number of calls."""
        return self.result(run, self.verdict(run), explain=explain)

    async def arun(self, run: AgentRun, *, explain: bool = True) -> CodeScoreResult:
        return self.run(run, explain=explain)

    def __repr__(self) -> str:
        return (
            f"ToolCallAccuracyCodeScorer(expected_tool={self.expected_tool!r}, strict_mode={self.strict_mode}, "
            f"expected_tool_order={self.expected_tool_order!r}, match={self.match!r})"
        )


def _decoded(actual: Any, expected: Any) -> Any:
    """Arguments captured from spans are often a JSON string; compare them as the value they encode."""
    if isinstance(actual, str) and not isinstance(expected, str):
        try:
            return json.loads(actual)
        except ValueError:
            return actual
    return actual


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


def create_tool_call_accuracy_scorer_code(
    expected_tool: str | None = None,
    strict_mode: bool = False,
    expected_tool_order: Sequence[str] | None = None,
    **options: Any,
) -> ToolCallAccuracyCodeScorer:
    """Mastra's ``createToolCallAccuracyScorerCode`` in Python; ``options`` are the opt-in extras."""
    return ToolCallAccuracyCodeScorer(expected_tool, strict_mode, expected_tool_order, **options)
