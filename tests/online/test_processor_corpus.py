"""Real instrumented frameworks' traces (the recorded corpus) replayed live through the span processor.

The live path (per-span facts buffered as spans end, runs assembled at each root's end) must find the
same runs and the same tool calls as offline extraction of the same trace, for every corpus file: the
calls' names, kinds, ids and status, and the span each call was paired with (names-only too: ids are
not content, so a parallel call is paired with the span that ran it either way).
Offline is fed one trace at a time: a hand-written tool loop with no enclosing span leaves one trace
per model call, which offline extraction of a whole file stitches into one run; a live process sees
each trace end on its own and scores it alone (README, "Limits").
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from otel_toolscore import Expectation, ToolScoreSpanProcessor
from otel_toolscore.extract import extract_runs, log_views_from_proto, read_log
from otel_toolscore.online.processor import ScoredRun
from otel_toolscore.service._decode import decode_spans, parse_logs_request, parse_trace_request

CORPUS = Path(__file__).parents[1] / "corpus"
FILES = sorted(p for p in CORPUS.rglob("*.traces.jsonl") if "node_modules" not in p.parts)


def _lines(path: Path) -> list[bytes]:
    return [line.encode() for line in path.read_text().splitlines() if line.strip()]


def _load(traces: Path, logs: Path | None) -> tuple[dict[int, list[Any]], list[Any]]:
    spans = [d for line in _lines(traces) for d in decode_spans(parse_trace_request(line, "application/json"))]
    by_trace: dict[int, list[Any]] = defaultdict(list)
    for d in spans:
        by_trace[d.trace_id].append(d)
    log_views = []
    if logs is not None:
        for line in _lines(logs):
            log_views.extend(log_views_from_proto(parse_logs_request(line, "application/json")))
    return by_trace, log_views


def _replay(by_trace: dict[int, list[Any]], log_views: list[Any], capture_content: bool) -> dict[str, ScoredRun]:
    scored: list[ScoredRun] = []
    processor = ToolScoreSpanProcessor(
        None,
        expectations=[Expectation(name="any", expected_tool="__never_called__")],
        on_scored=scored.append,
        capture_content=capture_content,
        root_grace_ms=0,
        metrics=False,
        events=False,
    )
    for trace_id, group in by_trace.items():
        for d in sorted(group, key=lambda d: d.span.start_time or 0):
            processor.on_start(d.span)  # type: ignore[arg-type]
        for view in log_views:
            if view.trace_id == format(trace_id, "032x"):
                facts = read_log(view, processor.extract_options)
                if facts is not None:
                    processor.add_log_facts(facts)
        for d in sorted(group, key=lambda d: (d.span.end_time or 0, -(d.span.start_time or 0))):
            processor.on_end(d.span)
    assert processor.force_flush(10_000)
    assert processor.pending_traces == 0
    processor.shutdown()
    return {s.run.run_id: s for s in scored}


def _calls(run: Any) -> list[tuple[str, str]]:
    return [(c.name, c.kind, c.call_id, c.status, c.span_id) for c in run.tool_calls]


@pytest.mark.parametrize("traces", FILES, ids=[str(p.relative_to(CORPUS)) for p in FILES])
@pytest.mark.parametrize("capture_content", [True, False], ids=["content", "names-only"])
def test_live_path_matches_offline_extraction(traces: Path, capture_content: bool) -> None:
    logs = traces.with_name(traces.name.replace(".traces.jsonl", ".logs.jsonl"))
    by_trace, log_views = _load(traces, logs if logs.exists() else None)
    offline = {
        r.run_id: r
        for trace_id, group in by_trace.items()
        for r in extract_runs([d.span for d in group] + [v for v in log_views if v.trace_id == format(trace_id, "032x")])
    }
    live = _replay(by_trace, log_views, capture_content)
    assert set(live) == set(offline), "live and offline found different runs"
    for run_id, run in offline.items():
        got = live[run_id].run
        assert _calls(got) == _calls(run), run_id
        assert got.agent_name == run.agent_name
        assert got.parent_run_id == run.parent_run_id
