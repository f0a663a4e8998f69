"""What the code scorer decides, without its pydantic results: the match modes, the verdict of a run
and the one-line summary of it.

Kept below both :mod:`.code` (the scorer, which builds verdicts) and :mod:`.code_result` (the
Mastra-shaped results, built from a verdict when someone asks): the span processor loads the first
two and never the third.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from ..model import ToolCall

__all__ = ["CodeVerdict", "ExpectedCalls", "MatchMode", "PassFail", "summary_line"]

MatchMode = Literal["ordered", "unordered", "subset", "superset"]


class ExpectedCalls(Protocol):
    """What a result needs of the scorer that produced a verdict: what it expected, and how."""

    expected_tool: str | None
    expected_tool_order: list[str] | None
    strict_mode: bool
    match: MatchMode

    def expected_list(self) -> list[str]: ...


def summary_line(
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


class PassFail:
    """``passed`` and ``label`` of a score: a run passes at 1.0 (the code scorer's scores are 0 or 1)."""

    __slots__ = ()

    if TYPE_CHECKING:
        score: float

    @property
    def passed(self) -> bool:
        return self.score >= 1.0

    @property
    def label(self) -> str:
        return "pass" if self.passed else "fail"


class CodeVerdict(PassFail):
    """The score of a run without the pydantic result: what the span processor needs on its hot path.

    :meth:`ToolCallAccuracyCodeScorer.result` turns it into the full :class:`CodeScoreResult` later
    (off the hot path) when someone needs it. A plain ``__slots__`` class: one is built per scored
    run, and a frozen dataclass's ``__init__`` costs a function call per field.
    """

    __slots__ = (
        "_summary",
        "actual_tools",
        "calls",
        "correct_order_called",
        "correct_tool_called",
        "expected_tool",
        "expected_tool_order",
        "match",
        "ok",
        "score",
        "strict_mode",
    )

    def __init__(
        self,
        score: float,
        actual_tools: list[str],
        correct_tool_called: bool,
        correct_order_called: bool | None,
        expected_tool: str | None,
        expected_tool_order: list[str] | None,
        strict_mode: bool,
        match: MatchMode,
        calls: list[ToolCall],
        ok: list[bool],
    ) -> None:
        self.score = score
        self.actual_tools = actual_tools
        self.correct_tool_called = correct_tool_called
        self.correct_order_called = correct_order_called
        self.expected_tool = expected_tool
        self.expected_tool_order = expected_tool_order
        self.strict_mode = strict_mode
        self.match: MatchMode = match
        self.calls = calls
        self.ok = ok
        self._summary: str | None = None

    def summary(self) -> str:
        """One line for humans and for ``gen_ai.evaluation.explanation`` (built once: the span's
        annotation and the evaluation event both carry it)."""
        if self._summary is None:
            self._summary = summary_line(
                self.label, self.expected_tool, self.expected_tool_order, self.strict_mode, self.match, self.actual_tools
            )
        return self._summary

    def __eq__(self, other: object) -> bool:
        if type(other) is not CodeVerdict:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__ if name != "_summary")

    __hash__ = None  # type: ignore[assignment]  # holds lists

    def __repr__(self) -> str:
        return "CodeVerdict(" + ", ".join(
            f"{name}={getattr(self, name)!r}" for name in self.__slots__ if name != "_summary"
        ) + ")"


