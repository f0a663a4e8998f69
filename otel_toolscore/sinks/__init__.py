"""Score sinks: every score (code scorer and LLM judge) delivered to backends as a first-class score.

A :class:`ScoreSink` receives :class:`ScoreRecord` batches on a thread of its own, behind a bounded
queue (:class:`SinkDispatcher`); failures and drops are counted in ``toolscore.dropped``. Built in:
:class:`PhoenixSink` (span annotations) and :class:`LangfuseSink` (scores). Pass sinks to the
processor (``sinks=[...]``), to ``configure()``/``install()``, or name them in
``OTEL_TOOLSCORE_SINKS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from .base import ScoreSink
    from .dispatch import SinkDispatcher, SinkStats
    from .langfuse import LangfuseSink
    from .phoenix import PhoenixSink
    from .record import AnnotatorKind, ScoreRecord
    from .retry import SinkError
    from .settings import resolve_sinks, sink_from_name

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


# name -> module that defines it; loaded on first attribute access. The span processor imports
# ``sinks.base`` (the interface) and nothing else here until a sink is configured; the built-in
# sinks load httpx and langfuse only when their sink is asked for.
_LAZY: dict[str, str] = {
    "AnnotatorKind": ".record",
    "LangfuseSink": ".langfuse",
    "PhoenixSink": ".phoenix",
    "ScoreRecord": ".record",
    "ScoreSink": ".base",
    "SinkDispatcher": ".dispatch",
    "SinkError": ".retry",
    "SinkStats": ".dispatch",
    "resolve_sinks": ".settings",
    "sink_from_name": ".settings",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
