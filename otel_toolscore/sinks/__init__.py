"""Score sinks: every score (code scorer and LLM judge) delivered to backends as a first-class score.

A :class:`ScoreSink` receives :class:`ScoreRecord` batches on a thread of its own, behind a bounded
queue (:class:`SinkDispatcher`); failures and drops are counted in ``toolscore.dropped``. Built in:
:class:`PhoenixSink` (span annotations) and :class:`LangfuseSink` (scores). Pass sinks to the
processor (``sinks=[...]``), to ``configure()``/``install()``, or name them in
``OTEL_TOOLSCORE_SINKS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import ScoreSink
from .dispatch import SinkDispatcher, SinkStats
from .record import AnnotatorKind, ScoreRecord
from .retry import SinkError
from .settings import resolve_sinks, sink_from_name

if TYPE_CHECKING:
    from .langfuse import LangfuseSink
    from .phoenix import PhoenixSink

__all__ = [
    "AnnotatorKind",
    "LangfuseSink",
    "PhoenixSink",
    "ScoreRecord",
    "ScoreSink",
    "SinkDispatcher",
    "SinkError",
    "SinkStats",
    "resolve_sinks",
    "sink_from_name",
]


def __getattr__(name: str) -> Any:
    # The built-in sinks load on first use: httpx and langfuse only when their sink is asked for.
    if name == "PhoenixSink":
        from .phoenix import PhoenixSink

        return PhoenixSink
    if name == "LangfuseSink":
        from .langfuse import LangfuseSink

        return LangfuseSink
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
