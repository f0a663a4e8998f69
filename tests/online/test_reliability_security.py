"""Security: no content reaches metric attributes, and the processor keeps no content unless asked.

Runs carry secrets everywhere an application could put them (the user's request, tool arguments and
results, the answer, a conversation id, tool names, many distinct agent names). Afterwards:

* every attribute of every metric point is scanned: no secret, only documented low-cardinality keys,
  bounded distinct agent names, short values;
* the score attributes and the evaluation events carry no request/argument/result content;
* while runs are pending, nothing reachable from the processor's buffers holds content when no judge
  is configured (and, as a control, it does when ``capture_content`` is switched on);
* the scoring service binds the loopback interface unless told otherwise.

Judge-side redaction and prompt injection are covered in ``test_llm_scorer.py`` / ``test_judge_online.py``,
and against hostile shapes (encoded, look-alike, cut by the extractor) on the wire in ``test_hostile_judge.py``.
"""

from __future__ import annotations

import gc
import json
from collections import deque
from collections.abc import Iterable
from types import FunctionType, ModuleType
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore import Expectation, ToolScoreSpanProcessor, expect
from otel_toolscore.scripted import ScriptedCall, run_scripted_agent

pytestmark = pytest.mark.timeout(60)

SECRET_QUERY = "my password is hunter2-QUERY-7f3a"
SECRET_ARG = "sk-live-ARGUMENT-51c9e2"
SECRET_RESULT = "card 4111-1111-1111-RESULT"
SECRET_ANSWER = "ANSWER-SECRET-0b77"
SECRET_CONVERSATION = "conv-SECRET-9d1e"
SECRET_TOOL = "exfiltrate_TOOLNAME_SECRET"
CONTENT_SECRETS = (SECRET_QUERY, SECRET_ARG, SECRET_RESULT, SECRET_ANSWER)
ALL_SECRETS = (*CONTENT_SECRETS, SECRET_CONVERSATION, SECRET_TOOL)

#: Attribute keys allowed on metric points (all low-cardinality, from configuration or fixed sets).
METRIC_KEYS = {
    "gen_ai.evaluation.name", "gen_ai.evaluation.score.label", "gen_ai.agent.name", "toolscore.expected_tool",
    "toolscore.outcome", "toolscore.reason", "gen_ai.token.type", "gen_ai.request.model", "gen_ai.response.model",
    "error.type", "toolscore.signal", "toolscore.client",
}


class Rig:
    def __init__(self, **options: Any) -> None:
        self.spans = InMemorySpanExporter()
        self.reader = InMemoryMetricReader()
        self.logs = InMemoryLogRecordExporter()
        lp = LoggerProvider()
        lp.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        self.scored: list[Any] = []
        self.processor = ToolScoreSpanProcessor(
            SimpleSpanProcessor(self.spans),
            expectations=options.pop("expectations", [Expectation(agent_name="weather_agent", expected_tool="get_weather")]),
            meter_provider=MeterProvider(metric_readers=[self.reader]),
            logger_provider=lp,
            on_scored=self.scored.append,
            **options,
        )
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("security")

    def metric_points(self) -> list[tuple[str, dict[str, Any]]]:
        data = self.reader.get_metrics_data()
        out = []
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    for p in m.data.data_points:
                        out.append((m.name, dict(p.attributes or {})))
        return out


def _secret_run(tracer: Any, agent: str = "weather_agent") -> None:
    run_scripted_agent(
        tracer,
        agent,
        SECRET_QUERY,
        [ScriptedCall("get_weather", {"api_key": SECRET_ARG}, result={"card": SECRET_RESULT}),
         ScriptedCall(SECRET_TOOL, {"x": SECRET_ARG}, result=SECRET_RESULT)],
        answer=SECRET_ANSWER,
        attributes={"gen_ai.conversation.id": SECRET_CONVERSATION},
    )


def _has_secret(text: str, secrets: Iterable[str] = ALL_SECRETS) -> list[str]:
    return [s for s in secrets if s in text]


def test_no_content_in_metric_attributes() -> None:
    rig = Rig(
        expectations=[
            Expectation(name="pw", query_regex="(?i)password", expected_tool_order=("get_weather", SECRET_TOOL)),
            Expectation(agent_name="weather_agent", expected_tool="get_weather"),
        ],
        max_metric_agents=5,
    )
    for _ in range(3):
        _secret_run(rig.tracer)
    with expect(expected_tool="get_weather"):
        _secret_run(rig.tracer, agent="other_agent")
    for i in range(40):  # many distinct agent names from the data: bounded on metrics
        _secret_run(rig.tracer, agent=f"agent-{i}-{SECRET_CONVERSATION}")
    run_scripted_agent(rig.tracer, "weather_agent", SECRET_QUERY, [], capture_content=False)
    assert rig.processor.force_flush(10_000)
    points = rig.metric_points()
    assert points
    agents = set()
    for name, attrs in points:
        assert set(attrs) <= METRIC_KEYS, (name, attrs)
        for key, value in attrs.items():
            text = json.dumps(value) if not isinstance(value, str) else value
            assert not _has_secret(text, (*CONTENT_SECRETS, SECRET_TOOL)), (name, key, value)
            assert len(text) <= 256, (name, key)
        if "gen_ai.agent.name" in attrs:
            agents.add(attrs["gen_ai.agent.name"])
    # 5 agent names from the data at most, plus the rule's declared agent and the overflow value.
    assert len(agents - {"weather_agent", "_OTHER"}) <= 5
    rig.provider.shutdown()


def test_scores_and_events_carry_no_request_or_argument_content() -> None:
    rig = Rig()
    _secret_run(rig.tracer)
    assert rig.processor.force_flush(10_000)
    (root,) = [s for s in rig.spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    added = {k: v for k, v in (root.attributes or {}).items() if k.startswith(("toolscore.", "annotations."))}
    assert added, "the root was scored"
    assert not _has_secret(json.dumps(added, default=list), CONTENT_SECRETS), added
    events = [r.log_record for r in rig.logs.get_finished_logs()]
    assert events
    for e in events:
        text = json.dumps({"attributes": dict(e.attributes or {}), "body": e.body}, default=str)
        assert not _has_secret(text, CONTENT_SECRETS), text
    rig.provider.shutdown()


# -- what the processor keeps while runs are pending -------------------------------------------------------
_SKIP_TYPES = (type, ModuleType, FunctionType, ReadableSpan, trace_api.Span)


def _strings_reachable(root: object, limit: int = 200_000) -> Iterable[str]:
    """Every ``str`` reachable from ``root`` through containers and object fields (not through
    modules, classes, functions or span objects, which belong to the application)."""
    seen: set[int] = set()
    todo: deque[object] = deque([root])
    while todo and len(seen) < limit:
        obj = todo.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            yield obj
            continue
        if isinstance(obj, (bytes, int, float, bool)) or obj is None or isinstance(obj, _SKIP_TYPES):
            continue
        todo.extend(gc.get_referents(obj))


def _pending_runs(rig: Rig, n: int) -> list[Any]:
    """``n`` runs whose children ended (with secrets) and whose roots are still open."""
    roots = []
    for _ in range(n):
        root = rig.tracer.start_span(
            "invoke_agent weather_agent",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent",
                        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": SECRET_QUERY}]}])},
        )
        ctx = trace_api.set_span_in_context(root)
        chat = rig.tracer.start_span("chat m", context=ctx, attributes={"gen_ai.operation.name": "chat"})
        chat.set_attribute("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": SECRET_QUERY}]}]))
        chat.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [
            {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"api_key": SECRET_ARG}}]}]))
        chat.end()
        rig.tracer.start_span("execute_tool get_weather", context=ctx, attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.arguments": json.dumps({"api_key": SECRET_ARG}),
            "gen_ai.tool.call.result": json.dumps({"card": SECRET_RESULT})}).end()
        roots.append(root)
    return roots


def _secrets_held(rig: Rig) -> set[str]:
    found: set[str] = set()
    for text in _strings_reachable(rig.processor._core.table):
        found.update(_has_secret(text, CONTENT_SECRETS))
    return found


def test_pending_runs_hold_no_content_without_a_judge() -> None:
    rig = Rig()
    roots = _pending_runs(rig, 5)
    assert rig.processor.force_flush(10_000)  # the worker has read every span that ended
    assert rig.processor.pending_traces == 5
    assert _secrets_held(rig) == set()
    for r in roots:
        r.end()
    assert rig.processor.force_flush(10_000)
    assert len(rig.scored) == 5
    for s in rig.scored:  # what leaves through on_scored has no content either
        assert s.run.user_query is None and s.run.final_output is None
        assert all(c.arguments is None and c.result is None for c in s.run.tool_calls)
    rig.provider.shutdown()


def test_control_content_is_held_when_capture_is_on() -> None:
    """The scan above can see content: with ``capture_content=True`` the same runs do hold it."""
    rig = Rig(capture_content=True)
    roots = _pending_runs(rig, 2)
    assert rig.processor.force_flush(10_000)
    assert _secrets_held(rig)  # at least the arguments/results are kept for a judge to read
    for r in roots:
        r.end()
    assert rig.processor.force_flush(10_000)
    rig.provider.shutdown()


def test_service_binds_loopback_by_default() -> None:
    from otel_toolscore.service.settings import load_config

    assert load_config(environ={}).service.host == "127.0.0.1"
