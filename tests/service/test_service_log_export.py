"""The service's evaluation records, encoded directly (service/_log_export.py), are the records the
SDK's logger provider and OTLP exporter send: the same resource, scope, fields, body and attributes,
over OTLP/HTTP and OTLP/gRPC, to real receivers on 127.0.0.1; a full queue and a backend that never
takes a batch are counted, not lost silently; the bytes of every value type are protobuf's."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.common._internal import _encode_value  # what the records must match
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource

from otel_toolscore.service._log_export import EncodedLoggerProvider, encode_log_record
from otel_toolscore.service._otlp_sender import otlp_sender
from otel_toolscore.service._outputs import service_resource
from otel_toolscore.service._wire import encode_any_value, varint
from otel_toolscore.telemetry import Emitter, RunRef
from tests.support.telemetry import counter_by
from tests.tools.otlp import (
    Capture,
    capture_server,
    drain_after_first_request,
    grpc_capture_server,
    scripted_http,
)

PROTOCOLS: dict[str, tuple[Callable[[], AbstractContextManager[tuple[str, Capture]]], str]] = {
    "http/protobuf": (capture_server, "http/protobuf"),
    "grpc": (grpc_capture_server, "grpc"),
}


def _emit_all(emitter: Emitter) -> None:
    """What the service writes: code scores (pass, fail, no score, an error), with and without an
    agent and a conversation, the judge's extra attributes, a sampled and an unsampled root."""
    refs = [
        RunRef(trace_id=0x1234, span_id=0x99, agent_name="weather_agent", conversation_id="c-1", sampled=True),
        RunRef(trace_id=(1 << 127) + 5, span_id=(1 << 63) + 1, agent_name=None, conversation_id=None, sampled=False),
    ]
    for ref in refs:
        emitter.emit_evaluation(ref, name="tool_call_accuracy_code", score=1.0, label="pass",
                                explanation="called get_weather as expected")
        emitter.emit_evaluation(ref, name="tool_call_accuracy_code", score=0.0, label="fail", explanation="",
                                metric_attributes={"toolscore.expected_tool": "get_weather"})
        emitter.emit_evaluation(ref, name="tool_call_accuracy_llm", score=None, label=None, error_type="timeout")
        emitter.emit_evaluation(ref, name="tool_call_accuracy_llm", score=0.75, label="partial",
                                explanation="é ünïcode ✓", extra_attributes={
                                    "gen_ai.response.model": "judge-model", "toolscore.judge.attempts": 2,
                                    "toolscore.judge.cached": False, "toolscore.judge.tokens": [3, 4],
                                })


def _records(capture: Capture) -> list[tuple[Any, Any, LogRecord]]:
    with capture.lock:
        requests = list(capture.requests["/v1/logs"])
    return [(rl.resource, sl.scope, lr) for r in requests for rl in r.resource_logs for sl in rl.scope_logs
            for lr in sl.log_records]


def _comparable(record: LogRecord) -> LogRecord:
    out = LogRecord()
    out.CopyFrom(record)
    assert out.observed_time_unix_nano > 0
    out.observed_time_unix_nano = 0  # when each was written
    return out


@pytest.fixture(params=sorted(PROTOCOLS))
def protocol(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


def _sdk_and_ours(protocol: str, resource: Resource, emit: Callable[[Any], None]) -> list[tuple[Any, Any, LogRecord]]:
    """``emit`` run on the SDK's logger provider (batch processor, OTLP log exporter) and on ours, each
    sending over ``protocol`` to its own receiver on 127.0.0.1; every record received from ours
    checked against the SDK's, record by record (resource, scope, fields, body, attributes, counts:
    all but the moment each was written); ours returned."""
    server, wire = PROTOCOLS[protocol]
    with server() as (endpoint, sdk_capture), server() as (endpoint2, ours_capture):
        sdk = LoggerProvider(resource=resource)
        exporter = (HttpLogExporter(endpoint=f"{endpoint}/v1/logs") if wire == "http/protobuf"
                    else GrpcLogExporter(endpoint=endpoint, insecure=True))
        sdk.add_log_record_processor(BatchLogRecordProcessor(exporter))
        ours = EncodedLoggerProvider(resource, otlp_sender("logs", wire, endpoint2))
        for provider in (sdk, ours):
            emit(provider)
            provider.force_flush()
        sdk.shutdown()
        ours.shutdown()
        expected, got = _records(sdk_capture), _records(ours_capture)
    assert len(got) == len(expected) > 0
    for (res_a, scope_a, rec_a), (res_b, scope_b, rec_b) in zip(expected, got, strict=True):
        assert (res_b, scope_b) == (res_a, scope_a)
        assert _comparable(rec_b) == _comparable(rec_a)
    return got


def test_encoded_records_are_what_the_sdk_exports(protocol: str) -> None:
    got = _sdk_and_ours(protocol, service_resource(), lambda provider: _emit_all(Emitter(MeterProvider(), provider)))
    assert len(got) == 8
    bodies = [r.body.string_value for _, _, r in got]
    assert bodies[0] == "evaluation: tool_call_accuracy_code=1.0"
    assert got[0][2].severity_number == SeverityNumber.INFO.value
    assert got[2][2].severity_number == SeverityNumber.WARN.value
    assert got[0][2].trace_id == (0x1234).to_bytes(16, "big") and got[0][2].flags == 1
    assert got[4][2].flags == 0  # the unsampled root's record says so


def test_the_service_writes_its_records_encoded_and_the_backend_reads_them() -> None:
    """``serve --export`` without an injected provider: the records leave through the encoded path."""
    from otel_toolscore.service import ScoringService, load_config

    with capture_server() as (endpoint, capture):
        config = load_config(environ={}, service_overrides={"export_endpoint": endpoint, "http_port": 0, "grpc_port": 0})
        service = ScoringService(config)
        try:
            assert isinstance(service.logger_provider, EncodedLoggerProvider)
            _emit_all(service.emitter)
            assert service.logger_provider.force_flush(10_000)
        finally:
            service.shutdown(5)
        records = _records(capture)
    assert len(records) == 8
    names = [{kv.key: kv.value for kv in r.attributes}["gen_ai.evaluation.name"].string_value for _, _, r in records]
    assert names[:2] == ["tool_call_accuracy_code", "tool_call_accuracy_code"]
    assert records[0][2].event_name == "gen_ai.evaluation.result"


def test_a_full_queue_and_a_backend_that_refuses_are_counted() -> None:
    drops: list[tuple[str, int]] = []
    written = threading.Event()

    class Refusing:
        sent = 0

        def send(self, body: bytes, spans: int) -> bool:
            written.wait(10)  # the queue stays full until every record was written
            Refusing.sent += spans
            return False

        def shutdown(self) -> None:
            pass

    provider = EncodedLoggerProvider(Resource({}), Refusing(), lambda reason, n: drops.append((reason, n)),
                                     environ={"OTEL_BLRP_MAX_QUEUE_SIZE": "4", "OTEL_BLRP_SCHEDULE_DELAY": "60000"})
    logger = provider.get_logger("x")
    for i in range(10):
        logger.emit(body=f"record {i}", severity_number=SeverityNumber.INFO)
    written.set()
    assert provider.force_flush(5_000)
    provider.shutdown()
    logger.emit(body="after the end")  # counted too
    assert _totals(drops) == {"log_queue_full": 6, "log_export_failed": 5}
    assert Refusing.sent == 4


def _totals(drops: list[tuple[str, int]]) -> dict[str, int]:
    return {reason: sum(n for r, n in drops if r == reason) for reason, _ in drops}


def test_records_a_backend_never_takes_are_counted_when_the_drain_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend answers 503 to everything and the sender would retry for 60 s: the service's drain
    keeps its deadline, the records it could not deliver are counted (``log_export_failed``) in the
    metrics, and the sender stops retrying."""
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from otel_toolscore.service import ScoringService, load_config

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_TIMEOUT", "60")
    reader = InMemoryMetricReader()
    with scripted_http([(503, {})]) as (url, seen):
        endpoint = url.rsplit("/v1/traces", 1)[0]
        config = load_config(environ={}, service_overrides={"export_endpoint": endpoint, "http_port": 0, "grpc_port": 0})
        service = ScoringService(config, meter_provider=MeterProvider(metric_readers=[reader]))
        assert isinstance(service.logger_provider, EncodedLoggerProvider)
        _emit_all(service.emitter)
        service.logger_provider.export.force_flush(0)  # sent at once, not after the schedule delay
        took, alive = drain_after_first_request(service, seen, 2, "otel-toolscore-log-export")
    assert took < 4, f"a 2 s drain took {took:.1f} s"
    assert not alive, "the sender kept retrying after the drain"
    assert counter_by(reader, "toolscore.dropped", "toolscore.reason") == {"log_export_failed": 8}


def test_attribute_limits_from_the_environment_are_the_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``OTEL_LOGRECORD_ATTRIBUTE_*`` limit our records as they limit the SDK's (count, value length,
    the dropped count), also for records with an exception, a mapping body and list values."""
    monkeypatch.setenv("OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT", "4")
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "6")

    def emit(provider: Any) -> None:
        logger = provider.get_logger("limits", "1.0", "https://example.com/schema")
        scoped = provider.get_logger("limits", "1.0", "https://example.com/schema", attributes={"tier": "gold"})
        scoped.emit(body="from a scope with attributes", attributes={"a": 1})
        many = {f"k{i}": "a long value" for i in range(7)}
        logger.emit(body="plain", attributes={"a": 1, "b": "short", "c": 2.5})
        logger.emit(body={"m": [1, "two"]}, attributes=many, severity_number=SeverityNumber.ERROR, severity_text="E",
                    timestamp=1_700_000_000_000_000_000, event_name="e")
        logger.emit(body=None, attributes={"tags": ["abcdefgh", "x"], "n": [1, 2]})
        try:
            raise RuntimeError("boom")
        except RuntimeError as exc:
            logger.emit(body="failed", attributes={"x": "y"}, exception=exc)

    got = _sdk_and_ours("http/protobuf", Resource({"service.name": "limits"}), emit)
    assert len(got) == 5
    assert {kv.key: kv.value.string_value for kv in got[0][1].attributes} == {"tier": "gold"}
    got = got[1:]
    assert got[1][2].dropped_attributes_count == 3 and len(got[1][2].attributes) == 4
    assert {kv.key: kv.value.string_value for kv in got[1][2].attributes}["k6"] == "a long"  # the oldest dropped


def test_bad_limits_from_the_environment_are_warned_about_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    """Where the SDK's provider refuses to start, a bad limit is warned about and ignored (the
    OpenTelemetry specification's rule for settings from the environment)."""
    env = {"OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT": "many", "OTEL_ATTRIBUTE_COUNT_LIMIT": "3",
           "OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT": "-1", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "unset"}
    provider = EncodedLoggerProvider(Resource({}), otlp_sender("logs", "http/protobuf", "http://127.0.0.1:9"),
                                     environ=env)
    try:
        limits = provider._limits
        assert (limits.max_log_record_attributes, limits.max_log_record_attribute_length) == (3, None)
        assert "OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT" in caplog.text
        assert "OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT" in caplog.text
    finally:
        provider.shutdown()


def test_an_attribute_that_cannot_be_encoded_is_left_out_and_counted() -> None:
    record = LogRecord.FromString(encode_log_record(
        timestamp=None, observed_timestamp=1, trace_id=0, span_id=0, trace_flags=0, severity_number=None,
        severity_text=None, body="b", attributes={"ok": 1, "huge": 1 << 70, "also": "x"}, dropped_attributes=1,
        event_name=None,
    ))
    assert [kv.key for kv in record.attributes] == ["ok", "also"]
    assert record.dropped_attributes_count == 2


def test_bad_batch_settings_from_the_environment_are_warned_about_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    provider = EncodedLoggerProvider(Resource({}), otlp_sender("logs", "http/protobuf", "http://127.0.0.1:9"),
                                     environ={"OTEL_BLRP_MAX_QUEUE_SIZE": "-3", "OTEL_BLRP_SCHEDULE_DELAY": "soon"})
    try:
        assert provider.export.capacity == 2048
        assert "OTEL_BLRP_MAX_QUEUE_SIZE" in caplog.text and "OTEL_BLRP_SCHEDULE_DELAY" in caplog.text
    finally:
        provider.shutdown()


def test_every_value_type_encodes_as_the_sdk_exporter_does() -> None:
    rnd = random.Random(7)
    values: list[Any] = [None, True, False, 0, -1, 1 << 62, -(1 << 63), 0.0, -0.0, 2.5, float("inf"), "", "é✓",
                         b"", b"\x00\xff", [], [1, "a", [2.0]], {"a": {"b": [1, None]}, "": 3}, ("x",) * 40]
    values += [rnd.choice([rnd.randint(-(1 << 63), (1 << 63) - 1), rnd.random(), "k" * rnd.randint(0, 300)])
               for _ in range(200)]
    for value in values:
        assert encode_any_value(value, mappings=True) == _encode_value(value).SerializeToString(), value
    with pytest.raises(ValueError):
        varint(-1)  # a caller's bug, never a wrong byte
    record = encode_log_record(timestamp=5, observed_timestamp=7, trace_id=1 << 100, span_id=3, trace_flags=1,
                               severity_number=13, severity_text="WARN", body={"k": [1, 2]},
                               attributes={"a": 1, "b": "x"}, dropped_attributes=2, event_name="e")
    expected = LogRecord(time_unix_nano=5, observed_time_unix_nano=7, trace_id=(1 << 100).to_bytes(16, "big"),
                         span_id=(3).to_bytes(8, "big"), flags=1, severity_number=13, severity_text="WARN",
                         body=_encode_value({"k": [1, 2]}), dropped_attributes_count=2, event_name="e")
    expected.attributes.add(key="a").value.int_value = 1
    expected.attributes.add(key="b").value.string_value = "x"
    assert record == expected.SerializeToString()
