"""A real collector (rotel, from PyPI) in front of `otel-toolscore serve`.

agent (SDK, in-process processor) ──OTLP──► rotel ──OTLP gRPC/HTTP──► otel-toolscore serve
The service's scores must equal what the in-process processor computed on the same traces, and the
service's retryable refusals must make the collector retry, not lose data.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.trace import SpanKind

from tests.service.test_service import SCRIPT, live_pipeline, run_script, start_service, summary
from tests.tools.external import rotel


@pytest.mark.parametrize(("agent_protocol", "rotel_protocol"), [("http", "grpc"), ("grpc", "http")])
def test_rotel_in_front_of_the_service(tmp_path: Path, agent_protocol: str, rotel_protocol: str) -> None:
    running = start_service()
    try:
        target = (
            f"http://127.0.0.1:{running.service.grpc_port}"
            if rotel_protocol == "grpc"
            else f"http://127.0.0.1:{running.service.http_port}"
        )
        with rotel(tmp_path, target, protocol=rotel_protocol) as (grpc_port, http_port):
            exporter = (
                HttpSpanExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces")
                if agent_protocol == "http"
                else GrpcSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True)
            )
            tp, _, live = live_pipeline(exporter)
            run_script(tp)
            tp.shutdown()
            running.wait_scored(len(SCRIPT), timeout=30)
        assert len(live) == len(SCRIPT)
        assert running.by_trace() == {format(s.ref.trace_id, "032x"): summary(s) for s in live}
        assert running.counter("toolscore.service.received", **{"toolscore.signal": "spans"}) == sum(
            2 + len(t) for _, _, t in SCRIPT
        )
    finally:
        running.service.shutdown(timeout_s=5)


def test_rotel_carries_log_events_into_the_runs(tmp_path: Path) -> None:
    running = start_service()
    try:
        with rotel(tmp_path, f"http://127.0.0.1:{running.service.grpc_port}") as (_, http_port):
            tp, lp, live = live_pipeline(
                HttpSpanExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces"),
                HttpLogExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/logs"),
            )
            assert lp is not None
            tracer = tp.get_tracer("test.agent")
            with tracer.start_as_current_span(
                "invoke_agent weather_agent",
                attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"},
            ), tracer.start_as_current_span("chat scripted", kind=SpanKind.CLIENT) as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                lp.get_logger("test.agent").emit(
                    event_name="gen_ai.choice",
                    body={
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "tool_calls": [
                                {"id": "c1", "type": "function", "function": {"name": "search_web", "arguments": "{}"}}
                            ],
                        },
                    },
                )
            lp.force_flush()
            time.sleep(0.3)  # through rotel's 100 ms batch before the spans
            tp.shutdown()
            lp.shutdown()
            (run,) = running.wait_scored(1, timeout=30)
        assert summary(run) == summary(live[0])
        assert summary(run)[1] == ("search_web",)
        assert summary(run)[3] == 0.0
    finally:
        running.service.shutdown(timeout_s=5)


def test_rotel_retries_when_the_service_refuses(tmp_path: Path) -> None:
    """The service refuses while its buffer is full; rotel keeps the batch, retries, and nothing is lost."""
    running = start_service(quiet_period_ms=400, max_pending_spans=3, retry_after_ms=1000)
    try:
        with rotel(
            tmp_path,
            f"http://127.0.0.1:{running.service.grpc_port}",
            extra=("--otlp-exporter-retry-initial-backoff", "200ms", "--otlp-exporter-retry-max-elapsed-time", "60s"),
        ) as (_, http_port):
            tp, _, live = live_pipeline(HttpSpanExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces"))
            tracer = tp.get_tracer("test.agent")
            from otel_toolscore.scripted import run_scripted_agent

            for agent, query, tools in SCRIPT:
                run_scripted_agent(tracer, agent, query, tools)
                tp.force_flush()
                time.sleep(0.15)  # one rotel batch per run: the next arrives while the first is buffered
            tp.shutdown()
            running.wait_scored(len(SCRIPT), timeout=60)
        assert running.counter("toolscore.service.refused", **{"toolscore.reason": "overload"}) > 0
        assert running.by_trace() == {format(s.ref.trace_id, "032x"): summary(s) for s in live}
    finally:
        running.service.shutdown(timeout_s=5)
