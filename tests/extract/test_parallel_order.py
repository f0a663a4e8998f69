"""Parallel tool calls have one order: the model's listing when its output is
visible, start time otherwise — never which thread started first.

Real SDK spans: the model requests ``get_weather`` then ``get_time`` in one turn; the two tool spans
run on two threads and start in either order. Order-mode scoring must not flip between executions.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry.trace import set_span_in_context

from otel_toolscore import Expectation
from tests.online.test_processor import make_pipeline

LISTED = ["get_weather", "get_time"]


def _run(tracer: Any, first_to_start: str, model_output_visible: bool) -> None:
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}
    with tracer.start_as_current_span("invoke_agent a", attributes=agent) as root:
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}) as chat:
            if model_output_visible:
                parts = [{"type": "tool_call", "id": f"c_{n}", "name": n, "arguments": {}} for n in LISTED]
                chat.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": parts}]))
        ctx = set_span_in_context(root)
        started = threading.Event()

        def tool(name: str, wait_for: threading.Event | None) -> None:
            if wait_for is not None:
                wait_for.wait(5)
            token = otel_context.attach(ctx)
            try:
                attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                         "gen_ai.tool.call.id": f"c_{name}"}
                with tracer.start_as_current_span(f"execute_tool {name}", attributes=attrs):
                    if wait_for is None:
                        started.set()
            finally:
                otel_context.detach(token)

        second = next(n for n in LISTED if n != first_to_start)
        threads = [threading.Thread(target=tool, args=(first_to_start, None)),
                   threading.Thread(target=tool, args=(second, started))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


@pytest.mark.parametrize("visible", [True, False], ids=["model output visible", "no model output"])
def test_parallel_calls_order_is_deterministic(visible: bool) -> None:
    p = make_pipeline(expectations=[Expectation(expected_tool_order=tuple(LISTED), strict_mode=True)])
    for first in (LISTED[1], LISTED[0], LISTED[1]):
        _run(p.tracer, first, visible)
    p.flush()
    roots = sorted((s for s in p.spans.get_finished_spans() if s.name == "invoke_agent a"), key=lambda s: s.start_time)
    orders = [list(r.attributes["toolscore.code.actual_tools"]) for r in roots]
    scores = [r.attributes["toolscore.code.score"] for r in roots]
    if visible:
        assert orders == [LISTED] * 3  # the model's listing, whichever thread started first
        assert scores == [1.0, 1.0, 1.0]  # order-mode scoring does not flip
    else:
        assert orders == [[LISTED[1], LISTED[0]], LISTED, [LISTED[1], LISTED[0]]]  # start time
    p.provider.shutdown()
