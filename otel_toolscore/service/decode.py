"""OTLP export requests (protobuf or OTLP/JSON) to SDK ``ReadableSpan`` objects and log views.

The service runs decoded spans through the same core a live process runs, so a decoded span must
look like a live one where the core looks: ``context``, ``parent`` (a ``SpanContext`` whose
``is_remote`` tells a process-local root), ``name``, ``attributes``, status, scope, events. In
enrich-and-forward mode each span also keeps its encoded bytes: it leaves as received, not
re-encoded from these objects (:mod:`.wire`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ..extract.records import any_value
from .wire import WireSpan, envelope

__all__ = ["DecodeError", "DecodedSpan", "decode_spans", "parse_logs_request", "parse_trace_request"]

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
    """One received span: the SDK object replayed through the processor, and what the buffer needs."""

    span: ReadableSpan
    trace_id: int
    span_id: int
    parent_id: int | None
    # Whether the sender said the parent is in another process (``None``: not said, older senders).
    parent_remote: bool | None
    cost: int  # estimated bytes held while buffered
    #: the span as received, encoded (:data:`.wire.WireSpan`), kept for enrich-and-forward
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
    """Every span of ``request`` with a valid trace and span id (others are skipped; see ``count_invalid``).

    ``keep_wire``: each span also keeps its encoded bytes, and its resource's and scope's (forwarded
    as received, :mod:`.wire`); they are counted in its cost once more."""
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


def with_parent_remote(span: ReadableSpan, remote: bool) -> ReadableSpan:
    """``span`` with its parent's ``is_remote`` set (used when the sender did not say)."""
    parent = span.parent
    if parent is None or parent.is_remote == remote:
        return span
    span._parent = SpanContext(  # built by us above, not shared: setting it is safe
        parent.trace_id, parent.span_id, is_remote=remote, trace_flags=parent.trace_flags
    )
    return span
