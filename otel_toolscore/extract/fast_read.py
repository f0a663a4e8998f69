"""The table-driven lane of :func:`~.readers.read_span` for live spans.

Most spans of an instrumented agent are OTel GenAI model, tool and agent spans that only the GenAI
reader claims. For those, running the seven convention readers over a :class:`~.records.SpanRecord`
built first is most of the cost of reading a span. :func:`read_live_span` reads such a span straight
from the SDK object with one table lookup (``gen_ai.operation.name`` → role), defers its content
(messages, tool definitions) to the same parsers, and gives *exactly* the facts
:func:`~.readers.read_span` gives (``tests/test_fast_lane.py`` checks it on every shape the
conventions know). Anything another reader could claim — another convention's keys, a framework
scope or span name the other readers test, span events, a handoff — declines to the generic readers
(``None``).
"""

from __future__ import annotations

from typing import Any

from .facts import ExtractOptions, SpanFacts
from .readers import _LLM_OPS, GENAI_CONTENT, _str, settle_facts
from .records import _STATUS_BY_ID, plain_attributes
from .values import clean_id

__all__ = ["read_live_span"]

#: ``gen_ai.operation.name`` → role, for the operations the GenAI reader alone decides.
_ROLE_OF_OP: dict[str, str] = {"invoke_agent": "agent", "execute_tool": "tool", **dict.fromkeys(_LLM_OPS, "llm")}

#: Keys another reader (or a content parser) reacts to: their presence sends the span to the generic
#: readers. Kept in step with :mod:`.readers` by ``tests/test_fast_lane.py``.
_GENERIC_KEYS = frozenset(
    {
        # a handoff call (framework call) of the GenAI reader
        "gen_ai.agent.handoff.target.name",
        # other conventions
        "openinference.span.kind",
        "traceloop.span.kind",
        "llm.request.type",
        "gen_ai.prompt.0.role",
        "gen_ai.completion.0.role",
        "ai.operationId",
        "mastra.span.type",
        "pydantic_ai.all_messages",
        "pydantic_ai.tool.failure_stage",
        "tool_arguments",
        "gcp.vertex.agent.llm_request",
        "gcp.vertex.agent.tool_call_args",
    }
)
#: Span names and scopes the Pydantic AI and ADK readers claim whatever the attributes.
_GENERIC_NAMES = frozenset({"agent run", "running tool", "running tools", "execute_tool (merged)"})
_GENERIC_SCOPES = frozenset({"pydantic-ai", "gcp.vertex.agent"})


def read_live_span(span: Any, options: ExtractOptions) -> SpanFacts | None:
    """The facts of a live GenAI span only the GenAI reader claims, or ``None``: read it generically."""
    a = plain_attributes(span)
    op = a.get("gen_ai.operation.name")
    if type(op) is not str:
        return None
    role = _ROLE_OF_OP.get(op)
    if role is None or not _GENERIC_KEYS.isdisjoint(a):
        return None
    name = span.name
    if name in _GENERIC_NAMES or getattr(span, "_events", None):
        return None
    scope = span.instrumentation_scope
    scope_name = scope.name if scope is not None else None
    if scope_name in _GENERIC_SCOPES:
        return None
    tool = a.get("gen_ai.tool.name")
    if tool == "(merged tools)":
        return None
    ctx = span.context
    parent = span.parent
    status = span.status
    code = _STATUS_BY_ID.get(id(status.status_code)) or status.status_code.name
    f = SpanFacts(
        format(ctx.trace_id, "032x"),
        format(ctx.span_id, "016x"),
        format(parent.span_id, "016x") if parent is not None else None,
        role,
        name=name,
        start_time_unix_nano=span.start_time or 0,
        end_time_unix_nano=span.end_time or 0,
    )
    # what the GenAI reader sets for these operations (readers._genai), in its order
    f.agent_name = _str(a.get("gen_ai.agent.name"))
    f.agent_id = _str(a.get("gen_ai.agent.id"))
    if role == "agent" and code == "ERROR":
        f.status = "error"
    f.conversation_id = _str(a.get("gen_ai.conversation.id"))
    if tool is not None and role == "tool":
        f.tool_name = str(tool)
        f.call_id = clean_id(a.get("gen_ai.tool.call.id"))
        f.raw_arguments = a.get("gen_ai.tool.call.arguments")
        f.raw_result = a.get("gen_ai.tool.call.result")
    for key, parser in GENAI_CONTENT:  # content: parsed at assembly, as the GenAI reader defers it
        value = a.get(key)
        if value is not None:
            f.defer(parser, value)
    return settle_facts(f, a, ["genai"], code, status.description, scope_name, (), options)
