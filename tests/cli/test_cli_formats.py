"""``--format table|json|jsonl|csv`` of ``extract`` and ``score``: one run per line, same columns everywhere."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from otel_toolscore.cli import main

VERCEL = Path(__file__).parents[1] / "corpus" / "vercel_ai"
MULTI = str(VERCEL / "ai6_multi_step.traces.jsonl")
INVALID = str(VERCEL / "ai6_invalid_tool.traces.jsonl")
ORDER = ["--expected-order", "getWeather,convertTemperature"]


def test_score_jsonl_one_run_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "--format", "jsonl", *ORDER, MULTI, INVALID]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == 2
    first, second = rows
    assert set(first) >= {"file", "trace_id", "agent", "expectation", "score", "label", "outcome", "explanation"}
    assert first["file"] == "ai6_multi_step.traces.jsonl" and second["file"] == "ai6_invalid_tool.traces.jsonl"
    assert (first["score"], first["label"], first["outcome"]) == (1.0, "pass", "scored")
    assert (second["score"], second["label"]) == (0.0, "fail")
    assert first["agent"] == "weather-assistant" and len(first["trace_id"]) == 32
    assert first["expectation"] == "command line"
    assert first["explanation"].startswith("pass: expected getWeather -> convertTemperature (lenient, ordered)")
    assert first["tools_called"] == ["getWeather", "convertTemperature"]


def test_score_csv_with_header_and_a_run_not_scored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: fahrenheit\n    query_regex: Fahrenheit\n"
                     "    expected_tool_order: [getWeather, convertTemperature]\n")
    assert main(["score", "--format", "csv", "--rules", str(rules), MULTI, INVALID]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["label"] for r in rows] == ["pass", "not_scored"]
    assert rows[0]["expectation"] == "fahrenheit" and rows[0]["score"] == "1.0"
    assert rows[0]["tools_called"] == "getWeather -> convertTemperature"
    assert rows[1]["outcome"] == "no_expectation" and rows[1]["score"] == "" and rows[1]["expectation"] == ""


def test_score_formats_keep_the_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for fmt in ("jsonl", "csv", "table", "json"):
        assert main(["score", "--format", fmt, *ORDER, "--fail-under", "0.9", MULTI, INVALID]) == 1, fmt
        assert main(["score", "--format", fmt, *ORDER, str(tmp_path / "missing.jsonl")]) == 2, fmt
    capsys.readouterr()


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_extract_flat_formats(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", "--format", fmt, MULTI, INVALID]) == 0
    out = capsys.readouterr().out
    if fmt == "jsonl":
        rows = [json.loads(line) for line in out.splitlines()]
        assert [c["name"] for c in rows[0]["tool_calls"]] == ["getWeather", "convertTemperature"]
        assert rows[0]["tools_called"] == ["getWeather", "convertTemperature"]
    else:
        rows = list(csv.DictReader(io.StringIO(out)))
        assert rows[0]["tools_called"] == "getWeather -> convertTemperature"
        assert rows[0]["available_tools"] == "getWeather, convertTemperature"
    assert len(rows) == 2
    assert rows[0]["file"] == "ai6_multi_step.traces.jsonl"
    assert rows[0]["agent"] == "weather-assistant"
    assert rows[0]["user_query"] == "What is the weather in Paris, in Fahrenheit?"


def test_unknown_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["extract", "--format", "xml", MULTI])
    assert exc.value.code == 2 and "xml" in capsys.readouterr().err
