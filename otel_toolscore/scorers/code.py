"""The deterministic tool-call-accuracy scorer (Mastra's ``createToolCallAccuracyScorerCode``).

Rules: ``docs/code-scorer.md``. Every check is linear in the number of calls so it can run on the span
processor's hot path; the set modes and argument matching are opt-in and never change the defaults.

Call order, as the scorer sees it (``AgentRun.tool_calls``, built by :mod:`otel_toolscore.extract`):
the calls in the order the agent made them — model turn by model turn; within one turn, the calls the
model requested together in the order the model listed them when its output is visible in the trace,
by the tool spans' start times otherwise. Parallel calls executed on threads therefore have one order,
and ``expectedToolOrder`` checks do not depend on which thread started first.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._lazy import lazy_getattr
from ._verdict import CodeVerdict, MatchMode

if TYPE_CHECKING:
    from ..model import AgentRun, ToolCall
    from ._code_result import CallMatch, CodePreprocessResult, CodeScoreResult, ToolCallInfo

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

ArgsPredicate = Callable[[Any], bool]
ArgsMatch = Literal["exact", "subset"] | Mapping[str, ArgsPredicate]

NO_EXPECTATION_ERROR = "Either expectedTool or expectedToolOrder must be provided"
EMPTY_ORDER_ERROR = "expectedToolOrder must not be empty"
#: Mastra's message for a Mastra-shaped run without input or output (``testing.EMPTY_RUN_ERROR``).
EMPTY_RUN_ERROR = "Input and output messages cannot be null or empty"
#: ``AgentRun.conventions`` marker of a run built from Mastra-shaped messages.
MASTRA_MESSAGES = "mastra-messages"

# The result models (pydantic) load with the first result, not with the scorer: the span processor
# imports this module and only ever asks for verdicts.
__getattr__ = lazy_getattr(
    __name__, dict.fromkeys(("CallMatch", "CodePreprocessResult", "CodeScoreResult", "ToolCallInfo"), "._code_result")
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
        want = Counter(self.expected_list())
        got = Counter(c.name for i, c in enumerate(calls) if ok[i])
        bad = len(calls) - sum(ok)
        if self.match == "unordered":
            return want == got and bad == 0
        if self.match == "superset":
            return all(got[name] >= n for name, n in want.items())
        # subset: every call is an expected one, within the expected multiplicity
        return bad == 0 and all(n <= want[name] for name, n in got.items())

    def expected_list(self) -> list[str]:
        return self.expected_tool_order or [self.expected_tool or ""]

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
        """The full, Mastra-shaped result of a :meth:`verdict` (its pydantic models load on the first call)."""
        from ._code_result import code_score_result

        return code_score_result(self, run, verdict, explain=explain)

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


def create_tool_call_accuracy_scorer_code(
    expected_tool: str | None = None,
    strict_mode: bool = False,
    expected_tool_order: Sequence[str] | None = None,
    **options: Any,
) -> ToolCallAccuracyCodeScorer:
    """Mastra's ``createToolCallAccuracyScorerCode`` in Python; ``options`` are the opt-in extras."""
    return ToolCallAccuracyCodeScorer(expected_tool, strict_mode, expected_tool_order, **options)
