"""``Judge``: sampled, bounded, budgeted LLM judging of live agent runs, off the span's thread.

The processor calls :meth:`Judge.offer` when a run's root span ends. ``offer`` decides (ratio and
priorities, see :mod:`.sampler`), checks that the run carries content and that the circuit is
closed, and puts a reference to the (never again mutated) :class:`ScoredRun` into a bounded queue.
That is all the span's thread does: no metric call, no I/O, no lock of ours (the queue's own lock
is held for an append). Skips are signalled through a lock-free deque that workers turn into
metrics (:mod:`._queue`).

Worker threads take runs from the queue and, just before a request, check the circuit
(:mod:`._circuit`), reserve the token budget (worst case, corrected to the reported usage
afterwards) and take a rate-limit slot (:mod:`._budget`). The request runs with OpenTelemetry's
suppress-instrumentation keys set, so HTTP-client instrumentations record nothing of it. Each
judgment writes one ``gen_ai.evaluation.result`` log record parented to the evaluated root span,
one carrier span ``evaluate tool_call_accuracy_llm`` (child of that root and linked to it, written
*without* the suppress key so it is exported), and metrics.

Accounting: every offered run ends in exactly one place — ``toolscore.judge.requests`` (by
outcome) or ``toolscore.judge.skipped`` (by reason; ``abandoned`` for runs a shutdown gave up) —
so ``requests + skipped = offered`` always holds once the judge is flushed or shut down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from pydantic import BaseModel, ConfigDict

from .._deadline import Deadline
from .._version import __version__
from ..envconfig import warn_env
from ..model import AgentRun
from ..scorers.llm import JudgeError, LLMScoreResult, ToolCallAccuracyLLMScorer, check_base_url
from ..telemetry import Emitter, names
from ._budget import Reservation
from ._circuit import Circuit
from ._queue import JudgeAttempt, QueuedRun, RunQueue
from ._report import EvaluationOut, write_judgment
from ._sampler import JudgeSampler
from ._settings import JudgeSettings, sampler_from_settings, scorer_from_settings

if TYPE_CHECKING:
    from .._scored import ScoredRun

__all__ = ["Judge", "JudgeAttempt", "JudgeStats", "judge_from_env"]

_log = logging.getLogger(__name__)

# Tokens of a corrective retry beyond the first request: the echoed bad reply (the scorer cuts it
# to 2,000 characters) and the correction text.
_CORRECTION_OVERHEAD_TOKENS = 650
_DEFAULT_OUTPUT_ESTIMATE = 512


class JudgeStats(BaseModel):
    """A snapshot of the judge's funnel (the same numbers as its metrics, for tests and health checks)."""

    model_config = ConfigDict(frozen=True)

    offered: int
    queued: int
    in_flight: int
    requests: dict[str, int]
    skipped: dict[str, int]
    tokens_used_in_window: int | None
    circuit_open: bool

    @property
    def judged(self) -> int:
        return sum(self.requests.values())

    @property
    def accounted(self) -> int:
        """Runs with a final outcome (judged or skipped)."""
        return self.judged + sum(self.skipped.values())



def _suppressed_context() -> otel_context.Context:
    ctx = otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True)
    return otel_context.set_value(otel_context._SUPPRESS_HTTP_INSTRUMENTATION_KEY, True, ctx)


class Judge:
    """Runs the LLM tool-call-accuracy scorer on sampled live runs, within limits, and reports it all.

    Args:
        scorer: a :class:`~otel_toolscore.scorers.llm.ToolCallAccuracyLLMScorer`.
        sampler: which runs are judged and the rate/token limits (default ``JudgeSampler()``).
        workers: threads calling the judge (throughput ≈ workers ÷ judge latency).
        queue_size: runs waiting for a worker; a full queue drops (``skipped{reason=queue_full}``).
        tracer_provider: where carrier spans go (default: the global provider).
        carrier_span: write the ``evaluate tool_call_accuracy_llm`` span.
        failure_threshold, circuit_cooldown_s: consecutive failed judgments that open the circuit,
            and how long it stays open before one trial request.
        pass_threshold: a score at or above it is labelled ``pass``, below ``fail``.
        shutdown_timeout_s: how long :meth:`shutdown` lets the workers drain the queue.
        max_span_evaluations: per-call verdicts written on the carrier span.
        close_scorer: close the scorer's HTTP client at shutdown (set when the judge built it).
    """

    def __init__(
        self,
        scorer: ToolCallAccuracyLLMScorer,
        *,
        sampler: JudgeSampler | None = None,
        workers: int = 4,
        queue_size: int = 1_000,
        tracer_provider: trace.TracerProvider | None = None,
        carrier_span: bool = True,
        failure_threshold: int = 5,
        circuit_cooldown_s: float = 30.0,
        pass_threshold: float = 1.0,
        shutdown_timeout_s: float = 10.0,
        max_span_evaluations: int = 32,
        close_scorer: bool = False,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        if not 0.0 <= pass_threshold <= 1.0:
            raise ValueError("pass_threshold must be within [0, 1]")
        self.scorer = scorer
        self.sampler = sampler if sampler is not None else JudgeSampler()
        self.workers = workers
        self.queue_size = queue_size
        self.carrier_span = carrier_span
        self.pass_threshold = pass_threshold
        self.shutdown_timeout_s = shutdown_timeout_s
        self.max_span_evaluations = max_span_evaluations
        self._close_scorer = close_scorer
        self._tracer_provider = tracer_provider
        self._tracer: trace.Tracer | None = None
        self._circuit = Circuit(failure_threshold, circuit_cooldown_s)
        self._runs = RunQueue(queue_size, workers)
        #: set by the processor at bind(): scores the runs it has queued (called before flush and stats)
        self._before_flush: Callable[[], object] | None = None
        self._on_evaluation: EvaluationOut | None = None
        # Output tokens a judgment may produce, for reservations: the request's max_tokens when the
        # scorer sends one (a hard bound), else the largest answer seen so far.
        opts = scorer.request_options
        bound = opts.get("max_tokens") or opts.get("max_completion_tokens")
        self._output_bound: int | None = int(bound) if isinstance(bound, int) and bound > 0 else None
        self._output_estimate = self._output_bound or _DEFAULT_OUTPUT_ESTIMATE

    # -- wiring -------------------------------------------------------------------------------------
    def bind(
        self,
        emitter: Emitter,
        before_flush: Callable[[], object] | None = None,
        *,
        on_evaluation: EvaluationOut | None = None,
    ) -> None:
        """Called by the processor's outputs with its emitter; starts the workers. A judge serves one processor.

        ``before_flush``: the processor's way to hand over the runs it has queued but not yet scored,
        called at the start of every :meth:`force_flush`. ``on_evaluation``: where every judgment with
        a score also goes (the score sinks), beside the emitter's event and metric.
        """
        self._before_flush = before_flush
        self._on_evaluation = on_evaluation
        self._runs.start(emitter, self.attempt, self._write)

    @property
    def model(self) -> str:
        return self.scorer.model

    # -- the span's thread ----------------------------------------------------------------------------
    def offer(self, scored: ScoredRun) -> bool:
        """Queue ``scored`` for judging if it is selected; never blocks. True when it was queued."""
        runs = self._runs
        if not runs.accepting:
            runs.skip("abandoned")
            return False
        try:
            sampled_by = self.sampler.select(scored)
        except Exception:
            _log.debug("otel-toolscore judge sampler failed", exc_info=True)
            sampled_by = None
        if sampled_by is None:
            runs.skip("not_sampled")
            return False
        if not scored.record.has_content:
            runs.skip("no_content")
            return False
        if self._circuit.is_open():
            runs.skip("circuit_open")
            return False
        return runs.put(scored, sampled_by)

    # -- a judgment -----------------------------------------------------------------------------------
    def attempt(self, run: AgentRun) -> JudgeAttempt:
        """Judge ``run`` now, on the calling thread, within the circuit, token budget and rate limit.

        The workers call it for the runs they take from the queue; ``otel-toolscore score --judge``
        calls it from its own bounded pool, so offline judging has exactly the online limits. A
        skip (``circuit_open``, ``budget``, ``rate_limit``) is returned, never raised; so is a
        failed judgment (``outcome`` = the :class:`JudgeError` kind).
        """
        sampler = self.sampler
        if not self._circuit.allow():
            return JudgeAttempt(skipped="circuit_open")
        reservation: Reservation | None = None
        if sampler.budget is not None:
            try:
                prompt_tokens = self.scorer.estimate_prompt_tokens(run)
            except Exception:
                _log.debug("otel-toolscore could not build a judge prompt", exc_info=True)
                prompt_tokens = 0
            reservation = sampler.budget.reserve(self.reservation_size(prompt_tokens))
            if reservation is None:
                self._circuit.release()
                return JudgeAttempt(skipped="budget")
        if sampler.rate is not None and not sampler.rate.try_acquire():
            if reservation is not None and sampler.budget is not None:
                sampler.budget.settle(reservation, 0)
            self._circuit.release()
            return JudgeAttempt(skipped="rate_limit")
        return self._judge(run, reservation)

    def reservation_size(self, prompt_tokens: int) -> int:
        """Worst case of one judgment: every question may need a corrective retry."""
        questions = 2 if self.scorer.separate_reason_call else 1
        per_request = prompt_tokens + self._output_estimate
        return questions * (2 * per_request + _CORRECTION_OVERHEAD_TOKENS)

    @property
    def output_estimate(self) -> int:
        """Output tokens one request is expected to take (the ``max_tokens`` sent, else the largest seen)."""
        return self._output_estimate

    def _judge(self, run: AgentRun, reservation: Reservation | None) -> JudgeAttempt:
        start_ns = time.time_ns()
        started = time.perf_counter()
        result: LLMScoreResult | None = None
        error: JudgeError | None = None
        token = otel_context.attach(_suppressed_context())
        try:
            result = self.scorer.run(run)
        except JudgeError as exc:
            error = exc
        except Exception as exc:  # a bug or an unexpected client error: counted, never raised
            error = JudgeError("error", f"{type(exc).__name__}: {exc}")
        finally:
            otel_context.detach(token)
        duration = time.perf_counter() - started
        end_ns = time.time_ns()
        usage = result.usage if result is not None else (error.usage if error is not None else None)
        input_tokens = usage.prompt_tokens if usage is not None else 0
        output_tokens = usage.completion_tokens if usage is not None else 0
        requests = usage.requests if usage is not None else 0
        budget = self.sampler.budget
        if reservation is not None and budget is not None:
            if input_tokens or output_tokens:
                budget.settle(reservation, input_tokens + output_tokens)
            elif error is None or error.kind != "timeout":
                budget.settle(reservation, 0)  # refused before any work (HTTP error, connection)
            # a timeout without usage keeps its reservation: the endpoint may have spent it
        if result is not None and self._output_bound is None and requests:
            per_request = -(-output_tokens // requests)
            if per_request > self._output_estimate:
                self._output_estimate = per_request
        self._circuit.record(error is None)
        return JudgeAttempt(
            outcome="ok" if error is None else error.kind,
            result=result,
            error=error,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            requests=requests,
            duration_s=duration,
            start_ns=start_ns,
            end_ns=end_ns,
        )

    # -- output -----------------------------------------------------------------------------------------
    def label(self, score: float) -> str:
        """``pass`` when ``score >= pass_threshold``, else ``fail``."""
        return names.LABEL_PASS if score >= self.pass_threshold else names.LABEL_FAIL

    def _write(self, item: QueuedRun, attempt: JudgeAttempt) -> None:
        emitter = self._runs.emitter
        if emitter is None:
            return
        write_judgment(
            emitter,
            item,
            attempt,
            model=self.scorer.model,
            label_for=self.label,
            tracer=self._get_tracer if self.carrier_span else None,
            max_span_evaluations=self.max_span_evaluations,
            on_evaluation=self._on_evaluation,
        )

    def _get_tracer(self) -> trace.Tracer:
        if self._tracer is None:
            self._tracer = trace.get_tracer(names.SCOPE_NAME, __version__, tracer_provider=self._tracer_provider)
        return self._tracer

    # -- lifecycle ----------------------------------------------------------------------------------------
    def stats(self) -> JudgeStats:
        """Counts so far. Runs that ended before the call are included: the processor is asked to
        score what it has queued first (CPU only), so a run is never "not offered yet"."""
        self._run_before_flush()
        requests, skipped, in_flight, queued = self._runs.counts()
        budget = self.sampler.budget
        return JudgeStats(
            offered=sum(requests.values()) + sum(skipped.values()) + queued + in_flight,
            queued=queued,
            in_flight=in_flight,
            requests=requests,
            skipped=skipped,
            tokens_used_in_window=budget.used if budget is not None else None,
            circuit_open=self._circuit.is_open(),
        )

    def force_flush(self, timeout_seconds: float = 30.0) -> bool:
        """Wait until every queued run is judged or skipped, up to ``timeout_seconds``."""
        deadline = Deadline.after(timeout_seconds)
        self._run_before_flush()
        done = self._runs.wait_idle(deadline)
        self._runs.drain_signals()
        return done

    def _run_before_flush(self) -> None:
        before = self._before_flush
        if before is not None:
            try:
                before()
            except Exception:
                _log.debug("otel-toolscore judge pre-flush failed", exc_info=True)

    def shutdown(self, timeout_seconds: float | None = None) -> None:
        """Stop accepting runs, let the workers drain the queue within the timeout, and count as
        ``skipped{reason=abandoned}`` every run still queued or in flight after it."""
        timeout = self.shutdown_timeout_s if timeout_seconds is None else timeout_seconds
        if not self._runs.shutdown(Deadline.after(timeout)):
            return
        if self._close_scorer:
            try:
                self.scorer.close()
            except Exception:
                _log.debug("otel-toolscore could not close the judge client", exc_info=True)

    # -- configuration ----------------------------------------------------------------------------------
    @classmethod
    def from_settings(
        cls,
        settings: JudgeSettings,
        *,
        available_tools: Sequence[Any] | None = None,
        tracer_provider: trace.TracerProvider | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Judge:
        """A judge (and its scorer) from :class:`JudgeSettings`; ``settings.model`` must be set."""
        scorer = scorer_from_settings(settings, available_tools=available_tools, environ=environ)
        return cls(
            scorer,
            sampler=sampler_from_settings(settings),
            workers=settings.workers,
            queue_size=settings.queue_size,
            tracer_provider=tracer_provider,
            carrier_span=settings.carrier_span,
            failure_threshold=settings.failure_threshold,
            circuit_cooldown_s=settings.circuit_cooldown_ms / 1000,
            pass_threshold=settings.pass_threshold,
            shutdown_timeout_s=settings.shutdown_timeout_ms / 1000,
            max_span_evaluations=settings.max_span_evaluations,
            close_scorer=True,
        )

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        /,
        *,
        available_tools: Sequence[Any] | None = None,
        tracer_provider: trace.TracerProvider | None = None,
        **overrides: Any,
    ) -> Judge:
        """A judge from ``OTEL_TOOLSCORE_JUDGE_*`` (and ``OPENAI_*``) variables; keyword overrides win."""
        settings = JudgeSettings.from_env(environ, **overrides)
        return cls.from_settings(settings, available_tools=available_tools, tracer_provider=tracer_provider, environ=environ)

    def __repr__(self) -> str:
        return f"Judge(model={self.scorer.model!r}, sampler={self.sampler!r}, workers={self.workers}, queue_size={self.queue_size})"


def judge_from_env(
    environ: Mapping[str, str] | None = None,
    *,
    available_tools: Sequence[Any] | None = None,
    tracer_provider: trace.TracerProvider | None = None,
) -> Judge | None:
    """The judge the environment asks for, or ``None`` when ``OTEL_TOOLSCORE_JUDGE_MODEL`` is unset.

    Never raises for what the environment says: an unknown or unusable judge variable logs a warning
    naming it and is ignored (even when the judge is off, so a typo is never silent). An endpoint
    that cannot be used (``OTEL_TOOLSCORE_JUDGE_BASE_URL``, or the ``OPENAI_BASE_URL`` fallback)
    turns the judge off with a warning: another endpoint would receive the runs and the key.
    """
    import os

    settings = JudgeSettings.from_env(environ)
    if not settings.enabled:
        return None
    env = os.environ if environ is None else environ
    fallback = env.get("OPENAI_BASE_URL") or None
    if settings.base_url is None and fallback:
        try:
            check_base_url(fallback)
        except ValueError as exc:
            warn_env(f"OPENAI_BASE_URL cannot be used as the judge endpoint ({exc}): the judge is off")
            return None
    return Judge.from_settings(settings, available_tools=available_tools, tracer_provider=tracer_provider, environ=environ)
