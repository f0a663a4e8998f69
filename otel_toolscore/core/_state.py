"""Per-trace state of the core, owned by the one thread that drives it (no locks).

The core keeps, per trace, the parent link and open/ended state of each span, the compact facts of
the spans that carry any, the context captured where a run may start, and the roots held while their
descendants are still open. Span ids are the 16-hex-digit strings the extractor uses (converted once,
when a span is first seen), so run assembly reads this state as it is. Every collection is bounded:
the number of traces, and per trace the open spans, the spans known and the facts kept (the caps are
:class:`~otel_toolscore.settings.Settings` fields; what exceeds them is counted by the core).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..expectations import Expectation
    from ..extract import SpanFacts

__all__ = ["HeldRoot", "StartContext", "TraceState", "TraceTable", "hex_id"]


def hex_id(value: int) -> str:
    """A span id as the extractor names it (16 lower-case hex digits)."""
    return "%016x" % value


class StartContext:
    """What the application said where a span started: ``expect()`` and ``toolscore.*`` baggage."""

    __slots__ = ("baggage", "expectation")

    def __init__(self, expectation: Expectation | None = None, baggage: dict[str, Any] | None = None) -> None:
        self.expectation = expectation
        self.baggage = baggage


class HeldRoot:
    """A run's root that ended: held while descendants are open (until ``deadline``), then ready.

    ``hand_on``: the span is the core's to hand on (the adapter left it to the core: it must leave
    exactly once, scored or not). ``order`` is its place in end order, which roots leave in.
    """

    __slots__ = ("deadline", "hand_on", "order", "sid", "span")

    def __init__(self, sid: str, span: Any, deadline: float, hand_on: bool, order: int) -> None:
        self.sid = sid
        self.span = span
        self.deadline = deadline
        self.hand_on = hand_on
        self.order = order


class TraceState:
    """One trace being watched; its collections are made with it (about 0.5 µs a trace, measured)."""

    __slots__ = (
        "agent_roots", "contexts", "created", "facts", "held", "hex", "local_roots", "maybe", "open", "parents",
        "ready", "scored", "started", "tool_spans", "trace_id",
    )

    def __init__(self, trace_id: int, created: float) -> None:
        self.trace_id = trace_id
        self.hex = "%032x" % trace_id
        self.created = created
        #: span id → parent span id (``None`` for a local root: no parent, or a remote one)
        self.parents: dict[str, str | None] = {}
        self.open: set[str] = set()
        self.local_roots: set[str] = set()
        self.facts: list[SpanFacts] = []
        #: context captured at start (local roots always; other spans when ``expect()`` was active)
        self.contexts: dict[str, StartContext] = {}
        self.held: dict[str, HeldRoot] = {}
        #: roots that ended and wait for the end of the batch to be scored (one assembly)
        self.ready: list[HeldRoot] = []
        #: open spans, by reference (read only if a run must be scored before they end)
        self.started: dict[str, Any] = {}
        #: run roots already scored or counted as lost
        self.scored: set[str] = set()
        #: agent roots seen: what eviction counts as lost runs
        self.agent_roots: set[str] = set()
        #: spans left to the core that root a run only if their parent is a tool span (a nested
        #: graph's root), as (span, place in end order): decided when the batch is settled
        self.maybe: dict[str, tuple[Any, int]] = {}
        #: spans whose facts (read at their end) name a tool call: what tells a nested graph's root
        #: (a maybe above) without a pass over every fact of the trace
        self.tool_spans: set[str] = set()

    def has_open_descendant(self, span_id: str) -> bool:
        """Whether a span still open lies under ``span_id``. O(spans known), cycle-safe: every span's
        verdict is memoised, so each parent link is followed at most once per call."""
        if not self.open:
            return False
        parents = self.parents
        verdict: dict[str, bool] = {span_id: True}
        for sid in self.open:
            if sid == span_id:
                continue
            path: list[str] = []
            on_path: set[str] = set()
            cur: str | None = sid
            found = False
            while cur is not None:
                known = verdict.get(cur)
                if known is not None:
                    found = known
                    break
                if cur in on_path:  # a cycle that does not pass through span_id
                    break
                path.append(cur)
                on_path.add(cur)
                cur = parents.get(cur)
            for p in path:
                verdict[p] = found
            if found:
                return True
        return False

    def under_scored(self, span_id: str) -> bool:
        """Whether a run above ``span_id`` was already scored (its span came too late for it)."""
        parents = self.parents
        seen: set[str] = set()
        cur = parents.get(span_id)
        while cur is not None and cur not in seen:
            if cur in self.scored:
                return True
            seen.add(cur)
            cur = parents.get(cur)
        return False


class TraceTable:
    """The traces being watched, oldest first; at most ``max_traces`` (exactly)."""

    def __init__(self, max_traces: int) -> None:
        self.max_traces = max_traces
        self.traces: OrderedDict[int, TraceState] = OrderedDict()
        # Traces evicted recently (oldest first), each with the roots its runs were counted under
        # (scored, or lost at the eviction): their later spans are late, never a second run.
        self.evicted: OrderedDict[int, set[str]] = OrderedDict()
        self.max_evicted = max(1024, max_traces * 4)

    def __len__(self) -> int:
        return len(self.traces)

    def get(self, trace_id: int) -> TraceState | None:
        return self.traces.get(trace_id)

    def was_evicted(self, trace_id: int) -> bool:
        return trace_id in self.evicted

    def add(self, state: TraceState) -> TraceState | None:
        """Add ``state``; returns the oldest trace it displaced when the table was full."""
        victim: TraceState | None = None
        if len(self.traces) >= self.max_traces:
            _, victim = self.traces.popitem(last=False)
        self.traces[state.trace_id] = state
        return victim

    def remove(self, trace_id: int) -> None:
        self.traces.pop(trace_id, None)

    def counted_roots(self, trace_id: int) -> set[str] | None:
        """The roots whose runs an evicted trace had counted; ``None`` for a trace not evicted."""
        return self.evicted.get(trace_id)

    def mark_evicted(self, trace_id: int, counted: set[str]) -> None:
        """``trace_id`` left the table; ``counted``: the roots its runs were counted under (kept
        by reference: the eviction adds the runs it counts as lost)."""
        self.evicted[trace_id] = counted
        while len(self.evicted) > self.max_evicted:
            self.evicted.popitem(last=False)

    def oldest(self) -> Iterator[TraceState]:
        """Traces oldest first; safe to remove the yielded trace while iterating."""
        while self.traces:
            first = next(iter(self.traces.values()))
            yield first
            if self.traces and next(iter(self.traces)) == first.trace_id:
                return  # the caller kept it: stop
