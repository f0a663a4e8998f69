"""Mastra's "correct tool selection" example: the agent calls the expected tool, the score is 1.

Run: python examples/code_correct_tool.py
"""

from __future__ import annotations

import json

from otel_toolscore.scorers.code import create_tool_call_accuracy_scorer_code
from otel_toolscore.testing import create_agent_test_run, create_test_message, create_tool_invocation


def main() -> int:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool="weather-tool")
    input_messages = [create_test_message("What is the weather like in New York today?", role="user", id="input-1")]
    output = [
        create_test_message(
            "Let me check the weather for you.",
            role="assistant",
            id="output-1",
            tool_invocations=[
                create_tool_invocation(
                    tool_call_id="call-123",
                    tool_name="weather-tool",
                    args={"location": "New York"},
                    result={"temperature": "72°F", "condition": "sunny"},
                    state="result",
                )
            ],
        )
    ]
    result = scorer.run(create_agent_test_run(input_messages=input_messages, output=output))

    print("score:", result.score)  # 1.0
    print("correctToolCalled:", result.preprocess_step_result.correct_tool_called)  # True
    print(result.summary())
    # The same result in Mastra's JSON shape (camelCase keys), without our opt-in explanation.
    print(json.dumps(result.model_dump(by_alias=True, exclude={"explanation", "match"}), indent=2, ensure_ascii=False))
    return 0 if result.score == 1.0 and result.preprocess_step_result.correct_tool_called else 1


if __name__ == "__main__":
    raise SystemExit(main())
