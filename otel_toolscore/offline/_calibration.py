"""The judge's calibration set (package data) and the agreement report of ``otel-toolscore judge-check``.

Each scenario is a run with the verdict a careful judge gives it under the LLM scorer's rules: one
label per call (appropriate or not) and the missing tools. The expected score is computed from
those labels with the scorer's own formula, so the set cannot contradict the scorer. A judgment
agrees on the *verdict* when its pass/fail label matches, and on the *band* when its score falls in
the same one of three bands: 0, partial (strictly between 0 and 1), 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cached_property
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..expectations import Expectation
from ..model import AgentRun, ToolCall, ToolDefinition
from ..scorers.llm import compute_score
from ._results import FileRunScore, Judgment

__all__ = [
    "BANDS",
    "CalibrationReport",
    "Scenario",
    "band_of",
    "load_calibration_set",
    "report",
    "scenario_items",
]

Band = Literal["0", "partial", "1"]
BANDS: tuple[Band, ...] = ("0", "partial", "1")
NO_ANSWER = "no answer"
_DATA = "judge_calibration.yaml"


def band_of(score: float) -> Band:
    if score <= 0.0:
        return "0"
    if score >= 1.0:
        return "1"
    return "partial"


class _Call(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: Any = None
    result: Any = None


class _Code(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expected_tool: str | None = None
    expected_tool_order: list[str] | None = None
    strict: bool = False


class Scenario(BaseModel):
    """One labelled run of the calibration set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    group: str
    toolset: str
    request: str
    answer: str
    calls: list[_Call] = Field(default_factory=list)
    appropriate: list[bool]
    missing: list[str] = Field(default_factory=list)
    code: _Code | None = None
    tools: dict[str, str] = Field(default_factory=dict)  # filled from the toolset at load time

    @model_validator(mode="after")
    def _labels_match_calls(self) -> Scenario:
        if len(self.appropriate) != len(self.calls):
            raise ValueError(f"scenario {self.id}: {len(self.appropriate)} labels for {len(self.calls)} calls")
        return self

    @property
    def expected_score(self) -> float:
        return compute_score(self.appropriate, self.missing)

    @property
    def expected_band(self) -> Band:
        return band_of(self.expected_score)

    @property
    def expected_verdict(self) -> str:
        return "pass" if self.expected_score >= 1.0 else "fail"

    @cached_property
    def run(self) -> AgentRun:
        return AgentRun(
            run_id=self.id,
            agent_name=self.group,
            user_query=self.request,
            final_output=self.answer,
            available_tools=[ToolDefinition(name=n, description=d) for n, d in self.tools.items()],
            tool_calls=[
                ToolCall(name=c.name, call_id=f"call_{i}", arguments=c.arguments, result=c.result)
                for i, c in enumerate(self.calls)
            ],
        )

    @cached_property
    def expectation(self) -> Expectation | None:
        if self.code is None:
            return None
        return Expectation(
            name=f"calibration {self.id}",
            expected_tool=self.code.expected_tool,
            expected_tool_order=tuple(self.code.expected_tool_order) if self.code.expected_tool_order else None,
            strict_mode=self.code.strict,
        )


def load_calibration_set(text: str | None = None) -> list[Scenario]:
    """The scenarios shipped with the package (or those of ``text``, the same YAML shape)."""
    if text is None:
        text = resources.files(__package__).joinpath("data").joinpath(_DATA).read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    toolsets: dict[str, dict[str, str]] = doc["toolsets"]
    out: list[Scenario] = []
    seen: set[str] = set()
    for raw in doc["scenarios"]:
        toolset = raw.get("toolset")
        if toolset not in toolsets:
            raise ValueError(f"scenario {raw.get('id')}: unknown toolset {toolset!r}")
        scenario = Scenario.model_validate({**raw, "tools": toolsets[toolset]})
        if scenario.id in seen:
            raise ValueError(f"scenario {scenario.id} appears twice")
        seen.add(scenario.id)
        out.append(scenario)
    return out


def select(scenarios: Sequence[Scenario], wanted: Sequence[str] | None) -> list[Scenario]:
    """The scenarios whose id or group is in ``wanted`` (all when ``None``); an unknown name is an error."""
    if not wanted:
        return list(scenarios)
    names = {s.id for s in scenarios} | {s.group for s in scenarios}
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise ValueError(f"no scenario or group named {unknown[0]!r} (see judge-check --list)")
    return [s for s in scenarios if s.id in wanted or s.group in wanted]


def scenario_items(scenarios: Sequence[Scenario]) -> list[FileRunScore]:
    """The scenarios as the offline pipeline's items (code-scored where they carry an expectation)."""
    items = []
    for s in scenarios:
        exp = s.expectation
        items.append(FileRunScore(s.run, None, exp, exp.scorer.run(s.run) if exp is not None else None))
    return items


class CalibrationReport(BaseModel):
    """Agreement of a judge with the labels, as ``judge-check`` prints it."""

    model: str
    scenarios: int
    answered: int
    failures: dict[str, int]  # no answer, by reason (JudgeError kind or skip)
    verdict: dict[str, dict[str, Any]]  # expected pass/fail -> {count, agree, rate}
    band: dict[str, dict[str, Any]]  # expected band -> {count, agree, rate}
    confusion: dict[str, dict[str, int]]  # expected band -> judged band (or "no answer") -> count
    verdict_agreement: float | None
    band_agreement: float | None
    mean_abs_error: float | None
    code_agreement: dict[str, int]  # scenarios with a code expectation: {compared, agree}
    input_tokens: int
    output_tokens: int
    latency_s: dict[str, float | None]
    rows: list[dict[str, Any]]


def _rate(agree: int, count: int) -> float | None:
    return round(agree / count, 4) if count else None


def report(scenarios: Sequence[Scenario], items: Sequence[FileRunScore], totals: Any) -> CalibrationReport:
    verdict: dict[str, Counter[str]] = {v: Counter() for v in ("pass", "fail")}
    band: dict[str, Counter[str]] = {b: Counter() for b in BANDS}
    confusion: dict[str, dict[str, int]] = {b: dict.fromkeys([*BANDS, NO_ANSWER], 0) for b in BANDS}
    failures: Counter[str] = Counter()
    errors: list[float] = []
    code = Counter[str]()
    rows = []
    for s, item in zip(scenarios, items):
        j: Judgment | None = item.judgment
        judged = j.result.score if j is not None and j.result is not None else None
        verdict[s.expected_verdict]["count"] += 1
        band[s.expected_band]["count"] += 1
        if judged is None:
            failures[j.outcome if j is not None else "not_judged"] += 1
            confusion[s.expected_band][NO_ANSWER] += 1
        else:
            jv = "pass" if judged >= 1.0 else "fail"
            verdict[s.expected_verdict]["agree"] += int(jv == s.expected_verdict)
            band[s.expected_band]["agree"] += int(band_of(judged) == s.expected_band)
            confusion[s.expected_band][band_of(judged)] += 1
            errors.append(abs(judged - s.expected_score))
        if item.result is not None:
            code["compared"] += 1
            code["agree"] += int(item.result.label == s.expected_verdict)
        rows.append({
            "id": s.id,
            "group": s.group,
            "expected_score": s.expected_score,
            "judge_score": judged,
            "agree": judged is not None and band_of(judged) == s.expected_band,
            "code_score": item.result.score if item.result is not None else None,
            "outcome": j.outcome if j is not None else "not_judged",
            "reason": (j.result.reason if j.result is not None else j.message) if j is not None else None,
        })
    answered = len(errors)
    agree_v = sum(c["agree"] for c in verdict.values())
    agree_b = sum(c["agree"] for c in band.values())
    lat = sorted(totals.latencies)
    return CalibrationReport(
        model=totals.model,
        scenarios=len(scenarios),
        answered=answered,
        failures=dict(failures),
        verdict={k: {"count": c["count"], "agree": c["agree"], "rate": _rate(c["agree"], c["count"])} for k, c in verdict.items()},
        band={k: {"count": c["count"], "agree": c["agree"], "rate": _rate(c["agree"], c["count"])} for k, c in band.items()},
        confusion=confusion,
        verdict_agreement=_rate(agree_v, len(scenarios)),
        band_agreement=_rate(agree_b, len(scenarios)),
        mean_abs_error=round(sum(errors) / answered, 4) if answered else None,
        code_agreement={"compared": code["compared"], "agree": code["agree"]},
        input_tokens=totals.input_tokens,
        output_tokens=totals.output_tokens,
        latency_s={
            "mean": round(sum(lat) / len(lat), 3) if lat else None,
            "p50": round(lat[len(lat) // 2], 3) if lat else None,
            "max": round(lat[-1], 3) if lat else None,
        },
        rows=rows,
    )
