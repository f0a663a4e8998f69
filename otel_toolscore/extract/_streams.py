"""Byte formats of the offline reader: gzip, JSON Lines and JSON documents, protobuf (whole or one
resource at a time), and the sniffing that tells them apart by content (see :mod:`._sources`).

Each input becomes a stream of messages — protobuf trace data as :class:`TraceGroups` (spans parsed
leanly, their attributes a key table: :mod:`._otlp_views`), protobuf log requests, or :class:`JsonDoc` s
(one parsed OTLP/JSON export request) — read as the bytes arrive; what cannot be decoded is told to the source's
report (:class:`Problems`) and the rest is read on.
"""

from __future__ import annotations

import io
import json
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any, Protocol

import orjson
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from ._otlp_views import LEAN_RESOURCE_SPANS, LEAN_SPAN, LEAN_TRACE_REQUEST

__all__ = [
    "CHUNK", "MAX_INPUT_BYTES", "WHOLE_READ_BYTES", "Counted", "JsonDoc", "Problems", "TraceGroups", "decode_stream",
]

#: Largest input read whole: one JSON document (not lines), one JSON line, one protobuf resource.
MAX_INPUT_BYTES = 512 * 1024 * 1024
#: Protobuf inputs up to this size are parsed in one piece; larger ones one resource at a time.
WHOLE_READ_BYTES = 64 * 1024 * 1024
#: Bytes read (and decompressed) at a time.
CHUNK = 1 << 20


class Problems(Protocol):
    """Where a stream tells what it could not read (a source's report)."""

    def problem(self, message: str) -> None: ...


class JsonDoc:
    """One parsed OTLP/JSON export request (traces, logs or both)."""

    __slots__ = ("doc",)

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc


def _from_json_doc(doc: Any, report: Problems, where: str) -> Iterator[Any]:
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
    yield JsonDoc(doc)


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

    def __init__(self, raw: IO[bytes], report: Problems) -> None:
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
                self._buf = d.decompress(d.unconsumed_tail, CHUNK)
                return
            if d.eof:
                rest = d.unused_data or self._raw.read(CHUNK)
                if rest[:2] == b"\x1f\x8b":
                    self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # the next member
                    self._buf = self._d.decompress(rest, CHUNK)
                    return
                self._done = True  # trailing garbage after the last member is ignored, as gzip does
                return
            chunk = self._raw.read(CHUNK)
            if not chunk:
                self._report.problem("gzip: truncated stream (read what was decompressed)")
                self._done = True
                return
            self._buf = d.decompress(chunk, CHUNK)
        except zlib.error as exc:
            self._report.problem(f"gzip: {exc} (read what was decompressed)")
            self._done = True


def _read_bounded(fh: IO[bytes], report: Problems, what: str) -> bytes:
    data = fh.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        report.problem(f"{what} larger than {MAX_INPUT_BYTES} bytes; only the start was read")
        data = data[:MAX_INPUT_BYTES]
    return data


def _from_json_stream(fh: IO[bytes], first: bytes, report: Problems) -> Iterator[Any]:
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


def _stream_lines(fh: IO[bytes], first: bytes, report: Problems) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of a stream whose first line was already read."""
    n, line = 1, first
    while line:
        yield n, line
        n += 1
        line = _readline(fh, report, n)


def _json_lines(lines: Iterable[tuple[int, bytes]], report: Problems) -> Iterator[Any]:
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


def _readline(fh: IO[bytes], report: Problems, n: int) -> bytes:
    line = fh.readline(MAX_INPUT_BYTES + 1)
    if len(line) > MAX_INPUT_BYTES:
        report.problem(f"line {n}: longer than {MAX_INPUT_BYTES} bytes; skipped")
        while line and not line.endswith(b"\n"):
            line = fh.readline(CHUNK)
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


class TraceGroups:
    """Trace data read leanly (:mod:`._otlp_views`): per scope, (its ``ResourceSpans``, its
    ``ScopeSpans``, its spans as (encoded bytes, lean ``Span``)) — attributes left a key table."""

    __slots__ = ("groups",)

    def __init__(self, groups: list[tuple[Any, Any, list[tuple[bytes, Any]]]]) -> None:
        self.groups = groups


def _lean_groups(resources: Iterable[Any]) -> TraceGroups:
    """The lean groups of parsed lean ``ResourceSpans``; raises as the standard parse would."""
    parse = LEAN_SPAN.FromString
    return TraceGroups([(rs, ss, [(raw, parse(raw)) for raw in ss.spans]) for rs in resources for ss in rs.scope_spans])


def _lean_score(traces: TraceGroups) -> int:
    """:func:`_proto_score` of lean trace data."""
    score = 0
    for _rs, _ss, spans in traces.groups:
        for _raw, sp in spans:
            score += 2 if len(sp.trace_id) == 16 and len(sp.span_id) == 8 else -1
    return score


def _from_protobuf(data: bytes, report: Problems) -> Iterator[Any]:
    """One protobuf input read whole: trace data as :class:`TraceGroups` (the standard message
    should the lean one not read it), log data as ``ExportLogsServiceRequest``."""
    best: Any = None
    best_score = 0
    errors: list[str] = []
    try:
        lean: Any = _lean_groups(LEAN_TRACE_REQUEST.FromString(data).resource_spans)
        lean_score = _lean_score(lean)
    except (DecodeError, ValueError, RecursionError):
        lean = None
    kinds: tuple[type[Message], ...] = (ExportLogsServiceRequest,)
    if lean is None:
        kinds = (ExportTraceServiceRequest, ExportLogsServiceRequest)  # the standard words for what is wrong
    elif lean_score > best_score:
        best, best_score = lean, lean_score
    for kind in kinds:
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


def _from_protobuf_stream(fh: IO[bytes], first: bytes, report: Problems) -> Iterator[Any]:
    """A large protobuf input, one top-level field (one resource) at a time: every field of an
    export request is ``resource_spans`` / ``resource_logs`` (1, length-delimited)."""
    stream = io.BufferedReader(_Prefixed(first, fh), CHUNK) if first else fh
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
        if kind is ResourceSpans:
            try:
                yield _lean_groups((LEAN_RESOURCE_SPANS.FromString(chunk),))
                continue
            except (DecodeError, ValueError, RecursionError):
                pass  # the standard message says what is wrong (or reads what the lean one did not)
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


class Counted(io.RawIOBase):
    """A file's raw bytes, each read told to ``on_read`` (its count): a progress bar moves within a
    file, not only when it ends."""

    def __init__(self, raw: IO[bytes], on_read: Callable[[int], None]) -> None:
        self._raw = raw
        self._on_read = on_read

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._raw.readinto(b)  # type: ignore[attr-defined]
        if n:
            self._on_read(n)
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


def decode_stream(
    fh: IO[bytes], report: Problems, size_hint: int | None, whole_read_bytes: int = WHOLE_READ_BYTES
) -> Iterator[Any]:
    """Messages (:class:`TraceGroups`, protobuf requests, :class:`JsonDoc` s) of one input, as it is read: protobuf
    inputs up to ``whole_read_bytes`` are parsed in one piece, larger ones one resource at a time."""
    head = fh.read(2)
    if head == b"\x1f\x8b":
        fh = io.BufferedReader(_Gunzip(io.BufferedReader(_Prefixed(head, fh)), report), CHUNK)
        size_hint = None
        head = b""
    # sniff: the first non-blank byte tells JSON from protobuf
    start = head + fh.read(max(0, 64 - len(head)))
    stripped = start.lstrip()
    while start and not stripped:
        more = fh.read(CHUNK)
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
    if size_hint is not None and size_hint <= whole_read_bytes:
        yield from _from_protobuf(start + _read_bounded(fh, report, "input"), report)
        return
    yield from _from_protobuf_stream(fh, start, report)
