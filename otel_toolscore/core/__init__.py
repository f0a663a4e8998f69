"""The core every adapter feeds: spans in; spans to hand on, scored runs and counts out.

* :class:`Core` (:mod:`.engine`) — per-trace state, bounds, assembly, expectations, scoring;
* :class:`Release` — what a core released: taken by the adapter, handed on in one direction;
* :class:`Outputs` (:mod:`.outputs`) — events, metrics, sinks, callbacks and the judge for a release;
* :func:`build_core` (:mod:`.builder`) — a core and its outputs from settings;
* :class:`SpanSource` (:mod:`.sources`) — how a core reads one adapter's span objects.

The span processor (:mod:`otel_toolscore.online.processor`), the scoring service
(:mod:`otel_toolscore.service`) drive a :class:`Core`; the offline reader shares its readers and
assembler (:mod:`otel_toolscore.extract`).
"""

from .._scored import ScoredRun
from .builder import build_core, core_expectations, core_options
from .engine import END, HOLD, LOG, START, Core, Release
from .outputs import Outputs
from .sources import SDK_SPANS, SpanSource, scored_copy
from .state import StartContext

__all__ = [
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
