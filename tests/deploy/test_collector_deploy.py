"""deploy/: docker-compose and Kubernetes manifests agree with the collector configs and the service.

Structural: names, ports and endpoints line up (gateway ↔ replicas ↔ backends), every mounted file
exists, every OTEL_TOOLSCORE_* variable set is one the service accepts (no warning), the Kubernetes
copy of the gateway configuration is the same as collector/gateway-k8s.yaml, the PrometheusRule holds
the tested rules. Every image is pinned, Jaeger is v2, the Prometheus configuration passes
`promtool check config` of the pinned Prometheus release, every Kubernetes container drops its
privileges.
"""

from __future__ import annotations

import logging
import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

from otel_toolscore.service import load_config
from otel_toolscore.service.settings import DEFAULT_GRPC_PORT, DEFAULT_HTTP_PORT

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def compose() -> dict[str, Any]:
    doc = yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text())
    assert isinstance(doc, dict)
    return doc


def k8s(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / "k8s" / name).read_text()) if d]


def port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def check_service_env(env: dict[str, str]) -> None:
    """The service takes every variable of this environment as it is: no warning (an unknown or
    deprecated name, or a bad value, would be warned about and ignored)."""
    logger = logging.getLogger("otel_toolscore.config")
    warned: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: warned.append(record.getMessage())  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        # The rules file path is the container's; the repository holds the same file.
        local = {k: (str(DEPLOY / "toolscore-rules.yaml") if k == "OTEL_TOOLSCORE_RULES" else v)
                 for k, v in env.items() if k.startswith("OTEL_TOOLSCORE_")}
        config = load_config(environ=local)
    finally:
        logger.removeHandler(handler)
    assert warned == []
    assert config.service.forward is True
    assert config.scoring.rules


def test_compose_wires_agent_gateway_replicas_and_backends() -> None:
    services = compose()["services"]
    assert {"agent", "otelcol", "scoring", "jaeger", "prometheus", "alertmanager", "grafana"} <= set(services)
    gateway_file = next(v.split(":")[0] for v in services["otelcol"]["volumes"] if "gateway" in v)
    gateway = yaml.safe_load((DEPLOY / gateway_file).resolve().read_text())
    assert (DEPLOY / gateway_file).resolve() == ROOT / "collector" / "gateway.yaml"
    # The gateway's DNS resolver names the scoring service; compose resolves it to every replica.
    dns = gateway["exporters"]["load_balancing"]["resolver"]["dns"]
    assert dns["hostname"] == "scoring"
    assert services["scoring"]["deploy"]["replicas"] >= 2
    scoring_cmd = services["scoring"]["command"]
    assert "--host" in scoring_cmd and scoring_cmd[scoring_cmd.index("--host") + 1] == "0.0.0.0"
    assert "--grpc-port" not in scoring_cmd, "replicas listen on the default port the resolver uses"
    assert int(dns["port"]) == DEFAULT_GRPC_PORT
    env = services["scoring"]["environment"]
    check_service_env(env)
    export = urlparse(env["OTEL_TOOLSCORE_SERVICE_EXPORT_ENDPOINT"])
    assert export.hostname == "otelcol"
    assert export.port == port(gateway["receivers"]["otlp/scored"]["protocols"]["grpc"]["endpoint"])
    assert env["OTEL_TOOLSCORE_SERVICE_EXPORT_PROTOCOL"] == "grpc"
    # The agent sends to the gateway's application receiver.
    agent_env = services["agent"]["environment"]
    assert urlparse(agent_env["OTEL_EXPORTER_OTLP_ENDPOINT"]).port == port(gateway["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"])
    # Backends named by the gateway exist in the compose file.
    assert urlparse("//" + gateway["exporters"]["otlp_grpc/jaeger"]["endpoint"]).hostname == "jaeger"
    assert urlparse(gateway["exporters"]["otlp_http/prometheus"]["endpoint"]).hostname == "prometheus"
    assert "--web.enable-otlp-receiver" in services["prometheus"]["command"]
    # Every port published on the host is bound to 127.0.0.1.
    for name, svc in services.items():
        for p in svc.get("ports", []):
            assert str(p).startswith("127.0.0.1:"), f"{name} publishes {p} on all interfaces"


def test_compose_mounts_existing_files_and_prometheus_loads_the_tested_rules() -> None:
    services = compose()["services"]
    for svc in services.values():
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            assert (DEPLOY / source).exists(), source
    prom = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    mounts = {v.split(":")[1]: v.split(":")[0] for v in services["prometheus"]["volumes"]}
    for rule_file in prom["rule_files"]:
        assert (DEPLOY / mounts[rule_file]).resolve() == DEPLOY / "prometheus" / "toolscore.rules.yaml"
    (target,) = prom["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert target.split(":")[0] in services
    build = services["scoring"]["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"


def test_k8s_gateway_config_is_collector_gateway_k8s() -> None:
    docs = k8s("collector.yaml")
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert yaml.safe_load(cm["data"]["gateway.yaml"]) == yaml.safe_load((ROOT / "collector" / "gateway-k8s.yaml").read_text())


def test_k8s_resolver_finds_the_replicas_and_may_watch_them() -> None:
    gateway = yaml.safe_load((ROOT / "collector" / "gateway-k8s.yaml").read_text())
    resolver = gateway["exporters"]["load_balancing"]["resolver"]["k8s"]
    svc_name, namespace = resolver["service"].split(".")
    toolscore = k8s("toolscore.yaml")
    (service,) = [d for d in toolscore if d["kind"] == "Service"]
    (deployment,) = [d for d in toolscore if d["kind"] == "Deployment"]
    assert (service["metadata"]["name"], service["metadata"]["namespace"]) == (svc_name, namespace)
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert {p["port"] for p in service["spec"]["ports"]} == {DEFAULT_GRPC_PORT, DEFAULT_HTTP_PORT}
    assert resolver["ports"] == [DEFAULT_GRPC_PORT]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert {p["containerPort"] for p in container["ports"]} == {DEFAULT_GRPC_PORT, DEFAULT_HTTP_PORT}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    env = {e["name"]: e["value"] for e in container["env"]}
    check_service_env(env)
    # RBAC: the gateway's service account may get/list/watch endpoints and endpointslices.
    collector = k8s("collector.yaml")
    (role,) = [d for d in collector if d["kind"] == "Role"]
    (binding,) = [d for d in collector if d["kind"] == "RoleBinding"]
    (gw_deploy,) = [d for d in collector if d["kind"] == "Deployment"]
    resources = {r for rule in role["rules"] for r in rule["resources"] if {"get", "list", "watch"} <= set(rule["verbs"])}
    assert {"endpoints", "endpointslices"} <= resources
    assert binding["subjects"][0]["name"] == gw_deploy["spec"]["template"]["spec"]["serviceAccountName"]
    assert role["metadata"]["namespace"] == namespace
    # The replicas export to the gateway Service's otlp/scored port.
    (gw_service,) = [d for d in collector if d["kind"] == "Service"]
    export = urlparse(env["OTEL_TOOLSCORE_SERVICE_EXPORT_ENDPOINT"])
    assert export.hostname == f"{gw_service['metadata']['name']}.{gw_service['metadata']['namespace']}"
    scored_port = port(gateway["receivers"]["otlp/scored"]["protocols"]["grpc"]["endpoint"])
    assert export.port == scored_port
    assert scored_port in {p["port"] for p in gw_service["spec"]["ports"]}


def test_kustomization_lists_every_manifest() -> None:
    kust = yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())
    # The PrometheusRule needs the Prometheus Operator's CRDs: applied on its own where they exist.
    optional = {"prometheus-rule.yaml"}
    assert set(kust["resources"]) == {p.name for p in (DEPLOY / "k8s").glob("*.yaml")} - {"kustomization.yaml"} - optional


# -- pinned images, Jaeger v2, Prometheus config for its release, PrometheusRule, privileges ----
def _images() -> dict[str, str]:
    """Every image the deployment runs: compose service or Kubernetes container -> image."""
    # (Images compose builds from this repository are what the checkout is: not pulled, not pinned.)
    out = {f"compose:{name}": svc["image"] for name, svc in compose()["services"].items() if "build" not in svc}
    for manifest in (DEPLOY / "k8s").glob("*.yaml"):
        for doc in k8s(manifest.name):
            for container in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                out[f"k8s:{manifest.name}:{container['name']}"] = container["image"]
    base = re.search(r"^FROM (\S+)", (DEPLOY / "Dockerfile").read_text(), re.M)
    assert base is not None
    out["Dockerfile"] = base.group(1)
    return out


def test_every_image_is_pinned_to_a_release() -> None:
    for where, image in _images().items():
        name, _, tag = image.rpartition(":")
        assert name and "/" not in tag, f"{where}: {image} has no tag"
        assert tag != "latest" and re.search(r"\d+\.\d+\.\d+", tag), f"{where}: {image} is not pinned to a release"


def test_jaeger_is_v2() -> None:
    jaeger = compose()["services"]["jaeger"]
    name, _, tag = jaeger["image"].rpartition(":")
    assert name.endswith("jaegertracing/jaeger") and tag.split(".")[0] == "2", jaeger["image"]  # not all-in-one (v1)
    assert "COLLECTOR_OTLP_ENABLED" not in jaeger.get("environment", {}), "a v1 setting"


def _pinned(service: str) -> str:
    return str(compose()["services"][service]["image"].rpartition(":")[2].lstrip("v"))


def test_collector_release_knows_the_component_names() -> None:
    # otlp_grpc / otlp_http from v0.144.0, load_balancing from v0.153.0 (collector/README.md).
    major, minor, _ = (int(x) for x in _pinned("otelcol").split("."))
    assert (major, minor) >= (0, 153)
    (gw,) = [d for d in k8s("collector.yaml") if d["kind"] == "Deployment"]
    (container,) = gw["spec"]["template"]["spec"]["containers"]
    assert container["image"] == compose()["services"]["otelcol"]["image"]


@pytest.fixture(scope="module")
def promtool() -> Path:
    from tests.tools.external import promtool_binary

    return promtool_binary()


def test_promtool_is_the_pinned_prometheus_release(promtool: Path) -> None:
    out = subprocess.run([str(promtool), "--version"], capture_output=True, text=True, timeout=60)
    found = re.search(r"version (\d+)\.(\d+)\.(\d+)", out.stdout + out.stderr)
    assert found, out.stdout + out.stderr
    pinned = _pinned("prometheus").split(".")
    # Same major release (the configuration format); Debian's package may be a patch or minor ahead.
    assert found.group(1) == pinned[0], f"promtool {found.group(0)} checks a config pinned at v{'.'.join(pinned)}"


def test_prometheus_config_is_valid_for_the_pinned_release(promtool: Path, tmp_path: Path) -> None:
    config = DEPLOY / "prometheus" / "prometheus.yml"
    out = subprocess.run([str(promtool), "check", "config", "--syntax-only", str(config)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    # In full, with the files at the paths the container mounts them at (rules included).
    services = compose()["services"]
    text = config.read_text()
    for volume in services["prometheus"]["volumes"]:
        source, target = volume.split(":")[:2]
        text = text.replace(target, str((DEPLOY / source).resolve()))
    local = tmp_path / "prometheus.yml"
    local.write_text(text)
    out = subprocess.run([str(promtool), "check", "config", str(local)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout + out.stderr and "8 rules found" in out.stdout + out.stderr
    # The OTLP receiver the gateway sends to is switched on by the flag the pinned release knows.
    assert "--web.enable-otlp-receiver" in services["prometheus"]["command"]


def test_promtool_check_config_catches_an_error(promtool: Path, tmp_path: Path) -> None:
    """The check itself: a misspelt key fails."""
    bad = tmp_path / "prometheus.yml"
    bad.write_text((DEPLOY / "prometheus" / "prometheus.yml").read_text().replace("evaluation_interval", "evaluation_intervall"))
    out = subprocess.run([str(promtool), "check", "config", "--syntax-only", str(bad)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0


def test_prometheus_rule_holds_the_tested_rules(promtool: Path, tmp_path: Path) -> None:
    (rule,) = k8s("prometheus-rule.yaml")
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert rule["metadata"]["namespace"] == "observability" and rule["metadata"]["labels"]
    tested = yaml.safe_load((DEPLOY / "prometheus" / "toolscore.rules.yaml").read_text())
    assert rule["spec"] == tested  # the same groups, unit-tested by tests/deploy/test_alerts.py
    extracted = tmp_path / "rules.yaml"
    extracted.write_text(yaml.safe_dump(rule["spec"]))
    out = subprocess.run([str(promtool), "check", "rules", str(extracted)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_kubernetes_container_drops_its_privileges() -> None:
    deployments = [d for m in (DEPLOY / "k8s").glob("*.yaml") for d in k8s(m.name) if d.get("kind") == "Deployment"]
    assert {d["metadata"]["name"] for d in deployments} == {"otel-toolscore", "otelcol-gateway"}
    for deployment in deployments:
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, deployment["metadata"]["name"]
        assert pod["securityContext"]["runAsUser"] != 0
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        assert not pod.get("hostNetwork") and not pod.get("hostPID")
        for container in pod["containers"]:
            sc = container["securityContext"]
            where = f"{deployment['metadata']['name']}/{container['name']}"
            assert sc["allowPrivilegeEscalation"] is False, where
            assert sc["readOnlyRootFilesystem"] is True, where
            assert sc["capabilities"]["drop"] == ["ALL"] and not sc["capabilities"].get("add"), where
            assert not sc.get("privileged"), where


def test_our_compose_containers_drop_their_privileges() -> None:
    services = compose()["services"]
    for name in ("agent", "scoring"):
        svc = services[name]
        assert svc["cap_drop"] == ["ALL"] and "no-new-privileges:true" in svc["security_opt"], name
        assert svc["read_only"] is True, name


def test_example_rules_load() -> None:
    from otel_toolscore.expectations import load_rules

    rules = load_rules(DEPLOY / "toolscore-rules.yaml")
    assert {r.agent_name for r in rules} == {"weather_agent", "billing_agent"}
    cm = next(d for d in k8s("toolscore.yaml") if d["kind"] == "ConfigMap")
    assert yaml.safe_load(cm["data"]["rules.yaml"]) == yaml.safe_load((DEPLOY / "toolscore-rules.yaml").read_text())


def test_example_agent_is_scored_by_the_service() -> None:
    """The compose file's example agent, run for real against a local service (127.0.0.1)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.service.test_service import start_service

    running = start_service(quiet_period_ms=50)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
        env.update(
            OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{running.service.grpc_port}",
            OTEL_BSP_SCHEDULE_DELAY="100",
            FAILURE_RATE="0.5",
            RUN_INTERVAL_S="0.02",
        )
        proc = subprocess.Popen([sys.executable, str(DEPLOY / "example-agent" / "agent.py")], env=env)
        try:
            running.wait_scored(30, timeout=30)
        finally:
            proc.send_signal(signal.SIGINT)  # the agent ends its loop, flushes its spans and exits
            proc.wait(timeout=20)
        time.sleep(0.3)
        runs = list(running.scored)
        assert {s.run.agent_name for s in runs} <= {"weather_agent", "billing_agent"}
        assert all(s.outcome == "scored" for s in runs)
        assert {s.result.label for s in runs if s.result is not None} == {"pass", "fail"}
    finally:
        running.service.shutdown(timeout_s=5)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_example_agent_exits_promptly_when_its_collector_refuses(sig: str) -> None:
    """The flaky test's cause: at exit the BatchSpanProcessor exports every queued
    batch, each retrying a refused endpoint for up to 10 s, so the agent outlived the test's 20 s.
    Pointed at a closed port, the agent must exit within its flush deadline after SIGINT or SIGTERM."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as s:  # a port nothing listens on: every export is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}", OTEL_BSP_SCHEDULE_DELAY="100",
               OTEL_BSP_MAX_EXPORT_BATCH_SIZE="8", RUN_INTERVAL_S="0.01", EXIT_FLUSH_MS="2000")
    proc = subprocess.Popen([sys.executable, str(DEPLOY / "example-agent" / "agent.py")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # its signal handlers are in place (imports take seconds on a busy machine)
        time.sleep(2.0)  # runs pile up in the queue while the exporter retries
        assert proc.poll() is None
        t0 = time.monotonic()
        proc.send_signal(getattr(signal, sig))
        proc.wait(timeout=30)
        assert time.monotonic() - t0 < 8.0  # 2 s flush deadline + one run + interpreter exit
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
