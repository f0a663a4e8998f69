"""The one place that writes OpenTelemetry output: evaluation log records and metric instruments.

Span attributes are built in :mod:`.attributes`; the carrier span of late (judge) scores is written
here too. Nothing in this module raises into the caller: a broken provider costs a warning, once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry import _logs, metrics, trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from .. import __version__
from . import names as n

__all__ = ["BoundedLabels", "Emitter", "RunRef"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RunRef:
    """What the emitter needs to know of an evaluated run: where it is, and its low-cardinality names."""

    trace_id: int
    span_id: int
    agent_name: str | None = None
    conversation_id: str | None = None
    sampled: bool = True

    def context(self) -> Context:
        """A context whose current span is the evaluated span: parents events, exemplars and carriers."""
        flags = TraceFlags(TraceFlags.SAMPLED if self.sampled else TraceFlags.DEFAULT)
        span = NonRecordingSpan(SpanContext(self.trace_id, self.span_id, is_remote=False, trace_flags=flags))
        return trace.set_span_in_context(span)


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
        self.pending = meter.create_up_down_counter(
            n.METRIC_PENDING_TRACES, unit="{trace}", description="Traces buffered while their runs are open."
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
        self.judge_queue_depth = meter.create_up_down_counter(
            n.METRIC_JUDGE_QUEUE_DEPTH, unit="{run}", description="Runs waiting for the LLM judge."
        )

    # -- counters ---------------------------------------------------------------------------------
    def _guard(self, what: str, exc: BaseException) -> None:
        if not self._warned:
            self._warned = True
            _log.warning("otel-toolscore could not write %s: %r (further errors are not logged)", what, exc)

    def count_run(self, outcome: str, agent_name: str | None = None) -> None:
        if not self.metrics_enabled:
            return
        attrs: dict[str, Any] = {n.ATTR_OUTCOME: outcome}
        agent = self.agent_label(agent_name)
        if agent is not None:
            attrs[n.GEN_AI_AGENT_NAME] = agent
        try:
            self.runs.add(1, attrs)
        except Exception as exc:  # a broken meter provider must not break the host
            self._guard("a metric", exc)

    def count_drop(self, reason: str, amount: int = 1) -> None:
        if not self.metrics_enabled or amount <= 0:
            return
        try:
            self.dropped.add(amount, {n.ATTR_REASON: reason})
        except Exception as exc:
            self._guard("a metric", exc)

    def pending_delta(self, delta: int) -> None:
        if not self.metrics_enabled or delta == 0:
            return
        try:
            self.pending.add(delta)
        except Exception as exc:
            self._guard("a metric", exc)

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
