"""Arize Phoenix as a real tracing backend: what it shows of the processor's scores.

The processor exports over OTLP/HTTP to a real ``phoenix serve`` on 127.0.0.1 (own venv, see
``tests/tools/phoenix.py``); the test reads everything back through Phoenix's REST API. Findings pinned
here for arize-phoenix 20.26.1:

* the root span's ``toolscore.code.*`` attributes and the inline ``annotations.0.annotation.*``
  attributes are stored and returned as span attributes;
* Phoenix does NOT turn the inline annotation attributes into span annotations (its annotations API
  returns none for the roots): only the annotations API (``POST /v1/span_annotations``) creates them,
  which the test does itself from the attributes Phoenix returned, to show that documented path;
* Phoenix converts OTel GenAI attributes to OpenInference at ingestion, so our spans get span kinds
  AGENT / LLM / TOOL from ``gen_ai.operation.name`` without any ``openinference.span.kind``.

Select with ``-m phoenix``; it also runs in the default ``make test``.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_toolscore.expectations import Expectation
from otel_toolscore.online.processor import ScoredRun, ToolScoreSpanProcessor
from otel_toolscore.scripted import run_scripted_agent
from tests.tools.phoenix import INSTALL_TIMEOUT_S, PhoenixServer, get_json, phoenix_server, wait_until

# On a machine without the Phoenix venv the fixture installs it first (minutes): allow for that.
pytestmark = [pytest.mark.phoenix, pytest.mark.timeout(INSTALL_TIMEOUT_S + 300)]

PROJECT = "otel-toolscore-e2e"  # set through the resource attribute Phoenix documents for it
PASS_QUERY, FAIL_QUERY = "Weather in Paris?", "Weather in Oslo?"


@pytest.fixture
def phoenix(tmp_path: Path) -> Iterator[PhoenixServer]:
    with phoenix_server(tmp_path) as server:  # stopped in the context manager's finally
        yield server


def _spans(phx: PhoenixServer) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = get_json(f"{phx.url}/v1/projects/{PROJECT}/spans?limit=100")["data"]
    return data


def _annotations(phx: PhoenixServer, span_ids: list[str]) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode([("span_ids", s) for s in span_ids] + [("limit", "100")])
    data: list[dict[str, Any]] = get_json(f"{phx.url}/v1/projects/{PROJECT}/span_annotations?{query}")["data"]
    return data


def _post_json(url: str, body: Any) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _query(root: dict[str, Any]) -> str:
    messages = json.loads(root["attributes"]["gen_ai.input.messages"])
    return str(messages[0]["parts"][0]["content"])


def test_phoenix_shows_scores_on_root_spans(phoenix: PhoenixServer) -> None:
    scored: list[ScoredRun] = []
    provider = TracerProvider(
        resource=Resource.create({"service.name": "weather-service", "openinference.project.name": PROJECT})
    )
    provider.add_span_processor(
        ToolScoreSpanProcessor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix.url}/v1/traces", timeout=10), schedule_delay_millis=100),
            expectations=[Expectation(agent_name="weather_agent", expected_tool="get_weather")],
            # Phoenix has no OTLP logs/metrics receiver: the evaluation events and metrics stay local.
            meter_provider=MeterProvider(),
            logger_provider=LoggerProvider(),
            on_scored=scored.append,
        )
    )
    tracer = provider.get_tracer("weather-agent")
    run_scripted_agent(tracer, "weather_agent", PASS_QUERY, ["get_weather"])
    run_scripted_agent(tracer, "weather_agent", FAIL_QUERY, ["search_web"])
    provider.shutdown()  # flushes the processor and the batch exporter
    assert sorted(r.score or 0.0 for r in scored) == [0.0, 1.0], "the processor did not score both runs"

    # -- the spans, in the project named by the resource attribute -----------------------------------
    spans = wait_until(
        f"6 spans in Phoenix project {PROJECT!r} (log: {phoenix.log})",
        lambda: found if len(found := _spans(phoenix)) >= 6 else None,
        timeout=30,
    )
    assert len(spans) == 6, [s["name"] for s in spans]
    roots = {_query(s): s for s in spans if s["parent_id"] is None}
    assert set(roots) == {PASS_QUERY, FAIL_QUERY}, [s["name"] for s in spans if s["parent_id"] is None]

    # -- the processor's attributes, as Phoenix returns them ------------------------------------------
    expected = {PASS_QUERY: (1.0, "pass"), FAIL_QUERY: (0.0, "fail")}
    for query, root in roots.items():
        attrs = root["attributes"]
        score, label = expected[query]
        assert (attrs.get("toolscore.code.score"), attrs.get("toolscore.code.label")) == (score, label), json.dumps(attrs)
        # The OpenInference inline annotation attributes arrive intact, as plain attributes.
        assert attrs["annotations.0.annotation.name"] == "tool_call_accuracy"
        assert attrs["annotations.0.annotation.annotator_kind"] == "CODE"
        assert attrs["annotations.0.annotation.score"] == score
        assert attrs["annotations.0.annotation.label"] == label
        assert attrs["annotations.0.annotation.explanation"].startswith(f"{label}: expected get_weather")

    # -- span kinds: Phoenix derives them from gen_ai.operation.name (no openinference.span.kind sent) ----
    kinds = {s["name"].split(" ")[0]: s["span_kind"] for s in spans}
    assert kinds == {"invoke_agent": "AGENT", "chat": "LLM", "execute_tool": "TOOL"}, kinds

    # -- span annotations: the inline attributes do not become annotations in this Phoenix ---------
    root_ids = [r["context"]["span_id"] for r in roots.values()]
    inline = _annotations(phoenix, root_ids)
    assert inline == [], (
        "Phoenix now turns inline annotations.N.annotation.* attributes into span annotations: "
        f"update this test and the README ({json.dumps(inline)[:2000]})"
    )

    # -- the documented way to show the score as a Phoenix annotation: its annotations API --------------
    # Posted here from the attributes Phoenix itself returned; the processor does not do this.
    body = {
        "data": [
            {
                "span_id": root["context"]["span_id"],
                "name": root["attributes"]["annotations.0.annotation.name"],
                "annotator_kind": root["attributes"]["annotations.0.annotation.annotator_kind"],
                "result": {
                    "score": root["attributes"]["annotations.0.annotation.score"],
                    "label": root["attributes"]["annotations.0.annotation.label"],
                    "explanation": root["attributes"]["annotations.0.annotation.explanation"],
                },
                "identifier": "otel-toolscore",
            }
            for root in roots.values()
        ]
    }
    inserted = _post_json(f"{phoenix.url}/v1/span_annotations?sync=true", body)["data"]
    assert len(inserted) == 2, inserted
    listed = _annotations(phoenix, root_ids)
    # Exactly the two posted ones: still nothing derived from the inline attributes.
    assert len(listed) == 2 and {a["identifier"] for a in listed} == {"otel-toolscore"}, listed
    shown = {a["span_id"]: a for a in listed}
    assert set(shown) == set(root_ids), shown
    for query, root in roots.items():
        annotation = shown[root["context"]["span_id"]]
        score, label = expected[query]
        assert annotation["name"] == "tool_call_accuracy"
        assert annotation["annotator_kind"] == "CODE"
        assert annotation["source"] == "API"
        assert (annotation["result"]["score"], annotation["result"]["label"]) == (score, label), annotation
