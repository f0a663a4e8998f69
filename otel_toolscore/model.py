"""Data shapes shared by every layer: tool calls, agent runs, tool definitions, score results.

No OpenTelemetry import here: the scorers and the offline commands depend on this module alone.
Every model accepts snake_case names and Mastra's camelCase aliases; ``model_dump(by_alias=True)``
reads like Mastra's JSON.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "AgentRun",
    "Message",
    "ToolCall",
    "ToolCallKind",
    "ToolCallStatus",
    "ToolDefinition",
    "ToolInvocation",
]

ToolCallStatus = Literal["ok", "error"]
ToolCallKind = Literal["tool", "framework"]


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        # Runs are built on the hot path; validation of assignments would double the cost.
        validate_assignment=False,
        # Validators are built on first use, not at import: `import otel_toolscore` stays light.
        defer_build=True,
    )


class ToolDefinition(_Model):
    """A tool the agent could call (OTel ``gen_ai.tool.definitions`` / OpenAI function shape)."""

    name: str = Field(validation_alias=AliasChoices("name", "id"))
    description: str | None = None
    parameters: dict[str, Any] | None = Field(
        default=None, validation_alias=AliasChoices("parameters", "inputSchema", "input_schema")
    )


class ToolCall(_Model):
    """One tool call of a run, in execution order.

    ``kind="framework"`` marks calls a framework makes for itself (handoffs, output tools); they are
    kept for reports but not scored unless asked. ``status="error"`` calls still count as called.
    """

    name: str
    call_id: str | None = None
    arguments: Any = None
    result: Any = None
    status: ToolCallStatus = "ok"
    error_type: str | None = None
    kind: ToolCallKind = "tool"
    source: str | None = None
    span_id: str | None = None
    start_time_unix_nano: int | None = None
    end_time_unix_nano: int | None = None
    message_index: int | None = None
    invocation_index: int | None = None


class ToolInvocation(_Model):
    """Mastra / AI SDK v4 ``toolInvocation`` shape, kept on messages built by the test helpers."""

    tool_call_id: str | None = None
    tool_name: str | None = None
    args: Any = None
    result: Any = None
    state: str | None = None


class Message(_Model):
    """A chat message: plain text plus the tool invocations it carries."""

    id: str | None = None
    role: str
    content: str = ""
    tool_invocations: list[ToolInvocation] = Field(default_factory=list)
    created_at: str | None = None


class AgentRun(_Model):
    """One agent invocation: what the user asked, what the agent did and answered.

    Runs built from Mastra-shaped messages fill ``input_messages``/``output_messages``; runs
    extracted from traces may carry no messages at all (tool names are enough for the code scorer).
    """

    run_id: str
    trace_id: str | None = None
    root_span_id: str | None = None
    parent_run_id: str | None = None
    agent_name: str | None = None
    conversation_id: str | None = None
    conventions: list[str] = Field(default_factory=list)
    input_messages: list[Message] = Field(default_factory=list)
    output_messages: list[Message] = Field(default_factory=list)
    user_query: str | None = None
    final_output: str | None = None
    available_tools: list[ToolDefinition] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    attributes: dict[str, Any] = Field(default_factory=dict)

    def scored_calls(self, include_framework: bool = False) -> list[ToolCall]:
        """The calls a scorer counts: every call, less framework calls unless asked."""
        if include_framework:
            return list(self.tool_calls)
        return [c for c in self.tool_calls if c.kind == "tool"]

    @property
    def has_content(self) -> bool:
        """True when the run carries something a judge could read (a request or an answer)."""
        return bool(self.user_query or self.final_output or self.input_messages or self.output_messages)
