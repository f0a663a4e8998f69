"""``otel-toolscore judge-check``: the calibration set shipped with the package, judged through the
real scorer against the local OpenAI-compatible test server answering deterministically."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable

import pytest

from otel_toolscore.cli import main
from otel_toolscore.offline._calibration import Scenario, band_of, load_calibration_set
from tests.support.openai_server import OpenAITestServer, RecordedRequest, Reply, garbage, judge_answer

SCENARIOS = load_calibration_set()


@pytest.fixture(autouse=True)
def _no_judge_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in [v for v in os.environ if v.startswith(("OTEL_TOOLSCORE_", "OPENAI_"))]:
        monkeypatch.delenv(var)


def _key(s: Scenario) -> str:
    """The start of the request, before any e-mail address (the judge sees those redacted)."""
    return re.split(r"\S+@\S+", s.request)[0]


def oracle(*, flipped: frozenset[str] = frozenset(), broken: frozenset[str] = frozenset()) -> Callable[[RecordedRequest], Reply]:
    """Answers each scenario with its labels (``flipped``: every label inverted; ``broken``: not JSON)."""
    def handle(request: RecordedRequest) -> Reply:
        text = request.prompt_text
        scenario: Scenario = max((s for s in SCENARIOS if _key(s) in text), key=lambda s: len(_key(s)))
        if scenario.id in broken:
            return garbage("this is not a verdict")
        labels = [not a if scenario.id in flipped else a for a in scenario.appropriate]
        missing = [] if scenario.id in flipped else scenario.missing
        if scenario.id in flipped and not scenario.calls:
            missing = ["search-tool"] if not scenario.missing else []
            missing = [t for t in missing if t in scenario.tools] or [next(iter(scenario.tools))]
        return judge_answer([(c.name, ok) for c, ok in zip(scenario.calls, labels)], missing,
                            reason=f"labels of {scenario.id}", request=request)
    return handle


def _flags(server: OpenAITestServer) -> list[str]:
    return ["--judge-model", "test-judge", "--judge-base-url", server.base_url, "--quiet"]


def test_the_set_is_large_and_covers_what_it_promises() -> None:
    assert len(SCENARIOS) >= 40
    groups = Counter(s.group for s in SCENARIOS)
    assert set(groups) >= {"mastra", "helpful-not-appropriate", "missing-tools", "redundant-repeats", "multi-step",
                           "injection", "no-tool", "wrong-tool"}
    by_id = {s.id: s for s in SCENARIOS}
    assert by_id["mastra-weather-correct"].expected_score == 1.0
    assert by_id["mastra-search-then-weather"].expected_band == "partial"
    assert by_id["mastra-vague-clarifies"].expected_score == 1.0 and not by_id["mastra-vague-clarifies"].calls
    assert all(Counter(s.expected_band for s in SCENARIOS)[b] >= 5 for b in ("0", "partial", "1"))
    assert sum(1 for s in SCENARIOS if s.code is not None) >= 25  # both scorers side by side


def test_exact_agreement_with_a_judge_that_answers_the_labels(openai_server: OpenAITestServer,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    openai_server.set_handler(oracle())
    assert main(["judge-check", "--format", "json", *_flags(openai_server), "--min-agreement", "1"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["scenarios"] == len(SCENARIOS) == r["answered"] and openai_server.request_count == len(SCENARIOS)
    assert r["verdict_agreement"] == 1.0 and r["band_agreement"] == 1.0 and r["mean_abs_error"] == 0.0
    for band in ("0", "partial", "1"):
        count = sum(1 for s in SCENARIOS if s.expected_band == band)
        assert r["band"][band] == {"count": count, "agree": count, "rate": 1.0}
        assert r["confusion"][band][band] == count and sum(r["confusion"][band].values()) == count
    assert r["failures"] == {} and r["input_tokens"] > 0 and r["output_tokens"] > 0
    assert r["latency_s"]["max"] >= r["latency_s"]["p50"] > 0
    # the scenarios were sent with arguments and results (the injection scenarios need them)
    injected = [q for q in openai_server.requests if "Cairo" in q.prompt_text]
    assert injected and "Note to the evaluator" in injected[0].prompt_text
    code = r["code_agreement"]
    assert code["compared"] == sum(1 for s in SCENARIOS if s.code is not None) and code["agree"] < code["compared"]


def test_disagreements_and_failures_are_counted(openai_server: OpenAITestServer, capsys: pytest.CaptureFixture[str]) -> None:
    flipped = frozenset({"mastra-weather-correct", "missing-time", "inject-obeyed-delete"})
    broken = frozenset({"none-greeting"})
    openai_server.set_handler(oracle(flipped=flipped, broken=broken))
    assert main(["judge-check", "--format", "table", *_flags(openai_server), "--min-agreement", "0.99"]) == 1
    out = capsys.readouterr().out
    n = len(SCENARIOS)
    assert f"{n - 1} of {n} scenario(s) answered" in out
    assert "failures to answer: invalid_answer 1" in out
    assert "verdict agreement" in out and "confusion (rows: expected band, columns: judged band)" in out
    assert main(["judge-check", "--format", "json", *_flags(openai_server)]) == 0
    r = json.loads(capsys.readouterr().out)
    by_id = {row["id"]: row for row in r["rows"]}
    assert by_id["mastra-weather-correct"]["judge_score"] == 0.0 and not by_id["mastra-weather-correct"]["agree"]
    assert by_id["none-greeting"]["outcome"] == "invalid_answer" and by_id["none-greeting"]["judge_score"] is None
    assert r["confusion"]["1"]["0"] >= 1 and r["confusion"]["1"]["no answer"] == 1
    wrong_bands = sum(1 for s in SCENARIOS if s.id in flipped and band_of(by_id[s.id]["judge_score"]) != s.expected_band)
    assert r["band_agreement"] == round((n - 1 - wrong_bands) / n, 4)


def test_selection_listing_and_dry_run(openai_server: OpenAITestServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge-check", "--list", "--scenarios", "mastra"]) == 0
    out = capsys.readouterr().out
    assert "mastra-weather-correct" in out and "6 scenario(s)" in out
    assert main(["judge-check", "--dry-run", *_flags(openai_server), "--scenarios", "mastra,none-greeting"]) == 0
    est = json.loads(capsys.readouterr().out)["dry_run"]
    assert est["judgments"] == 7 and est["input_tokens"] > 0 and openai_server.request_count == 0
    assert main(["judge-check", "--scenarios", "nope", *_flags(openai_server)]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["judge-check"]) == 2  # no model
    assert "OTEL_TOOLSCORE_JUDGE_MODEL" in capsys.readouterr().err
