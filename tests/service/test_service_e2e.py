"""End to end with real parts, all on 127.0.0.1:

scripted agent (SDK + ToolScoreSpanProcessor) ──OTLP/HTTP──► rotel ──OTLP/gRPC──► otel-toolscore serve
    serve ──traces (enrich-and-forward)──► Arize Phoenix      (PyPI, own venv, ports off 4317)
          ──metrics──────────────────────► VictoriaMetrics    (Debian trixie, OTLP, Prometheus naming)
          ──logs (evaluation events)─────► a local OTLP capture server
    vmalert evaluates deploy/prometheus/toolscore.rules.yaml against VictoriaMetrics ──► Alertmanager

After a burst of failing runs the test reads the scores back from Phoenix (REST API), the score metric
from VictoriaMetrics (PromQL), and finds the low-accuracy alert in Alertmanager. The rules are the
project's, with two changes so that a test does not wait an hour: groups evaluate every 2 s and `for`
is 0 s (the expressions, floor and minimum run count are unchanged).
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_toolscore.online.processor import ScoredRun, ToolScoreSpanProcessor
from otel_toolscore.scripted import run_scripted_agent
from tests.tools.external import ensure_e2e_tools, process, rotel
from tests.tools.otlp import capture_server, free_port, wait_port

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "toolscore.rules.yaml"
FAILING_RUNS = 30


def get_json(url: str, timeout: float = 5) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read())


def wait_until(what: str, check: Callable[[], Any], timeout: float = 90, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as exc:  # a backend still starting
            last = exc
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def fast_rules(path: Path) -> Path:
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        group["interval"] = "2s"
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "0s"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "PHOENIX_", "ROTEL_"))}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def tools() -> dict[str, Path]:
    return ensure_e2e_tools()


# The first run on a fresh machine may install the tools in the fixture (Phoenix takes minutes);
# `make test` installs them before pytest (tests/tools/ensure_tools.sh --e2e).
@pytest.mark.timeout(1800)
def test_end_to_end_scores_reach_phoenix_victoriametrics_and_alertmanager(tools: dict[str, Path], tmp_path: Path) -> None:
    vm_port, vmalert_port, am_port = free_port(), free_port(), free_port()
    phx_port, phx_grpc = free_port(), free_port()
    svc_grpc, svc_http = free_port(), free_port()
    vm = f"http://127.0.0.1:{vm_port}"
    am = f"http://127.0.0.1:{am_port}"
    phoenix = f"http://127.0.0.1:{phx_port}"
    (tmp_path / "am.yml").write_text("route:\n  receiver: default\n  group_wait: 1s\nreceivers:\n  - name: default\n")
    rules_file = tmp_path / "expectations.yaml"
    rules_file.write_text(
        "rules:\n  - name: weather\n    agent_name: weather_agent\n    expected_tool: get_weather\n"
        "  - name: refund\n    agent_name: billing_agent\n    expected_tool_order: [auth, refund]\n"
    )

    with capture_server() as (logs_endpoint, logs_backend), process(
        [str(tools["victoria-metrics"]), f"-storageDataPath={tmp_path / 'vm'}", f"-httpListenAddr=127.0.0.1:{vm_port}",
         "-opentelemetry.usePrometheusNaming", "-search.latencyOffset=0s", "-retentionPeriod=1d", "-loggerLevel=WARN"],
        tmp_path / "vm.log",
    ), process(
        [str(tools["alertmanager"]), f"--config.file={tmp_path / 'am.yml'}", f"--storage.path={tmp_path / 'am'}",
         f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="],
        tmp_path / "am.log",
    ), process(
        [str(tools["vmalert"]), f"-rule={fast_rules(tmp_path / 'rules.yaml')}", f"-datasource.url={vm}",
         f"-remoteWrite.url={vm}", f"-notifier.url={am}", "-evaluationInterval=2s", "-rule.evalDelay=0s",
         f"-httpListenAddr=127.0.0.1:{vmalert_port}", "-loggerLevel=WARN"],
        tmp_path / "vmalert.log",
    ), process(
        [str(tools["phoenix"]), "serve"],
        tmp_path / "phoenix.log",
        env=clean_env(
            PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(phx_port), PHOENIX_GRPC_PORT=str(phx_grpc),
            PHOENIX_WORKING_DIR=str(tmp_path / "phoenix"), PHOENIX_TELEMETRY_ENABLED="false",
            PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
        ),
    ), process(
        [sys.executable, "-c", "import sys; from otel_toolscore.cli import main; sys.exit(main())", "serve",
         "--grpc-port", str(svc_grpc), "--http-port", str(svc_http), "--forward", "--quiet-period-ms", "200"],
        tmp_path / "serve.log",
        env=clean_env(
            OTEL_SERVICE_NAME="otel-toolscore",
            OTEL_TOOLSCORE_RULES=str(rules_file),
            OTEL_TOOLSCORE_SERVICE_METRIC_EXPORT_INTERVAL_MS="1000",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{phoenix}/v1/traces",
            OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=f"{vm}/opentelemetry/v1/metrics",
            OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=f"{logs_endpoint}/v1/logs",
            OTEL_BSP_SCHEDULE_DELAY="200",
            OTEL_BLRP_SCHEDULE_DELAY="200",
        ),
        stop_signal=15,
    ), rotel(tmp_path, f"http://127.0.0.1:{svc_grpc}") as (_, rotel_http):
        for port in (vm_port, am_port, vmalert_port, svc_http):
            wait_port(port, timeout=30)
        wait_until("Phoenix", lambda: get_json(f"{phoenix}/v1/projects"), timeout=120)

        def promql(query: str) -> list[dict[str, Any]]:
            out = get_json(f"{vm}/api/v1/query?" + urllib.parse.urlencode({"query": query}))
            result: list[dict[str, Any]] = out["data"]["result"]
            return result

        # -- the agent: scored in process, exported through rotel to the service ----------------------
        live: list[ScoredRun] = []
        processor = ToolScoreSpanProcessor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{rotel_http}/v1/traces"), schedule_delay_millis=100),
            expectations=str(rules_file),
            meter_provider=MeterProvider(),
            on_scored=live.append,
        )
        provider = TracerProvider(resource=Resource.create({"service.name": "e2e-agent"}))
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("e2e.agent")
        # A first run of each agent, then the burst: VictoriaMetrics' increase() takes a counter whose
        # first sample is already large for one that existed before (as after a restart), so the
        # counters must start small, as they do in a real deployment.
        run_scripted_agent(tracer, "weather_agent", "Weather in city 0?", ["search_web"])
        run_scripted_agent(tracer, "billing_agent", "Refund order 0", ["auth", "fetch_order", "refund"])
        provider.force_flush()
        wait_until("the first runs in VictoriaMetrics", lambda: len(promql("gen_ai_evaluation_score_count")) >= 2)
        time.sleep(1.5)  # one more metric export with the small values
        for i in range(1, FAILING_RUNS):
            run_scripted_agent(tracer, "weather_agent", f"Weather in city {i}?", ["search_web"])
        for i in range(1, 5):
            run_scripted_agent(tracer, "billing_agent", f"Refund order {i}", ["auth", "fetch_order", "refund"])
        provider.shutdown()
        assert len(live) == FAILING_RUNS + 5

        # -- Phoenix: every root carries the service's score --------------------------------------------
        def phoenix_roots() -> list[dict[str, Any]]:
            data = get_json(f"{phoenix}/v1/projects/default/spans?limit=1000")["data"]
            roots = [s for s in data if s["name"].startswith("invoke_agent")]
            return roots if len(roots) == FAILING_RUNS + 5 else []

        roots = wait_until("the scored roots in Phoenix", phoenix_roots)
        by_agent: dict[str, set[Any]] = {}
        for root in roots:
            attrs = root["attributes"]
            flat = attrs if "toolscore.code.score" in attrs else _flatten(attrs)
            assert "toolscore.code.score" in flat, json.dumps(root)[:3000]
            by_agent.setdefault(flat["gen_ai.agent.name"], set()).add((flat["toolscore.code.score"], flat["toolscore.code.label"]))
        assert by_agent == {"weather_agent": {(0.0, "fail")}, "billing_agent": {(1.0, "pass")}}

        # -- VictoriaMetrics: the score metric, by PromQL ---------------------------------------------------

        count = wait_until(
            "the score count in VictoriaMetrics",
            lambda: [r for r in promql('sum by (gen_ai_agent_name) (gen_ai_evaluation_score_count{gen_ai_evaluation_name="tool_call_accuracy"})')
                     if float(r["value"][1]) >= (FAILING_RUNS if r["metric"]["gen_ai_agent_name"] == "weather_agent" else 5)],
        )
        assert {r["metric"]["gen_ai_agent_name"] for r in count} == {"weather_agent", "billing_agent"}
        # vmalert's recording rule, written back to VictoriaMetrics: the pass ratio per agent.
        ratios = wait_until(
            "the recorded pass ratio",
            lambda: {r["metric"]["gen_ai_agent_name"]: float(r["value"][1]) for r in promql("toolscore:tool_call_accuracy:pass_ratio1h")}
            if len(promql("toolscore:tool_call_accuracy:pass_ratio1h")) == 2 else None,
        )
        assert ratios == {"weather_agent": 0.0, "billing_agent": 1.0}

        # -- vmalert -> Alertmanager: the low-accuracy alert, for weather_agent only -----------------------
        def alerts() -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = get_json(f"{am}/api/v2/alerts")
            return [a for a in found if a["labels"].get("alertname") == "ToolCallAccuracyBelowFloor"]

        fired = wait_until("ToolCallAccuracyBelowFloor in Alertmanager", alerts)
        assert {a["labels"]["gen_ai_agent_name"] for a in fired} == {"weather_agent"}
        assert fired[0]["labels"]["severity"] == "page"

        # -- the evaluation events left the service too ----------------------------------------------------
        events = [e for e in logs_backend.logs() if e["event_name"] == "gen_ai.evaluation.result"]
        assert len(events) == FAILING_RUNS + 5


def _flatten(attrs: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Phoenix may return dotted attributes as nested objects."""
    out: dict[str, Any] = {}
    for k, v in attrs.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out
