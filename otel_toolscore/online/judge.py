"""``Judge``: sampled, bounded, budgeted LLM judging of live agent runs, off the span's thread.

The processor calls :meth:`Judge.offer` when a run's root span ends. ``offer`` decides (ratio and
priorities, see :mod:`.sampler`), checks that the run carries content and that the circuit is
closed, and puts a reference to the (never again mutated) :class:`ScoredRun` into a bounded queue.
That is all the span's thread does: no metric call, no I/O, no lock of ours (the queue's own lock
is held for an append). Skips are signalled through a lock-free deque that workers turn into
metrics.

Worker threads take runs from the queue and, just before a request, check the circuit, reserve
the token budget (worst case, corrected to the reported usage afterwards) and take a rate-limit
slot. The request runs with OpenTelemetry's suppress-instrumentation keys set, so HTTP-client
instrumentations record nothing of it. Each judgment writes one ``gen_ai.evaluation.result`` log
record parented to the evaluated root span, one carrier span ``evaluate tool_call_accuracy_llm``
(child of that root and linked to it, written *without* the suppress key so it is exported),
and metrics.

Accounting: every offered run ends in exactly one place — ``toolscore.judge.requests`` (by
outcome) or ``toolscore.judge.skipped`` (by reason; ``abandoned`` for runs a shutdown gave up) —
so ``requests + skipped = offered`` always holds once the judge is flushed or shut down.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from pydantic import BaseModel, ConfigDict

from .._version import __version__
from ..config import ConfigError
from ..envconfig import warn_env
from ..model import AgentRun
from ..scorers.llm import (
    JudgeError,
    LLMScoreResult,
    ToolCallAccuracyLLMScorer,
    check_base_url,
    create_tool_call_accuracy_scorer_llm,
)
from ..telemetry import Emitter, RunRef, names
from ..telemetry.emitter import judge_span_attributes, write_carrier_span
from .judge_settings import JudgeSettings, load_tools_file
from .sampler import JudgeSampler, Reservation

if TYPE_CHECKING:
    from ..core.scored import ScoredRun

__all__ = ["Judge", "JudgeAttempt", "JudgeStats", "judge_from_env"]

_log = logging.getLogger(__name__)

# Tokens of a corrective retry beyond the first request: the echoed bad reply (the scorer cuts it
# to 2,000 characters) and the correction text.
_CORRECTION_OVERHEAD_TOKENS = 650
_DEFAULT_OUTPUT_ESTIMATE = 512
_POLL_S = 0.2
_MAX_EXPLANATION_CHARS = 1000


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


@dataclass(frozen=True)
class JudgeAttempt:
    """What one :meth:`Judge.attempt` came to: skipped before any request (``skipped`` says why), or
    judged (``outcome`` ``ok`` with a ``result``, else the :class:`JudgeError` kind with the ``error``)."""

    skipped: str | None = None
    outcome: str = "skipped"
    result: LLMScoreResult | None = None
    error: JudgeError | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    duration_s: float = 0.0
    start_ns: int = 0
    end_ns: int = 0


class _Item:
    __slots__ = ("sampled_by", "scored", "state")

    def __init__(self, scored: ScoredRun, sampled_by: str) -> None:
        self.scored = scored
        self.sampled_by = sampled_by
        self.state = "queued"  # queued -> running -> done | abandoned


class _Circuit:
    """Opens after ``threshold`` consecutive failures for ``cooldown_s``, then lets one trial through."""

    def __init__(self, threshold: int, cooldown_s: float) -> None:
        self.threshold = threshold
        self.cooldown_s = cooldown_s
        self.failures = 0
        self.open_until = 0.0
        self.trial = False
        self.times_opened = 0
        self._lock = threading.Lock()

    def is_open(self, now: float) -> bool:
        """Cheap check for the span's thread (no lock: a stale read only delays the skip)."""
        return self.failures >= self.threshold and now < self.open_until

    def allow(self, now: float) -> bool:
        with self._lock:
            if self.failures < self.threshold:
                return True
            if now < self.open_until or self.trial:
                return False
            self.trial = True  # half-open: one request decides
            return True

    def release(self) -> None:
        with self._lock:
            self.trial = False

    def record(self, ok: bool, now: float) -> None:
        with self._lock:
            self.trial = False
            if ok:
                self.failures = 0
                self.open_until = 0.0
                return
            self.failures += 1
            if self.failures >= self.threshold:
                if now >= self.open_until:
                    self.times_opened += 1
                self.open_until = now + self.cooldown_s


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
        self._circuit = _Circuit(failure_threshold, circuit_cooldown_s)
        self._queue: queue.Queue[_Item] = queue.Queue(maxsize=queue_size)
        # Skip reasons signalled from the span's thread (deque.append is atomic); workers count them.
        self._signals: deque[str] = deque()
        self._emitter: Emitter | None = None
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()  # worker-side bookkeeping only
        #: set by the processor at bind(): scores the runs it has queued (called before flush and stats)
        self._before_flush: Callable[[], object] | None = None
        self._drain_lock = threading.Lock()
        self._in_flight: set[_Item] = set()
        self._requests: Counter[str] = Counter()
        self._skipped: Counter[str] = Counter()
        self._closed = False
        self._stop = threading.Event()
        # Output tokens a judgment may produce, for reservations: the request's max_tokens when the
        # scorer sends one (a hard bound), else the largest answer seen so far.
        opts = scorer.request_options
        bound = opts.get("max_tokens") or opts.get("max_completion_tokens")
        self._output_bound: int | None = int(bound) if isinstance(bound, int) and bound > 0 else None
        self._output_estimate = self._output_bound or _DEFAULT_OUTPUT_ESTIMATE

    # -- wiring -------------------------------------------------------------------------------------
    def bind(self, emitter: Emitter, before_flush: Callable[[], object] | None = None) -> None:
        """Called by the processor with its emitter; starts the workers. A judge serves one processor.

        ``before_flush``: the processor's way to hand over the runs it has queued but not yet scored,
        called at the start of every :meth:`force_flush`.
        """
        self._before_flush = before_flush
        with self._lock:
            if self._emitter is emitter:
                return
            if self._emitter is not None:
                raise RuntimeError("this Judge is already bound to another processor; create one Judge per processor")
            if self._closed:
                raise RuntimeError("this Judge was shut down")
            self._emitter = emitter
            emitter.observe_judge_queue(self._queue.qsize)
            for i in range(self.workers):
                t = threading.Thread(target=self._work, name=f"otel-toolscore-judge-{i}", daemon=True)
                t.start()
                self._threads.append(t)

    @property
    def model(self) -> str:
        return self.scorer.model

    # -- the span's thread ----------------------------------------------------------------------------
    def offer(self, scored: ScoredRun) -> bool:
        """Queue ``scored`` for judging if it is selected; never blocks. True when it was queued."""
        if self._closed or self._emitter is None:
            self._skip("abandoned")
            return False
        try:
            sampled_by = self.sampler.select(scored)
        except Exception:
            _log.debug("otel-toolscore judge sampler failed", exc_info=True)
            sampled_by = None
        if sampled_by is None:
            self._skip("not_sampled")
            return False
        if not scored.record.has_content:
            self._skip("no_content")
            return False
        if self._circuit.is_open(time.monotonic()):
            self._skip("circuit_open")
            return False
        try:
            self._queue.put_nowait(_Item(scored, sampled_by))
        except queue.Full:
            self._skip("queue_full")
            return False
        return True

    def _skip(self, reason: str) -> None:
        self._signals.append(reason)
        if self._closed or self._emitter is None:
            self._drain_signals()  # no worker will

    # -- workers --------------------------------------------------------------------------------------
    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                item = self._queue.get(timeout=_POLL_S)
            except queue.Empty:
                self._drain_signals()
                continue
            try:
                self._drain_signals()
                self._process(item)
            except Exception:
                _log.debug("otel-toolscore judge worker error", exc_info=True)
            finally:
                self._queue.task_done()

    def _drain_signals(self) -> None:
        # One drainer at a time, counting and recording together: whoever returns from here (a
        # flush, stats) knows every signal popped so far is in the stats *and* in the metrics.
        with self._drain_lock:
            counts: Counter[str] = Counter()
            signals = self._signals
            while True:
                try:
                    counts[signals.popleft()] += 1
                except IndexError:
                    break
            if not counts:
                return
            with self._lock:
                self._skipped.update(counts)
            emitter = self._emitter
            if emitter is not None:
                for reason, amount in counts.items():
                    emitter.count_judge_skip(reason, amount)

    def _finish_skip(self, item: _Item, reason: str) -> None:
        with self._lock:
            self._in_flight.discard(item)
            if item.state == "abandoned":
                return  # already counted by shutdown
            item.state = "done"
            self._skipped[reason] += 1
        if self._emitter is not None:
            self._emitter.count_judge_skip(reason)

    def _process(self, item: _Item) -> None:
        with self._lock:
            if item.state != "queued":
                return
            if self._stop.is_set():  # taken from the queue as shutdown gave up: abandoned
                item.state = "abandoned"
                self._skipped["abandoned"] += 1
                late = True
            else:
                item.state = "running"
                self._in_flight.add(item)
                late = False
        if late:
            if self._emitter is not None:
                self._emitter.count_judge_skip("abandoned")
            return
        attempt = self.attempt(item.scored.run)
        if attempt.skipped is not None:
            self._finish_skip(item, attempt.skipped)
            return
        with self._lock:
            self._in_flight.discard(item)
            if item.state == "abandoned":
                return  # shutdown gave up on it and counted it; its providers may be gone
            item.state = "done"
            self._requests[attempt.outcome] += 1
        try:
            self._write(item, attempt)
        except Exception:
            _log.debug("otel-toolscore could not write a judgment", exc_info=True)

    def attempt(self, run: AgentRun) -> JudgeAttempt:
        """Judge ``run`` now, on the calling thread, within the circuit, token budget and rate limit.

        The workers call it for the runs they take from the queue; ``otel-toolscore score --judge``
        calls it from its own bounded pool, so offline judging has exactly the online limits. A
        skip (``circuit_open``, ``budget``, ``rate_limit``) is returned, never raised; so is a
        failed judgment (``outcome`` = the :class:`JudgeError` kind).
        """
        sampler = self.sampler
        if not self._circuit.allow(time.monotonic()):
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
        self._circuit.record(error is None, time.monotonic())
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

    def _write(self, item: _Item, attempt: JudgeAttempt) -> None:
        emitter = self._emitter
        if emitter is None:
            return
        outcome, result, error = attempt.outcome, attempt.result, attempt.error
        input_tokens, output_tokens, requests = attempt.input_tokens, attempt.output_tokens, attempt.requests
        duration, start_ns, end_ns = attempt.duration_s, attempt.start_ns, attempt.end_ns
        model = self.scorer.model
        ref: RunRef = item.scored.ref
        emitter.count_judge_request(outcome, model)
        emitter.count_judge_tokens(input_tokens, output_tokens, model)
        emitter.record_judge_duration(duration, outcome, model)
        extra = {names.JUDGE_MODEL: model, names.ATTR_JUDGE_SAMPLED_BY: item.sampled_by}
        label: str | None = None
        if result is not None:
            label = self.label(result.score)
            emitter.emit_evaluation(
                ref,
                name=names.EVAL_LLM,
                score=result.score,
                label=label,
                explanation=result.reason,
                metric_attributes={names.ATTR_JUDGE_SAMPLED_BY: item.sampled_by},
                extra_attributes=extra,
            )
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
        if self.carrier_span:
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
                max_evaluations=self.max_span_evaluations,
            )
            # The worker's own context: no suppress key, so the span is recorded and exported.
            write_carrier_span(self._get_tracer(), ref, attrs, start_time=start_ns, end_time=max(end_ns, start_ns))

    def _get_tracer(self) -> trace.Tracer:
        if self._tracer is None:
            self._tracer = trace.get_tracer(names.SCOPE_NAME, __version__, tracer_provider=self._tracer_provider)
        return self._tracer

    # -- lifecycle ----------------------------------------------------------------------------------------
    def stats(self) -> JudgeStats:
        """Counts so far. Runs that ended before the call are included: the processor is asked to
        score what it has queued first (CPU only), so a run is never "not offered yet"."""
        self._run_before_flush()
        self._drain_signals()
        with self._lock:
            requests = dict(self._requests)
            skipped = dict(self._skipped)
            in_flight = len(self._in_flight)
        queued = self._queue.qsize()
        budget = self.sampler.budget
        return JudgeStats(
            offered=sum(requests.values()) + sum(skipped.values()) + queued + in_flight,
            queued=queued,
            in_flight=in_flight,
            requests=requests,
            skipped=skipped,
            tokens_used_in_window=budget.used if budget is not None else None,
            circuit_open=self._circuit.is_open(time.monotonic()),
        )

    def force_flush(self, timeout_seconds: float = 30.0) -> bool:
        """Wait until every queued run is judged or skipped, up to ``timeout_seconds``."""
        deadline = time.monotonic() + max(0.0, timeout_seconds)
        self._run_before_flush()
        done = self._wait_idle(deadline)
        self._drain_signals()
        return done

    def _run_before_flush(self) -> None:
        before = self._before_flush
        if before is not None:
            try:
                before()
            except Exception:
                _log.debug("otel-toolscore judge pre-flush failed", exc_info=True)

    def _wait_idle(self, deadline: float) -> bool:
        q = self._queue
        with q.all_tasks_done:
            while q.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._threads:
                    return False
                q.all_tasks_done.wait(min(remaining, _POLL_S))
        return True

    def shutdown(self, timeout_seconds: float | None = None) -> None:
        """Stop accepting runs, let the workers drain the queue within the timeout, and count as
        ``skipped{reason=abandoned}`` every run still queued or in flight after it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        timeout = self.shutdown_timeout_s if timeout_seconds is None else timeout_seconds
        self._wait_idle(time.monotonic() + max(0.0, timeout))
        abandoned = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            with self._lock:
                if item.state == "queued":
                    item.state = "abandoned"
                    abandoned += 1
            self._queue.task_done()
        with self._lock:
            for item in self._in_flight:
                if item.state == "running":
                    item.state = "abandoned"
                    abandoned += 1
            self._in_flight.clear()
            if abandoned:
                self._skipped["abandoned"] += abandoned
        self._stop.set()
        self._drain_signals()
        if abandoned and self._emitter is not None:
            self._emitter.count_judge_skip("abandoned", abandoned)
        for t in self._threads:
            t.join(timeout=0.5)  # a worker stuck in a request is a daemon; its result is discarded
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
        if not settings.enabled:
            raise ConfigError(f"the judge needs a model: set {JudgeSettings.env_name('model')}")
        assert settings.model is not None
        import os

        env = os.environ if environ is None else environ
        tools: list[Any] = list(available_tools or ())
        if settings.tools:
            tools.extend(settings.tools)
        if settings.tools_file:
            tools.extend(load_tools_file(settings.tools_file))
        api_key = settings.api_key.get_secret_value() if settings.api_key is not None else env.get("OPENAI_API_KEY")
        base_url = settings.base_url or env.get("OPENAI_BASE_URL") or None
        if base_url and not settings.base_url:
            try:
                check_base_url(base_url)
            except ValueError as exc:
                raise ConfigError(f"invalid OPENAI_BASE_URL (used as the judge endpoint): {exc}") from None
        request_options: dict[str, Any] = {}
        if settings.max_output_tokens is not None:
            request_options["max_tokens"] = settings.max_output_tokens
        scorer = create_tool_call_accuracy_scorer_llm(
            settings.model,
            tools,
            base_url=base_url,
            api_key=api_key,
            timeout=settings.timeout_ms / 1000,
            max_retries=settings.max_retries,
            deadline_s=None if settings.deadline_ms is None else settings.deadline_ms / 1000,
            include_arguments=settings.include_arguments,
            include_results=settings.include_results,
            redact=settings.redact,
            separate_reason_call=settings.separate_reason_call,
            max_text_chars=settings.max_text_chars,
            max_argument_chars=settings.max_argument_chars,
            request_options=request_options,
            max_response_bytes=settings.max_response_bytes,
        )
        sampler = JudgeSampler(
            settings.ratio,
            always_when_code_fails=settings.always_when_code_fails,
            always_when_new_sequence=settings.always_when_new_sequence,
            always_when_flagged=settings.always_when_flagged,
            max_per_minute=settings.max_per_minute,
            max_tokens_per_hour=settings.max_tokens_per_hour,
            sequence_memory=settings.sequence_memory,
        )
        return cls(
            scorer,
            sampler=sampler,
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
