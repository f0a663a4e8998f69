"""The one place that writes OpenTelemetry output: evaluation log records and metric instruments.

Span attributes are built in :mod:`.attributes`; the carrier span of late (judge) scores is written
here too. Nothing in this module raises into the caller: a broken provider costs a warning, once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from opentelemetry import _logs, metrics, trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, TraceFlags, set_span_in_context

from .._version import __version__
from . import names as n
from ._attributes import MAX_EXPLANATION_CHARS, cut_text, openinference_annotation
from ._http_refusals import observe_http_refusals

if TYPE_CHECKING:
    from ..scorers.llm import LLMScoreResult

__all__ = ["BoundedLabels", "Emitter", "RunRef", "judge_span_attributes", "write_carrier_span"]

_log = logging.getLogger(__name__)


class RunRef(NamedTuple):
    """What the emitter needs to know of an evaluated run: where it is, and its low-cardinality names.

    A named tuple: immutable and hashable like the frozen dataclass it was, and one is built per
    scored run, where a frozen dataclass's ``__init__`` costs a call per field.
    """

    trace_id: int
    span_id: int
    agent_name: str | None = None
    conversation_id: str | None = None
    sampled: bool = True

    def span_context(self) -> SpanContext:
        return SpanContext(self.trace_id, self.span_id, False, _SAMPLED if self.sampled else _NOT_SAMPLED)

    def context(self) -> Context:
        """A context whose current span is the evaluated span: parents events, exemplars and carriers."""
        return set_span_in_context(NonRecordingSpan(self.span_context()))


#: the two trace flags a run's span has (an int subclass: immutable, built once)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_NOT_SAMPLED = TraceFlags(TraceFlags.DEFAULT)


class BoundedLabels:
    """Caps the distinct values of a metric attribute taken from data; later values become ``_OTHER``."""

    def __init__(self, limit: int, declared: Iterable[str] = ()) -> None:
        self._limit = limit
        self._seen: set[str] = set(declared)
        self._declared = frozenset(self._seen)
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str | None:
        if value is None or value in self._seen:
            return value
        with self._lock:
            if len(self._seen) - len(self._declared) < self._limit:
                self._seen.add(value)
                return value
        return n.OTHER


class Emitter:
    """Instruments and log records of otel-toolscore, created once per processor or service."""

    def __init__(
        self,
        meter_provider: metrics.MeterProvider | None = None,
        logger_provider: _logs.LoggerProvider | None = None,
        *,
        events: bool = True,
        metrics_enabled: bool = True,
        max_metric_agents: int = 100,
        declared_agents: Iterable[str] = (),
    ) -> None:
        self.events_enabled = events
        self.metrics_enabled = metrics_enabled
        self.agent_label = BoundedLabels(max_metric_agents, declared_agents)
        self._warned = False
        mp = meter_provider or metrics.get_meter_provider()
        lp = logger_provider or _logs.get_logger_provider()
        meter = mp.get_meter(n.SCOPE_NAME, __version__)
        self.logger_provider = lp
        self.logger = lp.get_logger(n.SCOPE_NAME, __version__)
        self.score = meter.create_histogram(
            n.METRIC_SCORE,
            unit="1",
            description="Evaluation scores of agent runs (0..1), by evaluation name, agent and label.",
            explicit_bucket_boundaries_advisory=list(n.SCORE_BUCKETS),
        )
        self.runs = meter.create_counter(
            n.METRIC_RUNS, unit="{run}", description="Agent runs seen by otel-toolscore, by outcome."
        )
        self.dropped = meter.create_counter(
            n.METRIC_DROPPED, unit="{item}", description="Spans, runs or records otel-toolscore dropped, by reason."
        )
        # Observed at collection time (each core registers its trace table): a count that goes up and
        # down with every trace would cost two metric calls per trace, on the worker.
        self._pending_sources: list[Callable[[], int]] = []
        self.pending = meter.create_observable_up_down_counter(
            n.METRIC_TRACE_PENDING,
            callbacks=[self._observe_pending],
            unit="{trace}",
            description="Traces the worker is watching (a span open, or a run waiting to be scored).",
        )
        self.pending_deprecated = meter.create_observable_up_down_counter(
            n.METRIC_PENDING_TRACES_DEPRECATED,
            callbacks=[self._observe_pending],
            unit="{trace}",
            description=f"Deprecated: use {n.METRIC_TRACE_PENDING} (same values; removed in the next release).",
        )
        self.judge_requests = meter.create_counter(
            n.METRIC_JUDGE_REQUESTS, unit="{request}", description="LLM judge requests, by outcome."
        )
        self.judge_skipped = meter.create_counter(
            n.METRIC_JUDGE_SKIPPED, unit="{run}", description="Runs not sent to the LLM judge, by reason."
        )
        self.judge_tokens = meter.create_counter(
            n.METRIC_JUDGE_TOKENS, unit="{token}", description="Tokens used by the LLM judge, by token type."
        )
        self.judge_duration = meter.create_histogram(
            n.METRIC_JUDGE_DURATION,
            unit="s",
            description="Duration of LLM judge requests.",
            explicit_bucket_boundaries_advisory=list(n.DURATION_BUCKETS),
        )
        # Observed at collection time (the judge registers its queue): the span's thread, which fills
        # the queue, never touches a metric instrument.
        self._queue_sources: list[Callable[[], int]] = []
        self.judge_queue_depth = meter.create_observable_up_down_counter(
            n.METRIC_JUDGE_QUEUE_DEPTH,
            callbacks=[self._observe_queue_depth],
            unit="{run}",
            description="Runs waiting for the LLM judge.",
        )
        # Answers our HTTP clients (sinks, judge, forwarding) refused: process-wide counts, read at collection.
        if metrics_enabled:
            observe_http_refusals(meter)

    # -- counters ---------------------------------------------------------------------------------
    def _guard(self, what: str, exc: BaseException) -> None:
        if not self._warned:
            self._warned = True
            _log.warning("otel-toolscore could not write %s: %r (further errors are not logged)", what, exc)

    def count_run(self, outcome: str, agent_name: str | None = None, amount: int = 1) -> None:
        if not self.metrics_enabled or amount <= 0:
            return
        attrs: dict[str, Any] = {n.ATTR_OUTCOME: outcome}
        agent = self.agent_label(agent_name)
        if agent is not None:
            attrs[n.GEN_AI_AGENT_NAME] = agent
        try:
            self.runs.add(amount, attrs)
        except Exception as exc:  # a broken meter provider must not break the host
            self._guard("a metric", exc)

    def count_drop(self, reason: str, amount: int = 1) -> None:
        if not self.metrics_enabled or amount <= 0:
            return
        try:
            self.dropped.add(amount, {n.ATTR_REASON: reason})
        except Exception as exc:
            self._guard("a metric", exc)

    def observe_pending(self, count: Callable[[], int]) -> None:
        """Report ``count()`` (summed over every source) as ``toolscore.trace.pending`` at every collection."""
        self._pending_sources.append(count)

    def _observe_pending(self, options: CallbackOptions) -> Iterator[Observation]:
        return self._observe_sum(self._pending_sources)

    # -- evaluation results -----------------------------------------------------------------------
    def emit_evaluation(
        self,
        ref: RunRef,
        *,
        name: str,
        score: float | None,
        label: str | None,
        explanation: str | None = None,
        error_type: str | None = None,
        metric_attributes: Mapping[str, Any] | None = None,
        extra_attributes: Mapping[str, Any] | None = None,
    ) -> None:
        """One ``gen_ai.evaluation.result`` record parented to the evaluated span, and the score metric."""
        ctx = ref.context()
        agent = self.agent_label(ref.agent_name)
        if self.events_enabled:
            attrs: dict[str, Any] = {n.GEN_AI_EVALUATION_NAME: name}
            if score is not None:
                attrs[n.GEN_AI_EVALUATION_SCORE_VALUE] = float(score)
            if label is not None:
                attrs[n.GEN_AI_EVALUATION_SCORE_LABEL] = label
            if explanation:
                if len(explanation) > MAX_EXPLANATION_CHARS:  # a judge's reason can be megabytes
                    self.count_drop("explanation_too_long")
                    explanation = cut_text(explanation, MAX_EXPLANATION_CHARS)
                attrs[n.GEN_AI_EVALUATION_EXPLANATION] = explanation
            if error_type:
                attrs[n.ERROR_TYPE] = error_type
            if ref.agent_name:
                attrs[n.GEN_AI_AGENT_NAME] = ref.agent_name
            if ref.conversation_id:
                attrs[n.GEN_AI_CONVERSATION_ID] = ref.conversation_id
            if extra_attributes:
                for k, v in extra_attributes.items():
                    attrs.setdefault(k, v)
            body = f"evaluation: {name}={score}" if error_type is None else f"evaluation: {name} failed: {error_type}"
            try:
                self.logger.emit(
                    context=ctx,
                    event_name=n.EVENT_EVALUATION_RESULT,
                    severity_number=SeverityNumber.WARN if error_type else SeverityNumber.INFO,
                    body=body,
                    attributes=attrs,
                )
            except Exception as exc:
                self._guard("an evaluation event", exc)
        if self.metrics_enabled and score is not None:
            mattrs: dict[str, Any] = {n.GEN_AI_EVALUATION_NAME: name}
            if label is not None:
                mattrs[n.GEN_AI_EVALUATION_SCORE_LABEL] = label
            if agent is not None:
                mattrs[n.GEN_AI_AGENT_NAME] = agent
            if metric_attributes:
                mattrs.update(metric_attributes)
            try:
                self.score.record(float(score), mattrs, context=ctx)
            except Exception as exc:
                self._guard("a metric", exc)

    # -- the LLM judge ----------------------------------------------------------------------------
    def observe_judge_queue(self, depth: Callable[[], int]) -> None:
        """Report ``depth()`` as ``toolscore.judge.queue_depth`` at every collection."""
        self._queue_sources.append(depth)

    def _observe_queue_depth(self, options: CallbackOptions) -> Iterator[Observation]:
        return self._observe_sum(self._queue_sources)

    def _observe_sum(self, sources: list[Callable[[], int]]) -> Iterator[Observation]:
        """One observation: the sum of ``sources`` (none while metrics are off or nothing registered)."""
        if not self.metrics_enabled or not sources:
            return iter(())
        total = 0
        for source in list(sources):
            try:
                total += int(source())
            except Exception as exc:
                self._guard("a metric", exc)
        return iter((Observation(total),))

    def count_judge_request(self, outcome: str, model: str | None = None) -> None:
        """One judgment attempted (however many HTTP requests it took), by outcome."""
        self._add(self.judge_requests, 1, {n.ATTR_OUTCOME: outcome}, model)

    def count_judge_skip(self, reason: str, amount: int = 1) -> None:
        """Runs not judged, by reason (``names.JUDGE_SKIP_REASONS``)."""
        if amount > 0:
            self._add(self.judge_skipped, amount, {n.ATTR_REASON: reason}, None)

    def count_judge_tokens(self, input_tokens: int, output_tokens: int, model: str | None = None) -> None:
        if input_tokens > 0:
            self._add(self.judge_tokens, input_tokens, {n.GEN_AI_TOKEN_TYPE: "input"}, model)
        if output_tokens > 0:
            self._add(self.judge_tokens, output_tokens, {n.GEN_AI_TOKEN_TYPE: "output"}, model)

    def record_judge_duration(self, seconds: float, outcome: str, model: str | None = None) -> None:
        if not self.metrics_enabled:
            return
        attrs: dict[str, Any] = {n.ATTR_OUTCOME: outcome}
        if model:
            attrs[n.GEN_AI_REQUEST_MODEL] = model
        try:
            self.judge_duration.record(max(0.0, seconds), attrs)
        except Exception as exc:
            self._guard("a metric", exc)

    def _add(self, counter: Any, amount: int, attrs: dict[str, Any], model: str | None) -> None:
        if not self.metrics_enabled:
            return
        if model:
            attrs[n.GEN_AI_REQUEST_MODEL] = model  # the configured judge model: low cardinality
        try:
            counter.add(amount, attrs)
        except Exception as exc:
            self._guard("a metric", exc)


def judge_span_attributes(
    *,
    model: str,
    outcome: str,
    sampled_by: str | None,
    result: LLMScoreResult | None = None,
    label: str | None = None,
    error_type: str | None = None,
    input_tokens: int = 0,
    output_tokens: int = 0,
    requests: int = 0,
    max_evaluations: int = 32,
    max_text_chars: int = 256,
) -> dict[str, Any]:
    """The attributes of a judge carrier span. No ``gen_ai.agent.*``/``gen_ai.tool.*``/operation keys:
    the span must never look like agent activity to an extractor (ours or a backend's)."""
    attrs: dict[str, Any] = {
        n.OPENINFERENCE_SPAN_KIND: n.OPENINFERENCE_KIND_EVALUATOR,
        n.GEN_AI_EVALUATION_NAME: n.EVAL_LLM,
        n.JUDGE_MODEL: model,
        n.JUDGE_OUTCOME: outcome,
        n.JUDGE_INPUT_TOKENS: int(input_tokens),
        n.JUDGE_OUTPUT_TOKENS: int(output_tokens),
        n.JUDGE_REQUEST_COUNT: int(requests),
    }
    if sampled_by:
        attrs[n.ATTR_JUDGE_SAMPLED_BY] = sampled_by
    if error_type:
        attrs[n.ERROR_TYPE] = error_type
    if result is not None:
        attrs[n.GEN_AI_EVALUATION_SCORE_VALUE] = float(result.score)
        if label is not None:
            attrs[n.GEN_AI_EVALUATION_SCORE_LABEL] = label
        if result.reason:
            attrs[n.GEN_AI_EVALUATION_EXPLANATION] = cut_text(result.reason, max_text_chars * 4)
        evaluations = result.analyze_step_result.evaluations
        shown = evaluations[:max_evaluations]
        attrs[n.JUDGE_EVALUATION_COUNT] = len(evaluations)
        attrs[n.JUDGE_EVALUATION_TOOLS] = [cut_text(e.tool_called, max_text_chars) for e in shown]
        attrs[n.JUDGE_EVALUATION_APPROPRIATE] = [bool(e.was_appropriate) for e in shown]
        attrs[n.JUDGE_EVALUATION_REASONING] = [cut_text(e.reasoning, max_text_chars) for e in shown]
        attrs[n.JUDGE_MISSING_TOOLS] = [
            cut_text(t, max_text_chars) for t in result.analyze_step_result.missing_tools[:max_evaluations]
        ]
        attrs[n.JUDGE_STRUCTURED_OUTPUT] = bool(result.usage.structured_output)
        # OpenInference's post-hoc feedback form (docs/judging.md): the carrier links exactly
        # one span, the evaluated one, and the result describes that span, not the carrier.
        metadata = {n.JUDGE_MODEL: model}
        if sampled_by:
            metadata[n.ATTR_JUDGE_SAMPLED_BY] = sampled_by
        attrs.update(
            openinference_annotation(
                {},
                name=n.EVAL_LLM,
                score=result.score,
                label=label,
                explanation=attrs.get(n.GEN_AI_EVALUATION_EXPLANATION),
                annotator_kind=n.ANNOTATOR_KIND_LLM,
                identifier=n.ANNOTATION_IDENTIFIER,
                metadata=metadata,
            )
        )
    return attrs


def write_carrier_span(
    tracer: trace.Tracer,
    ref: RunRef,
    attributes: Mapping[str, Any],
    *,
    start_time: int,
    end_time: int,
    name: str = n.JUDGE_SPAN_NAME,
) -> None:
    """A short span in the evaluated run's trace: a child of the evaluated span and linked to it.

    Written through ``tracer`` with whatever context the caller has, so the caller decides: the
    judge writes it *without* the suppress-instrumentation key, so it is exported.
    """
    link = Link(ref.span_context())
    span = tracer.start_span(
        name,
        context=ref.context(),
        kind=SpanKind.INTERNAL,
        attributes=dict(attributes),
        links=[link],
        start_time=start_time,
    )
    span.end(end_time=end_time)
