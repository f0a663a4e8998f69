"""``score --report report.html``: one self-contained HTML file, opened in a real headless browser
(Debian's chromium); the test asserts what the browser rendered and keeps a screenshot of it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from otel_toolscore.cli import main
from tests.support.openai_server import OpenAITestServer, echo_judge

ROOT = Path(__file__).resolve().parents[2]
VERCEL = ROOT / "tests" / "corpus" / "vercel_ai"
OPENAI_V2 = ROOT / "tests" / "corpus" / "openai_v2"
ARTEFACTS = ROOT / ".cache" / "artefacts"
RULES = """rules:
  - name: fahrenheit
    query_regex: Fahrenheit
    expected_tool_order: [getWeather, convertTemperature]
  - name: weather
    agent_name: weather-assistant
    expected_tool: getWeather
    strict_mode: true
"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "Debian's chromium is needed (tests/tools/ensure_tools.sh --e2e installs it)"
    return found


def browser(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


class Tables(HTMLParser):
    """Rendered tables by id: each row as (row attributes, cell texts)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[tuple[dict[str, str], list[str]]]] = {}
        self.links: dict[str, list[list[str]]] = {}  # table id -> per row, the hrefs of its links
        self.ids: dict[str, dict[str, str]] = {}  # element id -> its attributes (for non-table elements)
        self.cards: dict[str, str] = {}
        self._table: str | None = None
        self._row: tuple[dict[str, str], list[str]] | None = None
        self._cell: list[str] | None = None
        self._card: str | None = None
        self._value = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if a.get("id"):
            self.ids[a["id"]] = a
        if tag == "table" and a.get("id"):
            self._table = a["id"]
            self.tables[self._table] = []
            self.links[self._table] = []
        elif tag == "tr" and self._table is not None:
            self._row = (a, [])
            self.links[self._table].append([])
        elif tag == "a" and self._table is not None and self._row is not None:
            self.links[self._table][-1].append(a.get("href", ""))
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "div" and "card" in a.get("class", "").split():
            self._card = a.get("data-key")
        elif tag == "div" and a.get("class") == "v" and self._card is not None:
            self._value = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row[1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "div" and self._value:
            self._value = False
            self._card = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._value and self._card is not None:
            self.cards[self._card] = self.cards.get(self._card, "") + data.strip()


@pytest.fixture
def report(tmp_path: Path, openai_server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> tuple[Path, dict[str, Any]]:
    for var in [v for v in os.environ if v.startswith(("OTEL_TOOLSCORE_", "OPENAI_"))]:
        monkeypatch.delenv(var)
    openai_server.set_handler(echo_judge(appropriate=lambda n: n == "getWeather",
                                         reason="only <getWeather> serves the request & nothing else"))
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    out = tmp_path / "report.html"
    files = sorted(str(p) for p in [*VERCEL.glob("*.traces.jsonl"), *OPENAI_V2.glob("latest_span_*.traces.jsonl")])
    assert main(["score", "--format", "json", "--rules", str(rules), "--judge", "--judge-model", "test-judge",
                 "--judge-base-url", openai_server.base_url, "--judge-ratio", "1", "--quiet", "--report", str(out),
                 "--fail-under", "0.5", "--trace-url", "http://127.0.0.1:16686/trace/{trace_id}", *files]) == 0
    return out, json.loads(capsys.readouterr().out)


def test_report_is_self_contained(report: tuple[Path, dict[str, Any]]) -> None:
    html = report[0].read_text()
    assert html.startswith("<!DOCTYPE html>")
    for network in ("<script", "<link", " src=", "url(", "@import", "https://"):
        assert network not in html, network
    # the only addresses are the trace links asked for with --trace-url
    assert set(re.findall(r'href="(http://[^"/]+)', html)) == {"http://127.0.0.1:16686"}
    assert "<getWeather>" not in html and "&lt;getWeather&gt;" in html  # judge text is escaped


def test_report_rendered_in_a_real_browser(report: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path, doc = report
    dom = browser("--dump-dom", path.as_uri(), profile=tmp_path / "profile").stdout
    parsed = Tables()
    parsed.feed(dom)
    summary = doc["summary"]
    # totals
    assert parsed.cards["runs"] == str(summary["runs"]) and parsed.cards["scored"] == str(summary["count"])
    assert parsed.cards["pass rate"] == f"{summary['pass_rate']:.1%}"
    assert parsed.cards["judged"] == str(doc["judge"]["judged"])
    assert parsed.cards["gate"] == "passed" and parsed.ids["gate"]["data-passed"] == "true"
    # per agent: ordered by runs scored; pass rate and the distribution behind the bar
    per_agent = parsed.tables["per-agent"][1:]
    scored_counts = [int(cells[2]) for _, cells in per_agent]
    assert scored_counts == sorted(scored_counts, reverse=True)
    agents = {attrs["data-group"]: cells for attrs, cells in per_agent}
    weather = agents["weather-assistant"]
    st = summary["per_agent"]["weather-assistant"]
    assert weather[2] == str(st["count"]) and weather[4].endswith(f"{st['pass_rate']:.1%}")
    # the rules, in order, with the runs each scored
    rules = {attrs["data-rule"]: cells for attrs, cells in parsed.tables["rules"][1:]}
    assert list(rules) == ["fahrenheit", "weather"]
    scored_by = {name: sum(1 for r in doc["results"] if r["expectation"] == name) for name in ("fahrenheit", "weather")}
    assert rules["fahrenheit"][4] == str(scored_by["fahrenheit"]) and rules["weather"][4] == str(scored_by["weather"])
    assert "query_regex" not in rules["fahrenheit"][2] and "Fahrenheit" in rules["fahrenheit"][2]
    # runs by outcome: every run counted once
    outcomes = {attrs["data-outcome"]: int(cells[1]) for attrs, cells in parsed.tables["outcomes"][1:]}
    assert outcomes == summary["outcomes"] and sum(outcomes.values()) == summary["runs"]
    # per expectation: both rules and the runs no rule matched
    expectations = {attrs["data-group"]: cells for attrs, cells in parsed.tables["per-expectation"][1:]}
    assert set(expectations) == {"fahrenheit", "weather", "(no expectation)"}
    assert expectations["fahrenheit"][1] == str(scored_by["fahrenheit"]) and expectations["weather"][1] == str(scored_by["weather"])
    # the most frequent failing sequences, each with an example trace id of a run that failed that way
    failing = parsed.tables["failing-sequences"][1:]
    assert failing
    failed = {(r["trace_id"], tuple(r["result"]["preprocessStepResult"]["actualTools"]))
              for r in doc["results"] if r["label"] == "fail"}
    counts = [int(cells[0]) for _, cells in failing]
    assert counts == sorted(counts, reverse=True) and sum(counts) == len(failed)
    for _, cells in failing:
        tools = () if cells[2] == "(no tool)" else tuple(cells[2].split(" → "))
        assert (cells[4], tools) in failed
    # every failing run, each linking to its file (relative to the report) and to its trace
    runs = parsed.tables["failing-runs"][1:]
    by_trace = {r["trace_id"]: r for r in doc["results"] if r["label"] == "fail"}
    assert len(runs) == len(by_trace)
    for (_, cells), hrefs in zip(runs, parsed.links["failing-runs"][1:]):
        record = by_trace[cells[1]]
        assert cells[0] == record["file"]  # the path under the files' common folder, not a basename
        file_href, trace_href = hrefs
        assert (path.parent / unquote(file_href)).resolve() == (Path(doc["root"]) / record["file"]).resolve()
        assert (path.parent / unquote(file_href)).is_file()
        assert trace_href == f"http://127.0.0.1:16686/trace/{record['trace_id']}"
    assert doc["root"] == str(ROOT / "tests" / "corpus")  # files from two folders: paths keep the folder
    assert all(c[0].startswith("vercel_ai/") for _, c in runs)
    # judge verdicts and reasons, the judge/code disagreements first
    judged = parsed.tables["judged-runs"][1:]
    assert len(judged) == doc["judge"]["judged"]
    assert all(cells[7] == "only <getWeather> serves the request & nothing else" for _, cells in judged)
    assert any(cells[8] == "getWeather: appropriate; convertTemperature: not appropriate" for _, cells in judged)
    agree = [cells[6] for _, cells in judged]
    disagreements = sum(1 for r in doc["results"] if r["judge_label"] and r["score"] is not None and r["judge_label"] != r["label"])
    assert disagreements > 0 and agree[:disagreements] == ["no"] * disagreements and "no" not in agree[disagreements:]


def test_report_screenshot_kept_as_an_artefact(report: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    browser(f"--screenshot={shot}", "--window-size=1280,1800", "--hide-scrollbars", report[0].as_uri(),
            profile=tmp_path / "profile")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a page with content, not a blank one
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 1800)
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, ARTEFACTS / "report-screenshot.png")  # kept for people to look at (git-ignored)
    shutil.copy(report[0], ARTEFACTS / "report.html")


def test_report_of_the_whole_corpus_in_a_real_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Every trace file of the recorded corpus (every framework) in one report, opened in Chromium:
    each failing run's link leads to the file it came from, agents come by runs scored."""
    for var in [v for v in os.environ if v.startswith(("OTEL_TOOLSCORE_", "OPENAI_"))]:
        monkeypatch.delenv(var)
    corpus = ROOT / "tests" / "corpus"
    files = sorted(str(p) for p in corpus.glob("*/**/*.jsonl") if "node_modules" not in p.parts)
    out = tmp_path / "site" / "report.html"
    out.parent.mkdir()
    assert main(["score", "--format", "json", "--expected-tool", "get_weather", "--quiet", "--report", str(out), *files]) == 0
    doc = json.loads(capsys.readouterr().out)
    parsed = Tables()
    parsed.feed(browser("--dump-dom", out.as_uri(), profile=tmp_path / "profile").stdout)
    assert parsed.cards["runs"] == str(doc["summary"]["runs"]) and doc["summary"]["runs"] > 400
    failed = [r for r in doc["results"] if r["label"] == "fail"]
    rows = parsed.tables["failing-runs"][1:]
    shown = [(cells, hrefs) for (attrs, cells), hrefs in zip(rows, parsed.links["failing-runs"][1:])
             if attrs.get("class") != "others"]
    assert len(shown) == min(50, len(failed))
    if len(failed) > 50:
        assert rows[-1][1][0].startswith(f"(others) {len(failed) - 50:,} more failing run(s)")
    by_trace = {r["trace_id"]: r for r in failed}
    for cells, hrefs in shown:
        target = (out.parent / unquote(hrefs[0])).resolve()
        assert target.is_file() and target == (corpus / by_trace[cells[1]]["file"]).resolve()
    scored = [int(cells[2]) for attrs, cells in parsed.tables["per-agent"][1:] if attrs.get("class") != "others"]
    assert scored == sorted(scored, reverse=True)


def test_the_screenshot_in_the_docs_is_a_report() -> None:
    data = (ROOT / "docs" / "report.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(data[16:20], "big") == 1280
    assert "](report.png)" in (ROOT / "docs" / "offline.md").read_text()
    assert "](docs/report.png)" in (ROOT / "README.md").read_text()
