"""The service's buffer of received spans, grouped by trace, bounded in spans and bytes.

A trace is complete when its root has arrived (a span with no parent, or whose parent the sender
marked remote), no received span points at a parent that has not arrived, and no new span came for
the quiet period. A trace that never completes is taken as it is at the hard timeout. Spans of a
trace taken already are *late*: the caller forwards them unscored and counts them.

One lock guards the table; it is held for dictionary updates only, never while a trace is scored.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..extract import SpanFacts
    from ._decode import DecodedSpan

__all__ = ["Admission", "PendingTrace", "TraceBuffer"]

# Rough cost of one buffered log-record fact (only records the readers recognised are kept).
LOG_FACT_COST = 2048


@dataclass(slots=True)
class PendingTrace:
    trace_id: int
    first_seen: float
    last_seen: float
    spans: list[DecodedSpan] = field(default_factory=list)
    log_facts: list[SpanFacts] = field(default_factory=list)
    ids: set[int] = field(default_factory=set)
    missing: set[int] = field(default_factory=set)  # parent ids referenced but not (yet) received
    has_root: bool = False
    cost: int = 0

    def add(self, d: DecodedSpan) -> None:
        self.spans.append(d)
        self.ids.add(d.span_id)
        self.missing.discard(d.span_id)
        if d.parent_id is None or d.parent_remote:
            self.has_root = True
        elif d.parent_id not in self.ids:
            self.missing.add(d.parent_id)
        self.cost += d.cost

    @property
    def complete(self) -> bool:
        return self.has_root and not self.missing


@dataclass(slots=True)
class Admission:
    """What :meth:`TraceBuffer.add_spans` did with a request."""

    accepted: bool
    late: list[DecodedSpan] = field(default_factory=list)
    # Spans already held (same trace and span id): a sender retrying a request whose answer it lost.
    duplicates: int = 0


def _new_spans(spans: list[DecodedSpan], traces: dict[int, PendingTrace]) -> list[DecodedSpan]:
    """``spans`` without those already held or repeated within ``spans`` (retries are idempotent)."""
    seen: set[tuple[int, int]] = set()
    out = []
    for d in spans:
        key = (d.trace_id, d.span_id)
        held = traces.get(d.trace_id)
        if key in seen or (held is not None and d.span_id in held.ids):
            continue
        seen.add(key)
        out.append(d)
    return out


class TraceBuffer:
    def __init__(
        self,
        *,
        max_spans: int,
        max_bytes: int,
        quiet_period_s: float,
        hard_timeout_s: float,
        recent_traces: int,
    ) -> None:
        self.max_spans = max_spans
        self.max_bytes = max_bytes
        self.quiet_period_s = quiet_period_s
        self.hard_timeout_s = hard_timeout_s
        self._recent_limit = recent_traces
        self._lock = threading.Lock()
        # Insertion order = order of first span: the front is the first to reach the hard timeout.
        self._traces: dict[int, PendingTrace] = {}
        # Order of last activity: the front is the first whose quiet period ends.
        self._by_activity: OrderedDict[int, PendingTrace] = OrderedDict()
        self._recent: OrderedDict[int, None] = OrderedDict()
        # Spans/bytes held, including traces taken and not yet released (being scored).
        self.spans = 0
        self.bytes = 0

    # -- intake ---------------------------------------------------------------------------------------
    def _full(self, spans: int, cost: int) -> bool:
        # An empty buffer takes any one request (its size is bounded by the request limit), so a
        # request larger than the budget is not refused forever.
        if self.spans == 0 and self.bytes == 0:
            return False
        return self.spans + spans > self.max_spans or self.bytes + cost > self.max_bytes

    def add_spans(self, decoded: Iterable[DecodedSpan], now: float | None = None) -> Admission:
        """Buffer ``decoded`` whole, or nothing when over budget (the sender retries)."""
        items = list(decoded)
        t = time.monotonic() if now is None else now
        with self._lock:
            fresh = [d for d in items if d.trace_id not in self._recent]
            late = [d for d in items if d.trace_id in self._recent] if len(fresh) != len(items) else []
            before = len(fresh)
            fresh = _new_spans(fresh, self._traces)
            duplicates = before - len(fresh)
            cost = sum(d.cost for d in fresh)
            if fresh and self._full(len(fresh), cost):
                return Admission(False)
            traces = self._traces
            by_activity = self._by_activity
            trace: PendingTrace | None = None
            for d in fresh:
                trace_id = d.trace_id
                if trace is None or trace.trace_id != trace_id:
                    # the first of a trace's spans that come one after another: its activity once
                    trace = traces.get(trace_id)
                    if trace is None:
                        trace = traces[trace_id] = PendingTrace(trace_id, t, t)
                    trace.last_seen = t
                    by_activity[trace_id] = trace
                    by_activity.move_to_end(trace_id)
                trace.add(d)
            self.spans += len(fresh)
            self.bytes += cost
        return Admission(True, late, duplicates)

    def add_log_facts(self, facts: Iterable[tuple[int, SpanFacts]], now: float | None = None) -> tuple[bool, int]:
        """Buffer log facts by trace id; returns (accepted, number late). Log facts do not extend the quiet period."""
        items = list(facts)
        t = time.monotonic() if now is None else now
        with self._lock:
            fresh = [(tid, f) for tid, f in items if tid not in self._recent]
            cost = LOG_FACT_COST * len(fresh)
            if fresh and self._full(0, cost):
                return False, 0
            for tid, f in fresh:
                trace = self._traces.get(tid)
                if trace is None:
                    trace = PendingTrace(tid, t, t)
                    self._traces[tid] = trace
                    self._by_activity[tid] = trace
                trace.log_facts.append(f)
                trace.cost += LOG_FACT_COST
            self.bytes += cost
        return True, len(items) - len(fresh)

    # -- output ---------------------------------------------------------------------------------------
    def take_due(self, now: float | None = None, *, everything: bool = False) -> list[tuple[PendingTrace, str]]:
        """Remove and return the traces to score now, each with why: ``complete``, ``timeout`` or ``drained``.

        Their spans stay counted until :meth:`release` (scoring them still holds the memory).
        """
        t = time.monotonic() if now is None else now
        out: list[tuple[PendingTrace, str]] = []
        with self._lock:
            if everything:
                out = [(tr, "drained") for tr in self._traces.values()]
                self._traces.clear()
                self._by_activity.clear()
            else:
                while self._traces:
                    tr = next(iter(self._traces.values()))
                    if t - tr.first_seen < self.hard_timeout_s:
                        break
                    self._pop(tr)
                    out.append((tr, "timeout"))
                for tr in list(self._by_activity.values()):
                    if t - tr.last_seen < self.quiet_period_s:
                        break  # later ones were active more recently
                    if tr.complete:
                        self._pop(tr)
                        out.append((tr, "complete"))
            for tr, _ in out:
                self._remember(tr.trace_id)
        return out

    def release(self, trace: PendingTrace) -> None:
        with self._lock:
            self.spans -= len(trace.spans)
            self.bytes -= trace.cost

    def _pop(self, trace: PendingTrace) -> None:
        del self._traces[trace.trace_id]
        self._by_activity.pop(trace.trace_id, None)

    def _remember(self, trace_id: int) -> None:
        if self._recent_limit <= 0:
            return
        self._recent[trace_id] = None
        while len(self._recent) > self._recent_limit:
            self._recent.popitem(last=False)

    @property
    def traces(self) -> int:
        return len(self._traces)

    @property
    def saturated(self) -> bool:
        return self.spans >= self.max_spans or self.bytes >= self.max_bytes
