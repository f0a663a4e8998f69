"""Spans decoded from OTLP (protobuf or OTLP/JSON), read in place: :class:`OtlpSpan` and its source.

The scoring service and the offline reader receive spans as OTLP export requests. Turning each into
an SDK ``ReadableSpan`` (the service) or a full :class:`~otel_toolscore.extract._records.SpanRecord`
(offline) decodes every attribute value of every span, when the readers look up a handful of keys
per span (``gen_ai.operation.name``, ``openinference.span.kind``, a tool's name …). An
:class:`OtlpSpan` is a view the core and the readers read directly instead:

* **protobuf**: each span is parsed with a *lean* message type — OTLP's own ``Span`` with its
  attributes declared as ``map<string, AnyValue>`` (a repeated ``KeyValue`` is the wire form of a
  map: the bytes are the same). The parser builds the key table in C, and
  :class:`OtlpAttributes` decodes a value only when its key is looked up (as
  :func:`~otel_toolscore.extract._records.any_value` does, once per key). The request around the
  spans is parsed with the span bytes left whole (``repeated bytes``): the service forwards them
  as received, and the span's own attribute order (which a table does not keep) is read from them
  when someone iterates the mapping's items (an agent span's attributes, flattened messages);
* **OTLP/JSON**: the document is already Python objects; a span's attributes are decoded into a
  plain dict as the generic reader does (a string value is one lookup, and a malformed value must
  fail the whole document when it is read, as it always has).

A view carries the public fields the readers' fallback reads (``name``, ``attributes``, ``events``,
``instrumentation_scope``, ``status``, ``start_time``, ``end_time``, ``context``, ``parent``) and the
same fields under the names the SDK's ``ReadableSpan`` keeps them (``_name``, ``_attributes._dict``,
``_events``, ``_instrumentation_scope``, ``_status``, ``_start_time``, ``_end_time``): the table-driven
readers (:mod:`otel_toolscore.extract._fast_read`) read those first, so a view is read by them as
cheaply as an SDK span (:func:`read_view`). The core's source of views is
:data:`otel_toolscore.core._otlp_spans.OTLP_SPANS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ._facts import ExtractOptions, SpanFacts
from ._fast_read import read_live_oi_span, read_live_span
from ._readers import may_have_facts, read_span
from ._records import SpanRecord, _hex, any_value

__all__ = [
    "LEAN_RESOURCE_SPANS",
    "LEAN_SPAN",
    "LEAN_TRACE_REQUEST",
    "OtlpAttributes",
    "OtlpEvent",
    "OtlpResource",
    "OtlpScope",
    "OtlpSpan",
    "lean_span_view",
    "read_view",
    "scope_view",
    "span_views",
    "status_of",
]

# -- the lean message types ---------------------------------------------------------------------------
_PACKAGE = "otel_toolscore.otlp_lean"
_ATTRIBUTES = 9  # Span.attributes


def _lean_file() -> descriptor_pb2.FileDescriptorProto:
    """OTLP's ``Span`` with ``attributes`` as a map, and the request around it with the spans as bytes.

    Every other field keeps OTLP's own type (the standard messages are referred to, not copied), so
    a span parses — and fails to parse — exactly as the standard ``Span`` does."""
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(
        name="otel_toolscore/otlp_lean.proto",
        package=_PACKAGE,
        syntax="proto3",
        dependency=[
            "opentelemetry/proto/common/v1/common.proto",
            "opentelemetry/proto/resource/v1/resource.proto",
            "opentelemetry/proto/trace/v1/trace.proto",
        ],
    )
    span = fdp.message_type.add()
    trace_pb2.Span.DESCRIPTOR.CopyToProto(span)
    del span.nested_type[:]  # Event, Link and SpanKind: OTLP's own, by their full names
    del span.enum_type[:]
    entry = span.nested_type.add(name="AttributesEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    entry.field.add(
        name="value", number=2, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE,
        type_name=".opentelemetry.proto.common.v1.AnyValue",
    )
    for f in span.field:
        if f.number == _ATTRIBUTES:
            f.type_name = f".{_PACKAGE}.Span.AttributesEntry"
    # the attributes alone, each entry as its encoded KeyValue: their order, when it is asked for
    order = fdp.message_type.add(name="SpanAttributeOrder")
    order.field.add(name="attributes", number=_ATTRIBUTES, label=F.LABEL_REPEATED, type=F.TYPE_BYTES)
    scope_spans = fdp.message_type.add(name="ScopeSpans")
    scope_spans.field.add(
        name="scope", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE,
        type_name=".opentelemetry.proto.common.v1.InstrumentationScope",
    )
    scope_spans.field.add(name="spans", number=2, label=F.LABEL_REPEATED, type=F.TYPE_BYTES)
    scope_spans.field.add(name="schema_url", number=3, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    resource_spans = fdp.message_type.add(name="ResourceSpans")
    resource_spans.field.add(
        name="resource", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE,
        type_name=".opentelemetry.proto.resource.v1.Resource",
    )
    resource_spans.field.add(
        name="scope_spans", number=2, label=F.LABEL_REPEATED, type=F.TYPE_MESSAGE,
        type_name=f".{_PACKAGE}.ScopeSpans",
    )
    resource_spans.field.add(name="schema_url", number=3, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    request = fdp.message_type.add(name="ExportTraceServiceRequest")
    request.field.add(
        name="resource_spans", number=1, label=F.LABEL_REPEATED, type=F.TYPE_MESSAGE,
        type_name=f".{_PACKAGE}.ResourceSpans",
    )
    return fdp


def _lean_classes() -> tuple[Any, Any, Any, Any]:
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName("otel_toolscore/otlp_lean.proto")
    except KeyError:
        pool.Add(_lean_file())
    get = message_factory.GetMessageClass
    return (
        get(pool.FindMessageTypeByName(f"{_PACKAGE}.Span")),
        get(pool.FindMessageTypeByName(f"{_PACKAGE}.SpanAttributeOrder")),
        get(pool.FindMessageTypeByName(f"{_PACKAGE}.ResourceSpans")),
        get(pool.FindMessageTypeByName(f"{_PACKAGE}.ExportTraceServiceRequest")),
    )


#: ``Span`` with a key table for attributes; the attributes' order alone; ``ResourceSpans`` and
#: ``ExportTraceServiceRequest`` whose spans are left as encoded bytes.
LEAN_SPAN, _ATTRIBUTE_ORDER, LEAN_RESOURCE_SPANS, LEAN_TRACE_REQUEST = _lean_classes()

_MISSING = object()
_EMPTY: Mapping[str, Any] = {}


class OtlpAttributes(Mapping[str, Any]):
    """A protobuf span's attributes: a key table built by the parser, values decoded on first look-up.

    ``get``, ``[]``, ``in`` and ``len`` use a set of the table's keys (built once per span: a look-up
    in it, a miss above all, costs less than the table's own, and a key that is no string is simply
    absent); ``iter()`` gives those keys in no set order (what a test for a set of keys needs, at no
    cost); ``keys()``, ``values()`` and ``items()`` follow
    the span's own order (read from its bytes once: a dict built from them equals, in order too, the
    one :func:`~otel_toolscore.extract._records.span_records_from_proto` builds). A repeated key keeps
    its first place and its last value, as a dict built from the list does.
    """

    __slots__ = ("_keys", "_order", "_raw", "_table", "_values")

    def __init__(self, table: Any, raw: bytes | None) -> None:
        self._table = table
        self._keys = frozenset(table)
        self._raw = raw
        self._values: dict[str, Any] = {}
        self._order: list[str] | None = None

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self._keys:
            return default
        values = self._values
        value = values.get(key, _MISSING)
        if value is _MISSING:
            message = self._table[key]
            # most values are strings: a non-empty one is the value set (one field of a oneof), read
            # without asking which field is set; anything else as any_value reads it
            value = message.string_value or any_value(message)
            values[key] = value
        return value

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        values = self._values
        value = values.get(key, _MISSING)
        if value is _MISSING:  # as get() decodes it (inline: root attributes read each key this way)
            message = self._table[key]
            value = message.string_value or any_value(message)
            values[key] = value
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def keys(self) -> list[str]:  # type: ignore[override]
        return list(self._ordered())

    def values(self) -> list[Any]:  # type: ignore[override]
        get = self.get
        return [get(k) for k in self._ordered()]

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]
        get = self.get
        return [(k, get(k)) for k in self._ordered()]

    def _ordered(self) -> list[str]:
        order = self._order
        if order is None:
            order = self._order = _attribute_order(self._raw, self._table)
        return order

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OtlpAttributes({dict(self.items())!r})"


def _attribute_order(raw: bytes | None, table: Any) -> list[str]:
    """The keys of an encoded span's attributes in the order it lists them (each once)."""
    if raw is None:
        return list(table)
    keys: dict[str, None] = {}
    for kv in _ATTRIBUTE_ORDER.FromString(raw).attributes:
        # a KeyValue as every encoder writes it: the key first (tag 0x0A), shorter than 128 bytes
        size = kv[1] if len(kv) > 1 and kv[0] == 0x0A else 0x80
        key = kv[2 : 2 + size].decode() if size < 0x80 else KeyValue.FromString(kv).key
        keys[key] = None
    return list(keys)


class OtlpEvent:
    """A span event as the SDK's ``Event`` shows it (``name``, ``attributes``, ``timestamp``)."""

    __slots__ = ("attributes", "name", "timestamp")

    def __init__(self, name: str, attributes: Mapping[str, Any], timestamp: int) -> None:
        self.name = name
        self.attributes = attributes
        self.timestamp = timestamp


class OtlpScope:
    """An instrumentation scope, as the SDK's ``InstrumentationScope`` shows it (``name``, ``version``)."""

    __slots__ = ("_name", "schema_url", "version")

    def __init__(self, name: str, version: str | None = None, schema_url: str | None = None) -> None:
        self._name = name
        self.version = version
        self.schema_url = schema_url

    @property
    def name(self) -> str:
        return self._name


class OtlpResource:
    """A resource, its attributes decoded on first use (only the generic readers' records ask)."""

    __slots__ = ("_attributes", "_message", "schema_url")

    def __init__(self, message: Any = None, attributes: Mapping[str, Any] | None = None, schema_url: str | None = None) -> None:
        self._message = message
        self._attributes = attributes
        self.schema_url = schema_url

    @property
    def attributes(self) -> Mapping[str, Any]:
        attrs = self._attributes
        if attrs is None:
            message, self._message = self._message, None
            attrs = self._attributes = _values_of(message.attributes) if message else {}
        return attrs


_STATUSES = (Status(StatusCode.UNSET), Status(StatusCode.OK))
_UNSET = _STATUSES[0]
_STATUS_NAMES = ("UNSET", "OK", "ERROR")
_KIND_NAMES = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
# OTLP SpanKind numbers (UNSPECIFIED=0, INTERNAL=1, ...) to the API's enum (INTERNAL=0, ...)
_KINDS = (SpanKind.INTERNAL, SpanKind.INTERNAL, SpanKind.SERVER, SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def status_of(code: int, message: str | None) -> Status:
    """The API's ``Status`` of an OTLP status code (shared for UNSET and OK; the SDK keeps a
    description only on ERROR)."""
    if code == 2:
        return Status(StatusCode.ERROR, message or None)
    return _STATUSES[code] if 0 <= code < 2 else _STATUSES[0]


class OtlpSpan:
    """One span decoded from OTLP, read in place (see the module docstring).

    Ids are lower-case hex, as the extractor names them; ``trace_id`` is the trace id as a number
    where the adapter keeps one (the service). ``parent_remote``: the parent is in another process
    (``None``: not said). ``wire``: the span as received, with its resource's and scope's encoded
    fields (:data:`otel_toolscore.service._wire.WireSpan`), where it is to be forwarded.
    """

    __slots__ = (
        "_dict", "_end_time", "_events", "_instrumentation_scope", "_kind", "_name", "_start_time", "_status",
        "parent_hex", "parent_remote", "resource", "span_hex", "status_message", "trace_hex", "trace_id", "wire",
    )

    def __init__(
        self,
        name: str,
        attributes: Mapping[str, Any],
        trace_hex: str,
        span_hex: str,
        parent_hex: str | None,
        *,
        kind: int = 1,
        start_time: int = 0,
        end_time: int = 0,
        status_code: int = 0,
        status_message: str | None = None,
        events: Sequence[OtlpEvent] = (),
        scope: OtlpScope | None = None,
        resource: OtlpResource | None = None,
    ) -> None:
        self._name = name
        self._dict = attributes
        self.trace_hex = trace_hex
        self.span_hex = span_hex
        self.parent_hex = parent_hex
        self._kind = kind
        self._start_time = start_time
        self._end_time = end_time
        self._status = status_of(status_code, status_message)
        self.status_message = status_message
        self._events = events
        self._instrumentation_scope = scope
        self.resource = resource
        self.trace_id = 0
        self.parent_remote: bool | None = None
        self.wire: Any = None

    # -- what the SDK's ReadableSpan keeps under these names ------------------------------------------------
    @property
    def _attributes(self) -> OtlpSpan:
        """The SDK span's ``_attributes`` (its ``BoundedAttributes``) is where its ``_dict`` is read from."""
        return self

    # -- the public face -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def attributes(self) -> Mapping[str, Any]:
        return self._dict

    @property
    def events(self) -> Sequence[OtlpEvent]:
        return self._events

    @property
    def instrumentation_scope(self) -> OtlpScope | None:
        return self._instrumentation_scope

    @property
    def status(self) -> Status:
        return self._status

    @property
    def start_time(self) -> int | None:
        return self._start_time or None

    @property
    def end_time(self) -> int | None:
        return self._end_time or None

    @property
    def kind(self) -> SpanKind:
        kind = self._kind
        return _KINDS[kind] if 0 <= kind < len(_KINDS) else SpanKind.INTERNAL

    @property
    def context(self) -> SpanContext:
        """The span's context (every exported span was sampled: OTLP senders do not all copy the flags)."""
        return SpanContext(int(self.trace_hex, 16), int(self.span_hex, 16), is_remote=False, trace_flags=_SAMPLED)

    @property
    def parent(self) -> SpanContext | None:
        if self.parent_hex is None:
            return None
        return SpanContext(
            int(self.trace_hex, 16), int(self.parent_hex, 16), is_remote=bool(self.parent_remote), trace_flags=_SAMPLED
        )

    @property
    def links(self) -> Sequence[Any]:
        return ()

    def record(self) -> SpanRecord:
        """The span as a :class:`~otel_toolscore.extract._records.SpanRecord` (the generic readers'
        input), sharing the attribute mapping; the view is its holder."""
        kind = self._kind
        code = self._status.status_code
        return SpanRecord(
            self.trace_hex,
            self.span_hex,
            self.parent_hex,
            self._name,
            _KIND_NAMES[kind] if 0 <= kind < len(_KIND_NAMES) else "INTERNAL",
            self._dict,
            tuple((e.name, e.attributes, e.timestamp) for e in self._events),
            "ERROR" if code is StatusCode.ERROR else "OK" if code is StatusCode.OK else "UNSET",
            self.status_message,
            self._start_time,
            self._end_time,
            self._instrumentation_scope._name if self._instrumentation_scope is not None else None,
            self.resource.attributes if self.resource is not None else _EMPTY,
            self,
        )

    def __repr__(self) -> str:
        return f"OtlpSpan({self._name!r}, trace={self.trace_hex}, span={self.span_hex}, parent={self.parent_hex})"


def _event_views(events: Any) -> tuple[OtlpEvent, ...]:
    return tuple(OtlpEvent(e.name, _values_of(e.attributes), e.time_unix_nano) for e in events)


def _values_of(kvs: Any) -> dict[str, Any]:
    """Decoded ``KeyValue`` s as a dict, as :func:`~._records.any_value` reads each value (a
    non-empty string is the value set: read without asking which field is set)."""
    out: dict[str, Any] = {}
    for kv in kvs:
        value = kv.value
        out[kv.key] = value.string_value or any_value(value)
    return out


_new = object.__new__


def lean_span_view(
    raw: bytes,
    trace_hex: str,
    span_hex: str,
    parent_hex: str | None,
    message: Any,
    scope: OtlpScope | None,
    resource: OtlpResource | None,
) -> OtlpSpan:
    """A view of one span: ``message`` is ``raw`` parsed as :data:`LEAN_SPAN` (the fields read once,
    each into its slot: one view is built per received span)."""
    view: OtlpSpan = _new(OtlpSpan)
    view._name = message.name
    view._dict = OtlpAttributes(message.attributes, raw)
    view.trace_hex = trace_hex
    view.span_hex = span_hex
    view.parent_hex = parent_hex
    view._kind = message.kind
    view._start_time = message.start_time_unix_nano
    view._end_time = message.end_time_unix_nano
    status = message.status
    code = status.code
    if code:
        message_text = status.message or None
        view._status = status_of(code, message_text)
        view.status_message = message_text
    else:
        view._status = _UNSET
        view.status_message = None
    events = message.events
    view._events = _event_views(events) if events else ()
    return placed(view, scope, resource)


def placed(view: OtlpSpan, scope: OtlpScope | None, resource: OtlpResource | None) -> OtlpSpan:
    """``view`` with its scope and resource, and the fields only the service fills left empty: the
    last step of every decoder that builds a span view slot by slot."""
    view._instrumentation_scope = scope
    view.resource = resource
    view.trace_id = 0
    view.parent_remote = None
    view.wire = None
    return view


def span_views(groups: Iterable[tuple[Any, Any, Iterable[tuple[bytes, Any]]]]) -> Iterator[OtlpSpan]:
    """Views of leanly parsed spans — per scope, (its ``ResourceSpans``, its ``ScopeSpans``, its
    spans as (encoded, parsed)) — with ids as the offline records name them (a span without a
    trace or span id reads as all zeros)."""
    last_rs: Any = None
    resource: OtlpResource | None = None
    last_trace: bytes | None = None
    trace_hex = _NO_TRACE
    for rs, ss, spans in groups:
        if rs is not last_rs:
            last_rs = rs
            resource = OtlpResource(rs.resource, schema_url=rs.schema_url or None)
        scope = scope_view(ss.scope, ss.schema_url)
        for raw, sp in spans:
            trace = sp.trace_id
            if trace != last_trace:  # the spans of a trace mostly come together: its id decoded once
                last_trace = trace
                trace_hex = _hex(trace, 32) or _NO_TRACE
            yield lean_span_view(
                raw, trace_hex, _hex(sp.span_id, 16) or _NO_SPAN, _hex(sp.parent_span_id, 16), sp, scope, resource,
            )


_NO_TRACE = "0" * 32
_NO_SPAN = "0" * 16


def scope_view(scope: Any, schema_url: str) -> OtlpScope | None:
    """The view of a decoded ``InstrumentationScope`` (``None`` when it has no name, as offline records say)."""
    name = scope.name
    return OtlpScope(name, scope.version or None, schema_url or None) if name else None


def read_view(span: OtlpSpan, options: ExtractOptions, ids: tuple[str, str, str | None] | None = None) -> SpanFacts | None:
    """The facts of a view: the table-driven readers first, the generic readers (on a record built
    only then) for anything else; ``None`` for a span no reader would find anything in."""
    if ids is None:
        ids = (span.trace_hex, span.span_hex, span.parent_hex)
    facts = read_live_span(span, options, ids)
    if facts is None:
        facts = read_live_oi_span(span, options, ids)
        if facts is None and may_have_facts(span._name, span._dict, bool(span._events)):
            facts = read_span(span.record(), options)
    return facts
