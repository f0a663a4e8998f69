"""The online judge end to end: scripted agent → real SDK → ToolScoreSpanProcessor → Judge → real HTTP
to the local OpenAI-compatible test server → log records, carrier spans and metrics in memory."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore import (
    AgentRun,
    Expectation,
    Judge,
    JudgeSampler,
    ToolScoreSpanProcessor,
    create_tool_call_accuracy_scorer_llm,
)
from otel_toolscore.scripted import ScriptedCall, run_scripted_agent
from tests.support.openai_server import (
    OpenAITestServer,
    echo_judge,
    error,
    garbage,
    judge_answer,
    rate_limited,
)
from tests.support.telemetry import counter_by, counter_total, evaluation_events, metric_points

pytestmark = pytest.mark.timeout(60)

EXPECT = [Expectation(agent_name="weather_agent", expected_tool="get_weather")]
JUDGE_SPAN = "evaluate tool_call_accuracy_llm"


@dataclass
class Pipe:
    processor: ToolScoreSpanProcessor
    provider: TracerProvider
    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter
    metrics: InMemoryMetricReader
    judge: Judge

    @property
    def tracer(self) -> Any:
        return self.provider.get_tracer("test")

    def flush(self, timeout_millis: int = 10_000) -> bool:
        return self.processor.force_flush(timeout_millis)

    def agent_run(self, query: str = "What is the weather in Paris?", calls: Any = ("get_weather",), **kw: Any) -> None:
        steps = [ScriptedCall(c, {"city": "Paris"}) if isinstance(c, str) else c for c in calls]
        run_scripted_agent(self.tracer, kw.pop("agent", "weather_agent"), query, steps, "It is sunny.", **kw)

    def roots(self) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name.startswith("invoke_agent")]

    def carriers(self) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name == JUDGE_SPAN]

    def judge_events(self) -> list[Any]:
        return evaluation_events(self.logs.get_finished_logs(), "tool_call_accuracy_llm")

    def points(self, name: str) -> list[Any]:
        return metric_points(self.metrics, name)

    def counter(self, name: str, **attrs: Any) -> int:
        return counter_total(self.metrics, name, **attrs)

    def by(self, name: str, key: str) -> dict[str, int]:
        return counter_by(self.metrics, name, key)


def make_pipe(
    base_url: str,
    *,
    sampler: JudgeSampler | None = None,
    scorer_options: dict[str, Any] | None = None,
    expectations: Any = EXPECT,
    **judge_options: Any,
) -> Pipe:
    spans, logs, reader = InMemorySpanExporter(), InMemoryLogRecordExporter(), InMemoryMetricReader()
    lp = LoggerProvider()
    lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
    mp = MeterProvider(metric_readers=[reader])
    provider = TracerProvider()
    options = {"max_retries": 0, "timeout": 5.0, **(scorer_options or {})}
    scorer = create_tool_call_accuracy_scorer_llm("test-judge", ["get_weather", "search_web"], base_url=base_url,
                                                  api_key="sk-test-local", **options)
    judge = Judge(scorer, sampler=sampler or JudgeSampler(ratio=1.0, max_per_minute=None, max_tokens_per_hour=None),
                  tracer_provider=provider, **judge_options)
    processor = ToolScoreSpanProcessor(SimpleSpanProcessor(spans), expectations=expectations, judge=judge,
                                       meter_provider=mp, logger_provider=lp)
    provider.add_span_processor(processor)
    return Pipe(processor, provider, spans, logs, reader, judge)


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(echo_judge()) as s:
        yield s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _assert_accounted(pipe: Pipe, offered: int) -> None:
    """requests + skipped = offered, in the judge's stats and in the exported metrics alike."""
    stats = pipe.judge.stats()
    assert stats.queued == 0 and stats.in_flight == 0
    assert stats.offered == offered
    assert stats.accounted == offered
    assert pipe.by("toolscore.judge.requests", "toolscore.outcome") == stats.requests
    assert pipe.by("toolscore.judge.skipped", "toolscore.reason") == stats.skipped


# -- what a judgment writes ------------------------------------------------------------------------
def test_a_judged_run_writes_event_carrier_span_and_metrics(server: OpenAITestServer) -> None:
    server.set_handler(lambda r: judge_answer([("get_weather", True)], ["search_web"], "Weather was needed; a web search too.",
                                              request=r, prompt_tokens=300, completion_tokens=40))
    pipe = make_pipe(server.base_url)
    pipe.agent_run()
    assert pipe.flush()
    (root,) = pipe.roots()
    # The log record: parented to the evaluated root, score, label, reason.
    (event,) = pipe.judge_events()
    assert (event.trace_id, event.span_id) == (root.context.trace_id, root.context.span_id)
    a = event.attributes
    assert a["gen_ai.evaluation.score.value"] == 0.5
    assert a["gen_ai.evaluation.score.label"] == "fail"
    assert a["gen_ai.evaluation.explanation"] == "Weather was needed; a web search too."
    assert a["toolscore.judge.sampled_by"] == "ratio"
    assert "error.type" not in a
    # The carrier span: same trace, child of the root, exactly one link to it, EVALUATOR.
    (carrier,) = pipe.carriers()
    assert carrier.context.trace_id == root.context.trace_id
    assert carrier.parent is not None and carrier.parent.span_id == root.context.span_id
    assert [(lk.context.trace_id, lk.context.span_id) for lk in carrier.links] == [(root.context.trace_id, root.context.span_id)]
    c = carrier.attributes
    assert c["openinference.span.kind"] == "EVALUATOR"
    assert c["gen_ai.evaluation.name"] == "tool_call_accuracy_llm"
    assert c["gen_ai.evaluation.score.value"] == 0.5
    assert c["gen_ai.evaluation.score.label"] == "fail"
    assert list(c["toolscore.judge.evaluations.tool"]) == ["get_weather"]
    assert list(c["toolscore.judge.evaluations.appropriate"]) == [True]
    assert list(c["toolscore.judge.missing_tools"]) == ["search_web"]
    assert c["toolscore.judge.model"] == "test-judge"
    assert (c["toolscore.judge.usage.input_tokens"], c["toolscore.judge.usage.output_tokens"]) == (300, 40)
    assert carrier.end_time >= carrier.start_time >= root.end_time
    # The processor did not take the carrier span for agent activity: one run seen, one code score.
    assert pipe.counter("toolscore.runs") == 1
    assert pipe.counter("toolscore.dropped") == 0 and pipe.counter("toolscore.trace.pending") == 0
    assert pipe.processor.pending_traces == 0
    # Metrics.
    (hist,) = [p for p in pipe.points("gen_ai.evaluation.score") if p.attributes["gen_ai.evaluation.name"] == "tool_call_accuracy_llm"]
    assert hist.count == 1 and hist.sum == 0.5
    assert hist.attributes["gen_ai.evaluation.score.label"] == "fail"
    assert hist.attributes["toolscore.judge.sampled_by"] == "ratio"
    assert pipe.counter("toolscore.judge.requests", **{"toolscore.outcome": "ok"}) == 1
    assert pipe.counter("toolscore.judge.tokens", **{"gen_ai.token.type": "input"}) == 300
    assert pipe.counter("toolscore.judge.tokens", **{"gen_ai.token.type": "output"}) == 40
    (duration,) = pipe.points("toolscore.judge.duration")
    assert duration.count == 1 and 0 < duration.sum < 30
    assert [p.value for p in pipe.points("toolscore.judge.queue_depth")] == [0]
    _assert_accounted(pipe, 1)
    pipe.provider.shutdown()


def test_pass_label_and_threshold(server: OpenAITestServer) -> None:
    server.set_handler(lambda r: judge_answer([("get_weather", True), ("search_web", False)], request=r))
    pipe = make_pipe(server.base_url, pass_threshold=0.5)
    pipe.agent_run(calls=["get_weather", "search_web"])
    assert pipe.flush()
    (event,) = pipe.judge_events()
    assert event.attributes["gen_ai.evaluation.score.value"] == 0.5
    assert event.attributes["gen_ai.evaluation.score.label"] == "pass"
    pipe.provider.shutdown()


def test_the_judge_http_call_is_not_traced(server: OpenAITestServer) -> None:
    """An HTTP-client instrumentation (here: an httpx2 event hook doing what one does) sees the
    suppress keys and records nothing; without them it would add a span the processor might score."""
    import httpx2

    seen: list[tuple[Any, Any]] = []
    provider_box: list[TracerProvider] = []

    def instrumentation(request: Any) -> None:
        suppressed = otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY)
        http_suppressed = otel_context.get_value(otel_context._SUPPRESS_HTTP_INSTRUMENTATION_KEY)
        seen.append((suppressed, http_suppressed))
        if not suppressed and not http_suppressed:
            provider_box[0].get_tracer("httpx").start_span("POST").end()

    client_http = httpx2.Client(event_hooks={"request": [instrumentation]})
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test-local", max_retries=0, http_client=client_http)
    pipe = make_pipe(server.base_url, scorer_options={"client": client})
    provider_box.append(pipe.provider)
    pipe.agent_run()
    assert pipe.flush()
    assert seen == [(True, True)]
    names = sorted(s.name for s in pipe.spans.get_finished_spans())
    assert names == ["chat model", JUDGE_SPAN, "execute_tool get_weather", "invoke_agent weather_agent"]
    pipe.provider.shutdown()


def test_content_is_redacted_and_arguments_withheld(server: OpenAITestServer) -> None:
    pipe = make_pipe(server.base_url)
    pipe.agent_run(query="Weather for me, alice@example.com, in Paris?",
                   calls=[ScriptedCall("get_weather", {"city": "Paris", "secret": "sk-abcdefghijklmnopqrstuvwx"})])
    assert pipe.flush()
    (request,) = server.requests
    assert "alice@example.com" not in request.prompt_text and "[REDACTED_EMAIL]" in request.prompt_text
    assert "sk-abcdefghijklmnopqrstuvwx" not in request.prompt_text
    assert '"city"' not in request.prompt_text  # arguments are sent only when enabled
    pipe.provider.shutdown()


# -- sampling through the processor -------------------------------------------------------------------
def test_ratio_zero_with_priorities_off_judges_nothing(server: OpenAITestServer) -> None:
    sampler = JudgeSampler(0.0, always_when_code_fails=False, always_when_new_sequence=False)
    pipe = make_pipe(server.base_url, sampler=sampler)
    for _ in range(5):
        pipe.agent_run(calls=["search_web"])
    assert pipe.flush()
    assert server.request_count == 0
    assert pipe.judge_events() == [] and pipe.carriers() == []
    assert pipe.counter("toolscore.judge.skipped", **{"toolscore.reason": "not_sampled"}) == 5
    _assert_accounted(pipe, 5)
    pipe.provider.shutdown()


def test_code_failures_are_always_judged(server: OpenAITestServer) -> None:
    sampler = JudgeSampler(0.0, always_when_code_fails=True, always_when_new_sequence=False)
    pipe = make_pipe(server.base_url, sampler=sampler)
    for i in range(6):
        pipe.agent_run(calls=["search_web"] if i % 2 else ["get_weather"])  # 3 fail the code scorer
    assert pipe.flush()
    events = pipe.judge_events()
    assert len(events) == 3 == server.request_count
    assert {e.attributes["toolscore.judge.sampled_by"] for e in events} == {"code_fail"}
    # The judged ones are exactly the runs whose code score was 0.
    failed = {r.context.span_id for r in pipe.roots() if r.attributes["toolscore.code.score"] == 0.0}
    assert {e.span_id for e in events} == failed
    assert pipe.counter("toolscore.judge.skipped", **{"toolscore.reason": "not_sampled"}) == 3
    _assert_accounted(pipe, 6)
    pipe.provider.shutdown()


def test_new_tool_sequences_are_judged_once(server: OpenAITestServer) -> None:
    sampler = JudgeSampler(0.0, always_when_code_fails=False, always_when_new_sequence=True)
    pipe = make_pipe(server.base_url, sampler=sampler)
    for calls in (["get_weather"], ["get_weather"], ["get_weather", "search_web"], ["get_weather"], ["get_weather", "search_web"]):
        pipe.agent_run(calls=calls)
    assert pipe.flush()
    assert server.request_count == 2
    assert {e.attributes["toolscore.judge.sampled_by"] for e in pipe.judge_events()} == {"new_sequence"}
    _assert_accounted(pipe, 5)
    pipe.provider.shutdown()


def test_runs_without_content_are_not_sent(server: OpenAITestServer) -> None:
    pipe = make_pipe(server.base_url)
    pipe.agent_run(capture_content=False)
    pipe.agent_run()
    assert pipe.flush()
    assert server.request_count == 1
    assert pipe.counter("toolscore.judge.skipped", **{"toolscore.reason": "no_content"}) == 1
    _assert_accounted(pipe, 2)
    pipe.provider.shutdown()


# -- limits ----------------------------------------------------------------------------------------------
def test_rate_limit_stops_requests_and_counts_them(server: OpenAITestServer) -> None:
    pipe = make_pipe(server.base_url, sampler=JudgeSampler(1.0, max_per_minute=3, max_tokens_per_hour=None))
    for _ in range(8):
        pipe.agent_run()
    assert pipe.flush()
    assert server.request_count == 3
    assert pipe.counter("toolscore.judge.requests", **{"toolscore.outcome": "ok"}) == 3
    assert pipe.counter("toolscore.judge.skipped", **{"toolscore.reason": "rate_limit"}) == 5
    _assert_accounted(pipe, 8)
    pipe.provider.shutdown()


def test_token_budget_is_never_overrun(server: OpenAITestServer) -> None:
    budget = 6_000
    server.set_handler(lambda r: judge_answer([("get_weather", True)], request=r, completion_tokens=30))
    pipe = make_pipe(server.base_url, sampler=JudgeSampler(1.0, max_per_minute=None, max_tokens_per_hour=budget))
    for _ in range(12):
        pipe.agent_run()
    assert pipe.flush()
    used = pipe.counter("toolscore.judge.tokens")
    ok = pipe.counter("toolscore.judge.requests", **{"toolscore.outcome": "ok"})
    skipped = pipe.counter("toolscore.judge.skipped", **{"toolscore.reason": "budget"})
    assert ok >= 1 and skipped >= 1 and ok + skipped == 12
    assert server.request_count == ok  # a budget skip sends nothing
    assert used <= budget
    assert pipe.judge.sampler.budget is not None and pipe.judge.sampler.budget.used == used
    _assert_accounted(pipe, 12)
    pipe.provider.shutdown()


# -- faults ------------------------------------------------------------------------------------------------
def _baseline_agent_spans() -> list[tuple[str, dict[str, Any]]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(ToolScoreSpanProcessor(SimpleSpanProcessor(spans), expectations=EXPECT,
                                                       meter_provider=MeterProvider(), logger_provider=LoggerProvider()))
    run_scripted_agent(provider.get_tracer("test"), "weather_agent", "What is the weather in Paris?",
                       [ScriptedCall("get_weather", {"city": "Paris"})], "It is sunny.")
    provider.force_flush()
    out = sorted((s.name, dict(s.attributes)) for s in spans.get_finished_spans())
    provider.shutdown()
    return out


@pytest.mark.parametrize(
    ("fault", "outcome", "scorer_options"),
    [
        ("500", "error", {}),
        ("429", "rate_limited", {"max_retries": 1}),
        ("slow", "timeout", {"timeout": 0.3}),
        ("garbage", "invalid_answer", {}),
        ("down", "error", {}),
    ],
)
def test_faults_are_counted_and_never_touch_the_agent_spans(
    server: OpenAITestServer, fault: str, outcome: str, scorer_options: dict[str, Any]
) -> None:
    replies = {
        "500": lambda r: error(500),
        "429": lambda r: rate_limited(0),
        "slow": lambda r: judge_answer([("get_weather", True)], request=r, delay=3.0),
        "garbage": lambda r: garbage(),
    }
    base_url = f"http://127.0.0.1:{_free_port()}/v1" if fault == "down" else server.base_url
    if fault != "down":
        server.set_handler(replies[fault])
    pipe = make_pipe(base_url, scorer_options=scorer_options)
    started = time.perf_counter()
    pipe.agent_run()
    agent_time = time.perf_counter() - started
    assert agent_time < 0.5  # the agent never waits for the judge
    assert pipe.flush()
    # The agent's spans are exactly what they are without a judge.
    agent_spans = sorted((s.name, dict(s.attributes)) for s in pipe.spans.get_finished_spans() if s.name != JUDGE_SPAN)
    assert agent_spans == _baseline_agent_spans()
    assert all(s.status.is_ok for s in pipe.spans.get_finished_spans())
    # Counted, with an evaluation record that has error.type and no score.
    assert pipe.counter("toolscore.judge.requests", **{"toolscore.outcome": outcome}) == 1
    (event,) = pipe.judge_events()
    assert event.attributes["error.type"] == outcome
    assert "gen_ai.evaluation.score.value" not in event.attributes
    assert [p for p in pipe.points("gen_ai.evaluation.score") if p.attributes["gen_ai.evaluation.name"] == "tool_call_accuracy_llm"] == []
    (carrier,) = pipe.carriers()
    assert carrier.attributes["error.type"] == outcome and carrier.attributes["toolscore.judge.outcome"] == outcome
    assert "gen_ai.evaluation.score.value" not in carrier.attributes
    if fault == "429":
        assert server.status_counts == {429: 2}  # the client's retry is inside one judgment
    if fault == "garbage":
        assert server.request_count == 2  # one corrective retry, then a counted failure
    _assert_accounted(pipe, 1)
    pipe.provider.shutdown()


def test_consecutive_failures_open_the_circuit(server: OpenAITestServer) -> None:
    server.set_handler(lambda r: error(503))
    pipe = make_pipe(server.base_url, workers=1, failure_threshold=2, circuit_cooldown_s=60)
    for _ in range(6):
        pipe.agent_run()
        assert pipe.flush()
    assert server.request_count == 2
    assert pipe.counter("toolscore.judge.requests", **{"toolscore.outcome": "error"}) == 2
    assert pipe.counter("toolscore.judge.skipped", **{"toolscore.reason": "circuit_open"}) == 4
    assert pipe.judge.stats().circuit_open
    _assert_accounted(pipe, 6)
    pipe.provider.shutdown()


def test_circuit_closes_after_a_successful_trial(server: OpenAITestServer) -> None:
    server.enqueue(error(503), error(503))
    pipe = make_pipe(server.base_url, workers=1, failure_threshold=2, circuit_cooldown_s=0.3)
    for _ in range(3):
        pipe.agent_run()
        assert pipe.flush()
    assert pipe.judge.stats().circuit_open
    time.sleep(0.35)
    for _ in range(2):
        pipe.agent_run()
        assert pipe.flush()
    assert not pipe.judge.stats().circuit_open
    assert pipe.by("toolscore.judge.requests", "toolscore.outcome") == {"error": 2, "ok": 2}
    assert pipe.counter("toolscore.judge.skipped", **{"toolscore.reason": "circuit_open"}) == 1
    _assert_accounted(pipe, 5)
    pipe.provider.shutdown()


# -- queue, flush, shutdown ----------------------------------------------------------------------------------
def test_full_queue_drops_and_counts(server: OpenAITestServer) -> None:
    server.delay = 0.3
    pipe = make_pipe(server.base_url, workers=1, queue_size=2)
    started = time.perf_counter()
    for _ in range(10):
        pipe.agent_run()
    elapsed = time.perf_counter() - started
    assert elapsed < 1.5  # offering never waits for the judge (10 judgments take 3 s)
    pipe.processor.force_flush(0)  # the processor's worker has handed every run to the judge
    (depth,) = pipe.points("toolscore.judge.queue_depth")
    assert depth.value >= 1  # observed while runs wait
    assert pipe.flush()
    stats = pipe.judge.stats()
    # While offering, the worker finished at most one judgment per 0.3 s (+1 running, +2 queued).
    assert stats.skipped.get("queue_full", 0) >= 10 - (int(elapsed / 0.3) + 1 + 1 + 2)
    assert stats.requests == {"ok": server.request_count}
    _assert_accounted(pipe, 10)
    pipe.provider.shutdown()


def test_force_flush_waits_for_queued_judgments_up_to_its_timeout(server: OpenAITestServer) -> None:
    server.delay = 0.4
    pipe = make_pipe(server.base_url, workers=1)
    for _ in range(3):
        pipe.agent_run()
    assert pipe.judge.force_flush(0.1) is False  # not done yet
    assert pipe.judge.force_flush(5.0) is True
    assert len(pipe.judge_events()) == 3
    pipe.provider.shutdown()


def test_shutdown_under_load_loses_nothing_silently(server: OpenAITestServer) -> None:
    server.delay = 0.25
    pipe = make_pipe(server.base_url, workers=2, queue_size=15)
    # The first judgment of a process imports the OpenAI client (about a second here): done before
    # the clock starts, or run alone this test judged nothing within its 0.6 s shutdown budget.
    assert pipe.judge.scorer.run(AgentRun(run_id="warm-up", user_query="q")) is not None
    offered = 40
    for _ in range(offered):
        pipe.agent_run()
    pipe.processor.force_flush(0)  # the processor has handed every run to the judge
    started = time.perf_counter()
    pipe.judge.shutdown(timeout_seconds=0.6)
    assert time.perf_counter() - started < 2.0
    stats = pipe.judge.stats()
    assert stats.offered == stats.accounted == offered
    assert stats.skipped.get("abandoned", 0) >= 1
    assert stats.skipped.get("queue_full", 0) >= 1
    assert stats.requests.get("ok", 0) >= 2
    assert pipe.by("toolscore.judge.requests", "toolscore.outcome") == stats.requests
    assert pipe.by("toolscore.judge.skipped", "toolscore.reason") == stats.skipped
    # Runs arriving after the shutdown are counted too.
    pipe.agent_run()
    assert pipe.judge.stats().skipped["abandoned"] == stats.skipped["abandoned"] + 1
    pipe.provider.shutdown()
    # Every judged run wrote its record; abandoned in-flight requests wrote nothing.
    assert len(pipe.judge_events()) == stats.judged


def test_processor_shutdown_drains_the_judge(server: OpenAITestServer) -> None:
    server.delay = 0.05
    pipe = make_pipe(server.base_url, workers=2)
    for _ in range(6):
        pipe.agent_run()
    pipe.provider.shutdown()
    stats = pipe.judge.stats()
    assert stats.requests == {"ok": 6} and stats.skipped == {}
    assert len(pipe.judge_events()) == 6 and len(pipe.carriers()) == 6


def test_a_judge_serves_one_processor(server: OpenAITestServer) -> None:
    pipe = make_pipe(server.base_url)
    with pytest.raises(RuntimeError, match="one Judge per processor"):
        ToolScoreSpanProcessor(None, judge=pipe.judge, meter_provider=MeterProvider(), logger_provider=LoggerProvider())
    pipe.provider.shutdown()


def test_carrier_span_can_be_switched_off(server: OpenAITestServer) -> None:
    pipe = make_pipe(server.base_url, carrier_span=False)
    pipe.agent_run()
    assert pipe.flush()
    assert pipe.carriers() == [] and len(pipe.judge_events()) == 1
    pipe.provider.shutdown()


def test_a_failing_user_rule_never_reaches_the_agent(server: OpenAITestServer) -> None:
    def broken(scored: Any) -> bool:
        raise RuntimeError("bug in the user's predicate")

    sampler = JudgeSampler(0.0, always_when_code_fails=False, always_when_new_sequence=False, always_when=broken)
    pipe = make_pipe(server.base_url, sampler=sampler)
    pipe.agent_run()
    assert pipe.flush()
    (root,) = pipe.roots()
    assert root.attributes["toolscore.code.score"] == 1.0
    assert pipe.counter("toolscore.judge.skipped", **{"toolscore.reason": "not_sampled"}) == 1
    _assert_accounted(pipe, 1)
    pipe.provider.shutdown()


def test_the_application_flag_asks_for_a_judgment_via_attribute_or_baggage(server: OpenAITestServer) -> None:
    from opentelemetry import baggage, context

    sampler = JudgeSampler(0.0, always_when_code_fails=False, always_when_new_sequence=False)
    pipe = make_pipe(server.base_url, sampler=sampler)
    pipe.agent_run()  # not flagged: not sampled
    pipe.agent_run(attributes={"toolscore.judge": True})  # flagged on the root span
    token = context.attach(baggage.set_baggage("toolscore.judge", "true"))
    try:
        pipe.agent_run()  # flagged through baggage (set by an upstream service)
    finally:
        context.detach(token)
    assert pipe.flush()
    assert server.request_count == 2
    assert len(pipe.judge_events()) == 2
    assert pipe.counter("toolscore.judge.skipped", **{"toolscore.reason": "not_sampled"}) == 1
    _assert_accounted(pipe, 3)
    pipe.provider.shutdown()


def test_idle_judge_workers_sleep_and_shutdown_wakes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no run queued the workers do not poll: one counts skips now and then (here every 60 s),
    the others sleep until a run comes. Shutdown wakes them at once, and skips still reach the
    metrics by a flush."""
    from otel_toolscore.judge import _queue

    monkeypatch.setattr(_queue, "_SIGNALS_S", 60.0)
    pipe = make_pipe("http://127.0.0.1:9/v1", workers=4)  # never called: nothing is sampled below
    queue = pipe.judge._runs
    time.sleep(0.2)  # the workers are asleep on the empty queue
    queue.skip("rate_limited")
    assert pipe.flush()
    assert pipe.counter("toolscore.judge.skipped", **{"toolscore.reason": "rate_limited"}) == 1
    started = time.perf_counter()
    pipe.provider.shutdown()
    assert time.perf_counter() - started < 0.4  # each join(0.5) would wait out a sleeping worker
    assert not any(t.is_alive() for t in queue._threads)
    assert queue.qsize() == 0  # shutdown's wake-ups are not runs
