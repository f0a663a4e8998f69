"""Sizes from data and runs lost at the queue: what reaches the wire is bounded, nothing goes uncounted.

* A 1 MB agent or tool name became a 1 MB metric label, event attribute and root attribute; a 20 MB
  judge reason went whole into the evaluation event. Names are cut to ``max_name_chars`` and
  explanations to 4,096 characters, each cut counted. The figures are the bytes the real OTLP
  encoders write for the exported span and log record.
* When the span queue was full, a dropped root's run never appeared in ``toolscore.runs``: it is
  counted as ``dropped``, so the runs offered are the sum of the outcomes.
* Roots that ended in one batch are handed on in the order they ended.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import set_span_in_context

from otel_toolscore import Expectation
from otel_toolscore.scripted import ScriptedCall, run_scripted_agent
from otel_toolscore.telemetry import RunRef
from tests.online.test_processor import make_pipeline

HUGE = 1_000_000
#: What one exported root span or evaluation record may weigh, encoded, whatever the names (it
#: weighed megabytes): a generous ceiling over the ~1 KB measured.
WIRE_CEILING = 16_384


def _runs_by_outcome(p: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for point in p.metric_points("toolscore.runs"):
        outcome = point.attributes.get("toolscore.outcome")
        out[outcome] = out.get(outcome, 0) + point.value
    return out


def test_a_huge_agent_and_tool_name_are_cut_everywhere_they_leave() -> None:
    agent, tool = "a" * HUGE, "t" * HUGE
    p = make_pipeline(expectations=[Expectation(expected_tool=tool)])
    run_scripted_agent(p.tracer, agent, "q", [ScriptedCall(tool)], capture_content=False,
                       attributes={"gen_ai.conversation.id": "c" * HUGE})
    p.flush()
    (root,) = p.roots()
    root_wire = len(encode_spans([root]).SerializeToString())
    assert all(len(t) <= 256 for t in root.attributes["toolscore.code.actual_tools"])
    assert root.attributes["toolscore.code.score"] == 1.0  # scored on the whole name; only what leaves is cut
    (event,) = p.events()
    assert len(event.attributes["gen_ai.agent.name"]) <= 256
    assert len(event.attributes["gen_ai.conversation.id"]) <= 256
    event_wire = len(encode_logs([r for r in p.logs.get_finished_logs()]).SerializeToString())
    labels = [pt.attributes.get("gen_ai.agent.name") for pt in p.metric_points("gen_ai.evaluation.score")]
    assert labels and all(label is not None and len(label) <= 256 for label in labels)
    # the application's own span keeps its name (not ours to change); what we add from data is bounded
    # (the expected tool is the configuration's own word, written as configured)
    added = sum(len(str(v)) for k, v in root.attributes.items()
                if k.startswith(("toolscore.", "annotations.")) and not k.startswith("toolscore.code.expected_tool"))
    assert added < WIRE_CEILING, added
    assert event_wire < WIRE_CEILING, event_wire
    assert root_wire < 4 * HUGE + WIRE_CEILING  # the root's own name, agent and conversation, the configured tool
    dropped = p.counter("toolscore.dropped", **{"toolscore.reason": "name_too_long"})
    assert dropped >= 3  # the agent name, the conversation id, the tool name
    p.provider.shutdown()


def test_a_huge_judge_reason_is_cut_in_the_event() -> None:
    p = make_pipeline(expectations=[Expectation(expected_tool="t")])
    emitter = p.processor.emitter
    emitter.emit_evaluation(RunRef(1, 2, "agent"), name="tool_call_accuracy_llm", score=0.5, label="fail",
                            explanation="r" * 20_000_000)
    p.flush()
    (event,) = p.events()
    assert len(event.attributes["gen_ai.evaluation.explanation"]) <= 4096
    wire = len(encode_logs([r for r in p.logs.get_finished_logs()]).SerializeToString())
    assert wire < WIRE_CEILING, wire
    assert p.counter("toolscore.dropped", **{"toolscore.reason": "explanation_too_long"}) == 1
    p.provider.shutdown()


def test_runs_whose_roots_the_full_queue_refused_are_counted() -> None:
    """Every run offered ends up under one outcome, also when its root never reached the worker."""
    p = make_pipeline(expectations=[Expectation(expected_tool="t")], span_queue_size=64)
    offered = 200
    with p.processor._core_lock:  # the worker cannot take a batch: the queue fills, then refuses
        for i in range(offered):
            run_scripted_agent(p.tracer, "a", f"q{i}", ["t"], capture_content=False)
    p.flush()
    outcomes = _runs_by_outcome(p)
    assert sum(outcomes.values()) == offered, outcomes
    assert outcomes.get("dropped", 0) > 0 and outcomes.get("scored", 0) > 0, outcomes
    assert p.counter("toolscore.dropped", **{"toolscore.reason": "span_queue_full"}) > 0
    assert len(p.spans.get_finished_spans()) == 3 * offered  # every span still exported, scored or not
    p.provider.shutdown()


class _Order(SpanProcessor):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.names.append(span.name)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_roots_leave_in_the_order_they_ended() -> None:
    order = _Order()
    p = make_pipeline(downstream=order, expectations=[Expectation(expected_tool="t")])
    tracer = p.tracer
    with p.processor._core_lock:  # every root ends before the worker takes the batch
        roots = [tracer.start_span(f"invoke_agent r{i}", attributes={"gen_ai.operation.name": "invoke_agent"})
                 for i in range(6)]
        for root in roots:
            tracer.start_span("execute_tool t", context=set_span_in_context(root), attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}).end()
        for i in (3, 0, 5, 1, 4, 2):
            roots[i].end()
    p.flush()
    ended = [n for n in order.names if n.startswith("invoke_agent")]
    assert ended == [f"invoke_agent r{i}" for i in (3, 0, 5, 1, 4, 2)]
    p.provider.shutdown()
