"""Shared helpers of the benchmark: paired, interleaved rounds and medians.

The machine running the benchmark is usually shared (2 cores, other work), so an absolute time
means little and a ratio between two measurements taken seconds apart means a lot. Every figure is
therefore measured as *pairs*: in each round the baseline and the candidate run back to back (their
order alternating between rounds, so neither always gets the warmer cache), and the reported ratio
is the median over rounds of the per-round ratios.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Paired", "Result", "measure_paired", "rss_bytes", "timed"]


@dataclass
class Result:
    """One section of the benchmark: rows for the table and the JSON document."""

    section: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, **row: Any) -> dict[str, Any]:
        self.rows.append(row)
        return row


@dataclass
class Paired:
    """Per-round times of a baseline and a candidate (seconds per unit of work)."""

    baseline: list[float]
    candidate: list[float]

    @property
    def ratios(self) -> list[float]:
        return [c / b for b, c in zip(self.baseline, self.candidate) if b > 0]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def spread(self) -> tuple[float, float]:
        r = sorted(self.ratios)
        return r[0], r[-1]

    @property
    def baseline_median(self) -> float:
        return statistics.median(self.baseline)

    @property
    def candidate_median(self) -> float:
        return statistics.median(self.candidate)


def timed(fn: Callable[[], Any]) -> float:
    """Seconds taken by ``fn()``, with the cyclic GC run before (not during) the measurement."""
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure_paired(
    baseline: Callable[[], float], candidate: Callable[[], float], rounds: int
) -> Paired:
    """Run ``rounds`` interleaved pairs; each callable returns its own time per unit of work."""
    out = Paired([], [])
    for r in range(rounds):
        if r % 2 == 0:
            b = baseline()
            c = candidate()
        else:
            c = candidate()
            b = baseline()
        out.baseline.append(b)
        out.candidate.append(c)
    return out


def rss_bytes() -> int:
    """Resident set size of this process (Linux ``/proc``; 0 where unavailable)."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")
