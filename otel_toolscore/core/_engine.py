"""The core: span starts and ends in; spans to hand on, scored runs and counts out.

One :class:`Core` turns a stream of span starts and ends (and log facts) into scored runs, whoever
feeds it: the span processor's worker thread, the scoring service's scorer thread. It reads each
ended span's facts (through the adapter's :class:`~._sources.SpanSource`), keeps per trace the parent
links, the open spans, the facts and the context captured at start — each bounded and counted — and
when roots end it assembles the trace (once per batch, however many roots ended), resolves
expectations, scores, and releases the root with the attributes its score adds.

Data leaves in one direction: every call that can release something adds it to the core's
:class:`Release`, and :meth:`Core.take` hands it to the adapter — the spans to hand on (in the order
they ended, each with the score attributes to add, or none), the scored runs (for events, metrics,
sinks, callbacks, the judge) and the counts made since. The core calls nothing outside itself.
One thread drives a core at a time (the adapter's lock or thread ownership); there are no locks here.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from .._scored import ScoredRun
from ..expectations import Expectation, expectation_from_attributes, resolve
from ..extract import ExtractOptions, SpanFacts, read_log
from ..extract._assemble import assemble_records
from ..extract._frameworks import traces_every_tool_call
from ..run_records import RunRecord
from ..scorers.code import CodeVerdict, ToolCallAccuracyCodeScorer
from ..settings import Settings
from ..telemetry import RunRef, code_score_attributes, names, openinference_annotation
from ..telemetry._attributes import MAX_EXPLANATION_CHARS, cut_text
from ._sources import BARE_START, SpanSource
from ._state import HeldRoot, StartContext, TraceState, TraceTable

__all__ = ["CONTEXT", "END", "HOLD", "LOG", "START", "Core", "Release"]

_log = logging.getLogger(__name__)

#: Kinds of items :meth:`Core.feed` takes: ``(START, span, context)``, ``(END, span)`` (the adapter
#: handed the span on itself), ``(HOLD, span)`` (the span may root a run: the core hands it on),
#: ``(LOG, record_or_facts)`` and ``(CONTEXT, span, context)`` (the context captured where a span
#: started whose end follows in the same batch: the adapter sends that instead of its start). A bare
#: span, no tuple, is a ``START`` with no context when it is of the class
#: :data:`~._sources.BARE_START`, an ``END`` otherwise: the span processor queues them so, with no
#: allocation per span on the application's thread.
START, END, HOLD, LOG, CONTEXT = 0, 1, 2, 3, 4


class Release:
    """What the core released since the adapter last took it (:meth:`Core.take`)."""

    __slots__ = ("drops", "runs", "runs_counted", "spans")

    def __init__(self) -> None:
        #: (span, score attributes to add or ``None``), in the order the spans ended
        self.spans: list[tuple[Any, dict[str, Any] | None]] = []
        self.runs: list[ScoredRun] = []
        #: runs by (outcome, agent name)
        self.runs_counted: Counter[tuple[str, str | None]] = Counter()
        #: what was dropped, by reason
        self.drops: Counter[str] = Counter()

    def __bool__(self) -> bool:
        return bool(self.spans or self.runs or self.runs_counted or self.drops)


class Core:
    """Per-trace state machine turning spans into scored runs (see the module docstring).

    Args:
        settings: the limits (pending traces, spans per trace, open spans, calls per run, grace,
            timeout) and what the score attributes hold.
        rules, default: the expectation rules, and the default expectation for runs none matches.
        options: how spans are read (content kept or not, limits).
        source: how the adapter's span objects are read.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        rules: Sequence[Expectation],
        default: Expectation | None,
        options: ExtractOptions,
        source: SpanSource,
    ) -> None:
        self.settings = settings
        self.rules = list(rules)
        self.default = default
        self.options = options
        self.source = source
        self.table = TraceTable(settings.max_pending_traces)
        self._grace = settings.root_grace_ms / 1000
        self._max_open = settings.max_open_spans_per_trace
        self._max_known = settings.max_known_spans_per_trace
        self._max_facts = settings.max_spans_per_trace
        self._max_calls = settings.max_calls_per_run
        self._max_name = settings.max_name_chars
        self._timeout = settings.trace_timeout_ms / 1000
        #: traces with a held root (what the sweep looks at besides timeouts)
        self._holding: dict[int, TraceState] = {}
        #: traces with roots ready to be scored at the end of the current batch, in the order they
        #: became ready
        self._dirty: dict[int, TraceState] = {}
        #: traces left with nothing open, held or ready in the current batch (done at its end)
        self._quiet: dict[int, TraceState] = {}
        #: traces with spans that root a run only under a tool span (see _settle_maybes)
        self._maybes: dict[int, TraceState] = {}
        self._ended = 0  # spans ended so far: the order roots are handed on in
        self._out = Release()
        self._out_order: list[int] = []
        self._sorted = True

    # -- the adapter's side ---------------------------------------------------------------------
    def take(self) -> Release:
        """What was released since the last call: spans to hand on (in end order), runs, counts."""
        out = self._out
        if not self._sorted and out.spans:
            order = self._out_order
            ranked = sorted(range(len(out.spans)), key=order.__getitem__)
            out.spans = [out.spans[i] for i in ranked]
        self._out = Release()
        self._out_order = []
        self._sorted = True
        return out

    def feed(self, items: Sequence[Any]) -> Release:
        """Run queued starts, ends and log records through the core, score the roots that ended
        (:meth:`settle`), and return what was released (:meth:`take`).

        A span that starts and ends within ``items`` is never open when its trace is scored (roots
        are scored once the whole batch is in): the adapter, which knows which of its span objects
        match, sends no ``START`` for it — only a ``CONTEXT`` item when its start captured one — and
        its end does the rest: most spans cost the core one step, not two. (A ``START`` whose end
        follows in the batch still works, at the cost of both steps.)"""
        for item in items:
            bare = type(item) is not tuple  # the span processor queues spans bare (no tuple each)
            if not bare:
                kind, span = item[0], item[1]
            elif type(item) is BARE_START:  # a start that captured nothing
                kind, span = START, item
            else:  # an end
                kind, span = END, item
            try:
                if kind in (END, HOLD):
                    self.end(span, kind == HOLD)
                elif kind == START:
                    self.start(span, None if bare else item[2])
                elif kind == CONTEXT:
                    self._context_only(span, item[2])
                else:
                    self.log(span)
            except Exception:
                _log.debug("otel-toolscore failed on a span", exc_info=True)
                self.drop("malformed_span")
                if kind == HOLD:
                    self._hand_on(span, None)
        self.settle()
        return self.take()

    def drop(self, reason: str, amount: int = 1) -> None:
        """Count ``amount`` items dropped for ``reason`` (the adapter's own refusals too)."""
        self._out.drops[reason] += amount

    def count_run(self, outcome: str, agent_name: str | None, amount: int = 1) -> None:
        self._out.runs_counted[(outcome, agent_name)] += amount

    def _hand_on(self, span: Any, attrs: dict[str, Any] | None, order: int | None = None) -> None:
        if order is None:
            order = self._ended
        out = self._out_order
        if out and order < out[-1]:
            self._sorted = False
        out.append(order)
        self._out.spans.append((span, attrs))

    # -- trace bookkeeping ----------------------------------------------------------------------
    def _state(self, trace_id: int) -> TraceState | None:
        state = self.table.get(trace_id)
        if state is not None:
            return state
        if self.table.was_evicted(trace_id):
            return None
        state = TraceState(trace_id, time.monotonic())
        victim = self.table.add(state)
        if victim is not None:
            self._evict(victim, "pending_traces_limit")
        return state

    def _link(self, state: TraceState, sid: str, parent: str | None, local: bool) -> None:
        parents = state.parents
        if len(parents) < self._max_known:
            parents[sid] = None if local else parent
        else:
            self.drop("known_spans_limit")

    # -- inputs ---------------------------------------------------------------------------------
    def start(self, span: Any, context: StartContext | None) -> None:
        ids = self.source.ids(span)
        if ids is None:
            return
        trace_id, sid, parent, local = ids
        state = self.table.traces.get(trace_id) or self._state(trace_id)
        if state is None:
            return  # a span of an evicted trace: counted when it ends
        if sid not in state.parents:
            self._link(state, sid, parent, local)
        if local:
            state.local_roots.add(sid)
        if len(state.open) < self._max_open:
            state.open.add(sid)
            # Kept by reference while open (the application holds it anyway): a run whose grace
            # ends before this span does is scored with what the span said so far, and an open
            # agent span is a run lost if its trace is evicted. Read only then, never here.
            state.started[sid] = span
        else:
            self.drop("open_spans_limit")
        if context is not None:
            if len(state.contexts) < self._max_open:
                state.contexts[sid] = context
            else:
                self.drop("open_spans_limit")

    def _context_only(self, span: Any, context: StartContext) -> None:
        """The context captured where a span started, for a span whose end follows in the batch."""
        ids = self.source.ids(span)
        if ids is None:
            return
        state = self.table.traces.get(ids[0]) or self._state(ids[0])
        if state is None:
            return
        if len(state.contexts) < self._max_open:
            state.contexts[ids[1]] = context
        else:
            self.drop("open_spans_limit")

    def end(self, span: Any, hand_on: bool) -> None:
        """A span ended. ``hand_on``: the adapter left handing it on to the core."""
        self._ended += 1
        ids = self.source.ids(span)
        if ids is None:
            if hand_on:
                self._hand_on(span, None)
            return
        trace_id, sid, parent, local = ids
        state = self.table.traces.get(trace_id)
        if state is None:
            counted = self.table.counted_roots(trace_id)
            if counted is not None:
                self._late_end(span, sid, counted, hand_on)
                return
            state = self._state(trace_id)  # its start was not seen (queue full, processor added late)
            if state is None:  # pragma: no cover - _state returns None only for evicted traces
                if hand_on:
                    self._hand_on(span, None)
                return
        elif state.open:
            state.open.discard(sid)
            state.started.pop(sid, None)
        if sid not in state.parents:
            self._link(state, sid, parent, local)
            if local:
                state.local_roots.add(sid)
        try:
            facts = self.source.read(span, self.options, (state.hex, sid, parent))
        except Exception:
            _log.debug("otel-toolscore could not read a span", exc_info=True)
            self.drop("malformed_span")
            facts = None
        if facts is not None:
            if len(state.facts) < self._max_facts:
                state.facts.append(facts)
                role = facts.role
                if role == "agent":
                    state.agent_roots.add(sid)
                elif role == "tool":
                    state.tool_spans.add(sid)
            else:
                self.drop("spans_per_trace_limit")
        if (
            hand_on
            and facts is not None
            and facts.role == "other"
            and sid not in state.local_roots
            and "openinference" in facts.conventions
        ):
            # the root of a graph run as a tool, if its parent is a tool span: told at settle()
            state.maybe[sid] = (span, self._ended)
            self._maybes[trace_id] = state
            return
        is_root = hand_on or sid in state.local_roots or (facts is not None and facts.role == "agent")
        if is_root:
            try:
                self._root_ended(state, sid, span, hand_on)
            except Exception:
                _log.debug("otel-toolscore could not score a root", exc_info=True)
                self.count_run("error", None)
                if hand_on and sid not in state.held:
                    self._hand_on(span, None)
        elif facts is not None and state.scored and state.under_scored(sid):
            self.drop("late_span")  # its run was already scored without it
        if state.held:
            self._release_ready(state)
        if not state.open and not state.held and not state.ready:
            # finished when the batch is (settle): a span of it whose start this batch skipped may follow
            self._quiet[state.trace_id] = state

    def lost_root(self, span: Any) -> None:
        """A span that may root a run ended but never reached the core (the adapter's queue was
        full): its run is counted as ``dropped`` — when its trace shows agent activity — and its trace
        no longer waits for it."""
        ids = self.source.ids(span)
        if ids is None:
            return
        trace_id, sid, _parent, _local = ids
        state = self.table.get(trace_id)
        if state is None:
            # nothing of its trace reached the core either: a run when the root itself shows one
            try:
                facts = self.source.read(span, self.options)
            except Exception:
                facts = None
            if facts is not None:
                self.count_run("dropped", None)
            return
        state.open.discard(sid)
        opened = state.started.pop(sid, None)
        if sid in state.scored:
            return
        state.scored.add(sid)
        was_agent = opened is not None and _role_at_start(self.source, opened) == "agent"
        if was_agent or state.facts:
            self.count_run("dropped", None)
        if state.held:
            self._release_ready(state)
        if not state.open and not state.held and not state.ready:
            self._quiet[state.trace_id] = state
        self.settle()

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
            self.drop("late_span")
            return
        if len(state.facts) < self._max_facts:
            state.facts.append(facts)
        else:
            self.drop("spans_per_trace_limit")

    # -- roots ----------------------------------------------------------------------------------
    def _root_ended(self, state: TraceState, sid: str, span: Any, hand_on: bool) -> None:
        if sid in state.scored:
            self.drop("late_span")
            if hand_on:
                self._hand_on(span, None)
            return
        if not state.facts:
            if hand_on:
                self._hand_on(span, None)  # nothing GenAI in this trace: nothing to score
            return
        if self._grace > 0 and state.has_open_descendant(sid):
            state.held[sid] = HeldRoot(sid, span, time.monotonic() + self._grace, hand_on, self._ended)
            self._holding[state.trace_id] = state
            return
        self._make_ready(state, HeldRoot(sid, span, 0.0, hand_on, self._ended))

    def _make_ready(self, state: TraceState, root: HeldRoot) -> None:
        """Queue a root for scoring at the end of the current batch: however many roots of a trace
        end in one batch, the trace is assembled once."""
        state.scored.add(root.sid)  # taken: eviction and late spans see it as scored
        state.ready.append(root)
        self._dirty[state.trace_id] = state

    def settle(self) -> None:
        """Score the roots that ended since the last call (one assembly per trace), in the order
        their traces became ready; their spans are released in the order they ended. Traces with
        nothing open, held or ready any more are done."""
        if self._maybes:
            self._settle_maybes()
        dirty = self._dirty
        while dirty:
            trace_id = next(iter(dirty))
            state = dirty.pop(trace_id)
            self._score_ready(state)
            if not state.open and not state.held:
                self._finish(state)
        quiet = self._quiet
        if quiet:
            for state in quiet.values():
                if not state.open and not state.held and not state.ready:
                    self._finish(state)
            quiet.clear()

    def _settle_maybes(self) -> None:
        """Spans left to the core that root a run only under a tool span (what the assembler calls
        a nested graph's root): roots when their parent is a tool span (ended, or still open),
        handed on unchanged otherwise."""
        maybes, self._maybes = self._maybes, {}
        for state in maybes.values():
            held, state.maybe = state.maybe, {}
            tools = state.tool_spans
            parents = state.parents
            started = state.started
            for sid, (span, order) in held.items():
                parent = parents.get(sid)
                is_tool = False
                if parent is not None:
                    # a parent that ended was read (its facts name a tool or not); one still open is
                    # judged by what it said at start
                    is_tool = parent in tools or (
                        parent in started and _role_at_start(self.source, started[parent]) == "tool"
                    )
                if is_tool:
                    try:
                        self._root_ended(state, sid, span, True)
                        continue
                    except Exception:
                        _log.debug("otel-toolscore could not score a root", exc_info=True)
                        self.count_run("error", None)
                        if sid in state.held:
                            continue
                self._hand_on(span, None, order)
            if not state.open and not state.held and not state.ready:
                self._quiet[state.trace_id] = state

    def _score_ready(self, state: TraceState) -> None:
        ready, state.ready = state.ready, []
        if not ready:
            return
        try:
            outs = self._score_roots(state, {r.sid: r.span for r in ready})
        except Exception:
            _log.debug("otel-toolscore could not score a trace", exc_info=True)
            self.count_run("error", None, len(ready))
            outs = {}
        for r in ready:
            if r.hand_on:
                self._hand_on(r.span, outs.get(r.sid), r.order)

    def _release_ready(self, state: TraceState, force: bool = False) -> None:
        """Queue held roots whose descendants have all ended (or whose grace is over) for scoring."""
        now = time.monotonic()
        for sid, held in list(state.held.items()):
            if force or now >= held.deadline or not state.has_open_descendant(sid):
                del state.held[sid]
                self._make_ready(state, held)

    def _finish(self, state: TraceState) -> None:
        self._holding.pop(state.trace_id, None)
        self._dirty.pop(state.trace_id, None)
        if self.table.get(state.trace_id) is state:
            self.table.remove(state.trace_id)

    def _evict(self, state: TraceState, reason: str) -> None:
        """A trace leaves before its runs ended: roots that ended are scored with what they have,
        runs still open are counted as lost."""
        self.table.mark_evicted(state.trace_id, state.scored)
        self._holding.pop(state.trace_id, None)
        if state.maybe:
            self._maybes.pop(state.trace_id, None)
            for span, order in state.maybe.values():
                self._hand_on(span, None, order)
            state.maybe = {}
        if state.held:
            self._release_ready(state, force=True)
        self._dirty.pop(state.trace_id, None)
        self._score_ready(state)  # the trace leaves now: its ended roots are scored with what it has
        lost = (state.agent_roots | self._open_agents(state)) - state.scored
        state.scored |= lost
        self.drop(reason)
        if lost:
            self.count_run("evicted", None, len(lost))

    def _late_end(self, span: Any, sid: str, counted: set[str], hand_on: bool) -> None:
        """A span of an evicted trace ended. An agent span whose run the eviction could not see — its
        start skipped because its end was in the same batch — is a run lost to the eviction, counted
        now (once: ``counted`` holds the roots already counted)."""
        try:
            facts = self.source.read(span, self.options)
        except Exception:
            facts = None
        if hand_on or facts is not None:
            self.drop("late_span")
        if facts is not None and facts.role == "agent" and sid not in counted:
            counted.add(sid)
            self.count_run("evicted", None)
        if hand_on:
            self._hand_on(span, None)

    def sweep(self, force: bool = False) -> Release:
        """Release held roots past their grace (all of them with ``force``), evict traces past the
        timeout; what that released."""
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
        return self.take()

    # -- scoring --------------------------------------------------------------------------------
    def _score_roots(self, state: TraceState, spans: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
        """Assemble the trace once and score the runs rooted at ``spans`` (span id → ended root);
        the score attributes each root's span gains."""
        outs: dict[str, dict[str, Any] | None] = {}
        facts: list[SpanFacts] = state.facts
        try:
            if state.started:
                facts = [*facts, *self._open_facts(state)]
            runs = assemble_records(facts, state.parents, local_roots=state.local_roots, options=self.options)
        except Exception:
            _log.debug("otel-toolscore could not assemble a run", exc_info=True)
            self.count_run("error", None, len(spans))
            return outs
        for f in facts:
            if f.plain:
                continue  # read without content: nothing dropped or left unparsed
            if f.dropped_calls:  # calls past max_calls_per_run in one message: counted once
                self.drop("calls_per_run_limit", f.dropped_calls)
                f.dropped_calls = 0
            if f.unparsed:  # content too long to parse (its JSON would hold the interpreter lock)
                self.drop("content_too_large", f.unparsed)
                f.unparsed = 0
        run_roots = {r.root_span_id for r in runs if r.root_span_id}
        for run in runs:
            root = run.root_span_id
            if root is None:
                continue
            if root in spans:
                outs[root] = self._score_run(state, run, spans[root], run_roots)
            elif root not in state.scored and root in state.parents:
                if root in state.open or root in state.held:
                    continue
                # A run whose root was not recognisable as one when it ended (a graph's CHAIN root
                # under a tool span): its span has left, but its score still goes out as event and metric.
                state.scored.add(root)
                self._score_run(state, run, None, run_roots)
        return outs

    def _open_facts(self, state: TraceState) -> list[SpanFacts]:
        """Facts of agent and tool spans still open, from what they said so far."""
        out = []
        for _sid, sp in self._open_of_role(state, ("agent", "tool")):
            try:
                f = self.source.read(sp, self.options)
            except Exception:
                continue
            if f is not None and f.role in ("agent", "tool"):
                out.append(f)
        return out

    def _open_agents(self, state: TraceState) -> set[str]:
        """Agent spans still open: runs that never ended."""
        return {sid for sid, _sp in self._open_of_role(state, ("agent",))}

    def _open_of_role(self, state: TraceState, roles: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
        """(span id, span) of the spans still open whose start classifies them as one of ``roles``."""
        for sid, sp in state.started.items():
            try:
                role = self.source.role_at_start(sp)
            except Exception:  # odd attribute values (a list where a string belongs)
                continue
            if role in roles:
                yield sid, sp

    def _score_run(self, state: TraceState, run: RunRecord, span: Any, run_roots: set[str]) -> dict[str, Any] | None:
        """Score one assembled run; with its root ``span``, the score attributes the root gains."""
        root_id = run.root_span_id or ""
        limit = self._max_calls
        if len(run.tool_calls) > limit:
            self.drop("calls_per_run_limit", len(run.tool_calls) - limit)
            run.tool_calls = run.tool_calls[:limit]
        # no proxy: absent keys are probed
        span_attrs: Mapping[str, Any] = self.source.attributes(span) if span is not None else {}
        explicit, bag = self._application_word(state, run, span_attrs, run_roots)
        if bag:
            flag = bag.get(names.ATTR_JUDGE_FLAG)
            if flag is not None and names.ATTR_JUDGE_FLAG not in run.attributes:
                run.attributes[names.ATTR_JUDGE_FLAG] = str(flag)
        try:
            expectation = resolve(run, self.rules, explicit=explicit, default=self.default)  # type: ignore[arg-type]
        except Exception:
            _log.debug("otel-toolscore could not match rules", exc_info=True)
            expectation = None
        agent_name = self._bounded_name(run.agent_name)  # names from data reach metrics, events, sinks
        ref = RunRef(
            state.trace_id,
            int(root_id, 16) if root_id else 0,
            agent_name,
            self._bounded_name(run.conversation_id),
            self.source.sampled(span) if span is not None else True,
        )
        verdict: CodeVerdict | None = None
        scorer: ToolCallAccuracyCodeScorer | None = None
        added: dict[str, Any] | None = None
        if expectation is None:
            outcome = "no_expectation"
        elif not run.tool_calls and not _saw_model_output(state.facts) and not (
            span is not None
            and traces_every_tool_call(run.conventions)
            and any(f.role == "llm" for f in state.facts)
        ):
            # A framework that traces every tool it runs: model spans and no tool span = no call. Said
            # of a run whose root the core holds; a nested run found only when its trace is assembled
            # (its root span already left, unscored) is not credited with calling nothing.
            outcome = "no_tool_calls_visible"
        else:
            try:
                scorer = self._scorer(expectation)
                verdict = scorer.verdict(run)  # type: ignore[arg-type]
                outcome = "scored"
            except Exception:
                _log.debug("otel-toolscore could not score a run", exc_info=True)
                outcome = "error"
            if verdict is not None and span is not None and self.settings.span_attributes:
                added = self._score_attributes(span_attrs, verdict)
        self.count_run(outcome, agent_name)
        self._out.runs.append(ScoredRun(run, ref, outcome, verdict, expectation, scorer))
        return added

    def _application_word(
        self, state: TraceState, run: RunRecord, span_attrs: Mapping[str, Any], run_roots: set[str]
    ) -> tuple[Expectation | None, dict[str, Any] | None]:
        """The expectation the application gave this run (attributes → ``expect()`` → baggage), and
        the ``toolscore.*`` baggage in force where it started.

        ``expect()`` applies to the run(s) started inside the block that are top-level within it: a
        run whose enclosing run started inside the same block is left to the rules. When a run's root
        started outside the block (a hand-written loop's span, a graph root), the block opened inside
        the run, directly (not in a nested run), applies.
        """
        root = run.root_span_id
        if root is None:
            return None, None
        contexts = state.contexts
        # baggage: captured at local roots; the one in force at (or above) the run's root
        bag: dict[str, Any] | None = None
        if contexts:
            cur: str | None = root
            seen: set[str] = set()
            while cur is not None and cur not in seen:
                ctx = contexts.get(cur)
                if ctx is not None and ctx.baggage:
                    bag = ctx.baggage
                    break
                seen.add(cur)
                cur = state.parents.get(cur)
        explicit = expectation_from_attributes(span_attrs) if span_attrs else None
        if explicit is None and contexts:
            own = contexts.get(root)
            exp = own.expectation if own is not None else None
            if exp is not None:
                parent_root = run.parent_run_id
                if parent_root is not None:
                    outer = contexts.get(parent_root)
                    if outer is not None and outer.expectation is exp:
                        exp = None  # the block encloses the outer run too: it is that run's word
            elif run.parent_run_id is None:
                exp = self._expectation_inside(state, root, run_roots)
            explicit = exp
        if explicit is None and bag:
            explicit = expectation_from_attributes(bag)
        return explicit, bag

    @staticmethod
    def _expectation_inside(state: TraceState, root: str, run_roots: set[str]) -> Expectation | None:
        """The ``expect()`` block opened inside the run (not inside a nested run), earliest first.

        Contexts are kept in start order, so the first that belongs to the run is the earliest. Each
        span's owning run is memoised: every parent link is followed once, however deep the trace.
        """
        parents = state.parents
        owner_of: dict[str, str | None] = {}
        for sid, ctx in state.contexts.items():
            if ctx.expectation is None:
                continue
            path: list[str] = []
            on_path: set[str] = set()
            cur: str | None = sid
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
            if owner == root:
                return ctx.expectation
        return None

    def _bounded_name(self, name: str | None) -> str | None:
        """``name`` cut to ``max_name_chars`` (counted as ``name_too_long``)."""
        if name is None or len(name) <= self._max_name:
            return name
        self.drop("name_too_long")
        return cut_text(name, self._max_name)

    def _scorer(self, expectation: Expectation) -> ToolCallAccuracyCodeScorer:
        if self.settings.include_framework_calls:
            return expectation.scorer_with_framework_calls
        return expectation.scorer

    def _score_attributes(self, existing: Mapping[str, Any], result: CodeVerdict) -> dict[str, Any]:
        """The attributes the root's span gains: ``toolscore.code.*`` and, unless turned off, an
        OpenInference annotation at the first index the span does not use."""
        s = self.settings
        limit = self._max_name
        shown = result.actual_tools[: s.max_attribute_tools]
        if shown and max(map(len, shown)) > limit:  # C-level: the usual run has no long name
            self.drop("name_too_long", sum(1 for t in shown if len(t) > limit))
        attrs = code_score_attributes(
            result, max_tools=s.max_attribute_tools, call_count=len(result.actual_tools), max_name_chars=limit
        )
        if s.openinference_annotations:
            explanation = result.summary()
            if len(explanation) > MAX_EXPLANATION_CHARS:
                self.drop("explanation_too_long")
                explanation = cut_text(explanation, MAX_EXPLANATION_CHARS)
            attrs.update(
                openinference_annotation(
                    existing,
                    name=names.EVAL_CODE,
                    score=result.score,
                    label=result.label,
                    explanation=explanation,
                    annotator_kind="CODE",
                )
            )
        return attrs


def _role_at_start(source: SpanSource, span: Any) -> str | None:
    try:
        return source.role_at_start(span)
    except Exception:
        return None


def _saw_model_output(facts: Iterable[SpanFacts]) -> bool:
    """Whether the trace shows what the model answered (even with content dropped) or any tool
    activity: then "no calls" is a real answer, scored 0, not a blind spot of the instrumentation."""
    return any(f.role == "tool" or f.requested or f.saw_output or f.final_output for f in facts)
