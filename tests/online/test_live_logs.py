"""Log records as the live SDK hands them.

* The real ``opentelemetry-instrumentation-openai-v2`` (with ``opentelemetry-util-genai``) in
  ``event_only`` and ``span_and_event`` modes, in-process in a child (the instrumentation reads its
  environment once), against the scripted OpenAI-compatible server on 127.0.0.1: a hand-written tool
  loop wrapped in one span, ``expect()`` around it. The tool calls exist only in log records whose
  attributes the SDK turned into tuples of dicts.
* Every recording with log records (openai-v2 event modes, GenAI <= 1.36 events from openai-v2
  legacy and OpenLLMetry, ADK's log events) re-made live: spans started bare through the SDK's tracer
  (their attributes set before they end) and each log record emitted through the SDK's logger inside
  its span. The live processor must find the same runs and calls as offline extraction of the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from otel_toolscore import Expectation, ToolScoreLogRecordProcessor, ToolScoreSpanProcessor
from otel_toolscore.extract import extract_runs, log_views_from_proto
from otel_toolscore.online.live import ScoredRun
from otel_toolscore.service._decode import decode_spans, parse_logs_request, parse_trace_request

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"

_CHILD = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import openai
    from _fake_openai import FakeOpenAI, plain_scenarios, run_plain_loop
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from otel_toolscore import ToolScoreLogRecordProcessor, ToolScoreSpanProcessor, expect

    scored = []
    processor = ToolScoreSpanProcessor(None, on_scored=scored.append, meter_provider=MeterProvider(),
                                       logger_provider=LoggerProvider())
    tp = TracerProvider()
    tp.add_span_processor(processor)
    lp = LoggerProvider()
    lp.add_log_record_processor(ToolScoreLogRecordProcessor(processor))
    OpenAIInstrumentor().instrument(tracer_provider=tp, logger_provider=lp)
    tracer = tp.get_tracer("app")
    out = []
    for sc in plain_scenarios():
        if sc.name not in ("parallel_calls", "multi_step"):
            continue
        order = [c["name"] for c in sc.calls]
        with FakeOpenAI(sc.replies) as fake:
            client = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
            with expect(expected_tool_order=order, strict_mode=True), tracer.start_as_current_span("my_loop"):
                run_plain_loop(client, sc)
        assert processor.force_flush(10_000)
        (run,) = scored
        scored.clear()
        out.append({"scenario": sc.name, "expected": order, "calls": [c.name for c in run.run.tool_calls],
                    "score": run.score, "outcome": run.outcome})
    processor.shutdown()
    print(json.dumps(out))
    """
)


@pytest.mark.parametrize("mode", ["event_only", "span_and_event"])
def test_openai_v2_event_modes_live(mode: str) -> None:
    env = {
        **os.environ,
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": mode,
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(CORPUS)], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [r["scenario"] for r in results] == ["multi_step", "parallel_calls"]
    for r in results:
        assert r["calls"] == r["expected"], r  # the calls came from the log records alone
        assert r["outcome"] == "scored" and r["score"] == 1.0, r


# -- every recording with log records, re-made live -------------------------------------------------------
LOG_FILES = sorted(p for p in CORPUS.rglob("*.logs.jsonl") if "node_modules" not in p.parts)


def _lines(path: Path) -> list[bytes]:
    return [line.encode() for line in path.read_text().splitlines() if line.strip()]


def _replay_live(traces: Path, logs: Path) -> tuple[dict[str, Any], dict[int, int]]:
    """Re-make the recorded traces with the live SDK; return the scored runs and the id mapping."""
    spans = [d.span for line in _lines(traces) for d in decode_spans(parse_trace_request(line, "application/json"))]
    views = [v for line in _lines(logs) for v in log_views_from_proto(parse_logs_request(line, "application/json"))]
    scored: list[ScoredRun] = []
    processor = ToolScoreSpanProcessor(
        None,
        expectations=[Expectation(name="any", expected_tool="__never_called__")],
        on_scored=scored.append,
        capture_content=True,
        root_grace_ms=0,
        metrics=False,
        events=False,
    )
    tp = TracerProvider()
    tp.add_span_processor(processor)
    lp = LoggerProvider()
    lp.add_log_record_processor(ToolScoreLogRecordProcessor(processor))
    tracer = tp.get_tracer("replay")
    logs_by_span: dict[str | None, list[Any]] = defaultdict(list)
    for v in views:
        logs_by_span[v.span_id].append(v)
    # events: start/end of every span and each log record at its time, replayed in time order
    live: dict[int, Any] = {}
    parent_of = {s.context.span_id: (s.parent.span_id if s.parent is not None else None) for s in spans}

    def depth(span_id: int) -> int:
        d, cur, seen = 0, parent_of.get(span_id), set()
        while cur is not None and cur in parent_of and cur not in seen:
            seen.add(cur)
            d, cur = d + 1, parent_of[cur]
        return d

    # (time, order, item): at equal times a parent starts before its children and ends after them
    timeline: list[tuple[int, tuple[int, int], Any]] = []
    for s in spans:
        d = depth(s.context.span_id)
        timeline.append((s.start_time or 0, (0, d), s))
        timeline.append((s.end_time or 0, (2, -d), s))
        for v in logs_by_span.get(format(s.context.span_id, "016x"), ()):
            timeline.append((max(v.time_unix_nano, s.start_time or 0), (1, 0), (s, v)))
    ids: dict[int, int] = {}
    for _, (kind, _), item in sorted(timeline, key=lambda t: (t[0], t[1])):
        if kind == 0:
            s = item
            parent = live.get(s.parent.span_id) if s.parent is not None else None
            if parent is not None:
                ctx = trace.set_span_in_context(parent)
            elif s.parent is not None:  # a remote or missing parent: keep it remote
                remote = SpanContext(s.context.trace_id, s.parent.span_id, True, TraceFlags(TraceFlags.SAMPLED))
                ctx = trace.set_span_in_context(NonRecordingSpan(remote))
            else:
                ctx = trace.set_span_in_context(trace.INVALID_SPAN)
            # started bare, as some frameworks do; everything is set before it ends
            span = tracer.start_span(s.name, context=ctx, kind=s.kind or SpanKind.INTERNAL, start_time=s.start_time)
            live[s.context.span_id] = span
            ids[s.context.span_id] = span.get_span_context().span_id
        elif kind == 1:
            s, v = item
            span = live[s.context.span_id]
            lp.get_logger(v.scope_name or "replay").emit(
                context=trace.set_span_in_context(span),
                event_name=v.event_name,
                body=v.body,
                attributes=dict(v.attributes),
                timestamp=v.time_unix_nano,
            )
        else:
            s = item
            span = live[s.context.span_id]
            span.set_attributes(dict(s.attributes or {}))
            for e in s.events:
                span.add_event(e.name, dict(e.attributes or {}), timestamp=e.timestamp)
            if s.status is not None:
                span.set_status(s.status)
            span.end(end_time=s.end_time)
    assert processor.force_flush(10_000)
    assert processor.pending_traces == 0
    processor.shutdown()
    return {s.run.run_id: s for s in scored}, ids


@pytest.mark.parametrize("logs", LOG_FILES, ids=[str(p.relative_to(CORPUS)) for p in LOG_FILES])
def test_recorded_log_records_read_live(logs: Path) -> None:
    traces = logs.with_name(logs.name.replace(".logs.jsonl", ".traces.jsonl"))
    if not traces.exists():
        pytest.skip("log records without spans")  # pragma: no cover - every recording has both today
    spans = [d.span for line in _lines(traces) for d in decode_spans(parse_trace_request(line, "application/json"))]
    views = [v for line in _lines(logs) for v in log_views_from_proto(parse_logs_request(line, "application/json"))]
    by_trace: dict[int, list[Any]] = defaultdict(list)
    for s in spans:
        by_trace[s.context.trace_id].append(s)
    offline = []
    for trace_id, group in by_trace.items():
        offline.extend(extract_runs(group + [v for v in views if v.trace_id == format(trace_id, "032x")]))
    live, ids = _replay_live(traces, logs)
    assert len(live) == len(offline), "live and offline found a different number of runs"
    for run in offline:
        got = live[format(ids[int(run.run_id, 16)], "016x")].run
        assert [(c.name, c.kind, c.status) for c in got.tool_calls] == [
            (c.name, c.kind, c.status) for c in run.tool_calls
        ], run.run_id
        assert got.agent_name == run.agent_name
        assert got.user_query == run.user_query
