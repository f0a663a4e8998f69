"""Hostile judge endpoints and hostile run content (issue 13, "Judge").

Each case sends what was observed to break the judge and asserts the promise: an overall deadline per
judgment that a trickling server cannot stretch (and that the circuit breaker sees), every failure a
``JudgeError`` of a stated kind, missing tools checked against the run, token usage that cannot
poison budgets. Real HTTP to the local OpenAI-compatible test server on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from typing import Any, get_args

import pytest

from otel_toolscore import JudgeSampler, create_tool_call_accuracy_scorer_llm
from otel_toolscore.model import AgentRun, ToolCall, ToolDefinition
from otel_toolscore.scorers.llm import JudgeError, JudgeErrorKind, ToolCallAccuracyLLMScorer, score_answer
from tests.support.openai_server import OpenAITestServer, Reply, chat_completion, echo_judge, error, judge_answer
from tests.test_judge_online import make_pipe

pytestmark = pytest.mark.timeout(90)

KINDS = set(get_args(JudgeErrorKind))
TOOLS = [{"name": "get_weather", "description": "Weather now"}, {"name": "search_web", "description": "Search"}]


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(echo_judge()) as s:
        yield s


def scorer_for(server: OpenAITestServer, **kwargs: Any) -> ToolCallAccuracyLLMScorer:
    options: dict[str, Any] = {"base_url": server.base_url, "api_key": "sk-test-local", "timeout": 5.0, "max_retries": 0}
    options.update(kwargs)
    return create_tool_call_accuracy_scorer_llm("test-judge", TOOLS, **options)


def a_run(*names: str, user: str = "What is the weather in Paris?") -> AgentRun:
    return AgentRun(run_id="r-1", user_query=user, final_output="It is sunny.",
                    tool_calls=[ToolCall(name=n, call_id=f"c{i}") for i, n in enumerate(names)])


def trickle(request: Any = None, *, body_only: bool = False) -> Reply:
    reply = judge_answer([("get_weather", True)], request=request)
    reply.trickle, reply.trickle_body_only = 1.0, body_only  # 1 byte/s: every read is well inside `timeout`
    return reply


# -- an overall deadline per judgment ---------------------------------------------------------------------
@pytest.mark.parametrize("body_only", [False, True], ids=["whole-response", "body"])
def test_a_trickling_server_is_cut_at_the_deadline(server: OpenAITestServer, body_only: bool) -> None:
    server.set_handler(lambda r: trickle(r, body_only=body_only))
    scorer = scorer_for(server, timeout=3.0, deadline_s=2.0)
    started = time.monotonic()
    with pytest.raises(JudgeError) as info:
        scorer.run(a_run("get_weather"))
    elapsed = time.monotonic() - started
    assert info.value.kind == "timeout" and "deadline of 2 s" in info.value.message
    assert elapsed < 5.0, f"the judgment took {elapsed:.1f} s with a 2 s deadline"
    scorer.close()


def test_the_deadline_holds_for_arun_and_for_a_given_async_client(server: OpenAITestServer) -> None:
    import openai

    server.set_handler(trickle)

    async def both() -> list[float]:
        took = []
        given = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", timeout=3.0, max_retries=0)
        for scorer in (scorer_for(server, timeout=3.0, deadline_s=1.5),
                       create_tool_call_accuracy_scorer_llm("m", TOOLS, client=given, deadline_s=1.5)):
            started = time.monotonic()
            with pytest.raises(JudgeError) as info:
                await scorer.arun(a_run("get_weather"))
            assert info.value.kind == "timeout"
            took.append(time.monotonic() - started)
            await scorer.aclose()
        await given.close()
        return took

    assert all(t < 4.0 for t in asyncio.run(both()))


def test_the_deadline_covers_retries_and_back_off(server: OpenAITestServer) -> None:
    server.set_handler(lambda _r: Reply(500, {"error": {"message": "slow failure"}}, delay=0.6))
    scorer = scorer_for(server, timeout=3.0, max_retries=8, deadline_s=2.0)
    started = time.monotonic()
    with pytest.raises(JudgeError) as info:
        scorer.run(a_run("get_weather"))
    assert info.value.kind == "timeout" and time.monotonic() - started < 5.0
    assert info.value.usage is not None and info.value.usage.requests >= 1
    scorer.close()


def test_a_given_sync_client_gets_the_deadline_between_requests(server: OpenAITestServer) -> None:
    import openai

    server.set_handler(lambda r: judge_answer([("get_weather", True)], request=r, delay=1.5))
    client = openai.OpenAI(base_url=server.base_url, api_key="k", timeout=30.0, max_retries=0)
    scorer = create_tool_call_accuracy_scorer_llm("m", TOOLS, client=client, deadline_s=0.5)
    started = time.monotonic()
    with pytest.raises(JudgeError) as info:
        scorer.run(a_run("get_weather"))
    assert info.value.kind == "timeout" and time.monotonic() - started < 3.0  # the per-request timeout was lowered
    client.close()


def test_the_circuit_opens_on_deadline_timeouts_and_workers_are_freed(server: OpenAITestServer) -> None:
    server.set_handler(trickle)
    pipe = make_pipe(server.base_url, scorer_options={"timeout": 3.0, "deadline_s": 1.0},
                     workers=2, failure_threshold=2, circuit_cooldown_s=600)
    started = time.monotonic()
    for _ in range(6):
        pipe.agent_run()
    assert pipe.flush(20_000), "the judge workers stayed stuck"
    elapsed = time.monotonic() - started
    stats = pipe.judge.stats()
    assert stats.requests.get("timeout", 0) >= 2
    assert stats.circuit_open and stats.skipped.get("circuit_open", 0) >= 1
    assert stats.accounted == stats.offered == 6
    assert elapsed < 15.0, f"six runs against a trickling judge took {elapsed:.1f} s"
    assert pipe.by("toolscore.judge.requests", "toolscore.outcome").get("timeout", 0) == stats.requests["timeout"]
    pipe.processor.shutdown()


def test_closing_the_scorer_ends_a_running_judgment(server: OpenAITestServer) -> None:
    import threading

    server.set_handler(trickle)
    scorer = scorer_for(server, timeout=3.0, deadline_s=30.0)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            scorer.run(a_run("get_weather"))
        except BaseException as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    while server.request_count == 0:
        time.sleep(0.01)
    started = time.monotonic()
    scorer.close()
    caller.join(timeout=10)
    assert not caller.is_alive() and time.monotonic() - started < 8.0
    assert len(errors) == 1 and isinstance(errors[0], JudgeError) and errors[0].kind == "error"


# -- deeply nested JSON: always a JudgeError of a stated kind -------------------------------------------------
DEPTH = max(100_000, sys.getrecursionlimit() * 20)


def nested_json(depth: int = DEPTH) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, nested_json().encode(), {"Content-Type": "application/json"}),  # the HTTP body itself
        Reply(200, ('{"choices": ' + nested_json() + "}").encode(), {"Content-Type": "application/json"}),
        chat_completion('{"evaluations": ' + nested_json() + ', "missing_tools": [], "reason": "x"}'),  # the answer
        chat_completion(nested_json()),
    ],
    ids=["body", "choices", "answer-field", "answer"],
)
def test_deeply_nested_json_from_the_endpoint_is_a_judge_error(server: OpenAITestServer, reply: Reply) -> None:
    server.set_handler(lambda _r: reply)
    scorer = scorer_for(server)
    with pytest.raises(JudgeError) as info:
        scorer.run(a_run("get_weather"))
    assert info.value.kind in KINDS and info.value.kind == "invalid_answer"
    assert server.request_count == 2  # one corrective retry, then a stated failure
    scorer.close()


def test_deeply_nested_run_content_is_judged_without_recursion_error(server: OpenAITestServer) -> None:
    deep: Any = "bottom"
    for _ in range(DEPTH):
        deep = [deep]
    run = a_run("get_weather")
    run.tool_calls[0].arguments = {"filter": deep}
    run.tool_calls[0].result = deep
    scorer = scorer_for(server, include_arguments=True, include_results=True)
    assert scorer.estimate_prompt_tokens(run) > 0
    assert scorer.run(run).score == 1.0
    assert "(value nested too deeply to show)" in server.requests[-1].prompt_text
    scorer.close()


# -- missing tools are checked against available, uncalled tools ---------------------------------------------
def test_a_called_tool_named_missing_is_dropped(server: OpenAITestServer) -> None:
    server.enqueue(judge_answer([("get_weather", True)], ["get_weather"]))
    result = scorer_for(server).run(a_run("get_weather"))
    assert result.score == 1.0 and result.analyze_step_result.missing_tools == []
    assert server.request_count == 1


def test_an_unknown_tool_named_missing_gets_a_correction_then_fails(server: OpenAITestServer) -> None:
    server.enqueue(judge_answer([("get_weather", True)], ["launch_rockets"]), judge_answer([("get_weather", True)], []))
    result = scorer_for(server).run(a_run("get_weather"))
    assert result.score == 1.0 and result.usage.requests == 2
    correction = server.requests[1].messages[-1]["content"]
    assert "launch_rockets" in correction and "search_web" in correction

    server.set_handler(lambda r: judge_answer([("get_weather", True)], ["launch_rockets"], request=r))
    with pytest.raises(JudgeError) as info:
        scorer_for(server).run(a_run("get_weather"))
    assert info.value.kind == "invalid_answer" and "launch_rockets" in info.value.message


def test_missing_tools_map_back_to_the_reference_spelling() -> None:
    tools = [ToolDefinition(name="get<weather>"), ToolDefinition(name="search_web")]
    answer = {"evaluations": [], "missing_tools": [" get\u2039weather\u203a ", "get<weather>", "search_web", ""]}
    score, analysis = score_answer(answer, [], tools)
    assert analysis.missing_tools == ["get<weather>", "search_web"] and score == 0.0
    # without a tool reference only the called tools can be checked
    answer = {"evaluations": [{"tool_called": "a", "was_appropriate": True, "reasoning": "ok"}], "missing_tools": ["a", "b"]}
    assert score_answer(answer, [ToolCall(name="a")])[1].missing_tools == ["b"]


# -- token usage cannot poison usage or budgets ---------------------------------------------------------------
@pytest.mark.parametrize(("prompt", "completion"), [(-10**12, -5), (10**15, 10**13), (-1, 10**12)])
def test_unbelievable_usage_is_replaced_by_an_estimate(server: OpenAITestServer, prompt: int, completion: int) -> None:
    server.set_handler(lambda r: judge_answer([("get_weather", True)], request=r, prompt_tokens=prompt,
                                              completion_tokens=completion))
    usage = scorer_for(server).run(a_run("get_weather")).usage
    estimate = len(server.requests[0].prompt_text) // 4
    assert 0 < usage.prompt_tokens < 10 * estimate + 100
    assert 0 < usage.completion_tokens < 1000
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_negative_usage_does_not_refill_the_token_budget(server: OpenAITestServer) -> None:
    server.set_handler(lambda r: judge_answer([("get_weather", True)], request=r, prompt_tokens=-10**12,
                                              completion_tokens=-10**12))
    sampler = JudgeSampler(ratio=1.0, max_per_minute=None, max_tokens_per_hour=50_000)
    pipe = make_pipe(server.base_url, sampler=sampler)
    for _ in range(3):
        pipe.agent_run()
    assert pipe.flush()
    stats = pipe.judge.stats()
    assert stats.requests == {"ok": 3}
    assert stats.tokens_used_in_window is not None and 0 < stats.tokens_used_in_window < 50_000
    tokens = pipe.by("toolscore.judge.tokens", "gen_ai.token.type")
    assert all(v > 0 for v in tokens.values()) and set(tokens) == {"input", "output"}
    pipe.processor.shutdown()


def test_every_failure_is_a_judge_error(server: OpenAITestServer) -> None:
    for reply in (error(400, "bad request"), Reply(200, b"\xff\xfe not json", {"Content-Type": "application/json"}),
                  Reply(200, {"choices": "none"}), Reply(200, json.dumps({"choices": [{"message": None}]}).encode(),
                                                         {"Content-Type": "application/json"})):
        server.reset()
        server.set_handler(lambda _r, reply=reply: reply)  # type: ignore[misc]
        with pytest.raises(JudgeError) as info:
            scorer_for(server).run(a_run("get_weather"))
        assert info.value.kind in KINDS
