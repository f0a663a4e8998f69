"""Example agent for docker-compose.yaml: scripted GenAI agent runs exported over OTLP, not scored here.

It has no otel-toolscore processor: the scoring replicas behind the Collector score its runs. Set
FAILURE_RATE (0..1) to make a share of the runs call the wrong tools (to see the alerts fire).
"""

from __future__ import annotations

import os
import random
import time

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_toolscore.scripted import run_scripted_agent

GOOD = [
    ("weather_agent", "What's the weather in Paris?", ["get_weather"]),
    ("weather_agent", "Weather and time in Rome", ["get_weather", "get_time"]),
    ("billing_agent", "Refund my last order", ["auth", "fetch_order", "refund"]),
]
BAD = [
    ("weather_agent", "Weather in Oslo", ["search_web"]),
    ("billing_agent", "Refund order 42", ["refund", "auth"]),
]


def main() -> None:
    failure_rate = float(os.environ.get("FAILURE_RATE", "0.1"))
    pause = float(os.environ.get("RUN_INTERVAL_S", "1.0"))
    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "example-agent")}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    tracer = provider.get_tracer("example-agent")
    rng = random.Random()
    try:
        while True:
            agent, query, tools = rng.choice(BAD if rng.random() < failure_rate else GOOD)
            run_scripted_agent(tracer, agent, query, tools)
            time.sleep(pause)
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
