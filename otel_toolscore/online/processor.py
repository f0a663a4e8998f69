"""``ToolScoreSpanProcessor``: score every live agent run as its root span ends.

The processor sits in front of the exporting processor (as a Collector pipeline would) and hands
every span on to it. When a run's root span ends it assembles the run from the compact facts its
spans left, scores it with the code scorer, and hands on a copy of the root carrying the score
attributes (an ended span is immutable; see DESIGN.md). The evaluation event and the metrics are
written by a background worker, so the span's thread does no I/O and takes no global lock.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry import baggage
from opentelemetry import context as otel_context
from opentelemetry.sdk._logs import LogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from ..config import Settings
from ..extract import (
    ExtractOptions,
    SpanFacts,
    assemble_runs,
    classify_start,
    read_log,
    read_span,
    record_from_readable,
)
from ..extract.records import plain_attributes
from ..model import AgentRun
from ..scorers.code import CodeScoreResult, CodeVerdict, ToolCallAccuracyCodeScorer
from ..telemetry import Emitter, RunRef, code_score_attributes, names, openinference_annotation
from .buffers import HeldRoot, TraceState, TraceTable
from .expectations import Expectation, current_expectation, expectation_from_attributes, load_rules, resolve

if TYPE_CHECKING:
    from opentelemetry import _logs, metrics

    from .judge import Judge

__all__ = ["ScoredRun", "ToolScoreLogRecordProcessor", "ToolScoreSpanProcessor"]

_log = logging.getLogger(__name__)
_WAKE_AT = 512  # queued items that wake the worker before its next poll


class ScoredRun:
    """A run and its code score. ``verdict`` is ``None`` when the run was not code-scored.

    ``result`` (the full, Mastra-shaped :class:`CodeScoreResult`) is built on first access, off the
    span's thread: the hot path only computes the verdict.
    """

    __slots__ = ("_result", "_scorer", "expectation", "outcome", "ref", "run", "verdict")

    def __init__(
        self,
        run: AgentRun,
        ref: RunRef,
        outcome: str,
        verdict: CodeVerdict | None,
        expectation: Expectation | None,
        scorer: ToolCallAccuracyCodeScorer | None = None,
    ) -> None:
        self.run = run
        self.ref = ref
        self.outcome = outcome
        self.verdict = verdict
        self.expectation = expectation
        self._scorer = scorer
        self._result: CodeScoreResult | None = None

    @property
    def score(self) -> float | None:
        return self.verdict.score if self.verdict is not None else None

    @property
    def passed(self) -> bool | None:
        return self.verdict.passed if self.verdict is not None else None

    @property
    def result(self) -> CodeScoreResult | None:
        if self._result is None and self.verdict is not None and self._scorer is not None:
            self._result = self._scorer.result(self.run, self.verdict)
        return self._result


def _hex16(value: int) -> str:
    return format(value, "016x")


class ToolScoreSpanProcessor(SpanProcessor):
    """Scores agent runs online and forwards every span to ``downstream``.

    Args:
        downstream: the processor that exports spans (usually ``BatchSpanProcessor(OTLPSpanExporter())``).
            ``None``: scores leave only as events and metrics.
        expectations: rules (``Expectation`` objects) or the path of a YAML/TOML rules file.
        judge: an optional :class:`~otel_toolscore.online.judge.Judge` for sampled LLM judging.
        meter_provider, logger_provider: default to the global providers.
        settings: a :class:`~otel_toolscore.config.Settings`; keyword overrides of its fields are accepted
            too (``max_pending_traces=...``). Unset fields come from ``OTEL_TOOLSCORE_*`` variables.
        on_scored: optional callback called (on the worker thread) with every :class:`ScoredRun`.
    """

    def __init__(
        self,
        downstream: SpanProcessor | None = None,
        *,
        expectations: Sequence[Expectation] | str | Path | None = None,
        judge: Judge | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        logger_provider: _logs.LoggerProvider | None = None,
        settings: Settings | None = None,
        on_scored: Any = None,
        **overrides: Any,
    ) -> None:
        self.settings = settings if settings is not None else Settings.from_env(**overrides)
        if settings is not None and overrides:
            self.settings = settings.model_copy(update=overrides)
        s = self.settings
        self._downstream = downstream
        if expectations is None and s.rules:
            expectations = s.rules
        if isinstance(expectations, (str, Path)):
            self.rules: list[Expectation] = load_rules(expectations)
        else:
            self.rules = list(expectations or ())
        self.default_expectation: Expectation | None = None
        if s.expected_tool or s.expected_tool_order:
            self.default_expectation = Expectation(
                name="default",
                expected_tool=s.expected_tool,
                expected_tool_order=s.expected_tool_order,
                strict_mode=s.strict_mode,
            )
        self._judge = judge
        # Content (prompts, answers, arguments) is kept only when something here reads it.
        keep_content = s.capture_content if s.capture_content is not None else (
            judge is not None or any(r.query_regex or r.expected_arguments for r in self.rules)
        )
        self._extract_options = ExtractOptions(
            max_chars=s.max_content_chars,
            capture_content=keep_content,
            max_calls_per_run=s.max_calls_per_run,
        )
        self.emitter = Emitter(
            meter_provider,
            logger_provider,
            events=s.events,
            metrics_enabled=s.metrics,
            max_metric_agents=s.max_metric_agents,
            declared_agents=[r.agent_name for r in self.rules if r.agent_name],
        )
        self._on_scored = on_scored
        self._table = TraceTable(s.max_pending_traces)
        # Scored runs waiting for the worker (event + metrics). Bounded; overflow is counted.
        self._emit_queue: deque[ScoredRun | tuple[str, str, int]] = deque()
        self._wake = threading.Event()
        self._stopped = False
        self._idle = threading.Condition()
        self._busy = 0
        self._worker = threading.Thread(target=self._run_worker, name="otel-toolscore-emitter", daemon=True)
        self._worker.start()
        if judge is not None:
            judge.bind(self.emitter)
        # Drain at exit before the providers shut down: atexit runs handlers last-in first-out, and
        # the providers registered theirs when they were created, before this processor.
        self._atexit = _register_drain(self)

    # -- SpanProcessor: start ---------------------------------------------------------------------
    def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
        try:
            self._start(span, parent_context)
        except Exception:  # never raise into the application
            self._drop("malformed_span")
        if self._downstream is not None:
            try:
                self._downstream.on_start(span, parent_context=parent_context)
            except Exception:
                self._drop("downstream_error")

    def _start(self, span: Span | ReadableSpan, parent_context: otel_context.Context | None) -> None:
        # ``context`` (not ``get_span_context()``): the scoring service replays decoded ReadableSpans.
        ctx = span.context
        if ctx is None:
            return
        trace_id = ctx.trace_id
        parent = span.parent
        local_root = parent is None or parent.is_remote
        shard = self._table.shard(trace_id)
        state = shard.traces.get(trace_id)
        span_id = _hex16(ctx.span_id)
        attrs = plain_attributes(span)
        role = classify_start(span.name, attrs)
        if state is None:
            if local_root and len(shard.local_roots) < self._table.max_local_roots:
                shard.local_roots[trace_id] = span_id
            if role is None:
                return
            state = self._new_state(trace_id, shard)
            if state is None:
                return
        elif local_root:
            state.local_root = state.local_root or span_id
        state.parents[span_id] = None if local_root or parent is None else _hex16(parent.span_id)
        state.open.add(span_id)
        if role == "agent" or role == "tool":
            # Kept (by reference) while open: a run nested in it (agent-as-tool), or the same agent's
            # inner span (OpenLLMetry's ``X.workflow``), ends first and must see what it is inside.
            state.started[span_id] = span
            if role == "agent":
                state.roots.add(span_id)
            elif not local_root:
                return
        elif not local_root:
            return
        # Capture the application's expectation where a run may start (context, attributes, baggage).
        exp = expectation_from_attributes(attrs)
        if exp is None:
            exp = current_expectation()
        bag = baggage.get_all(parent_context) if parent_context is not None else baggage.get_all()
        if exp is None and bag:
            exp = expectation_from_attributes(bag)
        if exp is not None:
            state.explicit[span_id] = exp
        if bag and names.ATTR_JUDGE_FLAG in bag:
            state.judge_flags[span_id] = str(bag[names.ATTR_JUDGE_FLAG])

    def _new_state(self, trace_id: int, shard: Any) -> TraceState | None:
        evicted: TraceState | None = None
        with shard.lock:
            state: TraceState | None = shard.traces.get(trace_id)
            if state is not None:
                return state
            if trace_id in shard.evicted:
                return None  # its runs were already counted as evicted
            if len(shard.traces) >= self._table.per_shard_limit:
                oldest = next(iter(shard.traces))
                evicted = shard.traces.pop(oldest)
            state = TraceState(trace_id=trace_id, created=time.monotonic())
            root = shard.local_roots.get(trace_id)
            if root is not None:
                state.local_root = root
                state.parents[root] = None
                state.open.add(root)
            shard.traces[trace_id] = state
        if evicted is not None:
            self._evict(evicted, "pending_traces_limit")
        else:
            self._signal(("pending", "", 1))
        return state

    # -- SpanProcessor: end -----------------------------------------------------------------------
    def on_end(self, span: ReadableSpan) -> None:
        forward: ReadableSpan | None = span
        try:
            forward = self._end(span)
        except Exception:
            _log.debug("otel-toolscore failed on a span", exc_info=True)
            self._drop("malformed_span")
        if forward is not None:
            self._forward(forward)

    def _forward(self, span: ReadableSpan) -> None:
        if self._downstream is None:
            return
        try:
            self._downstream.on_end(span)
        except Exception:
            self._drop("downstream_error")

    def _end(self, span: ReadableSpan) -> ReadableSpan | None:
        ctx = span.context
        if ctx is None:
            return span
        trace_id = ctx.trace_id
        shard = self._table.shard(trace_id)
        state = shard.traces.get(trace_id)
        span_id = _hex16(ctx.span_id)
        if state is None:
            if shard.local_roots.get(trace_id) == span_id:
                del shard.local_roots[trace_id]
            rec = record_from_readable(span)
            facts = read_span(rec, self._extract_options)
            if facts is None:
                return span
            # A GenAI span not recognisable at start (attributes set late): buffer from here on.
            if span.parent is not None and not span.parent.is_remote:
                late_parent: str | None = _hex16(span.parent.span_id)
            else:
                late_parent = None
            state = self._new_state(trace_id, shard)
            if state is None:
                self._drop("late_span")  # a span of an evicted trace
                return span
            state.parents[span_id] = late_parent
        else:
            if state.local_root == span_id and shard.local_roots.get(trace_id) == span_id:
                del shard.local_roots[trace_id]
            rec = record_from_readable(span)
            facts = read_span(rec, self._extract_options)
        state.open.discard(span_id)
        state.started.pop(span_id, None)
        if facts is not None:
            if len(state.facts) < self.settings.max_spans_per_trace:
                state.facts.append(facts)
            else:
                state.dropped_facts += 1
                self._drop("spans_per_trace_limit")
        forward: ReadableSpan | None = span
        is_root = (facts is not None and facts.role == "agent") or span_id == state.local_root
        if is_root:
            if span_id in state.scored:
                self._drop("late_span")
            elif self.settings.root_grace_ms > 0 and state.has_open_descendant(span_id):
                state.held[span_id] = HeldRoot(span, time.monotonic() + self.settings.root_grace_ms / 1000)
                forward = None
            else:
                forward = self._score_root(state, span_id, span)
        else:
            if facts is not None and state.scored and _under_any(state, span_id, state.scored):
                self._drop("late_span")  # its run was already scored without it
            if state.held:
                self._release_ready(state)
        if not state.open and not state.held:
            self._finish(state, shard)
        return forward

    def _release_ready(self, state: TraceState, force: bool = False) -> None:
        """Score and forward held roots whose descendants have all ended (or whose grace expired)."""
        now = time.monotonic()
        for span_id, held in list(state.held.items()):
            if force or now >= held.deadline or not state.has_open_descendant(span_id):
                if state.held.pop(span_id, None) is None:
                    continue  # another thread released it
                out = self._score_root(state, span_id, held.span)
                if out is not None:
                    self._forward(out)

    def _finish(self, state: TraceState, shard: Any) -> None:
        with shard.lock:
            if shard.traces.get(state.trace_id) is state:
                del shard.traces[state.trace_id]
            else:
                return
        self._signal(("pending", "", -1))

    # -- scoring ----------------------------------------------------------------------------------
    def _score_root(self, state: TraceState, span_id: str, span: ReadableSpan) -> ReadableSpan:
        """Assemble and score the run rooted at ``span_id``; the span to hand on (a copy with scores)."""
        if not self._claim(state, span_id):
            self._drop("late_span")  # its trace was evicted meanwhile: the run is counted as evicted
            return span
        try:
            facts = state.facts
            still_open = [sp for sid, sp in state.started.items() if sid in state.open]
            if still_open:
                facts = [*facts, *self._start_facts(still_open)]
            runs = assemble_runs(
                facts,
                state.parents,
                local_roots=(state.local_root,) if state.local_root else (),
                options=self._extract_options,
            )
        except Exception:
            _log.debug("otel-toolscore could not assemble a run", exc_info=True)
            self._signal(("run", "error", 1))
            return span
        out = span
        for run in runs:
            root = run.root_span_id
            if root == span_id:
                out = self._score_run(state, run, span) or span
            elif (
                root is not None
                and root in state.parents
                and root not in state.open
                and root not in state.scored
                and self._claim(state, root)
            ):
                # A run whose root was not recognisable as one when it ended (a graph's CHAIN root
                # under a tool span): its span has left, but its score still goes out as event and metric.
                self._score_run(state, run, None)
        return out

    def _claim(self, state: TraceState, root_id: str) -> bool:
        """Take the run rooted at ``root_id`` for scoring, once: scoring and eviction race for it."""
        with self._table.shard(state.trace_id).lock:
            if root_id in state.scored:
                return False
            state.scored.add(root_id)
            return True

    def _score_run(self, state: TraceState, run: AgentRun, span: ReadableSpan | None) -> ReadableSpan | None:
        """Score one assembled run; with its root ``span``, return the copy carrying the score."""
        root_id = run.root_span_id or ""
        if len(run.tool_calls) > self.settings.max_calls_per_run:
            self._drop("calls_per_run_limit", len(run.tool_calls) - self.settings.max_calls_per_run)
            run.tool_calls = run.tool_calls[: self.settings.max_calls_per_run]
        span_attrs = (span.attributes or {}) if span is not None else {}
        # run.attributes holds the root's short scalar attributes (extraction); baggage adds the
        # application's per-request flags that are not span attributes.
        flag = state.judge_flags.get(root_id)
        if flag is not None and names.ATTR_JUDGE_FLAG not in run.attributes:
            run.attributes[names.ATTR_JUDGE_FLAG] = flag
        explicit = state.explicit.get(root_id) if run.parent_run_id is None else None
        if explicit is None and span_attrs:
            explicit = expectation_from_attributes(span_attrs)
        expectation = resolve(run, self.rules, explicit=explicit, default=self.default_expectation)
        sampled = True
        if span is not None and span.context is not None:
            sampled = bool(span.context.trace_flags.sampled)
        ref = RunRef(
            trace_id=state.trace_id,
            span_id=int(root_id, 16),
            agent_name=run.agent_name,
            conversation_id=run.conversation_id,
            sampled=sampled,
        )
        verdict: CodeVerdict | None = None
        scorer: ToolCallAccuracyCodeScorer | None = None
        out = span
        if expectation is None:
            outcome = "no_expectation"
        elif not run.tool_calls and not _saw_model_output(state.facts):
            outcome = "no_tool_calls_visible"
        else:
            try:
                scorer = self._scorer(expectation)
                verdict = scorer.verdict(run)
                outcome = "scored"
            except Exception:
                _log.debug("otel-toolscore could not score a run", exc_info=True)
                outcome = "error"
            if verdict is not None and span is not None and self.settings.span_attributes:
                out = self._enriched(span, verdict)
        scored = ScoredRun(run, ref, outcome, verdict, expectation, scorer)
        self._enqueue(scored)
        if self._judge is not None:
            try:
                self._judge.offer(scored)
            except Exception:
                _log.debug("otel-toolscore judge offer failed", exc_info=True)
        return out

    def _start_facts(self, spans: list[Any]) -> list[SpanFacts]:
        """Facts of agent and tool spans still open, from what they said at start (names, mostly)."""
        out = []
        for sp in spans:
            f = read_span(record_from_readable(sp), self._extract_options)
            if f is not None and f.role in ("agent", "tool"):
                out.append(f)
        return out

    def _scorer(self, expectation: Expectation) -> ToolCallAccuracyCodeScorer:
        if self.settings.include_framework_calls:
            return expectation.scorer_with_framework_calls
        return expectation.scorer

    def _enriched(self, span: ReadableSpan, result: CodeVerdict) -> ReadableSpan:
        attrs = dict(span.attributes or {})
        attrs.update(
            code_score_attributes(result, max_tools=self.settings.max_attribute_tools, call_count=len(result.actual_tools))
        )
        if self.settings.openinference_annotations:
            attrs.update(
                openinference_annotation(
                    attrs,
                    name=names.EVAL_CODE,
                    score=result.score,
                    label=result.label,
                    explanation=result.summary(),
                    annotator_kind="CODE",
                )
            )
        return ReadableSpan(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=span.resource,
            attributes=attrs,
            events=span.events,
            links=span.links,
            kind=span.kind,
            status=span.status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )

    # -- the worker: events, metrics, held roots, timeouts ----------------------------------------
    def _drop(self, reason: str, amount: int = 1) -> None:
        self._signal(("drop", reason, amount))

    def _signal(self, item: tuple[str, str, int]) -> None:
        self._emit_queue.append(item)  # counters are tiny; never refused

    def _enqueue(self, scored: ScoredRun) -> None:
        if len(self._emit_queue) >= self.settings.emit_queue_size:
            self._emit_queue.append(("drop", "emit_queue_full", 1))
            return
        self._emit_queue.append(scored)
        # The worker polls every 50 ms; waking it per run would cost the span's thread a lock round trip.
        if len(self._emit_queue) >= _WAKE_AT:
            self._wake.set()

    def _run_worker(self) -> None:
        while True:
            self._wake.wait(timeout=0.05)
            self._wake.clear()
            with self._idle:
                self._busy += 1
            try:
                self._drain()
                self._sweep()
            except Exception:
                _log.debug("otel-toolscore worker error", exc_info=True)
            finally:
                with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()
            if self._stopped and not self._emit_queue:
                return

    def _drain(self) -> int:
        done = 0
        queue = self._emit_queue
        emitter = self.emitter
        # Counters are summed over the batch and added once per attribute set: a metric call per run
        # would be most of this thread's work (and it competes with the application for the GIL).
        runs: Counter[tuple[str, str | None]] = Counter()
        drops: Counter[str] = Counter()
        pending = 0
        token = otel_context.attach(otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            while queue:
                try:
                    item = queue.popleft()
                except IndexError:
                    break
                done += 1
                if isinstance(item, tuple):
                    kind, reason, amount = item
                    if kind == "drop":
                        drops[reason] += amount
                    elif kind == "pending":
                        pending += amount
                    elif kind == "run":
                        runs[(reason, None)] += amount
                    continue
                runs[(item.outcome, item.run.agent_name)] += 1
                self._emit_scored(item)
            for (outcome, agent), amount in runs.items():
                emitter.count_run(outcome, agent, amount)
            for reason, amount in drops.items():
                emitter.count_drop(reason, amount)
            emitter.pending_delta(pending)
        finally:
            otel_context.detach(token)
        return done

    def _emit_scored(self, scored: ScoredRun) -> None:
        result = scored.verdict
        if result is not None:
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
        if self._on_scored is not None:
            try:
                self._on_scored(scored)
            except Exception:
                _log.debug("otel-toolscore on_scored callback failed", exc_info=True)

    def _sweep(self, force: bool = False) -> None:
        """Release held roots past their grace; evict traces whose roots never ended."""
        now = time.monotonic()
        timeout = self.settings.trace_timeout_s
        for shard in self._table.shards:
            for state in list(shard.traces.values()):
                if state.held:
                    self._release_ready(state, force=force)
                    if not state.open and not state.held:
                        self._finish(state, shard)
                        continue
                if now - state.created > timeout:
                    with shard.lock:
                        if shard.traces.get(state.trace_id) is not state:
                            continue
                        del shard.traces[state.trace_id]
                    self._evict(state, "trace_timeout", pending_counted=True)
            if len(shard.local_roots) > self._table.max_local_roots // 2:
                shard.local_roots.clear()  # roots that never ended; they only bound hand-written loops

    def _evict(self, state: TraceState, reason: str, pending_counted: bool = False) -> None:
        """A trace leaves the buffer before its runs ended: count the runs lost, flush held roots."""
        self._release_ready(state, force=True)  # roots that ended: scored with what they have
        shard = self._table.shard(state.trace_id)
        with shard.lock:
            shard.evicted[state.trace_id] = None
            while len(shard.evicted) > self._table.max_local_roots:
                del shard.evicted[next(iter(shard.evicted))]
            lost = (state.roots | {f.span_id for f in state.facts if f.role == "agent"}) - state.scored
            state.scored |= lost  # a thread still finishing one of these runs now sees it as taken
        open_roots = len(lost)
        self._drop(reason)
        if open_roots:
            self._signal(("run", "evicted", open_roots))
        if pending_counted:
            self._signal(("pending", "", -1))
        # else: the evicted trace was counted as pending and the new one replaces it: no change.

    # -- lifecycle ----------------------------------------------------------------------------------
    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        ok = True
        try:
            for shard in self._table.shards:
                for state in list(shard.traces.values()):
                    if state.held:
                        self._release_ready(state, force=True)
            ok = self._wait_drained(deadline)
            if self._judge is not None:
                ok = self._judge.force_flush(max(0.0, deadline - time.monotonic())) and ok
                ok = self._wait_drained(deadline) and ok
            if self._downstream is not None:
                ok = self._flush_downstream(deadline) and ok
        except Exception:
            _log.debug("otel-toolscore force_flush failed", exc_info=True)
            return False
        return ok

    def _flush_downstream(self, deadline: float) -> bool:
        """``downstream.force_flush`` within our deadline, even when its exporter hangs."""
        downstream = self._downstream
        if downstream is None:
            return True
        remaining = max(0.0, deadline - time.monotonic())
        result: list[bool] = []

        def flush() -> None:
            try:
                result.append(bool(downstream.force_flush(int(remaining * 1000))))
            except Exception:
                result.append(False)

        # A BatchSpanProcessor whose exporter hangs blocks its own force_flush past the timeout it
        # is given; the caller's deadline is ours to keep.
        worker = threading.Thread(target=flush, name="otel-toolscore-flush", daemon=True)
        worker.start()
        worker.join(remaining)
        return bool(result and result[0])

    def _wait_drained(self, deadline: float) -> bool:
        self._wake.set()
        with self._idle:
            while self._emit_queue or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._wake.set()
                self._idle.wait(min(remaining, 0.05))
        return True

    def shutdown(self, timeout_millis: int = 30_000) -> None:
        """Score held roots, drain events and the judge, then shut the downstream down — all within
        one deadline (a hung exporter or judge cannot keep the process from exiting)."""
        if self._stopped:
            return
        deadline = time.monotonic() + timeout_millis / 1000
        try:
            self.force_flush(timeout_millis=int(timeout_millis * 0.5))
            if self._judge is not None:
                self._judge.shutdown(max(0.0, deadline - time.monotonic()) * 0.5)
                self._wait_drained(min(deadline, time.monotonic() + 2))
        except Exception:
            _log.debug("otel-toolscore shutdown failed", exc_info=True)
        self._stopped = True
        self._wake.set()
        self._worker.join(timeout=max(0.1, min(5.0, deadline - time.monotonic())))
        with contextlib.suppress(Exception):
            atexit.unregister(self._atexit)
        downstream = self._downstream
        if downstream is not None:

            def stop() -> None:
                try:
                    downstream.shutdown()
                except Exception:
                    _log.debug("downstream shutdown failed", exc_info=True)

            stopper = threading.Thread(target=stop, name="otel-toolscore-shutdown", daemon=True)
            stopper.start()
            stopper.join(max(0.0, deadline - time.monotonic()))

    # -- log records (GenAI <=1.36 events, event-only instrumentations) -------------------------------
    def add_log_facts(self, facts: SpanFacts) -> None:
        """Attach facts read from a log record to its trace's buffer (same runs as the spans)."""
        try:
            trace_id = int(facts.trace_id, 16)
        except (TypeError, ValueError):
            return
        shard = self._table.shard(trace_id)
        state = shard.traces.get(trace_id) or self._new_state(trace_id, shard)
        if state is None:
            return
        if len(state.facts) < self.settings.max_spans_per_trace:
            state.facts.append(facts)
        else:
            self._drop("spans_per_trace_limit")

    @property
    def extract_options(self) -> ExtractOptions:
        """How this processor reads spans and log records (content kept or not, limits)."""
        return self._extract_options

    @property
    def pending_traces(self) -> int:
        return len(self._table)

    @property
    def downstream(self) -> SpanProcessor | None:
        return self._downstream


def _under_any(state: TraceState, span_id: str, roots: set[str]) -> bool:
    cur = state.parents.get(span_id)
    for _ in range(10_000):
        if cur is None:
            return False
        if cur in roots:
            return True
        cur = state.parents.get(cur)
    return False


def _saw_model_output(facts: Iterable[SpanFacts]) -> bool:
    """Whether the trace shows what the model answered (even with content dropped) or any tool
    activity: then "no calls" is a real answer, scored 0, not a blind spot of the instrumentation."""
    return any(f.role == "tool" or f.requested or f.saw_output or f.final_output for f in facts)


def _register_drain(processor: ToolScoreSpanProcessor) -> Any:
    ref = weakref.ref(processor)

    def drain() -> None:
        p = ref()
        if p is not None and not p._stopped:
            p.force_flush(timeout_millis=5_000)

    atexit.register(drain)
    return drain


class ToolScoreLogRecordProcessor(LogRecordProcessor):
    """Feeds tool calls and content found in log events into the span processor's runs.

    Add it to the ``LoggerProvider`` before the exporting processor. It exports nothing itself.
    """

    def __init__(self, span_processor: ToolScoreSpanProcessor) -> None:
        self._span_processor = span_processor

    def on_emit(self, log_record: Any) -> None:
        try:
            facts = read_log(log_record, self._span_processor.extract_options)
            if facts is not None and facts.trace_id:
                self._span_processor.add_log_facts(facts)
        except Exception:
            self._span_processor._drop("malformed_span")

    emit = on_emit  # older SDKs call ``emit``

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True
