"""The live pipeline's worker side: span starts and ends in, scored runs and enriched roots out.

Everything here runs on the processor's worker thread, never on the application's: reading span
facts, assembling runs, resolving expectations (rules and their regexes included), code scoring and
building the root copy that carries the score. The application's threads only queue span starts
and ends (:mod:`.processor`). Because one thread owns all per-trace state, there are no locks, and
the caps are exact.

Outputs go through a :class:`CoreSink`: the span to hand on downstream, scored runs (events,
metrics, the judge, callbacks — each behind its own bounded queue), and counts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from opentelemetry.sdk.trace import ReadableSpan

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
from ..extract.fast_read import read_live_span
from ..extract.readers import may_have_facts
from ..extract.records import has_events, plain_attributes
from ..model import AgentRun
from ..scorers.code import CodeScoreResult, CodeVerdict, ToolCallAccuracyCodeScorer
from ..telemetry import RunRef, code_score_attributes, names, openinference_annotation
from .expectations import Expectation, expectation_from_attributes, load_rules, resolve
from .traces import HeldRoot, HexLinks, StartContext, TraceState, TraceTable, hex_id

__all__ = ["CoreSink", "LiveCore", "ScoredRun", "core_expectations", "core_options", "may_root_a_run"]

_log = logging.getLogger(__name__)


class ScoredRun:
    """A run and its code score. ``verdict`` is ``None`` when the run was not code-scored.

    ``result`` (the full, Mastra-shaped :class:`CodeScoreResult`) is built on first access, off the
    span's thread: the pipeline itself only computes the verdict.
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


class CoreSink(Protocol):
    """Where the core's outputs go (implemented by the processor)."""

    def forward(self, span: ReadableSpan) -> None: ...

    def scored(self, run: ScoredRun) -> None: ...

    def count_run(self, outcome: str, agent_name: str | None, amount: int = 1) -> None: ...

    def drop(self, reason: str, amount: int = 1) -> None: ...

    def pending_delta(self, delta: int) -> None: ...


def may_root_a_run(span: ReadableSpan) -> bool:
    """Whether an ended ``span`` may be a run's root — a local root, or an agent span by the table of
    keys: such a span is handed on by the core (with the score when there is one), any other at once."""
    parent = span.parent
    if parent is None or parent.is_remote:
        return True
    return classify_start(span.name, plain_attributes(span)) == "agent"


def core_expectations(
    settings: Settings, expectations: Sequence[Expectation] | str | Path | None
) -> tuple[list[Expectation], Expectation | None]:
    """The rules (given, or ``settings.rules``; a path is a rules file) and the default expectation
    (from ``settings.expected_tool`` / ``expected_tool_order``) a core scores with."""
    if expectations is None and settings.rules:
        expectations = settings.rules
    rules = load_rules(expectations) if isinstance(expectations, (str, Path)) else list(expectations or ())
    default: Expectation | None = None
    if settings.expected_tool or settings.expected_tool_order:
        default = Expectation(
            name="default",
            expected_tool=settings.expected_tool,
            expected_tool_order=settings.expected_tool_order,
            strict_mode=settings.strict_mode,
        )
    return rules, default


def core_options(settings: Settings, rules: Sequence[Expectation], judging: bool) -> ExtractOptions:
    """How a core reads spans. Content (prompts, answers, arguments) is kept only when something
    reads it: the setting, else a judge or a rule that looks at the query or the arguments."""
    keep = settings.capture_content if settings.capture_content is not None else (
        judging or any(r.query_regex or r.expected_arguments for r in rules)
    )
    return ExtractOptions(
        max_chars=settings.max_content_chars,
        capture_content=keep,
        max_calls_per_run=settings.max_calls_per_run,
        max_parse_chars=settings.max_parse_chars,
    )


class LiveCore:
    """Per-trace state machine of the live pipeline (one instance, driven by one thread)."""

    def __init__(
        self,
        settings: Settings,
        *,
        rules: Sequence[Expectation],
        default: Expectation | None,
        options: ExtractOptions,
        sink: CoreSink,
    ) -> None:
        self.settings = settings
        self.rules = list(rules)
        self.default = default
        self.options = options
        self.sink = sink
        self.table = TraceTable(settings.max_pending_traces)
        self._grace = settings.root_grace_ms / 1000
        self._max_open = settings.max_open_spans_per_trace
        self._max_known = settings.max_known_spans_per_trace
        self._max_facts = settings.max_spans_per_trace
        self._timeout = settings.trace_timeout_ms / 1000
        #: traces with a held root (what the sweep looks at besides timeouts)
        self._holding: dict[int, TraceState] = {}
        #: traces with roots ready to be scored at the end of the current batch
        self._dirty: dict[int, TraceState] = {}

    # -- trace bookkeeping ----------------------------------------------------------------------
    def _state(self, trace_id: int) -> TraceState | None:
        state = self.table.get(trace_id)
        if state is not None:
            return state
        if self.table.was_evicted(trace_id):
            return None
        state = TraceState(trace_id=trace_id, created=time.monotonic())
        victim = self.table.add(state)
        if victim is not None:
            self._evict(victim, "pending_traces_limit")
        else:
            self.sink.pending_delta(1)
        return state

    def _link(self, state: TraceState, span_id: int, parent_id: int | None) -> None:
        parents = state.parents
        if span_id in parents:
            return
        if len(parents) < self._max_known:
            parents[span_id] = parent_id
        else:
            self.sink.drop("known_spans_limit")

    # -- inputs ---------------------------------------------------------------------------------
    def start(self, span: Any, context: StartContext | None) -> None:
        ctx = span.context
        if ctx is None:
            return
        state = self._state(ctx.trace_id)
        if state is None:
            return  # a span of an evicted trace: counted when it ends
        sid = ctx.span_id
        parent = span.parent
        local = parent is None or parent.is_remote
        self._link(state, sid, None if local else parent.span_id)
        if local:
            state.local_roots.add(sid)
        if len(state.open) < self._max_open:
            state.open.add(sid)
            # Kept by reference while open (the application holds it anyway): a run whose grace
            # ends before this span does is scored with what the span said so far, and an open
            # agent span is a run lost if its trace is evicted. Read only then, never here.
            state.started[sid] = span
        else:
            self.sink.drop("open_spans_limit")
        if context is not None:
            if len(state.contexts) < self._max_open:
                state.contexts[sid] = context
            else:
                self.sink.drop("open_spans_limit")

    def end(self, span: ReadableSpan, forward: bool) -> None:
        """A span ended. ``forward``: the application's thread left handing it on to us."""
        ctx = span.context
        if ctx is None:
            if forward:
                self.sink.forward(span)
            return
        trace_id = ctx.trace_id
        sid = ctx.span_id
        state = self.table.get(trace_id)
        if state is None:
            if self.table.was_evicted(trace_id):
                if forward or read_span(record_from_readable(span), self.options) is not None:
                    self.sink.drop("late_span")
                if forward:
                    self.sink.forward(span)
                return
            state = self._state(trace_id)  # its start was not seen (queue full, processor added late)
            if state is None:  # pragma: no cover - _state returns None only for evicted traces
                if forward:
                    self.sink.forward(span)
                return
        else:
            state.open.discard(sid)
            state.started.pop(sid, None)
        if sid not in state.parents:
            parent = span.parent
            local = parent is None or parent.is_remote
            self._link(state, sid, None if local or parent is None else parent.span_id)
            if local:
                state.local_roots.add(sid)
        try:
            facts = read_live_span(span, self.options)  # a scalar GenAI span: one table lookup
            if facts is None and may_have_facts(span.name, plain_attributes(span), has_events(span)):
                facts = read_span(record_from_readable(span), self.options)
            # else: an HTTP, database, queue … span: only its parent link matters
        except Exception:
            _log.debug("otel-toolscore could not read a span", exc_info=True)
            self.sink.drop("malformed_span")
            facts = None
        if facts is not None:
            if len(state.facts) < self._max_facts:
                state.facts.append(facts)
                if facts.role == "agent":
                    state.agent_roots.add(facts.span_id)
            else:
                self.sink.drop("spans_per_trace_limit")
        is_root = forward or sid in state.local_roots or (facts is not None and facts.role == "agent")
        if is_root:
            try:
                self._root_ended(state, sid, span, forward)
            except Exception:
                _log.debug("otel-toolscore could not score a root", exc_info=True)
                self.sink.count_run("error", None)
                if forward and sid not in state.held:
                    self.sink.forward(span)
        elif facts is not None and state.scored and self._under_scored(state, sid):
            self.sink.drop("late_span")  # its run was already scored without it
        if state.held:
            self._release_ready(state)
        if not state.open and not state.held and not state.ready:
            self._finish(state)

    def log(self, record: Any) -> None:
        """A log record (GenAI <= 1.36 events, event-only instrumentations) joins its trace's facts;
        ``record`` is a log view or SDK record, or facts already read from one."""
        facts = record if isinstance(record, SpanFacts) else read_log(record, self.options)
        if facts is None or not facts.trace_id:
            return
        try:
            trace_id = int(facts.trace_id, 16)
        except ValueError:
            return
        state = self._state(trace_id)
        if state is None:
            self.sink.drop("late_span")
            return
        if len(state.facts) < self._max_facts:
            state.facts.append(facts)
        else:
            self.sink.drop("spans_per_trace_limit")

    # -- roots ----------------------------------------------------------------------------------
    def _root_ended(self, state: TraceState, sid: int, span: ReadableSpan, forward: bool) -> None:
        hid = hex_id(sid)
        if hid in state.scored:
            self.sink.drop("late_span")
            if forward:
                self.sink.forward(span)
            return
        if not state.facts:
            if forward:
                self.sink.forward(span)  # nothing GenAI in this trace: nothing to score
            return
        if self._grace > 0 and state.has_open_descendant(sid):
            state.held[sid] = HeldRoot(span, time.monotonic() + self._grace, forward)
            self._holding[state.trace_id] = state
            return
        self._make_ready(state, sid, span, forward)

    def _make_ready(self, state: TraceState, sid: int, span: ReadableSpan, forward: bool) -> None:
        """Queue a root for scoring at the end of the current batch: however many roots of a trace
        end in one batch, the trace is assembled once."""
        state.scored.add(hex_id(sid))  # taken: eviction and late spans see it as scored
        state.ready.append(HeldRoot(span, 0.0, forward))
        self._dirty[state.trace_id] = state

    def settle(self) -> None:
        """Score the roots that ended since the last call (one assembly per trace), hand them on."""
        while self._dirty:
            _, state = self._dirty.popitem()
            self._score_ready(state)
            if not state.open and not state.held:
                self._finish(state)

    def _score_ready(self, state: TraceState) -> None:
        ready, state.ready = state.ready, []
        if not ready:
            return
        try:
            outs = self._score_roots(state, {hex_id(r.span.context.span_id): r.span for r in ready})
        except Exception:
            _log.debug("otel-toolscore could not score a trace", exc_info=True)
            self.sink.count_run("error", None, len(ready))
            outs = {}
        for r in ready:
            if r.forward:
                self.sink.forward(outs.get(hex_id(r.span.context.span_id), r.span))

    def _release_ready(self, state: TraceState, force: bool = False) -> None:
        """Queue held roots whose descendants have all ended (or whose grace is over) for scoring."""
        now = time.monotonic()
        for sid, held in list(state.held.items()):
            if force or now >= held.deadline or not state.has_open_descendant(sid):
                del state.held[sid]
                self._make_ready(state, sid, held.span, held.forward)

    def _under_scored(self, state: TraceState, sid: int) -> bool:
        parents = state.parents
        seen: set[int] = set()
        cur = parents.get(sid)
        while cur is not None and cur not in seen:
            if hex_id(cur) in state.scored:
                return True
            seen.add(cur)
            cur = parents.get(cur)
        return False

    def _finish(self, state: TraceState) -> None:
        self._holding.pop(state.trace_id, None)
        self._dirty.pop(state.trace_id, None)
        if self.table.get(state.trace_id) is state:
            self.table.remove(state.trace_id)
            self.sink.pending_delta(-1)

    def _evict(self, state: TraceState, reason: str) -> None:
        """A trace leaves before its runs ended: roots that ended are scored with what they have,
        runs still open are counted as lost."""
        self.table.mark_evicted(state.trace_id)
        self._holding.pop(state.trace_id, None)
        if state.held:
            self._release_ready(state, force=True)
        self._dirty.pop(state.trace_id, None)
        self._score_ready(state)  # the trace leaves now: its ended roots are scored with what it has
        lost = (state.agent_roots | self._open_agents(state)) - state.scored
        state.scored |= lost
        self.sink.drop(reason)
        if lost:
            self.sink.count_run("evicted", None, len(lost))

    def sweep(self, force: bool = False) -> None:
        """Release held roots past their grace (all of them with ``force``); evict traces past the timeout."""
        for state in list(self._holding.values()):
            self._release_ready(state, force=force)
            if not state.held:
                self._holding.pop(state.trace_id, None)
        self.settle()
        # the table is in creation order: the timed-out traces are its oldest
        expired = time.monotonic() - self._timeout
        for state in self.table.oldest():
            if state.created > expired:
                break
            self.table.remove(state.trace_id)
            self._evict(state, "trace_timeout")
            self.sink.pending_delta(-1)

    # -- scoring --------------------------------------------------------------------------------
    def _score_roots(self, state: TraceState, spans: dict[str, ReadableSpan]) -> dict[str, ReadableSpan]:
        """Assemble the trace once and score the runs rooted at ``spans`` (hex id → ended root span);
        the spans to hand on (copies carrying the score), by root."""
        outs: dict[str, ReadableSpan] = {}
        try:
            parents = HexLinks(state.parents)
            facts = state.facts
            if state.started:
                facts = [*facts, *self._open_facts(state)]
            runs = assemble_runs(
                facts,
                parents,
                local_roots=[hex_id(r) for r in state.local_roots],
                options=self.options,
            )
        except Exception:
            _log.debug("otel-toolscore could not assemble a run", exc_info=True)
            self.sink.count_run("error", None, len(spans))
            return outs
        for f in facts:
            if f.dropped_calls:  # calls past max_calls_per_run in one message: counted once
                self.sink.drop("calls_per_run_limit", f.dropped_calls)
                f.dropped_calls = 0
            if f.unparsed:  # content too long to parse (its JSON would hold the interpreter lock)
                self.sink.drop("content_too_large", f.unparsed)
                f.unparsed = 0
        run_roots = {r.root_span_id for r in runs if r.root_span_id}
        for run in runs:
            root = run.root_span_id
            span = spans.get(root) if root is not None else None
            if span is not None:
                outs[root] = self._score_run(state, run, span, run_roots, parents) or span  # type: ignore[index]
            elif root is not None and root not in state.scored and root in parents:
                root_int = int(root, 16)
                if root_int in state.open or root_int in state.held:
                    continue
                # A run whose root was not recognisable as one when it ended (a graph's CHAIN root
                # under a tool span): its span has left, but its score still goes out as event and metric.
                state.scored.add(root)
                self._score_run(state, run, None, run_roots, parents)
        return outs

    def _open_facts(self, state: TraceState) -> list[SpanFacts]:
        """Facts of agent and tool spans still open, from what they said so far."""
        out = []
        for _sid, sp in _open_of_role(state, ("agent", "tool")):
            try:
                f = read_span(record_from_readable(sp), self.options)
            except Exception:
                continue
            if f is not None and f.role in ("agent", "tool"):
                out.append(f)
        return out

    @staticmethod
    def _open_agents(state: TraceState) -> set[str]:
        """Agent spans still open (hex ids): runs that never ended."""
        return {hex_id(sid) for sid, _sp in _open_of_role(state, ("agent",))}

    def _score_run(
        self,
        state: TraceState,
        run: AgentRun,
        span: ReadableSpan | None,
        run_roots: set[str],
        parents: Mapping[str, str | None],
    ) -> ReadableSpan | None:
        """Score one assembled run; with its root ``span``, return the copy carrying the score."""
        root_id = run.root_span_id or ""
        limit = self.settings.max_calls_per_run
        if len(run.tool_calls) > limit:
            self.sink.drop("calls_per_run_limit", len(run.tool_calls) - limit)
            run.tool_calls = run.tool_calls[:limit]
        span_attrs = plain_attributes(span) if span is not None else {}  # no proxy: absent keys are probed
        explicit, bag = self._application_word(state, run, span_attrs, run_roots, parents)
        if bag:
            flag = bag.get(names.ATTR_JUDGE_FLAG)
            if flag is not None and names.ATTR_JUDGE_FLAG not in run.attributes:
                run.attributes[names.ATTR_JUDGE_FLAG] = str(flag)
        try:
            expectation = resolve(run, self.rules, explicit=explicit, default=self.default)
        except Exception:
            _log.debug("otel-toolscore could not match rules", exc_info=True)
            expectation = None
        sampled = True
        if span is not None and span.context is not None:
            sampled = bool(span.context.trace_flags.sampled)
        ref = RunRef(
            trace_id=state.trace_id,
            span_id=int(root_id, 16) if root_id else 0,
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
        self.sink.count_run(outcome, run.agent_name)
        self.sink.scored(ScoredRun(run, ref, outcome, verdict, expectation, scorer))
        return out

    def _application_word(
        self,
        state: TraceState,
        run: AgentRun,
        span_attrs: Any,
        run_roots: set[str],
        parents: Mapping[str, str | None],
    ) -> tuple[Expectation | None, dict[str, Any] | None]:
        """The expectation the application gave this run (attributes → ``expect()`` → baggage), and
        the ``toolscore.*`` baggage in force where it started.

        ``expect()`` applies to the run(s) started inside the block that are top-level within it: a
        run whose enclosing run started inside the same block is left to the rules. When a run's root
        started outside the block (a hand-written loop's span, a graph root), the block opened inside
        the run, directly (not in a nested run), applies.
        """
        root_hex = run.root_span_id
        if root_hex is None:
            return None, None
        root = int(root_hex, 16)
        contexts = state.contexts
        # baggage: captured at local roots; the one in force at (or above) the run's root
        bag: dict[str, Any] | None = None
        cur: int | None = root
        seen: set[int] = set()
        while cur is not None and cur not in seen:
            ctx = contexts.get(cur)
            if ctx is not None and ctx.baggage:
                bag = ctx.baggage
                break
            seen.add(cur)
            cur = state.parents.get(cur)
        explicit = expectation_from_attributes(span_attrs) if span_attrs else None
        if explicit is None:
            own = contexts.get(root)
            exp = own.expectation if own is not None else None
            if exp is not None:
                parent_root = run.parent_run_id
                if parent_root is not None:
                    outer = contexts.get(int(parent_root, 16))
                    if outer is not None and outer.expectation is exp:
                        exp = None  # the block encloses the outer run too: it is that run's word
            elif run.parent_run_id is None:
                exp = self._expectation_inside(state, root_hex, run_roots, parents)
            explicit = exp
        if explicit is None and bag:
            explicit = expectation_from_attributes(bag)
        return explicit, bag

    def _expectation_inside(
        self, state: TraceState, root_hex: str, run_roots: set[str], parents: Mapping[str, str | None]
    ) -> Expectation | None:
        """The ``expect()`` block opened inside the run (not inside a nested run), earliest first.

        Contexts are kept in start order, so the first that belongs to the run is the earliest. Each
        span's owning run is memoised: every parent link is followed once, however deep the trace.
        """
        owner_of: dict[str, str | None] = {}
        for sid, ctx in state.contexts.items():
            if ctx.expectation is None:
                continue
            path: list[str] = []
            on_path: set[str] = set()
            cur: str | None = hex_id(sid)
            owner: str | None = None
            while cur is not None and cur not in on_path:
                if cur in owner_of:
                    owner = owner_of[cur]
                    break
                if cur in run_roots:
                    owner = cur
                    break
                path.append(cur)
                on_path.add(cur)
                cur = parents.get(cur)
            for node in path:
                owner_of[node] = owner
            if owner == root_hex:
                return ctx.expectation
        return None

    def _scorer(self, expectation: Expectation) -> ToolCallAccuracyCodeScorer:
        if self.settings.include_framework_calls:
            return expectation.scorer_with_framework_calls
        return expectation.scorer

    def _enriched(self, span: ReadableSpan, result: CodeVerdict) -> ReadableSpan:
        attrs = dict(plain_attributes(span))  # a C-level copy (the public proxy iterates in Python)
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


def _saw_model_output(facts: Iterable[SpanFacts]) -> bool:
    """Whether the trace shows what the model answered (even with content dropped) or any tool
    activity: then "no calls" is a real answer, scored 0, not a blind spot of the instrumentation."""
    return any(f.role == "tool" or f.requested or f.saw_output or f.final_output for f in facts)


def _open_of_role(state: TraceState, roles: tuple[str, ...]) -> Iterator[tuple[int, Any]]:
    """(span id, span) of the spans still open whose start classifies them as one of ``roles``."""
    for sid, sp in state.started.items():
        try:
            role = classify_start(sp.name, plain_attributes(sp))
        except Exception:  # odd attribute values (a list where a string belongs)
            continue
        if role in roles:
            yield sid, sp
