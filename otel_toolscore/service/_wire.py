"""Received spans in protobuf's wire format: what enrich-and-forward holds and sends.

A span is kept as its own encoded bytes with the encoded fields of its resource and scope around
it (:data:`WireSpan`); a request is assembled by concatenating them as length-delimited fields
(:func:`build_request`), so a span that gains nothing leaves byte for byte as it came, never parsed,
rebuilt or re-encoded. One request's spans, assembled again, are that request byte for byte
(tested). Holding bytes rather than decoded messages holds exactly the span: a message would keep
its whole request alive.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "Envelope",
    "WireSpan",
    "build_request",
    "encode_any_value",
    "encode_attribute",
    "encode_key_value",
    "encode_sdk_span",
    "envelope",
    "varint",
    "with_attributes",
    "with_new_attributes",
]

#: The encoded fields around the spans of a ``ResourceSpans`` or ``ScopeSpans``: (field 1 — the
#: resource or scope —, field 3 — the schema URL, or nothing); the spans (field 2) go between them.
Envelope = tuple[bytes, bytes]
#: One span as received, encoded: (its resource's envelope, its scope's envelope, the ``Span``).
WireSpan = tuple[Envelope, Envelope, bytes]


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return varint((number << 3) | 2) + varint(len(payload)) + payload


#: the varints of one byte (a tag, a short length): most of those written
_ONE_BYTE = tuple(bytes((i,)) for i in range(0x80))


def varint(value: int) -> bytes:
    """A non-negative integer as a protobuf varint."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if value < 0:
        raise ValueError(f"{value} is negative: no varint")
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


#: ``ScopeSpans.spans``' tag (field 2, length-delimited)
_SPAN_TAG = b"\x12"
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
    return span + b"".join([encode_attribute(k, v) for k, v in added.items()])


#: A ``Span.attributes`` entry's tag, and a ``KeyValue``'s and an ``AnyValue``'s field tags.
_ATTRIBUTE_TAG = b"\x4a"
_KEY_TAG, _VALUE_TAG = b"\x0a", b"\x12"
_STRING, _BOOL, _INT, _DOUBLE, _ARRAY, _KVLIST, _BYTES = b"\x0a", b"\x10", b"\x18", b"\x21", b"\x2a", b"\x32", b"\x3a"
_TRUE, _FALSE = _BOOL + b"\x01", _BOOL + b"\x00"
_DOUBLE_BITS = struct.Struct("<d")
_INT64 = 1 << 63
#: Encoded ``KeyValue.key`` fields by key; encoded attributes by (key, type, value) for the scalar
#: values that recur run after run (labels, flags, annotation names). Bounded: a process writes a
#: fixed set of score keys, and a value seen past the bound is encoded each time.
_KEYS: dict[str, bytes] = {}
_ENCODED: dict[tuple[str, type, Any], bytes] = {}
#: Per key: a float attribute's entry up to its 8 bytes.
_FLOAT_PREFIXES: dict[str, bytes] = {}
_CACHE_LIMIT = 4096
#: Lists longer than this are encoded each time (the cache holds short ones only).
_CACHED_ITEMS = 32


def encode_attribute(key: str, value: Any) -> bytes:
    """One ``Span.attributes`` entry (field 9) holding ``KeyValue(key, value)``, encoded as protobuf
    encodes it (byte for byte: ``tests/service/test_forward_wire.py``), the key's field and the framing
    computed once per key: a float's entry is a fixed prefix per key and its 8 bytes; a list of
    texts, flags or integers (the tools a run called, the order expected) is cached as a scalar is."""
    kind = type(value)
    if kind is float:  # not cached by value: 0.0 == -0.0, and scores vary
        prefix = _FLOAT_PREFIXES.get(key)
        if prefix is None:
            field = _key_field(key)
            # KeyValue: the key's field, the value's tag, length 9, AnyValue.double_value's tag
            prefix = _ATTRIBUTE_TAG + varint(len(field) + 11) + field + _VALUE_TAG + b"\x09" + _DOUBLE
            if len(_FLOAT_PREFIXES) < _CACHE_LIMIT:
                _FLOAT_PREFIXES[key] = prefix
        return prefix + _DOUBLE_BITS.pack(value)
    cache_key: tuple[str, type, Any] | None = None
    if kind is str or kind is bool or kind is int:
        cache_key = (key, kind, value)
    elif (kind is list or kind is tuple) and len(value) <= _CACHED_ITEMS and all(
        type(v) is str or type(v) is bool or type(v) is int for v in value
    ):
        # as a tuple with its items' types: [1] and [True] are equal, and encoded apart
        cache_key = (key, tuple, (*value, *map(type, value)))
    if cache_key is not None:
        hit = _ENCODED.get(cache_key)
        if hit is not None:
            return hit
    kv = encode_key_value(key, value)
    out = _ATTRIBUTE_TAG + varint(len(kv)) + kv
    if cache_key is not None and len(_ENCODED) < _CACHE_LIMIT:
        _ENCODED[cache_key] = out
    return out


def _key_field(key: str) -> bytes:
    """``KeyValue.key`` encoded (cached per key)."""
    field = _KEYS.get(key)
    if field is None:
        encoded_key = key.encode()
        # proto3 leaves an empty string out
        field = _KEY_TAG + varint(len(encoded_key)) + encoded_key if encoded_key else b""
        if len(_KEYS) < _CACHE_LIMIT:
            _KEYS[key] = field
    return field


def encode_key_value(key: str, value: Any, *, mappings: bool = False) -> bytes:
    """``KeyValue(key, value)`` encoded (see :func:`encode_any_value` for ``mappings``)."""
    field = _KEYS.get(key)
    if field is None:
        field = _key_field(key)
    any_value = encode_any_value(value, mappings=mappings)
    return field + _VALUE_TAG + varint(len(any_value)) + any_value


def encode_any_value(value: Any, *, mappings: bool = False) -> bytes:
    """An ``AnyValue`` encoded (a oneof: a false or zero value is written too): as :func:`_any_value`
    builds it for a span attribute, or — ``mappings`` — as the SDK's exporter encodes a log record's
    body and attributes (a mapping as a key-value list, ``None`` as an empty value)."""
    if isinstance(value, bool):
        return _TRUE if value else _FALSE
    if isinstance(value, int):
        if not -_INT64 <= value < _INT64:
            raise ValueError(f"{value} is out of range for an int64 attribute")
        return _INT + varint(value & 0xFFFFFFFFFFFFFFFF)
    if isinstance(value, float):
        return _DOUBLE + _DOUBLE_BITS.pack(value)
    if isinstance(value, str):
        text = value.encode()
        return _STRING + varint(len(text)) + text
    if isinstance(value, bytes):
        return _BYTES + varint(len(value)) + value
    if isinstance(value, Sequence):
        items = []
        for v in value:
            item = encode_any_value(v, mappings=mappings)
            items.append(_KEY_TAG + varint(len(item)) + item)  # ArrayValue.values (field 1)
        array = b"".join(items)
        return _ARRAY + varint(len(array)) + array
    if mappings:
        if value is None:
            return b""
        if isinstance(value, Mapping):
            entries = []
            for k, v in value.items():
                kv = encode_key_value(str(k), v, mappings=True)
                entries.append(_KEY_TAG + varint(len(kv)) + kv)  # KeyValueList.values (field 1)
            kvlist = b"".join(entries)
            return _KVLIST + varint(len(kvlist)) + kvlist
        raise ValueError(f"invalid type {type(value).__name__} of a log record value")
    text = str(value).encode()
    return _STRING + varint(len(text)) + text


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
    last_resource: Envelope | None = None
    last_scope: Envelope | None = None
    spans: list[bytes] = []
    for res, sco, span in batch:
        if sco is not last_scope or res is not last_resource:  # the same objects, span after span
            spans = groups.setdefault(res, {}).setdefault(sco, [])
            last_resource, last_scope = res, sco
        spans.append(span)
    parts: list[bytes] = []
    for (resource, resource_schema), scopes in groups.items():
        body: list[bytes] = [resource]
        for (scope, scope_schema), scope_spans in scopes.items():
            pieces = [scope]
            for sp in scope_spans:  # ScopeSpans.spans (field 2), each span's bytes joined once
                pieces += (_SPAN_TAG, varint(len(sp)), sp)
            pieces.append(scope_schema)
            body.append(_field(2, b"".join(pieces)))
        body.append(resource_schema)
        parts.append(_field(1, b"".join(body)))
    return b"".join(parts)
