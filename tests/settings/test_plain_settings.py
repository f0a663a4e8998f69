"""The settings, the expectations and the scorer's verdict are plain classes (the import path): they
keep the face they had as pydantic models — keyword construction, checks that name the key, frozen
values, equality, ``model_fields`` / ``model_copy`` / ``model_fields_set`` — and pydantic loads only
with the Mastra-shaped result, the data model, the judge or the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from otel_toolscore import Expectation, ToolScoreSpanProcessor
from otel_toolscore.envconfig import EnvSettings, SecretStr, UnknownSetting, validation_message
from otel_toolscore.expectations import RulesError, load_rules
from otel_toolscore.judge import JudgeSettings
from otel_toolscore.run_records import CallRecord, RunRecord
from otel_toolscore.scorers.code import CodeVerdict, ToolCallAccuracyCodeScorer
from otel_toolscore.service.settings import ServiceConfig, ServiceSettings, load_config
from otel_toolscore.settings import ConfigError, Settings
from otel_toolscore.sinks._settings import LangfuseSinkSettings, PhoenixSinkSettings
from otel_toolscore.telemetry import RunRef

SETTINGS_CLASSES: list[type[EnvSettings]] = [
    Settings, JudgeSettings, ServiceSettings, PhoenixSinkSettings, LangfuseSinkSettings
]


# -- settings --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", SETTINGS_CLASSES, ids=lambda c: c.__name__)
def test_every_field_is_described_and_its_default_passes_its_own_checks(cls: type[EnvSettings]) -> None:
    assert cls.model_fields, cls
    defaults = cls()
    for name, spec in cls.model_fields.items():
        assert spec.name == name and spec.description.strip(), name
        assert spec.validate(spec.default) == spec.default, name
        assert getattr(defaults, name) == spec.default, name
        assert cls.env_name(name) == cls.env_prefix + name.upper()
    assert defaults == cls() and hash(defaults) == hash(cls()) and defaults.model_fields_set == frozenset()


def test_settings_are_frozen_and_copied_with_checked_updates() -> None:
    s = Settings(max_pending_traces=50)
    with pytest.raises(AttributeError, match="frozen"):
        s.max_pending_traces = 5  # type: ignore[misc]
    copy = s.model_copy(update={"events": False})
    assert (copy.max_pending_traces, copy.events, s.events) == (50, False, True)
    assert copy.model_fields_set == {"max_pending_traces", "events"} and copy != s
    with pytest.raises(ConfigError, match=r"max_calls_per_run.*at least 1"):
        s.model_copy(update={"max_calls_per_run": 0})
    with pytest.raises(ConfigError, match="unknown setting 'max_pending_trace'"):
        Settings(max_pending_trace=5)
    assert s.model_dump()["max_pending_traces"] == 50 and "Settings(" in repr(s)


def test_overrides_next_to_settings_are_checked_too() -> None:
    base = Settings(max_calls_per_run=10)
    with pytest.raises(ConfigError, match="max_pending_traces"):
        ToolScoreSpanProcessor(None, settings=base, max_pending_traces=0)
    processor = ToolScoreSpanProcessor(None, settings=base, max_pending_traces=7)
    try:
        assert (processor.settings.max_pending_traces, processor.settings.max_calls_per_run) == (7, 10)
    finally:
        processor.shutdown()


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("max_pending_traces", "50", 50),  # a config file's or a flag's text
        ("max_pending_traces", " 50 ", 50),
        ("max_pending_traces", "2.0", 2),
        ("max_pending_traces", 2.0, 2),
        ("events", "yes", True),
        ("events", "off", False),
        ("events", 0, False),
        ("expected_tool_order", ["a", "b"], ("a", "b")),
        ("sinks", "Phoenix, langfuse", ("phoenix", "langfuse")),
    ],
)
def test_explicit_values_are_read_as_before(key: str, value: Any, expected: Any) -> None:
    assert getattr(Settings.from_env({}, **{key: value}), key) == expected


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("max_pending_traces", "2.5", "whole number"),
        ("max_pending_traces", True, "whole number"),
        ("max_pending_traces", [1], "whole number"),
        ("events", "maybe", "`true` or `false`"),
        ("events", 2, "`true` or `false`"),
        ("expected_tool", 5, "text"),
        ("expected_tool_order", "a,b", "list of names"),
        ("expected_tool_order", [], "must not be empty"),
        ("trace_timeout_ms", 0, "must be more than 0"),
        ("max_attribute_tools", 5000, "at most 4096"),
    ],
)
def test_explicit_values_that_cannot_be_used_fail_naming_the_key(key: str, value: Any, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({}, **{key: value})
    assert f"invalid setting {key}" in str(info.value) and reason in str(info.value)


@pytest.mark.parametrize(
    ("cls", "values", "reason"),
    [
        (Settings, {"max_pending_traces": "lots"}, "is not a whole number"),
        (Settings, {"max_pending_traces": 2.5}, "is not a whole number"),
        (Settings, {"max_pending_traces": [1]}, "must be a whole number"),
        (Settings, {"max_calls_per_run": 0}, "must be at least 1"),
        (Settings, {"trace_timeout_ms": 0}, "must be more than 0"),
        (JudgeSettings, {"ratio": "half"}, "is not a number"),
        (JudgeSettings, {"ratio": 10**400}, "must be a finite number"),
        (ServiceSettings, {"export_protocol": "udp"}, "must be one of 'grpc' or 'http/protobuf'"),
    ],
)
def test_reasons_are_in_our_words(cls: type[EnvSettings], values: dict[str, Any], reason: str) -> None:
    """The wording the command line shows (no pydantic phrases), written by the plain checks."""
    with pytest.raises(ConfigError) as info:
        cls(**values)
    assert validation_message(info.value) == reason
    assert str(info.value) == f"invalid setting {next(iter(values))}: {reason}"


def test_unknown_keys_get_the_closest_name() -> None:
    with pytest.raises(UnknownSetting) as info:
        Settings(max_call_per_run=5)
    assert str(info.value) == "unknown setting 'max_call_per_run' (did you mean max_calls_per_run?)"
    assert validation_message(info.value) == "unknown key (did you mean max_calls_per_run?)"
    with pytest.raises(ConfigError, match=r"^unknown setting 'zzz'$"):
        Settings.from_env({}, zzz=1)


def test_judge_numbers_and_secrets() -> None:
    s = JudgeSettings(api_key="sk-very-secret", ratio="0.5", max_per_minute=None)
    assert isinstance(s.api_key, SecretStr) and s.api_key.get_secret_value() == "sk-very-secret"
    assert "sk-very-secret" not in repr(s) and "sk-very-secret" not in str(s.api_key)
    assert s.ratio == 0.5 and s.max_per_minute is None
    assert s == JudgeSettings(api_key=SecretStr("sk-very-secret"), ratio=0.5, max_per_minute=None)
    for bad in ("nan", float("inf"), True):
        with pytest.raises(ConfigError, match="ratio"):
            JudgeSettings(ratio=bad)


def test_service_config_file_values_and_literal_choices(tmp_path: Path) -> None:
    path = tmp_path / "service.yaml"
    path.write_text("service:\n  grpc_port: '0'\n  export_protocol: grpc\n  forward: yes\nscoring:\n  events: false\n")
    cfg = load_config(config_file=path, environ={})
    assert isinstance(cfg, ServiceConfig)
    assert (cfg.service.grpc_port, cfg.service.export_protocol, cfg.service.forward, cfg.scoring.events) == (
        0, "grpc", True, False
    )
    assert cfg == load_config(config_file=path, environ={})
    path.write_text("service:\n  export_protocol: http/json\n")
    with pytest.raises(ConfigError, match=r"service\.export_protocol in .*service\.yaml.*one of 'grpc' or 'http/protobuf'"):
        load_config(config_file=path, environ={})


# -- expectations ----------------------------------------------------------------------------------------
def test_expectations_are_frozen_values() -> None:
    a = Expectation(name="r", agent_name="weather", expected_tool_order=["search", "get_weather"],
                    attributes={"tier": "gold"})
    b = Expectation(name="r", agent_name="weather", expected_tool_order=("search", "get_weather"),
                    attributes={"tier": "gold"})
    assert a == b and hash(a) == hash(b) and a.expected_tool_order == ("search", "get_weather")
    assert a != Expectation(name="r", agent_name="weather", expected_tool_order=("search",))
    assert a.scorer is a.scorer and a.scorer.expected_tool_order == ["search", "get_weather"]
    assert a.scorer_with_framework_calls.include_framework_calls and a.scorer_with_framework_calls is a.scorer_with_framework_calls
    with pytest.raises(AttributeError, match="frozen"):
        a.expected_tool = "x"  # type: ignore[misc]
    assert "expected_tool_order=('search', 'get_weather')" in repr(a)
    renamed = a.model_copy(update={"name": "command line"})
    assert renamed.name == "command line" and renamed.expected_tool_order == a.expected_tool_order and a.name == "r"
    with pytest.raises(ValueError, match="match"):
        a.model_copy(update={"match": "sideways"})


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"expected_tool": 5}, "expected_tool"),
        ({"expected_tool": "t", "strict_mode": "very"}, "strict_mode"),
        ({"expected_tool": "t", "match": "sideways"}, "match"),
        ({"expected_tool": "t", "args_match": "fuzzy"}, "args_match"),
        ({"expected_tool_order": "a,b"}, "expected_tool_order"),
        ({"expected_tool": "t", "attributes": {"k": [1]}}, "attributes.k"),
        ({"expected_tool": "t", "attributes": ["k"]}, "attributes"),
        ({"expected_tool": "t", "expected_arguments": {1: 2}, "args_match": "exact"}, "expected_arguments"),
        ({"agent_name": "a"}, "expectedTool or expectedToolOrder"),
        ({"expected_tool_order": []}, "must not be empty"),
        ({"query_regex": "(unclosed", "expected_tool": "t"}, "does not compile"),
    ],
)
def test_an_expectation_that_cannot_be_used_names_the_field(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError) as info:
        Expectation(**kwargs)
    assert needle in str(info.value)


def test_rules_file_names_the_rule_and_the_unknown_key(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    for line, message in {
        "strict: true": r"rules\.yaml: rule #1 \(r1\): strict: unknown key \(did you mean strict_mode\?\)",
        "zzz: true": r"rule #1 \(r1\): zzz: unknown key \(known: name, agent_name, ",
        "match: sideways": "match: must be one of 'ordered', 'unordered', 'subset' or 'superset'",
    }.items():
        path.write_text(f"rules:\n  - name: r1\n    expected_tool: x\n    {line}\n")
        with pytest.raises(RulesError, match=message):
            load_rules(path)
    path.write_text("rules:\n  - name: r2\n    expected_tool: x\n    strict_mode: yes\n    match: subset\n")
    (rule,) = load_rules(path)
    assert rule.strict_mode is True and rule.match == "subset"


# -- the verdict and the run's reference --------------------------------------------------------------
def test_code_verdict_and_run_ref_are_plain_values() -> None:
    run = RunRecord("r1", tool_calls=[CallRecord("get_weather")])
    scorer = ToolCallAccuracyCodeScorer("get_weather")
    v = scorer.verdict(run)  # type: ignore[arg-type]
    assert isinstance(v, CodeVerdict) and v == scorer.verdict(run)  # type: ignore[arg-type]
    assert (v.score, v.passed, v.label, v.actual_tools) == (1.0, True, "pass", ["get_weather"])
    assert "score=1.0" in repr(v) and v.summary() == "pass: expected get_weather (lenient); called get_weather"
    ref = RunRef(trace_id=1, span_id=2, agent_name="a")
    assert ref == RunRef(1, 2, "a") and hash(ref) == hash(RunRef(1, 2, "a")) and ref.sampled is True
    with pytest.raises(AttributeError):
        ref.trace_id = 3  # type: ignore[misc]
    assert ref.span_context().span_id == 2


def test_the_result_models_load_with_the_first_result() -> None:
    code = (
        "import sys\n"
        "from otel_toolscore.run_records import CallRecord, RunRecord\n"
        "from otel_toolscore.scorers.code import ToolCallAccuracyCodeScorer\n"
        "run = RunRecord('r1', tool_calls=[CallRecord('search'), CallRecord('get_weather')])\n"
        "scorer = ToolCallAccuracyCodeScorer(expected_tool_order=['search', 'get_weather'], strict_mode=True)\n"
        "verdict = scorer.verdict(run)\n"
        "print('pydantic' in sys.modules)\n"
        "result = scorer.result(run, verdict)\n"
        "print('pydantic' in sys.modules, result.score, result.passed, [m.outcome for m in result.explanation])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split("\n")[:2] == ["False", "True 1.0 True ['matched', 'matched']"], out.stdout
