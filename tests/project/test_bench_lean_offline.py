"""The bench's lean offline reader (``bench/lean_offline.py``) reads real runs, not a fake floor.

On the recorded stacks whose spans the lean design's two key tables (GenAI, OpenInference) read, it
finds the runs ours finds, at the same roots, with the same calls in the same order — except where
ours applies a rule the lean design leaves out (a framework's, or calls read from a model's history),
each named below with its reason. Protobuf
and JSON Lines give it the same runs, and its limits count what they refuse. No timing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.lean_offline import LeanOfflineReader, read_runs
from bench.offline import write_protobuf
from otel_toolscore.extract import extract_runs_with_report

CORPUS = Path(__file__).resolve().parent.parent / "corpus"

#: Stacks read through the GenAI or OpenInference key table, and the runs (root span id) whose calls
#: ours reads by a rule the lean design leaves out: (ours, lean).
SAME_RUNS: dict[str, dict[str, tuple[list[str], list[str]]]] = {
    # ADK's "(merged tools)" span wraps parallel calls it already reported: ours drops it
    **{
        f"google_adk/{stack}": {root: (["get_weather", "get_weather"], ["get_weather", "get_weather", "(merged tools)"])}
        for stack, root in (
            ("openinference", "db2e2e96af4975ca"),
            ("v1_experimental", "4a4db5146bf7bfea"),
            ("v1_legacy", "f07cdfa24a76ed95"),
            ("v2_content", "65cb8666fef06b5e"),
            ("v2_default", "72dac8d9693be0a5"),
        )
    },
    "mastra": {
        # Mastra's own operation names: a client-side tool runs as a `client_tool_call` span, and a
        # workflow tool's `workflow_step` spans are calls of the run
        "e2d5dc8600d4caf9": (["bookFlight", "getWeather", "getWeather"], ["getWeather", "getWeather"]),
        "70a98a386a86d620": (["workflow-forecastWorkflow", "getWeather", "formatForecast"], ["workflow-forecastWorkflow"]),
    },
    "mastra/otel_bridge": {},
    # the model spans record no output: a call of a tool that does not exist (no tool span) shows
    # only in the next request's history, which ours reads and the lean design does not
    "openai_agents/openllmetry": {"e1126d8adbf091e0": (["get_forecast", "get_weather"], ["get_weather"])},
    "openai_agents/openllmetry_responses": {},
    "openai_agents/openllmetry_responses_nocontent": {},
    "pydantic_ai": {},
    "strands/default": {},
    "strands/default_redacted": {},
    "strands/latest_experimental": {},
    "strands/latest_redacted": {},
    "strands/openinference": {},
}


def _files(stack: str, tmp_path: Path) -> tuple[Path, Path]:
    lines = [ln for p in sorted((CORPUS / stack).glob("*.traces.jsonl")) for ln in p.read_text().splitlines() if ln.strip()]
    jsonl = tmp_path / "stack.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    pb = tmp_path / "stack.pb"
    write_protobuf(pb, lines)
    return jsonl, pb


@pytest.mark.parametrize("stack", sorted(SAME_RUNS))
def test_the_lean_reader_finds_our_runs_and_calls(stack: str, tmp_path: Path) -> None:
    jsonl, pb = _files(stack, tmp_path)
    ours_runs, _report = extract_runs_with_report(jsonl)
    ours = {(r.trace_id, r.root_span_id): [c.name for c in r.tool_calls] for r in ours_runs}
    for path, protobuf in ((jsonl, False), (pb, True)):
        lean = {(r.trace_id, r.root_span_id): r.names for r in read_runs(path, protobuf)}
        assert set(lean) == set(ours)
        differ = {root: (ours[(tid, root)], names) for (tid, root), names in lean.items() if names != ours[(tid, root)]}
        assert differ == SAME_RUNS[stack]
    assert any(ours.values())  # calls were read, not only roots


def test_protobuf_and_json_lines_give_the_same_lean_runs(tmp_path: Path) -> None:
    jsonl, pb = _files("strands/openinference", tmp_path)

    def runs(path: Path, protobuf: bool) -> list[tuple[str, str, str | None, str | None, list[tuple[str, str]]]]:
        return sorted((r.trace_id, r.root_span_id, r.agent_name, r.conversation_id, r.calls) for r in read_runs(path, protobuf))

    assert runs(jsonl, False) == runs(pb, True)
    assert runs(jsonl, False)


def test_the_lean_reader_counts_what_its_limits_refuse(tmp_path: Path) -> None:
    jsonl, _pb = _files("pydantic_ai", tmp_path)
    full = read_runs(jsonl, False)
    reader = LeanOfflineReader(max_pending_traces=1, max_spans_per_trace=1)
    limited = list(reader.read_json_lines(jsonl))
    assert reader.spans > 0
    assert reader.drops["spans_per_trace_limit"] > 0
    assert sum(len(r.calls) for r in limited) < sum(len(r.calls) for r in full)


def test_a_line_that_is_not_json_is_counted_and_the_rest_read(tmp_path: Path) -> None:
    jsonl, _pb = _files("strands/default", tmp_path)
    good = read_runs(jsonl, False)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n" + jsonl.read_text())
    reader = LeanOfflineReader()
    runs = list(reader.read_json_lines(bad))
    assert reader.drops["malformed_line"] == 1
    assert [(r.trace_id, r.names) for r in runs] == [(r.trace_id, r.names) for r in good]


def test_a_trace_over_the_pending_limit_is_evicted_and_counted(tmp_path: Path) -> None:
    def tool(trace: str) -> dict[str, object]:
        return {"traceId": trace * 16, "spanId": "0a" * 8, "parentSpanId": "0b" * 8, "name": "execute_tool t",
                "startTimeUnixNano": "1", "endTimeUnixNano": "2",
                "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                               {"key": "gen_ai.tool.name", "value": {"stringValue": "t"}}]}

    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [tool("01"), tool("02")]}]}]}
    path = tmp_path / "two.jsonl"
    path.write_text(json.dumps(doc) + "\n")
    reader = LeanOfflineReader(max_pending_traces=1)
    assert list(reader.read_json_lines(path)) == []
    assert reader.drops == {"pending_traces_limit": 1, "trace_without_root": 1}
