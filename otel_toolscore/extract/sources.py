"""Reading sources (files, bytes, export requests, live spans) and grouping their facts into runs.

Accepted, detected by content (never by file name alone):

* OTLP protobuf ``ExportTraceServiceRequest`` / ``ExportLogsServiceRequest`` bytes;
* OTLP/JSON as OTLP/HTTP writes it (hex ids) and protobuf's JSON mapping (base64 ids), one document
  or JSON Lines of export requests (the Collector's file exporter), or a JSON array of requests;
* gzip of any of these (a truncated gzip stream yields what was decompressed before the cut).

Nothing raises out of :func:`extract_runs_with_report`: undecodable input is counted and described
in the :class:`ExtractionReport`, and the rest is read.
"""

from __future__ import annotations

import base64
import contextlib
import json
import zlib
from collections.abc import Callable, Iterable, Iterator
from os import PathLike
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from pydantic import BaseModel, Field

from ..model import AgentRun
from .assemble import assemble_runs
from .content import requested_calls
from .facts import DEFAULT_OPTIONS, ExtractOptions, SpanFacts
from .readers import read_log, read_span
from .records import SpanRecord, log_views_from_proto, record_from_readable, span_records_from_proto

__all__ = ["ExtractionReport", "SourceReport", "extract_runs", "extract_runs_with_report"]

#: Largest decompressed input read from one source (a guard against gzip bombs).
MAX_INPUT_BYTES = 512 * 1024 * 1024
_MAX_ERRORS_PER_SOURCE = 50
# A progress callback hears about a source every this many spans/log records (a power of two minus one: a mask).
_PROGRESS_EVERY = 1023

#: ``progress(report, done)``: called while a source is read (every 1,024 items) and once when it is done.
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


class _Collector:
    """Spans and log facts of all sources, grouped by trace."""

    def __init__(self, options: ExtractOptions, progress: Progress | None = None) -> None:
        self.options = options
        self.progress = progress
        self.facts: dict[str, list[SpanFacts]] = {}
        self.parents: dict[str, dict[str, str | None]] = {}
        self.fact_report: dict[int, SourceReport] = {}
        self.trace_source: dict[str, str] = {}  # the source a trace was first read from

    def span(self, rec: SpanRecord, report: SourceReport) -> None:
        report.spans_read += 1
        if self.progress is not None and not report.spans_read & _PROGRESS_EVERY:
            self.progress(report, False)
        self.parents.setdefault(rec.trace_id, {})[rec.span_id] = rec.parent_span_id
        self.trace_source.setdefault(rec.trace_id, report.source)
        try:
            f = read_span(rec, self.options)
        except Exception as exc:  # a reader must never stop the file
            report.problem(f"span {rec.span_id} ({rec.name!r}): reader failed: {type(exc).__name__}: {exc}")
            return
        if f is None:
            report.unknown_convention_spans += 1
            return
        report.spans_with_facts += 1
        self.facts.setdefault(rec.trace_id, []).append(f)
        self.fact_report[id(f)] = report

    def log(self, view: Any, report: SourceReport) -> None:
        report.logs_read += 1
        if self.progress is not None and not report.logs_read & _PROGRESS_EVERY:
            self.progress(report, False)
        try:
            f = read_log(view, self.options)
        except Exception as exc:
            report.problem(f"log record: reader failed: {type(exc).__name__}: {exc}")
            return
        if f is None:
            return
        if not f.trace_id or not f.span_id:
            report.unattached_logs += 1
            return
        report.logs_with_facts += 1
        self.facts.setdefault(f.trace_id, []).append(f)
        self.fact_report[id(f)] = report

    def runs(self, report: ExtractionReport) -> list[AgentRun]:
        out: list[AgentRun] = []
        loops: list[AgentRun] = []
        for trace_id, facts in self.facts.items():
            try:
                trace_runs = assemble_runs(facts, self.parents.get(trace_id, {}), options=self.options)
                if _stitch(trace_runs, facts, loops, self.options):
                    continue
                out.extend(trace_runs)
            except Exception as exc:
                src = self.fact_report.get(id(facts[0])) or (report.sources[0] if report.sources else None)
                if src is not None:
                    src.problem(f"trace {trace_id}: assembly failed: {type(exc).__name__}: {exc}")
                continue
            for f in facts:
                if f.problems:
                    src = self.fact_report.get(id(f))
                    if src is not None:
                        for p in f.problems:
                            src.problem(p)
        report.traces = len(self.facts)
        report.runs = len(out)
        report.trace_sources = {t: src for t, src in self.trace_source.items() if t in self.facts}
        return out


def _stitch(trace_runs: list[AgentRun], facts: list[SpanFacts], loops: list[AgentRun], options: ExtractOptions) -> bool:
    """Join a hand-written tool loop that left one trace per model call (no enclosing span).

    A trace whose only run has no agent (a bare model call) continues the latest such run when its
    input replays a tool call that run requested (same call id), or, when that run reported no
    calls at all (its output was not recorded, e.g. a streamed answer logged outside the span), when
    it repeats the same user request and replays calls: those calls are then the earlier run's.
    Returns True when the trace was merged into an earlier run.
    """
    if len(trace_runs) != 1 or trace_runs[0].agent_name is not None or trace_runs[0].parent_run_id is not None:
        return False
    if any(f.role == "agent" for f in facts):
        return False
    run = trace_runs[0]
    history = set().union(*(f.history_ids for f in facts))
    replayed = [raw for f in facts for raw in f.history_calls]
    if loops:
        earlier = loops[-1]
        requested = {c.call_id for c in earlier.tool_calls if c.call_id}
        same_request = bool(run.user_query) and run.user_query == earlier.user_query
        if history & requested or (not earlier.tool_calls and same_request and replayed):
            if not earlier.tool_calls:
                holder = next(f for f in facts)
                results: dict[str, tuple[Any, str | None]] = {}
                for f in facts:
                    results.update(f.results)
                for req in requested_calls(holder, replayed, options):
                    req.span_id = None
                    res = results.get(req.call_id or "")
                    if res is not None:
                        req.result = res[0] if options.capture_content else None
                        if res[1]:
                            req.status, req.error_type = "error", res[1]
                    earlier.tool_calls.append(req.to_call())
                requested = {c.call_id for c in earlier.tool_calls if c.call_id}
            earlier.tool_calls.extend(c for c in run.tool_calls if not c.call_id or c.call_id not in requested)
            earlier.final_output = run.final_output or earlier.final_output
            earlier.user_query = earlier.user_query or run.user_query
            if not earlier.available_tools:
                earlier.available_tools = run.available_tools
            earlier.conventions.extend(c for c in run.conventions if c not in earlier.conventions)
            return True
    loops.append(run)
    return False


# -- decoding ---------------------------------------------------------------------------------------
def _fix_ids(request: Any) -> None:
    """Hex ids read through protobuf's base64 mapping decode to 24 / 12 bytes: re-encoding those as
    base64 gives back the hex text, which is then decoded as hex."""
    def fix(holder: Any, field: str, size: int) -> None:
        raw = getattr(holder, field)
        if raw and len(raw) == size * 3 // 2:
            with contextlib.suppress(ValueError):  # not hex text after all: keep the bytes
                setattr(holder, field, bytes.fromhex(base64.b64encode(raw).decode("ascii")))

    for rs in getattr(request, "resource_spans", ()):
        for ss in rs.scope_spans:
            for sp in ss.spans:
                fix(sp, "trace_id", 16)
                fix(sp, "span_id", 8)
                fix(sp, "parent_span_id", 8)
                for link in sp.links:
                    fix(link, "trace_id", 16)
                    fix(link, "span_id", 8)
    for rl in getattr(request, "resource_logs", ()):
        for sl in rl.scope_logs:
            for lr in sl.log_records:
                fix(lr, "trace_id", 16)
                fix(lr, "span_id", 8)


def _from_json_doc(doc: Any, report: SourceReport, where: str) -> Iterator[Message]:
    if isinstance(doc, list):
        for n, item in enumerate(doc):
            yield from _from_json_doc(item, report, f"{where}[{n}]")
        return
    if not isinstance(doc, dict):
        report.problem(f"{where}: not an OTLP export request (a JSON {type(doc).__name__})")
        return
    keys = set(doc)
    kinds: list[type[Message]] = []
    if keys & {"resourceSpans", "resource_spans"}:
        kinds.append(ExportTraceServiceRequest)
    if keys & {"resourceLogs", "resource_logs"}:
        kinds.append(ExportLogsServiceRequest)
    if not kinds:
        report.problem(f"{where}: no resourceSpans/resourceLogs (not an OTLP export request)")
        return
    for kind in kinds:
        sub = {k: v for k, v in doc.items() if k in ("resourceSpans", "resource_spans", "resourceLogs", "resource_logs")}
        try:
            msg = json_format.ParseDict(sub, kind(), ignore_unknown_fields=True)
        except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
            report.problem(f"{where}: invalid OTLP/JSON: {str(exc)[:300]}")
            continue
        _fix_ids(msg)
        yield msg


def _from_json_text(text: str, report: SourceReport) -> Iterator[Message]:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        doc = None
    else:
        yield from _from_json_doc(doc, report, "document")
        return
    # JSON Lines (the Collector's file exporter): one export request per line
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (ValueError, RecursionError) as exc:
            report.problem(f"line {n}: bad JSON ({exc})")
            continue
        yield from _from_json_doc(item, report, f"line {n}")


def _gunzip(data: bytes, report: SourceReport) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    rest = data
    try:
        while rest:
            out += d.decompress(rest, MAX_INPUT_BYTES - len(out))
            if d.unconsumed_tail and len(out) >= MAX_INPUT_BYTES:
                report.problem(f"gzip: more than {MAX_INPUT_BYTES} bytes decompressed; rest ignored")
                break
            if d.eof:
                rest = d.unused_data  # concatenated gzip members
                if rest and rest[:2] == b"\x1f\x8b":
                    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    continue
                break
            rest = d.unconsumed_tail
        if not d.eof and len(out) < MAX_INPUT_BYTES:
            report.problem("gzip: truncated stream (read what was decompressed)")
    except zlib.error as exc:
        report.problem(f"gzip: {exc} (read what was decompressed)")
    return bytes(out)


def _proto_score(msg: Any) -> int:
    """How plausible a protobuf parse is: well-formed ids and names count, garbage does not."""
    score = 0
    for rs in getattr(msg, "resource_spans", ()):
        for ss in rs.scope_spans:
            for sp in ss.spans:
                score += 2 if len(sp.trace_id) == 16 and len(sp.span_id) == 8 else -1
    for rl in getattr(msg, "resource_logs", ()):
        for sl in rl.scope_logs:
            for lr in sl.log_records:
                score += 2 if lr.time_unix_nano or lr.observed_time_unix_nano or lr.HasField("body") else -1
    return score


def _from_protobuf(data: bytes, report: SourceReport) -> Iterator[Message]:
    best: Message | None = None
    best_score = 0
    errors: list[str] = []
    for kind in (ExportTraceServiceRequest, ExportLogsServiceRequest):
        try:
            msg = kind.FromString(data)
        except (DecodeError, ValueError, RecursionError) as exc:
            errors.append(f"{kind.__name__}: {exc}")
            continue
        score = _proto_score(msg)
        if score > best_score:
            best, best_score = msg, score
    if best is None:
        report.problem("not OTLP protobuf, JSON or gzip" + (f" ({'; '.join(errors)})" if errors else ""))
        return
    yield best


def _decode_bytes(data: bytes, report: SourceReport) -> Iterator[Message]:
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, report)
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"["):
        try:
            text = stripped.decode("utf-8")
        except UnicodeDecodeError:
            report.problem("JSON input is not UTF-8")
            return
        yield from _from_json_text(text, report)
        return
    if not stripped:
        report.problem("empty input")
        return
    yield from _from_protobuf(data, report)


def _feed_message(msg: Any, coll: _Collector, report: SourceReport) -> None:
    if hasattr(msg, "resource_spans"):
        for rec in span_records_from_proto(msg):
            coll.span(rec, report)
    if hasattr(msg, "resource_logs"):
        for view in log_views_from_proto(msg):
            coll.log(view, report)


def _feed(source: Any, coll: _Collector, report: ExtractionReport) -> None:
    if isinstance(source, (str, PathLike)):
        path = Path(source)
        sr = SourceReport(source=str(path))
        report.sources.append(sr)
        try:
            with path.open("rb") as fh:
                data = fh.read(MAX_INPUT_BYTES + 1)
        except OSError as exc:
            sr.problem(f"cannot read: {exc}")
            return
        if len(data) > MAX_INPUT_BYTES:
            sr.problem(f"file larger than {MAX_INPUT_BYTES} bytes; only the start was read")
            data = data[:MAX_INPUT_BYTES]
        for msg in _decode_bytes(data, sr):
            _feed_message(msg, coll, sr)
        if coll.progress is not None:
            coll.progress(sr, True)
        return
    if isinstance(source, (bytes, bytearray, memoryview)):
        sr = SourceReport(source="<bytes>")
        report.sources.append(sr)
        for msg in _decode_bytes(bytes(source), sr):
            _feed_message(msg, coll, sr)
        return
    if isinstance(source, Message):
        sr = SourceReport(source=f"<{type(source).__name__}>")
        report.sources.append(sr)
        _feed_message(source, coll, sr)
        return
    if isinstance(source, Iterable):
        items = list(source)
        if items and all(isinstance(i, (str, PathLike)) for i in items):
            for item in items:
                _feed(item, coll, report)
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
                _feed(item, coll, report)
            else:
                sr.problem(f"unsupported item {type(item).__name__}")
        return
    sr = SourceReport(source=f"<{type(source).__name__}>")
    report.sources.append(sr)
    sr.problem(f"unsupported source type {type(source).__name__}")


def extract_runs_with_report(
    source: Any, options: ExtractOptions | None = None, *, progress: Progress | None = None
) -> tuple[list[AgentRun], ExtractionReport]:
    """Runs from ``source`` plus what could not be read. Never raises on malformed input.

    ``source``: a path, a list of paths (trace and log files mixed), bytes, an
    ``ExportTraceServiceRequest`` / ``ExportLogsServiceRequest``, or an iterable of ``ReadableSpan``
    (live SDK spans, e.g. from ``InMemorySpanExporter``), SDK log records or :class:`SpanRecord` s.
    All sources are joined before assembly, so log files attach to the spans of trace files.
    ``progress`` hears about each file as it is read (progress bars of the command line).
    """
    opts = options or DEFAULT_OPTIONS
    report = ExtractionReport()
    coll = _Collector(opts, progress)
    try:
        _feed(source, coll, report)
    except Exception as exc:  # last line of defence: report, keep what was read
        if not report.sources:
            report.sources.append(SourceReport(source="<input>"))
        report.sources[-1].problem(f"reading failed: {type(exc).__name__}: {exc}")
    return coll.runs(report), report


def extract_runs(source: Any, options: ExtractOptions | None = None) -> list[AgentRun]:
    """Runs from ``source`` (see :func:`extract_runs_with_report`); problems are not reported."""
    return extract_runs_with_report(source, options)[0]

