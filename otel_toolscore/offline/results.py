"""One scored run of ``otel-toolscore score``, and the flat row and summaries every output is made of.

The table, the JSON document, JSON Lines, CSV and the HTML report all read these, so a column means
the same thing everywhere.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model import AgentRun
from ..online.expectations import Expectation
from ..scorers.code import CodeScoreResult
from ..scorers.llm import LLMScoreResult

__all__ = ["JUDGE_COLUMNS", "SCORE_COLUMNS", "FileRunScore", "Judgment", "describe_expectation", "group_stats", "summarise"]

#: CSV columns of ``score`` (JSON Lines carries the same keys); the judge's columns are added when judged.
SCORE_COLUMNS = (
    "file", "trace_id", "run_id", "agent", "expectation", "score", "label", "outcome", "explanation", "tools_called",
)
JUDGE_COLUMNS = ("judge_score", "judge_label", "judge_outcome", "judge_reason")

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

    @property
    def file_name(self) -> str:
        return Path(self.file).name if self.file else "-"

    def row(self, *, judged: bool = False) -> dict[str, Any]:
        """The flat row of JSON Lines and CSV (``judged``: with the judge's columns)."""
        out: dict[str, Any] = {
            "file": self.file,
            "trace_id": self.run.trace_id,
            "run_id": self.run.run_id,
            "agent": self.run.agent_name,
            "expectation": self.expectation_name,
            "score": self.result.score if self.result is not None else None,
            "label": self.label,
            "outcome": self.outcome,
            "explanation": self.explanation,
            "tools_called": self.tools_called,
        }
        if judged:
            j = self.judgment
            out.update({
                "judge_score": j.result.score if j is not None and j.result is not None else None,
                "judge_label": j.label if j is not None else None,
                "judge_outcome": j.outcome if j is not None else None,
                "judge_reason": (j.result.reason if j.result is not None else j.message) if j is not None else None,
            })
        return out


def _stats(scores: list[float]) -> dict[str, Any]:
    n = len(scores)
    return {
        "count": n,
        "mean": round(sum(scores) / n, 4) if n else None,
        "pass_rate": round(sum(1 for s in scores if s >= 1.0) / n, 4) if n else None,
    }


def group_stats(items: Iterable[FileRunScore], key: Callable[[FileRunScore], str]) -> dict[str, dict[str, Any]]:
    """Count, mean and pass rate of the code scores, per ``key`` (runs not scored are left out)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for item in items:
        if item.result is not None:
            groups[key(item)].append(item.result.score)
    return {name: _stats(v) for name, v in sorted(groups.items())}


def summarise(items: list[FileRunScore]) -> dict[str, Any]:
    """Totals and per-agent figures of the code scores (the ``summary`` of the JSON document)."""
    scores = [i.result.score for i in items if i.result is not None]
    return {
        "runs": len(items),
        "not_scored": sum(1 for i in items if i.result is None),
        **_stats(scores),
        "per_agent": group_stats(items, lambda i: i.run.agent_name or "(unnamed)"),
    }
