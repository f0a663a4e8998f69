"""Bad configuration fails at start, with one clear message naming the key.

Covers ``OTEL_TOOLSCORE_*`` variables and constructor overrides (``Settings.from_env``, the
processor's keyword arguments) and expectation rules files (``load_rules``, ``OTEL_TOOLSCORE_RULES``):
unknown keys, wrong types, impossible limits, unreadable or invalid files. Plus property tests:
whatever the text, parsing either succeeds or raises the one documented error type.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_toolscore import ToolScoreSpanProcessor
from otel_toolscore.config import ConfigError, Settings
from otel_toolscore.online.expectations import RulesError, load_rules

pytestmark = pytest.mark.timeout(60)


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text.strip(), f"message is not one line: {text!r}"
    return text


# -- environment variables -------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["OTEL_TOOLSCORE_MAX_PENDING_TRACE", "OTEL_TOOLSCORE_EVENT", "OTEL_TOOLSCORE_FOO"])
def test_unknown_variable_names_the_key(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({key: "1"})
    assert key in _one_line(info.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "many"),
        ("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "1e3x"),
        ("OTEL_TOOLSCORE_ROOT_GRACE_MS", "1.5s"),
        ("OTEL_TOOLSCORE_TRACE_TIMEOUT_S", "soon"),
        ("OTEL_TOOLSCORE_EVENTS", "maybe"),
        ("OTEL_TOOLSCORE_METRICS", "2"),
        ("OTEL_TOOLSCORE_CAPTURE_CONTENT", "sometimes"),
        ("OTEL_TOOLSCORE_MAX_CONTENT_CHARS", "[1]"),
    ],
)
def test_wrong_type_names_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({key: value})
    assert key in _one_line(info.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "0"),
        ("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "-5"),
        ("OTEL_TOOLSCORE_MAX_SPANS_PER_TRACE", "0"),
        ("OTEL_TOOLSCORE_MAX_CALLS_PER_RUN", "-1"),
        ("OTEL_TOOLSCORE_MAX_CONTENT_CHARS", "-1"),
        ("OTEL_TOOLSCORE_ROOT_GRACE_MS", "-10"),
        ("OTEL_TOOLSCORE_TRACE_TIMEOUT_S", "0"),
        ("OTEL_TOOLSCORE_TRACE_TIMEOUT_S", "-1.5"),
        ("OTEL_TOOLSCORE_EMIT_QUEUE_SIZE", "0"),
        ("OTEL_TOOLSCORE_MAX_ATTRIBUTE_TOOLS", "0"),
        ("OTEL_TOOLSCORE_MAX_METRIC_AGENTS", "-1"),
        ("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "99999999999"),
    ],
)
def test_impossible_limit_names_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({key: value})
    assert key in _one_line(info.value)


def test_empty_expected_tool_order_names_the_key() -> None:
    # A model-level check (not a field's own) must still name the variable that caused it.
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"OTEL_TOOLSCORE_EXPECTED_TOOL_ORDER": " , "})
    assert "OTEL_TOOLSCORE_EXPECTED_TOOL_ORDER" in _one_line(info.value)


def test_processor_fails_at_construction_not_on_the_first_span(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "0")
    with pytest.raises(ConfigError, match="OTEL_TOOLSCORE_MAX_PENDING_TRACES"):
        ToolScoreSpanProcessor(None)


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"max_pending_traces": 0}, "max_pending_traces"),
        ({"trace_timeout_s": -1}, "trace_timeout_s"),
        ({"root_grace_ms": "long"}, "root_grace_ms"),
        ({"max_pending_trace": 5}, "max_pending_trace"),
    ],
)
def test_constructor_overrides_are_checked_the_same_way(overrides: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        ToolScoreSpanProcessor(None, **overrides)
    assert key in _one_line(info.value)


def test_valid_values_are_accepted() -> None:
    s = Settings.from_env(
        {
            "OTEL_TOOLSCORE_MAX_PENDING_TRACES": " 50 ",
            "OTEL_TOOLSCORE_EVENTS": "false",
            "OTEL_TOOLSCORE_TRACE_TIMEOUT_S": "2.5",
            "OTEL_TOOLSCORE_EXPECTED_TOOL_ORDER": "a, b,c",
            "OTHER_VARIABLE": "ignored",
        }
    )
    assert s.max_pending_traces == 50 and s.events is False and s.trace_timeout_s == 2.5
    assert s.expected_tool_order == ("a", "b", "c")


# -- rules files ----------------------------------------------------------------------------------
def test_missing_rules_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(RulesError) as info:
        load_rules(path)
    assert str(path) in _one_line(info.value)


def test_unreadable_rules_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "dir.yaml"
    path.mkdir()  # a directory cannot be read as a file, even by root
    with pytest.raises(RulesError) as info:
        load_rules(path)
    assert str(path) in _one_line(info.value)


def test_rules_from_environment_fail_at_processor_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TOOLSCORE_RULES", str(tmp_path / "missing.toml"))
    with pytest.raises(RulesError, match=r"missing\.toml"):
        ToolScoreSpanProcessor(None)


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("bad.yaml", "rules: [\n  - {name: a, expected_tool: x\n", "bad.yaml"),
        ("bad.toml", "[[rules]\nexpected_tool = 'x'\n", "bad.toml"),
        ("top.yaml", "rulez:\n  - expected_tool: x\n", "rulez"),
        ("list.yaml", "rules: {expected_tool: x}\n", "list"),
        ("scalar.yaml", "rules:\n  - just a string\n", "rule #1"),
        ("unknown_key.yaml", "rules:\n  - name: r1\n    expected_tol: x\n", "expected_tol"),
        ("no_expectation.yaml", "rules:\n  - name: r1\n    agent_name: a\n", "r1"),
        ("regex.yaml", "rules:\n  - name: r2\n    query_regex: '(unclosed'\n    expected_tool: x\n", "query_regex"),
        ("empty_order.yaml", "rules:\n  - name: r3\n    expected_tool_order: []\n", "r3"),
        ("bad_match.yaml", "rules:\n  - name: r4\n    expected_tool: x\n    match: sideways\n", "match"),
        ("bad_type.toml", "[[rules]]\nname = 'r5'\nexpected_tool = 'x'\nstrict_mode = 'very'\n", "strict_mode"),
    ],
)
def test_invalid_rules_name_file_and_key(tmp_path: Path, name: str, text: str, needle: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(RulesError) as info:
        load_rules(path)
    message = str(info.value)
    assert str(path) in message
    assert needle in message


def test_valid_rules_load(tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text("[[rules]]\nname = 'w'\nagent_name = 'weather'\nexpected_tool = 'get_weather'\n")
    (rule,) = load_rules(path)
    assert rule.expected_tool == "get_weather" and rule.agent_name == "weather"


# -- property tests: any text either parses or raises the documented error -----------------------
_KEYS = sorted(Settings.field_env_name(n) for n in Settings.model_fields)
_text = st.text(alphabet=string.printable, max_size=40)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(env=st.dictionaries(st.sampled_from([*_KEYS, "OTEL_TOOLSCORE_X", "OTEL_TOOLSCORE_"]), _text, max_size=5))
def test_settings_from_any_environment_parse_or_raise_config_error(env: dict[str, str]) -> None:
    try:
        Settings.from_env(env)
    except ConfigError as exc:
        message = _one_line(exc)
        assert any(k in message for k in env), message  # the message names one of the keys given


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.floats(allow_nan=False), _text)
_value = st.recursive(_scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3), max_leaves=8)
_rule = st.dictionaries(
    st.sampled_from(
        ["name", "agent_name", "query_regex", "attributes", "expected_tool", "expected_tool_order", "strict_mode",
         "match", "expected_arguments", "args_match", "unknown"]
    ),
    _value,
    max_size=5,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=st.one_of(st.lists(_rule, max_size=3), st.fixed_dictionaries({"rules": st.lists(_rule, max_size=3)}), _value))
def test_any_rules_document_loads_or_raises_rules_error(tmp_path: Path, doc: object) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(yaml.safe_dump(doc))
    try:
        rules = load_rules(path)
    except RulesError as exc:
        assert str(path) in str(exc)
    else:
        assert all(r.expected_tool or r.expected_tool_order for r in rules)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200), suffix=st.sampled_from([".yaml", ".yml", ".toml"]))
def test_any_rules_text_loads_or_raises_rules_error(tmp_path: Path, text: str, suffix: str) -> None:
    path = tmp_path / f"fuzz{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_rules(path)
    except RulesError as exc:
        assert str(path) in str(exc)
