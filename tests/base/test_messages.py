"""Reading Mastra / AI SDK messages: which calls count, and how legacy lists and parts merge."""

from __future__ import annotations

from typing import Any

import pytest

from otel_toolscore.messages import COUNTED_STATES, ERROR_STATES, calls_from_messages, parse_message
from otel_toolscore.model import Message, ToolInvocation


def stored(
    parts: list[dict[str, Any]] | None = None, legacy: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    """A Mastra stored message (``content.format == 2``)."""
    content: dict[str, Any] = {"format": 2, "parts": parts or [], **extra}
    if legacy is not None:
        content["toolInvocations"] = legacy
    return {"id": "m1", "role": "assistant", "createdAt": "2025-01-01T00:00:00.000Z", "content": content}


def inv(call_id: str | None, name: str | None, state: str | None = "result", **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"toolCallId": call_id, "toolName": name, "args": {}, **extra}
    if state is not None:
        data["state"] = state
    return data


def part(call_id: str | None, name: str | None, state: str | None = "result", **extra: Any) -> dict[str, Any]:
    return {"type": "tool-invocation", "toolInvocation": inv(call_id, name, state, **extra)}


def counted(*messages: Any) -> list[tuple[str, str | None, str]]:
    calls = calls_from_messages(parse_message(m) for m in messages)
    return [(c.name, c.call_id, c.status) for c in calls]


# -- which states count ------------------------------------------------------------------------------
@pytest.mark.parametrize("state", ["call", "result", "input-available", "output-available", None])
def test_selected_calls_count(state: str | None) -> None:
    assert counted(stored(legacy=[inv("1", "a", state)])) == [("a", "1", "ok")]


@pytest.mark.parametrize("state", ["error", "output-error"])
def test_failed_calls_count_with_error_status(state: str) -> None:
    """(differs from Mastra's code, which drops failed calls)"""
    calls = calls_from_messages([parse_message(stored(legacy=[inv("1", "a", state)]))])
    assert [(c.name, c.status, c.error_type) for c in calls] == [("a", "error", "tool_error")]


@pytest.mark.parametrize("state", ["partial-call", "input-streaming", "approval-requested", "something-new"])
def test_incomplete_or_unknown_calls_do_not_count(state: str) -> None:
    assert counted(stored(legacy=[inv("1", "a", state)])) == []


@pytest.mark.parametrize("name", [None, ""])
def test_nameless_entries_do_not_count(name: str | None) -> None:
    assert (
        counted(
            stored(
                legacy=[inv("1", name)], parts=[{"type": "dynamic-tool", "toolCallId": "2", "state": "input-available"}]
            )
        )
        == []
    )


def test_state_sets_are_the_spec() -> None:
    assert frozenset({"call", "result", "input-available", "output-available"}) == COUNTED_STATES
    assert frozenset({"error", "output-error"}) == ERROR_STATES


def test_calls_keep_order_repeats_and_positions() -> None:
    msgs = [
        parse_message(stored(legacy=[inv("1", "a"), inv("2", "a"), inv(None, "b", "partial-call"), inv(None, "c")])),
        parse_message({"role": "assistant", "content": "done"}),
        parse_message(stored(legacy=[inv("9", "a")])),
    ]
    calls = calls_from_messages(msgs)
    assert [(c.name, c.call_id, c.message_index, c.invocation_index, c.source) for c in calls] == [
        ("a", "1", 0, 0, "messages"),
        ("a", "2", 0, 1, "messages"),
        ("c", None, 0, 3, "messages"),
        ("a", "9", 2, 0, "messages"),
    ]
    assert calls[0].arguments == {}


# -- legacy toolInvocations + parts --------------------------------------------------------------------
def test_empty_legacy_list_hides_nothing() -> None:
    """(differs from Mastra's code, where an empty legacy list hides all parts)"""
    assert counted(stored(legacy=[], parts=[part("1", "a"), part("2", "b")])) == [("a", "1", "ok"), ("b", "2", "ok")]


def test_legacy_and_parts_merge_by_call_id_part_wins_first_position_kept() -> None:
    msg = parse_message(
        stored(
            legacy=[inv("1", "a", "call"), inv("2", "b", "call")],
            parts=[part("0", "z"), part("2", "b", "output-error", result="boom"), part("1", "a", "result", result=42)],
        )
    )
    assert [(i.tool_call_id, i.tool_name, i.state) for i in msg.tool_invocations] == [
        ("1", "a", "result"),  # legacy position, part content
        ("2", "b", "output-error"),
        ("0", "z", "result"),  # new in parts: after the legacy ones
    ]
    assert msg.tool_invocations[0].result == 42
    calls = calls_from_messages([msg])
    assert [(c.name, c.status) for c in calls] == [("a", "ok"), ("b", "error"), ("z", "ok")]


def test_part_wins_even_when_it_is_incomplete() -> None:
    assert counted(stored(legacy=[inv("1", "a", "result")], parts=[part("1", "a", "partial-call")])) == []


def test_calls_without_ids_are_never_merged() -> None:
    assert counted(stored(legacy=[inv(None, "a")], parts=[part(None, "a")])) == [("a", None, "ok"), ("a", None, "ok")]


def test_legacy_only_and_top_level_tool_invocations() -> None:
    assert counted(stored(legacy=[inv("1", "a")])) == [("a", "1", "ok")]
    # AI SDK v4 UIMessage: toolInvocations at the top level, content a string.
    v4 = {"role": "assistant", "content": "hi", "toolInvocations": [inv("1", "a"), inv("2", "b", "partial-call")]}
    assert counted(v4) == [("a", "1", "ok")]
    snake = {
        "role": "assistant",
        "content": "hi",
        "tool_invocations": [ToolInvocation(tool_call_id="3", tool_name="c")],
    }
    assert counted(snake) == [("c", "3", "ok")]


# -- AI SDK shapes ----------------------------------------------------------------------------------------
def test_ai_sdk_v5_ui_parts() -> None:
    msg = parse_message(
        {
            "id": "m",
            "role": "assistant",
            "content": {
                "format": 2,
                "parts": [
                    {"type": "step-start"},
                    {"type": "text", "text": "Looking"},
                    {
                        "type": "tool-getWeather",
                        "toolCallId": "w1",
                        "state": "output-available",
                        "input": {"city": "Paris"},
                        "output": {"t": 20},
                    },
                    {
                        "type": "dynamic-tool",
                        "toolName": "mcp.search",
                        "toolCallId": "d1",
                        "state": "input-available",
                        "input": {"q": "x"},
                    },
                    {
                        "type": "tool-book",
                        "toolCallId": "b1",
                        "state": "output-error",
                        "input": {},
                        "errorText": "sold out",
                    },
                    {"type": "tool-draft", "toolCallId": "s1", "state": "input-streaming"},
                    {"type": "text", "text": " done"},
                ],
            },
        }
    )
    assert msg.content == "Looking done"
    calls = calls_from_messages([msg])
    assert [(c.name, c.call_id, c.status) for c in calls] == [
        ("getWeather", "w1", "ok"),
        ("mcp.search", "d1", "ok"),
        ("book", "b1", "error"),
    ]
    assert calls[0].arguments == {"city": "Paris"}
    assert calls[0].result == {"t": 20}
    assert calls[2].result == "sold out"


def test_ai_sdk_v5_ui_message_with_top_level_parts() -> None:
    v5 = {
        "id": "u1",
        "role": "assistant",
        "parts": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool-getWeather", "toolCallId": "w1", "state": "output-available", "input": {}, "output": {}},
            {
                "type": "dynamic-tool",
                "toolName": "lookup",
                "toolCallId": "d1",
                "state": "output-error",
                "input": {},
                "errorText": "x",
            },
        ],
    }
    msg = parse_message(v5)
    assert msg.content == "Let me look."
    assert counted(v5) == [("getWeather", "w1", "ok"), ("lookup", "d1", "error")]
    # v4 UIMessage: content string, toolInvocations and tool-invocation parts for the same call.
    v4 = {
        "role": "assistant",
        "content": "hi",
        "toolInvocations": [inv("1", "a", "call")],
        "parts": [part("1", "a", "result")],
    }
    assert counted(v4) == [("a", "1", "ok")]
    assert parse_message(v4).tool_invocations[0].state == "result"


def test_core_message_tool_call_parts_and_tool_results_not_double_counted() -> None:
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "args": {"city": "Oslo"}},
            {"type": "tool-call", "toolCallId": "c2", "toolName": "news", "input": {"topic": "x"}},
        ],
    }
    tool = {
        "role": "tool",
        "content": [
            {"type": "tool-result", "toolCallId": "c1", "toolName": "weather", "result": {"t": 1}},
            {"type": "tool-result", "toolCallId": "c2", "toolName": "news", "output": {"type": "json", "value": 1}},
            {"type": "tool-error", "toolCallId": "c2", "toolName": "news", "error": "x"},
        ],
    }
    calls = calls_from_messages([parse_message(assistant), parse_message(tool)])
    assert [(c.name, c.arguments) for c in calls] == [("weather", {"city": "Oslo"}), ("news", {"topic": "x"})]
    assert parse_message(assistant).content == "Checking."


def test_a_v5_ui_tool_named_result_still_counts() -> None:
    """``tool-result`` with a ``state`` is a v5 UI part of a tool named "result"."""
    assert counted(stored(parts=[{"type": "tool-result", "toolCallId": "r1", "state": "output-available"}])) == [
        ("result", "r1", "ok")
    ]


# -- message fields ---------------------------------------------------------------------------------------
def test_mastra_stored_message_fields() -> None:
    msg = parse_message(stored(parts=[{"type": "text", "text": "from parts"}], content="from content"))
    assert (msg.id, msg.role, msg.content, msg.created_at) == (
        "m1",
        "assistant",
        "from content",
        "2025-01-01T00:00:00.000Z",
    )
    only_parts = parse_message(stored(parts=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]))
    assert only_parts.content == "ab"


def test_parse_message_passthrough_and_errors() -> None:
    m = Message(role="user", content="x")
    assert parse_message(m) is m
    assert parse_message({"content": "no role"}).role == "user"
    with pytest.raises(TypeError):
        parse_message("just text")  # type: ignore[arg-type]
    weird = parse_message(
        {
            "role": "assistant",
            "content": {"format": 2, "parts": ["junk", {"type": "tool-invocation", "toolInvocation": "bad"}]},
        }
    )
    assert weird.tool_invocations == []
