"""Helpers shaped like Mastra's scorer test utilities, with its argument names in snake_case."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from .messages import calls_from_messages, parse_message
from .model import AgentRun, Message, ToolDefinition, ToolInvocation

__all__ = ["create_agent_test_run", "create_test_message", "create_tool_invocation", "create_ui_message"]

EMPTY_RUN_ERROR = "Input and output messages cannot be null or empty"


def create_tool_invocation(
    tool_call_id: str,
    tool_name: str,
    args: Any = None,
    result: Any = None,
    state: str = "result",
) -> ToolInvocation:
    return ToolInvocation(tool_call_id=tool_call_id, tool_name=tool_name, args=args, result=result, state=state)


def create_test_message(
    content: str,
    role: str = "user",
    id: str = "test-message",
    tool_invocations: Sequence[ToolInvocation | Mapping[str, Any]] | None = None,
) -> Message:
    return Message(
        id=id,
        role=role,
        content=content,
        tool_invocations=[
            i if isinstance(i, ToolInvocation) else ToolInvocation.model_validate(i) for i in tool_invocations or ()
        ],
    )


#: Mastra's docs build the same message with ``createUIMessage``; same arguments.
create_ui_message = create_test_message


def create_agent_test_run(
    input_messages: Sequence[Message | Mapping[str, Any]] | None = None,
    output: Sequence[Message | Mapping[str, Any]] | None = None,
    *,
    run_id: str | None = None,
    agent_name: str | None = None,
    available_tools: Sequence[ToolDefinition | Mapping[str, Any]] | None = None,
) -> AgentRun:
    """A run from Mastra-shaped messages; raises ``ValueError`` when either side is empty, as Mastra does."""
    if not input_messages or not output:
        raise ValueError(EMPTY_RUN_ERROR)
    inputs = [parse_message(m) for m in input_messages]
    outputs = [parse_message(m) for m in output]
    user_texts = [m.content for m in inputs if m.role == "user" and m.content]
    answer = next((m.content for m in reversed(outputs) if m.role == "assistant" and m.content), None)
    return AgentRun(
        run_id=run_id or str(uuid.uuid4()),
        agent_name=agent_name,
        conventions=["mastra-messages"],
        input_messages=inputs,
        output_messages=outputs,
        user_query=user_texts[-1] if user_texts else None,
        final_output=answer,
        available_tools=[
            t if isinstance(t, ToolDefinition) else ToolDefinition.model_validate(t) for t in available_tools or ()
        ],
        tool_calls=calls_from_messages(outputs),
    )
