"""Reading sources (files, bytes, export requests, live spans) and grouping their facts into runs.

Accepted, detected by content (never by file name alone):

* OTLP protobuf ``ExportTraceServiceRequest`` / ``ExportLogsServiceRequest`` bytes, one request or
  several concatenated (protobuf concatenation is a merge: one request with all resources);
* OTLP/JSON as OTLP/HTTP writes it (hex ids) and protobuf's JSON mapping (base64 ids), one document
  or JSON Lines of export requests (the Collector's file exporter), or a JSON array of requests;
* gzip of any of these (a truncated gzip stream yields what was decompressed before the cut).

Reading streams: JSON Lines are read line by line, protobuf files larger than
:data:`WHOLE_READ_BYTES` one resource at a time, gzip as it decompresses. Per trace only its compact
facts are kept (content is truncated to :class:`ExtractOptions` limits as it is read), and
:func:`iter_runs` yields a trace's runs once the trace is complete: its root was seen and no record of
it came for ``idle_records`` records. A single JSON document (not lines) is read whole, up to
:data:`MAX_INPUT_BYTES`.

Spans of files and bytes are read as the scoring service reads them, through views of the decoded
spans (:mod:`._otlp_views`: a lean protobuf ``Span`` whose attributes are a key table, and the same
view over OTLP/JSON), by the table-driven lanes first — no full record per span. The byte formats
are in :mod:`._streams`, the grouping by trace in :mod:`._collect`; this module holds the public
functions and the report models.

Nothing raises out of :func:`extract_runs_with_report` / :func:`iter_runs`: undecodable input is
counted and described in the :class:`ExtractionReport`, and the rest is read.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator
from os import PathLike
from pathlib import Path
from typing import Any

from google.protobuf.message import Message
from pydantic import BaseModel, Field

from ..model import AgentRun
from ._collect import Collector
from ._facts import DEFAULT_OPTIONS, ExtractOptions
from ._gc import full_collections_held
from ._otlp_json import OtlpJsonError, log_views_from_json, span_views_from_json
from ._otlp_views import span_views
from ._records import SpanRecord, log_views_from_proto, record_from_readable, span_records_from_proto
from ._streams import (
    CHUNK,
    MAX_INPUT_BYTES,  # noqa: F401 - the byte formats' bounds, still named here
    WHOLE_READ_BYTES,  # read from this module each time a source is opened
    Counted,
    JsonDoc,
    TraceGroups,
    decode_stream,
)

__all__ = ["ExtractionReport", "SourceReport", "extract_runs", "extract_runs_with_report", "iter_runs"]

#: A trace is complete when its root was seen and this many records (spans, log records) of other
#: traces followed its last one.
DEFAULT_IDLE_RECORDS = 10_000
#: Most traces kept open at once; past it the least recently seen is assembled with what it has.
DEFAULT_MAX_OPEN_TRACES = 50_000
_MAX_ERRORS_PER_SOURCE = 50

#: ``progress(report, done)``: called while a source is read (every 1,024 items and every MiB of a
#: file, ``report.bytes_read`` counting the file's bytes as they are read) and once when a file is done.
Progress = Callable[["SourceReport", bool], None]


class SourceReport(BaseModel):
    """Counters for one source (a file, a bytes blob, an export request or a span iterable)."""

    source: str
    spans_read: int = 0
    logs_read: int = 0
    spans_with_facts: int = 0
    logs_with_facts: int = 0
    #: spans no convention reader recognised (plain HTTP/DB spans are counted here too)
    unknown_convention_spans: int = 0
    #: log records with GenAI content that name no span, so cannot join a run
    unattached_logs: int = 0
    #: undecodable items: bad JSON lines, truncated/invalid protobuf or gzip, bad attribute JSON
    malformed: int = 0
    #: spans / log records of a trace whose runs were already yielded (streaming: see ``iter_runs``)
    late_records: int = 0
    #: bytes of the file read so far (of the file as stored: compressed bytes for gzip)
    bytes_read: int = 0
    errors: list[str] = Field(default_factory=list)

    def problem(self, message: str) -> None:
        self.malformed += 1
        if len(self.errors) < _MAX_ERRORS_PER_SOURCE:
            self.errors.append(message)
        elif len(self.errors) == _MAX_ERRORS_PER_SOURCE:
            self.errors.append("… further errors not listed")


class ExtractionReport(BaseModel):
    """What extraction read and could not read, per source."""

    sources: list[SourceReport] = Field(default_factory=list)
    runs: int = 0
    traces: int = 0
    #: trace id → the source its spans were first read from (a run's file, for reports)
    trace_sources: dict[str, str] = Field(default_factory=dict)

    @property
    def malformed(self) -> int:
        return sum(s.malformed for s in self.sources)

    @property
    def ok(self) -> bool:
        return self.malformed == 0

    def problems(self) -> list[str]:
        return [f"{s.source}: {e}" for s in self.sources for e in s.errors]


def _feed_message(msg: Any, coll: Collector[SourceReport], report: SourceReport) -> None:
    if isinstance(msg, JsonDoc):
        try:  # a document is read whole before its records join the traces, as a protobuf one is
            spans = list(span_views_from_json(msg.doc))
            logs = list(log_views_from_json(msg.doc))
        except (OtlpJsonError, RecursionError) as exc:
            report.problem(f"invalid OTLP/JSON: {str(exc)[:300]}")
            return
        for span in spans:
            coll.span(span, report)
        for view in logs:
            coll.log(view, report)
        return
    if isinstance(msg, TraceGroups):
        for span in span_views(msg.groups):
            coll.span(span, report)
        return
    if hasattr(msg, "resource_spans"):  # what the lean message did not read, or a caller's request
        for rec in span_records_from_proto(msg):
            coll.span(rec, report)
    if hasattr(msg, "resource_logs"):
        for view in log_views_from_proto(msg):
            coll.log(view, report)


def _feed(source: Any, coll: Collector[SourceReport], report: ExtractionReport) -> Iterator[tuple[int, int, AgentRun]]:
    """Read ``source`` into the collector, yielding the runs of traces as they complete."""
    if isinstance(source, (str, PathLike)):
        path = Path(source)
        sr = SourceReport(source=str(path))
        report.sources.append(sr)
        try:
            raw = path.open("rb", buffering=0)
        except OSError as exc:
            sr.problem(f"cannot read: {exc}")
            return
        with raw:
            fh = io.BufferedReader(Counted(raw, _counter(sr, coll)), CHUNK)
            try:
                size: int | None = path.stat().st_size
            except OSError:
                size = None
            try:
                for msg in decode_stream(fh, sr, size, WHOLE_READ_BYTES):
                    _feed_message(msg, coll, sr)
                    yield from coll.complete()
            except OSError as exc:
                sr.problem(f"cannot read: {exc}")
        coll.sync()
        if coll.progress is not None:
            coll.progress(sr, True)
        return
    if isinstance(source, (bytes, bytearray, memoryview)):
        sr = SourceReport(source="<bytes>")
        report.sources.append(sr)
        data = bytes(source)
        for msg in decode_stream(io.BytesIO(data), sr, len(data), WHOLE_READ_BYTES):
            _feed_message(msg, coll, sr)
            yield from coll.complete()
        return
    if isinstance(source, Message):
        sr = SourceReport(source=f"<{type(source).__name__}>")
        report.sources.append(sr)
        _feed_message(source, coll, sr)
        yield from coll.complete()
        return
    if isinstance(source, Iterable):
        items = list(source)
        if items and all(isinstance(i, (str, PathLike)) for i in items):
            for item in items:
                yield from _feed(item, coll, report)
            return
        sr = SourceReport(source="<spans>")
        report.sources.append(sr)
        for item in items:
            if isinstance(item, SpanRecord):
                coll.span(item, sr)
            elif hasattr(item, "context") and hasattr(item, "parent") and hasattr(item, "name"):
                try:
                    rec = record_from_readable(item)
                except Exception as exc:
                    sr.problem(f"span object {item!r:.80}: {type(exc).__name__}: {exc}")
                    continue
                coll.span(rec, sr)
            elif hasattr(item, "log_record") or hasattr(item, "event_name"):
                coll.log(item, sr)
            elif isinstance(item, (str, PathLike, bytes, bytearray, Message)):
                yield from _feed(item, coll, report)
            else:
                sr.problem(f"unsupported item {type(item).__name__}")
        yield from coll.complete()
        return
    sr = SourceReport(source=f"<{type(source).__name__}>")
    report.sources.append(sr)
    sr.problem(f"unsupported source type {type(source).__name__}")


def _runs(
    source: Any, options: ExtractOptions | None, report: ExtractionReport, idle_records: int, max_open_traces: int,
    progress: Progress | None = None,
) -> Iterator[tuple[int, int, AgentRun]]:
    coll = Collector(
        options or DEFAULT_OPTIONS, report.sources, report.trace_sources, idle_records, max_open_traces, progress
    )
    try:
        yield from _feed(source, coll, report)
    except Exception as exc:  # last line of defence: report, keep what was read
        if not report.sources:
            report.sources.append(SourceReport(source="<input>"))
        report.sources[-1].problem(f"reading failed: {type(exc).__name__}: {exc}")
    yield from coll.finish()
    report.traces = coll.traces_done
    report.runs = coll.runs_out


def _counter(report: SourceReport, coll: Collector[SourceReport]) -> Callable[[int], None]:
    """What counts a file's bytes into its report as they are read (and tells the progress bar, with
    the collector's record counts written into the report first)."""
    progress = coll.progress

    def counted(n: int) -> None:
        report.bytes_read += n
        if progress is not None:
            coll.sync()
            progress(report, False)

    return counted


def iter_runs(
    source: Any,
    options: ExtractOptions | None = None,
    *,
    report: ExtractionReport | None = None,
    idle_records: int = DEFAULT_IDLE_RECORDS,
    max_open_traces: int = DEFAULT_MAX_OPEN_TRACES,
) -> Iterator[AgentRun]:
    """Runs from ``source`` (as :func:`extract_runs_with_report` accepts), yielded as traces complete.

    Memory stays bounded by the traces open at once, not by the input's size: a trace is assembled
    when its root was seen and ``idle_records`` records of other traces followed its last record, or
    when more than ``max_open_traces`` traces are open (the least recently seen first); the rest at
    the end of input. Runs come in completion order (:func:`extract_runs` restores input order).
    ``report``, when given, is filled as reading goes on. Never raises on malformed input.
    """
    rep = report if report is not None else ExtractionReport()
    runs = _runs(source, options, rep, idle_records, max_open_traces)
    while True:
        with full_collections_held():  # while reading; not while the caller handles a run
            item = next(runs, None)
        if item is None:
            return
        yield item[2]


def extract_runs_with_report(
    source: Any, options: ExtractOptions | None = None, *, progress: Progress | None = None
) -> tuple[list[AgentRun], ExtractionReport]:
    """Runs from ``source`` plus what could not be read. Never raises on malformed input.

    ``source``: a path, a list of paths (trace and log files mixed), bytes, an
    ``ExportTraceServiceRequest`` / ``ExportLogsServiceRequest``, or an iterable of ``ReadableSpan``
    (live SDK spans, e.g. from ``InMemorySpanExporter``), SDK log records or :class:`SpanRecord` s.
    All sources are read as one stream (log files attach to the spans of trace files read before or
    shortly after them: see :func:`iter_runs`); runs are returned in the order their traces first
    appear in the input. ``progress`` hears about each file as it is read (the command line's bars).
    """
    report = ExtractionReport()
    with full_collections_held():  # the sort too: its keys' allocations would start a full pass over every run
        found = list(_runs(source, options, report, DEFAULT_IDLE_RECORDS, DEFAULT_MAX_OPEN_TRACES, progress))
        found.sort(key=_input_order)
        return [run for _, _, run in found], report


def _input_order(item: tuple[int, int, AgentRun]) -> tuple[int, int]:
    return item[0], item[1]


def extract_runs(source: Any, options: ExtractOptions | None = None) -> list[AgentRun]:
    """Runs from ``source`` (see :func:`extract_runs_with_report`); problems are not reported."""
    return extract_runs_with_report(source, options)[0]
