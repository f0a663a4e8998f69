"""A scripted agent that emits the spans a real instrumented agent would (OTel GenAI conventions).

Used by ``otel-toolscore demo``, the examples, the tests and the benchmarks: one ``invoke_agent``
span, one ``chat`` span whose output requests the tools, and one ``execute_tool`` span per call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

__all__ = ["ScriptedCall", "run_scripted_agent"]


@dataclass(frozen=True)
class ScriptedCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    result: Any = "ok"
    error: str | None = None


def run_scripted_agent(
    tracer: trace.Tracer,
    agent_name: str,
    query: str,
    calls: Sequence[ScriptedCall | str],
    answer: str = "done",
    *,
    capture_content: bool = True,
    attributes: dict[str, Any] | None = None,
) -> None:
    """Emit one agent run: ``invoke_agent`` → ``chat`` (requests the calls) → ``execute_tool`` each."""
    steps = [c if isinstance(c, ScriptedCall) else ScriptedCall(c) for c in calls]
    start = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name, **(attributes or {})}
    with tracer.start_as_current_span(f"invoke_agent {agent_name}", kind=SpanKind.INTERNAL, attributes=start) as root:
        with tracer.start_as_current_span("chat model", kind=SpanKind.CLIENT) as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.request.model", "scripted-model")
            if capture_content:
                chat.set_attribute(
                    "gen_ai.input.messages",
                    json.dumps([{"role": "user", "parts": [{"type": "text", "content": query}]}]),
                )
                parts = [
                    {"type": "tool_call", "id": f"call_{i}", "name": s.name, "arguments": s.arguments}
                    for i, s in enumerate(steps)
                ]
                chat.set_attribute(
                    "gen_ai.output.messages",
                    json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}]),
                )
        for i, step in enumerate(steps):
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": step.name,
                "gen_ai.tool.call.id": f"call_{i}",
            }
            if capture_content:
                attrs["gen_ai.tool.call.arguments"] = json.dumps(step.arguments)
            with tracer.start_as_current_span(f"execute_tool {step.name}", attributes=attrs) as tool:
                if step.error:
                    tool.set_attribute("error.type", step.error)
                    tool.set_status(Status(StatusCode.ERROR, step.error))
                elif capture_content:
                    tool.set_attribute("gen_ai.tool.call.result", json.dumps(step.result))
        if capture_content:
            root.set_attribute(
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}]),
            )
            root.set_attribute(
                "gen_ai.input.messages",
                json.dumps([{"role": "user", "parts": [{"type": "text", "content": query}]}]),
            )
