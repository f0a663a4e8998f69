"""Reading what the SDK's in-memory readers and exporters collected: metric points, counter sums,
evaluation events. One helper for every test that checks otel-toolscore's telemetry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader

EVALUATION_EVENT = "gen_ai.evaluation.result"


def metric_points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    """Every data point of the metric ``name`` in one collection of ``reader``."""
    data = reader.get_metrics_data()
    points: list[Any] = []
    for rm in data.resource_metrics if data is not None else ():
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                if m.name == name:
                    points.extend(m.data.data_points)
    return points


def matching(points: Iterable[Any], attrs: dict[str, Any]) -> list[Any]:
    """The points whose attributes hold every ``attrs`` item."""
    return [p for p in points if all(p.attributes.get(k) == v for k, v in attrs.items())]


def counter_total(reader: InMemoryMetricReader, name: str, **attrs: Any) -> int:
    """The sum of the counter ``name`` over the points carrying ``attrs``."""
    return sum(int(p.value) for p in matching(metric_points(reader, name), attrs))


def counter_by(reader: InMemoryMetricReader, name: str, key: str) -> dict[str, int]:
    """The counter ``name`` summed by the value of its attribute ``key`` (points at zero left out)."""
    out: dict[str, int] = {}
    for p in metric_points(reader, name):
        if int(p.value):
            value = p.attributes[key]
            out[value] = out.get(value, 0) + int(p.value)
    return out


def evaluation_events(finished_logs: Iterable[Any], name: str | None = None) -> list[Any]:
    """The ``gen_ai.evaluation.result`` log records among ``finished_logs`` (an in-memory log
    exporter's ``get_finished_logs()``), of the evaluation ``name`` when given."""
    return [
        r.log_record
        for r in finished_logs
        if r.log_record.event_name == EVALUATION_EVENT
        and (name is None or r.log_record.attributes.get("gen_ai.evaluation.name") == name)
    ]
