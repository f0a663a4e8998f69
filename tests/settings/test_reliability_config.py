"""Bad configuration: what the environment says is warned about and ignored; explicit arguments fail fast.

``OTEL_TOOLSCORE_*`` variables follow the OpenTelemetry environment specification: an unknown
variable or a value that cannot be used logs one warning naming the variable and the default applies
(under ``opentelemetry-instrument`` a typo must never turn scoring off). Booleans are only
``true``/``false`` (any case); durations are integer milliseconds, the old seconds names still work
with a deprecation warning. Constructor overrides (``Settings.from_env``, the processor's keyword
arguments) and rules files given in code fail at once naming the key or the file. Plus property
tests: whatever the environment, reading it never raises.
"""

from __future__ import annotations

import logging
import string
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from otel_toolscore import ToolScoreSpanProcessor
from otel_toolscore.expectations import RulesError, load_rules
from otel_toolscore.settings import ConfigError, Settings

pytestmark = pytest.mark.timeout(60)

DEFAULTS = Settings()


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text.strip(), f"message is not one line: {text!r}"
    return text


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "otel_toolscore.config" and r.levelno == logging.WARNING]


# -- environment variables: warned about and ignored -------------------------------------------------
@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("OTEL_TOOLSCORE_MAX_PENDING_TRACE", "OTEL_TOOLSCORE_MAX_PENDING_TRACES"),
        ("OTEL_TOOLSCORE_EVENT", "OTEL_TOOLSCORE_EVENTS"),
        ("OTEL_TOOLSCORE_FOO", None),
    ],
)
def test_unknown_variable_is_warned_about_and_ignored(caplog: pytest.LogCaptureFixture, key: str, hint: str | None) -> None:
    assert Settings.from_env({key: "1"}) == DEFAULTS
    (message,) = _warnings(caplog)
    assert key in message and "ignored" in message
    if hint:
        assert f"did you mean {hint}?" in message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "many"),
        ("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "1e3x"),
        ("OTEL_TOOLSCORE_ROOT_GRACE_MS", "1.5s"),
        ("OTEL_TOOLSCORE_ROOT_GRACE_MS", "2.5"),  # durations are integer milliseconds
        ("OTEL_TOOLSCORE_TRACE_TIMEOUT_MS", "soon"),
        ("OTEL_TOOLSCORE_EVENTS", "maybe"),
        ("OTEL_TOOLSCORE_METRICS", "2"),
        ("OTEL_TOOLSCORE_CAPTURE_CONTENT", "sometimes"),
        ("OTEL_TOOLSCORE_MAX_CONTENT_CHARS", "[1]"),
        ("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "0"),
        ("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "-5"),
        ("OTEL_TOOLSCORE_MAX_SPANS_PER_TRACE", "0"),
        ("OTEL_TOOLSCORE_MAX_CALLS_PER_RUN", "-1"),
        ("OTEL_TOOLSCORE_MAX_CONTENT_CHARS", "-1"),
        ("OTEL_TOOLSCORE_ROOT_GRACE_MS", "-10"),
        ("OTEL_TOOLSCORE_TRACE_TIMEOUT_MS", "0"),
        ("OTEL_TOOLSCORE_TRACE_TIMEOUT_MS", "-1500"),
        ("OTEL_TOOLSCORE_EMIT_QUEUE_SIZE", "0"),
        ("OTEL_TOOLSCORE_MAX_ATTRIBUTE_TOOLS", "0"),
        ("OTEL_TOOLSCORE_MAX_METRIC_AGENTS", "-1"),
        ("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "99999999999"),
        ("OTEL_TOOLSCORE_EXPECTED_TOOL_ORDER", " , "),  # a model-level check names the variable too
    ],
)
def test_bad_value_is_warned_about_and_the_default_applies(caplog: pytest.LogCaptureFixture, key: str, value: str) -> None:
    assert Settings.from_env({key: value}) == DEFAULTS
    (message,) = _warnings(caplog)
    assert key in message and "ignored" in message and "default" in message
    assert "\n" not in message


def test_one_bad_value_leaves_the_others_in_force(caplog: pytest.LogCaptureFixture) -> None:
    s = Settings.from_env({"OTEL_TOOLSCORE_MAX_PENDING_TRACES": "lots", "OTEL_TOOLSCORE_MAX_CALLS_PER_RUN": "50",
                           "OTEL_TOOLSCORE_EXPECTED_TOOL": "get_weather"})
    assert (s.max_pending_traces, s.max_calls_per_run, s.expected_tool) == (DEFAULTS.max_pending_traces, 50, "get_weather")
    assert len(_warnings(caplog)) == 1


@pytest.mark.parametrize(("text", "value"), [("true", True), ("TRUE", True), ("True", True), ("false", False),
                                             ("FALSE", False), (" false ", False)])
def test_booleans_are_true_or_false_in_any_case(text: str, value: bool) -> None:
    assert Settings.from_env({"OTEL_TOOLSCORE_STRICT_MODE": text}).strict_mode is value
    assert Settings.from_env({"OTEL_TOOLSCORE_EVENTS": text}).events is value


@pytest.mark.parametrize("text", ["1", "yes", "on", "y", "t", "0", "no", "off", "enabled"])
def test_no_other_word_is_a_boolean(caplog: pytest.LogCaptureFixture, text: str) -> None:
    # Only `true` is true (OpenTelemetry): `1`/`yes` are not; the default stays, whichever it is.
    assert Settings.from_env({"OTEL_TOOLSCORE_STRICT_MODE": text}).strict_mode is False
    assert Settings.from_env({"OTEL_TOOLSCORE_EVENTS": text}).events is True
    assert all("a boolean is `true` or `false`" in m for m in _warnings(caplog)) and len(_warnings(caplog)) == 2


def test_empty_variable_is_unset() -> None:
    env = {Settings.env_name(n): "  " for n in Settings.model_fields}
    assert Settings.from_env(env) == DEFAULTS


def test_durations_are_milliseconds_and_the_seconds_name_still_works(caplog: pytest.LogCaptureFixture) -> None:
    assert Settings.from_env({"OTEL_TOOLSCORE_TRACE_TIMEOUT_MS": "2500"}).trace_timeout_ms == 2500
    assert _warnings(caplog) == []
    assert Settings.from_env({"OTEL_TOOLSCORE_TRACE_TIMEOUT_S": "2.5"}).trace_timeout_ms == 2500
    (message,) = _warnings(caplog)
    assert "OTEL_TOOLSCORE_TRACE_TIMEOUT_S is deprecated" in message and "OTEL_TOOLSCORE_TRACE_TIMEOUT_MS" in message
    caplog.clear()
    both = {"OTEL_TOOLSCORE_TRACE_TIMEOUT_S": "9", "OTEL_TOOLSCORE_TRACE_TIMEOUT_MS": "1200"}
    assert Settings.from_env(both).trace_timeout_ms == 1200  # the new name wins
    assert any("OTEL_TOOLSCORE_TRACE_TIMEOUT_S is deprecated and ignored" in m for m in _warnings(caplog))
    caplog.clear()
    assert Settings.from_env({"OTEL_TOOLSCORE_TRACE_TIMEOUT_S": "soon"}) == DEFAULTS
    assert any("OTEL_TOOLSCORE_TRACE_TIMEOUT_S='soon' is ignored" in m for m in _warnings(caplog))


def test_the_seconds_keyword_still_works_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match="trace_timeout_s.*trace_timeout_ms"):
        assert Settings.from_env({}, trace_timeout_s=2.5).trace_timeout_ms == 2500
    with pytest.warns(DeprecationWarning):
        assert ToolScoreSpanProcessor(None, trace_timeout_s=1).settings.trace_timeout_ms == 1000
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigError, match="trace_timeout_s"):
        Settings.from_env({}, trace_timeout_s="soon")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Settings.from_env({}, trace_timeout_ms=700).trace_timeout_ms == 700


def test_processor_starts_whatever_the_environment_says(monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "0")
    monkeypatch.setenv("OTEL_TOOLSCORE_EVENTS", "yes")
    monkeypatch.setenv("OTEL_TOOLSCORE_MAX_PENDING_TRACE", "5")
    processor = ToolScoreSpanProcessor(None)
    try:
        assert processor.settings == DEFAULTS
        assert {k for k in ("OTEL_TOOLSCORE_MAX_PENDING_TRACES", "OTEL_TOOLSCORE_EVENTS", "OTEL_TOOLSCORE_MAX_PENDING_TRACE")
                if any(k in m for m in _warnings(caplog))} == {"OTEL_TOOLSCORE_MAX_PENDING_TRACES", "OTEL_TOOLSCORE_EVENTS",
                                                              "OTEL_TOOLSCORE_MAX_PENDING_TRACE"}
    finally:
        processor.shutdown()


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"max_pending_traces": 0}, "max_pending_traces"),
        ({"trace_timeout_ms": -1}, "trace_timeout_ms"),
        ({"root_grace_ms": "long"}, "root_grace_ms"),
        ({"max_pending_trace": 5}, "max_pending_trace"),
        ({"events": "maybe"}, "events"),
    ],
)
def test_constructor_overrides_fail_fast(overrides: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        ToolScoreSpanProcessor(None, **overrides)
    assert key in _one_line(info.value)


def test_valid_values_are_accepted() -> None:
    s = Settings.from_env(
        {
            "OTEL_TOOLSCORE_MAX_PENDING_TRACES": " 50 ",
            "OTEL_TOOLSCORE_EVENTS": "false",
            "OTEL_TOOLSCORE_TRACE_TIMEOUT_MS": "2500",
            "OTEL_TOOLSCORE_EXPECTED_TOOL_ORDER": "a, b,c",
            "OTHER_VARIABLE": "ignored",
        }
    )
    assert s.max_pending_traces == 50 and s.events is False and s.trace_timeout_ms == 2500
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


def test_rules_file_from_the_environment_that_cannot_be_read_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_TOOLSCORE_RULES", str(tmp_path / "missing.toml"))
    monkeypatch.setenv("OTEL_TOOLSCORE_EXPECTED_TOOL", "get_weather")  # the default expectation still applies
    processor = ToolScoreSpanProcessor(None)
    try:
        assert processor.rules == [] and processor.default_expectation is not None
        (message,) = _warnings(caplog)
        assert "OTEL_TOOLSCORE_RULES" in message and "missing.toml" in message
    finally:
        processor.shutdown()
    # Given in code, the same file fails at once.
    with pytest.raises(RulesError, match=r"missing\.toml"):
        ToolScoreSpanProcessor(None, expectations=str(tmp_path / "missing.toml"))


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
@given(env=st.dictionaries(st.sampled_from([*_KEYS, "OTEL_TOOLSCORE_X", "OTEL_TOOLSCORE_", "OTEL_TOOLSCORE_TRACE_TIMEOUT_S"]),
                           _text, max_size=5))
@example(env={"OTEL_TOOLSCORE_RULES": "a\nb.yaml"})  # an OS error quoting the path: still one line
def test_settings_from_any_environment_never_raise(env: dict[str, str]) -> None:
    logger = logging.getLogger("otel_toolscore.config")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        s = Settings.from_env(env)
    finally:
        logger.removeHandler(handler)
    assert isinstance(s, Settings)
    for record in records:
        message = record.getMessage()
        assert "\n" not in message and any(k in message for k in env), message  # each warning names a key given


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
