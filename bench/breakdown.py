"""Where the hot path's time goes: time spent inside the processor per span, and per feature.

Two views, single-threaded, measured in the same run as their baseline:

* ``span thread``: a timing wrapper around the span processor registered on the provider measures
  the time spent in ``on_start`` / ``on_end`` (downstream BatchSpanProcessor included) for the
  agent root span and for the other spans, with the BatchSpanProcessor alone and with ours in front.
* ``features``: the end-to-end per-run time with the features switched off one at a time (score
  attributes, events, metrics, no rule matching so nothing is scored), each as a ratio to the SDK
  alone in the same round.
* ``worker stages``: our worker's CPU per run stage by stage, beside the lean design's worker on
  the same spans, with the interpreter held still (:mod:`bench.worker_stages`): GenAI with content
  on the spans and without, OpenInference with and without;
* ``stall``: the longest pause of an application thread (one that ticks every millisecond) while
  the worker reads a run whose model span carries one long message of tool calls — under the
  default ``max_parse_chars`` (not parsed) and with the limit raised above it (parsed in one C call
  that holds the interpreter lock).
"""

from __future__ import annotations

import gc
import itertools
import json
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import set_span_in_context

from .common import Result
from .pipelines import Pipeline, baseline_pipeline, candidate_pipeline, one_run
from .worker_stages import STAGES, worker_stages


class Timing(SpanProcessor):
    """Measures the time spent in the wrapped processor's ``on_start`` and ``on_end``."""

    def __init__(self, inner: SpanProcessor) -> None:
        self.inner = inner
        self.start_s = 0.0
        self.end_root_s = 0.0
        self.end_other_s = 0.0
        self.roots = 0
        self.others = 0

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        t0 = time.perf_counter()
        self.inner.on_start(span, parent_context=parent_context)
        self.start_s += time.perf_counter() - t0

    def on_end(self, span: ReadableSpan) -> None:
        t0 = time.perf_counter()
        self.inner.on_end(span)
        dt = time.perf_counter() - t0
        if span.parent is None:
            self.end_root_s += dt
            self.roots += 1
        else:
            self.end_other_s += dt
            self.others += 1

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


def _wrapped(make: Callable[[], Pipeline]) -> tuple[Pipeline, Timing]:
    pipe = make()
    active = pipe.provider._active_span_processor
    (inner,) = active._span_processors
    timing = Timing(inner)
    active._span_processors = (timing,)
    return pipe, timing


def _span_thread(make: Callable[[], Pipeline], runs: int, content: bool) -> dict[str, float]:
    pipe, timing = _wrapped(make)
    tracer = pipe.tracer
    for i in range(20):
        one_run(tracer, content, i)
    pipe.flush()
    timing.__init__(timing.inner)  # type: ignore[misc]  # reset the counters after warm-up
    gc.collect()
    for i in range(runs):
        one_run(tracer, content, i)
    pipe.flush()
    pipe.close()
    return {
        "on_start_us_per_span": timing.start_s * 1e6 / (timing.roots + timing.others),
        "on_end_us_per_root": timing.end_root_s * 1e6 / timing.roots,
        "on_end_us_per_other_span": timing.end_other_s * 1e6 / timing.others,
    }


def _per_run(make: Callable[[], Pipeline], runs: int) -> float:
    pipe = make()
    tracer = pipe.tracer
    for i in range(20):
        one_run(tracer, False, i)
    pipe.flush()
    gc.collect()
    t0 = time.process_time()  # CPU of the whole process, background threads included
    for i in range(runs):
        one_run(tracer, False, i)
    pipe.flush()
    t = (time.process_time() - t0) / runs
    pipe.close()
    return t


FEATURES: dict[str, dict[str, Any]] = {
    "all on": {},
    "no score attributes": {"span_attributes": False, "openinference_annotations": False},
    "no events": {"events": False},
    "no metrics": {"metrics": False},
    "no attributes, events, metrics": {"span_attributes": False, "events": False, "metrics": False},
    "no rule matches (nothing scored)": {"expectations": ()},
}


def _stall(calls: int, **settings: Any) -> tuple[float, int]:
    """Longest gap (s) between an application thread's 1 ms ticks while the worker reads one run
    whose chat span carries ``calls`` tool calls in one output message; and the message's length."""
    part = json.dumps({"type": "tool_call", "id": "c", "name": "get_weather", "arguments": {"city": "Paris"}})
    message = '[{"role":"assistant","finish_reason":"tool_call","parts":[' + ",".join([part] * calls) + "]}]"
    pipe = candidate_pipeline(**settings)
    ticks: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        root = pipe.tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
        chat = pipe.tracer.start_span("chat m", context=set_span_in_context(root), attributes={"gen_ai.operation.name": "chat"})
        chat.set_attribute("gen_ai.output.messages", message)
        chat.end()
        root.end()
        pipe.flush()
    finally:
        stop.set()
        ticker.join()
        pipe.close()
    return max((b - a for a, b in itertools.pairwise(ticks)), default=0.0), len(message)


def run(result: Result, *, quick: bool) -> None:
    rounds = 1 if quick else 3
    runs = 30 if quick else 400
    for content in (False, True):
        samples: dict[str, list[dict[str, float]]] = {"sdk": [], "ours": []}
        for r in range(rounds):
            order = ["sdk", "ours"] if r % 2 == 0 else ["ours", "sdk"]
            for which in order:
                make = baseline_pipeline if which == "sdk" else candidate_pipeline
                samples[which].append(_span_thread(make, runs, content))
        med = {w: {k: statistics.median(s[k] for s in v) for k in v[0]} for w, v in samples.items()}
        result.add(
            name=f"span thread, content {'on' if content else 'off'}",
            content_captured=content,
            sdk_on_start_us=round(med["sdk"]["on_start_us_per_span"], 2),
            ours_on_start_us=round(med["ours"]["on_start_us_per_span"], 2),
            sdk_on_end_us=round(med["sdk"]["on_end_us_per_other_span"], 2),
            ours_on_end_us=round(med["ours"]["on_end_us_per_other_span"], 2),
            sdk_on_end_root_us=round(med["sdk"]["on_end_us_per_root"], 2),
            ours_on_end_root_us=round(med["ours"]["on_end_us_per_root"], 2),
            added_us_per_run=round(
                6 * (med["ours"]["on_end_us_per_other_span"] - med["sdk"]["on_end_us_per_other_span"])
                + 7 * (med["ours"]["on_start_us_per_span"] - med["sdk"]["on_start_us_per_span"])
                + med["ours"]["on_end_us_per_root"] - med["sdk"]["on_end_us_per_root"],
                1,
            ),
        )
    # OpenInference with content off too: its model spans then carry no input messages (hidden, as
    # OPENINFERENCE_HIDE_INPUTS leaves them), the case whose runs once fell to the general rules
    for workload, content in (("genai7", False), ("genai7", True), ("openinference30", True), ("openinference30", False)):
        stages = worker_stages(workload, content, runs=10 if quick else 100, rounds=2 if quick else 15)
        result.add(
            name=f"worker stages, {workload}, content {'on' if content else 'off'}",
            workload=workload,
            content_captured=content,
            **{f"{stage}_us": round(stages[stage], 1) for stage in (*STAGES, "total")},
            lean_total_us=round(stages["lean_total"], 1),
            gap_us=round(stages["total"] - stages["lean_total"], 1),
        )
    calls = 40_000 if quick else 400_000
    raised = _stall(calls, max_parse_chars=10**9, max_calls_per_run=calls)
    default = _stall(calls)
    result.add(
        name=f"stall, one message of {calls:,} calls ({raised[1] / 2**20:.0f} MiB)",
        parsed_stall_ms=round(raised[0] * 1000, 1),
        default_stall_ms=round(default[0] * 1000, 1),
    )
    base: list[float] = []
    per: dict[str, list[float]] = {k: [] for k in FEATURES}
    for r in range(rounds):
        base.append(_per_run(baseline_pipeline, runs))
        names = list(FEATURES) if r % 2 == 0 else list(reversed(FEATURES))
        for name in names:
            settings = FEATURES[name]
            per[name].append(_per_run(lambda s=settings: candidate_pipeline(**s), runs))  # type: ignore[misc]
    for name, times in per.items():
        ratios = [t / b for t, b in zip(times, base)]
        result.add(
            name=f"feature cost, {name}",
            ratio_to_sdk=round(statistics.median(ratios), 3),
            us_per_run=round(statistics.median(times) * 1e6, 1),
            sdk_us_per_run=round(statistics.median(base) * 1e6, 1),
        )

