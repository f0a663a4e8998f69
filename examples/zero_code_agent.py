"""Zero code: an agent that uses only the OpenTelemetry API, scored by ``opentelemetry-instrument``.

Run it as the README shows (``pip install otel-toolscore opentelemetry-distro``):

    OTEL_TOOLSCORE_EXPECTED_TOOL=get_weather \\
    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_LOGS_EXPORTER=console \\
    opentelemetry-instrument python examples/zero_code_agent.py

``opentelemetry-distro``'s configurator sets up the SDK providers and exporters from the ``OTEL_*``
variables; otel-toolscore's ``opentelemetry_post_instrument`` hook puts the span processor in front
of the exporters. The console exporters then print each run's root span with its
``toolscore.code.*`` attributes and the ``gen_ai.evaluation.result`` events. Run with plain
``python`` (no SDK set up), the spans go nowhere and only the last line is printed.
"""

from __future__ import annotations

from opentelemetry import trace

from otel_toolscore.scripted import run_scripted_agent  # stands in for an instrumented agent framework

tracer = trace.get_tracer("weather-app")
run_scripted_agent(tracer, "weather_agent", "What's the weather in Paris?", ["get_weather"])  # passes
run_scripted_agent(tracer, "weather_agent", "Weather in Oslo, please", ["search_web"])  # fails: wrong tool
print("2 agent runs done")
