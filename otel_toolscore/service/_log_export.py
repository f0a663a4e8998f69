"""The service's own log records (``gen_ai.evaluation.result``), encoded directly as OTLP.

Through the SDK, every evaluation record the service writes becomes an API ``LogRecord``, an SDK
``ReadWriteLogRecord`` with its attributes copied into ``BoundedAttributes``, then — on the batch
processor's thread — a protobuf ``LogRecord`` message built field by field and the request around
it: 47 to 60 µs of CPU per record written by the emitter, measured alone on the test machine, where
this module takes 12 to 15 µs (the service writes one record a run, more with the judge). The
records are the service's own, their shape known, so :class:`EncodedLoggerProvider` writes each as
the bytes of its ``LogRecord`` when it is emitted, and sends them in batches through the queue and
sender enrich-and-forward uses (:class:`~._forward.ForwardQueue`: the resource's and scope's fields
encoded once, the request assembled by concatenation — a logs request nests as a traces request
does —; :func:`~._otlp_sender.otlp_sender`: ``OTEL_EXPORTER_OTLP_LOGS_*`` then
``OTEL_EXPORTER_OTLP_*``, retries as OTLP says).

What leaves is what the SDK's exporter sends (``tests/test_service_log_export.py`` compares them
record by record): the same fields, the same attribute limits (``LogRecordLimits``: their
environment variables), the same batching (``OTEL_BLRP_*``, the SDK's defaults). Unlike the SDK's
batch processor, nothing is lost silently: a record that finds the queue full is counted
(``toolscore.dropped{reason=log_queue_full}``), and so are a batch the backend never took and
the records still queued or being sent when the service's drain ends (``log_export_failed``: the
records are not spans, whose ``drain_timeout`` they would blur).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import _logs
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context, get_current
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope as PbScope
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource as PbResource
from opentelemetry.sdk._logs import LogRecordLimits
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import get_current_span

from ..envconfig import warn_env
from ._forward import ForwardQueue
from ._otlp_sender import TraceSender
from ._wire import Envelope, encode_any_value, encode_key_value, envelope, varint

__all__ = ["EncodedLoggerProvider", "encode_log_record"]

_log = logging.getLogger(__name__)

#: What the SDK's batch log record processor defaults to (and reads from the same variables). Its
#: ``OTEL_BLRP_EXPORT_TIMEOUT`` is not here: the SDK keeps it unused, an export ending by the
#: exporter's own ``OTEL_EXPORTER_OTLP_[LOGS_]TIMEOUT``, as the sender's does.
_BLRP_DEFAULTS = {
    "OTEL_BLRP_SCHEDULE_DELAY": 1000,
    "OTEL_BLRP_MAX_QUEUE_SIZE": 2048,
    "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE": 512,
}
#: The SDK's record limits' variables: the global ones, then the log records' own.
_COUNT, _LENGTH = "OTEL_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"
_RECORD_COUNT, _RECORD_LENGTH = "OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT", "OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT"
_DEFAULT_COUNT = 128

DropCounter = Callable[[str, int], None]


def _uncounted(reason: str, amount: int) -> None:
    _log.debug("otel-toolscore logs: %d record(s) dropped (%s)", amount, reason)


def _blrp(name: str, environ: Mapping[str, str]) -> int:
    """An ``OTEL_BLRP_*`` setting: a positive integer, else its default (a bad value warned about)."""
    default = _BLRP_DEFAULTS[name]
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        warn_env(f"{name}={raw[:60]!r} is ignored (a positive integer); {default} is used")
        return default
    return value


def _record_limits(environ: Mapping[str, str]) -> LogRecordLimits:
    """The SDK's log record limits, read from ``environ`` as the SDK reads them (the log records' own
    variable first, then the global one; ``unset``: no limit), except that a bad value is warned
    about and ignored, as the OpenTelemetry specification says, where the SDK's provider refuses to
    start."""
    values: dict[str, int] = {}
    for name in (_COUNT, _LENGTH, _RECORD_COUNT, _RECORD_LENGTH):
        text = environ.get(name, "").strip().lower()
        if not text:
            continue
        if text == "unset":
            values[name] = LogRecordLimits.UNSET
            continue
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < 0:
            warn_env(f"{name}={text[:60]!r} is ignored (a non-negative integer, or 'unset')")
            continue
        values[name] = value
    count = values.get(_COUNT, _DEFAULT_COUNT)
    if count == LogRecordLimits.UNSET:
        count = _DEFAULT_COUNT  # as the SDK: the global count limit always has its default
    length = values.get(_LENGTH, LogRecordLimits.UNSET)
    # every limit given explicitly: the SDK reads no variable itself
    return LogRecordLimits(
        max_attributes=count,
        max_attribute_length=length,
        max_log_record_attributes=values.get(_RECORD_COUNT, count),
        max_log_record_attribute_length=values.get(_RECORD_LENGTH, length),
    )


# -- one record ------------------------------------------------------------------------------------------
_FIXED64 = struct.Struct("<Q")
_FIXED32 = struct.Struct("<I")
# LogRecord fields (opentelemetry/proto/logs/v1/logs.proto), tag bytes, in field-number order as
# protobuf writes them
_TIME, _SEVERITY, _SEVERITY_TEXT, _BODY, _ATTRIBUTE = b"\x09", b"\x10", b"\x1a", b"\x2a", b"\x32"
_DROPPED, _FLAGS, _TRACE_ID, _SPAN_ID, _OBSERVED, _EVENT_NAME = b"\x38", b"\x45", b"\x4a\x10", b"\x52\x08", b"\x59", b"\x62"
#: Encoded attribute entries by (key, type, value) for the values that recur record after record
#: (evaluation names, labels, agent names, flags): bounded, a value seen past the bound is encoded
#: each time; short texts only, so the cache holds no explanations.
_ATTRIBUTES: dict[tuple[str, type, Any], bytes] = {}
_CACHE_LIMIT = 4096
_CACHED_TEXT = 128


def encode_log_record(
    *,
    timestamp: int | None,
    observed_timestamp: int,
    trace_id: int,
    span_id: int,
    trace_flags: int,
    severity_number: int | None,
    severity_text: str | None,
    body: Any,
    attributes: Mapping[str, Any],
    dropped_attributes: int,
    event_name: str | None,
) -> bytes:
    """One OTLP ``LogRecord``, encoded as the SDK's exporter encodes the record (absent and zero
    fields left out, as proto3 does). An attribute that cannot be encoded (an integer out of the
    int64 range, a value of another type) is left out, as the SDK's exporter leaves it out, and
    counted in the record's ``dropped_attributes_count``, which the SDK's does not."""
    out = []
    encoded_attributes = []
    cache = _ATTRIBUTES
    for key, val in attributes.items():
        kind = type(val)
        cached = kind is bool or kind is int or (kind is str and len(val) <= _CACHED_TEXT)
        if cached:
            entry = cache.get((key, kind, val))
            if entry is not None:
                encoded_attributes.append(entry)
                continue
        try:
            kv = encode_key_value(key, val, mappings=True)
        except (ValueError, RecursionError) as exc:
            _log.debug("otel-toolscore logs: attribute %r left out: %s", key, exc)
            dropped_attributes += 1
            continue
        entry = _ATTRIBUTE + varint(len(kv)) + kv
        if cached and len(cache) < _CACHE_LIMIT:
            cache[(key, kind, val)] = entry
        encoded_attributes.append(entry)
    if timestamp:
        out.append(_TIME + _FIXED64.pack(timestamp))
    if severity_number:
        out.append(_SEVERITY + varint(severity_number & 0xFFFFFFFFFFFFFFFF))  # an enum: int32, sign-extended
    if severity_text:
        text = severity_text.encode()
        out.append(_SEVERITY_TEXT + varint(len(text)) + text)
    value = encode_any_value(body, mappings=True)  # written even when there is none, as the SDK does
    out.append(_BODY + varint(len(value)) + value)
    out += encoded_attributes
    if dropped_attributes:
        out.append(_DROPPED + varint(dropped_attributes))
    if trace_flags:
        out.append(_FLAGS + _FIXED32.pack(trace_flags & 0xFFFFFFFF))
    if trace_id:
        out.append(_TRACE_ID + trace_id.to_bytes(16, "big"))
    if span_id:
        out.append(_SPAN_ID + span_id.to_bytes(8, "big"))
    if observed_timestamp:
        out.append(_OBSERVED + _FIXED64.pack(observed_timestamp))
    if event_name:
        name = event_name.encode()
        out.append(_EVENT_NAME + varint(len(name)) + name)
    return b"".join(out)


#: the types of the attribute values the SDK's limits leave as they are (no value length limit)
_PLAIN = frozenset((str, bool, int, float))


def _exception_attributes(exception: BaseException) -> dict[str, Any]:
    """What the SDK adds for a record's exception (``exception.type``, ``.message``, ``.stacktrace``)."""
    module = type(exception).__module__
    qualname = type(exception).__qualname__
    return {
        "exception.type": f"{module}.{qualname}" if module and module != "builtins" else qualname,
        "exception.message": str(exception),
        "exception.stacktrace": "".join(
            traceback.format_exception(type(exception), value=exception, tb=exception.__traceback__)
        ),
    }


class _EncodedLogger(_logs.Logger):
    """A logger of :class:`EncodedLoggerProvider`: each record encoded when emitted."""

    def __init__(self, provider: EncodedLoggerProvider, scope: Envelope, limits: LogRecordLimits, name: str) -> None:
        super().__init__(name)
        self._provider = provider
        self._scope = scope
        self._max_attributes = limits.max_log_record_attributes
        self._max_length = limits.max_log_record_attribute_length

    def enabled(
        self,
        *,
        context: Context | None = None,
        severity_number: _logs.SeverityNumber | None = None,
        event_name: str | None = None,
    ) -> bool:
        return True

    def emit(
        self,
        record: _logs.LogRecord | None = None,
        *,
        timestamp: int | None = None,
        observed_timestamp: int | None = None,
        context: Context | None = None,
        severity_number: _logs.SeverityNumber | None = None,
        severity_text: str | None = None,
        body: Any = None,
        attributes: Any = None,
        event_name: str | None = None,
        exception: BaseException | None = None,
    ) -> None:
        if record is not None:
            timestamp, observed_timestamp = record.timestamp, record.observed_timestamp
            trace_id, span_id, flags = record.trace_id or 0, record.span_id or 0, int(record.trace_flags or 0)
            severity_number, severity_text = record.severity_number, record.severity_text
            body, attributes, event_name = record.body, record.attributes, record.event_name
            exception = getattr(record, "exception", None)
        else:
            ctx = get_current_span(context or get_current()).get_span_context()
            trace_id, span_id, flags = ctx.trace_id, ctx.span_id, int(ctx.trace_flags)
        if observed_timestamp is None:
            observed_timestamp = time.time_ns()
        attrs: Mapping[str, Any] = attributes or {}
        if exception is not None:
            attrs = _exception_attributes(exception) | dict(attrs.items())
        dropped = 0
        limit = self._max_attributes
        if not (
            (limit is None or len(attrs) <= limit)
            and self._max_length is None
            and all(type(k) is str and k and type(v) in _PLAIN for k, v in attrs.items())
        ):
            # anything but short lists of plain values: the SDK's own limits and cleaning
            bounded = BoundedAttributes(maxlen=limit, attributes=attrs, immutable=False,
                                        max_value_len=self._max_length, extended_attributes=True)
            attrs, dropped = dict(bounded), bounded.dropped
        encoded = encode_log_record(
            timestamp=timestamp,
            observed_timestamp=observed_timestamp,
            trace_id=trace_id,
            span_id=span_id,
            trace_flags=flags,
            severity_number=getattr(severity_number, "value", None),
            severity_text=severity_text,
            body=body,
            attributes=attrs,
            dropped_attributes=dropped,
            event_name=event_name,
        )
        self._provider.put(self._scope, encoded)


class EncodedLoggerProvider(_logs.LoggerProvider):
    """A logger provider whose records leave as encoded OTLP (see the module docstring).

    Writing a record only queues it (:attr:`only_queues`): the core's outputs write evaluation
    records on the scorer's thread, as they do for the SDK's provider with a batch processor."""

    #: emitting never waits on the exporter (read by :func:`otel_toolscore.core._outputs.only_queues`)
    only_queues = True

    def __init__(self, resource: Resource, sender: TraceSender, count_drop: DropCounter | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self._limits = _record_limits(env)
        pb = PbResource()
        pb.attributes.extend(
            KeyValue.FromString(encode_key_value(k, v, mappings=True)) for k, v in resource.attributes.items()
        )
        self._resource = envelope(pb, resource.schema_url or "")
        #: the batching queue enrich-and-forward uses, holding encoded records (a logs request nests
        #: as a traces request does: resource, scope, items)
        self.export = ForwardQueue(
            sender,
            _blrp("OTEL_BLRP_MAX_QUEUE_SIZE", env),
            count_drop or _uncounted,
            capacity_bytes=1 << 62,  # bounded in records, as the SDK's queue is
            schedule_delay_ms=_blrp("OTEL_BLRP_SCHEDULE_DELAY", env),
            batch_size=_blrp("OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", env),
            reasons=("log_queue_full", "log_export_failed", "log_export_failed"),
            name="otel-toolscore-log-export",
        )
        self._loggers: dict[tuple[str, str | None, str | None], _EncodedLogger] = {}
        self._lock = threading.Lock()

    def get_logger(
        self, name: str, version: str | None = None, schema_url: str | None = None, attributes: Any = None
    ) -> _logs.Logger:
        if attributes is not None:  # as the SDK's provider: a scope with attributes is not cached
            return self._new_logger(name, version, schema_url, attributes)
        key = (name, version, schema_url)
        with self._lock:
            logger = self._loggers.get(key)
            if logger is None:
                logger = self._loggers[key] = self._new_logger(name, version, schema_url, None)
        return logger

    def _new_logger(self, name: str, version: str | None, schema_url: str | None, attributes: Any) -> _EncodedLogger:
        scope = PbScope(name=name, version=version or "")
        if attributes:
            scope.attributes.extend(
                KeyValue.FromString(encode_key_value(k, v, mappings=True)) for k, v in attributes.items()
            )
        return _EncodedLogger(self, envelope(scope, schema_url or ""), self._limits, name)

    def put(self, scope: Envelope, record: bytes) -> None:
        """Queue one encoded record (never waits: a full queue drops it, counted)."""
        self.export.put((self._resource, scope, record), wait=False)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.export.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Send what is queued, then stop; records written after that are counted (``log_export_failed``).
        Unbounded as the sender's retries are: the service bounds it, then calls :meth:`abandon`."""
        self.export.shutdown()

    def abandon(self) -> int:
        """At the end of a drain: records still queued or being sent are given up, counted
        (``log_export_failed``), and a send still retrying ends; how many."""
        return self.export.abandon()
