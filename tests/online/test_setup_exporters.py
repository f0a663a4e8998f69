"""``configure()`` and ``serve`` choose exporters from the standard variables, as the SDK's configurator does.

One test per variable: ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` /
``OTEL_LOGS_EXPORTER`` (``otlp``, ``console``, ``none``, comma lists, unknown names),
``OTEL_EXPORTER_OTLP_PROTOCOL`` and its per-signal forms, ``OTEL_EXPORTER_OTLP_ENDPOINT`` and its
per-signal forms. The backends are real OTLP/HTTP and OTLP/gRPC servers on 127.0.0.1; every check is
on what they received (or what the console printed).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from otel_toolscore import Expectation, configure
from otel_toolscore.scripted import run_scripted_agent
from otel_toolscore.telemetry._exporters import exporters_from_env, otlp_protocol
from tests.tools.otlp import Capture, capture_server, grpc_capture_server

pytestmark = pytest.mark.timeout(120)

EXPECT = [Expectation(agent_name="weather_agent", expected_tool="get_weather")]


@pytest.fixture(autouse=True)
def clean_otel_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith(("OTEL_", "OPENAI_")):
            monkeypatch.delenv(key)
    yield


def run_one() -> list[Any]:
    """configure(), one scored run, shutdown (flushes every signal); the scored runs."""
    scored: list[Any] = []
    installed = configure(set_global=False, expectations=EXPECT, on_scored=scored.append)
    run_scripted_agent(installed.tracer_provider.get_tracer("t"), "weather_agent", "Weather in Paris?", ["get_weather"])
    installed.shutdown()
    assert len(scored) == 1 and scored[0].verdict.score == 1.0
    return scored


def received(capture: Capture) -> set[str]:
    """Which signals reached a backend: the scored root span, the evaluation event, the score metric."""
    out = set()
    if any("toolscore.code.score" in s["attributes"] for s in capture.spans()):
        out.add("traces")
    if any(r["attributes"].get("gen_ai.evaluation.name") == "tool_call_accuracy" for r in capture.logs()):
        out.add("logs")
    if capture.metric_points("gen_ai.evaluation.score"):
        out.add("metrics")
    return out


ALL = {"traces", "metrics", "logs"}
ROOT = Path(__file__).resolve().parents[2]

# The console exporters write to the process's standard output: they run in a child process.
_CHILD = """
from otel_toolscore import Expectation, configure
from otel_toolscore.scripted import run_scripted_agent
installed = configure(set_global=False, expectations=[Expectation(expected_tool="get_weather")])
run_scripted_agent(installed.tracer_provider.get_tracer("t"), "weather_agent", "Weather?", ["get_weather"])
installed.shutdown()
"""


def run_child(env: dict[str, str]) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    full["PYTHONPATH"] = str(ROOT) + os.pathsep + full.get("PYTHONPATH", "")
    full.update(env)
    out = subprocess.run([sys.executable, "-c", _CHILD], env=full, capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr
    return out.stdout


# -- defaults ---------------------------------------------------------------------------------------------
def test_default_is_otlp_over_http_protobuf_to_the_generic_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    with capture_server() as (endpoint, capture):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        run_one()
        assert received(capture) == ALL


# -- OTEL_{TRACES,METRICS,LOGS}_EXPORTER ------------------------------------------------------------------
@pytest.mark.parametrize("signal", sorted(ALL))
def test_none_turns_one_signal_off(monkeypatch: pytest.MonkeyPatch, signal: str) -> None:
    with capture_server() as (endpoint, capture):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        monkeypatch.setenv(f"OTEL_{signal.upper()}_EXPORTER", "none")
        run_one()
        assert received(capture) == ALL - {signal}


def test_none_everywhere_exports_nothing_and_still_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    with capture_server() as (endpoint, capture):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        for signal in ALL:
            monkeypatch.setenv(f"OTEL_{signal.upper()}_EXPORTER", "NONE")
        run_one()
        assert received(capture) == set()
        assert all(not reqs for reqs in capture.requests.values())


def test_console_prints_each_signal() -> None:
    out = run_child({f"OTEL_{signal.upper()}_EXPORTER": "console" for signal in ALL})
    assert '"toolscore.code.score": 1.0' in out  # the root span
    assert '"gen_ai.evaluation.name": "tool_call_accuracy"' in out  # the evaluation event
    assert '"name": "gen_ai.evaluation.score"' in out  # the metric


def test_a_comma_list_sends_to_each() -> None:
    with capture_server() as (endpoint, capture):
        out = run_child({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_EXPORTER": "otlp, console,otlp",
                         "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"})  # duplicates count once
        assert received(capture) == {"traces"}
        assert len([s for s in capture.spans() if "toolscore.code.score" in s["attributes"]]) == 1
        assert out.count('"toolscore.code.score": 1.0') == 1


def test_an_unknown_exporter_is_warned_about_and_the_others_kept(monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    with capture_server() as (endpoint, capture):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkinn,otlp")
        run_one()
        assert received(capture) == ALL
    assert "OTEL_TRACES_EXPORTER: exporter 'zipkinn' is not installed" in caplog.text


def test_python_entry_point_names_choose_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    with capture_server() as (http_endpoint, http_capture), grpc_capture_server() as (grpc_endpoint, grpc_capture):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", grpc_endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")  # overridden by the names below
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp_proto_grpc")
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp_proto_grpc")
        monkeypatch.setenv("OTEL_LOGS_EXPORTER", "otlp_proto_http")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", f"{http_endpoint}/v1/logs")
        run_one()
        assert received(grpc_capture) == {"traces", "metrics"}
        assert received(http_capture) == {"logs"}


# -- OTEL_EXPORTER_OTLP_PROTOCOL and OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL ---------------------------------
def test_grpc_protocol_for_every_signal(monkeypatch: pytest.MonkeyPatch) -> None:
    with grpc_capture_server() as (endpoint, capture):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        run_one()
        assert received(capture) == ALL


@pytest.mark.parametrize("signal", sorted(ALL))
def test_per_signal_protocol_wins_over_the_generic_one(monkeypatch: pytest.MonkeyPatch, signal: str) -> None:
    with capture_server() as (http_endpoint, http_capture), grpc_capture_server() as (grpc_endpoint, grpc_capture):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", http_endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        monkeypatch.setenv(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL", "grpc")
        monkeypatch.setenv(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", grpc_endpoint)
        run_one()
        assert received(grpc_capture) == {signal}
        assert received(http_capture) == ALL - {signal}


def test_an_unknown_protocol_is_warned_about_and_the_default_used(monkeypatch: pytest.MonkeyPatch,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    with capture_server() as (endpoint, capture):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        run_one()
        assert received(capture) == ALL
    assert "OTEL_EXPORTER_OTLP_PROTOCOL='http/json' is ignored" in caplog.text


def test_protocol_resolution_order() -> None:
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf"}
    assert [otlp_protocol(s, env) for s in ("traces", "metrics", "logs")] == ["grpc", "grpc", "http/protobuf"]
    assert otlp_protocol("traces", {}) == "http/protobuf"
    assert otlp_protocol("traces", {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "bogus", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) == "grpc"


# -- OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT ---------------------------------
@pytest.mark.parametrize("signal", sorted(ALL))
def test_per_signal_endpoint_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch, signal: str) -> None:
    with capture_server() as (generic, generic_capture), capture_server() as (own, own_capture):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", generic)
        # A per-signal URL is the full path (nothing appended), unlike the generic base URL.
        monkeypatch.setenv(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", f"{own}/v1/{signal}")
        run_one()
        assert received(own_capture) == {signal}
        assert received(generic_capture) == ALL - {signal}


def test_exporters_from_env_builds_what_is_asked() -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
           "OTEL_METRICS_EXPORTER": "console", "OTEL_LOGS_EXPORTER": ""}
    (spans,) = exporters_from_env("traces", env)
    (metrics,) = exporters_from_env("metrics", env)
    (logs,) = exporters_from_env("logs", env)  # empty: the default, otlp over http/protobuf
    assert isinstance(spans, GrpcSpans) and isinstance(metrics, ConsoleMetricExporter) and isinstance(logs, HttpLogs)
    for exporter in (spans, metrics, logs):
        exporter.shutdown()


# -- otel-toolscore serve: http/protobuf by default, like every OpenTelemetry SDK ----------------------------
def _serve_one_run(**service: Any) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from otel_toolscore.service import ScoringService, load_config

    config = load_config(environ={}, service_overrides={"grpc_port": 0, "http_port": 0, "quiet_period_ms": 50, **service})
    svc = ScoringService(config, expectations=EXPECT)
    svc.start()
    try:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{svc.http_port}/v1/traces")))
        run_scripted_agent(provider.get_tracer("agent"), "weather_agent", "Weather?", ["get_weather"])
        provider.shutdown()
    finally:
        svc.shutdown()  # drains: scores the buffered trace and flushes every export


def test_serve_exports_over_http_protobuf_by_default() -> None:
    with capture_server() as (endpoint, capture):
        _serve_one_run(export_endpoint=endpoint)
        assert {"logs", "metrics"} <= received(capture)  # the evaluation event and the score metric, over HTTP


def test_serve_reads_the_otlp_variables_when_no_endpoint_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    with capture_server() as (http_endpoint, http_capture), grpc_capture_server() as (grpc_endpoint, grpc_capture):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", http_endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", grpc_endpoint)
        _serve_one_run()
        assert received(http_capture) == {"logs"}
        assert received(grpc_capture) == {"metrics"}
