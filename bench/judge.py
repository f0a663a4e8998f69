"""Judge pipeline: judged runs per second against workers and server delay; agent overhead; full queue.

The judge talks real HTTP (the ``openai`` client) to the local OpenAI-compatible test server
(``tests/support/openai_server.py``), which answers every request after a fixed delay with a
schema-valid verdict for the calls it reads in the prompt.

* Throughput: ``judged/s`` over the ideal ``workers ÷ delay`` (1.0 = the workers are the only limit).
* Agent overhead: time on the agent's thread per run with the judge on (every run sampled, or the
  default 5 %) over the same pipeline with the judge off, interleaved rounds; content captured in both.
* Full queue: bytes per queued run (``tracemalloc``) while the server is too slow to take any.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

from otel_toolscore import Judge, JudgeSampler, create_tool_call_accuracy_scorer_llm

from .common import Result
from .pipelines import CALLS, Pipeline, candidate_pipeline, one_run

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.openai_server import OpenAITestServer, echo_judge  # noqa: E402


def _judge(base_url: str, *, ratio: float, workers: int, queue_size: int, shutdown_s: float = 2.0) -> Judge:
    scorer = create_tool_call_accuracy_scorer_llm(
        "bench-judge", [c.name for c in CALLS], base_url=base_url, api_key="sk-bench-local", max_retries=0, timeout=30.0
    )
    sampler = JudgeSampler(
        ratio,
        always_when_code_fails=False,
        always_when_new_sequence=False,
        always_when_flagged=False,
        max_per_minute=None,
        max_tokens_per_hour=None,
    )
    return Judge(scorer, sampler=sampler, workers=workers, queue_size=queue_size, carrier_span=True,
                 shutdown_timeout_s=shutdown_s, close_scorer=True)


def _pipe_with_judge(judge: Judge | None) -> Pipeline:
    if judge is None:
        return candidate_pipeline(capture_content=True)
    pipe = candidate_pipeline(judge=judge)
    return pipe


def _round_trip(server: OpenAITestServer, n: int = 10) -> float:
    """Seconds per keep-alive POST to the test server with no delay (plain ``http.client``): the floor
    the server and loopback TCP put under every judgment, whatever the judge does."""
    import http.client
    import json

    saved, server.delay = server.delay, 0.0
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})

    def once() -> None:
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        conn.getresponse().read()

    once()
    t0 = time.perf_counter()
    for _ in range(n):
        once()
    rtt = (time.perf_counter() - t0) / n
    conn.close()
    server.delay = saved
    return rtt


def throughput(result: Result, server: OpenAITestServer, *, quick: bool) -> None:
    delays = (0.05,) if quick else (0.05, 0.2)
    workers_list = (2,) if quick else (1, 2, 4, 8)
    window_s = 0.3 if quick else 1.5
    rtt = _round_trip(server)
    result.notes.append(
        f"judge: a keep-alive round trip to the test server with no delay takes {rtt * 1000:.0f} ms "
        "(plain http.client; measured in this run); 'efficiency' counts it as part of the delay."
    )
    for delay in delays:
        for workers in workers_list:
            ideal = workers / delay
            ideal_rtt = workers / (delay + rtt)
            runs = max(8, int(ideal_rtt * window_s))
            judge = _judge(server.base_url, ratio=1.0, workers=workers, queue_size=runs + 4 * workers + 10)
            pipe = _pipe_with_judge(judge)
            tracer = pipe.tracer
            assert pipe.processor is not None
            server.delay = 0.0
            for i in range(2 * workers):  # warm-up: the client, its connections, the workers
                one_run(tracer, True, i)
            pipe.processor.force_flush(60_000)
            before = judge.stats().requests.get("ok", 0)
            server.delay = delay
            t0 = time.perf_counter()
            for i in range(runs):
                one_run(tracer, True, i)
            produced = time.perf_counter() - t0
            pipe.processor.force_flush(120_000)
            elapsed = time.perf_counter() - t0
            stats = judge.stats()
            ok = stats.requests.get("ok", 0) - before
            pipe.close()
            rate = ok / elapsed
            result.add(
                name=f"judge throughput, {workers} worker{'s' if workers > 1 else ''}, delay {int(delay * 1000)} ms",
                workers=workers,
                server_delay_ms=int(delay * 1000),
                runs=runs,
                judged_ok=ok,
                other_outcomes={**{k: v for k, v in stats.requests.items() if k != "ok"}, **stats.skipped},
                judged_per_s=round(rate, 1),
                workers_over_delay=round(ideal, 1),
                ratio_to_workers_over_delay=round(rate / ideal, 2),
                efficiency=round(rate / ideal_rtt, 2),
                agent_seconds_producing=round(produced, 2),
            )


def _agent_time(server: OpenAITestServer, ratio: float | None, runs: int) -> float:
    judge = None if ratio is None else _judge(server.base_url, ratio=ratio, workers=4, queue_size=100, shutdown_s=0.2)
    pipe = _pipe_with_judge(judge)
    tracer = pipe.tracer
    for i in range(30):
        one_run(tracer, True, i)
    gc.collect()
    t0 = time.perf_counter()
    for i in range(runs):
        one_run(tracer, True, i)
    t = (time.perf_counter() - t0) / runs
    pipe.close()
    return t


def agent_overhead(result: Result, server: OpenAITestServer, *, quick: bool) -> None:
    server.delay = 0.01
    rounds = 1 if quick else 3
    runs = 30 if quick else 400
    for ratio in (0.05, 1.0):
        off: list[float] = []
        on: list[float] = []
        for r in range(rounds):
            if r % 2 == 0:
                off.append(_agent_time(server, None, runs))
                on.append(_agent_time(server, ratio, runs))
            else:
                on.append(_agent_time(server, ratio, runs))
                off.append(_agent_time(server, None, runs))
        ratios = [b / a for a, b in zip(off, on)]
        result.add(
            name=f"judge on ({int(ratio * 100)} % sampled) vs off, agent thread per run",
            sampled=ratio,
            judge_off_us_per_run=round(statistics.median(off) * 1e6, 1),
            judge_on_us_per_run=round(statistics.median(on) * 1e6, 1),
            ratio=round(statistics.median(ratios), 3),
            ratio_min_max=[round(min(ratios), 3), round(max(ratios), 3)],
        )


def full_queue_memory(result: Result, server: OpenAITestServer, *, quick: bool) -> None:
    server.delay = 30.0  # no request completes while we measure; stop() wakes the handlers
    queue_size = 50 if quick else 1_000
    judge = _judge(server.base_url, ratio=1.0, workers=1, queue_size=queue_size, shutdown_s=0.0)
    pipe = _pipe_with_judge(judge)
    tracer = pipe.tracer
    for i in range(5):
        one_run(tracer, True, i)
    time.sleep(0.2)
    assert pipe.processor is not None
    pipe.processor._drain(time.monotonic() + 5)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    offered = queue_size + queue_size // 10
    for i in range(offered):
        one_run(tracer, True, i)
    pipe.processor._drain(time.monotonic() + 10)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    stats = judge.stats()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    result.add(
        name=f"judge, memory with a full queue ({queue_size:,})",
        queue_size=queue_size,
        runs_offered=offered,
        queued=stats.queued,
        dropped_queue_full=stats.skipped.get("queue_full", 0),
        bytes_per_queued_run=round(grown / max(1, stats.queued)),
        note="includes the processor's own per-run allocations that are freed after emission",
    )
    server.delay = 0.0
    server.stop()
    judge.shutdown(0.0)
    pipe.close()


def run(result: Result, *, quick: bool) -> None:
    with OpenAITestServer(echo_judge()) as server:
        throughput(result, server, quick=quick)
        agent_overhead(result, server, quick=quick)
    with OpenAITestServer(echo_judge()) as server:
        full_queue_memory(result, server, quick=quick)
