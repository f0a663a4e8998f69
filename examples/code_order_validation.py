"""Mastra's "tool order validation" example: auth-tool then fetch-tool, strictly, nothing else.

Run: python examples/code_order_validation.py
"""

from __future__ import annotations

from otel_toolscore.model import AgentRun
from otel_toolscore.scorers.code import create_tool_call_accuracy_scorer_code
from otel_toolscore.testing import create_agent_test_run, create_test_message, create_tool_invocation

ARGS = {
    "auth-tool": {"token": "abc123"},
    "log-tool": {"message": "Starting fetch"},
    "fetch-tool": {"endpoint": "/data"},
}


def run_calling(*tools: str) -> AgentRun:
    return create_agent_test_run(
        input_messages=[create_test_message("Authenticate and fetch my data", role="user", id="input-1")],
        output=[
            create_test_message(
                "I will authenticate and fetch the data.",
                role="assistant",
                id="output-1",
                tool_invocations=[
                    create_tool_invocation(f"call-{i + 1}", name, args=ARGS[name], result={}, state="result")
                    for i, name in enumerate(tools)
                ],
            )
        ],
    )


def main() -> int:
    order_scorer = create_tool_call_accuracy_scorer_code(
        expected_tool="auth-tool",  # ignored for the score when an order is given
        expected_tool_order=["auth-tool", "fetch-tool"],
        strict_mode=True,  # no extra tools allowed
    )
    cases = {
        ("auth-tool", "fetch-tool"): 1.0,  # Mastra's example: the correct order
        ("fetch-tool", "auth-tool"): 0.0,  # wrong order
        ("auth-tool", "log-tool", "fetch-tool"): 0.0,  # an extra tool: not allowed in strict mode
    }
    ok = True
    for tools, expected in cases.items():
        result = order_scorer.run(run_calling(*tools))
        print(
            f"{' -> '.join(tools):<40} score={result.score}  correctOrderCalled={result.preprocess_step_result.correct_order_called}"
        )
        for entry in result.explanation:
            if entry.outcome != "matched":
                print(f"    {entry.outcome:<12} {entry.detail}")
        ok = ok and result.score == expected
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
