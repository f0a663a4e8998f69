"""Cheap, source-independent views of one span and one log record.

Everything the readers look at goes through :class:`SpanRecord` or :class:`LogRecordView`, whatever
the source: a live SDK ``ReadableSpan`` / ``ReadableLogRecord`` (built on the hot path, so nothing is
copied or parsed), or OTLP protobuf messages (decoded from files or the service's receiver).
Ids are lower-case hex strings (32 chars for traces, 16 for spans), the OTLP/JSON form.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EventTuple",
    "LogRecordView",
    "SpanRecord",
    "any_value",
    "has_events",
    "log_view_from_sdk",
    "log_views_from_proto",
    "plain_attributes",
    "record_from_readable",
    "span_records_from_proto",
]

EMPTY: Mapping[str, Any] = {}
#: A span event: (name, attributes, time_unix_nano).
EventTuple = tuple[str, Mapping[str, Any], int]

_KIND_NAMES = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS_NAMES = ("UNSET", "OK", "ERROR")


@dataclass(slots=True)
class SpanRecord:
    """One finished span, as the readers see it. ``attributes`` is the span's own mapping (not copied)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: str = "INTERNAL"
    attributes: Mapping[str, Any] = field(default_factory=dict)
    events: Sequence[EventTuple] = ()
    status_code: str = "UNSET"
    status_message: str | None = None
    start_time_unix_nano: int = 0
    end_time_unix_nano: int = 0
    scope_name: str | None = None
    resource_attributes: Mapping[str, Any] = field(default_factory=dict)
    #: the application's span object the record views (live spans only)
    holder: Any = None


@dataclass(slots=True)
class LogRecordView:
    """One log record / event, as :func:`~otel_toolscore.extract.read_log` sees it.

    ``event_name`` is the record's event name, or its ``event.name`` attribute for older emitters.
    ``trace_id`` / ``span_id`` are ``None`` for records emitted outside a span.
    """

    trace_id: str | None
    span_id: str | None
    event_name: str | None
    body: Any = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    time_unix_nano: int = 0
    scope_name: str | None = None
    resource_attributes: Mapping[str, Any] = field(default_factory=dict)


# -- live SDK objects -------------------------------------------------------------------------------
def plain_attributes(holder: Any) -> Mapping[str, Any]:
    """The attribute dict behind a live span without copying it.

    ``ReadableSpan.attributes`` wraps the SDK's ``BoundedAttributes`` in a ``MappingProxyType``;
    ``Mapping.get`` on that raises and catches ``KeyError`` for every absent key (~0.3 µs each). The
    readers probe many absent keys, so read the plain dict the SDK keeps (read-only; falls back to the
    public mapping when the SDK's layout differs).
    """
    inner = getattr(holder, "_attributes", None)
    plain = getattr(inner, "_dict", None)
    if isinstance(plain, dict):
        return plain
    if isinstance(inner, dict):
        return inner
    public = holder.attributes
    return public if public is not None else EMPTY


def has_events(span: Any) -> bool:
    """Whether a live span has events, without the copy ``ReadableSpan.events`` makes."""
    raw = getattr(span, "_events", None)
    return bool(raw if raw is not None else span.events)


def _enum_names(enum_cls: Any) -> dict[int, str]:
    return {id(member): member.name for member in enum_cls}


# Enum ``.name`` is a Python-level descriptor (~0.3 µs); members are singletons, so look names up by id.
try:
    from opentelemetry.trace import SpanKind, StatusCode

    _KIND_BY_ID = _enum_names(SpanKind)
    _STATUS_BY_ID = _enum_names(StatusCode)
except ImportError:  # pragma: no cover - the API is a dependency
    _KIND_BY_ID, _STATUS_BY_ID = {}, {}


def record_from_readable(span: Any) -> SpanRecord:
    """A :class:`SpanRecord` over a live ``ReadableSpan``: no attribute copy, no JSON parsing."""
    ctx = span.context
    parent = span.parent
    status = span.status
    events: Sequence[EventTuple] = ()
    raw_events = getattr(span, "_events", None)
    if raw_events is None:
        raw_events = span.events
    if raw_events:
        events = tuple((e.name, e.attributes or EMPTY, e.timestamp or 0) for e in raw_events)
    scope = span.instrumentation_scope
    resource = span.resource
    return SpanRecord(
        trace_id="%032x" % ctx.trace_id if ctx is not None else "0" * 32,
        span_id="%016x" % ctx.span_id if ctx is not None else "0" * 16,
        parent_span_id="%016x" % parent.span_id if parent is not None else None,
        name=span.name,
        kind=_KIND_BY_ID.get(id(span.kind)) or span.kind.name,
        attributes=plain_attributes(span),
        events=events,
        status_code=_STATUS_BY_ID.get(id(status.status_code)) or status.status_code.name,
        status_message=status.description,
        start_time_unix_nano=span.start_time or 0,
        end_time_unix_nano=span.end_time or 0,
        scope_name=scope.name if scope is not None else None,
        resource_attributes=resource.attributes if resource is not None else EMPTY,
        holder=span,
    )


def log_view_from_sdk(record: Any) -> LogRecordView:
    """A :class:`LogRecordView` over an SDK ``ReadableLogRecord``/``ReadWriteLogRecord`` or an API ``LogRecord``."""
    inner = getattr(record, "log_record", record)
    attrs = inner.attributes or EMPTY
    attrs = getattr(attrs, "_dict", attrs)
    trace_id = getattr(inner, "trace_id", None)
    span_id = getattr(inner, "span_id", None)
    name = getattr(inner, "event_name", None) or attrs.get("event.name")
    scope = getattr(record, "instrumentation_scope", None)
    resource = getattr(record, "resource", None)
    return LogRecordView(
        trace_id="%032x" % trace_id if trace_id else None,
        span_id="%016x" % span_id if span_id else None,
        event_name=str(name) if name else None,
        body=inner.body,
        attributes=attrs,
        time_unix_nano=inner.timestamp or inner.observed_timestamp or 0,
        scope_name=scope.name if scope is not None else None,
        resource_attributes=resource.attributes if resource is not None else EMPTY,
    )


# -- OTLP protobuf ----------------------------------------------------------------------------------
def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` message as a Python value (arrays as lists, kvlists as dicts)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, which)


def _attrs(kvs: Iterable[Any]) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}


def _hex(raw: bytes, width: int) -> str | None:
    """Id bytes as hex. OTLP/JSON hex ids read through protobuf's base64 mapping come out 1.5x long;
    re-encoding them as base64 gives the hex text back (see :mod:`._sources`)."""
    if not raw or not any(raw):
        return None
    return raw.hex().rjust(width, "0") if len(raw) * 2 <= width else raw.hex()


def span_records_from_proto(request: Any) -> Iterator[SpanRecord]:
    """The spans of an ``ExportTraceServiceRequest`` (or anything with ``resource_spans``)."""
    for rs in request.resource_spans:
        resource = _attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            scope = ss.scope.name or None
            for sp in ss.spans:
                yield SpanRecord(
                    trace_id=_hex(sp.trace_id, 32) or "0" * 32,
                    span_id=_hex(sp.span_id, 16) or "0" * 16,
                    parent_span_id=_hex(sp.parent_span_id, 16),
                    name=sp.name,
                    kind=_KIND_NAMES[sp.kind] if 0 <= sp.kind < len(_KIND_NAMES) else "INTERNAL",
                    attributes=_attrs(sp.attributes),
                    events=tuple((e.name, _attrs(e.attributes), e.time_unix_nano) for e in sp.events),
                    status_code=_STATUS_NAMES[sp.status.code] if 0 <= sp.status.code < 3 else "UNSET",
                    status_message=sp.status.message or None,
                    start_time_unix_nano=sp.start_time_unix_nano,
                    end_time_unix_nano=sp.end_time_unix_nano,
                    scope_name=scope,
                    resource_attributes=resource,
                )


def log_views_from_proto(request: Any) -> Iterator[LogRecordView]:
    """The log records of an ``ExportLogsServiceRequest`` (or anything with ``resource_logs``)."""
    for rl in request.resource_logs:
        resource = _attrs(rl.resource.attributes)
        for sl in rl.scope_logs:
            scope = sl.scope.name or None
            for lr in sl.log_records:
                attrs = _attrs(lr.attributes)
                name = lr.event_name or attrs.get("event.name")
                yield LogRecordView(
                    trace_id=_hex(lr.trace_id, 32),
                    span_id=_hex(lr.span_id, 16),
                    event_name=str(name) if name else None,
                    body=any_value(lr.body) if lr.HasField("body") else None,
                    attributes=attrs,
                    time_unix_nano=lr.time_unix_nano or lr.observed_time_unix_nano,
                    scope_name=scope,
                    resource_attributes=resource,
                )
