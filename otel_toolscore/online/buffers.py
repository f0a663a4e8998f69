"""Per-trace buffers of the span processor: compact facts only, sharded by trace id, bounded.

A trace gets a buffer when its first GenAI/agent span starts (or ends with facts) and loses it when
every span of the trace started in this process has ended. Each shard has its own lock, held only
for dictionary updates (never across I/O or scoring), so threads working on different traces
rarely meet.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ..extract import SpanFacts
    from .expectations import Expectation

__all__ = ["HeldRoot", "Shard", "TraceState", "TraceTable"]


@dataclass(slots=True)
class HeldRoot:
    """A run's root span that ended while descendants were still open; released at ``deadline``."""

    span: ReadableSpan
    deadline: float


@dataclass(slots=True)
class TraceState:
    trace_id: int
    created: float
    local_root: str | None = None
    facts: list[SpanFacts] = field(default_factory=list)
    parents: dict[str, str | None] = field(default_factory=dict)
    open: set[str] = field(default_factory=set)
    # Expectation captured at the start of a run root (expect() context, attributes, baggage).
    explicit: dict[str, Expectation] = field(default_factory=dict)
    # The application's ``toolscore.judge`` flag from baggage, per run root.
    judge_flags: dict[str, str] = field(default_factory=dict)
    roots: set[str] = field(default_factory=set)  # run roots seen starting (agent spans)
    # Agent spans still open (the live span objects, by reference): read only if a nested run ends first.
    started: dict[str, Any] = field(default_factory=dict)
    held: dict[str, HeldRoot] = field(default_factory=dict)
    scored: set[str] = field(default_factory=set)
    dropped_facts: int = 0

    def has_open_descendant(self, span_id: str) -> bool:
        """True when a span still open in this trace has ``span_id`` among its ancestors."""
        parents = self.parents
        for sid in self.open:
            seen = 0
            cur = parents.get(sid)
            while cur is not None and seen < 10_000:  # depth guard against malformed cycles
                if cur == span_id:
                    return True
                cur = parents.get(cur)
                seen += 1
        return False


class Shard:
    __slots__ = ("evicted", "local_roots", "lock", "traces")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.traces: dict[int, TraceState] = {}
        # Open local roots (span without a local parent) of every trace, GenAI or not: a trace whose
        # first GenAI span starts later still needs its local root to bound a run (hand-written loops).
        self.local_roots: dict[int, str] = {}
        # Traces evicted recently (oldest first): their later spans are late, never a second run.
        self.evicted: dict[int, None] = {}


class TraceTable:
    """All pending traces, in ``2**bits`` shards keyed by the low bits of the trace id."""

    def __init__(self, max_traces: int, bits: int = 4) -> None:
        self.shards = [Shard() for _ in range(1 << bits)]
        self._mask = (1 << bits) - 1
        self.per_shard_limit = max(1, -(-max_traces // len(self.shards)))
        self.max_local_roots = max(1024, self.per_shard_limit * 4)

    def shard(self, trace_id: int) -> Shard:
        return self.shards[trace_id & self._mask]

    def __len__(self) -> int:
        return sum(len(s.traces) for s in self.shards)

    @staticmethod
    def now() -> float:
        return time.monotonic()
