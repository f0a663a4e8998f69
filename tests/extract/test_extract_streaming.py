"""Streaming offline reading: OTLP/JSON read without protobuf, files of any size read
incrementally, runs yielded as traces complete, memory bounded by the traces open at once."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_toolscore.extract import ExtractionReport, extract_runs, extract_runs_with_report, iter_runs
from otel_toolscore.extract import _sources as sources
from otel_toolscore.extract._otlp_json import log_views_from_json, span_records_from_json
from otel_toolscore.extract._records import log_views_from_proto, span_records_from_proto
from otel_toolscore.service._decode import _hex_ids_to_base64

CORPUS = Path(__file__).parents[1] / "corpus"
FILES = sorted(p for p in CORPUS.glob("**/*.jsonl") if "node_modules" not in p.parts)


def _docs(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_json_records_equal_protobuf_records(path: Path) -> None:
    """The direct OTLP/JSON reader sees exactly what protobuf's JSON mapping + the protobuf reader
    saw (the path it replaces), for every recorded file."""
    for doc in _docs(path):
        direct_spans = list(span_records_from_json(doc))
        direct_logs = list(log_views_from_json(doc))
        ids_b64 = _hex_ids_to_base64(json.loads(json.dumps(doc)))
        spans_doc = {k: v for k, v in ids_b64.items() if k in ("resourceSpans", "resource_spans")}
        logs_doc = {k: v for k, v in ids_b64.items() if k in ("resourceLogs", "resource_logs")}
        via_proto_spans = list(span_records_from_proto(
            json_format.ParseDict(spans_doc, ExportTraceServiceRequest(), ignore_unknown_fields=True)))
        via_proto_logs = list(log_views_from_proto(
            json_format.ParseDict(logs_doc, ExportLogsServiceRequest(), ignore_unknown_fields=True)))
        assert direct_spans == via_proto_spans
        assert direct_logs == via_proto_logs


def _request(trace: int, tools: int, payload: str) -> dict[str, Any]:
    tid = f"{trace + 1:032x}"
    root = f"{trace + 1:08x}00000000"
    spans = [{
        "traceId": tid, "spanId": root, "name": "invoke_agent weather", "kind": 1,
        "startTimeUnixNano": "1000", "endTimeUnixNano": "9000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": "weather"}},
        ],
    }]
    for i in range(tools):
        spans.append({
            "traceId": tid, "spanId": f"{trace + 1:08x}{i + 1:08x}", "parentSpanId": root,
            "name": f"execute_tool t{i}", "kind": "SPAN_KIND_INTERNAL",
            "startTimeUnixNano": str(2000 + i), "endTimeUnixNano": str(3000 + i),
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                {"key": "gen_ai.tool.name", "value": {"stringValue": f"t{i}"}},
                {"key": "gen_ai.tool.call.result", "value": {"stringValue": payload}},
            ],
        })
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]},
                               "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}]}]}


def _write_jsonl(path: Path, traces: int, tools: int = 3, payload: str = "ok") -> None:
    with path.open("wb") as fh:
        for t in range(traces):
            fh.write(orjson.dumps(_request(t, tools, payload)) + b"\n")


def test_runs_are_yielded_before_the_input_ends(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    _write_jsonl(path, 400, tools=3)
    report = ExtractionReport()
    seen_when: list[int] = []
    for run in iter_runs(path, report=report, idle_records=40):
        seen_when.append(report.sources[0].spans_read)
        assert [c.name for c in run.tool_calls] == ["t0", "t1", "t2"]
    assert len(seen_when) == 400
    assert seen_when[0] < 200  # the first run came out while most of the file was still unread
    assert report.runs == 400 and report.traces == 400 and report.ok


def test_counts_reach_the_report_at_every_progress_call_and_at_the_end(tmp_path: Path) -> None:
    """The reader counts spans in plain integers and writes them into the (pydantic) report before
    each progress call and each hand-out of runs: a progress bar sees every span read by then, and
    the report ends with all of them, per source, whichever order the sources are read in."""
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _write_jsonl(first, 700, tools=1)  # 2 spans a trace: 1,400 spans, a progress call at 1,024
    with second.open("wb") as fh:  # trace ids of its own
        for t in range(1000, 1030):
            fh.write(orjson.dumps(_request(t, 2, "ok")) + b"\n")
    seen: list[tuple[str, int, bool]] = []
    runs, report = extract_runs_with_report([first, second], progress=lambda r, done: seen.append((r.source, r.spans_read, done)))
    assert len(runs) == 730 and report.ok
    assert [(s.spans_read, s.spans_with_facts, s.unknown_convention_spans) for s in report.sources] == [
        (1400, 1400, 0), (90, 90, 0)
    ]
    span_calls = [n for src, n, done in seen if src == str(first) and not done and n % 1024 == 0 and n]
    assert span_calls == [1024]  # the call every 1,024 spans sees exactly that many
    for src in (str(first), str(second)):
        counts = [n for s, n, _ in seen if s == src]
        assert counts == sorted(counts)  # never behind an earlier call
    assert [(src, n) for src, n, done in seen if done] == [(str(first), 1400), (str(second), 90)]


def test_extract_runs_keeps_input_order_and_late_records_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "order.jsonl"
    _write_jsonl(path, 50, tools=1)
    runs = extract_runs(path)
    assert [r.trace_id for r in runs] == [f"{t + 1:032x}" for t in range(50)]
    # a span of trace 0 far after the trace completed: counted, not silently merged or dropped
    with path.open("ab") as fh:
        late = _request(0, 1, "x")
        late["resourceSpans"][0]["scopeSpans"][0]["spans"] = late["resourceSpans"][0]["scopeSpans"][0]["spans"][1:]
        fh.write(orjson.dumps(late) + b"\n")
    report = ExtractionReport()
    assert len(list(iter_runs(path, report=report, idle_records=5))) == 50
    assert report.sources[0].late_records == 1


def test_truncated_gzip_stream_yields_what_came_before(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl.gz"
    raw = b"".join(orjson.dumps(_request(t, 2, "ok")) + b"\n" for t in range(30))
    data = gzip.compress(raw)
    path.write_bytes(data[: len(data) * 2 // 3])
    runs, report = extract_runs_with_report(path)
    assert 5 < len(runs) < 30
    assert any("truncated" in p for p in report.problems())


def test_large_protobuf_is_read_one_resource_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "WHOLE_READ_BYTES", 1024)  # take the streaming path on a small file
    path = tmp_path / "many.pb"
    with path.open("wb") as fh:  # concatenated requests: one message with every resource, for protobuf
        for t in range(60):
            doc = _hex_ids_to_base64(_request(t, 2, "ok"))
            fh.write(json_format.ParseDict(doc, ExportTraceServiceRequest()).SerializeToString())
    runs, report = extract_runs_with_report(path)
    assert report.ok and len(runs) == 60
    assert all([c.name for c in r.tool_calls] == ["t0", "t1"] for r in runs)
    whole = extract_runs(path.read_bytes())  # same bytes, parsed in one piece
    assert [r.model_dump() for r in whole] == [r.model_dump() for r in runs]
    # a truncated tail is reported; what came before is read
    path.write_bytes(path.read_bytes()[:-7])
    runs, report = extract_runs_with_report(path)
    assert len(runs) == 59 and any("truncated" in p for p in report.problems())


_CAPPED = textwrap.dedent(
    """
    import resource, sys
    from otel_toolscore.extract import ExtractionReport, iter_runs

    def vm_kb():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1])
        raise SystemExit("no VmSize")

    cap = vm_kb() * 1024 + int(sys.argv[2]) * 1024 * 1024  # what is mapped now, plus a fixed allowance
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    report = ExtractionReport()
    runs = calls = 0
    for run in iter_runs(sys.argv[1], report=report):
        runs += 1
        calls += len(run.tool_calls)
        assert run.agent_name == "weather", run.agent_name
    hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(runs, calls, report.sources[0].spans_read, report.malformed, hwm // 1024)
    """
)


def test_hundreds_of_megabytes_under_a_capped_address_space(tmp_path: Path) -> None:
    """A 300 MB JSON Lines file is extracted in a process allowed 250 MB more address space than it
    had after importing: the whole file would not even fit once."""
    path = tmp_path / "big.jsonl"
    payload = "r" * 16_000
    traces = 5_000  # 5,000 traces x 4 spans, ~64 KB each line: ~320 MB
    with path.open("wb") as fh:
        template = orjson.dumps(_request(0, 4, payload))
        tid0, root0 = f"{1:032x}".encode(), f"{1:08x}".encode()
        for t in range(traces):
            line = template.replace(tid0, f"{t + 1:032x}".encode()).replace(b'"' + root0, b'"' + f"{t + 1:08x}".encode())
            fh.write(line + b"\n")
    size_mb = path.stat().st_size / 2**20
    assert size_mb > 300
    script = tmp_path / "capped.py"
    script.write_text(_CAPPED)
    out = subprocess.run([sys.executable, str(script), str(path), "250"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    runs, calls, spans, malformed, peak_mb = map(int, out.stdout.split())
    assert (runs, calls, spans, malformed) == (traces, traces * 4, traces * 5, 0)
    assert peak_mb < 400  # generous: the measured figure is in bench/offline.py
