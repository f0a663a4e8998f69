"""The processor through real OTLP exporters and a real collector (rotel, from PyPI).

agent + ToolScoreSpanProcessor ──OTLP gRPC or HTTP──► rotel ──OTLP/HTTP──► capture backend (127.0.0.1)
The scored root, the evaluation event (parented to the root) and the score metric must all arrive.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_toolscore import Expectation, ToolScoreSpanProcessor
from otel_toolscore.scripted import run_scripted_agent
from tests.tools.external import rotel
from tests.tools.otlp import capture_server


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_scores_reach_a_backend_through_rotel(tmp_path: Path, protocol: str) -> None:
    with capture_server() as (backend, capture), rotel(tmp_path, backend, protocol="http") as (grpc_port, http_port):
        if protocol == "grpc":
            endpoint = f"127.0.0.1:{grpc_port}"
            span_exp, log_exp, metric_exp = (
                GrpcSpanExporter(endpoint=endpoint, insecure=True),
                GrpcLogExporter(endpoint=endpoint, insecure=True),
                GrpcMetricExporter(endpoint=endpoint, insecure=True),
            )
        else:
            base = f"http://127.0.0.1:{http_port}"
            span_exp, log_exp, metric_exp = (
                HttpSpanExporter(endpoint=f"{base}/v1/traces"),
                HttpLogExporter(endpoint=f"{base}/v1/logs"),
                HttpMetricExporter(endpoint=f"{base}/v1/metrics"),
            )
        resource = Resource.create({"service.name": f"otlp-{protocol}"})
        mp = MeterProvider(resource=resource, metric_readers=[PeriodicExportingMetricReader(metric_exp, 60_000)])
        lp = LoggerProvider(resource=resource)
        lp.add_log_record_processor(BatchLogRecordProcessor(log_exp))
        tp = TracerProvider(resource=resource)
        tp.add_span_processor(
            ToolScoreSpanProcessor(
                BatchSpanProcessor(span_exp),
                expectations=[Expectation(agent_name="weather_agent", expected_tool="get_weather")],
                meter_provider=mp,
                logger_provider=lp,
            )
        )
        tracer = tp.get_tracer("agent")
        run_scripted_agent(tracer, "weather_agent", "Paris?", ["get_weather"])
        run_scripted_agent(tracer, "weather_agent", "Oslo?", ["search_web"])
        tp.shutdown()
        lp.shutdown()
        mp.shutdown()
        assert capture.wait_for(
            lambda: len(capture.spans()) >= 6 and len(capture.logs()) >= 2 and bool(capture.metric_points("gen_ai.evaluation.score"))
        ), (len(capture.spans()), len(capture.logs()))

    roots = {s["span_id"]: s for s in capture.spans() if s["name"].startswith("invoke_agent")}
    assert sorted(r["attributes"]["toolscore.code.label"] for r in roots.values()) == ["fail", "pass"]
    for r in roots.values():
        assert r["attributes"]["annotations.0.annotation.name"] == "tool_call_accuracy"
    events = [e for e in capture.logs() if e["event_name"] == "gen_ai.evaluation.result"]
    assert len(events) == 2
    for e in events:
        root = roots[e["span_id"]]  # each event is parented to its run's root span
        assert e["trace_id"] == root["trace_id"]
        assert e["attributes"]["gen_ai.evaluation.score.value"] == root["attributes"]["toolscore.code.score"]
    points = capture.metric_points("gen_ai.evaluation.score")
    assert sum(dp.count for _, dp in points) == 2
    assert {a["gen_ai.evaluation.score.label"] for a, _ in points} == {"pass", "fail"}
    runs = capture.metric_points("toolscore.runs")
    assert sum(dp.as_int for a, dp in runs if a.get("toolscore.outcome") == "scored") == 2
