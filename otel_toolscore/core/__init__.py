"""The core every adapter feeds: spans in; spans to hand on, scored runs and counts out.

* :class:`Core` (:mod:`._engine`) — per-trace state, bounds, assembly, expectations, scoring;
* :class:`Release` — what a core released: taken by the adapter, handed on in one direction;
* :class:`Outputs` (:mod:`._outputs`) — events, metrics, sinks, callbacks and the judge for a release;
* :func:`build_core` (:mod:`._builder`) — a core and its outputs from settings;
* :class:`SpanSource` (:mod:`._sources`) — how a core reads one adapter's span objects.

The span processor (:mod:`otel_toolscore.online.processor`), the scoring service
(:mod:`otel_toolscore.service`) drive a :class:`Core`; the offline reader shares its readers and
assembler (:mod:`otel_toolscore.extract`).
"""

from .._scored import ScoredRun
from ._builder import build_core, core_expectations, core_options
from ._engine import CONTEXT, END, HOLD, LOG, START, Core, Release
from ._outputs import Outputs
from ._sources import BARE_START, CONTEXT_IS_TUPLE, SDK_SPANS, SpanSource, scored_copy
from ._state import StartContext

__all__ = [
    "BARE_START",
    "CONTEXT",
    "CONTEXT_IS_TUPLE",
    "END",
    "HOLD",
    "LOG",
    "SDK_SPANS",
    "START",
    "Core",
    "Outputs",
    "Release",
    "ScoredRun",
    "SpanSource",
    "StartContext",
    "build_core",
    "core_expectations",
    "core_options",
    "scored_copy",
]
