"""A complete trace as the core takes it: the order the live process ran it in.

The core was written for the SDK's callbacks — a span's start, then its end — so a trace received
whole is replayed: starts in start order (a parent before its children on ties), log facts, ends in
end order (a child before its parent on ties). A span that roots no run leaves at once, as received
(its bytes), when the service forwards; the core releases the others, with their scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core import END, HOLD, LOG, START
from ..core._otlp_spans import OTLP_SPANS
from ._buffer import PendingTrace

__all__ = ["replay"]


def replay(trace: PendingTrace, *, forwarding: bool) -> tuple[list[tuple[Any, ...]], list[Any]]:
    """The core's items for ``trace`` and, when ``forwarding``, the received bytes of the spans that
    root no run (to hand on before the core sees the trace)."""
    ids = trace.ids
    parents: dict[int, int | None] = {}
    for d in trace.spans:
        parents[d.span_id] = d.parent_id
        # Senders that do not mark remote parents: a parent this trace does not hold is taken
        # as remote, so the span bounds its runs as the process-local root did.
        remote = d.parent_remote if d.parent_remote is not None else (d.parent_id is not None and d.parent_id not in ids)
        d.span.parent_remote = bool(remote)
    depth = depths(parents)
    items: list[tuple[Any, ...]] = [
        (START, d.span, None) for d in sorted(trace.spans, key=lambda d: (d.span._start_time, depth[d.span_id]))
    ]
    items.extend((LOG, facts) for facts in trace.log_facts)
    may_root = OTLP_SPANS.may_root
    passed: list[Any] = []
    for d in sorted(trace.spans, key=lambda d: (d.span._end_time, -depth[d.span_id])):
        s = d.span
        try:
            hold = may_root(s)
        except Exception:  # odd attribute values: read (and counted) by the core
            hold = False
        if not hold and forwarding and s.wire is not None:
            passed.append(s.wire)
        items.append((HOLD if hold else END, s))
    return items, passed


def depths(parents: Mapping[int, int | None]) -> dict[int, int]:
    """Every span's depth below its trace's top (the first ancestor this trace does not hold), in
    one O(spans) pass: each parent link is followed once (memoised); a parent cycle (malformed
    input) is cut where it closes."""
    depth: dict[int, int] = {}
    for start in parents:
        if start in depth:
            continue
        path: list[int] = []
        on_path: set[int] = set()
        cur: int | None = start
        base = -1
        while cur is not None and cur in parents:
            known = depth.get(cur)
            if known is not None:
                base = known
                break
            if cur in on_path:
                break  # a cycle: its first node counts as the top
            path.append(cur)
            on_path.add(cur)
            cur = parents[cur]
        for node in reversed(path):
            base += 1
            depth[node] = base
    return depth
