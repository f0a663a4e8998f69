"""A complete trace as the core takes it: the order the live process ran it in.

The core was written for the SDK's callbacks — a span's start, then its end — so a trace received
whole is replayed as the live process's worker takes a batch holding every start and end: no start
(each span's end is in the batch, and a received span carries no context captured at its start),
log facts, then ends in end order (a child before its parent on ties). A span that roots no run
leaves at once, as received (its bytes), when the service forwards; the core releases the others,
with their scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core import END, HOLD, LOG
from ..core._otlp_spans import OTLP_SPANS
from ._buffer import PendingTrace

__all__ = ["replay"]


def replay(trace: PendingTrace, *, forwarding: bool) -> tuple[list[tuple[Any, ...]], list[Any]]:
    """The core's items for ``trace`` and, when ``forwarding``, the received bytes of the spans that
    root no run (to hand on before the core sees the trace)."""
    spans = trace.spans
    ids = trace.ids
    parents: dict[int, int | None] = {}
    views = []
    for d in spans:
        parent = d.parent_id
        parents[d.span_id] = parent
        remote = d.parent_remote
        view = d.span
        # Senders that do not mark remote parents: a parent this trace does not hold is taken
        # as remote, so the span bounds its runs as the process-local root did.
        view.parent_remote = (parent is not None and parent not in ids) if remote is None else remote
        views.append(view)
    # A span's depth only orders spans that end at the same instant: computed for such a trace only
    # (timestamps in nanoseconds rarely tie).
    count = len(views)
    if len({v._end_time for v in views}) == count:
        levels = [0] * count
    else:
        depth = depths(parents)
        levels = [depth[d.span_id] for d in spans]
    items: list[tuple[Any, ...]] = [(LOG, facts) for facts in trace.log_facts]
    may_root = OTLP_SPANS.may_root
    passed: list[Any] = []
    # Sorted as (time, -depth, place received): ties keep the order received, as a stable sort would.
    for _, _, i in sorted([(v._end_time, -level, i) for i, (v, level) in enumerate(zip(views, levels))]):
        s = views[i]
        try:
            hold = may_root(s)
        except Exception:  # odd attribute values: read (and counted) by the core
            hold = False
        if hold:
            items.append((HOLD, s))
        else:
            if forwarding and s.wire is not None:
                passed.append(s.wire)
            items.append((END, s))
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
