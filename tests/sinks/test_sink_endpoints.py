"""A typo in a sink URL never takes scoring down.

``OTEL_TOOLSCORE_PHOENIX_ENDPOINT=http://localhost:60o6`` (or ``http://[::1``) used to raise
``httpx.InvalidURL`` out of ``ToolScoreSpanProcessor()``, ``configure()`` and ``install()``, left
nothing installed under ``opentelemetry-instrument`` and gave ``serve`` a traceback; ``:99999`` and
``http://a b`` were accepted and failed at every export. Now: from the environment, one warning
naming the variable, that sink left out, the rest of scoring running; as an argument, a
``ConfigError`` naming the setting; ``serve --sinks`` exits 2 with one line.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from otel_toolscore import ToolScoreSpanProcessor, configure, install
from otel_toolscore.scripted import run_scripted_agent
from otel_toolscore.settings import ConfigError
from otel_toolscore.sinks import LangfuseSink, PhoenixSink
from tests.support.json_capture import Answer, JsonCaptureServer
from tests.support.serve_cli import CODE, serve_until_listening

pytestmark = pytest.mark.timeout(120)

BAD = ["http://localhost:60o6", "http://[::1", "http://a:99999", "http://a b", "http://:80", "ftp://x", "http://h:0",
       "http://user:hunter2@[::1"]
PHOENIX_VAR = "OTEL_TOOLSCORE_PHOENIX_ENDPOINT"


@pytest.fixture
def langfuse() -> Iterator[JsonCaptureServer]:
    """The other sink, configured right: it must keep receiving scores."""
    with JsonCaptureServer(lambda request: Answer(202, {"message": "Accepted"})) as server:
        yield server


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, langfuse: JsonCaptureServer) -> pytest.MonkeyPatch:
    for var in [v for v in os.environ if v.startswith(("OTEL_", "PHOENIX_", "LANGFUSE_", "OPENAI_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("OTEL_TOOLSCORE_SINKS", "phoenix,langfuse")
    monkeypatch.setenv("OTEL_TOOLSCORE_EXPECTED_TOOL", "get_weather")
    monkeypatch.setenv("LANGFUSE_BASE_URL", langfuse.url)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf")
    return monkeypatch


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _one_warning_naming(caplog: pytest.LogCaptureFixture, variable: str, secret: str = "hunter2") -> None:
    (line,) = [w for w in _warnings(caplog) if "phoenix" in w.lower()]
    assert variable in line and secret not in line, line


@pytest.mark.parametrize("bad", BAD)
def test_from_the_environment_the_processor_warns_once_and_scores_with_the_other_sink(
    bad: str, env: pytest.MonkeyPatch, langfuse: JsonCaptureServer, caplog: pytest.LogCaptureFixture
) -> None:
    env.setenv(PHOENIX_VAR, bad)
    provider = TracerProvider()
    processor = ToolScoreSpanProcessor(None, meter_provider=MeterProvider(), logger_provider=LoggerProvider())
    _one_warning_naming(caplog, PHOENIX_VAR)
    assert processor.sinks is not None and [s.name for s in processor.sinks.sinks] == ["langfuse"]
    provider.add_span_processor(processor)
    run_scripted_agent(provider.get_tracer("t"), "weather_agent", "q", ["get_weather"])
    provider.shutdown()
    assert [s["value"] for r in langfuse.posted("/api/public/scores") for s in r.json][:1] == [1.0]


@pytest.mark.parametrize("variable", ["PHOENIX_COLLECTOR_ENDPOINT", PHOENIX_VAR])
def test_the_warning_names_the_variable_the_url_came_from(variable: str, env: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    env.setenv(variable, "http://localhost:60o6")
    ToolScoreSpanProcessor(None, meter_provider=MeterProvider(), logger_provider=LoggerProvider()).shutdown()
    _one_warning_naming(caplog, variable)


def test_a_bad_langfuse_base_url_is_the_same(env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    env.setenv("OTEL_TOOLSCORE_SINKS", "langfuse")
    env.setenv("LANGFUSE_BASE_URL", "http://[::1")
    processor = ToolScoreSpanProcessor(None, meter_provider=MeterProvider(), logger_provider=LoggerProvider())
    (line,) = _warnings(caplog)
    assert "LANGFUSE_BASE_URL" in line and processor.sinks is None
    processor.shutdown()


@pytest.mark.parametrize("bad", ["http://localhost:60o6", "http://[::1"])
def test_configure_and_install_warn_and_install(bad: str, env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    env.setenv(PHOENIX_VAR, bad)
    installed = configure(export=False, set_global=False)
    assert [s.name for s in installed.processor.sinks.sinks] == ["langfuse"]  # type: ignore[union-attr]
    installed.shutdown()
    _one_warning_naming(caplog, PHOENIX_VAR)
    caplog.clear()
    provider = TracerProvider()
    processor = install(provider)
    assert [s.name for s in processor.sinks.sinks] == ["langfuse"]  # type: ignore[union-attr]
    provider.shutdown()
    _one_warning_naming(caplog, PHOENIX_VAR)


@pytest.mark.parametrize("bad", BAD)
def test_as_arguments_they_fail_fast_naming_the_setting(bad: str, env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"^endpoint: ") as info:
        PhoenixSink(bad)
    assert "hunter2" not in str(info.value)
    with pytest.raises(ConfigError, match=r"^base_url: "):
        LangfuseSink(public_key="pk", secret_key="sk", base_url=bad, environ={})
    env.setenv(PHOENIX_VAR, bad)  # a sink the caller names is built strictly: the variable is named
    with pytest.raises(ConfigError, match=f"sink 'phoenix': {PHOENIX_VAR}: "):
        ToolScoreSpanProcessor(None, sinks=["phoenix"])


def test_good_urls_are_kept() -> None:
    for good in ("http://localhost:6006", "https://app.phoenix.arize.com/s/team", "http://[::1]:6006",
                 "http://user:pw@phoenix:6006/v1/traces"):
        sink = PhoenixSink(good)
        assert "pw" not in repr(sink) and "pw" not in sink.endpoint
        sink.shutdown()


def test_zero_code_installs_and_warns_once(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(
        """
        from opentelemetry import trace
        from otel_toolscore.scripted import run_scripted_agent
        provider = trace.get_tracer_provider()
        print("installed", type(getattr(provider, "_toolscore_processor", None)).__name__)
        run_scripted_agent(trace.get_tracer("app"), "weather_agent", "q", ["get_weather"])
        """
    ))
    with JsonCaptureServer(lambda request: Answer(202, {"message": "Accepted"})) as lf:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "PHOENIX_", "LANGFUSE_"))}
        env.update(OTEL_TOOLSCORE_EXPECTED_TOOL="get_weather", OTEL_TOOLSCORE_SINKS="phoenix,langfuse",
                   OTEL_TOOLSCORE_PHOENIX_ENDPOINT="http://localhost:60o6", LANGFUSE_BASE_URL=lf.url,
                   LANGFUSE_PUBLIC_KEY="pk", LANGFUSE_SECRET_KEY="sk", OTEL_TRACES_EXPORTER="none",
                   OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none", OTEL_SERVICE_NAME="zero-code-bad-url")
        out = subprocess.run([str(Path(sys.executable).parent / "opentelemetry-instrument"), sys.executable, str(app)],
                             env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert lf.wait_for(lambda: bool(lf.posted("/api/public/scores")), timeout=20)  # the other sink scored
    assert "installed ToolScoreSpanProcessor" in out.stdout
    assert "Traceback" not in out.stderr and "could not be installed" not in out.stderr
    assert [line for line in out.stderr.splitlines() if PHOENIX_VAR in line] != []
    assert sum(1 for line in out.stderr.splitlines() if "not started" in line) == 1


def test_serve_exits_2_with_one_line_when_the_sink_is_named(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_", "LANGFUSE_", "OPENAI_"))}
    env[PHOENIX_VAR] = "http://user:hunter2@localhost:60o6"
    out = subprocess.run([sys.executable, "-c", CODE, "serve", "--sinks", "phoenix", "--grpc-port", "0", "--http-port",
                          "0", "--no-export"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    (line,) = out.stderr.strip().splitlines()
    assert PHOENIX_VAR in line and "60o6" in line and "hunter2" not in line and "Traceback" not in out.stderr


def test_serve_starts_without_the_sink_when_it_comes_from_the_environment() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_", "LANGFUSE_", "OPENAI_"))}
    env.update({PHOENIX_VAR: "http://[::1", "OTEL_TOOLSCORE_SINKS": "phoenix"})
    rc, err = serve_until_listening("--grpc-port", "0", "--http-port", "0", "--no-export", env=env)
    assert rc == 0 and "Traceback" not in err
    assert sum(1 for line in err.splitlines() if PHOENIX_VAR in line) == 1
