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

Nothing raises out of :func:`extract_runs_with_report` / :func:`iter_runs`: undecodable input is
counted and described in the :class:`ExtractionReport`, and the rest is read.
"""

from __future__ import annotations

import io
import json
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from os import PathLike
from pathlib import Path
from typing import IO, Any

import orjson
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans
from pydantic import BaseModel, Field

from ..model import AgentRun
from ..run_records import RunRecord
from .assemble import assemble_records
from .content import requested_calls
from .facts import DEFAULT_OPTIONS, ExtractOptions, SpanFacts
from .otlp_json import OtlpJsonError, log_views_from_json, span_records_from_json
from .readers import read_log, read_span
from .records import SpanRecord, log_views_from_proto, record_from_readable, span_records_from_proto

__all__ = ["ExtractionReport", "SourceReport", "extract_runs", "extract_runs_with_report", "iter_runs"]

#: Largest input read whole: one JSON document (not lines), one JSON line, one protobuf resource.
MAX_INPUT_BYTES = 512 * 1024 * 1024
#: Protobuf inputs up to this size are parsed in one piece; larger ones one resource at a time.
WHOLE_READ_BYTES = 64 * 1024 * 1024
#: A trace is complete when its root was seen and this many records (spans, log records) of other
#: traces followed its last one.
DEFAULT_IDLE_RECORDS = 10_000
#: Most traces kept open at once; past it the least recently seen is assembled with what it has.
DEFAULT_MAX_OPEN_TRACES = 50_000
_CHUNK = 1 << 20
_MAX_ERRORS_PER_SOURCE = 50
# A progress callback hears about a source every this many spans/log records (a power of two minus one: a mask).
_PROGRESS_EVERY = 1023

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


class _Collector:
    """Facts grouped by trace, assembled into runs as traces complete (see the module docstring)."""

    def __init__(self, options: ExtractOptions, report: ExtractionReport, idle_records: int, max_open: int,
                 progress: Progress | None = None) -> None:
        self.options = options
        self.progress = progress
        self.report = report
        self.idle = max(0, idle_records)
        self.max_open = max(1, max_open)
        self.facts: dict[str, list[SpanFacts]] = {}
        self.parents: dict[str, dict[str, str | None]] = {}
        self.fact_report: dict[int, SourceReport] = {}
        self.rooted: set[str] = set()
        #: trace id → record count when it was last seen, least recently seen first
        self.last_seen: OrderedDict[str, int] = OrderedDict()
        #: trace id → position of its first record in the input (extract_runs keeps input order)
        self.first_seen: dict[str, int] = {}
        self.records = 0
        #: the latest run of a hand-written loop that left one trace per model call (see _stitch)
        self.loop: tuple[int, RunRecord] | None = None
        self.traces_done = 0
        self.runs_out = 0
        self._next_check = 0
        #: traces already assembled (bounded): a record of one of them arrived too late
        self.done: OrderedDict[str, None] = OrderedDict()

    def _late(self, trace_id: str, report: SourceReport) -> bool:
        if trace_id in self.done:
            report.late_records += 1  # its runs were already yielded: raise idle_records
            return True
        return False

    def _touch(self, trace_id: str, report: SourceReport) -> None:
        self.records += 1
        if trace_id not in self.first_seen:
            self.first_seen[trace_id] = self.records
            self.report.trace_sources.setdefault(trace_id, report.source)
        self.last_seen[trace_id] = self.records
        self.last_seen.move_to_end(trace_id)

    def span(self, rec: SpanRecord, report: SourceReport) -> None:
        report.spans_read += 1
        if self.progress is not None and not report.spans_read & _PROGRESS_EVERY:
            self.progress(report, False)
        trace_id = rec.trace_id
        if self.done and self._late(trace_id, report):
            return
        self._touch(trace_id, report)
        self.parents.setdefault(trace_id, {})[rec.span_id] = rec.parent_span_id
        if rec.parent_span_id is None:
            self.rooted.add(trace_id)
        try:
            f = read_span(rec, self.options)
        except Exception as exc:  # a reader must never stop the file
            report.problem(f"span {rec.span_id} ({rec.name!r}): reader failed: {type(exc).__name__}: {exc}")
            return
        if f is None:
            report.unknown_convention_spans += 1
            return
        report.spans_with_facts += 1
        f.materialize(self.options)  # compact now (content truncated): a pending trace holds no raw content
        self.facts.setdefault(trace_id, []).append(f)
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
        if self.done and self._late(f.trace_id, report):
            return
        report.logs_with_facts += 1
        f.materialize(self.options)
        self._touch(f.trace_id, report)
        self.facts.setdefault(f.trace_id, []).append(f)
        self.fact_report[id(f)] = report

    def complete(self) -> Iterator[tuple[int, int, AgentRun]]:
        """Runs of the traces complete so far: (first-seen position, index in trace, run).

        Looked at every ``idle_records / 16`` records (the idle traces are the least recently seen,
        at the front). A trace whose root never came is assembled after four times the wait."""
        last_seen = self.last_seen
        if self.records < self._next_check and len(last_seen) <= self.max_open:
            return
        self._next_check = self.records + max(1, self.idle // 16)
        ready: list[str] = []
        for trace_id, seen in last_seen.items():
            age = self.records - seen
            if age < self.idle:
                break
            if trace_id in self.rooted or age >= 4 * self.idle:
                ready.append(trace_id)
        ready.sort(key=lambda t: self.first_seen.get(t, 0))  # input order (hand-written loops join in it)
        for trace_id in ready:
            yield from self._assemble(trace_id)
        while len(last_seen) > self.max_open:
            yield from self._assemble(next(iter(last_seen)))

    def finish(self) -> Iterator[tuple[int, int, AgentRun]]:
        """Every trace still open, then the held loop run (end of input)."""
        for trace_id in sorted(self.last_seen, key=lambda t: self.first_seen.get(t, 0)):  # input order
            yield from self._assemble(trace_id)
        if self.loop is not None:
            pos, run = self.loop
            self.loop = None
            self.runs_out += 1
            yield pos, 0, run.to_model()
        self.report.traces = self.traces_done
        self.report.runs = self.runs_out

    def _assemble(self, trace_id: str) -> Iterator[tuple[int, int, AgentRun]]:
        self.last_seen.pop(trace_id, None)
        self.done[trace_id] = None
        if len(self.done) > 4 * self.max_open:
            self.done.popitem(last=False)
        self.rooted.discard(trace_id)
        parents = self.parents.pop(trace_id, {})
        facts = self.facts.pop(trace_id, None)
        pos = self.first_seen.pop(trace_id, 0)
        if not facts:
            self.report.trace_sources.pop(trace_id, None)  # only traces with facts are named
            return
        self.traces_done += 1
        reports = [self.fact_report.pop(id(f), None) for f in facts]
        try:
            trace_runs = assemble_records(facts, parents, options=self.options)
        except Exception as exc:
            src = reports[0] or (self.report.sources[0] if self.report.sources else None)
            if src is not None:
                src.problem(f"trace {trace_id}: assembly failed: {type(exc).__name__}: {exc}")
            return
        for f, src in zip(facts, reports):
            if f.problems and src is not None:
                for p in f.problems:
                    src.problem(p)
        loops = [self.loop[1]] if self.loop is not None else []
        if _stitch(trace_runs, facts, loops, self.options):
            return  # merged into the held loop run
        if len(loops) == 2 or (len(loops) == 1 and self.loop is None):
            # a new loop run: the previous one can no longer be continued (only the latest can)
            previous = self.loop
            self.loop = (pos, loops[-1])
            if previous is not None:
                self.runs_out += 1
                yield previous[0], 0, previous[1].to_model()
            return
        for i, run in enumerate(trace_runs):
            self.runs_out += 1
            yield pos, i, run.to_model()


def _stitch(trace_runs: list[RunRecord], facts: list[SpanFacts], loops: list[RunRecord], options: ExtractOptions) -> bool:
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
    for f in facts:
        f.materialize_inputs(options)  # what the model was given tells which run this trace continues
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
class _JsonDoc:
    """One parsed OTLP/JSON export request (traces, logs or both)."""

    __slots__ = ("doc",)

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc


def _from_json_doc(doc: Any, report: SourceReport, where: str) -> Iterator[Any]:
    if isinstance(doc, list):
        for n, item in enumerate(doc):
            yield from _from_json_doc(item, report, f"{where}[{n}]")
        return
    if not isinstance(doc, dict):
        report.problem(f"{where}: not an OTLP export request (a JSON {type(doc).__name__})")
        return
    if not (doc.keys() & {"resourceSpans", "resource_spans", "resourceLogs", "resource_logs"}):
        report.problem(f"{where}: no resourceSpans/resourceLogs (not an OTLP export request)")
        return
    yield _JsonDoc(doc)


def _loads(data: bytes | str) -> Any:
    """JSON text → Python (``orjson``; deeper nesting than it allows raises like bad JSON).

    What orjson refuses but JSON allows — a lone surrogate escape such as ``"\\ud800"``, integers
    past 64 bits — is read by the standard library instead: one odd string must not lose a record."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            return json.loads(data)
        except ValueError:
            raise exc from None


class _Gunzip(io.RawIOBase):
    """A gzip stream decompressed as it is read; concatenated members are read on; a truncated or
    corrupt stream ends the input where it breaks (reported once)."""

    def __init__(self, raw: IO[bytes], report: SourceReport) -> None:
        self._raw = raw
        self._report = report
        self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._buf = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf and not self._done:
            self._fill()
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    def _fill(self) -> None:
        d = self._d
        try:
            if d.unconsumed_tail:
                self._buf = d.decompress(d.unconsumed_tail, _CHUNK)
                return
            if d.eof:
                rest = d.unused_data or self._raw.read(_CHUNK)
                if rest[:2] == b"\x1f\x8b":
                    self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # the next member
                    self._buf = self._d.decompress(rest, _CHUNK)
                    return
                self._done = True  # trailing garbage after the last member is ignored, as gzip does
                return
            chunk = self._raw.read(_CHUNK)
            if not chunk:
                self._report.problem("gzip: truncated stream (read what was decompressed)")
                self._done = True
                return
            self._buf = d.decompress(chunk, _CHUNK)
        except zlib.error as exc:
            self._report.problem(f"gzip: {exc} (read what was decompressed)")
            self._done = True


def _read_bounded(fh: IO[bytes], report: SourceReport, what: str) -> bytes:
    data = fh.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        report.problem(f"{what} larger than {MAX_INPUT_BYTES} bytes; only the start was read")
        data = data[:MAX_INPUT_BYTES]
    return data


def _from_json_stream(fh: IO[bytes], first: bytes, report: SourceReport) -> Iterator[Any]:
    """JSON Lines read line by line; anything else (one document, pretty-printed) read whole."""
    try:
        _loads(first)
    except (orjson.JSONDecodeError, RecursionError):
        pass
    else:  # the first line is a JSON value of its own: JSON Lines (or a one-line document)
        yield from _json_lines(_stream_lines(fh, first, report), report)
        return
    data = first + _read_bounded(fh, report, "JSON document")
    try:
        whole = _loads(data)
    except (orjson.JSONDecodeError, RecursionError):
        pass
    else:
        yield from _from_json_doc(whole, report, "document")
        return
    yield from _json_lines(enumerate(data.splitlines(), 1), report)  # JSON Lines whose first line is bad


def _stream_lines(fh: IO[bytes], first: bytes, report: SourceReport) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of a stream whose first line was already read."""
    n, line = 1, first
    while line:
        yield n, line
        n += 1
        line = _readline(fh, report, n)


def _json_lines(lines: Iterable[tuple[int, bytes]], report: SourceReport) -> Iterator[Any]:
    """The export requests of numbered JSON lines; a line that is not JSON is reported, not raised."""
    for n, raw in lines:
        if not raw.strip():
            continue
        try:
            item = _loads(raw)
        except (orjson.JSONDecodeError, RecursionError) as exc:
            report.problem(f"line {n}: bad JSON ({exc})")
            continue
        yield from _from_json_doc(item, report, f"line {n}")


def _readline(fh: IO[bytes], report: SourceReport, n: int) -> bytes:
    line = fh.readline(MAX_INPUT_BYTES + 1)
    if len(line) > MAX_INPUT_BYTES:
        report.problem(f"line {n}: longer than {MAX_INPUT_BYTES} bytes; skipped")
        while line and not line.endswith(b"\n"):
            line = fh.readline(_CHUNK)
        return b"\n"
    return line


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


def _varint(fh: IO[bytes]) -> int | None:
    shift = result = 0
    while True:
        b = fh.read(1)
        if not b:
            return None if shift == 0 else -1
        result |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return result
        shift += 7
        if shift > 63:
            return -1


def _from_protobuf_stream(fh: IO[bytes], first: bytes, report: SourceReport) -> Iterator[Message]:
    """A large protobuf input, one top-level field (one resource) at a time: every field of an
    export request is ``resource_spans`` / ``resource_logs`` (1, length-delimited)."""
    stream = io.BufferedReader(_Prefixed(first, fh), _CHUNK) if first else fh
    kind: type[Message] | None = None
    while True:
        tag = _varint(stream)
        if tag is None:
            return
        size = _varint(stream) if tag == 0x0A else -1
        if tag == -1 or size is None or size < 0 or size > MAX_INPUT_BYTES:
            report.problem("protobuf: not a sequence of OTLP resources (read what came before)")
            return
        chunk = stream.read(size)
        if len(chunk) < size:
            report.problem("protobuf: truncated (read what came before)")
            return
        if kind is None:  # the first resource tells traces from logs, as for a whole request
            scores: list[tuple[int, type[Message]]] = []
            for k in (ResourceSpans, ResourceLogs):
                try:
                    scores.append((_proto_score(_request(k.FromString(chunk))), k))
                except (DecodeError, ValueError, RecursionError):
                    continue
            best = max(scores, default=None, key=lambda t: t[0])
            if best is None or best[0] <= 0:
                report.problem("not OTLP protobuf, JSON or gzip")
                return
            kind = best[1]
        try:
            resource = kind.FromString(chunk)
        except (DecodeError, ValueError, RecursionError) as exc:
            report.problem(f"protobuf: a resource failed to decode ({exc}); read on")
            continue
        yield _request(resource)


def _request(resource: Message) -> Message:
    """One resource as the export request holding it."""
    if isinstance(resource, ResourceSpans):
        return ExportTraceServiceRequest(resource_spans=[resource])
    assert isinstance(resource, ResourceLogs)
    return ExportLogsServiceRequest(resource_logs=[resource])


class _Counted(io.RawIOBase):
    """A file's raw bytes, counted into its report as they are read (a progress bar moves within a
    file, not only when it ends)."""

    def __init__(self, raw: IO[bytes], report: SourceReport, progress: Progress | None) -> None:
        self._raw = raw
        self._report = report
        self._progress = progress

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._raw.readinto(b)  # type: ignore[attr-defined]
        if n:
            self._report.bytes_read += n
            if self._progress is not None:
                self._progress(self._report, False)
        return int(n or 0)


class _Prefixed(io.RawIOBase):
    """``first`` (already read to sniff the format), then the rest of ``fh``."""

    def __init__(self, first: bytes, fh: IO[bytes]) -> None:
        self._first = first
        self._fh = fh

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._first:
            n = min(len(b), len(self._first))
            b[:n] = self._first[:n]
            self._first = self._first[n:]
            return n
        data = self._fh.read(len(b))
        b[: len(data)] = data
        return len(data)


def _decode_stream(fh: IO[bytes], report: SourceReport, size_hint: int | None) -> Iterator[Any]:
    """Messages (protobuf requests, or :class:`_JsonDoc` s) of one input, as it is read."""
    head = fh.read(2)
    if head == b"\x1f\x8b":
        fh = io.BufferedReader(_Gunzip(io.BufferedReader(_Prefixed(head, fh)), report), _CHUNK)
        size_hint = None
        head = b""
    # sniff: the first non-blank byte tells JSON from protobuf
    start = head + fh.read(max(0, 64 - len(head)))
    stripped = start.lstrip()
    while start and not stripped:
        more = fh.read(_CHUNK)
        if not more:
            break
        start, stripped = more, more.lstrip()
    if not stripped:
        report.problem("empty input")
        return
    if stripped[:1] in (b"{", b"["):
        first = stripped + _readline(fh, report, 1) if not stripped.endswith(b"\n") else stripped
        yield from _from_json_stream(fh, first, report)
        return
    if size_hint is not None and size_hint <= WHOLE_READ_BYTES:
        yield from _from_protobuf(start + _read_bounded(fh, report, "input"), report)
        return
    yield from _from_protobuf_stream(fh, start, report)


def _feed_message(msg: Any, coll: _Collector, report: SourceReport) -> None:
    if isinstance(msg, _JsonDoc):
        try:  # a document is read whole before its records join the traces, as a protobuf one is
            spans = list(span_records_from_json(msg.doc))
            logs = list(log_views_from_json(msg.doc))
        except (OtlpJsonError, RecursionError) as exc:
            report.problem(f"invalid OTLP/JSON: {str(exc)[:300]}")
            return
        for rec in spans:
            coll.span(rec, report)
        for view in logs:
            coll.log(view, report)
        return
    if hasattr(msg, "resource_spans"):
        for rec in span_records_from_proto(msg):
            coll.span(rec, report)
    if hasattr(msg, "resource_logs"):
        for view in log_views_from_proto(msg):
            coll.log(view, report)


def _feed(source: Any, coll: _Collector, report: ExtractionReport) -> Iterator[tuple[int, int, AgentRun]]:
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
            fh = io.BufferedReader(_Counted(raw, sr, coll.progress), _CHUNK)
            try:
                size: int | None = path.stat().st_size
            except OSError:
                size = None
            try:
                for msg in _decode_stream(fh, sr, size):
                    _feed_message(msg, coll, sr)
                    yield from coll.complete()
            except OSError as exc:
                sr.problem(f"cannot read: {exc}")
        if coll.progress is not None:
            coll.progress(sr, True)
        return
    if isinstance(source, (bytes, bytearray, memoryview)):
        sr = SourceReport(source="<bytes>")
        report.sources.append(sr)
        data = bytes(source)
        for msg in _decode_stream(io.BytesIO(data), sr, len(data)):
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
    coll = _Collector(options or DEFAULT_OPTIONS, report, idle_records, max_open_traces, progress)
    try:
        yield from _feed(source, coll, report)
    except Exception as exc:  # last line of defence: report, keep what was read
        if not report.sources:
            report.sources.append(SourceReport(source="<input>"))
        report.sources[-1].problem(f"reading failed: {type(exc).__name__}: {exc}")
    yield from coll.finish()


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
    for _pos, _i, run in _runs(source, options, rep, idle_records, max_open_traces):
        yield run


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
    found = list(_runs(source, options, report, DEFAULT_IDLE_RECORDS, DEFAULT_MAX_OPEN_TRACES, progress))
    found.sort(key=lambda item: (item[0], item[1]))
    return [run for _, _, run in found], report


def extract_runs(source: Any, options: ExtractOptions | None = None) -> list[AgentRun]:
    """Runs from ``source`` (see :func:`extract_runs_with_report`); problems are not reported."""
    return extract_runs_with_report(source, options)[0]
