"""Yardstick: what the hot-path targets mean on this machine, measured in the same run as ours.

The whole-process target is set against a *minimal* processor that does only what every scored run
must cost: read the tool name of each tool span (one convention, one key), score the run's order
against a fixed expectation, copy the root with the score attribute, write one
``gen_ai.evaluation.result`` log record and one histogram point. Nothing else: no assembly, no
content, no rules, no bounds, no counters, no run model. Its worker-thread form runs in every
``hot_path`` round beside the SDK alone and ours, and ours may cost at most twice its overhead
there: whole process ≤ ``1 + 2 x (yardstick - 1)`` (:func:`total_target`).

This section measures it two ways, beside the SDK alone and ``ToolScoreSpanProcessor`` on the same
workload (the 7-span GenAI run, content off, 1 thread, alternating rounds):

* ``sync``: the work done in ``on_end`` on the application's thread;
* ``worker``: ``on_end`` appends the span to a deque; a background thread that wakes every 2 ms
  (as ours does) does the same work and hands the spans on.

The rows show where the targets sit between the cheapest possible processor and ours: what is left
of our ratio above the ``worker`` row is the cost of our generic core (every convention, run
assembly, expectations, bounds and counts) and of its run model.
"""

from __future__ import annotations

import collections
import statistics
import threading
import time
from typing import Any

from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import NonRecordingSpan, set_span_in_context

from .common import Result
from .pipelines import (
    Pipeline,
    baseline_pipeline,
    candidate_pipeline,
    root_copy,
    scoring_pipeline,
)
from .workloads import WORKLOADS, measure

#: The agent thread's target: at most this times the SDK alone.
TARGET_AGENT = 1.10

#: Per workload, how the minimal processor finds a tool span and its name: (kind key, kind value,
#: tool-name key), one convention each.
TOOL_KEYS: dict[str, tuple[str, str, str]] = {
    "genai7": ("gen_ai.operation.name", "execute_tool", "gen_ai.tool.name"),
    "openinference30": ("openinference.span.kind", "TOOL", "tool.name"),
}


def total_target(yardstick_ratio_total: float) -> float:
    """The whole-process target: twice the yardstick's overhead over the SDK alone, same rounds."""
    return 1.0 + 2.0 * (yardstick_ratio_total - 1.0)


class MinimalProcessor(SpanProcessor):
    """Score + root copy + event + metric for one convention, nothing else (see the module doc)."""

    def __init__(self, downstream: SpanProcessor, meter_provider: MeterProvider, logger_provider: LoggerProvider,
                 workload: str = "genai7") -> None:
        self.downstream = downstream
        self.kind_key, self.kind_value, self.name_key = TOOL_KEYS[workload]
        self.expected = WORKLOADS[workload][2].expected_tool_order or ()
        self.tools: dict[int, list[str]] = {}
        self.histogram = meter_provider.get_meter("yardstick").create_histogram("yardstick.score", unit="1")
        self.logger = logger_provider.get_logger("yardstick")

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.downstream.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        self.downstream.on_end(self.read(span))

    def read(self, span: ReadableSpan) -> ReadableSpan:
        attrs = span.attributes or {}
        ctx = span.context
        if ctx is None:
            return span
        if attrs.get(self.kind_key) == self.kind_value:
            self.tools.setdefault(ctx.trace_id, []).append(str(attrs.get(self.name_key)))
        if span.parent is not None:
            return span
        called = iter(self.tools.pop(ctx.trace_id, ()))
        score = 1.0 if all(name in called for name in self.expected) else 0.0  # in order, others allowed
        copy = dict(attrs)
        copy["toolscore.code.score"] = score
        self.logger.emit(
            context=set_span_in_context(NonRecordingSpan(ctx)),
            event_name="gen_ai.evaluation.result",
            severity_number=SeverityNumber.INFO,
            body=f"evaluation: tool_call_accuracy={score}",
            attributes={"gen_ai.evaluation.name": "tool_call_accuracy", "gen_ai.evaluation.score.value": score},
        )
        self.histogram.record(score, {"gen_ai.evaluation.name": "tool_call_accuracy"})
        return root_copy(span, copy)

    def shutdown(self) -> None:
        self.downstream.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.downstream.force_flush(timeout_millis)


class MinimalWorkerProcessor(MinimalProcessor):
    """The same work on a background thread: ``on_end`` only appends to a deque."""

    def __init__(self, downstream: SpanProcessor, meter_provider: MeterProvider, logger_provider: LoggerProvider,
                 workload: str = "genai7") -> None:
        super().__init__(downstream, meter_provider, logger_provider, workload)
        self.queue: collections.deque[ReadableSpan] = collections.deque()
        self.busy = False
        self.stopped = False
        self.thread = threading.Thread(target=self._loop, name="yardstick-worker", daemon=True)
        self.thread.start()

    def on_end(self, span: ReadableSpan) -> None:
        self.queue.append(span)

    def _loop(self) -> None:
        queue = self.queue
        while not self.stopped:
            if not queue:
                time.sleep(0.002)
                continue
            self.busy = True
            while queue:
                self.downstream.on_end(self.read(queue.popleft()))
            self.busy = False

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        while (self.queue or self.busy) and time.monotonic() < deadline:
            time.sleep(0.001)
        return self.downstream.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.force_flush()
        self.stopped = True
        self.thread.join(1)
        self.downstream.shutdown()


def minimal_pipeline(cls: type[MinimalProcessor], workload: str = "genai7") -> Pipeline:
    """The SDK + BatchSpanProcessor with ``cls`` in front, for ``workload``'s convention."""
    return scoring_pipeline(lambda downstream, mp, lp: cls(downstream, mp, lp, workload))


def run(result: Result, *, quick: bool) -> None:
    rounds = 2 if quick else 7
    runs = 48 if quick else 1_200
    expectation = WORKLOADS["genai7"][2]
    pipelines = {
        "SDK + BatchSpanProcessor": baseline_pipeline,
        "minimal processor, sync": lambda: minimal_pipeline(MinimalProcessor),
        "minimal processor, worker thread": lambda: minimal_pipeline(MinimalWorkerProcessor),
        "ToolScoreSpanProcessor": lambda: candidate_pipeline(expectations=(expectation,)),
    }
    names = list(pipelines)
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            rows[name].append(measure(pipelines[name], "genai7", runs, 1, False))
    base = rows[names[0]]
    agent = {name: [c["agent"] / b["agent"] for b, c in zip(base, rows[name])] for name in names[1:]}
    total = {name: [c["total"] / b["total"] for b, c in zip(base, rows[name])] for name in names[1:]}
    target = total_target(statistics.median(total["minimal processor, worker thread"]))
    for name in names[1:]:
        result.add(
            name=f"genai7, 1 thread, content off: {name}",
            rounds=rounds,
            runs_per_round=runs,
            baseline_agent_us_per_run=round(statistics.median(b["agent"] for b in base) * 1e6, 1),
            agent_us_per_run=round(statistics.median(c["agent"] for c in rows[name]) * 1e6, 1),
            ratio_agent=round(statistics.median(agent[name]), 3),
            ratio_agent_min_max=[round(min(agent[name]), 3), round(max(agent[name]), 3)],
            baseline_total_us_per_run=round(statistics.median(b["total"] for b in base) * 1e6, 1),
            total_us_per_run=round(statistics.median(c["total"] for c in rows[name]) * 1e6, 1),
            ratio_total=round(statistics.median(total[name]), 3),
            ratio_total_min_max=[round(min(total[name]), 3), round(max(total[name]), 3)],
            target_agent=TARGET_AGENT,
            target_total=round(target, 3),  # 1 + 2 x the worker-thread row's overhead, these rounds
            roots_scored_and_exported=sum(c["scored_roots"] for c in rows[name]),
        )
