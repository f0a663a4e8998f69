"""The shapes runs travel in between reading and a consumer: ``__slots__`` records.

Every run the core assembles, scores and hands on is built from these records: they hold the same
fields, under the same names, as the public pydantic models of :mod:`otel_toolscore.model`
(``ToolCall``, ``AgentRun``, ``ToolDefinition``), and the scorers, the rules and the assembler read
them alike. A model is built from a record only when a consumer asks for one (an ``on_scored``
callback, the judge, a score sink, ``iter_runs``, the command line): validating a model costs more
than everything else the worker does for a call, and most runs are only scored and counted.

No pydantic and no OpenTelemetry import here: the span processor's import path loads this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import AgentRun, ToolCall, ToolDefinition

__all__ = ["CallRecord", "RunRecord", "ToolRecord", "as_model"]


class ToolRecord:
    """A tool the agent could call (see :class:`~otel_toolscore.model.ToolDefinition`)."""

    __slots__ = ("description", "name", "parameters")

    def __init__(self, name: str, description: str | None = None, parameters: dict[str, Any] | None = None) -> None:
        self.name = name
        self.description = description
        self.parameters = parameters

    def to_model(self) -> ToolDefinition:
        from .model import ToolDefinition

        return ToolDefinition(name=self.name, description=self.description, parameters=self.parameters)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolRecord) and _fields(self) == _fields(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the model

    def __repr__(self) -> str:
        return f"ToolRecord(name={self.name!r})"


class CallRecord:
    """One tool call of a run (see :class:`~otel_toolscore.model.ToolCall` for the fields)."""

    __slots__ = (
        "arguments",
        "call_id",
        "end_time_unix_nano",
        "error_type",
        "invocation_index",
        "kind",
        "message_index",
        "name",
        "result",
        "source",
        "span_id",
        "start_time_unix_nano",
        "status",
    )

    def __init__(
        self,
        name: str,
        call_id: str | None = None,
        arguments: Any = None,
        result: Any = None,
        status: str = "ok",
        error_type: str | None = None,
        kind: str = "tool",
        source: str | None = None,
        span_id: str | None = None,
        start_time_unix_nano: int | None = None,
        end_time_unix_nano: int | None = None,
        message_index: int | None = None,
        invocation_index: int | None = None,
    ) -> None:
        self.name = name
        self.call_id = call_id
        self.arguments = arguments
        self.result = result
        self.status = status
        self.error_type = error_type
        self.kind = kind
        self.source = source
        self.span_id = span_id
        self.start_time_unix_nano = start_time_unix_nano
        self.end_time_unix_nano = end_time_unix_nano
        self.message_index = message_index
        self.invocation_index = invocation_index

    def to_model(self) -> ToolCall:
        from .model import ToolCall

        return ToolCall(**_fields(self))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CallRecord) and _fields(self) == _fields(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CallRecord(name={self.name!r}, call_id={self.call_id!r}, status={self.status!r}, kind={self.kind!r})"


class RunRecord:
    """One agent run (see :class:`~otel_toolscore.model.AgentRun` for the fields)."""

    __slots__ = (
        "agent_name",
        "attributes",
        "available_tools",
        "conventions",
        "conversation_id",
        "final_output",
        "input_messages",
        "output_messages",
        "parent_run_id",
        "root_span_id",
        "run_id",
        "tool_calls",
        "trace_id",
        "user_query",
    )

    def __init__(
        self,
        run_id: str,
        trace_id: str | None = None,
        root_span_id: str | None = None,
        parent_run_id: str | None = None,
        agent_name: str | None = None,
        conversation_id: str | None = None,
        conventions: list[str] | None = None,
        user_query: str | None = None,
        final_output: str | None = None,
        available_tools: list[ToolRecord] | None = None,
        tool_calls: list[CallRecord] | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> None:
        self.run_id = run_id
        self.trace_id = trace_id
        self.root_span_id = root_span_id
        self.parent_run_id = parent_run_id
        self.agent_name = agent_name
        self.conversation_id = conversation_id
        self.conventions = conventions if conventions is not None else []
        #: always empty for runs read from traces (messages are built only by the test helpers)
        self.input_messages: list[Any] = []
        self.output_messages: list[Any] = []
        self.user_query = user_query
        self.final_output = final_output
        self.available_tools = available_tools if available_tools is not None else []
        self.tool_calls = tool_calls if tool_calls is not None else []
        self.attributes = attributes if attributes is not None else {}

    def scored_calls(self, include_framework: bool = False) -> list[CallRecord]:
        """The calls a scorer counts: every call, less framework calls unless asked."""
        if include_framework:
            return list(self.tool_calls)
        return [c for c in self.tool_calls if c.kind == "tool"]

    @property
    def has_content(self) -> bool:
        return bool(self.user_query or self.final_output)

    def to_model(self) -> AgentRun:
        # One validation of the whole run, its calls and tools given as plain dicts: a model built
        # for each call first costs a validator call (and keyword unpacking) per call, and the run's
        # own validation then walks them again (docs/performance.md, "What a run asks for, parsed when it asks").
        return _validate_run(
            {
                "run_id": self.run_id,
                "trace_id": self.trace_id,
                "root_span_id": self.root_span_id,
                "parent_run_id": self.parent_run_id,
                "agent_name": self.agent_name,
                "conversation_id": self.conversation_id,
                "conventions": self.conventions,
                "user_query": self.user_query,
                "final_output": self.final_output,
                # records as dicts; a model put there (a test helper's) is taken as it is
                "available_tools": [_fields(t) if isinstance(t, ToolRecord) else t for t in self.available_tools],
                "tool_calls": [_fields(c) if isinstance(c, CallRecord) else c for c in self.tool_calls],
                "attributes": self.attributes,
            }
        )

    def __repr__(self) -> str:
        return f"RunRecord(run_id={self.run_id!r}, agent_name={self.agent_name!r}, calls={len(self.tool_calls)})"


#: ``AgentRun``'s validator, once the model has built it (its build is deferred to first use)
_run_validator: Any = None


def _validate_run(fields: dict[str, Any]) -> AgentRun:
    """``AgentRun.model_validate(fields)``; after the first call, its validator called directly (an
    import statement and ``model_validate``'s own checks cost a tenth of a small run's validation)."""
    global _run_validator
    if _run_validator is None:
        from .model import AgentRun

        run = AgentRun.model_validate(fields)  # builds the deferred validator
        _run_validator = AgentRun.__pydantic_validator__.validate_python
        return run
    return _run_validator(fields)  # type: ignore[no-any-return]


def as_model(value: Any) -> Any:
    """``value.to_model()`` for a record; a model (or anything else) as it is."""
    to_model = getattr(value, "to_model", None)
    return to_model() if to_model is not None else value


def _fields(record: Any) -> dict[str, Any]:
    return {name: getattr(record, name) for name in type(record).__slots__}
