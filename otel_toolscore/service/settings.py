"""Settings of ``otel-toolscore serve``: flags > ``OTEL_TOOLSCORE_SERVICE_*`` > config file > defaults.

The scoring settings (limits, expectations, what is written) are the processor's
:class:`~otel_toolscore.settings.Settings`, read from ``OTEL_TOOLSCORE_*``; this model holds only what
the service adds: where it listens, when a trace counts as complete, how much it buffers, where it
exports. An unknown or unusable ``OTEL_TOOLSCORE_SERVICE_*`` variable logs a warning naming it and is
ignored, as the processor's settings do; an unknown or invalid config-file key or flag fails at start
with a message naming it.
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml

from ..envconfig import ConfigError, EnvSettings, build_settings, did_you_mean, migrate_renamed, setting
from ..files import read_config_text
from ..http_limits import DEFAULT_MAX_RESPONSE_BYTES, MAX_RESPONSE_BYTES_LIMIT, MIN_RESPONSE_BYTES
from ..settings import ENV_PREFIX, Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["SERVICE_ENV_PREFIX", "ServiceConfig", "ServiceSettings", "check_bind_host", "load_config"]

SERVICE_ENV_PREFIX = ENV_PREFIX + "SERVICE_"

#: Default OTLP ports: the standard ones, so a Collector's ``otlp`` exporter or the
#: ``loadbalancing`` exporter (whose DNS resolver defaults to port 4317) reaches the service as-is.
DEFAULT_GRPC_PORT = 4317
DEFAULT_HTTP_PORT = 4318


_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def check_bind_host(value: str) -> str:
    """``value`` as an address to bind: an IPv4 or IPv6 address (brackets allowed) or a host name.

    Dotted digits must be a valid IPv4 address (``256.1.1.1`` is refused, not looked up as a name).
    Raises ``ValueError`` with the reason; the settings reader adds where the value came from.
    """
    host = value.strip()
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        pass
    if not bare or re.fullmatch(r"[0-9.]+", bare) or ":" in bare:
        raise ValueError(f"{value!r} is not a valid IP address")
    name = bare.removesuffix(".")
    if len(name) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in name.split(".")):
        raise ValueError(f"{value!r} is neither an IP address nor a valid host name")
    return name


def _blank_is_unset(value: str) -> str | None:
    return value if value.strip() else None


class ServiceSettings(EnvSettings):
    """What the scoring service adds to the processor's settings."""

    env_prefix: ClassVar[str] = SERVICE_ENV_PREFIX
    renamed_to_ms: ClassVar[Mapping[str, str]] = {
        "hard_timeout_s": "hard_timeout_ms",
        "http_read_timeout_s": "http_read_timeout_ms",
        "http_idle_timeout_s": "http_idle_timeout_ms",
        "retry_after_s": "retry_after_ms",
        "drain_timeout_s": "drain_timeout_ms",
    }

    host: str = setting(
        "127.0.0.1", "Address the OTLP receivers bind (use 0.0.0.0 in a container).", check=check_bind_host
    )
    grpc_port: int = setting(DEFAULT_GRPC_PORT, "OTLP/gRPC port (0: any free port).", ge=0, le=65535)
    http_port: int = setting(
        DEFAULT_HTTP_PORT, "OTLP/HTTP port, also /healthz and /readyz (0: any free port).", ge=0, le=65535
    )
    quiet_period_ms: int = setting(
        500,
        "A trace whose root has arrived and has no missing parent is scored after this long without new spans.",
        ge=0,
        le=600_000,
    )
    hard_timeout_ms: int = setting(
        30_000, "A trace still incomplete this long after its first span is scored as it is.", gt=0, le=86_400_000
    )
    max_pending_spans: int = setting(
        200_000, "Spans buffered at once; past it requests are refused (retryable).", ge=1, le=100_000_000
    )
    max_pending_bytes: int = setting(
        256 * 1024 * 1024,
        "Estimated bytes buffered at once (twice the encoded size plus 2 KiB per span: close to the memory they take); past it requests are refused.",
        ge=1024,
        le=1 << 40,
    )
    max_request_bytes: int = setting(
        16 * 1024 * 1024, "Largest OTLP request body accepted (HTTP and gRPC).", ge=1024, le=1 << 32
    )
    http_read_timeout_ms: int = setting(
        10_000,
        "An OTLP/HTTP request (headers and body) must arrive within this long of its first byte, and a new "
        "connection must send its first request within it; past it the connection is closed (408).",
        gt=0,
        le=600_000,
    )
    http_idle_timeout_ms: int = setting(
        30_000, "A kept-alive OTLP/HTTP connection idle this long between requests is closed.", gt=0, le=3_600_000
    )
    http_max_connections: int = setting(
        1024,
        "Open OTLP/HTTP connections at once; past it a new connection is answered 503 (retryable) and closed.",
        ge=1,
        le=1_000_000,
    )
    forward_queue_spans: int = setting(
        16_384,
        "Enrich-and-forward: spans waiting to be exported at once; at half of it requests are refused "
        "(retryable), when full the scorer waits for room.",
        ge=64,
        le=10_000_000,
    )
    forward_queue_bytes: int = setting(
        64 * 1024 * 1024,
        "Enrich-and-forward: encoded bytes of the spans waiting to be exported at once; at half of it "
        "requests are refused (retryable), when full the scorer waits for room (a larger span goes alone).",
        ge=1024,
        le=64 * 1024 * 1024 * 1024,
    )
    forward_request_bytes: int = setting(
        4 * 1024 * 1024,
        "Enrich-and-forward: encoded spans per export request at most (a batch is cut there; a larger "
        "span goes alone). 4 MiB is the default largest message a gRPC server (the Collector's too) receives.",
        ge=1024,
        le=1024 * 1024 * 1024,
    )
    forward_max_response_bytes: int = setting(
        DEFAULT_MAX_RESPONSE_BYTES,
        "Enrich-and-forward: largest response body read from the backend (decoded); a larger one is "
        "refused and counted (`toolscore.http.client.refused`), the batch counted as `forward_failed`.",
        ge=MIN_RESPONSE_BYTES,
        le=MAX_RESPONSE_BYTES_LIMIT,
    )
    retry_after_ms: int = setting(
        2_000,
        "Retry delay advertised when refusing under overload (HTTP `Retry-After` rounds it up to whole seconds).",
        ge=1,
        le=3_600_000,
    )
    forward: bool = setting(
        False, "Enrich-and-forward: export every received span, with score attributes on run roots."
    )
    export_endpoint: str | None = setting(
        None, "OTLP endpoint for scores, metrics and forwarded spans (default: OTEL_EXPORTER_OTLP_* variables)."
    )
    export_protocol: Literal["grpc", "http/protobuf"] | None = setting(
        None, "Export protocol (default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)."
    )
    export: bool = setting(True, "Export over OTLP at all (off: nothing leaves the service).")
    metric_export_interval_ms: int = setting(10_000, "Metric export period.", ge=100, le=3_600_000)
    drain_timeout_ms: int = setting(10_000, "Longest SIGTERM drain before exiting.", gt=0, le=600_000)
    recent_traces: int = setting(
        100_000, "Completed trace ids remembered to recognise late spans.", ge=0, le=10_000_000
    )
    queue_dir: str | None = setting(
        None,
        "Enrich-and-forward: keep every accepted request in an on-disk queue in this directory until its "
        "spans are forwarded; the next start replays what a crash left (off by default).",
        check=_blank_is_unset,
    )
    queue_max_bytes: int = setting(
        1024 * 1024 * 1024,
        "`queue_dir`: most bytes the queue takes on disk; past it requests are refused (retryable).",
        ge=1024 * 1024,
        le=1 << 44,
    )
    queue_fsync: bool = setting(
        False,
        "`queue_dir`: sync every request to the disk before acknowledging it (off: written to the file, "
        "which a killed process cannot lose; a machine crash can lose the last seconds).",
    )

    @property
    def retry_after_header(self) -> str:
        """``retry_after_ms`` as HTTP ``Retry-After`` (whole seconds, rounded up)."""
        return str(max(1, -(-self.retry_after_ms // 1000)))


class ServiceConfig:
    """Both halves, as the service runs with them."""

    __slots__ = ("scoring", "service")

    def __init__(self, *, service: ServiceSettings, scoring: Settings) -> None:
        self.service = service
        self.scoring = scoring

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServiceConfig):
            return NotImplemented
        return (self.service, self.scoring) == (other.service, other.scoring)

    def __hash__(self) -> int:
        return hash((self.service, self.scoring))

    def __repr__(self) -> str:
        return f"ServiceConfig(service={self.service!r}, scoring={self.scoring!r})"


def _read_file(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    text = read_config_text(p, "config file", error=ConfigError)
    try:
        doc: Any = tomllib.loads(text) if p.suffix.lower() == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"config file {p}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"config file {p}: nested too deeply to read") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"config file {p}: expected a mapping with `service` and/or `scoring` sections")
    unknown = set(doc) - {"service", "scoring"}
    if unknown:
        section = sorted(unknown)[0]
        hint = did_you_mean(section, ("service", "scoring")) or " (known: service, scoring)"
        raise ConfigError(f"config file {p}: unknown section {section!r}{hint}")
    for section in ("service", "scoring"):
        if not isinstance(doc.get(section, {}), dict):
            raise ConfigError(f"config file {p}: section {section!r} must be a mapping")
    return doc


def load_config(
    *,
    config_file: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    service_overrides: Mapping[str, Any] | None = None,
    scoring_overrides: Mapping[str, Any] | None = None,
) -> ServiceConfig:
    """Merge defaults < config file < environment < explicit overrides (flags), per key."""
    env = os.environ if environ is None else environ
    doc = _read_file(config_file) if config_file else {}
    flags_svc = {k: v for k, v in (service_overrides or {}).items() if v is not None}
    flags_sc = {k: v for k, v in (scoring_overrides or {}).items() if v is not None}

    where: dict[str, str] = {k: f"service.{k} in {config_file}" for k in doc.get("service", {})}
    svc_values = migrate_renamed(ServiceSettings, doc.get("service", {}), where)
    env_svc, env_where = ServiceSettings.read_environment(env, what="service settings")
    svc_values.update(env_svc)
    where.update(env_where)
    flag_where = {k: f"--{k.replace('_', '-')}" for k in flags_svc}
    svc_values.update(migrate_renamed(ServiceSettings, flags_svc, flag_where))
    where.update(flag_where)
    unknown = set(svc_values) - set(ServiceSettings.model_fields)
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(f"unknown setting {where.get(key, key)!s}{did_you_mean(key, ServiceSettings.model_fields)}")
    service = build_settings(ServiceSettings, svc_values, where)
    if service.queue_dir and not service.forward:
        source = where.get("queue_dir", "queue_dir")
        raise ConfigError(f"{source}: the on-disk queue needs enrich-and-forward (--forward): a request is released "
                          f"once its spans are forwarded")

    # Scoring: the processor's own reader checks OTEL_TOOLSCORE_* (unknown keys are warned about there).
    from_env = Settings.from_env(env)
    env_sc = {k: getattr(from_env, k) for k in from_env.model_fields_set}
    file_sc = migrate_renamed(Settings, doc.get("scoring", {}))
    unknown = set(file_sc) - set(Settings.model_fields)
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(f"unknown setting scoring.{key} in {config_file}{did_you_mean(key, Settings.model_fields)}")
    merged = {**file_sc, **env_sc, **flags_sc}
    sc_where = {k: f"scoring.{k} in {config_file}" for k in file_sc}
    sc_where.update({k: Settings.env_name(k) for k in env_sc})
    flag_names = {"expected_tool_order": "--expected-order", "strict_mode": "--strict"}
    sc_where.update({k: flag_names.get(k, f"--{k.replace('_', '-')}") for k in flags_sc})
    scoring = build_settings(Settings, merged, sc_where)
    return ServiceConfig(service=service, scoring=scoring)
