"""The Prometheus alert rules in deploy/prometheus: `promtool check rules`, `promtool test rules`, and
every metric and label they name is one otel-toolscore emits (under the documented translation)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.tools.external import promtool_binary
from tests.tools.prom_names import emitted_labels, emitted_series, promql_names

RULES_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = RULES_DIR / "toolscore.rules.yaml"
RULE_TESTS = RULES_DIR / "toolscore.rules.test.yaml"


@pytest.fixture(scope="module")
def promtool() -> Path:
    return promtool_binary()


def test_rules_are_valid(promtool: Path) -> None:
    out = subprocess.run([str(promtool), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_rule_unit_tests_pass(promtool: Path) -> None:
    out = subprocess.run(
        [str(promtool), "test", "rules", RULE_TESTS.name], cwd=RULES_DIR, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_promtool_catches_a_wrong_expectation(promtool: Path, tmp_path: Path) -> None:
    """The unit tests can fail: the same test with the floor alert expected for billing_agent fails."""
    doc = yaml.safe_load(RULE_TESTS.read_text())
    doc["rule_files"] = [str(RULES)]
    alert = doc["tests"][0]["alert_rule_test"][1]
    alert["exp_alerts"][0]["exp_labels"]["gen_ai_agent_name"] = "billing_agent"
    broken = tmp_path / "broken.test.yaml"
    broken.write_text(yaml.safe_dump(doc))
    out = subprocess.run([str(promtool), "test", "rules", str(broken)], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "FAILED" in out.stdout + out.stderr


def test_rules_name_only_emitted_metrics_and_labels() -> None:
    doc = yaml.safe_load(RULES.read_text())
    series = emitted_series()
    recorded = {r["record"] for g in doc["groups"] for r in g["rules"] if "record" in r}
    labels = emitted_labels()
    alerts = set()
    for group in doc["groups"]:
        for rule in group["rules"]:
            metrics, used_labels = promql_names(rule["expr"])
            assert metrics, rule
            assert metrics <= series | recorded, f"{rule.get('alert') or rule.get('record')}: {sorted(metrics - series - recorded)}"
            assert used_labels <= labels, f"{rule.get('alert') or rule.get('record')}: {sorted(used_labels - labels)}"
            if "alert" in rule:
                alerts.add(rule["alert"])
    assert alerts == {
        "ToolCallAccuracyBelowFloor",
        "ToolCallAccuracyDroppedSinceYesterday",
        "ToolScoreJudgeErrors",
        "ToolScoreJudgeBudgetExhausted",
        "ToolScoreDropping",
        "ToolScoreServiceOverloaded",
    }


def test_translation_assumption() -> None:
    """The names the rules rely on, spelled out (a change in the instruments shows up here)."""
    series = emitted_series()
    for name in (
        "gen_ai_evaluation_score_bucket", "gen_ai_evaluation_score_count", "gen_ai_evaluation_score_sum",
        "toolscore_runs_total", "toolscore_dropped_total", "toolscore_trace_pending",
        "toolscore_pending_traces",  # deprecated name, still emitted for one release
        "toolscore_judge_requests_total", "toolscore_judge_skipped_total", "toolscore_judge_tokens_total",
        "toolscore_judge_duration_seconds_bucket", "toolscore_service_refused_total",
        "toolscore_service_received_total", "toolscore_service_pending_spans", "toolscore_service_pending_bytes",
    ):
        assert name in series, name
