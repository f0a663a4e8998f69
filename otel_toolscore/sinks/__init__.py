"""Score sinks: every score (code scorer and LLM judge) delivered to backends as a first-class score.

A :class:`ScoreSink` receives :class:`ScoreRecord` batches on a thread of its own, behind a bounded
queue (:class:`~otel_toolscore.sinks.dispatch.SinkDispatcher`); failures and drops are counted in
``toolscore.dropped``. Built in: :class:`PhoenixSink` (span annotations) and :class:`LangfuseSink`
(scores). Pass sinks to the processor (``sinks=[...]``), to ``configure()``/``install()``, or name
them in ``OTEL_TOOLSCORE_SINKS``.

Everything loads on first use: ``httpx`` and ``langfuse`` only when their sink is built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY: dict[str, str] = {
    "ScoreRecord": ".record",
    "AnnotatorKind": ".record",
    "ScoreSink": ".base",
    "SinkDispatcher": ".dispatch",
    "SinkStats": ".dispatch",
    "SinkError": ".retry",
    "PhoenixSink": ".phoenix",
    "LangfuseSink": ".langfuse",
    "resolve_sinks": ".settings",
    "sink_from_name": ".settings",
}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
