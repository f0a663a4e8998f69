"""The dashboard's "Score distribution" panel shows a distribution — how many scores fell into each
bucket per interval — not cumulative bucket totals.

Known data: the project's own ``Emitter`` records scores into the SDK's histogram; cumulative
snapshots, encoded by the SDK's OTLP encoder, are pushed one minute apart (timestamps set by the test)
into a real VictoriaMetrics (Debian trixie package, as in the end-to-end test). The panel's query,
with Grafana's variables filled in, is evaluated over that minute grid through VictoriaMetrics'
Prometheus API, and its result is turned into cells the way Grafana does for a query formatted as
heatmap (series sorted by ``le``, each bucket minus the one below: Prometheus buckets are
cumulative). Every cell must equal the number of scores recorded for that bucket in that minute.
"""

from __future__ import annotations

import bisect
import json
import math
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource

from otel_toolscore.telemetry import Emitter, RunRef, names
from tests.tools.external import ensure_e2e_tools, process
from tests.tools.otlp import free_port, wait_port

pytestmark = pytest.mark.timeout(1800)  # a fresh machine may install VictoriaMetrics first

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "dashboards" / "otel-toolscore.json"
STEP_S = 60
AGENTS = ("weather_agent", "billing_agent")
# Minute 0 gives every series (evaluation x agent x label) its first sample, so that each later
# minute's increase is measured from a known value; minutes 1..3 are what the panel must show.
MINUTES: list[list[tuple[str, str, float]]] = [
    [(ev, agent, s) for ev in (names.EVAL_CODE, names.EVAL_LLM) for agent in AGENTS for s in (0.0, 1.0)],
    [(names.EVAL_CODE, "weather_agent", 1.0)] * 3 + [(names.EVAL_CODE, "billing_agent", 0.0)] * 2
    + [(names.EVAL_LLM, "weather_agent", 0.5), (names.EVAL_LLM, "billing_agent", 0.95)],
    [(names.EVAL_LLM, "weather_agent", 0.2)] * 2 + [(names.EVAL_LLM, "billing_agent", 0.05), (names.EVAL_CODE, "weather_agent", 0.0)],
    [(names.EVAL_CODE, "billing_agent", 1.0)] * 4 + [(names.EVAL_LLM, "weather_agent", 0.99)],
]


def panel() -> dict[str, Any]:
    (found,) = [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["title"] == "Score distribution"]
    assert isinstance(found, dict)
    return found


def bucket_of(score: float) -> float:
    """The upper bound of the histogram bucket ``score`` falls into (``le``; +Inf above the last)."""
    bounds = names.SCORE_BUCKETS
    i = bisect.bisect_left(bounds, score)
    return bounds[i] if i < len(bounds) else math.inf


def grafana_heatmap_cells(result: list[dict[str, Any]]) -> dict[int, dict[float, float]]:
    """Per timestamp, per bucket upper bound: Grafana's conversion of a heatmap-formatted Prometheus
    result (sort the series by ``le``, subtract from each bucket the cumulative count below it)."""
    series = sorted(result, key=lambda s: float(s["metric"]["le"]))
    cells: dict[int, dict[float, float]] = {}
    below: dict[int, float] = {}
    for s in series:
        le = float(s["metric"]["le"])
        for ts, value in s["values"]:
            t = int(ts)
            cumulative = float(value)
            cells.setdefault(t, {})[le] = cumulative - below.get(t, 0.0)
            below[t] = cumulative
    return cells


def _push(vm: str, reader: InMemoryMetricReader, at_ns: int) -> None:
    data = reader.get_metrics_data()
    assert data is not None
    request = encode_metrics(data)
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                points = metric.histogram.data_points if metric.HasField("histogram") else (
                    metric.sum.data_points if metric.HasField("sum") else ()
                )
                for point in points:
                    point.start_time_unix_nano = at_ns - 3600 * 10**9
                    point.time_unix_nano = at_ns
    req = urllib.request.Request(f"{vm}/opentelemetry/v1/metrics", data=request.SerializeToString(),
                                 headers={"Content-Type": "application/x-protobuf"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as response:
        assert response.status in (200, 204)


def _query_range(vm: str, expr: str, start: int, end: int) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": f"{STEP_S}s"})
    with urllib.request.urlopen(f"{vm}/api/v1/query_range?{query}", timeout=10) as response:
        out = json.loads(response.read())
    assert out["status"] == "success", out
    result: list[dict[str, Any]] = out["data"]["result"]
    return result


def concrete(expr: str, evaluation: str = ".*") -> str:
    """The panel's query as Grafana sends it: variables filled in, ``$__rate_interval`` one step."""
    return expr.replace("$__rate_interval", f"{STEP_S}s").replace("$evaluation", evaluation).replace("$agent", ".*")


def test_the_panel_is_a_heatmap_of_per_interval_increases() -> None:
    p = panel()
    (target,) = p["targets"]
    assert p["type"] == "heatmap"
    assert target["format"] == "heatmap"  # Grafana de-accumulates the le buckets of this format
    assert p["options"]["calculate"] is False and p["options"]["rowsFrame"]["layout"] == "le"
    assert "increase(gen_ai_evaluation_score_bucket" in target["expr"] and "[$__rate_interval]" in target["expr"]
    assert "sum by (le)" in target["expr"]


def test_score_distribution_cells_count_the_scores_of_each_interval(tmp_path: Path) -> None:
    tools = ensure_e2e_tools()
    port = free_port()
    vm = f"http://127.0.0.1:{port}"
    expr = panel()["targets"][0]["expr"]
    with process(
        [str(tools["victoria-metrics"]), f"-storageDataPath={tmp_path / 'vm'}", f"-httpListenAddr=127.0.0.1:{port}",
         "-opentelemetry.usePrometheusNaming", "-search.latencyOffset=0s", "-retentionPeriod=1d", "-loggerLevel=WARN"],
        tmp_path / "vm.log",
    ):
        wait_port(port, timeout=30)
        reader = InMemoryMetricReader()  # cumulative, as the OTLP exporter's default
        provider = MeterProvider(metric_readers=[reader], resource=Resource.create({"service.name": "dashboard-test"}))
        emitter = Emitter(provider, LoggerProvider(), events=False)
        t0 = (int(time.time()) // STEP_S - 30) * STEP_S  # half an hour ago, on the minute grid
        for minute, scores in enumerate(MINUTES):
            for evaluation, agent, score in scores:
                label = names.LABEL_PASS if score >= 1.0 else names.LABEL_FAIL
                emitter.emit_evaluation(RunRef(trace_id=1, span_id=1, agent_name=agent), name=evaluation,
                                        score=score, label=label)
            _push(vm, reader, (t0 + minute * STEP_S) * 10**9)
        with urllib.request.urlopen(f"{vm}/internal/force_flush", timeout=10):
            pass
        provider.shutdown()

        def cells_for(evaluation: str) -> dict[int, dict[float, float]]:
            result = _query_range(vm, concrete(expr, evaluation), t0 + STEP_S, t0 + (len(MINUTES) - 1) * STEP_S)
            assert result, f"no data for {evaluation!r} (log: {(tmp_path / 'vm.log').read_text()[-2000:]})"
            assert {frozenset(s["metric"]) for s in result} == {frozenset({"le"})}  # summed by le only
            return grafana_heatmap_cells(result)

        all_bounds = {*map(float, names.SCORE_BUCKETS), math.inf}
        for evaluation, chosen in ((".*", {names.EVAL_CODE, names.EVAL_LLM}), (names.EVAL_LLM, {names.EVAL_LLM})):
            cells = cells_for(evaluation)
            assert set(cells) == {t0 + m * STEP_S for m in range(1, len(MINUTES))}
            for minute in range(1, len(MINUTES)):
                expected = Counter(bucket_of(s) for ev, _, s in MINUTES[minute] if ev in chosen)
                shown = cells[t0 + minute * STEP_S]
                assert set(shown) == all_bounds  # every bucket is a row, empty ones included
                assert {le: v for le, v in shown.items() if v} == dict(expected), (evaluation, minute, shown)
        # Cumulative bucket totals (what the query returns before Grafana's conversion, and what the
        # old bar gauge showed) are not a distribution: the judge's one 0.99 of minute 3 is in every
        # row from le=0.99 up; the heatmap shows it once.
        raw = {float(s["metric"]["le"]): float(s["values"][0][1])
               for s in _query_range(vm, concrete(expr, names.EVAL_LLM), t0 + 3 * STEP_S, t0 + 3 * STEP_S)}
        assert (raw[0.99], raw[math.inf]) == (1.0, 1.0)
        assert (cells_for(names.EVAL_LLM)[t0 + 3 * STEP_S][0.99], cells_for(names.EVAL_LLM)[t0 + 3 * STEP_S][math.inf]) == (1.0, 0.0)
