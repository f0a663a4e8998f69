"""Enrich-and-forward passes spans on as received, and its sender retries as OTLP says.

* A span that gains nothing leaves byte for byte as the sender encoded it — fields the SDK's span
  objects cannot carry (span flags, dropped counts, trace state, bytes and key-value attributes,
  schema URLs) included — over OTLP/HTTP and OTLP/gRPC to real backends on 127.0.0.1.
* A run's root leaves as its received message plus the score attributes, nothing else changed.
* The senders: retryable HTTP statuses and ``Retry-After``, gRPC ``UNAVAILABLE`` and
  ``RESOURCE_EXHAUSTED`` with / without ``RetryInfo``, the request timeout as the bound of all
  retries, compression and headers from ``OTEL_EXPORTER_OTLP_*``.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
import pytest
from google.protobuf import duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore import Expectation
from otel_toolscore.scripted import run_scripted_agent
from otel_toolscore.service._app import ScoringService
from otel_toolscore.service._otlp_sender import GrpcTraceSender, HttpTraceSender, trace_sender
from otel_toolscore.service._wire import build_request, envelope, with_attributes
from otel_toolscore.service.settings import load_config
from tests.support.telemetry import counter_by
from tests.tools.otlp import capture_server, drain_after_first_request, grpc_capture_server, scripted_http

RULES = [Expectation(agent_name="weather_agent", expected_tool="get_weather")]


def _agent_request() -> trace_service_pb2.ExportTraceServiceRequest:
    """A scripted agent run as the SDK's exporter encodes it, plus what only the wire can carry."""
    memory = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(memory))
    run_scripted_agent(tp.get_tracer("agent"), "weather_agent", "What's the weather in Paris?", ["get_weather"])
    request = encode_spans(memory.get_finished_spans())
    for rs in request.resource_spans:
        rs.schema_url = "https://opentelemetry.io/schemas/1.30.0"
        for ss in rs.scope_spans:
            ss.schema_url = "https://opentelemetry.io/schemas/1.29.0"
            for sp in ss.spans:
                sp.flags |= 0x100  # "is_remote known": the SDK's span objects cannot carry these bits
                sp.dropped_attributes_count = 3
                sp.dropped_events_count = 2
                sp.trace_state = "vendor=abc"
                sp.attributes.append(KeyValue(key="blob", value=AnyValue(bytes_value=b"\x00\x01")))
                kv = KeyValue(key="nested")
                kv.value.kvlist_value.values.add(key="k", value=AnyValue(int_value=7))
                sp.attributes.append(kv)
    return request


def _spans(request: Any) -> dict[bytes, Any]:
    return {sp.span_id: sp for rs in request.resource_spans for ss in rs.scope_spans for sp in ss.spans}


def _forwarding_service(endpoint: str, protocol: str, **outputs: Any) -> ScoringService:
    """A started service forwarding to ``endpoint`` over ``protocol``, every run scored by ``RULES``."""
    config = load_config(environ={}, service_overrides={
        "grpc_port": 0, "http_port": 0, "quiet_period_ms": 20, "forward": True,
        "export_endpoint": endpoint, "export_protocol": protocol, "metric_export_interval_ms": 60_000,
    })
    service = ScoringService(config, expectations=RULES, **outputs)
    service.start()
    return service


def _export(service: ScoringService, request: Any) -> None:
    channel = grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}")
    trace_service_pb2_grpc.TraceServiceStub(channel).Export(request, timeout=10)
    channel.close()


def _forwarded(backend: Any) -> dict[bytes, Any]:
    """Every span a capture backend received, by span id."""
    with backend.lock:
        reqs = list(backend.requests["/v1/traces"])
    out: dict[bytes, Any] = {}
    for r in reqs:
        out.update(_spans(r))
    return out


def _forward_agent_request(target: str, protocol: str, backend: Any, timeout: float) -> tuple[Any, dict[bytes, Any]]:
    """Send one agent request through a forwarding service to ``target`` and wait until ``backend``
    holds every span of it: (the request sent, what the backend received by span id)."""
    service = _forwarding_service(target, protocol)
    sent = _agent_request()
    try:
        _export(service, sent)
        assert backend.wait_for(lambda: set(_spans(sent)) <= set(_forwarded(backend)), timeout=timeout)
    finally:
        service.shutdown(timeout_s=10)
    return sent, _forwarded(backend)


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_spans_leave_as_received_and_the_root_gains_only_its_scores(protocol: str) -> None:
    capture = capture_server() if protocol == "http/protobuf" else grpc_capture_server()
    with capture as (endpoint, backend):
        sent, got = _forward_agent_request(endpoint, protocol, backend, timeout=20)
        with backend.lock:
            (first, *_) = backend.requests["/v1/traces"]
        assert first.resource_spans[0].schema_url == "https://opentelemetry.io/schemas/1.30.0"
        assert first.resource_spans[0].scope_spans[0].schema_url == "https://opentelemetry.io/schemas/1.29.0"
        roots = [sid for sid, sp in _spans(sent).items() if sp.name.startswith("invoke_agent")]
        assert len(roots) == 1
        for sid, sp in _spans(sent).items():
            if sid in roots:
                continue
            assert got[sid] == sp  # the message itself: every field as the sender wrote it
            assert got[sid].SerializeToString() == sp.SerializeToString()
        (root,) = roots
        out = got[root]
        added = {kv.key: kv.value for kv in out.attributes if kv.key not in {a.key for a in _spans(sent)[root].attributes}}
        assert added["toolscore.code.score"].double_value == 1.0
        assert all(k.startswith(("toolscore.", "annotations.")) for k in added), sorted(added)  # scores, OI annotation
        stripped = trace_service_pb2.ExportTraceServiceRequest().resource_spans.add().scope_spans.add().spans.add()
        stripped.CopyFrom(out)
        kept = [kv for kv in stripped.attributes if kv.key not in added]
        del stripped.attributes[:]
        stripped.attributes.extend(kept)
        assert stripped == _spans(sent)[root]  # nothing but the scores changed


def test_with_attributes_replaces_same_keys_and_keeps_the_rest() -> None:
    request = _agent_request()
    span = next(iter(_spans(request).values()))
    out = with_attributes(span, {"blob": "now text", "toolscore.code.score": 1.0, "tools": ("a", "b"), "n": 3, "ok": True})
    values = {kv.key: kv.value for kv in out.attributes}
    assert values["blob"].string_value == "now text" and [kv.key for kv in out.attributes].count("blob") == 1
    assert values["toolscore.code.score"].double_value == 1.0
    assert [v.string_value for v in values["tools"].array_value.values] == ["a", "b"]
    assert values["n"].int_value == 3 and values["ok"].bool_value is True
    assert values["nested"].kvlist_value.values[0].value.int_value == 7
    assert {kv.key: kv.value for kv in span.attributes}["blob"].bytes_value == b"\x00\x01"  # the original: untouched


def _items(request: Any) -> list[tuple[bytes, bytes, bytes]]:
    return [(envelope(rs.resource, rs.schema_url), envelope(ss.scope, ss.schema_url), sp.SerializeToString())
            for rs in request.resource_spans for ss in rs.scope_spans for sp in ss.spans]


def test_a_batch_is_the_received_request_again_and_groups_by_resource_and_scope() -> None:
    """Requests are assembled from the received bytes in protobuf's wire format: one request's spans
    make that request again, byte for byte; spans of another resource get their own group."""
    a, b = _agent_request(), _agent_request()
    assert build_request(_items(a)) == a.SerializeToString()
    b.resource_spans[0].resource.attributes.add(key="service.name", value=AnyValue(string_value="other"))
    b.resource_spans[0].scope_spans.add().CopyFrom(b.resource_spans[0].scope_spans[0])
    b.resource_spans[0].scope_spans[1].scope.name = "another scope"
    out = trace_service_pb2.ExportTraceServiceRequest.FromString(build_request(_items(a) + _items(b)))
    assert len(out.resource_spans) == 2 and out.resource_spans[1] == b.resource_spans[0]
    assert [len(ss.spans) for ss in out.resource_spans[1].scope_spans] == [len(a.resource_spans[0].scope_spans[0].spans)] * 2


# -- the HTTP sender ----------------------------------------------------------------------------------------
def test_http_sender_retries_what_otlp_calls_retryable_and_honours_retry_after() -> None:
    request = _agent_request()
    with scripted_http([(503, {"Retry-After": "1"}), (429, {}), (200, {})]) as (url, seen):
        sender = HttpTraceSender(url, timeout_s=10)
        t0 = time.monotonic()
        assert sender.send(request.SerializeToString(), 7)
        sender.shutdown()
    assert len(seen) == 3
    assert seen[1]["at"] - seen[0]["at"] >= 0.9  # Retry-After: 1
    assert 1.5 <= seen[2]["at"] - seen[1]["at"] <= 2.6  # second attempt's back-off: 2 s ± 20 %
    assert time.monotonic() - t0 < 6
    assert seen[0]["body"] == request.SerializeToString()
    assert seen[0]["headers"]["content-type"] == "application/x-protobuf"


def test_http_sender_does_not_retry_a_permanent_refusal() -> None:
    with scripted_http([(400, {})]) as (url, seen):
        sender = HttpTraceSender(url, timeout_s=10)
        assert not sender.send(_agent_request().SerializeToString(), 7)
        sender.shutdown()
    assert len(seen) == 1


def test_http_sender_gives_up_within_its_timeout() -> None:
    with scripted_http([(503, {})]) as (url, seen):
        sender = HttpTraceSender(url, timeout_s=1.5)
        t0 = time.monotonic()
        assert not sender.send(_agent_request().SerializeToString(), 7)
        took = time.monotonic() - t0
        sender.shutdown()
    assert took < 1.6 and 1 <= len(seen) <= 2


def test_http_sender_takes_compression_headers_and_endpoint_from_the_environment() -> None:
    request = _agent_request()
    with scripted_http([(200, {})]) as (url, seen):
        env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url, "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s3cret,X-Tenant=a%20b",
               "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TIMEOUT": "5"}
        sender = trace_sender("http/protobuf", environ=env)
        assert isinstance(sender, HttpTraceSender) and sender.timeout_s == 5.0
        assert sender.send(request.SerializeToString(), 7)
        sender.shutdown()
    (hit,) = seen
    assert hit["headers"]["api-key"] == "s3cret" and hit["headers"]["x-tenant"] == "a b"
    assert hit["headers"]["content-encoding"] == "gzip"
    assert gzip.decompress(hit["body"]) == request.SerializeToString()


def test_sender_settings_follow_the_exporters_variables() -> None:
    http = trace_sender("http/protobuf", environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"})
    assert isinstance(http, HttpTraceSender) and http.endpoint == "http://collector:4318/v1/traces"
    http.shutdown()
    explicit = trace_sender("http/protobuf", "http://x:1", environ={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://y:2/t"})
    assert isinstance(explicit, HttpTraceSender) and explicit.endpoint == "http://x:1/v1/traces"
    explicit.shutdown()
    bad = trace_sender("http/protobuf", environ={"OTEL_EXPORTER_OTLP_TIMEOUT": "soon", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"})
    assert isinstance(bad, HttpTraceSender) and bad.timeout_s == 10.0 and bad.compression == "none"  # warned, ignored
    bad.shutdown()
    grpc_sender = trace_sender("grpc", environ={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317"})
    assert isinstance(grpc_sender, GrpcTraceSender) and grpc_sender.target == "collector:4317"
    grpc_sender.shutdown()


# -- the gRPC sender ----------------------------------------------------------------------------------------
def _exhausted(context: Any, delay_s: float | None) -> None:
    status = status_pb2.Status(code=code_pb2.RESOURCE_EXHAUSTED, message="busy")
    if delay_s is not None:
        status.details.add().Pack(error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(nanos=int(delay_s * 1e9))))
    context.abort_with_status(_RichStatus(status))


class _RichStatus(grpc.Status):  # type: ignore[misc]
    def __init__(self, status: Any) -> None:
        self.code = grpc.StatusCode.RESOURCE_EXHAUSTED
        self.details = status.message
        self.trailing_metadata = (("grpc-status-details-bin", status.SerializeToString()),)


@contextmanager
def scripted_grpc(answers: list[str]) -> Iterator[tuple[str, list[Any]]]:
    """A TraceService answering ``answers`` in turn: ``ok``, ``unavailable``, ``exhausted`` (no
    RetryInfo), ``exhausted+retry`` (RetryInfo 0.2 s); the last one repeats."""
    seen: list[Any] = []

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
        def Export(self, request: Any, context: Any) -> Any:
            seen.append((time.monotonic(), dict(context.invocation_metadata())))
            answer = answers[min(len(seen) - 1, len(answers) - 1)]
            if answer == "unavailable":
                context.abort(grpc.StatusCode.UNAVAILABLE, "restarting")
            elif answer == "exhausted":
                _exhausted(context, None)
            elif answer == "exhausted+retry":
                _exhausted(context, 0.2)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", seen
    finally:
        server.stop(0)


def test_grpc_sender_retries_unavailable_and_exhausted_with_retry_info_only() -> None:
    with scripted_grpc(["unavailable", "exhausted+retry", "ok"]) as (target, seen):
        sender = GrpcTraceSender(target, insecure=True, headers={"api-key": "s3cret"}, timeout_s=10)
        assert sender.send(_agent_request().SerializeToString(), 7)
        sender.shutdown()
    assert len(seen) == 3
    assert 0.15 <= seen[2][0] - seen[1][0] <= 1.0  # RetryInfo's 0.2 s, not the 2 s back-off
    assert seen[0][1]["api-key"] == "s3cret"
    with scripted_grpc(["exhausted"]) as (target, seen):
        sender = GrpcTraceSender(target, insecure=True, timeout_s=10)
        assert not sender.send(_agent_request().SerializeToString(), 7)  # RESOURCE_EXHAUSTED without RetryInfo: not retryable
        sender.shutdown()
    assert len(seen) == 1


def test_batches_are_cut_at_the_request_byte_limit() -> None:
    """A batch of 512 spans with content can pass gRPC's 4 MiB default, and the receiver refuses it for
    good: requests are cut at ``forward_request_bytes`` (a larger span goes alone)."""
    from otel_toolscore.service._forward import ForwardQueue

    sent: list[Any] = []

    class Recorder:
        def send(self, body: bytes, spans: int) -> bool:
            sent.append(trace_service_pb2.ExportTraceServiceRequest.FromString(body))
            return True

        def shutdown(self) -> None:
            pass

    request = _agent_request()
    rs = request.resource_spans[0]
    ss = rs.scope_spans[0]
    template = ss.spans[0]
    spans = []
    for i, size in enumerate([1500] * 8 + [9000] + [1500] * 3):
        sp = with_attributes(template, {"pad": "x" * size, "i": i})
        spans.append((envelope(rs.resource, rs.schema_url), envelope(ss.scope, ss.schema_url), sp.SerializeToString()))
    drops: list[tuple[str, int]] = []
    queue = ForwardQueue(Recorder(), 1024, lambda reason, n: drops.append((reason, n)), request_bytes=4000)
    for item in spans:
        assert queue.put(item, wait=False)
    assert queue.force_flush(5_000)
    queue.shutdown()
    sizes = [req.ByteSize() for req in sent]  # the whole request: spans, resource, scope, framing
    counts = [sum(len(sc.spans) for r in req.resource_spans for sc in r.scope_spans) for req in sent]
    assert sum(counts) == 12 and not drops
    assert all(size <= 4000 or count == 1 for size, count in zip(sizes, counts, strict=True)), (sizes, counts)
    assert max(sizes) > 4000  # the 9,000-byte span, alone
    order = [int(next(kv.value.int_value for kv in s.attributes if kv.key == "i"))
             for req in sent for r in req.resource_spans for sc in r.scope_spans for s in sc.spans]
    assert order == list(range(12))  # in the order taken


def test_new_attributes_are_appended_without_parsing_the_span() -> None:
    """A root gains its scores by appending encoded attributes to its received bytes: the message
    that reads back is the one the parse-and-patch path builds."""
    from otel_toolscore.service._wire import with_new_attributes

    span = next(iter(_spans(_agent_request()).values()))
    added = {"toolscore.code.score": 1.0, "toolscore.code.actual_tools": ("a", "b"), "toolscore.tool_call_count": 2}
    appended = type(span).FromString(with_new_attributes(span.SerializeToString(), added))
    assert appended == with_attributes(span, added)


def test_a_score_the_sender_already_set_is_replaced_not_doubled() -> None:
    with capture_server() as (endpoint, backend):
        service = _forwarding_service(endpoint, "http/protobuf")
        sent = _agent_request()
        (root,) = [sp for sp in _spans(sent).values() if sp.name.startswith("invoke_agent")]
        root.attributes.append(KeyValue(key="toolscore.code.score", value=AnyValue(double_value=0.5)))  # stale
        try:
            _export(service, sent)
            assert backend.wait_for(lambda: root.span_id in _forwarded(backend), timeout=20)
        finally:
            service.shutdown(timeout_s=10)
        forwarded_root = _forwarded(backend)[root.span_id]
        scores = [kv.value.double_value for kv in forwarded_root.attributes if kv.key == "toolscore.code.score"]
        assert scores == [1.0]


def test_the_queue_is_bounded_in_bytes_as_well_as_in_spans() -> None:
    """16,384 queued spans of 1 MB each would hold 16 GB: the queue also counts encoded bytes,
    pushes back at half of its byte capacity and refuses (counted) past it; a span larger than the
    whole capacity still goes, alone."""
    from otel_toolscore.service._forward import ForwardQueue

    release = threading.Event()

    class Stuck:
        def send(self, body: bytes, spans: int) -> bool:
            release.wait(10)
            return True

        def shutdown(self) -> None:
            release.set()

    drops: list[tuple[str, int]] = []
    queue = ForwardQueue(Stuck(), 1024, lambda reason, n: drops.append((reason, n)), capacity_bytes=10_000)
    env = envelope(AnyValue(), "")
    item = (env, env, b"x" * 3_000)
    assert queue.put(item, wait=False) and not queue.backlogged
    assert queue.put(item, wait=False) and queue.backlogged  # 6,000 of 10,000 bytes: requests are refused
    assert queue.put(item, wait=False)
    assert not queue.put(item, wait=False)  # 12,000 > 10,000: refused, counted
    assert drops == [("forward_queue_full", 1)] and queue.held_bytes == 9_000
    release.set()
    assert queue.force_flush(5_000) and queue.held_bytes == 0
    assert queue.put((env, env, b"y" * 50_000), wait=False)  # alone, it goes
    assert queue.force_flush(5_000)
    queue.shutdown()


def test_a_backend_that_never_answers_costs_the_sender_its_timeout_only() -> None:
    """A backend that takes the connection and the body and never answers (or trickles): the request
    and its retries end at the sender's timeout."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)  # read nothing, answer nothing
            conn.sendall(b"HTTP/1.1 200 OK\r\n")  # ...a status line, then silence

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        sender = HttpTraceSender(f"http://127.0.0.1:{listener.getsockname()[1]}/v1/traces", timeout_s=1.5)
        t0 = time.monotonic()
        assert not sender.send(_agent_request().SerializeToString(), 7)
        took = time.monotonic() - t0
        sender.shutdown()
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()
    assert took < 2.5, f"{took:.1f} s for a 1.5 s timeout"


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_a_real_collector_takes_the_assembled_requests(protocol: str, tmp_path: Any) -> None:
    """rotel (a Rust OTLP implementation) receives what the service forwards, over gRPC and over HTTP,
    and passes every span on with its fields intact."""
    from tests.tools.external import rotel

    with capture_server() as (endpoint, backend), rotel(tmp_path, endpoint, protocol="http") as (rotel_grpc, rotel_http):
        target = f"http://127.0.0.1:{rotel_grpc}" if protocol == "grpc" else f"http://127.0.0.1:{rotel_http}"
        sent, got = _forward_agent_request(target, protocol, backend, timeout=30)
        for sid, sp in _spans(sent).items():
            if not sp.name.startswith("invoke_agent"):
                assert got[sid] == sp
        (root,) = [got[sid] for sid, sp in _spans(sent).items() if sp.name.startswith("invoke_agent")]
        assert {kv.key: kv.value.double_value for kv in root.attributes}["toolscore.code.score"] == 1.0


def test_drain_keeps_its_deadline_while_the_backend_keeps_refusing() -> None:
    """SIGTERM while the forward backend answers 503 to everything: the drain keeps its deadline,
    the spans it could not deliver are counted, and the sender stops retrying."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    with scripted_http([(503, {})]) as (url, seen):
        # events and metrics stay in the process: the SDK's own exporters, retrying against this
        # backend after the test, would move the global random state under later hypothesis tests
        service = _forwarding_service(url.rsplit("/v1/traces", 1)[0], "http/protobuf",
                                      meter_provider=MeterProvider(metric_readers=[reader]),
                                      logger_provider=LoggerProvider())
        request = _agent_request()
        _export(service, request)
        took, alive = drain_after_first_request(service, seen, 2, "otel-toolscore-forward")
    assert took < 3, f"a 2 s drain took {took:.1f} s"
    assert not alive, "the sender kept retrying after the drain"
    drops = counter_by(reader, "toolscore.dropped", "toolscore.reason")
    assert drops.get("drain_timeout", 0) + drops.get("forward_failed", 0) == len(_spans(request)), drops


# -- TLS ----------------------------------------------------------------------------------------------------
@pytest.fixture
def tls_files(tmp_path: Any) -> dict[str, str]:
    """A CA and a server certificate for 127.0.0.1, made with the openssl command."""
    import subprocess

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp_path)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=toolscore test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    (tmp_path / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
    return {k: str(tmp_path / f) for k, f in (("ca", "ca.pem"), ("cert", "server.pem"), ("key", "server.key"))}


def test_http_sender_verifies_the_backend_with_the_configured_ca(tls_files: dict[str, str]) -> None:
    import ssl

    seen_tls: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            seen_tls.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_files["cert"], tls_files["key"])
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"https://127.0.0.1:{httpd.server_address[1]}/v1/traces"
    try:
        sender = trace_sender("http/protobuf", environ={
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url, "OTEL_EXPORTER_OTLP_CERTIFICATE": tls_files["ca"]})
        assert sender.send(b"", 0)
        sender.shutdown()
        untrusted = HttpTraceSender(url, timeout_s=1.0)  # the system's CAs do not know this one
        assert not untrusted.send(b"", 0)
        untrusted.shutdown()
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert seen_tls == [b""]


def test_grpc_sender_verifies_the_backend_with_the_configured_ca(tls_files: dict[str, str]) -> None:
    seen: list[Any] = []

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
        def Export(self, request: Any, context: Any) -> Any:
            seen.append(request)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    with open(tls_files["key"], "rb") as k, open(tls_files["cert"], "rb") as c:
        creds = grpc.ssl_server_credentials([(k.read(), c.read())])
    port = server.add_secure_port("127.0.0.1:0", creds)
    server.start()
    try:
        sender = trace_sender("grpc", environ={
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"https://127.0.0.1:{port}",
            "OTEL_EXPORTER_OTLP_CERTIFICATE": tls_files["ca"]})
        assert isinstance(sender, GrpcTraceSender)
        request = _agent_request()
        assert sender.send(request.SerializeToString(), 3)
        sender.shutdown()
    finally:
        server.stop(0)
    assert len(seen) == 1 and seen[0] == request


def test_score_attributes_encode_byte_for_byte_as_protobuf_does() -> None:
    """The encoded attributes appended to a root (key fields and framing computed once per key, and
    the encoding of values that recur cached) are the bytes protobuf writes for the same KeyValue."""
    import random

    from otel_toolscore.service._wire import _SPAN_ATTRIBUTES, _any_value, _field, encode_attribute

    rnd = random.Random(5)
    values: list[Any] = [True, False, 0, 1, -1, (1 << 63) - 1, -(1 << 63), 127, 128, 0.0, -0.0, 1.5, float("inf"),
                         float("nan"), "", "pass", "é✓" * 100, b"", b"\x00\xff", [], ["a", "b"], ("a", 1, 2.5, True),
                         [[1, 2], ["x"]], None, {"a": 1}, 0.0, -0.0, True, 1]
    values += [rnd.choice([rnd.randint(-(1 << 63), (1 << 63) - 1), rnd.random() * 1e9, "k" * rnd.randint(0, 300),
                           tuple("t" * rnd.randint(0, 5) for _ in range(rnd.randint(0, 40)))]) for _ in range(300)]
    for value in values:
        for key in ("toolscore.code.score", "k" * 200, "", "é"):
            expected = _field(_SPAN_ATTRIBUTES, KeyValue(key=key, value=_any_value(value)).SerializeToString())
            assert encode_attribute(key, value) == expected, (key, value)
    for out_of_range in (1 << 63, -(1 << 63) - 1):  # protobuf refuses these too (the root leaves unscored)
        with pytest.raises(ValueError):
            encode_attribute("k", out_of_range)


# -- what the forwarding path writes fast, checked against protobuf's own encoding --------------------------
@pytest.mark.parametrize("value", [
    1.0, -0.0, 0.0, 0.25, float("inf"), -1e300,  # floats: a prefix per key, then their 8 bytes
    ["tool_0", "tool_1"], ("tool_0", "tool_1"), [], [1, 2], [True, False], [1, True], [True, 1],  # lists: cached
    [f"t{i}" for i in range(40)],  # longer than the cached lists
    "pass", True, 7, -3,
])
@pytest.mark.parametrize("key", ["toolscore.code.score", "", "k" * 300])
def test_score_attributes_are_encoded_as_protobuf_encodes_them(key: str, value: Any) -> None:
    """Encoded twice (the second time from the caches), each attribute is the bytes protobuf writes
    for it: ``[1, True]`` and ``[True, 1]`` are equal lists, and encoded apart."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    from otel_toolscore.service._wire import encode_attribute

    expected = with_attributes(Span(), {key: value}).SerializeToString()
    assert encode_attribute(key, value) == expected
    assert encode_attribute(key, value) == expected


def test_equal_envelopes_that_are_different_objects_make_one_group() -> None:
    """Spans of one resource and scope whose envelopes were built apart (two requests), interleaved
    with another scope's, leave under one resource and one scope each, in the order taken."""
    a, b = _agent_request(), _agent_request()
    b.resource_spans[0].scope_spans[0].scope.name = "another scope"
    first, second, third = _items(a), _items(b), _items(a)  # `third`: equal envelopes, other objects
    assert first[0][0] is not third[0][0] and first[0][0] == third[0][0]
    out = trace_service_pb2.ExportTraceServiceRequest.FromString(build_request(first + second + third))
    (rs,) = out.resource_spans
    assert [ss.scope.name for ss in rs.scope_spans] == ["agent", "another scope"]
    spans = [sp.SerializeToString() for sp in rs.scope_spans[0].spans]
    assert spans == [item[2] for item in first + third]


def test_spans_put_at_once_leave_in_order_in_batches_of_at_most_the_batch_size() -> None:
    """Spans handed over together (a scored trace, a request's unscored spans) are queued at once
    when there is room, and leave in the order taken, at most FORWARD_BATCH_SPANS a request; with no
    room for them all, each is taken or refused (counted) as a single put would."""
    from otel_toolscore.service._forward import FORWARD_BATCH_SPANS, ForwardQueue

    sent: list[int] = []
    lock = threading.Lock()

    class Recorder:
        def send(self, body: bytes, spans: int) -> bool:
            req = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            with lock:
                sent.extend(int(s.name) for r in req.resource_spans for sc in r.scope_spans for s in sc.spans)
            assert spans <= FORWARD_BATCH_SPANS
            return True

        def shutdown(self) -> None:
            pass

    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    env = envelope(AnyValue(), "")
    items = [(env, env, Span(name=str(i)).SerializeToString()) for i in range(FORWARD_BATCH_SPANS * 3 + 5)]
    drops: list[tuple[str, int]] = []
    queue = ForwardQueue(Recorder(), len(items) * 4, lambda reason, n: drops.append((reason, n)))
    assert queue.batch_size == FORWARD_BATCH_SPANS
    assert queue.put_many(items, wait=False) == len(items)
    assert queue.force_flush(10_000)
    queue.shutdown()
    assert sent == list(range(len(items))) and not drops

    release = threading.Event()

    class Stuck(Recorder):
        def send(self, body: bytes, spans: int) -> bool:
            release.wait(10)
            return True

    small = ForwardQueue(Stuck(), 64, lambda reason, n: drops.append((reason, n)))
    assert small.put_many(items[:100], wait=False) == 64  # no room for them all: one by one
    assert drops == [("forward_queue_full", 1)] * 36
    release.set()
    assert small.force_flush(5_000)
    small.shutdown()
