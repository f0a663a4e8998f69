"""Grouping the offline reader's facts by trace: when a trace is complete, its assembly into runs,
and the stitching of a hand-written loop that left one trace per model call (see :mod:`._sources`).

A span's facts are made compact as it is read (its content parsed and truncated), except a model
span's input — the request and the history, the longest content of a long run and the most often
unused — which waits as the span's own strings until a run needs it (``materialize(defer_inputs=True)``).

Reports are the caller's (:class:`SourceCounts`: the counters of one source); runs come out as
``(first-seen position, index in trace, run)`` so the caller may restore input order.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar

from ..model import AgentRun
from ..run_records import RunRecord
from ._assemble import assemble_records
from ._content import requested_calls
from ._facts import ExtractOptions, InSpan, SpanFacts
from ._otlp_views import OtlpSpan, read_view
from ._readers import read_log, read_span
from ._records import SpanRecord

__all__ = ["PROGRESS_EVERY", "Collector", "SourceCounts", "stitch"]

#: A progress callback hears about a source every this many spans/log records (a power of two minus one: a mask).
PROGRESS_EVERY = 1023


class SourceCounts(Protocol):
    """The counters of one source the collector keeps (:class:`~._sources.SourceReport`)."""

    source: str
    spans_read: int
    logs_read: int
    spans_with_facts: int
    logs_with_facts: int
    unknown_convention_spans: int
    unattached_logs: int
    late_records: int

    def problem(self, message: str) -> None: ...


R = TypeVar("R", bound=SourceCounts)


class Collector(Generic[R]):
    """Facts grouped by trace, assembled into runs as traces complete (see the module docstring).

    ``sources``: the reports of the sources read so far (a failed assembly with no report of its own
    is told to the first); ``trace_sources``: trace id → the source its first record came from,
    filled as records arrive (only traces with facts stay named)."""

    def __init__(self, options: ExtractOptions, sources: Sequence[R], trace_sources: dict[str, str],
                 idle_records: int, max_open: int, progress: Callable[[R, bool], None] | None = None) -> None:
        self.options = options
        self.progress = progress
        self.sources = sources
        self.trace_sources = trace_sources
        self.idle = max(0, idle_records)
        self.max_open = max(1, max_open)
        self.facts: dict[str, list[SpanFacts]] = {}
        self.parents: dict[str, dict[str, str | None]] = {}
        #: trace id → the source report of each of its facts (in the order of ``facts``)
        self.fact_reports: dict[str, list[R]] = {}
        self.rooted: set[str] = set()
        #: trace id → record count when it was last seen, least recently seen first
        self.last_seen: OrderedDict[str, int] = OrderedDict()
        #: trace id → position of its first record in the input (extract_runs keeps input order)
        self.first_seen: dict[str, int] = {}
        self.records = 0
        #: the latest run of a hand-written loop that left one trace per model call (see stitch)
        self.loop: tuple[int, RunRecord] | None = None
        self.traces_done = 0
        self.runs_out = 0
        self._next_check = 0
        #: traces already assembled (bounded): a record of one of them arrived too late
        self.done: OrderedDict[str, None] = OrderedDict()
        #: the per-record counts of the source being read, written into its report by :meth:`sync`
        #: (the reports are pydantic models: an attribute write costs several times a plain one, too
        #: much to pay twice for every span read)
        self._counting: R | None = None
        self._spans_read = self._spans_with_facts = self._unknown_spans = 0
        self._logs_read = self._logs_with_facts = self._unattached_logs = 0

    def sync(self) -> None:
        """Write the counts held for the source being read into its report: before every progress
        call, before runs are handed out (:meth:`complete`, :meth:`finish`) and when a file is done."""
        report = self._counting
        if report is None:
            return
        if self._spans_read:
            report.spans_read += self._spans_read
            report.spans_with_facts += self._spans_with_facts
            report.unknown_convention_spans += self._unknown_spans
            self._spans_read = self._spans_with_facts = self._unknown_spans = 0
        if self._logs_read:
            report.logs_read += self._logs_read
            report.logs_with_facts += self._logs_with_facts
            report.unattached_logs += self._unattached_logs
            self._logs_read = self._logs_with_facts = self._unattached_logs = 0

    def _counts_for(self, report: R) -> None:
        """Counts from here on are ``report``'s (those held for another source are written first)."""
        self.sync()
        self._counting = report

    def _late(self, trace_id: str, report: R) -> bool:
        if trace_id in self.done:
            report.late_records += 1  # its runs were already yielded: raise idle_records
            return True
        return False

    def _touch(self, trace_id: str, report: R) -> None:
        self.records += 1
        if trace_id not in self.first_seen:
            self.first_seen[trace_id] = self.records
            self.trace_sources.setdefault(trace_id, report.source)
        self.last_seen[trace_id] = self.records
        self.last_seen.move_to_end(trace_id)

    def span(self, item: OtlpSpan | SpanRecord, report: R) -> None:
        """One span: a view of a decoded one (read by the table-driven readers first, as the service
        reads it), or a record (live SDK spans, records given by the caller)."""
        if report is not self._counting:
            self._counts_for(report)
        self._spans_read += 1
        if self.progress is not None and not (report.spans_read + self._spans_read) & PROGRESS_EVERY:
            self.sync()
            self.progress(report, False)
        view = type(item) is OtlpSpan or isinstance(item, OtlpSpan)
        if view:
            trace_id, span_id, parent_id = item.trace_hex, item.span_hex, item.parent_hex  # type: ignore[union-attr]
        else:
            trace_id, span_id, parent_id = item.trace_id, item.span_id, item.parent_span_id  # type: ignore[union-attr]
        if self.done and self._late(trace_id, report):
            return
        self._touch(trace_id, report)
        parents = self.parents.get(trace_id)
        if parents is None:
            parents = self.parents[trace_id] = {}
        parents[span_id] = parent_id
        if parent_id is None:
            self.rooted.add(trace_id)
        try:
            if view:
                f = read_view(item, self.options, (trace_id, span_id, parent_id))  # type: ignore[arg-type]
            else:
                f = read_span(item, self.options)  # type: ignore[arg-type]
        except Exception as exc:  # a reader must never stop the file
            name = item.name
            report.problem(f"span {span_id} ({name!r}): reader failed: {type(exc).__name__}: {exc}")
            return
        if f is None:
            self._unknown_spans += 1
            return
        self._spans_with_facts += 1
        # compact now (content truncated): a pending trace holds no raw content but the model's
        # input (the request and history: its own strings, bounded by max_deferred_chars per span),
        # parsed only for a run that needs it (see materialize)
        f.materialize(self.options, defer_inputs=True)
        if f.holder is not None and not _reads_span(f.deferred):
            f.holder = None  # nothing left to read from the span: the trace holds its facts alone
        self._add(trace_id, f, report)

    def _add(self, trace_id: str, f: SpanFacts, report: R) -> None:
        """``f`` joins its trace, with the report of the source it came from."""
        held = self.facts.get(trace_id)
        if held is None:
            self.facts[trace_id] = [f]
            self.fact_reports[trace_id] = [report]
        else:
            held.append(f)
            self.fact_reports[trace_id].append(report)

    def log(self, view: Any, report: R) -> None:
        if report is not self._counting:
            self._counts_for(report)
        self._logs_read += 1
        if self.progress is not None and not (report.logs_read + self._logs_read) & PROGRESS_EVERY:
            self.sync()
            self.progress(report, False)
        try:
            f = read_log(view, self.options)
        except Exception as exc:
            report.problem(f"log record: reader failed: {type(exc).__name__}: {exc}")
            return
        if f is None:
            return
        if not f.trace_id or not f.span_id:
            self._unattached_logs += 1
            return
        if self.done and self._late(f.trace_id, report):
            return
        self._logs_with_facts += 1
        f.materialize(self.options)
        self._touch(f.trace_id, report)
        self._add(f.trace_id, f, report)

    def complete(self) -> Iterator[tuple[int, int, AgentRun]]:
        """Runs of the traces complete so far: (first-seen position, index in trace, run).

        Looked at every ``idle_records / 16`` records (the idle traces are the least recently seen,
        at the front). A trace whose root never came is assembled after four times the wait."""
        self.sync()
        last_seen = self.last_seen
        if self.records < self._next_check and len(last_seen) <= self.max_open:
            return
        self._next_check = self.records + max(1, self.idle // 16)
        ready: list[str] = []
        for trace_id, seen in last_seen.items():
            age = self.records - seen
            if age < self.idle:
                break
            if trace_id in self.rooted or age >= 4 * self.idle:
                ready.append(trace_id)
        ready.sort(key=lambda t: self.first_seen.get(t, 0))  # input order (hand-written loops join in it)
        for trace_id in ready:
            yield from self._assemble(trace_id)
        while len(last_seen) > self.max_open:
            yield from self._assemble(next(iter(last_seen)))

    def finish(self) -> Iterator[tuple[int, int, AgentRun]]:
        """Every trace still open, then the held loop run (end of input)."""
        self.sync()
        for trace_id in sorted(self.last_seen, key=lambda t: self.first_seen.get(t, 0)):  # input order
            yield from self._assemble(trace_id)
        if self.loop is not None:
            pos, run = self.loop
            self.loop = None
            self.runs_out += 1
            yield pos, 0, run.to_model()

    def _assemble(self, trace_id: str) -> Iterator[tuple[int, int, AgentRun]]:
        self.last_seen.pop(trace_id, None)
        self.done[trace_id] = None
        if len(self.done) > 4 * self.max_open:
            self.done.popitem(last=False)
        self.rooted.discard(trace_id)
        parents = self.parents.pop(trace_id, {})
        facts = self.facts.pop(trace_id, None)
        reports: list[R | None] = self.fact_reports.pop(trace_id, [])  # type: ignore[assignment]
        pos = self.first_seen.pop(trace_id, 0)
        if not facts:
            self.trace_sources.pop(trace_id, None)  # only traces with facts are named
            return
        self.traces_done += 1
        try:
            trace_runs = assemble_records(facts, parents, options=self.options)
        except Exception as exc:
            src = reports[0] or (self.sources[0] if self.sources else None)
            if src is not None:
                src.problem(f"trace {trace_id}: assembly failed: {type(exc).__name__}: {exc}")
            return
        for f, src in zip(facts, reports):
            if f.problems and src is not None:
                for p in f.problems:
                    src.problem(p)
        loops = [self.loop[1]] if self.loop is not None else []
        if stitch(trace_runs, facts, loops, self.options):
            return  # merged into the held loop run
        if len(loops) == 2 or (len(loops) == 1 and self.loop is None):
            # a new loop run: the previous one can no longer be continued (only the latest can)
            previous = self.loop
            self.loop = (pos, loops[-1])
            if previous is not None:
                self.runs_out += 1
                yield previous[0], 0, previous[1].to_model()
            return
        for i, run in enumerate(trace_runs):
            self.runs_out += 1
            yield pos, i, run.to_model()


def _reads_span(deferred: Sequence[tuple[Any, Any]]) -> bool:
    """Whether input content left for later waits in the span it was read from (a loop, not
    ``any()`` of a generator: this runs for every span read)."""
    for _, value in deferred:  # noqa: SIM110
        if type(value) is InSpan:
            return True
    return False


def stitch(trace_runs: list[RunRecord], facts: list[SpanFacts], loops: list[RunRecord], options: ExtractOptions) -> bool:
    """Join a hand-written tool loop that left one trace per model call (no enclosing span).

    A trace whose only run has no agent (a bare model call) continues the latest such run when its
    input replays a tool call that run requested (same call id), or, when that run reported no
    calls at all (its output was not recorded, e.g. a streamed answer logged outside the span), when
    it repeats the same user request and replays calls: those calls are then the earlier run's.
    Returns True when the trace was merged into an earlier run.
    """
    if len(trace_runs) != 1 or trace_runs[0].agent_name is not None or trace_runs[0].parent_run_id is not None:
        return False
    if any(f.role == "agent" for f in facts):
        return False
    for f in facts:
        f.materialize_inputs(options)  # what the model was given tells which run this trace continues
    run = trace_runs[0]
    history = set().union(*(f.history_ids for f in facts))
    replayed = [raw for f in facts for raw in f.history_calls]
    if loops:
        earlier = loops[-1]
        requested = {c.call_id for c in earlier.tool_calls if c.call_id}
        same_request = bool(run.user_query) and run.user_query == earlier.user_query
        if history & requested or (not earlier.tool_calls and same_request and replayed):
            if not earlier.tool_calls:
                holder = next(f for f in facts)
                results: dict[str, tuple[Any, str | None]] = {}
                for f in facts:
                    results.update(f.results)
                for req in requested_calls(holder, replayed, options):
                    req.span_id = None
                    res = results.get(req.call_id or "")
                    if res is not None:
                        req.result = res[0] if options.capture_content else None
                        if res[1]:
                            req.status, req.error_type = "error", res[1]
                    earlier.tool_calls.append(req.to_call())
                requested = {c.call_id for c in earlier.tool_calls if c.call_id}
            earlier.tool_calls.extend(c for c in run.tool_calls if not c.call_id or c.call_id not in requested)
            earlier.final_output = run.final_output or earlier.final_output
            earlier.user_query = earlier.user_query or run.user_query
            if not earlier.available_tools:
                earlier.available_tools = run.available_tools
            earlier.conventions.extend(c for c in run.conventions if c not in earlier.conventions)
            return True
    loops.append(run)
    return False
