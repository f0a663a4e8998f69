"""OTLP export requests (protobuf or OTLP/JSON) to the spans the service buffers and scores.

The service runs received spans through the same core a live process runs, read in place: each
span is an :class:`~otel_toolscore.core._otlp_spans.OtlpSpan` view over its decoded message (its
attributes a key table, values decoded when a reader looks a key up), never an SDK
``ReadableSpan`` (:func:`trace_request`). The request around the spans is parsed with each span
left as its encoded bytes, which the view keeps: in enrich-and-forward mode a span leaves as
received, never re-encoded (:mod:`._wire`).

:func:`decode_spans` still turns a request into SDK ``ReadableSpan`` objects, for an injected SDK
``SpanExporter`` (and for replaying recorded traces through a live span processor).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError as _ProtobufError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ..core._otlp_spans import LEAN_SPAN, LEAN_TRACE_REQUEST, OtlpResource, lean_span_view, scope_view
from ..extract._records import any_value
from ._wire import Envelope, WireSpan, envelope

__all__ = [
    "DecodeError",
    "DecodedSpan",
    "TraceRequest",
    "as_trace_request",
    "decode_spans",
    "parse_logs_request",
    "parse_trace_request",
    "trace_request",
]

# OTLP SpanFlags bits 8 and 9 (opentelemetry-proto >= 1.1): whether the parent's is_remote is known, and its value.
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
# OTLP SpanKind numbers (UNSPECIFIED=0, INTERNAL=1, ...) to the SDK's enum (INTERNAL=0, ...).
_KINDS = (SpanKind.INTERNAL, SpanKind.INTERNAL, SpanKind.SERVER, SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER)
_STATUS = (StatusCode.UNSET, StatusCode.OK, StatusCode.ERROR)
# Memory budget estimate of one decoded span: twice its encoded size (attribute dicts and strings)
# plus the objects around it. Measured: 2.8 KB of RSS per 458-byte span; this estimates 2.96 KB.
SPAN_SIZE_FACTOR = 2
SPAN_OVERHEAD_BYTES = 2048
# Per decoded attribute (dict slot, key and value objects): what makes a resource or span with
# tens of thousands of short attributes cost far more than twice its encoded size.
ATTRIBUTE_OVERHEAD_BYTES = 160


class DecodeError(ValueError):
    """The request body is not a valid OTLP export request."""


@dataclass(slots=True)
class DecodedSpan:
    """One received span: what the core reads (an :class:`~otel_toolscore.core._otlp_spans.OtlpSpan`
    view, or an SDK ``ReadableSpan`` from :func:`decode_spans`), and what the buffer needs."""

    span: Any
    trace_id: int
    span_id: int
    parent_id: int | None
    # Whether the sender said the parent is in another process (``None``: not said, older senders).
    parent_remote: bool | None
    cost: int  # estimated bytes held while buffered
    #: the span as received, encoded (:data:`._wire.WireSpan`), kept for enrich-and-forward
    wire: WireSpan | None = None


# -- request parsing ------------------------------------------------------------------------------
_ID_FIELDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8, "trace_id": 16, "span_id": 8, "parent_span_id": 8}


def _hex_ids_to_base64(node: Any) -> Any:
    """OTLP/JSON writes ids as hex; protobuf's JSON mapping reads bytes as base64. Convert in place."""
    if isinstance(node, dict):
        for key, value in node.items():
            size = _ID_FIELDS.get(key)
            if size is not None and isinstance(value, str):
                if len(value) == size * 2:
                    try:
                        node[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
                    except ValueError:
                        pass  # already base64 (protobuf's own JSON mapping)
            else:
                _hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids_to_base64(item)
    return node


def _parse(body: bytes, content_type: str, message: Any) -> Any:
    kind = content_type.split(";", 1)[0].strip().lower()
    try:
        if kind == "application/json":
            doc = json.loads(body)
            if not isinstance(doc, dict):
                raise DecodeError("OTLP/JSON body must be an object")
            json_format.ParseDict(_hex_ids_to_base64(doc), message, ignore_unknown_fields=True)
        else:
            message.ParseFromString(body)
    except DecodeError:
        raise
    except Exception as exc:  # protobuf/json raise several types; all mean a bad body
        raise DecodeError(f"invalid OTLP {kind or 'protobuf'} body: {str(exc)[:200]}") from None
    return message


def parse_trace_request(body: bytes, content_type: str = "application/x-protobuf") -> ExportTraceServiceRequest:
    return _parse(body, content_type, ExportTraceServiceRequest())  # type: ignore[no-any-return]


def parse_logs_request(body: bytes, content_type: str = "application/x-protobuf") -> ExportLogsServiceRequest:
    return _parse(body, content_type, ExportLogsServiceRequest())  # type: ignore[no-any-return]


# -- spans ----------------------------------------------------------------------------------------
def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}


def _status(code: int, message: str) -> Status:
    status_code = _STATUS[code] if 0 <= code < len(_STATUS) else StatusCode.UNSET
    # The SDK keeps a description only on ERROR (and warns otherwise).
    return Status(status_code, message or None) if status_code is StatusCode.ERROR else Status(status_code)


def _id(raw: bytes) -> int:
    return int.from_bytes(raw, "big") if raw else 0


def _shared_cost(holder: Any) -> int:
    """Estimated bytes of a decoded resource or scope (its attributes dict)."""
    n = len(holder.attributes)
    return SPAN_SIZE_FACTOR * holder.ByteSize() + ATTRIBUTE_OVERHEAD_BYTES * n if n else 0


def decode_spans(request: ExportTraceServiceRequest, *, keep_wire: bool = False) -> Iterator[DecodedSpan]:
    """Every span of ``request`` with a valid trace and span id (others are skipped), as an SDK
    ``ReadableSpan`` (what an injected SDK ``SpanExporter`` takes).

    ``keep_wire``: each span also keeps its encoded bytes, and its resource's and scope's (forwarded
    as received, :mod:`._wire`); they are counted in its cost once more."""
    for rs in request.resource_spans:
        resource = Resource(_attrs(rs.resource.attributes), rs.schema_url or None)
        # The resource and each scope are decoded once per request and held as long as any of their
        # spans is buffered: their cost goes on the first span that holds them.
        shared = _shared_cost(rs.resource)
        resource_env = envelope(rs.resource, rs.schema_url) if keep_wire else (b"", b"")
        for ss in rs.scope_spans:
            scope_env = envelope(ss.scope, ss.schema_url) if keep_wire else (b"", b"")
            scope = InstrumentationScope(
                ss.scope.name, ss.scope.version or None, ss.schema_url or None, _attrs(ss.scope.attributes) or None
            )
            shared += _shared_cost(ss.scope)
            for sp in ss.spans:
                trace_id = _id(sp.trace_id)
                span_id = _id(sp.span_id)
                if not trace_id or not span_id:
                    continue
                parent_id = _id(sp.parent_span_id) or None
                remote: bool | None = None
                if sp.flags & _HAS_IS_REMOTE:
                    remote = bool(sp.flags & _IS_REMOTE)
                # Every exported span was sampled; OTLP senders do not all copy the W3C flags.
                context = SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
                parent = (
                    SpanContext(trace_id, parent_id, is_remote=bool(remote), trace_flags=TraceFlags(TraceFlags.SAMPLED))
                    if parent_id
                    else None
                )
                span = ReadableSpan(
                    name=sp.name,
                    context=context,
                    parent=parent,
                    resource=resource,
                    attributes=_attrs(sp.attributes),
                    events=tuple(Event(e.name, _attrs(e.attributes), e.time_unix_nano) for e in sp.events),
                    links=tuple(
                        Link(SpanContext(_id(lk.trace_id), _id(lk.span_id), is_remote=True), _attrs(lk.attributes))
                        for lk in sp.links
                        if _id(lk.trace_id) and _id(lk.span_id)
                    ),
                    kind=_KINDS[sp.kind] if 0 <= sp.kind < len(_KINDS) else SpanKind.INTERNAL,
                    status=_status(sp.status.code, sp.status.message),
                    start_time=sp.start_time_unix_nano or None,
                    end_time=sp.end_time_unix_nano or sp.start_time_unix_nano or None,
                    instrumentation_scope=scope,
                )
                size = sp.ByteSize()
                cost = SPAN_SIZE_FACTOR * size + SPAN_OVERHEAD_BYTES + ATTRIBUTE_OVERHEAD_BYTES * len(sp.attributes)
                wire = None
                if keep_wire:
                    wire = (resource_env, scope_env, sp.SerializeToString())
                    cost += size
                yield DecodedSpan(span, trace_id, span_id, parent_id, remote, cost + shared, wire)
                shared = 0


# -- views (what the service scores) -----------------------------------------------------------------
_ZERO_SPAN = bytes(8)
#: What a lean parse raises on bytes the standard message may still read (or refuse in its own words).
_UNREADABLE = (_ProtobufError, ValueError, RecursionError)


class TraceRequest:
    """A trace export request as the service takes it: its protobuf bytes (what the on-disk queue
    keeps and replays), parsed — the request around the spans with each span left as its encoded
    bytes, and each span on its own as a lean message (:data:`~otel_toolscore.core._otlp_spans.LEAN_SPAN`,
    its attributes a key table). :meth:`decoded` turns them into the views the service buffers.

    Raises :class:`DecodeError` when ``body`` is not an export request (a span that does not parse
    makes the request invalid, as it does for the standard message)."""

    __slots__ = ("_groups", "body", "total")

    def __init__(self, body: bytes) -> None:
        self.body = body
        try:
            groups, total = _parse_lean(body)
        except _UNREADABLE:
            # the standard message's own words for what is wrong — or, should it read what the lean
            # one did not, its spans one by one
            groups, total = _parse_each(parse_trace_request(body))
        self._groups = groups
        #: spans in the request, with ids or not
        self.total = total

    def messages(self) -> Iterator[Any]:
        """Every span of the request, as parsed (``trace_id``, ``span_id`` …: OTLP's fields)."""
        for _rs, _ss, spans in self._groups:
            for _raw, sp in spans:
                yield sp

    def decoded(self, *, keep_wire: bool = False) -> list[DecodedSpan]:
        """The spans with a trace and a span id, as views. ``keep_wire``: each keeps its encoded
        bytes with its resource's and scope's (forwarded as received), counted in its cost once more."""
        out: list[DecodedSpan] = []
        last_rs: Any = None
        resource: OtlpResource | None = None
        resource_env: Envelope = (b"", b"")
        shared = 0
        last_tid: bytes | None = None
        trace_hex = ""
        trace_id = 0
        for rs, ss, spans in self._groups:
            if rs is not last_rs:
                last_rs = rs
                resource = OtlpResource(rs.resource, schema_url=rs.schema_url or None)
                # The resource and each scope are held as long as any of their spans is buffered:
                # their cost goes on the first span that holds them.
                shared += _shared_cost(rs.resource)
                if keep_wire:
                    resource_env = envelope(rs.resource, rs.schema_url)
            scope_env = envelope(ss.scope, ss.schema_url) if keep_wire else (b"", b"")
            scope = scope_view(ss.scope, ss.schema_url)
            shared += _shared_cost(ss.scope)
            for raw, sp in spans:
                tid = sp.trace_id
                sid = sp.span_id
                pid = sp.parent_span_id
                if tid != last_tid:  # a trace's spans come one after another: its id read once
                    last_tid = tid
                    trace_hex, trace_id = _hex_and_number(tid, 16)
                span_hex, span_id = _hex_and_number(sid, 8)
                if not trace_id or not span_id:
                    continue
                parent_hex: str | None
                if len(pid) == 8 and pid != _ZERO_SPAN:
                    parent_hex = pid.hex()
                    parent_id: int | None = int(parent_hex, 16)
                else:
                    parent_id = _id(pid) or None
                    parent_hex = "%016x" % parent_id if parent_id else None
                view = lean_span_view(raw, trace_hex, span_hex, parent_hex, sp, scope, resource)
                view.trace_id = trace_id
                flags = sp.flags
                remote = bool(flags & _IS_REMOTE) if flags & _HAS_IS_REMOTE else None
                view.parent_remote = remote
                if not view._end_time:  # as the SDK span the service replayed before: ended when it started
                    view._end_time = view._start_time
                size = len(raw)
                # the attributes' count from the view's key table (its set of keys), not the message's
                cost = SPAN_SIZE_FACTOR * size + SPAN_OVERHEAD_BYTES + ATTRIBUTE_OVERHEAD_BYTES * len(view._dict)
                wire: WireSpan | None = None
                if keep_wire:
                    wire = view.wire = (resource_env, scope_env, raw)
                    cost += size
                out.append(DecodedSpan(view, trace_id, span_id, parent_id, remote, cost + shared, wire))
                shared = 0
        return out


def _hex_and_number(raw: bytes, size: int) -> tuple[str, int]:
    """An id's lower-case hex (``size`` bytes' worth) and its number (0: none)."""
    if len(raw) == size:  # as every SDK writes ids: their hex is their bytes' (no number formatted)
        text = raw.hex()
        return text, int(text, 16)
    number = _id(raw)
    return "%0*x" % (size * 2, number), number


#: One ``ScopeSpans`` of a parsed request: (its ``ResourceSpans``, itself, its spans as (encoded, parsed)).
_Group = tuple[Any, Any, list[tuple[bytes, Any]]]


def _parse_lean(body: bytes) -> tuple[list[_Group], int]:
    parse = LEAN_SPAN.FromString
    groups: list[_Group] = []
    total = 0
    for rs in LEAN_TRACE_REQUEST.FromString(body).resource_spans:
        for ss in rs.scope_spans:
            spans = [(raw, parse(raw)) for raw in ss.spans]
            total += len(spans)
            groups.append((rs, ss, spans))
    return groups, total


def _parse_each(request: ExportTraceServiceRequest) -> tuple[list[_Group], int]:
    """The groups of a standard message, each span encoded and parsed on its own (one the lean
    message does not read is left out, as a span without ids is)."""
    groups: list[_Group] = []
    total = 0
    for rs in request.resource_spans:
        lean_rs = LEAN_TRACE_REQUEST().resource_spans.add(schema_url=rs.schema_url)
        lean_rs.resource.CopyFrom(rs.resource)
        for ss in rs.scope_spans:
            lean_ss = lean_rs.scope_spans.add(schema_url=ss.schema_url)
            lean_ss.scope.CopyFrom(ss.scope)
            spans = []
            for sp in ss.spans:
                raw = sp.SerializeToString()
                try:
                    spans.append((raw, LEAN_SPAN.FromString(raw)))
                except _UNREADABLE:
                    continue
            total += len(ss.spans)
            groups.append((lean_rs, lean_ss, spans))
    return groups, total


def trace_request(body: bytes, content_type: str = "application/x-protobuf") -> TraceRequest:
    """A received trace export request, parsed (:class:`DecodeError` when it is not one). OTLP/JSON
    goes through the standard message first: its protobuf encoding is what is kept and forwarded."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "application/json":
        body = parse_trace_request(body, content_type).SerializeToString()
    return TraceRequest(body)


def as_trace_request(request: ExportTraceServiceRequest | TraceRequest) -> TraceRequest:
    """``request`` as a :class:`TraceRequest` (a decoded standard message is encoded again first)."""
    return request if isinstance(request, TraceRequest) else TraceRequest(request.SerializeToString())


def with_parent_remote(span: ReadableSpan, remote: bool) -> ReadableSpan:
    """``span`` with its parent's ``is_remote`` set (used when the sender did not say)."""
    parent = span.parent
    if parent is None or parent.is_remote == remote:
        return span
    span._parent = SpanContext(  # built by us above, not shared: setting it is safe
        parent.trace_id, parent.span_id, is_remote=remote, trace_flags=parent.trace_flags
    )
    return span
