"""OTLP/JSON documents (already parsed into dicts) → :class:`SpanRecord` / :class:`LogRecordView`.

Read straight from the parsed JSON, without building protobuf messages first: protobuf's
``json_format.ParseDict`` costs several times the JSON parse itself, and the readers need a plain
view anyway. Both JSON spellings are accepted, as OTLP/HTTP writes them (camelCase keys, hex ids,
enums as numbers) and as protobuf's JSON mapping writes them (base64 ids, enum names, optionally
snake_case keys). Ids are told apart by length, once per id: 32 / 16 characters are hex, 24 / 12 are
base64 of 16 / 8 bytes.

Malformed shapes raise :class:`OtlpJsonError` naming what is wrong; the caller reports it and reads on.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import Any

from ._otlp_views import OtlpEvent, OtlpResource, OtlpScope, OtlpSpan, placed, status_of
from ._records import LogRecordView, SpanRecord

__all__ = ["OtlpJsonError", "log_views_from_json", "span_records_from_json", "span_views_from_json"]

_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUSES = ("UNSET", "OK", "ERROR")
_EMPTY: Mapping[str, Any] = {}


class OtlpJsonError(ValueError):
    """A JSON document that is not a valid OTLP export request where it matters."""


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _id(value: Any, size: int) -> str | None:
    """An id as lower-case hex (``None`` when absent or all zeros)."""
    if not value:
        return None
    if not isinstance(value, str):
        raise OtlpJsonError(f"id is a {type(value).__name__}, not a string")
    if len(value) == size * 2:
        text = value.lower()
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raw = None
        if raw is not None:
            return text if any(raw) else None
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise OtlpJsonError(f"id {value[:40]!r} is neither hex nor base64") from exc
    if not any(raw):
        return None
    return raw.hex().rjust(size * 2, "0") if len(raw) <= size else raw.hex()


def _int(value: Any) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise OtlpJsonError("a boolean where a number belongs")
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise OtlpJsonError(f"{str(value)[:40]!r} is not an integer") from exc


def any_value_json(value: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a Python value (arrays as lists, kvlists as dicts)."""
    if type(value) is not dict:
        return None
    text = value.get("stringValue")  # most values: one lookup
    if type(text) is str:
        return text
    for key, item in value.items():  # exactly one key in a valid AnyValue; the first one wins
        if key == "stringValue" or key == "string_value":
            return item if isinstance(item, str) else str(item)
        if key == "intValue" or key == "int_value":
            return _int(item)
        if key == "boolValue" or key == "bool_value":
            return bool(item)
        if key == "doubleValue" or key == "double_value":
            try:
                return float(item)
            except (TypeError, ValueError) as exc:
                raise OtlpJsonError(f"{str(item)[:40]!r} is not a number") from exc
        if key == "arrayValue" or key == "array_value":
            values = item.get("values") if type(item) is dict else None
            return [any_value_json(v) for v in values or ()]
        if key == "kvlistValue" or key == "kvlist_value":
            values = item.get("values") if type(item) is dict else None
            return attributes_json(values)
        if key == "bytesValue" or key == "bytes_value":
            try:
                return base64.b64decode(item or "")
            except (binascii.Error, ValueError, TypeError) as exc:
                raise OtlpJsonError("bytesValue is not base64") from exc
    return None


def attributes_json(kvs: Any) -> dict[str, Any]:
    """A list of OTLP/JSON ``KeyValue`` s as a dict (the last value of a repeated key wins, as in protobuf)."""
    if not kvs:
        return {}
    if type(kvs) is not list:
        raise OtlpJsonError(f"attributes are a {type(kvs).__name__}, not a list")
    out: dict[str, Any] = {}
    for kv in kvs:
        if type(kv) is not dict:
            raise OtlpJsonError("an attribute is not an object")
        key = kv.get("key", "")
        if type(key) is not str:
            key = str(key)
        value = kv.get("value")
        if type(value) is dict:  # most values are strings: one lookup, no call
            text = value.get("stringValue")
            if type(text) is str:
                out[key] = text
                continue
        out[key] = any_value_json(value)
    return out


def _enum(value: Any, names: tuple[str, ...], prefix: str, default: str) -> str:
    if value is None or value == "":
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return names[value] if 0 <= value < len(names) else default
    if isinstance(value, str):
        name = value.removeprefix(prefix)
        return name if name in names else default
    return default


def _list(obj: Mapping[str, Any], camel: str, snake: str) -> list[Any]:
    value = _get(obj, camel, snake)
    if value is None:
        return []
    if not isinstance(value, list):
        raise OtlpJsonError(f"{camel} is a {type(value).__name__}, not a list")
    return value


def _scoped(
    doc: Mapping[str, Any], outer: tuple[str, str], inner: tuple[str, str], items: tuple[str, str], what: str
) -> Iterator[tuple[dict[str, Any], str | None, dict[str, Any]]]:
    """(resource attributes, scope name, item) for every item of a traces or logs document: the
    resource → scope → items nesting both signals share."""
    for res in _list(doc, *outer):
        if type(res) is not dict:
            raise OtlpJsonError(f"a {outer[0]} item is not an object")
        resource = res.get("resource")
        res_attrs = attributes_json(resource.get("attributes")) if type(resource) is dict else {}
        for sc in _list(res, *inner):
            if type(sc) is not dict:
                raise OtlpJsonError(f"a {inner[0]} item is not an object")
            scope = sc.get("scope")
            scope_name = (scope.get("name") or None) if type(scope) is dict else None
            for item in _list(sc, *items):
                if type(item) is not dict:
                    raise OtlpJsonError(f"a {what} is not an object")
                yield res_attrs, scope_name, item


def span_records_from_json(doc: Mapping[str, Any]) -> Iterator[SpanRecord]:
    """The spans of one OTLP/JSON ``ExportTraceServiceRequest`` document."""
    for res_attrs, scope_name, sp in _scoped(
        doc, ("resourceSpans", "resource_spans"), ("scopeSpans", "scope_spans"), ("spans", "spans"), "span"
    ):
        status = sp.get("status")
        if type(status) is not dict:
            status = _EMPTY
        events = []
        for ev in _list(sp, "events", "events"):
            if type(ev) is not dict:
                raise OtlpJsonError("a span event is not an object")
            events.append((
                str(ev.get("name", "")),
                attributes_json(ev.get("attributes")),
                _int(_get(ev, "timeUnixNano", "time_unix_nano")),
            ))
        yield SpanRecord(
            trace_id=_id(_get(sp, "traceId", "trace_id"), 16) or "0" * 32,
            span_id=_id(_get(sp, "spanId", "span_id"), 8) or "0" * 16,
            parent_span_id=_id(_get(sp, "parentSpanId", "parent_span_id"), 8),
            name=str(sp.get("name", "")),
            kind=_enum(sp.get("kind"), _KINDS, "SPAN_KIND_", "UNSPECIFIED"),
            attributes=attributes_json(sp.get("attributes")),
            events=tuple(events),
            status_code=_enum(status.get("code"), _STATUSES, "STATUS_CODE_", "UNSET"),
            status_message=status.get("message") or None,
            start_time_unix_nano=_int(_get(sp, "startTimeUnixNano", "start_time_unix_nano")),
            end_time_unix_nano=_int(_get(sp, "endTimeUnixNano", "end_time_unix_nano")),
            scope_name=scope_name,
            resource_attributes=res_attrs,
        )


def span_views_from_json(doc: Mapping[str, Any]) -> Iterator[OtlpSpan]:
    """The spans of one OTLP/JSON ``ExportTraceServiceRequest`` document as views
    (:class:`~._otlp_views.OtlpSpan`: what the table-driven readers read directly), with the fields
    and checks of :func:`span_records_from_json`; the resource and scope of a group are shared.

    Each view's slots are filled directly (one view per span read): the spelling OTLP/HTTP writes —
    camelCase keys, numbers for enums, decimal strings or numbers for times, hex ids — is read with
    a look-up each, an id repeated from the span before (its trace, its parent) is not decoded
    again, and anything else takes the general helpers (``tests/extract/test_offline_lanes.py``
    holds both ways to :func:`span_records_from_json`)."""
    resource = OtlpResource(attributes=_EMPTY)
    tids: dict[str, str | None] = {}
    ids: dict[str, str | None] = {}
    for res in _list(doc, "resourceSpans", "resource_spans"):
        if type(res) is not dict:
            raise OtlpJsonError("a resourceSpans item is not an object")
        res_doc = res.get("resource")
        res_attrs = attributes_json(res_doc.get("attributes")) if type(res_doc) is dict else {}
        resource = OtlpResource(attributes=res_attrs)
        last_scope: tuple[bool, str | None] = (False, None)
        scope: OtlpScope | None = None
        for sc in _list(res, "scopeSpans", "scope_spans"):
            if type(sc) is not dict:
                raise OtlpJsonError("a scopeSpans item is not an object")
            scope_doc = sc.get("scope")
            scope_name = (scope_doc.get("name") or None) if type(scope_doc) is dict else None
            if not last_scope[0] or last_scope[1] != scope_name:
                last_scope = (True, scope_name)
                scope = OtlpScope(scope_name) if scope_name else None
            for sp in _list(sc, "spans", "spans"):
                if type(sp) is not dict:
                    raise OtlpJsonError("a span is not an object")
                yield _span_view(sp, scope, resource, tids, ids)


_new = object.__new__
_UNSET_STATUS = status_of(0, None)


def _span_view(
    sp: dict[str, Any], scope: OtlpScope | None, resource: OtlpResource, tids: dict[str, str | None], ids: dict[str, str | None]
) -> OtlpSpan:
    """The view of one OTLP/JSON span (see :func:`span_views_from_json`); ``tids`` / ``ids``: a raw
    trace id / span id → its hex, for the ids of the spans just read."""
    view: OtlpSpan = _new(OtlpSpan)
    raw_events = sp.get("events")  # in the order span_records_from_json reads them (the first error named is the same)
    if raw_events is not None and not isinstance(raw_events, list):
        raise OtlpJsonError(f"events is a {type(raw_events).__name__}, not a list")
    if raw_events:
        built = []
        for ev in raw_events:
            if type(ev) is not dict:
                raise OtlpJsonError("a span event is not an object")
            built.append(OtlpEvent(
                str(ev.get("name", "")),
                attributes_json(ev.get("attributes")),
                _int(_get(ev, "timeUnixNano", "time_unix_nano")),
            ))
        view._events = tuple(built)
    else:
        view._events = ()
    raw = sp.get("traceId")
    if raw is None:
        raw = sp.get("trace_id")
    tid = _remembered_id(tids, raw, 16)
    raw = sp.get("spanId")
    if raw is None:
        raw = sp.get("span_id")
    sid = _remembered_id(ids, raw, 8)
    raw = sp.get("parentSpanId")
    if raw is None:
        raw = sp.get("parent_span_id")
    pid = ids.get(raw, _MISSING) if type(raw) is str else _MISSING
    if pid is _MISSING:
        pid = _id(raw, 8)
    view.trace_hex = tid or _NO_TRACE
    view.span_hex = sid or _NO_SPAN
    view.parent_hex = pid
    name = sp.get("name", "")
    view._name = name if type(name) is str else str(name)
    kind = sp.get("kind")
    view._kind = kind if type(kind) is int and 0 <= kind < 6 else _KIND_NUMBERS[_enum(kind, _KINDS, "SPAN_KIND_", "UNSPECIFIED")]
    kvs = sp.get("attributes")
    view._dict = attributes_json(kvs) if kvs else {}
    start = sp.get("startTimeUnixNano")
    if start is None:
        start = sp.get("start_time_unix_nano")
    view._start_time = _int(start)
    end = sp.get("endTimeUnixNano")
    if end is None:
        end = sp.get("end_time_unix_nano")
    view._end_time = _int(end)
    status = sp.get("status")
    if type(status) is dict and status:
        code = status.get("code")
        number = code if type(code) is int and 0 <= code < 3 else _STATUS_NUMBERS[_enum(code, _STATUSES, "STATUS_CODE_", "UNSET")]
        message = status.get("message") or None
        view._status = status_of(number, message)
        view.status_message = message
    else:
        view._status = _UNSET_STATUS
        view.status_message = None
    return placed(view, scope, resource)


def _remembered_id(seen: dict[str, str | None], raw: Any, size: int) -> str | None:
    """:func:`_id` of ``raw``, remembered in ``seen`` (the last few dozen): a trace's spans repeat its
    id, and a parent's id is a span id read just before."""
    if type(raw) is not str:
        return _id(raw, size)
    got = seen.get(raw, _MISSING)
    if got is _MISSING:
        got = _id(raw, size)
        if len(seen) > 64:
            seen.clear()
        seen[raw] = got
    return got  # type: ignore[no-any-return]


_MISSING: Any = object()
_NO_TRACE = "0" * 32
_NO_SPAN = "0" * 16


_KIND_NUMBERS = {name: n for n, name in enumerate(_KINDS)}
_STATUS_NUMBERS = {name: n for n, name in enumerate(_STATUSES)}


def log_views_from_json(doc: Mapping[str, Any]) -> Iterator[LogRecordView]:
    """The log records of one OTLP/JSON ``ExportLogsServiceRequest`` document."""
    for res_attrs, scope_name, lr in _scoped(
        doc, ("resourceLogs", "resource_logs"), ("scopeLogs", "scope_logs"), ("logRecords", "log_records"), "log record"
    ):
        attrs = attributes_json(lr.get("attributes"))
        name = _get(lr, "eventName", "event_name") or attrs.get("event.name")
        body = lr.get("body")
        yield LogRecordView(
            trace_id=_id(_get(lr, "traceId", "trace_id"), 16),
            span_id=_id(_get(lr, "spanId", "span_id"), 8),
            event_name=str(name) if name else None,
            body=any_value_json(body) if body is not None else None,
            attributes=attrs,
            time_unix_nano=_int(_get(lr, "timeUnixNano", "time_unix_nano"))
            or _int(_get(lr, "observedTimeUnixNano", "observed_time_unix_nano")),
            scope_name=scope_name,
            resource_attributes=res_attrs,
        )
