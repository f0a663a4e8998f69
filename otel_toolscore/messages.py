"""Reading Mastra / AI SDK chat messages into :class:`Message` and counted :class:`ToolCall` s.

Which invocation states count as *called* is the rule of ``docs/code-scorer.md``: selected calls count
(including failed ones, kept with ``status="error"``); incomplete ones and nameless ones do not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .model import Message, ToolCall, ToolInvocation

__all__ = ["COUNTED_STATES", "ERROR_STATES", "calls_from_messages", "parse_message"]

#: States of a selected call (Mastra ``call``/``result``, AI SDK v5 ``input-available``/``output-available``).
COUNTED_STATES = frozenset({"call", "result", "input-available", "output-available"})
#: States of a call whose tool raised: counted, with ``status="error"`` (differs from Mastra's code).
ERROR_STATES = frozenset({"error", "output-error"})
#: AI SDK model-message / step parts that share the ``tool-`` prefix of v5 UI parts (``tool-<name>``)
#: but are not tool calls: the result or approval of a call made in a ``tool-call`` part. A UI part
#: always carries ``state``; these never do.
_NOT_UI_TOOL_PARTS = frozenset({"tool-result", "tool-error", "tool-approval-request", "tool-approval-response"})


def _invocation_from_part(part: Mapping[str, Any]) -> ToolInvocation | None:
    """One message part as a tool invocation, or ``None`` when it is not one."""
    ptype = part.get("type")
    if ptype == "tool-invocation":
        inv = part.get("toolInvocation")
        return ToolInvocation.model_validate(inv) if isinstance(inv, Mapping) else None
    if ptype == "tool-call":  # AI SDK CoreMessage content part
        return ToolInvocation(
            tool_call_id=part.get("toolCallId"),
            tool_name=part.get("toolName"),
            args=part.get("args", part.get("input")),
            state="call",
        )
    if ptype in _NOT_UI_TOOL_PARTS and "state" not in part:
        return None  # counting it would count the call of its ``tool-call`` part a second time
    if ptype == "dynamic-tool" or (isinstance(ptype, str) and ptype.startswith("tool-")):
        # AI SDK v5 UI parts: ``tool-<name>`` or ``dynamic-tool`` with ``toolName``.
        name = part.get("toolName") if ptype == "dynamic-tool" else ptype[len("tool-") :]
        return ToolInvocation(
            tool_call_id=part.get("toolCallId"),
            tool_name=name,
            args=part.get("input", part.get("args")),
            result=part.get("output", part.get("errorText")),
            state=part.get("state"),
        )
    return None


def _merge(legacy: list[ToolInvocation], parts: list[ToolInvocation]) -> list[ToolInvocation]:
    """Merge legacy ``toolInvocations`` and parts by call id: the part wins, first position kept."""
    merged: dict[Any, ToolInvocation] = {}
    for n, inv in enumerate([*legacy, *parts]):
        key: Any = inv.tool_call_id if inv.tool_call_id else ("anon", n)
        merged[key] = inv  # dict keeps the first insertion position when a key is overwritten
    return list(merged.values())


def parse_message(data: Message | Mapping[str, Any]) -> Message:
    """A message from our model, Mastra's stored JSON (``content.format == 2``) or a CoreMessage."""
    if isinstance(data, Message):
        return data
    if not isinstance(data, Mapping):
        raise TypeError(f"a message must be a Message or a mapping, not {type(data).__name__}")
    role = str(data.get("role") or "user")
    content = data.get("content")
    text = ""
    legacy: list[ToolInvocation] = []
    parts: list[ToolInvocation] = []
    raw_parts: Iterable[Any] = ()
    if isinstance(content, str):
        text = content
    elif isinstance(content, Mapping):  # Mastra v2 stored message
        raw_parts = content.get("parts") or ()
        stored_text = content.get("content")
        text = stored_text if isinstance(stored_text, str) else ""
        legacy = [ToolInvocation.model_validate(i) for i in content.get("toolInvocations") or () if isinstance(i, Mapping)]
    elif isinstance(content, list):  # CoreMessage content parts
        raw_parts = content
    top_parts = data.get("parts")
    if not raw_parts and isinstance(top_parts, list):
        # AI SDK v4/v5 UIMessage: parts at the top level (v5 has no ``content`` at all).
        raw_parts = top_parts
    if "toolInvocations" in data or "tool_invocations" in data:
        legacy += [
            i if isinstance(i, ToolInvocation) else ToolInvocation.model_validate(i)
            for i in data.get("toolInvocations", data.get("tool_invocations")) or ()
        ]
    texts: list[str] = []
    for part in raw_parts:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        inv = _invocation_from_part(part)
        if inv is not None:
            parts.append(inv)
    if not text and texts:
        text = "".join(texts)
    return Message(
        id=data.get("id"),
        role=role,
        content=text,
        tool_invocations=_merge(legacy, parts),
        created_at=str(data["createdAt"]) if data.get("createdAt") is not None else None,
    )


def calls_from_messages(messages: Iterable[Message]) -> list[ToolCall]:
    """The counted tool calls of a run's output messages, in order, nothing de-duplicated."""
    calls: list[ToolCall] = []
    for m_index, message in enumerate(messages):
        for i_index, inv in enumerate(message.tool_invocations):
            if not inv.tool_name:
                continue
            state = inv.state
            if state is not None and state not in COUNTED_STATES and state not in ERROR_STATES:
                continue  # partial-call, input-streaming, unknown: the agent has not selected it yet
            failed = state in ERROR_STATES
            calls.append(
                ToolCall(
                    name=inv.tool_name,
                    call_id=inv.tool_call_id or None,
                    arguments=inv.args,
                    result=inv.result,
                    status="error" if failed else "ok",
                    error_type="tool_error" if failed else None,
                    source="messages",
                    message_index=m_index,
                    invocation_index=i_index,
                )
            )
    return calls
