"""Source formats (protobuf, OTLP/JSON hex and base64, JSONL, gzip, logs mixed in) and robustness."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore.extract import extract_runs, extract_runs_with_report, read_log

CORPUS_FILE = Path(__file__).parents[1] / "corpus" / "vercel_ai" / "ai6_multi_step.traces.jsonl"


def _spans() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent",
                                                                    "gen_ai.agent.name": "a"}):
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
            pass
        with tracer.start_as_current_span("execute_tool t", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "gen_ai.tool.call.id": "c1",
                "gen_ai.tool.call.arguments": '{"x": 1}'}):
            pass
    return list(exporter.get_finished_spans())


def _names(runs: list[Any]) -> list[tuple[str | None, list[str]]]:
    return [(r.agent_name, [c.name for c in r.tool_calls]) for r in runs]


EXPECTED = [("a", ["t"])]


def test_live_spans_protobuf_and_both_json_mappings(tmp_path: Path) -> None:
    spans = _spans()
    request = encode_spans(spans)
    assert _names(extract_runs(spans)) == EXPECTED
    assert _names(extract_runs(request)) == EXPECTED
    assert _names(extract_runs(request.SerializeToString())) == EXPECTED
    b64 = MessageToDict(request)  # protobuf's JSON mapping: base64 ids
    (tmp_path / "b64.json").write_text(json.dumps(b64))
    runs_b64 = extract_runs(tmp_path / "b64.json")
    assert _names(runs_b64) == EXPECTED
    assert runs_b64[0].trace_id == format(spans[0].context.trace_id, "032x")
    # OTLP/JSON (hex ids), one request per line, gzip
    def hexify(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (__import__("base64").b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hexify(v))
                    for k, v in node.items()}
        return [hexify(i) for i in node] if isinstance(node, list) else node
    line = json.dumps(hexify(b64))
    (tmp_path / "x.jsonl.gz").write_bytes(gzip.compress((line + "\n" + line + "\n").encode()))
    runs, report = extract_runs_with_report([tmp_path / "x.jsonl.gz"])
    assert report.ok and report.sources[0].spans_read == 6
    assert runs[0].trace_id == runs_b64[0].trace_id


def test_logs_file_mixed_with_trace_file(tmp_path: Path) -> None:
    spans = _spans()
    chat = next(s for s in spans if s.name == "chat m")
    record = LogRecord(
        timestamp=1, trace_id=chat.context.trace_id, span_id=chat.context.span_id,
        event_name="gen_ai.client.inference.operation.details",
        attributes={"gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "t"},
                                             {"type": "tool_call", "id": "c2", "name": "u"}]}])},
    )
    readable = ReadableLogRecord(log_record=record, resource=Resource.create({}))
    facts = read_log(readable)
    assert facts is not None and facts.span_id == format(chat.context.span_id, "016x")
    (tmp_path / "a.traces.pb").write_bytes(encode_spans(spans).SerializeToString())
    (tmp_path / "a.logs.pb").write_bytes(encode_logs([readable]).SerializeToString())
    runs, report = extract_runs_with_report([tmp_path / "a.logs.pb", tmp_path / "a.traces.pb"])
    assert report.ok, report.problems()
    assert _names(runs) == [("a", ["t", "u"])]  # c1 requested and executed: one call; c2 requested only
    assert report.sources[0].logs_read == 1


def test_corpus_file_as_every_format(tmp_path: Path) -> None:
    data = CORPUS_FILE.read_bytes()
    want = _names(extract_runs(CORPUS_FILE))
    (tmp_path / "c.gz").write_bytes(gzip.compress(data))
    assert _names(extract_runs(tmp_path / "c.gz")) == want
    assert _names(extract_runs(data)) == want


def test_malformed_inputs_are_reported_not_raised(tmp_path: Path) -> None:
    good = CORPUS_FILE.read_text().splitlines()[0]
    (tmp_path / "mixed.jsonl").write_text(good + "\n{not json\n[1, 2]\n")
    runs, report = extract_runs_with_report(tmp_path / "mixed.jsonl")
    assert len(runs) == 1 and report.sources[0].malformed == 3  # bad line + two non-request items
    (tmp_path / "trunc.gz").write_bytes(gzip.compress(good.encode())[:-30])
    _, report = extract_runs_with_report(tmp_path / "trunc.gz")
    assert report.malformed >= 1 and "gzip" in " ".join(report.problems())
    _, report = extract_runs_with_report(tmp_path / "missing.json")
    assert "cannot read" in report.problems()[0]
    _, report = extract_runs_with_report(b"\x00\x01garbage\xff")
    assert not report.ok


def test_bad_attribute_json_is_counted(tmp_path: Path) -> None:
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "chat x",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                       {"key": "gen_ai.output.messages", "value": {"stringValue": "[{broken"}}]}]}]}]}
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    runs, report = extract_runs_with_report(tmp_path / "bad.json")
    assert len(runs) == 1 and report.malformed == 1 and "gen_ai.output.messages" in report.problems()[0]


_VALID = json.loads(CORPUS_FILE.read_text().splitlines()[0])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.integers(min_value=0, max_value=len(json.dumps(_VALID))), noise=st.binary(max_size=64),
       mode=st.sampled_from(["json", "proto", "gzip", "noise"]))
def test_fuzz_truncated_and_random_input_never_raises(cut: int, noise: bytes, mode: str) -> None:
    text = json.dumps(_VALID)
    if mode == "json":
        data = text[:cut].encode()
    elif mode == "proto":
        blob = extract_proto()
        data = blob[: cut % (len(blob) + 1)] + noise[:4]
    elif mode == "gzip":
        data = gzip.compress(text.encode())[: cut % 400]
    else:
        data = noise
    runs, report = extract_runs_with_report(data)
    assert isinstance(runs, list)
    assert report.sources and (runs or report.malformed >= 0)


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=12), c, max_size=4),
                    max_leaves=20))
def test_fuzz_wrong_types_in_otlp_json_never_raise(value: Any) -> None:
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [value, {"name": "execute_tool x", "attributes": value}]}]}]}
    runs, report = extract_runs_with_report(json.dumps(doc).encode())
    assert isinstance(runs, list) and report.sources


_PROTO: list[bytes] = []


def extract_proto() -> bytes:
    if not _PROTO:
        from google.protobuf.json_format import ParseDict
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        _PROTO.append(ParseDict({"resourceSpans": _VALID["resourceSpans"]}, ExportTraceServiceRequest()).SerializeToString())
    return _PROTO[0]


def _corpus_trace_files() -> list[Path]:
    root = Path(__file__).parents[1] / "corpus"
    return sorted(p for p in root.glob("**/*.traces.jsonl") if "node_modules" not in p.parts)


def _dumps(runs: list[Any]) -> list[Any]:
    return [r.model_dump() for r in runs]


@pytest.mark.parametrize("capture", [True, False], ids=["content", "names-only"])
def test_views_read_every_corpus_file_as_span_records_do(tmp_path: Path, capture: bool) -> None:
    """Files are read through views of the decoded spans (OTLP/JSON dicts, lean protobuf messages)
    by the table-driven lanes first; span records given one by one take the generic readers alone.
    Both give the same runs and the same report counts, content kept or not."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from otel_toolscore.extract import ExtractOptions
    from otel_toolscore.extract._otlp_json import span_records_from_json
    from otel_toolscore.service._decode import _hex_ids_to_base64

    options = ExtractOptions(capture_content=capture)
    files = _corpus_trace_files()
    assert len(files) > 30
    for path in files:
        docs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        records = [rec for doc in docs for rec in span_records_from_json(doc)]
        want, want_report = extract_runs_with_report(records, options)
        runs, report = extract_runs_with_report(path, options)
        assert _dumps(runs) == _dumps(want), path
        pb = b"".join(
            json_format.ParseDict(_hex_ids_to_base64(doc), ExportTraceServiceRequest(), ignore_unknown_fields=True)
            .SerializeToString() for doc in docs
        )
        assert _dumps(extract_runs(pb, options)) == _dumps(want), path
        got, expected = report.sources[0], want_report.sources[0]
        assert (got.spans_read, got.spans_with_facts, got.unknown_convention_spans, got.malformed) == (
            expected.spans_read, expected.spans_with_facts, expected.unknown_convention_spans, expected.malformed,
        ), path
