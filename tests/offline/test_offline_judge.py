"""``otel-toolscore score --judge``: the LLM scorer over the runs of trace files, against the local
OpenAI-compatible test server, with the online judge's sampling, token budget and limits."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from otel_toolscore.cli import main
from tests.support.openai_server import OpenAITestServer, echo_judge, garbage

VERCEL = Path(__file__).parents[1] / "corpus" / "vercel_ai"
FILES = sorted(str(p) for p in VERCEL.glob("*.traces.jsonl"))
#: no request or answer to judge (``file`` in the records: the path under the files' common folder)
CONTENT_OFF = {p.name for p in VERCEL.glob("*content_off.traces.jsonl")}


@pytest.fixture(autouse=True)
def _no_judge_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for var in [v for v in os.environ if v.startswith(("OTEL_TOOLSCORE_", "OPENAI_"))]:
        monkeypatch.delenv(var)


def _judge_flags(server: OpenAITestServer, *extra: str) -> list[str]:
    return ["--judge", "--judge-model", "test-judge", "--judge-base-url", server.base_url, "--quiet", *extra]


def test_every_run_judged_with_ratio_one(openai_server: OpenAITestServer, capsys: pytest.CaptureFixture[str]) -> None:
    openai_server.set_handler(echo_judge(appropriate=lambda name: name == "getWeather", reason="weather is what was asked"))
    argv = ["score", "--format", "jsonl", "--expected-tool", "getWeather", *_judge_flags(openai_server, "--judge-ratio", "1"), *FILES]
    assert main(argv) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == len(FILES)
    with_content = [r for r in rows if r["file"] not in CONTENT_OFF]
    assert all(r["judge_outcome"] == "ok" for r in with_content)
    assert all(r["judge_outcome"] == "no_content" for r in rows if r["file"] in CONTENT_OFF)
    assert openai_server.request_count == len(with_content)  # one request per judged run
    single = next(r for r in rows if r["file"].endswith("ai6_single_tool.traces.jsonl"))
    assert (single["judge_score"], single["judge_label"], single["judge_reason"]) == (1.0, "pass", "weather is what was asked")
    multi = next(r for r in rows if r["file"].endswith("ai6_multi_step.traces.jsonl"))
    assert multi["judge_score"] == 0.5 and multi["judge_label"] == "fail"  # convertTemperature judged inappropriate


def test_sampling_as_online_and_max_judgments(openai_server: OpenAITestServer, capsys: pytest.CaptureFixture[str]) -> None:
    openai_server.set_handler(echo_judge())
    # ratio 0: only the priorities (failing runs, new tool sequences) are judged, as online; then capped at 2
    argv = ["score", "--format", "json", "--expected-tool", "getWeather", "--strict",
            *_judge_flags(openai_server, "--judge-ratio", "0", "--max-judgments", "2"), *FILES]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    judge = doc["judge"]
    assert judge["outcomes"] == {"ok": 2} and openai_server.request_count == 2
    assert judge["not_judged"]["max_judgments"] >= 1
    sampled = [r["judge_sampled_by"] for r in doc["results"] if r["judge_outcome"] == "ok"]
    assert set(sampled) <= {"code_fail", "new_sequence"}
    assert judge["input_tokens"] > 0 and judge["requests"] == 2


def test_token_budget_as_online(openai_server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    openai_server.set_handler(echo_judge())
    monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_MAX_TOKENS_PER_HOUR", "100")  # less than one judgment reserves
    argv = ["score", "--format", "csv", "--expected-tool", "getWeather", *_judge_flags(openai_server, "--judge-ratio", "1"), *FILES]
    assert main(argv) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["judge_outcome"] for r in rows if r["file"] not in CONTENT_OFF} == {"budget"}
    assert {r["judge_outcome"] for r in rows if r["file"] in CONTENT_OFF} == {"no_content"}
    assert openai_server.request_count == 0
    assert rows[0]["judge_reason"].startswith("the token budget")


def test_dry_run_sends_nothing_and_prices_the_plan(openai_server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_MAX_OUTPUT_TOKENS", "200")
    argv = ["score", "--format", "json", "--expected-tool", "getWeather",
            *_judge_flags(openai_server, "--judge-ratio", "1", "--dry-run", "--price-input", "1", "--price-output", "2"), *FILES]
    assert main(argv) == 0
    est = json.loads(capsys.readouterr().out)["dry_run"]
    n = len(FILES) - len(CONTENT_OFF)
    assert est["judgments"] == n and est["requests"] == n
    assert est["output_tokens"] == 200 * n and est["input_tokens"] > 100 * n
    assert est["cost"] == pytest.approx((est["input_tokens"] * 1 + est["output_tokens"] * 2) / 1e6)
    assert est["worst_case_tokens"] > est["tokens"] and est["fits_budget"] is True
    assert est["not_judged"] == {"no_content": len(CONTENT_OFF)}
    assert openai_server.request_count == 0
    assert main([*argv[:2], "table", *argv[3:]]) == 0
    out = capsys.readouterr().out
    assert f"dry run, nothing sent: {n} run(s) would be judged by test-judge" in out and "estimated cost:" in out


def test_judge_failures_are_reported_not_fatal(openai_server: OpenAITestServer, capsys: pytest.CaptureFixture[str]) -> None:
    openai_server.set_handler(lambda _request: garbage())
    argv = ["score", "--format", "table", "--expected-tool", "getWeather",
            *_judge_flags(openai_server, "--judge-ratio", "1", "--max-judgments", "3"), str(VERCEL / "ai6_single_tool.traces.jsonl")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "judge test-judge: 0 judged (outcomes: invalid_answer 1)" in out or "judge test-judge: 0 judged (outcomes: error 1)" in out


def test_judge_usage_errors(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    single = str(VERCEL / "ai6_single_tool.traces.jsonl")
    assert main(["score", "--judge", single]) == 2  # no model
    assert "OTEL_TOOLSCORE_JUDGE_MODEL" in capsys.readouterr().err
    assert main(["score", "--expected-tool", "x", "--dry-run", single]) == 2
    assert "--judge" in capsys.readouterr().err
    assert main(["score", "--judge", "--judge-model", "m", "--judge-ratio", "2", single]) == 2  # explicit: fails fast
    assert "ratio" in capsys.readouterr().err
