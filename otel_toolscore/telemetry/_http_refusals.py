"""``toolscore.http.client.refused``: answers our HTTP clients refused, counted process-wide.

Every outbound HTTP client of otel-toolscore (the score sinks, the LLM judge, the service's
forwarding sender) refuses what would hurt the process — a response body over its size limit, a
redirect to another origin, a request past its deadline — and counts it here. The counts are
reported by an observable counter that every :class:`~otel_toolscore.telemetry._emitter.Emitter`
registers on its meter, read at collection time. The counts themselves are kept by
:mod:`otel_toolscore.http_limits` (below the clients that count); this module only reports them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from opentelemetry.metrics import CallbackOptions, Observation

from ..http_limits import count_http_refusal, http_refusal_counts
from . import names as n

__all__ = ["count_http_refusal", "http_refusal_counts", "observe_http_refusals"]

def _observe(_options: CallbackOptions) -> Iterator[Observation]:
    for (client, reason), value in http_refusal_counts().items():
        yield Observation(value, {n.ATTR_HTTP_CLIENT: client, n.ATTR_REASON: reason})


def observe_http_refusals(meter: Any) -> Any:
    """Register the observable counter on ``meter`` (an OpenTelemetry ``Meter``)."""
    return meter.create_observable_counter(
        n.METRIC_HTTP_CLIENT_REFUSED,
        callbacks=[_observe],
        unit="{response}",
        description="Answers otel-toolscore's HTTP clients refused (body over the size limit, redirect to another "
        "origin, request past its deadline), by client and reason.",
    )
