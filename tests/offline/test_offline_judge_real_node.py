"""Offline judging and judge-check against the real llama.cpp server the suite runs
(tests/llm_server/server.mjs + SmolLM2-135M, started on 127.0.0.1 by tests/tools/node_llm.py).

What the tiny model answers is reported, not asserted: the point is that a real server takes the
requests of ``score --judge`` and ``judge-check`` and that every run ends judged or counted as a
failure, with tokens accounted. SmolLM2 generates a few tokens per second on two loaded cores, so
judge-check runs a subset of the set here (the Mastra situations, 6 scenarios).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_toolscore.cli import main
from tests.tools.llm_process import LlmServer
from tests.tools.node_llm import node_llm_server

pytestmark = [pytest.mark.timeout(900)]

SINGLE = str(Path(__file__).parents[1] / "corpus" / "vercel_ai" / "ai6_single_tool.traces.jsonl")


@pytest.fixture(scope="module")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlmServer]:
    with node_llm_server(tmp_path_factory.mktemp("node-llm")) as server:
        yield server


@pytest.fixture
def judge_env(real_server: LlmServer, monkeypatch: pytest.MonkeyPatch) -> LlmServer:
    for var in [v for v in os.environ if v.startswith(("OTEL_TOOLSCORE_", "OPENAI_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_MODEL", real_server.model)
    monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_BASE_URL", real_server.base_url)
    monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_TIMEOUT_MS", "120000")
    monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_MAX_RETRIES", "0")
    monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_MAX_OUTPUT_TOKENS", "256")
    monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_WORKERS", "1")  # the server has one slot
    return real_server


def test_score_judge_against_the_real_server(judge_env: LlmServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "--format", "json", "--expected-tool", "getWeather", "--judge", "--judge-ratio", "1",
                 "--quiet", SINGLE]) == 0
    doc = json.loads(capsys.readouterr().out)
    print("real LLM offline judgment:", json.dumps(doc["judge"], indent=1))  # for the record (pytest -s / -rA)
    (row,) = doc["results"]
    judge = doc["judge"]
    assert sum(judge["outcomes"].values()) == 1, judge_env.log_tail()
    assert row["judge_outcome"] in ("ok", "invalid_answer"), judge_env.log_tail()
    if row["judge_outcome"] == "ok":
        assert 0.0 <= row["judge_score"] <= 1.0 and row["judge_label"] in ("pass", "fail")
    assert judge["input_tokens"] > 0 and judge["output_tokens"] > 0 and judge["requests"] >= 1


def test_judge_check_against_the_real_server(judge_env: LlmServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge-check", "--format", "json", "--scenarios", "mastra", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    summary = {k: report[k] for k in ("model", "scenarios", "answered", "failures", "verdict_agreement",
                                      "band_agreement", "confusion", "input_tokens", "output_tokens", "latency_s")}
    print("real LLM judge-check (reported, not asserted):", json.dumps(summary, indent=1))
    assert report["scenarios"] == 6
    assert report["answered"] + sum(report["failures"].values()) == 6, judge_env.log_tail()
    assert report["input_tokens"] > 0
