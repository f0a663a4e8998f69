"""The score of a judge's answer: pure functions, no I/O.

The judge's evaluations are paired with the run's counted calls by position; when the names differ
only in order (same multiset), each call takes the first unused evaluation carrying its name, and
any other mismatch is an :class:`AnswerMismatchError` (the answer then gets a corrective retry).
Missing tools are trimmed, empties and duplicates dropped, a tool the run called is dropped, and a
name outside the known available tools is a mismatch. Score = appropriate ÷ (evaluations + missing
tools), rounded half-up to two decimals; nothing at all → 1.0. A run that called no tool and an
answer holding one evaluation of a pseudo tool (``"None"`` …) is the verdict on calling no tool.
The rules: ``docs/llm-scorer.md``.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from ...model import ToolCall, ToolDefinition
from ._answers import (
    MAX_NAME_CHARS,
    AnswerMismatchError,
    JudgeAnalysis,
    JudgeToolEvaluation,
    LLMAnalyzeResult,
    ToolEvaluation,
)
from ._prompt import shown_name


def compute_score(evaluations: Sequence[ToolEvaluation | JudgeToolEvaluation | bool], missing_tools: Sequence[str]) -> float:
    """appropriate ÷ (evaluations + missing tools), half-up to 2 decimals; nothing at all → 1.0."""
    total = len(evaluations) + len(missing_tools)
    if total == 0:
        return 1.0
    appropriate = sum(1 for e in evaluations if (e if isinstance(e, bool) else e.was_appropriate))
    value = (Decimal(appropriate) / Decimal(total)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return float(value)


def check_missing_tools(
    names: Sequence[str], calls: Sequence[ToolCall], tools: Sequence[ToolDefinition] = ()
) -> list[str]:
    """The judge's missing tools checked against the run: names trimmed, empties and duplicates
    dropped; a tool the run *called* is dropped (it cannot be missing); when the available tools are
    known, a name not among them raises :class:`AnswerMismatchError` (the answer gets a corrective
    retry). Names come back as the tool reference spells them (the prompt may show them neutralised)."""
    called = {c.name.strip() for c in calls} | {shown_name(c.name) for c in calls}
    known: dict[str, str] = {}
    for tool in tools:
        known.setdefault(tool.name.strip(), tool.name.strip())
        known.setdefault(shown_name(tool.name), tool.name.strip())
    out: dict[str, None] = {}
    unknown: list[str] = []
    for raw in names:
        name = raw.strip()
        if not name or name in called:
            continue
        if known:
            canonical = known.get(name)
            if canonical is None:
                unknown.append(name)
                continue
            if canonical in called:
                continue
            name = canonical
        out.setdefault(name, None)
    if unknown:
        allowed = [n for n in dict.fromkeys(shown_name(t.name) for t in tools) if n not in called]
        raise AnswerMismatchError(
            f"missing_tools names {[n[:MAX_NAME_CHARS] for n in unknown[:5]]}, which are not among the available "
            f"tools that were not called ({allowed[:50] or 'none'})"
        )
    return list(out)


def align_evaluations(evaluations: Sequence[JudgeToolEvaluation], calls: Sequence[ToolCall]) -> list[ToolEvaluation]:
    """Pair evaluations with calls one for one (see the module docstring); raise on any mismatch."""
    if len(evaluations) != len(calls):
        raise AnswerMismatchError(
            f"expected {len(calls)} evaluation(s), one per numbered call, but got {len(evaluations)}"
        )

    def key(name: str) -> str:
        return name.strip()

    def names_of(call: ToolCall) -> set[str]:
        # The prompt shows names neutralised and on one line; accept either spelling back.
        return {key(call.name), key(shown_name(call.name))}

    if all(key(e.tool_called) in names_of(c) for e, c in zip(evaluations, calls, strict=True)):
        pairs = list(zip(evaluations, calls, strict=True))
    else:
        pool: dict[str, deque[JudgeToolEvaluation]] = defaultdict(deque)
        for e in evaluations:
            pool[key(e.tool_called)].append(e)
        pairs = []
        for n, call in enumerate(calls, 1):
            bucket = next((pool[k] for k in sorted(names_of(call)) if pool.get(k)), None)
            if bucket is None:
                got = [e.tool_called for e in evaluations]
                raise AnswerMismatchError(
                    f"call {n} ({call.name!r}) has no evaluation; evaluations named {got}"
                )
            pairs.append((bucket.popleft(), call))
    return [
        ToolEvaluation(tool_called=c.name, was_appropriate=e.was_appropriate, reasoning=e.reasoning.strip())
        for e, c in pairs
    ]


def score_answer(
    answer: JudgeAnalysis | Mapping[str, Any], calls: Sequence[ToolCall], tools: Sequence[ToolDefinition] = ()
) -> tuple[float, LLMAnalyzeResult]:
    """Validate and align a judge answer against the counted calls and the available tools (see
    :func:`check_missing_tools`); return (score, analysis)."""
    parsed = answer if isinstance(answer, JudgeAnalysis) else JudgeAnalysis.model_validate(answer)
    if not calls and len(parsed.evaluations) == 1 and _is_no_tool(parsed.evaluations[0].tool_called):
        # Mastra's prompt asks the judge to rate "whether that was the right decision" when no tool
        # was called, and real judges answer with one evaluation of a pseudo tool ("None"): that is
        # the verdict on calling no tool — appropriate 1.0, inappropriate 0.0 — not a bad answer.
        verdict = parsed.evaluations[0]
        analysis = LLMAnalyzeResult(
            evaluations=[ToolEvaluation(tool_called=verdict.tool_called.strip() or "None",
                                        was_appropriate=verdict.was_appropriate,
                                        reasoning=verdict.reasoning.strip())],
            missing_tools=check_missing_tools(parsed.missing_tools, calls, tools),
        )
        return (1.0 if verdict.was_appropriate else 0.0), analysis
    analysis = LLMAnalyzeResult(
        evaluations=align_evaluations(parsed.evaluations, calls),
        missing_tools=check_missing_tools(parsed.missing_tools, calls, tools),
    )
    return compute_score(analysis.evaluations, analysis.missing_tools), analysis


#: How judges name "no tool" in the single evaluation of a run that called none.
_NO_TOOL_NAMES = frozenset({"", "none", "null", "n/a", "na", "no tool", "no tools", "no_tool", "no-tool",
                            "no tool called", "(none)", "nothing"})


def _is_no_tool(name: str) -> bool:
    return name.strip().strip("'\"`").lower() in _NO_TOOL_NAMES
