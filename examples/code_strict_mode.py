"""Mastra's "strict mode" example: two tools called, so a strict single-tool scorer gives 0.

Run: python examples/code_strict_mode.py
"""

from __future__ import annotations

from otel_toolscore.scorers.code import create_tool_call_accuracy_scorer_code
from otel_toolscore.testing import create_agent_test_run, create_test_message, create_tool_invocation


def main() -> int:
    strict_scorer = create_tool_call_accuracy_scorer_code(expected_tool="weather-tool", strict_mode=True)
    lenient_scorer = create_tool_call_accuracy_scorer_code(expected_tool="weather-tool")
    run = create_agent_test_run(
        input_messages=[create_test_message("What is the weather like in New York today?", role="user", id="input-1")],
        output=[
            create_test_message(
                "Let me help you with that.",
                role="assistant",
                id="output-1",
                tool_invocations=[
                    create_tool_invocation("call-1", "search-tool", args={}, result={}, state="result"),
                    create_tool_invocation(
                        "call-2", "weather-tool", args={"location": "New York"}, result={"temperature": "20°C"}
                    ),
                ],
            )
        ],
    )
    strict = strict_scorer.run(run)
    lenient = lenient_scorer.run(run)
    print("strict score:", strict.score, "- more than one tool was called")  # 0.0
    print("lenient score:", lenient.score, "- weather-tool was among the calls")  # 1.0
    print("why strict failed:")
    for entry in strict.explanation:
        print(f"  {entry.outcome:<10} {entry.detail}")
    return 0 if (strict.score, lenient.score) == (0.0, 1.0) else 1


if __name__ == "__main__":
    raise SystemExit(main())
