"""Where the runs a core releases go, whichever adapter drives it (the span processor, the service).

:class:`Outputs` takes each :class:`~._engine.Release` after the adapter has handed its spans on:

* the ``gen_ai.evaluation.result`` log record and the score histogram point of every scored run are
  written at once, on the adapter's thread (the core's worker), when the logger provider only queues
  records (the SDK's batch processor: ~20 µs per run of SDK work); with a logger provider that may
  block in ``emit`` (a simple processor, an unknown one) they are written by the emitter's own thread
  behind a bounded queue, so a slow exporter never stops scoring or counting;
* score sinks, the ``on_scored`` callback and the LLM judge's sampler get every scored run, each
  behind its own bounded queue;
* the counts made by the core (runs by outcome, drops by reason) are added to the metrics once per
  release: a metric call per run would be most of the worker's time; the traces it watches are
  observed at collection time (registered by :func:`~._builder.build_core`).
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context

from .._scored import ScoredRun
from ..settings import Settings
from ..telemetry import Emitter, names

if TYPE_CHECKING:
    from opentelemetry import _logs, metrics

    from ..expectations import Expectation
    from ..judge import Judge
    from ..sinks._base import ScoreSink
    from ..sinks._dispatch import SinkDispatcher
    from ._engine import Release

__all__ = ["Outputs", "only_queues"]

_log = logging.getLogger(__name__)


class Outputs:
    """Events, metrics, sinks, callback and judge for the runs one core scores (see the module doc).

    Args:
        settings: queue sizes, what to emit, metric cardinality caps, the sinks named by settings.
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
        meter_provider: metrics.MeterProvider | None = None,
        logger_provider: _logs.LoggerProvider | None = None,
        judge: Judge | None = None,
        on_scored: Any = None,
        sinks: Sequence[ScoreSink | str] | None = None,
    ) -> None:
        from .._workers import QueueWorker

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
        self.sinks: SinkDispatcher | None = _sink_dispatcher(sinks, s, self.emitter)
        self._on_scored = on_scored
        #: drops counted outside a release (full queues here), added to the next count flush
        self.drops: Counter[str] = Counter()
        self.emit_queue = QueueWorker("otel-toolscore-emitter", self._emit_batch, s.emit_queue_size)
        #: the SDK provider's processors tuple :func:`only_queues` last answered for, and its answer
        self._checked: tuple[Any, bool] | None = None
        self.callbacks: QueueWorker | None = None
        if on_scored is not None:
            self.callbacks = QueueWorker("otel-toolscore-callback", self._callback_batch, s.callback_queue_size)

    def bind_judge(self, before_flush: Callable[[], object] | None = None) -> None:
        """Start the judge (if any) on these outputs: its events and metrics through the emitter, its
        scores to the sinks. ``before_flush``: see :meth:`~otel_toolscore.judge.Judge.bind`."""
        if self.judge is not None:
            sinks = self.sinks
            self.judge.bind(self.emitter, before_flush, on_evaluation=sinks.offer_evaluation if sinks else None)

    # -- a release ------------------------------------------------------------------------------------
    def deliver(self, release: Release, more_drops: Counter[str] | None = None) -> None:
        """The scored runs of ``release`` to events, metrics, sinks, the callback and the judge; its
        counts to the metrics. (The adapter hands its spans on first.)"""
        runs = release.runs
        if runs:
            # events and metrics on the caller's thread when writing them cannot block it (asked per
            # release: processors may be added to the provider after this one was built)
            if self._only_queues():
                self._emit_batch(runs)
            else:
                for scored in runs:
                    if scored.verdict is not None and not self.emit_queue.put(scored):
                        self.drops["emit_queue_full"] += 1
            callbacks = self.callbacks
            judge = self.judge
            for scored in runs:
                if callbacks is not None and not callbacks.put(scored):
                    self.drops["callback_queue_full"] += 1
                if judge is not None:
                    try:
                        judge.offer(scored)
                    except Exception:
                        _log.debug("otel-toolscore judge offer failed", exc_info=True)
        self.count(release, more_drops)

    def _only_queues(self) -> bool:
        """:func:`only_queues` of the logger provider, asked again only when the SDK provider's
        processors changed (adding one replaces its tuple): a release may hold a single run."""
        provider = self.emitter.logger_provider
        processors = _log_processors(provider)
        checked = self._checked
        if checked is not None and checked[0] is processors:
            return checked[1]
        answer = only_queues(provider)
        self._checked = (processors, answer) if isinstance(processors, tuple) else None
        return answer

    def count(self, release: Release, more_drops: Counter[str] | None = None) -> None:
        """Add the counts of ``release`` (and ``more_drops``, and the drops counted here) to the metrics."""
        emitter = self.emitter
        for (outcome, agent), amount in release.runs_counted.items():
            emitter.count_run(outcome, agent, amount)
        drops = release.drops
        if more_drops:
            drops.update(more_drops)
        if self.drops:
            drops.update(self.drops)
            self.drops.clear()
        for reason, amount in drops.items():
            emitter.count_drop(reason, amount)

    # -- events and metrics -----------------------------------------------------------------------------
    def _emit_batch(self, batch: Sequence[ScoredRun]) -> None:
        # instrumentation suppressed while we write (the adapter's worker has done so already when it
        # writes inline: one context switch per batch, not two)
        key = otel_context._SUPPRESS_INSTRUMENTATION_KEY
        token = None if otel_context.get_value(key) is True else otel_context.attach(otel_context.set_value(key, True))
        try:
            emit = self.emitter.emit_evaluation
            sinks = self.sinks
            for scored in batch:
                result = scored.verdict
                if result is None:
                    continue
                exp = scored.expectation
                metric_attrs: dict[str, Any] | None = None
                if exp is not None and exp.expected_tool and (exp.has_criteria or exp.name == "default"):
                    metric_attrs = {names.ATTR_EXPECTED_TOOL: exp.expected_tool}  # from configuration only
                explanation = result.summary()
                emit(
                    scored.ref,
                    name=names.EVAL_CODE,
                    score=result.score,
                    label=result.label,
                    explanation=explanation,
                    metric_attributes=metric_attrs,
                )
                if sinks is not None:
                    sinks.offer_evaluation(
                        scored.ref, names.EVAL_CODE, result.score, result.label, explanation, metric_attrs
                    )
        finally:
            if token is not None:
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


def only_queues(logger_provider: Any) -> bool:
    """Whether writing a log record through ``logger_provider`` only queues it (never blocks on an
    exporter): the SDK's provider whose processors are all batch processors (or ours, which queue),
    a no-op provider, or one whose ``only_queues`` attribute is ``True``. Anything else may block in
    ``emit``."""
    try:
        from opentelemetry._logs import NoOpLoggerProvider

        if isinstance(logger_provider, NoOpLoggerProvider) or getattr(logger_provider, "only_queues", False) is True:
            return True  # a provider of our own says so with a class attribute: the core knows no adapter
        if "opentelemetry.sdk._logs" not in sys.modules:
            return False  # not the SDK's provider (and the SDK's logs need not load to tell)
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        if type(logger_provider) is not LoggerProvider:
            return False
        processors = _log_processors(logger_provider)
        if not isinstance(processors, tuple):
            return False
        # ours (the companion log processor) say so with a class attribute: the core knows no adapter
        return all(
            isinstance(p, BatchLogRecordProcessor) or getattr(p, "only_queues", False) is True for p in processors
        )
    except Exception:  # an SDK whose layout we do not know: take the safe path
        return False


def _log_processors(logger_provider: Any) -> Any:
    """The SDK logger provider's processors tuple (replaced, not changed, when one is added), or
    ``None`` for a provider laid out otherwise."""
    return getattr(getattr(logger_provider, "_multi_log_record_processor", None), "_log_record_processors", None)


def _sink_dispatcher(
    sinks: Sequence[ScoreSink | str] | None, settings: Settings, emitter: Emitter
) -> SinkDispatcher | None:
    """The dispatcher of the sinks passed (strict) or named in the settings (a warning per bad one);
    :meth:`Outputs._emit_batch` and the judge hand it every evaluation with a score."""
    if sinks is None and not settings.sinks:
        return None  # none asked for: the sinks' modules (and pydantic, which they use) stay unloaded
    from ..sinks._dispatch import SinkDispatcher
    from ..sinks._settings import resolve_sinks

    chosen = resolve_sinks(sinks, strict=True) if sinks is not None else resolve_sinks(settings.sinks, strict=False)
    if not chosen:
        return None
    return SinkDispatcher(chosen, queue_size=settings.sink_queue_size, count_drop=emitter.count_drop)
