"""What a judgment writes: the judge's metrics, the ``gen_ai.evaluation.result`` event and the
``evaluate tool_call_accuracy_llm`` carrier span.

A judged run gets its request, token and duration metrics, one evaluation event (a score and label,
or the error's kind and message), and, when asked, a carrier span: a child of the evaluated root,
linked to it, written in the worker's own context (without the suppress-instrumentation key) so
that it is exported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from opentelemetry import trace

from ..telemetry import Emitter, RunRef, names
from ..telemetry._emitter import judge_span_attributes, write_carrier_span
from ._queue import JudgeAttempt, QueuedRun


class EvaluationOut(Protocol):
    """Where a judgment with a score also goes: ``(ref, name, score, label, explanation, *attribute maps)``
    (the score sinks' :meth:`~otel_toolscore.sinks._dispatch.SinkDispatcher.offer_evaluation`)."""

    def __call__(
        self,
        ref: RunRef,
        name: str,
        score: float,
        label: str | None,
        explanation: str | None,
        *attribute_maps: Mapping[str, Any] | None,
    ) -> None: ...


# The longest error message written as an evaluation's explanation.
_MAX_EXPLANATION_CHARS = 1000


def write_judgment(
    emitter: Emitter,
    item: QueuedRun,
    attempt: JudgeAttempt,
    *,
    model: str,
    label_for: Callable[[float], str],
    tracer: Callable[[], trace.Tracer] | None,
    max_span_evaluations: int,
    on_evaluation: EvaluationOut | None = None,
) -> None:
    """Write what ``attempt`` (a judged run, not a skipped one) came to. ``label_for`` names a score
    (``pass``/``fail``); ``tracer`` gives the carrier span's tracer (``None``: no carrier span);
    ``on_evaluation`` gets a judgment with a score (``None``: no score sinks)."""
    outcome, result, error = attempt.outcome, attempt.result, attempt.error
    input_tokens, output_tokens, requests = attempt.input_tokens, attempt.output_tokens, attempt.requests
    duration, start_ns, end_ns = attempt.duration_s, attempt.start_ns, attempt.end_ns
    ref: RunRef = item.scored.ref
    emitter.count_judge_request(outcome, model)
    emitter.count_judge_tokens(input_tokens, output_tokens, model)
    emitter.record_judge_duration(duration, outcome, model)
    extra = {names.JUDGE_MODEL: model, names.ATTR_JUDGE_SAMPLED_BY: item.sampled_by}
    label: str | None = None
    if result is not None:
        label = label_for(result.score)
        metric_attributes = {names.ATTR_JUDGE_SAMPLED_BY: item.sampled_by}
        emitter.emit_evaluation(
            ref,
            name=names.EVAL_LLM,
            score=result.score,
            label=label,
            explanation=result.reason,
            metric_attributes=metric_attributes,
            extra_attributes=extra,
        )
        if on_evaluation is not None:
            on_evaluation(ref, names.EVAL_LLM, result.score, label, result.reason, metric_attributes, extra)
    else:
        assert error is not None
        emitter.emit_evaluation(
            ref,
            name=names.EVAL_LLM,
            score=None,
            label=None,
            explanation=error.message[:_MAX_EXPLANATION_CHARS],
            error_type=error.kind,
            extra_attributes=extra,
        )
    if tracer is not None:
        attrs = judge_span_attributes(
            model=model,
            outcome=outcome,
            sampled_by=item.sampled_by,
            result=result,
            label=label,
            error_type=error.kind if error is not None else None,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            requests=requests,
            max_evaluations=max_span_evaluations,
        )
        # The worker's own context: no suppress key, so the span is recorded and exported.
        write_carrier_span(tracer(), ref, attrs, start_time=start_ns, end_time=max(end_ns, start_ns))
