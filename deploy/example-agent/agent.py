"""Example agent for docker-compose.yaml: scripted GenAI agent runs exported over OTLP, not scored here.

It has no otel-toolscore processor: the scoring replicas behind the Collector score its runs. Set
FAILURE_RATE (0..1) to make a share of the runs call the wrong tools (to see the alerts fire).
SIGTERM or SIGINT ends it within EXIT_FLUSH_MS (5 s) plus one run, whatever the collector does.
"""

from __future__ import annotations

import os
import random
import signal
import threading

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
    exit_flush_ms = int(os.environ.get("EXIT_FLUSH_MS", "5000"))
    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "example-agent")}))
    exporter = OTLPSpanExporter()  # OTEL_EXPORTER_OTLP_ENDPOINT
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("example-agent")
    rng = random.Random()
    # SIGTERM (docker stop, Kubernetes) and SIGINT end the loop between runs, never inside the SDK.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print("example-agent: running; SIGTERM or SIGINT stops it", flush=True)
    while not stop.is_set():
        agent, query, tools = rng.choice(BAD if rng.random() < failure_rate else GOOD)
        run_scripted_agent(tracer, agent, query, tools)
        stop.wait(pause)
    # A bounded exit. The SDK's BatchSpanProcessor exports every queued batch at flush and at
    # shutdown (its force_flush ignores its timeout), and each export retries an endpoint that
    # refuses or is unreachable for up to OTEL_EXPORTER_OTLP_TIMEOUT (10 s): a few queued batches
    # kept the process alive for more than 20 s. So: flush on a helper thread for at most
    # EXIT_FLUSH_MS, then shut the exporter down (it aborts its retries: what is left fails at once),
    # then the provider.
    flusher = threading.Thread(target=provider.force_flush, daemon=True)
    flusher.start()
    flusher.join(exit_flush_ms / 1000)
    exporter.shutdown()
    provider.shutdown()


if __name__ == "__main__":
    main()
