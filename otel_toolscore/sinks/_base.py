"""``ScoreSink``: the interface every score destination implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._record import ScoreRecord  # a pydantic model: loaded when the first record is built

__all__ = ["ScoreSink"]


class ScoreSink(ABC):
    """A destination for scores (a tracing backend's annotation or score API, a database, a queue).

    The pipeline calls :meth:`export` on a thread of its own with at most :attr:`max_batch` records,
    never on the application's thread and never concurrently for one sink. An export that raises
    counts its whole batch in ``toolscore.dropped{toolscore.reason="sink_failed"}``; one that returns
    an integer counts that many records of the batch there (a partial rejection). ``None`` means
    every record was delivered.

    Retries belong in :meth:`export`, bounded: while it runs, records wait in the sink's queue, and
    records beyond the queue's size are dropped (``sink_queue_full``).
    """

    #: the sink's name in logs (and in ``OTEL_TOOLSCORE_SINKS`` for the built-in ones)
    name: str = "custom"
    #: most records handed to one :meth:`export` call
    max_batch: int = 100

    @abstractmethod
    def export(self, records: Sequence[ScoreRecord]) -> int | None:
        """Deliver ``records``; return how many were not delivered (``None``: all were), or raise."""

    def shutdown(self) -> None:
        """Release what the sink holds (HTTP clients); called once, after its last export."""
        return None
