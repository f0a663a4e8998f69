"""Where scored runs go, whichever adapter feeds the core (the span processor, the scoring service).

:class:`RunOutputs` is the core's sink (:class:`~.live.CoreSink`). Spans are handed to the adapter's
``forward`` (the processor's downstream, the service's forwarding exporter); each scored run goes to the emitter's thread
(``gen_ai.evaluation.result`` event, score histogram, score sinks), to the ``on_scored`` callback's
thread, and to the LLM judge's sampler — each behind its own bounded queue, so a slow logger
provider, backend or callback never stops scoring or counting. Counts made by the core (runs by
outcome, drops by reason, pending traces) are kept here and added to the metrics once per batch
(:meth:`flush_counts`): a metric call per run would be most of the core's time.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import ReadableSpan

from ..config import Settings
from ..sinks.base import ScoreSink
from ..sinks.dispatch import SinkDispatcher
from ..telemetry import Emitter, names
from .expectations import Expectation
from .live import ScoredRun
from .workers import QueueWorker

if TYPE_CHECKING:
    from opentelemetry import _logs, metrics

    from .judge import Judge

__all__ = ["RunOutputs"]

_log = logging.getLogger(__name__)


class RunOutputs:
    """Events, metrics, sinks, callback and judge for the runs one core scores (see the module doc).

    Args:
        settings: queue sizes, what to emit, metric cardinality caps, the sinks named by settings.
        forward: where the core's spans go (roots, with their score attributes); ``None``: nowhere.
        rules: the expectation rules (their agent names are declared metric values).
        judge: an optional judge offered every scored run (its owner binds and flushes it).
        on_scored: an optional callback called, on its own thread, with every :class:`ScoredRun`.
        sinks: score sinks (objects or built-in names); ``None``: ``settings.sinks``.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        rules: Sequence[Expectation],
        forward: Callable[[ReadableSpan], None] | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        logger_provider: _logs.LoggerProvider | None = None,
        judge: Judge | None = None,
        on_scored: Any = None,
        sinks: Sequence[ScoreSink | str] | None = None,
    ) -> None:
        s = settings
        self.emitter = Emitter(
            meter_provider,
            logger_provider,
            events=s.events,
            metrics_enabled=s.metrics,
            max_metric_agents=s.max_metric_agents,
            declared_agents=[r.agent_name for r in rules if r.agent_name],
        )
        self.judge = judge
        self._forward = forward
        self.sinks: SinkDispatcher | None = _sink_dispatcher(sinks, s, self.emitter)
        self._on_scored = on_scored
        #: counts since the last :meth:`flush_counts` (made by the core's thread only)
        self.runs: Counter[tuple[str, str | None]] = Counter()
        self.drops: Counter[str] = Counter()
        self.pending = 0
        self.emit_queue = QueueWorker("otel-toolscore-emitter", self._emit_batch, s.emit_queue_size)
        self.callbacks: QueueWorker | None = None
        if on_scored is not None:
            self.callbacks = QueueWorker("otel-toolscore-callback", self._callback_batch, s.callback_queue_size)

    # -- the core's sink -------------------------------------------------------------------------------
    def forward(self, span: ReadableSpan) -> None:
        if self._forward is not None:
            self._forward(span)

    def scored(self, run: ScoredRun) -> None:
        if not self.emit_queue.put(run):
            self.drops["emit_queue_full"] += 1
        if self.callbacks is not None and not self.callbacks.put(run):
            self.drops["callback_queue_full"] += 1
        if self.judge is not None:
            try:
                self.judge.offer(run)
            except Exception:
                _log.debug("otel-toolscore judge offer failed", exc_info=True)

    def count_run(self, outcome: str, agent_name: str | None, amount: int = 1) -> None:
        self.runs[(outcome, agent_name)] += amount

    def drop(self, reason: str, amount: int = 1) -> None:
        self.drops[reason] += amount

    def pending_delta(self, delta: int) -> None:
        self.pending += delta

    def flush_counts(self, more_drops: Counter[str] | None = None) -> None:
        """Add what was counted since the last call to the metrics (the core's thread, or whoever
        holds the core)."""
        if more_drops:
            self.drops.update(more_drops)
        if not (self.runs or self.drops or self.pending):
            return
        runs, drops, pending = self.runs, self.drops, self.pending
        self.runs, self.drops, self.pending = Counter(), Counter(), 0
        emitter = self.emitter
        for (outcome, agent), amount in runs.items():
            emitter.count_run(outcome, agent, amount)
        for reason, amount in drops.items():
            emitter.count_drop(reason, amount)
        emitter.pending_delta(pending)

    # -- the emitter's and the callback's threads --------------------------------------------------------
    def _emit_batch(self, batch: list[ScoredRun]) -> None:
        token = otel_context.attach(otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            for scored in batch:
                result = scored.verdict
                if result is None:
                    continue
                exp = scored.expectation
                metric_attrs: dict[str, Any] = {}
                if exp is not None and exp.expected_tool and (exp.has_criteria or exp.name == "default"):
                    metric_attrs[names.ATTR_EXPECTED_TOOL] = exp.expected_tool  # from configuration only
                self.emitter.emit_evaluation(
                    scored.ref,
                    name=names.EVAL_CODE,
                    score=result.score,
                    label=result.label,
                    explanation=result.summary(),
                    metric_attributes=metric_attrs,
                )
        finally:
            otel_context.detach(token)

    def _callback_batch(self, batch: list[ScoredRun]) -> None:
        callback = self._on_scored
        for scored in batch:
            try:
                callback(scored)
            except Exception:
                _log.debug("otel-toolscore on_scored callback failed", exc_info=True)

    # -- lifecycle -------------------------------------------------------------------------------------
    def wait_idle(self, deadline: float) -> bool:
        """Until ``deadline`` (``time.monotonic()``), wait for the events, callbacks and sinks queued."""
        ok = self.emit_queue.wait_idle(deadline)
        if self.callbacks is not None:
            ok = self.callbacks.wait_idle(deadline) and ok
        if self.sinks is not None:
            ok = self.sinks.wait_idle(deadline) and ok
        return ok

    def stop(self, deadline: float) -> None:
        """Stop the emitter's, callback's and sinks' threads, waiting for them until ``deadline``."""
        self.emit_queue.stop(deadline)
        if self.callbacks is not None:
            self.callbacks.stop(deadline)
        if self.sinks is not None:
            self.sinks.stop(deadline)


def _sink_dispatcher(sinks: Sequence[ScoreSink | str] | None, settings: Settings, emitter: Emitter) -> SinkDispatcher | None:
    """The dispatcher of the sinks passed (strict) or named in the settings (a warning per bad one);
    the emitter hands it every evaluation with a score."""
    from ..sinks.settings import resolve_sinks

    chosen = resolve_sinks(sinks, strict=True) if sinks is not None else resolve_sinks(settings.sinks, strict=False)
    if not chosen:
        return None
    dispatcher = SinkDispatcher(chosen, queue_size=settings.sink_queue_size, count_drop=emitter.count_drop)
    emitter.on_score = dispatcher.offer
    return dispatcher
