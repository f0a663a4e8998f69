"""Per-trace state of the live pipeline, owned by its worker thread alone (no locks).

The application's threads never touch this module: they hand span starts and ends to the worker
(:mod:`.processor`), which keeps, per trace, the parent link and open/ended state of each span, the
compact facts of the GenAI spans, the context captured where a run may start, and the roots held
while their descendants are still open. Every collection here is bounded: the number of traces, and
per trace the open spans, the spans known and the facts kept (the caps live in
:class:`~otel_toolscore.config.Settings`; what exceeds them is counted by the caller).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ..extract import SpanFacts
    from .expectations import Expectation

__all__ = ["HeldRoot", "HexLinks", "StartContext", "TraceState", "TraceTable", "hex_id"]


def hex_id(value: int) -> str:
    """A span id as the extractor names it (16 lower-case hex digits)."""
    return format(value, "016x")


class HexLinks(Mapping[str, "str | None"]):
    """A trace's parent links (integer ids) seen with the extractor's hex ids, converted on access.

    The one-run lane of the assembler asks for a few links per span; only the general rules walk
    them all, and then they are converted once.
    """

    __slots__ = ("_all", "_links")

    def __init__(self, links: dict[int, int | None]) -> None:
        self._links = links
        self._all: dict[str, str | None] | None = None

    def _key(self, key: object) -> int | None:
        if not isinstance(key, str):
            return None
        try:
            return int(key, 16)
        except ValueError:
            return None

    def __contains__(self, key: object) -> bool:
        k = self._key(key)
        return k is not None and k in self._links

    def __getitem__(self, key: str) -> str | None:
        k = self._key(key)
        if k is None or k not in self._links:
            raise KeyError(key)
        parent = self._links[k]
        return format(parent, "016x") if parent is not None else None

    def _converted(self) -> dict[str, str | None]:
        if self._all is None:
            self._all = {hex_id(k): (hex_id(v) if v is not None else None) for k, v in self._links.items()}
        return self._all

    def __iter__(self) -> Iterator[str]:
        return iter(self._converted())

    def __len__(self) -> int:
        return len(self._links)


@dataclass(slots=True)
class StartContext:
    """What the application said where a span started: ``expect()`` and ``toolscore.*`` baggage."""

    expectation: Expectation | None = None
    baggage: dict[str, Any] | None = None


@dataclass(slots=True)
class HeldRoot:
    """A run's root that ended while descendants were open; scored when they end or at ``deadline``.

    ``forward``: the application's thread left forwarding this span to the worker (it must leave
    exactly once, scored or not).
    """

    span: ReadableSpan
    deadline: float
    forward: bool


@dataclass(slots=True)
class TraceState:
    """One trace being watched. Span ids are the SDK's integers; hex only where the extractor needs it."""

    trace_id: int
    created: float
    #: span id → parent span id (``None`` for a local root: no parent, or a remote one)
    parents: dict[int, int | None] = field(default_factory=dict)
    open: set[int] = field(default_factory=set)
    local_roots: set[int] = field(default_factory=set)
    facts: list[SpanFacts] = field(default_factory=list)
    #: context captured at start (local roots always; other spans when ``expect()`` was active)
    contexts: dict[int, StartContext] = field(default_factory=dict)
    held: dict[int, HeldRoot] = field(default_factory=dict)
    #: roots that ended and wait for the end of the worker's batch to be scored (one assembly)
    ready: list[HeldRoot] = field(default_factory=list)
    #: open agent/tool spans, by reference (read only if a run must be scored before they end)
    started: dict[int, Any] = field(default_factory=dict)
    #: run roots (hex ids) already scored or counted as lost
    scored: set[str] = field(default_factory=set)
    #: agent roots seen (hex): what eviction counts as lost runs
    agent_roots: set[str] = field(default_factory=set)

    def has_open_descendant(self, span_id: int) -> bool:
        """Whether a span still open lies under ``span_id``. O(spans known), cycle-safe: every span's
        verdict is memoised, so each parent link is followed at most once per call."""
        if not self.open:
            return False
        parents = self.parents
        verdict: dict[int, bool] = {span_id: True}
        for sid in self.open:
            if sid == span_id:
                continue
            path: list[int] = []
            on_path: set[int] = set()
            cur: int | None = sid
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


class TraceTable:
    """The traces being watched, oldest first; at most ``max_traces`` (exactly)."""

    def __init__(self, max_traces: int) -> None:
        self.max_traces = max_traces
        self.traces: OrderedDict[int, TraceState] = OrderedDict()
        # Traces evicted recently (oldest first): their later spans are late, never a second run.
        self.evicted: OrderedDict[int, None] = OrderedDict()
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

    def mark_evicted(self, trace_id: int) -> None:
        self.evicted[trace_id] = None
        while len(self.evicted) > self.max_evicted:
            self.evicted.popitem(last=False)

    def oldest(self) -> Iterator[TraceState]:
        """Traces oldest first; safe to remove the yielded trace while iterating."""
        while self.traces:
            first = next(iter(self.traces.values()))
            yield first
            if self.traces and next(iter(self.traces)) == first.trace_id:
                return  # the caller kept it: stop
