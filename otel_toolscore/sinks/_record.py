"""``ScoreRecord``: one score of one evaluated span, as every sink receives it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# the longest explanation a record carries: one figure for every output (a judge's reason can be long)
from ..telemetry import names as n
from ..telemetry._attributes import MAX_EXPLANATION_CHARS, cut_text
from ..telemetry.names import ANNOTATION_IDENTIFIER, LABEL_PASS

if TYPE_CHECKING:
    from ..telemetry import RunRef

__all__ = ["AnnotatorKind", "MetadataValue", "ScoreRecord", "score_record"]

#: Who produced the score: the code scorer (``CODE``) or the LLM judge (``LLM``).
AnnotatorKind = Literal["CODE", "LLM"]
MetadataValue = str | int | float | bool


class ScoreRecord(BaseModel):
    """A score of the span it evaluates: where that span is, the result, and who produced it.

    The ids are the OpenTelemetry ids in lowercase hex — what Phoenix calls ``span_id``, and what
    Langfuse uses as trace id and observation id for spans it received over OTLP.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    trace_id: str = Field(pattern=r"^[0-9a-f]{32}$", description="The evaluated span's trace id (32 hex digits).")
    span_id: str = Field(pattern=r"^[0-9a-f]{16}$", description="The evaluated span's id (16 hex digits).")
    name: str = Field(
        min_length=1, description="`tool_call_accuracy` (code scorer) or `tool_call_accuracy_llm` (judge)."
    )
    annotator_kind: AnnotatorKind
    score: float = Field(description="The score, 0..1.")
    label: str | None = Field(None, description="`pass` or `fail`.")
    explanation: str | None = Field(None, max_length=MAX_EXPLANATION_CHARS)
    identifier: str = Field(
        ANNOTATION_IDENTIFIER, description="Producer id: a re-score with the same name and id replaces the old one."
    )
    agent_name: str | None = None
    conversation_id: str | None = None
    metadata: dict[str, MetadataValue] = Field(
        default_factory=dict,
        description="Low-cardinality context: `toolscore.expected_tool`, `toolscore.judge.model`, `toolscore.judge.sampled_by`.",
    )

    @property
    def passed(self) -> bool | None:
        """``True``/``False`` from the label; ``None`` without one."""
        if self.label is None:
            return None
        return self.label == LABEL_PASS


def score_record(
    ref: RunRef,
    name: str,
    score: float,
    label: str | None,
    explanation: str | None,
    *attribute_maps: Mapping[str, Any] | None,
) -> ScoreRecord:
    """The sinks' record of one evaluation written for ``ref``; scalar metric and event attributes
    (``attribute_maps``, first one wins) become its metadata."""
    metadata: dict[str, MetadataValue] = {}
    for attrs in attribute_maps:
        for k, v in (attrs or {}).items():
            if isinstance(v, (str, int, float, bool)) and not k.startswith("gen_ai.evaluation."):
                metadata.setdefault(k, v)
    return ScoreRecord(
        trace_id="%032x" % ref.trace_id,
        span_id="%016x" % ref.span_id,
        name=name,
        annotator_kind=n.ANNOTATOR_KIND_LLM if name == n.EVAL_LLM else n.ANNOTATOR_KIND_CODE,
        score=float(score),
        label=label,
        explanation=cut_text(explanation, MAX_EXPLANATION_CHARS) if explanation else None,
        agent_name=ref.agent_name,
        conversation_id=ref.conversation_id,
        metadata=metadata,
    )
