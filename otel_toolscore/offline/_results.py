"""One scored run of ``otel-toolscore score``, and the summaries every output is made of.

The records of the machine formats are built from these by :mod:`._records`; the table, the
JSON document's summary and the HTML report read the same objects, so a figure means the same thing
everywhere.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..expectations import Expectation
from ..model import AgentRun
from ..scorers.code import CodeScoreResult
from ..scorers.llm import LLMScoreResult

__all__ = ["FileRunScore", "Judgment", "describe_expectation", "group_stats", "summarise"]

NOT_SCORED = "not_scored"
NO_EXPECTATION = "no_expectation"


@dataclass
class Judgment:
    """What the LLM judge said of a run: a result, or why there is none (``outcome``)."""

    outcome: str  # ok | a JudgeError kind | a skip reason (not_sampled, budget, rate_limit, max_judgments, ...)
    sampled_by: str | None = None
    result: LLMScoreResult | None = None
    label: str | None = None
    message: str | None = None  # the error's message or the skip's explanation

    @property
    def judged(self) -> bool:
        return self.result is not None


def describe_expectation(exp: Expectation) -> str:
    """``get_weather (lenient)`` / ``auth -> refund (strict, ordered)``: what a run was held to."""
    want = " -> ".join(exp.expected_tool_order) if exp.expected_tool_order else (exp.expected_tool or "?")
    mode = "strict" if exp.strict_mode else "lenient"
    extra = f", {exp.match}" if exp.expected_tool_order or exp.match != "ordered" else ""
    return f"{want} ({mode}{extra})"


@dataclass
class FileRunScore:
    """A run read from a file, the expectation it was held to and its code score (and judgment)."""

    run: AgentRun
    file: str | None
    expectation: Expectation | None
    result: CodeScoreResult | None
    judgment: Judgment | None = None

    @property
    def outcome(self) -> str:
        return "scored" if self.result is not None else NO_EXPECTATION

    @property
    def label(self) -> str:
        return self.result.label if self.result is not None else NOT_SCORED

    @property
    def explanation(self) -> str:
        return self.result.summary() if self.result is not None else "no expectation matched this run"

    @property
    def expectation_name(self) -> str | None:
        exp = self.expectation
        if exp is None:
            return None
        return exp.name or describe_expectation(exp)

    @property
    def tools_called(self) -> list[str]:
        return [c.name for c in self.run.tool_calls if c.kind == "tool"]


def _stats(scores: list[float]) -> dict[str, Any]:
    n = len(scores)
    return {
        "count": n,
        "mean": round(sum(scores) / n, 4) if n else None,
        "pass_rate": round(sum(1 for s in scores if s >= 1.0) / n, 4) if n else None,
    }


def group_stats(items: Iterable[FileRunScore], key: Callable[[FileRunScore], str]) -> dict[str, dict[str, Any]]:
    """Count, mean and pass rate of the code scores, per ``key`` (runs not scored are left out); the
    groups with the most scored runs first, then by name (case-insensitively)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for item in items:
        if item.result is not None:
            groups[key(item)].append(item.result.score)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0].casefold(), kv[0]))
    return {name: _stats(v) for name, v in ranked}


def summarise(items: list[FileRunScore]) -> dict[str, Any]:
    """Totals and per-agent figures of the code scores (the ``summary`` of the JSON document)."""
    scores = [i.result.score for i in items if i.result is not None]
    return {
        "runs": len(items),
        "not_scored": sum(1 for i in items if i.result is None),
        "outcomes": dict(Counter(i.outcome for i in items).most_common()),
        **_stats(scores),
        "per_agent": group_stats(items, lambda i: i.run.agent_name or "(unnamed)"),
    }
