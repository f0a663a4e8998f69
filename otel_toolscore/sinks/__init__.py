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
    from ._base import ScoreSink
    from ._dispatch import SinkDispatcher, SinkStats
    from ._langfuse import LangfuseSink
    from ._phoenix import PhoenixSink
    from ._record import AnnotatorKind, ScoreRecord
    from ._retry import SinkError
    from ._settings import resolve_sinks, sink_from_name

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
    "AnnotatorKind": "._record",
    "LangfuseSink": "._langfuse",
    "PhoenixSink": "._phoenix",
    "ScoreRecord": "._record",
    "ScoreSink": "._base",
    "SinkDispatcher": "._dispatch",
    "SinkError": "._retry",
    "SinkStats": "._dispatch",
    "resolve_sinks": "._settings",
    "sink_from_name": "._settings",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
