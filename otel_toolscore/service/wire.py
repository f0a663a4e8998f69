"""Received spans in protobuf's wire format: what enrich-and-forward holds and sends.

A span is kept as its own encoded bytes with the encoded fields of its resource and scope around
it (:data:`WireSpan`); a request is assembled by concatenating them as length-delimited fields
(:func:`build_request`), so a span that gains nothing leaves byte for byte as it came, never parsed,
rebuilt or re-encoded. One request's spans, assembled again, are that request byte for byte
(tested). Holding bytes rather than decoded messages holds exactly the span: a message would keep
its whole request alive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["Envelope", "WireSpan", "build_request", "encode_sdk_span", "envelope", "with_attributes", "with_new_attributes"]

#: The encoded fields around the spans of a ``ResourceSpans`` or ``ScopeSpans``: (field 1 — the
#: resource or scope —, field 3 — the schema URL, or nothing); the spans (field 2) go between them.
Envelope = tuple[bytes, bytes]
#: One span as received, encoded: (its resource's envelope, its scope's envelope, the ``Span``).
WireSpan = tuple[Envelope, Envelope, bytes]


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def envelope(holder: Any, schema_url: str) -> Envelope:
    """The encoded fields of a ``ResourceSpans`` (``holder`` its resource) or a ``ScopeSpans``
    (``holder`` its scope) around their spans, in field order as protobuf writes them."""
    return _field(1, holder.SerializeToString()), _field(3, schema_url.encode()) if schema_url else b""


def _any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, Sequence):
        out = AnyValue()
        out.array_value.values.extend(_any_value(v) for v in value)
        return out
    return AnyValue(string_value=str(value))


#: ``Span.attributes`` (repeated ``KeyValue``)
_SPAN_ATTRIBUTES = 9


def with_attributes(span_pb: Any, added: Mapping[str, Any]) -> Any:
    """A copy of a received ``Span`` message with ``added`` attributes set (replacing same keys)."""
    out = type(span_pb)()
    out.CopyFrom(span_pb)
    if any(kv.key in added for kv in out.attributes):
        kept = [kv for kv in out.attributes if kv.key not in added]
        del out.attributes[:]
        out.attributes.extend(kept)
    out.attributes.extend(KeyValue(key=k, value=_any_value(v)) for k, v in added.items())
    return out


def with_new_attributes(span: bytes, added: Mapping[str, Any]) -> bytes:
    """An encoded ``Span`` with ``added`` attributes appended, none of whose keys it has: a repeated
    field's entries may follow the message's other fields, so the span is not parsed at all."""
    return span + b"".join(
        _field(_SPAN_ATTRIBUTES, KeyValue(key=k, value=_any_value(v)).SerializeToString()) for k, v in added.items()
    )


def encode_sdk_span(span: ReadableSpan) -> WireSpan:
    """An SDK span (the service's own) as a wire span, through the SDK's public encoder."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    (rs,) = encode_spans([span]).resource_spans
    (ss,) = rs.scope_spans
    return envelope(rs.resource, rs.schema_url), envelope(ss.scope, ss.schema_url), ss.spans[0].SerializeToString()


def build_request(batch: Sequence[WireSpan]) -> bytes:
    """An encoded ``ExportTraceServiceRequest`` of ``batch``: spans grouped under their resource and
    scope (equal envelopes are one group), in the order taken within each group."""
    groups: dict[Envelope, dict[Envelope, list[bytes]]] = {}
    for res, sco, span in batch:
        groups.setdefault(res, {}).setdefault(sco, []).append(span)
    parts: list[bytes] = []
    for (resource, resource_schema), scopes in groups.items():
        body: list[bytes] = [resource]
        for (scope, scope_schema), spans in scopes.items():
            body.append(_field(2, b"".join([scope, *(_field(2, sp) for sp in spans), scope_schema])))
        body.append(resource_schema)
        parts.append(_field(1, b"".join(body)))
    return b"".join(parts)
