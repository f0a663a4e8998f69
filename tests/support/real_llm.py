"""The real-LLM judge check shared by the tests against real servers (llama.cpp via npm or PyPI).

The small model's verdict is not the point: a real grammar-constrained server accepts our request,
returns JSON that the per-run schema makes valid, and the whole pipeline (processor -> judge ->
event, carrier span, metrics) records it.
"""

from __future__ import annotations

import json
import time
from typing import Protocol

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore import (
    Expectation,
    Judge,
    JudgeSampler,
    ToolScoreSpanProcessor,
    create_tool_call_accuracy_scorer_llm,
)
from otel_toolscore.scorers.llm import endpoint_output_mode
from otel_toolscore.scripted import ScriptedCall, run_scripted_agent
from tests.support.telemetry import counter_by, evaluation_events, metric_points

MAX_TOKENS = 256


class RealServer(Protocol):
    model: str
    base_url: str

    def log_tail(self) -> str: ...


_points = metric_points


def _counter(reader: InMemoryMetricReader, name: str, key: str) -> dict[str, int]:
    return {str(k): v for k, v in counter_by(reader, name, key).items()}


def judge_one_run_through_the_pipeline(
    server: RealServer, *, request_timeout_s: float, expected_output_mode: str
) -> None:
    """One scripted run judged by ``server`` through processor and judge; asserts what was recorded."""
    spans, logs, reader = InMemorySpanExporter(), InMemoryLogRecordExporter(), InMemoryMetricReader()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    meter_provider = MeterProvider(metric_readers=[reader])
    provider = TracerProvider()
    scorer = create_tool_call_accuracy_scorer_llm(
        server.model, ["get_weather", "search_web"], base_url=server.base_url, timeout=request_timeout_s,
        max_retries=0, request_options={"max_tokens": MAX_TOKENS, "temperature": 0.0},
    )
    judge = Judge(scorer, sampler=JudgeSampler(ratio=1.0, max_per_minute=None, max_tokens_per_hour=None),
                  workers=1, tracer_provider=provider, shutdown_timeout_s=5.0)
    processor = ToolScoreSpanProcessor(
        SimpleSpanProcessor(spans), expectations=[Expectation(agent_name="weather_agent", expected_tool="get_weather")],
        judge=judge, meter_provider=meter_provider, logger_provider=logger_provider,
    )
    provider.add_span_processor(processor)

    started = time.monotonic()
    run_scripted_agent(provider.get_tracer("test"), "weather_agent", "What is the weather in Paris?",
                       [ScriptedCall("get_weather", {"city": "Paris"}, {"temperature_c": 21, "sky": "sunny"})],
                       "It is 21 °C and sunny in Paris.")
    flushed = processor.force_flush(int(2 * request_timeout_s * 1000) + 30_000)
    elapsed = time.monotonic() - started
    assert flushed, f"the judgment did not finish in time; server log:\n{server.log_tail()}"

    events = evaluation_events(logs.get_finished_logs(), "tool_call_accuracy_llm")
    carriers = [s for s in spans.get_finished_spans() if s.name == "evaluate tool_call_accuracy_llm"]
    outcomes = _counter(reader, "toolscore.judge.requests", "toolscore.outcome")
    tokens = _counter(reader, "toolscore.judge.tokens", "gen_ai.token.type")
    report = {
        "elapsed_s": round(elapsed, 1),
        "output_mode": endpoint_output_mode(server.base_url),
        "outcomes": outcomes,
        "tokens": tokens,
        "event": {k: v for k, v in (events[0].attributes or {}).items()} if events else None,
        "carrier": {k: (list(v) if isinstance(v, tuple) else v) for k, v in (carriers[0].attributes or {}).items()}
        if carriers else None,
    }
    print("real LLM judgment:", json.dumps(report, indent=1, default=str))  # for the record (pytest -s / -rA)
    provider.shutdown()

    assert report["output_mode"] == expected_output_mode, server.log_tail()
    assert len(events) == 1 and len(carriers) == 1, server.log_tail()
    attrs = events[0].attributes or {}
    assert outcomes in ({"ok": 1}, {"invalid_answer": 1}), outcomes
    if outcomes == {"ok": 1}:
        score = attrs["gen_ai.evaluation.score.value"]
        assert isinstance(score, float) and 0.0 <= score <= 1.0
        assert attrs["gen_ai.evaluation.score.label"] in ("pass", "fail")
        assert "error.type" not in attrs
        (hist,) = [p for p in _points(reader, "gen_ai.evaluation.score")
                   if p.attributes["gen_ai.evaluation.name"] == "tool_call_accuracy_llm"]
        assert hist.count == 1 and hist.sum == score
        assert list(carriers[0].attributes["toolscore.judge.evaluations.tool"]) == ["get_weather"]
    else:  # reported honestly: the model produced no usable verdict even under the grammar
        assert attrs["error.type"] == "invalid_answer" and "gen_ai.evaluation.score.value" not in attrs
    assert tokens.get("input", 0) > 0 and tokens.get("output", 0) > 0
    (duration,) = _points(reader, "toolscore.judge.duration")
    assert duration.count == 1 and 0 < duration.sum < elapsed + 1
    assert _counter(reader, "toolscore.judge.skipped", "toolscore.reason") == {}
