"""A scored run as the core releases it: the run's record, where it is, its outcome and verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .run_records import RunRecord, as_model

if TYPE_CHECKING:
    from .expectations import Expectation
    from .model import AgentRun
    from .scorers.code import CodeScoreResult, CodeVerdict, ToolCallAccuracyCodeScorer
    from .telemetry import RunRef

__all__ = ["ScoredRun"]


class ScoredRun:
    """A run and its code score. ``verdict`` is ``None`` when the run was not code-scored.

    ``run`` (the public :class:`~otel_toolscore.model.AgentRun`) and ``result`` (the full,
    Mastra-shaped :class:`~otel_toolscore.scorers.code.CodeScoreResult`) are built on first access,
    by whoever consumes them (a callback, the judge, a sink), never by the core: the core works on the
    run's record (``record``) and computes the verdict only.
    """

    __slots__ = ("_model", "_result", "_scorer", "expectation", "outcome", "record", "ref", "verdict")

    def __init__(
        self,
        run: RunRecord | AgentRun,
        ref: RunRef,
        outcome: str,
        verdict: CodeVerdict | None,
        expectation: Expectation | None,
        scorer: ToolCallAccuracyCodeScorer | None = None,
    ) -> None:
        self.record = run
        self.ref = ref
        self.outcome = outcome
        self.verdict = verdict
        self.expectation = expectation
        self._scorer = scorer
        self._model: AgentRun | None = None
        self._result: CodeScoreResult | None = None

    @property
    def run(self) -> AgentRun:
        if self._model is None:
            self._model = as_model(self.record)
        return self._model

    @property
    def score(self) -> float | None:
        return self.verdict.score if self.verdict is not None else None

    @property
    def passed(self) -> bool | None:
        return self.verdict.passed if self.verdict is not None else None

    @property
    def result(self) -> CodeScoreResult | None:
        if self._result is None and self.verdict is not None and self._scorer is not None:
            self._result = self._scorer.result(self.record, self.verdict)  # type: ignore[arg-type]
        return self._result

    def __repr__(self) -> str:
        return f"ScoredRun(outcome={self.outcome!r}, score={self.score!r}, record={self.record!r})"
