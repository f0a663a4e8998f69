"""Putting the processor in place: install() on an existing provider, configure(), zero-code hook."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore import Expectation, ToolScoreSpanProcessor, configure, install
from otel_toolscore.scripted import run_scripted_agent

ROOT = Path(__file__).resolve().parents[2]


def _quiet_providers() -> dict[str, Any]:
    return {"meter_provider": MeterProvider(), "logger_provider": LoggerProvider()}


def test_install_wraps_existing_export_processors() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    processor = install(provider, expectations=[Expectation(expected_tool="get_weather")], **_quiet_providers())
    assert isinstance(processor, ToolScoreSpanProcessor)
    assert install(provider) is processor  # idempotent
    run_scripted_agent(provider.get_tracer("t"), "a", "q", ["get_weather"])
    provider.force_flush()
    spans = exporter.get_finished_spans()
    assert len(spans) == 3  # exported once each: the batch processor is now downstream only
    (root,) = [s for s in spans if s.name.startswith("invoke_agent")]
    assert root.attributes["toolscore.code.score"] == 1.0
    provider.shutdown()


def test_install_without_export_processor_falls_back_to_events(caplog: Any) -> None:
    provider = TracerProvider()
    processor = install(provider, expectations=[Expectation(expected_tool="x")], **_quiet_providers())
    assert processor.downstream is None
    assert "events and metrics only" in caplog.text
    provider.shutdown()


def test_configure_without_export_builds_working_providers() -> None:
    exporter = InMemorySpanExporter()
    installed = configure(
        export=False,
        set_global=False,
        extra_span_processors=[SimpleSpanProcessor(exporter)],
        expectations=[Expectation(expected_tool="lookup")],
    )
    run_scripted_agent(installed.tracer_provider.get_tracer("t"), "a", "q", ["lookup"])
    installed.shutdown()
    (root,) = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert root.attributes["toolscore.code.label"] == "pass"


_APP = """
from opentelemetry import trace
from otel_toolscore.scripted import run_scripted_agent
run_scripted_agent(trace.get_tracer("app"), "weather_agent", "q", ["get_weather"])
"""


def _instrumented(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """A scripted agent run under the real ``opentelemetry-instrument``, console exporters, ``variables`` added."""
    app = tmp_path / "app.py"
    app.write_text(_APP)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update(OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="console",
               OTEL_SERVICE_NAME="zero-code-test", **variables)
    bindir = Path(sys.executable).parent
    out = subprocess.run([str(bindir / "opentelemetry-instrument"), sys.executable, str(app)],
                         env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return out


def test_zero_code_under_opentelemetry_instrument(tmp_path: Path) -> None:
    text = _instrumented(tmp_path, OTEL_TOOLSCORE_EXPECTED_TOOL="get_weather").stdout
    assert '"toolscore.code.score": 1.0' in text
    assert '"gen_ai.evaluation.name": "tool_call_accuracy"' in text
    # Turned off by its switch (any case).
    for off in ("false", "FALSE"):
        out = _instrumented(tmp_path, OTEL_TOOLSCORE_EXPECTED_TOOL="get_weather", OTEL_TOOLSCORE_ENABLED=off)
        assert "toolscore.code.score" not in out.stdout


def test_zero_code_typos_never_turn_scoring_off(tmp_path: Path) -> None:
    """Under the real ``opentelemetry-instrument`` hook, bad and misspelt variables are warned about on
    stderr, each naming its variable, and the run is still scored."""
    typos = {
        "OTEL_TOOLSCORE_MAX_PENDING_TRACES": "lots",  # not a number
        "OTEL_TOOLSCORE_MAX_CALLS_PER_RUN": "0",  # out of range
        "OTEL_TOOLSCORE_EVENTS": "yes",  # not a boolean: only true/false
        "OTEL_TOOLSCORE_SPAN_ATRIBUTES": "true",  # misspelt name
        "OTEL_TOOLSCORE_TRACE_TIMEOUT_MS": "5min",  # durations are integer milliseconds
        "OTEL_TOOLSCORE_RULES": str(tmp_path / "no-such-rules.yaml"),  # a file that is not there
        "OTEL_TOOLSCORE_JUDGE_RATOI": "0.5",  # misspelt judge variable
        "OTEL_TOOLSCORE_ENABLED": "ture",  # not a boolean: the hook stays on
    }
    out = _instrumented(tmp_path, OTEL_TOOLSCORE_EXPECTED_TOOL="get_weather", **typos)
    assert '"toolscore.code.score": 1.0' in out.stdout  # scored, with the default expectation
    assert '"gen_ai.evaluation.name": "tool_call_accuracy"' in out.stdout  # events stay on (default)
    assert "Traceback" not in out.stderr and "could not be installed" not in out.stderr
    warned = [line for line in out.stderr.splitlines() if line.startswith("otel-toolscore:")]
    for key in typos:
        assert any(key in line for line in warned), (key, out.stderr)
    assert any("did you mean OTEL_TOOLSCORE_SPAN_ATTRIBUTES?" in line for line in warned)


def test_three_variables_enable_the_judge_in_configure(monkeypatch: Any) -> None:
    from tests.support.openai_server import OpenAITestServer, echo_judge

    with OpenAITestServer(echo_judge()) as server:
        monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_MODEL", "test-judge")
        monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_API_KEY", "sk-test-local")
        monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_RATIO", "1")
        exporter = InMemorySpanExporter()
        installed = configure(
            export=False,
            set_global=False,
            extra_span_processors=[SimpleSpanProcessor(exporter)],
            expectations=[Expectation(expected_tool="get_weather")],
        )
        run_scripted_agent(installed.tracer_provider.get_tracer("t"), "a", "Weather in Paris?", ["get_weather"])
        installed.shutdown()
        assert server.request_count == 1
    names = [s.name for s in exporter.get_finished_spans()]
    assert "evaluate tool_call_accuracy_llm" in names  # the carrier span went through the same provider
