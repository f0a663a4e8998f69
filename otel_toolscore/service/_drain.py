"""How the service spends its drain budget, and the shutdown steps that must not outlive it.

A drain (SIGTERM, :meth:`~._app.ScoringService.shutdown`) is given its time once. Scoring gets the
first 60 % of it, the judge and forwarding flush the next 25 %, the final metric and log exports
the rest; what is left at a deadline is counted (``toolscore.dropped{reason=drain_timeout}``),
never waited for. An exporter's shutdown can block past any timeout of its own (a backend that
trickles), so each runs on a thread of its own, joined until its deadline only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from .._deadline import Deadline

__all__ = ["DrainPlan", "within"]

_log = logging.getLogger(__name__)


class DrainPlan:
    """The deadlines of one drain of ``budget_s`` seconds, from now."""

    __slots__ = ("end", "flushed_by", "scored_by")

    def __init__(self, budget_s: float) -> None:
        start = time.monotonic()
        #: scoring stops here: traces still buffered are counted and released
        self.scored_by = Deadline(start + 0.6 * budget_s)
        #: the judge, the sinks and forwarding flush until here
        self.flushed_by = Deadline(start + 0.85 * budget_s)
        #: the last exports (evaluation records, then metrics) end here
        self.end = Deadline(start + budget_s)

    def logs_by(self) -> Deadline:
        """The evaluation records get half of what is left after the flush, the metrics' last export the rest."""
        return Deadline(self.flushed_by.instant + (self.end.instant - self.flushed_by.instant) / 2)


def within(step: Callable[[], object], deadline: Deadline) -> None:
    """Run ``step`` (an exporter flush or shutdown) for no longer than until ``deadline`` (at least
    50 ms); a step still running then is left to finish on its daemon thread."""

    def run() -> None:
        try:
            step()
        except Exception:
            _log.debug("otel-toolscore serve: a shutdown step failed", exc_info=True)

    t = threading.Thread(target=run, name="otel-toolscore-shutdown", daemon=True)
    t.start()
    t.join(max(0.05, deadline.remaining()))
