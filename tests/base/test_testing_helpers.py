"""The Mastra-shaped test helpers: create_tool_invocation, create_test_message, create_agent_test_run."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from otel_toolscore.model import AgentRun, Message, ToolDefinition, ToolInvocation
from otel_toolscore.scorers.code import create_tool_call_accuracy_scorer_code
from otel_toolscore.testing import (
    EMPTY_RUN_ERROR,
    create_agent_test_run,
    create_test_message,
    create_tool_invocation,
    create_ui_message,
)

USER = create_test_message("What's the weather in Paris?", role="user", id="input-1")


def test_create_tool_invocation_defaults_and_aliases() -> None:
    ti = create_tool_invocation("call-1", "weather-tool", args={"city": "Paris"}, result={"t": 20})
    assert ti == ToolInvocation(
        tool_call_id="call-1", tool_name="weather-tool", args={"city": "Paris"}, result={"t": 20}, state="result"
    )
    assert ti.model_dump(by_alias=True) == {
        "toolCallId": "call-1",
        "toolName": "weather-tool",
        "args": {"city": "Paris"},
        "result": {"t": 20},
        "state": "result",
    }
    assert create_tool_invocation("c", "t", state="call").state == "call"


def test_create_test_message_defaults_and_dict_invocations() -> None:
    m = create_test_message("hello")
    assert (m.id, m.role, m.content, m.tool_invocations) == ("test-message", "user", "hello", [])
    m2 = create_test_message(
        "ok",
        role="assistant",
        id="out",
        tool_invocations=[{"toolCallId": "1", "toolName": "a", "state": "call"}, create_tool_invocation("2", "b")],
    )
    assert [(t.tool_call_id, t.tool_name, t.state) for t in m2.tool_invocations] == [
        ("1", "a", "call"),
        ("2", "b", "result"),
    ]
    assert create_ui_message is create_test_message


@pytest.mark.parametrize(
    ("inputs", "output"),
    [([], [create_test_message("x", role="assistant")]), ([USER], []), (None, [USER]), ([USER], None), (None, None)],
)
def test_empty_input_or_output_is_an_error(inputs: Any, output: Any) -> None:
    with pytest.raises(ValueError) as err:
        create_agent_test_run(input_messages=inputs, output=output)
    assert str(err.value) == "Input and output messages cannot be null or empty" == EMPTY_RUN_ERROR


def test_run_fields() -> None:
    out = [
        create_test_message(
            "Checking.", role="assistant", id="o1", tool_invocations=[create_tool_invocation("c1", "weather")]
        ),
        create_test_message("It is sunny.", role="assistant", id="o2"),
    ]
    run = create_agent_test_run(
        input_messages=[create_test_message("Be brief.", role="system"), USER],
        output=out,
        run_id="run-42",
        agent_name="weather-agent",
        available_tools=[{"name": "weather", "description": "Weather"}, {"id": "search"}, ToolDefinition(name="x")],
    )
    assert isinstance(run, AgentRun)
    assert run.run_id == "run-42"
    assert run.agent_name == "weather-agent"
    assert run.conventions == ["mastra-messages"]
    assert run.user_query == "What's the weather in Paris?"
    assert run.final_output == "It is sunny."
    assert [t.name for t in run.available_tools] == ["weather", "search", "x"]
    assert [(c.name, c.call_id) for c in run.tool_calls] == [("weather", "c1")]
    assert all(isinstance(m, Message) for m in [*run.input_messages, *run.output_messages])
    generated = create_agent_test_run(input_messages=[USER], output=out).run_id
    assert uuid.UUID(generated)
    assert create_agent_test_run(input_messages=[USER], output=out).run_id != generated


def test_tool_calls_in_input_messages_are_history() -> None:
    history = create_test_message(
        "earlier", role="assistant", tool_invocations=[create_tool_invocation("old", "weather")]
    )
    run = create_agent_test_run(
        input_messages=[USER, history], output=[create_test_message("No tool needed.", role="assistant")]
    )
    assert run.tool_calls == []
    assert create_tool_call_accuracy_scorer_code(expected_tool="weather").run(run).score == 0.0


def test_accepts_mastra_stored_message_json() -> None:
    inputs = [
        {
            "id": "in-1",
            "role": "user",
            "createdAt": "2025-06-01T10:00:00.000Z",
            "content": {
                "format": 2,
                "parts": [{"type": "text", "text": "Book me a flight"}],
                "content": "Book me a flight",
            },
        }
    ]
    output = [
        {
            "id": "out-1",
            "role": "assistant",
            "createdAt": "2025-06-01T10:00:01.000Z",
            "content": {
                "format": 2,
                "parts": [
                    {"type": "text", "text": "Searching and booking."},
                    {
                        "type": "tool-invocation",
                        "toolInvocation": {
                            "toolCallId": "s1",
                            "toolName": "search-flights",
                            "args": {"to": "NYC"},
                            "result": [1],
                            "state": "result",
                        },
                    },
                    {
                        "type": "tool-invocation",
                        "toolInvocation": {
                            "toolCallId": "b1",
                            "toolName": "book-flight",
                            "args": {"id": 1},
                            "state": "call",
                        },
                    },
                ],
                "toolInvocations": [],  # an empty legacy list hides nothing (differs from Mastra's code)
            },
        }
    ]
    run = create_agent_test_run(input_messages=inputs, output=output)
    assert run.user_query == "Book me a flight"
    assert run.final_output == "Searching and booking."
    assert run.input_messages[0].created_at == "2025-06-01T10:00:00.000Z"
    scorer = create_tool_call_accuracy_scorer_code(
        expected_tool_order=["search-flights", "book-flight"], strict_mode=True
    )
    result = scorer.run(run)
    assert result.score == 1.0
    assert [i.tool_call_id for i in result.preprocess_step_result.tool_call_infos] == ["s1", "b1"]


def test_accepts_ai_sdk_v5_parts() -> None:
    output = [
        {
            "id": "out-1",
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-getWeather",
                    "toolCallId": "w1",
                    "state": "output-available",
                    "input": {"city": "Paris"},
                    "output": {"t": 20},
                },
                {
                    "type": "dynamic-tool",
                    "toolName": "convert",
                    "toolCallId": "d1",
                    "state": "output-error",
                    "input": {},
                    "errorText": "x",
                },
                {"type": "text", "text": "20 degrees."},
            ],
        }
    ]
    run = create_agent_test_run(
        input_messages=[{"id": "in", "role": "user", "parts": [{"type": "text", "text": "Weather?"}]}], output=output
    )
    assert run.user_query == "Weather?"
    assert [(c.name, c.status) for c in run.tool_calls] == [("getWeather", "ok"), ("convert", "error")]
    assert (
        create_tool_call_accuracy_scorer_code(expected_tool_order=["getWeather", "convert"], strict_mode=True)
        .run(run)
        .score
        == 1.0
    )
