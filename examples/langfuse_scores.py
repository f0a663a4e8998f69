"""Recipe: otel-toolscore's scores as Langfuse scores, on the observations they evaluate.

Run: python examples/langfuse_scores.py

Langfuse ingests OpenTelemetry spans on its OTLP endpoint, but turns no span attribute into a score.
So the spans go there as usual (``{LANGFUSE_BASE_URL}/api/public/otel/v1/traces``, Basic auth with
the project's keys), and a ``LangfuseSink`` posts each score to Langfuse's scores API, keyed to the
trace id (our hex trace id) and observation id (the evaluated span's hex id): a numeric
``tool_call_accuracy`` and a categorical ``tool_call_accuracy.label`` (pass/fail), the explanation
as comment. Judge verdicts (``tool_call_accuracy_llm``) go the same way when a judge is set.

With LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY and LANGFUSE_BASE_URL set, this talks to that Langfuse;
otherwise a local server on 127.0.0.1 stands in for it, and the example prints and checks what
Langfuse would have received. Without code: ``OTEL_TOOLSCORE_SINKS=langfuse`` and the same three
variables, under ``opentelemetry-instrument`` or ``otel-toolscore serve``.

Needs: pip install 'otel-toolscore[langfuse]'
"""

from __future__ import annotations

import base64
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_toolscore import Expectation, ToolScoreSpanProcessor
from otel_toolscore.online.processor import ScoredRun
from otel_toolscore.scripted import run_scripted_agent
from otel_toolscore.sinks import LangfuseSink


@contextlib.contextmanager
def langfuse() -> Iterator[tuple[str, str, str, Any]]:
    """(base URL, public key, secret key, the local stand-in or None)."""
    base = os.environ.get("LANGFUSE_BASE_URL") or os.environ.get("LANGFUSE_HOST")
    if base and os.environ.get("LANGFUSE_PUBLIC_KEY") and os.environ.get("LANGFUSE_SECRET_KEY"):
        yield base.rstrip("/"), os.environ["LANGFUSE_PUBLIC_KEY"], os.environ["LANGFUSE_SECRET_KEY"], None
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.json_capture import Answer, JsonCaptureServer

    # Langfuse answers a score batch with 202 {"message": "Accepted"}.
    with JsonCaptureServer(lambda request: Answer(202, {"message": "Accepted"})) as server:
        yield server.url, "pk-lf-local", "sk-lf-local", server


def main() -> int:
    scored: list[ScoredRun] = []
    with langfuse() as (base_url, public_key, secret_key, stand_in):
        auth = base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()
        spans_to_langfuse = BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"{base_url}/api/public/otel/v1/traces", headers={"Authorization": f"Basic {auth}"})
        )
        processor = ToolScoreSpanProcessor(
            spans_to_langfuse,
            expectations=[Expectation(agent_name="weather_agent", expected_tool="get_weather")],
            sinks=[LangfuseSink(public_key=public_key, secret_key=secret_key, base_url=base_url)],
            on_scored=scored.append,
            # Langfuse takes no OTLP metrics or logs: the evaluation events and metrics stay local here.
            meter_provider=MeterProvider(),
            logger_provider=LoggerProvider(),
        )
        provider = TracerProvider(resource=Resource.create({"service.name": "weather-service"}))
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("weather-agent")
        run_scripted_agent(tracer, "weather_agent", "What is the weather in Paris?", ["get_weather"])
        run_scripted_agent(tracer, "weather_agent", "What is the weather in Oslo?", ["search_web"])
        provider.shutdown()  # scores the runs, posts the scores, exports the spans

        for run in scored:
            print(f"trace {run.ref.trace_id:032x} observation {run.ref.span_id:016x}: "
                  f"tool_call_accuracy={run.score} ({'pass' if run.passed else 'fail'})")
        if stand_in is None:
            print(f"scores sent to {base_url}; open the traces in Langfuse to see them on the agent observations")
            return 0
        return check(stand_in, scored)


def check(stand_in: Any, scored: list[ScoredRun]) -> int:
    """What the local stand-in received: every run's scores on its root's trace and observation ids."""
    posted = [score for request in stand_in.posted("/api/public/scores") for score in request.json]
    by_name = {(s["traceId"], s["observationId"], s["name"]): s for s in posted}
    for run in scored:
        ids = (f"{run.ref.trace_id:032x}", f"{run.ref.span_id:016x}")
        numeric = by_name[(*ids, "tool_call_accuracy")]
        label = by_name[(*ids, "tool_call_accuracy.label")]
        assert (numeric["dataType"], numeric["value"]) == ("NUMERIC", run.score), numeric
        assert (label["dataType"], label["value"]) == ("CATEGORICAL", "pass" if run.passed else "fail"), label
        assert numeric["comment"] == label["comment"] and numeric["comment"].startswith(("pass:", "fail:"))
        print(f"  Langfuse got {numeric['name']}={numeric['value']} and {label['name']}={label['value']!r}: "
              f"{numeric['comment']}")
    assert len(posted) == 2 * len(scored) == 4, posted
    assert stand_in.posted("/api/public/otel/v1/traces"), "the spans went to Langfuse's OTLP endpoint"
    print("ok: 4 scores on 2 observations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
