"""One record schema for every machine format and command (``otel_toolscore.offline._records``):
``extract`` and ``score`` (with and without ``--judge``) write the same field names in the same
order in JSON, JSON Lines and CSV; the field list in docs/offline.md is the schema's, in order; the
``file`` of a record identifies the file (a path under the inputs' common folder, not a basename)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from otel_toolscore.cli import main
from otel_toolscore.offline._records import FIELDS, RENAMED, field_names
from tests.support.openai_server import OpenAITestServer, echo_judge

ROOT = Path(__file__).resolve().parents[2]
VERCEL = ROOT / "tests" / "corpus" / "vercel_ai"
FILES = [str(VERCEL / "ai6_multi_step.traces.jsonl"), str(VERCEL / "ai6_invalid_tool.traces.jsonl")]


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in [v for v in os.environ if v.startswith(("OTEL_TOOLSCORE_", "OPENAI_"))]:
        monkeypatch.delenv(var)


def _keys(fmt: str, out: str, command: str) -> list[list[str]]:
    """The field names of each record, in the order the output writes them."""
    if fmt == "json":
        doc = json.loads(out)
        records = doc if command == "extract" else doc["results"]
        return [list(r) for r in records]
    if fmt == "jsonl":
        return [list(json.loads(line)) for line in out.splitlines()]
    header = next(csv.reader(io.StringIO(out, newline="")))
    return [header]


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_one_schema_for_every_format_and_command(fmt: str, openai_server: OpenAITestServer,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    openai_server.set_handler(echo_judge())
    judge = ["--judge", "--judge-model", "m", "--judge-base-url", openai_server.base_url, "--judge-ratio", "1", "--quiet"]
    cases = {
        ("extract", False): ["extract", "--format", fmt, *FILES],
        ("score", False): ["score", "--format", fmt, "--expected-tool", "getWeather", *FILES],
        ("score", True): ["score", "--format", fmt, "--expected-tool", "getWeather", *judge, *FILES],
    }
    for (command, judged), argv in cases.items():
        assert main(argv) == 0, argv
        expected = list(field_names(score=command == "score", judge=judged))
        for keys in _keys(fmt, capsys.readouterr().out, command):
            assert keys == expected, (command, judged, fmt)
    # extract's fields are score's, in the same order: one schema, groups added
    assert [f for f in field_names(score=True, judge=True) if f in field_names()] == list(field_names())


def test_records_are_the_same_in_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["score", "--expected-tool", "getWeather", *FILES]
    assert main([*argv, "--format", "json"]) == 0
    from_json = json.loads(capsys.readouterr().out)["results"]
    assert main([*argv, "--format", "jsonl"]) == 0
    from_jsonl = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert from_json == from_jsonl
    assert main([*argv, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out, newline="")))
    for record, row in zip(from_json, rows):
        assert row["file"] == record["file"] and row["trace_id"] == record["trace_id"]
        assert row["score"] == str(record["score"]) and row["tools_called"] == " -> ".join(record["tools_called"])
        assert json.loads(row["tool_calls"]) == record["tool_calls"] and json.loads(row["result"]) == record["result"]


def test_the_field_list_in_the_docs_is_the_schema() -> None:
    text = (ROOT / "docs" / "offline.md").read_text()
    section = text.split("### Records: the fields of every output", 1)[1].split("\n#", 1)[0]
    documented = re.findall(r"^\| `([a-z_]+)` \| (run|score|judge) \|", section, re.M)
    assert documented == [(f.name, f.group) for f in FIELDS]
    changelog = (ROOT / "CHANGELOG.md").read_text()
    for old, new in RENAMED.items():
        assert f"`{old}`" in changelog and f"`{new}`" in changelog, old


def test_the_file_of_a_record_identifies_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two files of the same name in different folders stay apart in every output and in the table."""
    for day in ("2026-01-01", "2026-01-02"):
        (tmp_path / "traces" / day).mkdir(parents=True)
    first = tmp_path / "traces" / "2026-01-01" / "agent.jsonl"
    second = tmp_path / "traces" / "2026-01-02" / "agent.jsonl"
    shutil.copy(FILES[0], first)
    shutil.copy(FILES[1], second)
    assert main(["score", "--format", "jsonl", "--expected-tool", "getWeather", str(first), str(second)]) == 0
    files = [json.loads(line)["file"] for line in capsys.readouterr().out.splitlines()]
    assert files == ["2026-01-01/agent.jsonl", "2026-01-02/agent.jsonl"]
    assert main(["extract", "--format", "csv", str(first), str(second)]) == 0
    assert [r["file"] for r in csv.DictReader(io.StringIO(capsys.readouterr().out, newline=""))] == files
    assert main(["score", "--format", "table", "--expected-tool", "getWeather", str(first), str(second)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].split()[1] == files[0] and table[2].split()[1] == files[1]
    assert main(["score", "--format", "json", "--expected-tool", "getWeather", str(first), str(second)]) == 0
    assert json.loads(capsys.readouterr().out)["root"] == str(tmp_path / "traces")
