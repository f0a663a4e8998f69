"""The Prometheus names of the metrics otel-toolscore emits, and the names a PromQL query uses.

Assumed translation (Prometheus' OTLP receiver default, `UnderscoreEscapingWithSuffixes`; the same as
VictoriaMetrics with `-opentelemetry.usePrometheusNaming`): characters other than [a-zA-Z0-9_:] become
`_`; a unit adds its suffix (`s` -> `_seconds`, `By` -> `_bytes`, `1` -> `_ratio` on gauges only,
`{...}` annotations add nothing) unless the name already ends with it; monotonic counters get
`_total`; histograms become `_bucket`, `_sum`, `_count`. Resource attributes `service.name` and
`service.instance.id` become the `job` and `instance` labels.
"""

from __future__ import annotations

import re
from typing import Any

from opentelemetry import metrics as api
from opentelemetry.sdk.metrics import MeterProvider

from otel_toolscore.telemetry import names

_UNIT_SUFFIX = {"s": "seconds", "ms": "milliseconds", "By": "bytes", "KiBy": "kibibytes"}


def sanitize(name: str) -> str:
    return re.sub(r"_+", "_", re.sub(r"[^a-zA-Z0-9_:]", "_", name))


def prometheus_names(name: str, kind: str, unit: str | None) -> set[str]:
    base = sanitize(name)
    u = re.sub(r"\{[^}]*\}", "", unit or "").strip()
    suffix = _UNIT_SUFFIX.get(u) or ("ratio" if u == "1" and kind == "gauge" else "")
    if suffix and not base.endswith("_" + suffix):
        base = f"{base}_{suffix}"
    if kind == "counter":
        return {base if base.endswith("_total") else base + "_total"}
    if kind == "histogram":
        return {base + "_bucket", base + "_sum", base + "_count"}
    return {base}


def _kind(instrument: Any) -> str | None:
    if isinstance(instrument, (api.Counter, api.ObservableCounter)):
        return "counter"
    if isinstance(instrument, api.Histogram):
        return "histogram"
    if isinstance(instrument, (api.UpDownCounter, api.ObservableUpDownCounter, api.ObservableGauge)):
        return "gauge"
    return None


def emitted_instruments() -> list[tuple[str, str, str | None]]:
    """(name, kind, unit) of every instrument a scoring service and its core's emitter create."""
    from opentelemetry.sdk._logs import LoggerProvider

    from otel_toolscore.service import ScoringService, load_config

    config = load_config(environ={}, service_overrides={"grpc_port": 0, "http_port": 0, "export": False})
    from otel_toolscore.service._receivers import HttpReceiver

    service = ScoringService(config, meter_provider=MeterProvider(), logger_provider=LoggerProvider())
    receiver = HttpReceiver(service, config.service)  # the connection counters live with the receiver
    try:
        found = []
        for owner in (service.emitter, service, receiver):
            for value in vars(owner).values():
                kind = _kind(value)
                if kind is not None:
                    found.append((value.name, kind, value.unit))
        return found
    finally:
        receiver.stop(0)
        service.shutdown(timeout_s=2)


def emitted_series() -> set[str]:
    out: set[str] = set()
    for name, kind, unit in emitted_instruments():
        out |= prometheus_names(name, kind, unit)
    return out


def emitted_labels() -> set[str]:
    keys = [
        names.ATTR_OUTCOME, names.ATTR_REASON, names.ATTR_EXPECTED_TOOL, names.ATTR_SIGNAL, names.GEN_AI_AGENT_NAME,
        names.GEN_AI_EVALUATION_NAME, names.GEN_AI_EVALUATION_SCORE_LABEL, names.GEN_AI_TOKEN_TYPE,
        names.GEN_AI_REQUEST_MODEL, names.ATTR_JUDGE_SAMPLED_BY,
    ]
    return {sanitize(k) for k in keys} | {"job", "instance", "le"}


# -- PromQL ---------------------------------------------------------------------------------------------
_FUNCS_WITH_LABELS = r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)"


def promql_names(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, label names) an expression uses. Recording-rule names (with ':') count as metrics."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values and strings
    text = re.sub(r"\$\{?\w+\}?", "", text)  # Grafana variables ($__rate_interval, ${agent})
    labels: set[str] = set()
    for group in re.findall(_FUNCS_WITH_LABELS, text):
        labels |= {g.strip() for g in group.split(",") if g.strip()}
    text = re.sub(_FUNCS_WITH_LABELS, " ", text)
    for matcher in re.findall(r"\{([^}]*)\}", text):
        labels |= set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", matcher))
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges
    words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text))
    metrics = {w for w in words if w.startswith(("toolscore", "gen_ai_")) or ":" in w}
    return metrics, labels
