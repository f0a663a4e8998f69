"""``OTEL_TOOLSCORE_JUDGE_*`` settings, and enabling the judge with three of them end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore import Expectation, Judge, ToolScoreSpanProcessor
from otel_toolscore.judge import JudgeSettings, judge_from_env
from otel_toolscore.scripted import ScriptedCall, run_scripted_agent
from otel_toolscore.settings import ConfigError, Settings
from tests.support.openai_server import OpenAITestServer, echo_judge

pytestmark = pytest.mark.timeout(60)


def test_defaults_are_production_defaults() -> None:
    s = JudgeSettings.from_env({})
    assert not s.enabled
    assert (s.ratio, s.max_per_minute, s.max_tokens_per_hour, s.workers, s.queue_size) == (0.05, 60, 200_000, 4, 1_000)
    assert s.always_when_code_fails and s.always_when_new_sequence and s.always_when_flagged
    assert s.redact and not s.include_arguments and not s.include_results
    assert s.carrier_span and s.pass_threshold == 1.0


def test_every_field_reads_from_its_variable() -> None:
    env = {
        "OTEL_TOOLSCORE_JUDGE_MODEL": "gpt-4o-mini",
        "OTEL_TOOLSCORE_JUDGE_RATIO": "0.25",
        "OTEL_TOOLSCORE_JUDGE_MAX_PER_MINUTE": "none",
        "OTEL_TOOLSCORE_JUDGE_MAX_TOKENS_PER_HOUR": "50000",
        "OTEL_TOOLSCORE_JUDGE_WORKERS": "8",
        "OTEL_TOOLSCORE_JUDGE_QUEUE_SIZE": "",  # empty: the default
        "OTEL_TOOLSCORE_JUDGE_INCLUDE_ARGUMENTS": "true",
        "OTEL_TOOLSCORE_JUDGE_ALWAYS_WHEN_NEW_SEQUENCE": "false",
        "OTEL_TOOLSCORE_JUDGE_TOOLS": "get_weather, search_web",
        "OTEL_TOOLSCORE_JUDGE_API_KEY": "sk-secret-value",
    }
    s = JudgeSettings.from_env(env)
    assert s.enabled and s.model == "gpt-4o-mini"
    assert s.ratio == 0.25 and s.max_per_minute is None and s.max_tokens_per_hour == 50_000
    assert s.workers == 8 and s.queue_size == 1_000
    assert s.include_arguments and not s.always_when_new_sequence
    assert s.tools == ("get_weather", "search_web")
    assert "sk-secret-value" not in repr(s)
    assert JudgeSettings.from_env(env, ratio=0.5).ratio == 0.5  # arguments win


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "otel_toolscore.config"]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("OTEL_TOOLSCORE_JUDGE_RATOI", "0.1"),
        ("OTEL_TOOLSCORE_JUDGE_RATIO", "2"),
        ("OTEL_TOOLSCORE_JUDGE_WORKERS", "many"),
        ("OTEL_TOOLSCORE_JUDGE_REDACT", "no"),
        ("OTEL_TOOLSCORE_JUDGE_TIMEOUT_MS", "30s"),
        ("OTEL_TOOLSCORE_JUDGE_MAX_PER_MINUTE", "0"),
    ],
)
def test_unknown_or_invalid_variables_are_warned_about_and_ignored(
    caplog: pytest.LogCaptureFixture, key: str, value: str
) -> None:
    assert JudgeSettings.from_env({key: value}) == JudgeSettings()
    (message,) = _warnings(caplog)
    assert key in message and "ignored" in message


def test_explicit_arguments_fail_fast() -> None:
    with pytest.raises(ConfigError, match="unknown setting 'ratoi'"):
        JudgeSettings.from_env({}, ratoi=0.1)
    with pytest.raises(ConfigError, match="ratio"):
        JudgeSettings.from_env({}, ratio=2)


def test_a_typo_is_warned_about_even_when_the_judge_is_off(caplog: pytest.LogCaptureFixture) -> None:
    assert judge_from_env({"OTEL_TOOLSCORE_JUDGE_MODLE": "x"}) is None
    (message,) = _warnings(caplog)
    assert "OTEL_TOOLSCORE_JUDGE_MODLE" in message and "OTEL_TOOLSCORE_JUDGE_MODEL" in message


def test_an_api_key_is_never_repeated_in_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    JudgeSettings.from_env({"OTEL_TOOLSCORE_JUDGE_API_KY": "sk-very-secret"})
    (message,) = _warnings(caplog)
    assert "OTEL_TOOLSCORE_JUDGE_API_KY" in message and "sk-very-secret" not in message


def test_seconds_names_still_work(caplog: pytest.LogCaptureFixture) -> None:
    s = JudgeSettings.from_env({"OTEL_TOOLSCORE_JUDGE_TIMEOUT_S": "12", "OTEL_TOOLSCORE_JUDGE_DEADLINE_S": "20.5",
                                "OTEL_TOOLSCORE_JUDGE_CIRCUIT_COOLDOWN_S": "1", "OTEL_TOOLSCORE_JUDGE_SHUTDOWN_TIMEOUT_S": "0"})
    assert (s.timeout_ms, s.deadline_ms, s.circuit_cooldown_ms, s.shutdown_timeout_ms) == (12_000, 20_500, 1_000, 0)
    assert len([m for m in _warnings(caplog) if "is deprecated" in m]) == 4
    with pytest.warns(DeprecationWarning, match="timeout_s"):
        assert JudgeSettings.from_env({}, timeout_s=3).timeout_ms == 3000


def test_a_bad_endpoint_turns_the_judge_off_rather_than_use_another(caplog: pytest.LogCaptureFixture) -> None:
    env = {"OTEL_TOOLSCORE_JUDGE_MODEL": "m", "OTEL_TOOLSCORE_JUDGE_BASE_URL": "127.0.0.1:8080/v1",
           "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-x"}
    assert not JudgeSettings.from_env(env).enabled
    assert judge_from_env(env) is None
    assert any("OTEL_TOOLSCORE_JUDGE_BASE_URL" in m and "the judge is off" in m for m in _warnings(caplog))
    caplog.clear()
    assert judge_from_env({"OTEL_TOOLSCORE_JUDGE_MODEL": "m", "OPENAI_BASE_URL": "file:///etc/passwd"}) is None
    assert any("OPENAI_BASE_URL" in m and "the judge is off" in m for m in _warnings(caplog))
    with pytest.raises(ConfigError, match="OTEL_TOOLSCORE_JUDGE_BASE_URL"):  # asked for in code: fails
        JudgeSettings.from_env(env, model="m")


def test_processor_settings_leave_judge_variables_to_the_judge() -> None:
    env = {"OTEL_TOOLSCORE_JUDGE_MODEL": "m", "OTEL_TOOLSCORE_MAX_PENDING_TRACES": "10"}
    assert Settings.from_env(env).max_pending_traces == 10
    assert JudgeSettings.from_env(env).model == "m"


def test_no_model_means_no_judge() -> None:
    assert judge_from_env({"OTEL_TOOLSCORE_JUDGE_RATIO": "0.5"}) is None
    with pytest.raises(ConfigError, match="OTEL_TOOLSCORE_JUDGE_MODEL"):
        Judge.from_env({})


def test_three_settings_enable_judging_end_to_end() -> None:
    with OpenAITestServer(echo_judge()) as server:
        env = {
            "OTEL_TOOLSCORE_JUDGE_MODEL": "judge-model",
            "OTEL_TOOLSCORE_JUDGE_BASE_URL": server.base_url,
            "OTEL_TOOLSCORE_JUDGE_API_KEY": "sk-judge-key",
        }
        judge = judge_from_env(env, tracer_provider=(provider := TracerProvider()))
        assert judge is not None
        spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
        lp = LoggerProvider()
        lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
        processor = ToolScoreSpanProcessor(
            SimpleSpanProcessor(spans),
            expectations=[Expectation(agent_name="weather_agent", expected_tool="get_weather")],
            judge=judge,
            meter_provider=MeterProvider(),
            logger_provider=lp,
        )
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("test")
        # Default sampling: a code failure is always judged; a passing run with a sequence already
        # seen is judged only if its trace id falls in the 5 % ratio.
        run_scripted_agent(tracer, "weather_agent", "Weather in Paris?", [ScriptedCall("search_web")], "?")
        assert processor.force_flush(10_000)
        (request,) = server.requests
        assert request.model == "judge-model"
        assert request.headers["authorization"] == "Bearer sk-judge-key"
        assert request.response_format["type"] == "json_schema"
        events = [r.log_record for r in logs.get_finished_logs()
                  if r.log_record.attributes.get("gen_ai.evaluation.name") == "tool_call_accuracy_llm"]
        assert len(events) == 1 and events[0].attributes["toolscore.judge.sampled_by"] in ("code_fail", "ratio")
        assert [s.name for s in spans.get_finished_spans()].count("evaluate tool_call_accuracy_llm") == 1
        provider.shutdown()
    assert judge.stats().requests == {"ok": 1}


def test_openai_variables_are_the_fallback_and_options_reach_the_request(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "get_weather", "description": "Current weather for a city"}]))
    yaml_tools = tmp_path / "tools.yaml"
    yaml_tools.write_text("tools:\n  - name: book_flight\n    description: Books a flight\n")
    with OpenAITestServer(echo_judge()) as server:
        for path, expected in ((tools, "Current weather for a city"), (yaml_tools, "Books a flight")):
            server.reset()
            env = {
                "OPENAI_BASE_URL": server.base_url,
                "OPENAI_API_KEY": "sk-openai-key",
                "OTEL_TOOLSCORE_JUDGE_MODEL": "judge-model",
                "OTEL_TOOLSCORE_JUDGE_TOOLS_FILE": str(path),
                "OTEL_TOOLSCORE_JUDGE_MAX_OUTPUT_TOKENS": "300",
                "OTEL_TOOLSCORE_JUDGE_INCLUDE_ARGUMENTS": "true",
            }
            judge = Judge.from_env(env)
            from otel_toolscore import AgentRun, ToolCall

            run = AgentRun(run_id="r", user_query="Weather?", final_output="Sunny",
                           tool_calls=[ToolCall(name="get_weather", arguments={"city": "Oslo"})])
            result = judge.scorer.run(run)
            assert result.score == 1.0
            (request,) = server.requests
            assert request.headers["authorization"] == "Bearer sk-openai-key"
            assert request.json["max_tokens"] == 300
            assert expected in request.prompt_text
            assert "Oslo" in request.prompt_text
            judge.shutdown()


def test_bad_tools_file_is_ignored_from_the_environment_and_refused_in_code(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bad = tmp_path / "tools.json"
    bad.write_text('{"tools": 3}')
    for path in (bad, tmp_path / "none.json"):
        caplog.clear()
        settings = JudgeSettings.from_env({"OTEL_TOOLSCORE_JUDGE_MODEL": "m", "OTEL_TOOLSCORE_JUDGE_TOOLS_FILE": str(path)})
        assert settings.enabled and settings.tools_file is None
        (message,) = _warnings(caplog)
        assert "OTEL_TOOLSCORE_JUDGE_TOOLS_FILE" in message and path.name in message
    with pytest.raises(ConfigError, match=r"tools\.json"):
        Judge.from_env({"OTEL_TOOLSCORE_JUDGE_MODEL": "m"}, tools_file=str(bad))
    with pytest.raises(ConfigError, match="cannot read"):
        Judge.from_env({"OTEL_TOOLSCORE_JUDGE_MODEL": "m"}, tools_file=str(tmp_path / "none.json"))
