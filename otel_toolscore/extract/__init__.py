"""Extraction: spans and log records of any supported instrumentation → :class:`AgentRun` s.

Public API (the online processor and the service depend on these names):

* :class:`SpanRecord`, :func:`record_from_readable` — a cheap view of one finished span (live
  ``ReadableSpan`` → no copy, no parsing); OTLP protobuf spans through :func:`span_records_from_proto`.
* :class:`LogRecordView`, :func:`log_view_from_sdk`, :func:`log_views_from_proto` — the same for log
  records (SDK ``ReadableLogRecord``/``ReadWriteLogRecord`` or OTLP).
* :func:`classify_start` — ``"agent"``/``"tool"``/``"llm"``/``None`` at span start (O(1)).
* :func:`read_span` / :func:`read_log` → :class:`SpanFacts` or ``None``. Cheap: content is deferred and
  parsed by :meth:`SpanFacts.materialize`, which :func:`assemble_runs` calls once per run.
* :func:`assemble_runs` — the facts of one trace → runs (nesting, de-duplication, ordering).
* :func:`extract_runs` / :func:`extract_runs_with_report` — files, bytes, export requests or live
  spans → runs (+ :class:`ExtractionReport`). Malformed input never raises.
* :func:`iter_runs` — the same, streaming: runs yielded as traces complete, memory bounded by the
  traces open at once (files of any size).
* :class:`ExtractOptions` — limits (``max_chars``), ``capture_content``, framework-call names.

Precedence when a span matches several conventions: the readers run in this order and each fills
only what is still empty, so the first one that knows a fact wins:

1. OTel GenAI (``gen_ai.*``, ≥1.37 attributes; ≤1.36 events are read last, from span events/logs);
2. OpenInference (``openinference.span.kind``, ``llm.*``, ``input.value``/``output.value``);
3. OpenLLMetry / Traceloop (``traceloop.*``, legacy indexed ``gen_ai.prompt/completion.N.*``);
4. Vercel AI SDK (``ai.*``);
5. Pydantic AI / Logfire (``agent run``/``running tool``, ``tool_arguments``, ``pydantic_ai.*``);
6. Google ADK (``gcp.vertex.agent.*``, ``call_llm``, ``agent_run [name]``);
7. Mastra's OTel exporter (``mastra.span.type``, ``mastra.model_step.output``, ``mastra.agent_run.*``);
8. GenAI ≤1.36 span events (``gen_ai.user.message``, ``gen_ai.choice`` …; on tool spans, Strands'
   arguments and result), then log records joined by span id (a span's own attributes win over
   its log events when both carry the model output).

The span's role is the first one a reader names (``gen_ai.operation.name`` values a reader does not
know leave it to the framework readers); ``execute_tool (merged)`` is never a call. For the run,
facts of the run's root span win over facts of its model spans (the first model span for the user's
request, the last one for the final answer). Framework tags (``strands``, ``openai-agents``,
``langchain``, ``mastra`` …) are added from the instrumentation scope for reporting only, and select
the framework-specific parsers of :mod:`._frameworks` (smolagents, LlamaIndex, CrewAI under
OpenInference). The run rules (nesting, wrappers, de-duplication, errors) are in :mod:`._assemble`;
runs and calls a framework records without an agent or tool span (CrewAI coworkers, LlamaIndex
handoffs, Mastra workflow steps, smolagents' managed agents) in :mod:`._implicit_runs`.

What is parsed where: :func:`read_span` (hot path) reads scalar attributes only; JSON message
attributes, flattened ``llm.*`` keys, tool definitions, arguments and results are parsed once per run
by :meth:`SpanFacts.materialize`, called from :func:`assemble_runs`. Offline, a span's facts are
materialized as it is read, but a model span's input (request, history) only for a run that needs it
(:func:`~._assemble.needs_inputs`, or its request), with content kept too. Offline only,
:func:`extract_runs` also joins a hand-written loop that left one trace per model call (no enclosing
span) when the call ids (or the same request and replayed calls) prove they are one run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from ._assemble import assemble_runs
from ._facts import DEFAULT_OPTIONS, ExtractOptions, SpanFacts
from ._readers import classify_start, read_log, read_span
from ._records import (
    LogRecordView,
    SpanRecord,
    log_view_from_sdk,
    log_views_from_proto,
    record_from_readable,
    span_records_from_proto,
)

if TYPE_CHECKING:
    from ._sources import ExtractionReport, SourceReport, extract_runs, extract_runs_with_report, iter_runs

#: Reading files and OTLP messages (:mod:`._sources`, which loads protobuf and the OTLP message
#: classes) is loaded on first use: the live processor needs only the readers and the assembler.
__getattr__ = lazy_getattr(
    __name__,
    dict.fromkeys(("ExtractionReport", "SourceReport", "extract_runs", "extract_runs_with_report", "iter_runs"), "._sources"),
)

__all__ = [
    "DEFAULT_OPTIONS",
    "ExtractOptions",
    "ExtractionReport",
    "LogRecordView",
    "SourceReport",
    "SpanFacts",
    "SpanRecord",
    "assemble_runs",
    "classify_start",
    "extract_runs",
    "extract_runs_with_report",
    "iter_runs",
    "log_view_from_sdk",
    "log_views_from_proto",
    "read_log",
    "read_span",
    "record_from_readable",
    "span_records_from_proto",
]
