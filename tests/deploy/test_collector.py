"""Structural checks of collector/*.yaml against the documented options of each component.

The official Collector is not installable here, so these tests hold the configuration to what the
components document (option names and values taken from the components' documentation/config
structs: the `loadbalancing` exporter's Config, the OTLP exporter and receiver, memory_limiter, batch,
debug, health_check), and to what the scoring service expects (ports, routing by trace id).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_toolscore.service.settings import DEFAULT_GRPC_PORT, DEFAULT_HTTP_PORT, ServiceSettings

ROOT = Path(__file__).resolve().parents[2]
COLLECTOR = ROOT / "collector"
CONFIGS = sorted(COLLECTOR.glob("*.yaml"))

# -- documented options ---------------------------------------------------------------------------------
# A dict maps an option to its own sub-options; ANY accepts any value (free-form maps, scalars).
ANY: dict[str, Any] = {}
TLS_CLIENT = {k: ANY for k in (
    "insecure", "insecure_skip_verify", "ca_file", "ca_pem", "cert_file", "cert_pem", "key_file", "key_pem",
    "server_name_override", "min_version", "max_version", "include_system_ca_certs_pool", "reload_interval",
)}
RETRY = {k: ANY for k in ("enabled", "initial_interval", "randomization_factor", "multiplier", "max_interval", "max_elapsed_time")}
QUEUE = {k: ANY for k in (
    "enabled", "num_consumers", "queue_size", "storage", "sizer", "blocking", "block_on_overflow", "wait_for_result", "batch",
)}
OTLP_GRPC_CLIENT = {
    "endpoint": ANY, "tls": TLS_CLIENT, "compression": ANY, "headers": ANY, "timeout": ANY, "retry_on_failure": RETRY,
    "sending_queue": QUEUE, "balancer_name": ANY, "keepalive": ANY, "auth": ANY, "wait_for_ready": ANY,
    "read_buffer_size": ANY, "write_buffer_size": ANY, "authority": ANY,
}
OTLP_HTTP_CLIENT = {
    "endpoint": ANY, "traces_endpoint": ANY, "metrics_endpoint": ANY, "logs_endpoint": ANY, "tls": TLS_CLIENT,
    "compression": ANY, "headers": ANY, "timeout": ANY, "retry_on_failure": RETRY, "sending_queue": QUEUE,
    "encoding": ANY, "auth": ANY, "read_buffer_size": ANY, "write_buffer_size": ANY, "proxy_url": ANY,
}
GRPC_SERVER = {k: ANY for k in (
    "endpoint", "transport", "tls", "max_recv_msg_size_mib", "max_concurrent_streams", "read_buffer_size",
    "write_buffer_size", "keepalive", "auth", "include_metadata",
)}
HTTP_SERVER = {k: ANY for k in (
    "endpoint", "tls", "cors", "auth", "max_request_body_size", "include_metadata", "response_headers",
    "traces_url_path", "metrics_url_path", "logs_url_path",
)}
LOADBALANCING = {
    "routing_key": ANY,
    "routing_attributes": ANY,
    "timeout": ANY,
    "retry_on_failure": RETRY,
    "sending_queue": QUEUE,
    "log_batcher": {k: ANY for k in ("enabled", "max_records", "max_bytes", "flush_interval")},
    # All OTLP exporter options except `endpoint`, which the exporter sets per backend.
    "protocol": {"otlp": {k: v for k, v in OTLP_GRPC_CLIENT.items() if k != "endpoint"}},
    "resolver": {
        "static": {"hostnames": ANY},
        "dns": {k: ANY for k in ("hostname", "port", "interval", "timeout")},
        "k8s": {k: ANY for k in ("service", "ports", "timeout", "return_hostnames")},
        "aws_cloud_map": {k: ANY for k in ("namespace", "service_name", "health_status", "interval", "timeout", "port")},
    },
}
# (kind, type) -> (options, signals it supports)
COMPONENTS: dict[tuple[str, str], tuple[dict[str, Any], set[str]]] = {
    ("receivers", "otlp"): ({"protocols": {"grpc": GRPC_SERVER, "http": HTTP_SERVER}}, {"traces", "metrics", "logs"}),
    ("processors", "memory_limiter"): (
        {k: ANY for k in ("check_interval", "limit_mib", "spike_limit_mib", "limit_percentage", "spike_limit_percentage")},
        {"traces", "metrics", "logs"},
    ),
    ("processors", "batch"): (
        {k: ANY for k in ("timeout", "send_batch_size", "send_batch_max_size", "metadata_keys", "metadata_cardinality_limit")},
        {"traces", "metrics", "logs"},
    ),
    ("exporters", "load_balancing"): (LOADBALANCING, {"traces", "logs"}),  # metrics only with non-trace keys
    ("exporters", "otlp_grpc"): (OTLP_GRPC_CLIENT, {"traces", "metrics", "logs"}),
    ("exporters", "otlp_http"): (OTLP_HTTP_CLIENT, {"traces", "metrics", "logs"}),
    ("exporters", "debug"): ({k: ANY for k in ("verbosity", "sampling_initial", "sampling_thereafter", "use_internal_logger")}, {"traces", "metrics", "logs"}),
    ("extensions", "health_check"): ({k: ANY for k in ("endpoint", "path", "tls", "check_collector_pipeline", "response_body")}, set()),
}
ROUTING_KEYS = {"service", "traceID", "metric", "resource", "streamID", "attributes"}
# Component names current Collector releases only accept as deprecated aliases (old name -> new name):
# `otlp`/`otlphttp` exporters since v0.144.0, `loadbalancing` since v0.153.0 (collector/README.md).
DEPRECATED_ALIASES = {("exporters", "otlp"): "otlp_grpc", ("exporters", "otlphttp"): "otlp_http",
                      ("exporters", "loadbalancing"): "load_balancing"}


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict)
    return doc


def ctype(name: str) -> str:
    return name.split("/", 1)[0]


def unknown_options(value: Any, schema: dict[str, Any], where: str) -> list[str]:
    if schema is ANY or not isinstance(value, dict):
        return []
    bad = []
    for key, sub in value.items():
        if key not in schema:
            bad.append(f"{where}.{key}")
        else:
            bad.extend(unknown_options(sub, schema[key], f"{where}.{key}"))
    return bad


def port_of(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1].rstrip("/").split("/")[0])


def test_there_are_configs() -> None:
    assert {p.name for p in CONFIGS} >= {"agent.yaml", "gateway.yaml", "gateway-k8s.yaml"}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_components_are_defined_wired_and_documented(path: Path) -> None:
    doc = load(path)
    for kind in ("receivers", "processors", "exporters", "extensions"):
        for name in doc.get(kind) or {}:
            key = (kind, ctype(name))
            assert key not in DEPRECATED_ALIASES, f"{kind[:-1]} {name!r}: use the current name {DEPRECATED_ALIASES[key]!r}"
    service = doc["service"]
    used: dict[str, set[str]] = {"receivers": set(), "processors": set(), "exporters": set()}
    for pipeline, spec in service["pipelines"].items():
        signal = ctype(pipeline)
        assert signal in {"traces", "metrics", "logs"}, pipeline
        assert spec.get("receivers") and spec.get("exporters"), f"{pipeline} needs receivers and exporters"
        for kind in used:
            for name in spec.get(kind, []):
                assert name in (doc.get(kind) or {}), f"{pipeline} uses undefined {kind[:-1]} {name!r}"
                used[kind].add(name)
                _, signals = COMPONENTS[(kind, ctype(name))]
                assert signal in signals, f"{name} does not support {signal} ({pipeline})"
        processors = spec.get("processors", [])
        if "memory_limiter" in processors:
            assert processors[0] == "memory_limiter", f"{pipeline}: memory_limiter must come first"
    for kind, names in used.items():
        defined = set(doc.get(kind) or {})
        assert defined == names, f"{kind} defined but not used in any pipeline: {sorted(defined - names)}"
    for ext in service.get("extensions", []):
        assert ext in doc.get("extensions", {}), f"undefined extension {ext}"
    assert set(doc.get("extensions", {})) == set(service.get("extensions", []))
    for kind in ("receivers", "processors", "exporters", "extensions"):
        for name, options in (doc.get(kind) or {}).items():
            key = (kind, ctype(name))
            assert key in COMPONENTS, f"{kind[:-1]} type {ctype(name)!r} is not one this project documents"
            schema, _ = COMPONENTS[key]
            assert unknown_options(options or {}, schema, f"{kind}.{name}") == []


def _gateways() -> list[Path]:
    return [p for p in CONFIGS if p.name.startswith("gateway")]


@pytest.mark.parametrize("path", _gateways(), ids=lambda p: p.name)
def test_gateway_routes_traces_and_logs_by_trace_id_to_the_service_port(path: Path) -> None:
    doc = load(path)
    lbs = {n: v for n, v in doc["exporters"].items() if ctype(n) == "load_balancing"}
    assert len(lbs) == 1
    (lb_name, lb), = lbs.items()
    assert lb["routing_key"] == "traceID"
    assert lb["routing_key"] in ROUTING_KEYS
    assert "endpoint" not in lb["protocol"]["otlp"], "the exporter sets the endpoint per backend"
    resolvers = lb["resolver"]
    assert len(resolvers) == 1, "configure one resolver"
    if "dns" in resolvers:
        assert int(resolvers["dns"]["port"]) == DEFAULT_GRPC_PORT
        assert resolvers["dns"]["hostname"]
    else:
        assert resolvers["k8s"]["ports"] == [DEFAULT_GRPC_PORT]
        assert "." in resolvers["k8s"]["service"], "name the namespace: service.namespace"
    # The retryable refusals of the service only help if the exporter retries and queues.
    assert lb["protocol"]["otlp"]["retry_on_failure"]["enabled"] is True
    assert lb["protocol"]["otlp"]["sending_queue"]["enabled"] is True

    pipelines = doc["service"]["pipelines"]
    to_scoring = {n: p for n, p in pipelines.items() if lb_name in p["exporters"]}
    assert {ctype(n) for n in to_scoring} == {"traces", "logs"}, "spans and log events of a trace meet on one replica"
    scoring_inputs = {r for p in to_scoring.values() for r in p["receivers"]}
    # The replicas' output comes back on another receiver that never feeds the load balancer (no loop).
    scored = [n for n, p in pipelines.items() if lb_name not in p["exporters"] and set(p["receivers"]) - scoring_inputs]
    assert {ctype(n) for n in scored} == {"traces", "metrics", "logs"}
    for name in scored:
        assert not set(pipelines[name]["receivers"]) & scoring_inputs
    scored_receiver = doc["receivers"]["otlp/scored"]["protocols"]["grpc"]["endpoint"]
    assert port_of(scored_receiver) not in (DEFAULT_GRPC_PORT, DEFAULT_HTTP_PORT)
    app_receiver = doc["receivers"]["otlp"]["protocols"]
    assert port_of(app_receiver["grpc"]["endpoint"]) == 4317 and port_of(app_receiver["http"]["endpoint"]) == 4318


def test_agent_sends_to_the_gateway_receiver() -> None:
    agent = load(COLLECTOR / "agent.yaml")
    gateway = load(COLLECTOR / "gateway.yaml")
    (exporter,) = agent["exporters"].values()
    assert port_of(exporter["endpoint"]) == port_of(gateway["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"])
    assert all(ctype(r) == "otlp" for r in agent["receivers"])
    assert not any(ctype(e) == "load_balancing" for e in agent["exporters"]), "only the gateway routes by trace id"


def test_gateways_differ_only_in_resolver_and_backend_addresses() -> None:
    dns, k8s = load(COLLECTOR / "gateway.yaml"), load(COLLECTOR / "gateway-k8s.yaml")
    assert dns["service"] == k8s["service"]
    assert dns["receivers"] == k8s["receivers"] and dns["processors"] == k8s["processors"]
    assert set(dns["exporters"]) == set(k8s["exporters"])


def test_service_defaults_are_what_the_configs_assume() -> None:
    defaults = ServiceSettings()
    assert (defaults.grpc_port, defaults.http_port) == (DEFAULT_GRPC_PORT, DEFAULT_HTTP_PORT) == (4317, 4318)
    assert defaults.host == "127.0.0.1", "safe by default; containers pass --host 0.0.0.0"


def test_unknown_options_are_caught() -> None:
    """The checker itself: a misspelt option is reported with its path."""
    bad = {"resolver": {"dns": {"hostname": "x", "prot": 4317}}, "routing_key": "traceID"}
    assert unknown_options(bad, LOADBALANCING, "exporters.load_balancing") == ["exporters.load_balancing.resolver.dns.prot"]


def test_deprecated_component_names_are_caught(tmp_path: Path) -> None:
    """The checker itself: a config written with the pre-v0.144 exporter names is refused."""
    old = (COLLECTOR / "agent.yaml").read_text().replace("otlp_grpc/gateway", "otlp/gateway")
    path = tmp_path / "old-agent.yaml"
    path.write_text(old)
    with pytest.raises(AssertionError, match="otlp_grpc"):
        test_components_are_defined_wired_and_documented(path)
