"""``otel-toolscore extract`` / ``score`` on recorded corpus files, through ``main(argv)``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_toolscore.cli import main

VERCEL = Path(__file__).parents[1] / "corpus" / "vercel_ai"
MULTI = str(VERCEL / "ai6_multi_step.traces.jsonl")
INVALID = str(VERCEL / "ai6_invalid_tool.traces.jsonl")


def test_extract_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", "--format", "json", MULTI]) == 0
    [run] = json.loads(capsys.readouterr().out)
    assert run["agent"] == "weather-assistant"
    assert [c["name"] for c in run["tool_calls"]] == ["getWeather", "convertTemperature"]
    assert run["available_tools"] == ["getWeather", "convertTemperature"]
    assert run["user_query"] == "What is the weather in Paris, in Fahrenheit?"


def test_extract_table_and_problems_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    assert main(["extract", "--format", "table", MULTI, str(bad)]) == 2  # an unreadable line is bad input
    out, err = capsys.readouterr()
    assert "getWeather" in out and "1 run(s)" in out  # what could be read is still shown
    assert "bad.jsonl" in err and "bad JSON" in err


def test_score_flags_summary_and_fail_under(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["score", "--format", "json", "--expected-order", "getWeather,convertTemperature", MULTI, INVALID]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["score"] for r in doc["results"]] == [1.0, 0.0]
    assert doc["summary"]["mean"] == 0.5 and doc["summary"]["per_agent"]["weather-assistant"]["pass_rate"] == 0.5
    assert main([*argv, "--fail-under", "0.9"]) == 1
    capsys.readouterr()
    assert main(["score", "--format", "json", "--expected-tool", "getWeather", "--strict", MULTI]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["score"] == 0.0


def test_score_rules_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "rules:\n"
        "  - name: fahrenheit\n    query_regex: Fahrenheit\n    expected_tool_order: [getWeather, convertTemperature]\n"
        "  - name: booking\n    agent_name: nobody\n    expected_tool: bookFlight\n"
    )
    assert main(["score", "--format", "table", "--rules", str(rules), MULTI, INVALID]) == 0
    out = capsys.readouterr().out
    assert "pass: expected getWeather -> convertTemperature" in out
    assert "not scored" in out and "1 scored of 2 run(s)" in out


def test_score_needs_an_expectation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", MULTI]) == 2
    err = capsys.readouterr().err
    assert "--expected-tool" in err and "OTEL_TOOLSCORE_EXPECTED_TOOL" in err


# -- the command line tells the shell ------------------------------------------------
@pytest.mark.parametrize("command", ["extract", "score"])
def test_bad_input_exits_2_with_the_reason(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--expected-tool", "getWeather"] if command == "score" else []
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    not_otlp = tmp_path / "notes.txt"
    not_otlp.write_text("these are my notes, not OTLP\n")
    unreadable = tmp_path / "cut.jsonl"
    unreadable.write_text(Path(MULTI).read_text() + '{"resourceSpans": [\n')
    json_not_otlp = tmp_path / "other.jsonl"
    json_not_otlp.write_text('{"a": 1}\n')
    cases = {
        str(tmp_path / "missing.jsonl"): "no such file",
        str(tmp_path): "is a directory",
        str(empty): "empty input",
        str(not_otlp): "not OTLP",
        str(json_not_otlp): "not an OTLP export request",
        str(unreadable): "could not be read",
    }
    for path, reason in cases.items():
        assert main([command, *flags, "--format", "json", path]) == 2, path
        assert reason in capsys.readouterr().err, path


def test_score_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["score", "--expected-tool", "a", "--fail-under", "1.5", MULTI],
        ["score", "--expected-tool", "a", "--fail-under", "-0.1", MULTI],
        ["score", "--expected-tool", "a", "--fail-under", "high", MULTI],
        ["score", "--expected-tool", "a", "--expected-order", "a,b", MULTI],
        ["score", "--expected-order", " , ", MULTI],
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2, argv
        assert capsys.readouterr().err.strip(), argv


def test_score_fail_under_exits_1_and_the_table_names_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["score", "--format", "table", "--expected-order", "getWeather,convertTemperature", MULTI, INVALID]
    assert main([*argv, "--fail-under", "0.4"]) == 0
    out = capsys.readouterr().out
    header, first, second = out.splitlines()[:3]
    assert header.split()[:4] == ["score", "file", "run", "agent"]
    assert "ai6_multi_step.traces.jsonl" in first and first.split()[0] == "1.00"
    assert "ai6_invalid_tool.traces.jsonl" in second and second.split()[0] == "0.00"
    assert main([*argv, "--fail-under", "0.6"]) == 1
    capsys.readouterr()
    assert main(["score", "--format", "json", "--expected-tool", "getWeather", MULTI]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["file"] == "ai6_multi_step.traces.jsonl"
