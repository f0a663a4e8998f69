"""The Grafana dashboard in deploy/grafana: every query names metrics and labels otel-toolscore emits
(under the documented OTLP->Prometheus translation, see tests/tools/prom_names.py), and is valid PromQL
(checked by promtool as a recording rule)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.tools.external import promtool_binary
from tests.tools.prom_names import emitted_labels, emitted_series, promql_names

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "otel-toolscore.json"
RULES = DEPLOY / "prometheus" / "toolscore.rules.yaml"


def dashboard() -> dict[str, Any]:
    doc = json.loads(DASHBOARD.read_text())
    assert isinstance(doc, dict)
    return doc


def queries() -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in dashboard()["panels"] for t in p.get("targets", [])]


def recorded() -> set[str]:
    doc = yaml.safe_load(RULES.read_text())
    return {r["record"] for g in doc["groups"] for r in g["rules"] if "record" in r}


def test_every_query_names_emitted_metrics_and_labels() -> None:
    series = emitted_series() | recorded()
    labels = emitted_labels()
    assert len(queries()) >= 10
    for title, expr in queries():
        metrics, used = promql_names(expr)
        assert metrics, f"{title}: no metric in {expr!r}"
        assert metrics <= series, f"{title}: not emitted: {sorted(metrics - series)}"
        assert used <= labels, f"{title}: unknown labels {sorted(used - labels)}"


def test_template_variables_read_emitted_labels() -> None:
    series = emitted_series()
    labels = emitted_labels()
    for var in dashboard()["templating"]["list"]:
        q = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
        m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", q)
        assert m, q
        assert m.group(1) in series and m.group(2) in labels


def test_queries_are_valid_promql(tmp_path: Path) -> None:
    # Grafana's variables replaced by values, each query checked by promtool as a recording rule.
    rules = []
    for i, (_, expr) in enumerate(queries()):
        concrete = expr.replace("$__rate_interval", "5m").replace("$__range", "1h")
        concrete = re.sub(r"\$\w+", ".*", concrete)
        rules.append({"record": f"dashboard:query:{i}", "expr": concrete})
    path = tmp_path / "dashboard.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    out = subprocess.run([str(promtool_binary()), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_panels_cover_the_funnel() -> None:
    d = dashboard()
    titles = " | ".join(p["title"].lower() for p in d["panels"])
    for wanted in ("pass rate by agent", "score distribution", "judged vs skipped", "tokens", "drops"):
        assert wanted in titles, wanted
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    datasources = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yaml").read_text())
    uid = datasources["datasources"][0]["uid"]
    assert all(p["datasource"]["uid"] == uid for p in d["panels"])


def test_the_checker_rejects_an_unknown_metric() -> None:
    metrics, labels = promql_names('sum by (gen_ai_agent_name) (rate(toolscore_runs{toolscore_outcome="scored"}[5m]))')
    assert metrics == {"toolscore_runs"} and labels == {"gen_ai_agent_name", "toolscore_outcome"}
    assert not metrics <= emitted_series()  # a counter without `_total` is not what Prometheus stores
