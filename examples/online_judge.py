"""Online LLM judging: live agent runs scored by the code scorer, a sample of them by an LLM judge.

Run: python examples/online_judge.py
With OPENAI_BASE_URL (and OPENAI_API_KEY, JUDGE_MODEL) set, a real OpenAI-compatible endpoint judges;
otherwise a local test server plays the judge (one verdict per called tool), so the example runs
offline. Spans, log records and metrics stay in memory here; in production the same processor wraps
a ``BatchSpanProcessor(OTLPSpanExporter())`` and the providers export over OTLP.

The same judge from the environment only:
    OTEL_TOOLSCORE_JUDGE_MODEL=gpt-4o-mini OTEL_TOOLSCORE_JUDGE_API_KEY=sk-... (and _BASE_URL for
    another endpoint), then ``Judge.from_env()`` or ``otel_toolscore.configure()``.
"""

from __future__ import annotations

import os

from _judge_endpoint import judge_endpoint
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
from otel_toolscore.scripted import ScriptedCall, run_scripted_agent

TOOLS = [
    {"name": "get_weather", "description": "Current weather for a city"},
    {"name": "search_web", "description": "Search the web for general information"},
]


def main() -> int:
    spans, logs, metrics = InMemorySpanExporter(), InMemoryLogRecordExporter(), InMemoryMetricReader()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    tracer_provider = TracerProvider()
    with judge_endpoint(approve=lambda tool: tool == "get_weather") as base_url:
        judge = Judge(
            scorer=create_tool_call_accuracy_scorer_llm(
                model=os.environ.get("JUDGE_MODEL", "gpt-4o-mini"),
                available_tools=TOOLS,
                base_url=base_url,
                api_key="unused" if base_url else None,
            ),
            # 5 % of traces, plus every run the code scorer failed, within 60 judgments a minute
            # and 200k judge tokens an hour.
            sampler=JudgeSampler(ratio=0.05, always_when_code_fails=True, max_per_minute=60, max_tokens_per_hour=200_000),
            workers=4,
            queue_size=1_000,
            tracer_provider=tracer_provider,  # carrier spans go where the agent's spans go
        )
        processor = ToolScoreSpanProcessor(
            SimpleSpanProcessor(spans),
            expectations=[Expectation(agent_name="weather_agent", expected_tool="get_weather")],
            judge=judge,
            meter_provider=MeterProvider(metric_readers=[metrics]),
            logger_provider=logger_provider,
        )
        tracer_provider.add_span_processor(processor)
        tracer = tracer_provider.get_tracer("example")

        # Two live runs: one right, one wrong (the code scorer fails it, so the judge always sees it).
        run_scripted_agent(tracer, "weather_agent", "Weather in Paris?", [ScriptedCall("get_weather", {"city": "Paris"})],
                           "Sunny, 24 °C.")
        run_scripted_agent(tracer, "weather_agent", "Weather in Oslo?", [ScriptedCall("search_web", {"q": "Oslo weather"})],
                           "Probably cold.")
        processor.force_flush(30_000)  # waits for the queued judgments too
        tracer_provider.shutdown()

    for span in spans.get_finished_spans():
        if span.name == "evaluate tool_call_accuracy_llm":
            a = span.attributes
            print(f"judge verdict on trace {span.context.trace_id:032x}: score={a.get('gen_ai.evaluation.score.value')} "
                  f"label={a.get('gen_ai.evaluation.score.label')} sampled_by={a.get('toolscore.judge.sampled_by')} "
                  f"tools={list(a.get('toolscore.judge.evaluations.tool', ()))} "
                  f"appropriate={list(a.get('toolscore.judge.evaluations.appropriate', ()))}")
    stats = judge.stats()
    print("judge funnel:", stats.model_dump())
    # The code failure is judged whatever the ratio; the passing run only if its trace id is in the 5 %
    # or its tool sequence is new to this process (it is: the first weather run).
    return 0 if stats.accounted == 2 and stats.requests.get("ok", 0) >= 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
