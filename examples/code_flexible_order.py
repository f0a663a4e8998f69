"""Mastra's "flexible order" example: extra tools are fine as long as the expected ones keep their order.

Lenient order mode checks that the expected order is a *subsequence* of the calls (our spec; Mastra's
code compares first-occurrence positions instead, so its result differs on the last two cases).

Run: python examples/code_flexible_order.py
"""

from __future__ import annotations

from otel_toolscore.model import AgentRun
from otel_toolscore.scorers.code import create_tool_call_accuracy_scorer_code
from otel_toolscore.testing import create_agent_test_run, create_test_message, create_tool_invocation


def run_calling(*tools: str) -> AgentRun:
    return create_agent_test_run(
        input_messages=[create_test_message("Run the full operation", role="user", id="input-1")],
        output=[
            create_test_message(
                "Performing a comprehensive operation.",
                role="assistant",
                id="output-1",
                tool_invocations=[
                    create_tool_invocation(f"call-{i + 1}", name, args={}, result={}, state="result")
                    for i, name in enumerate(tools)
                ],
            )
        ],
    )


def main() -> int:
    flexible = create_tool_call_accuracy_scorer_code(
        expected_tool="auth-tool",
        expected_tool_order=["auth-tool", "fetch-tool"],
        strict_mode=False,  # extra tools allowed
    )
    cases = {
        ("auth-tool", "log-tool", "fetch-tool"): 1.0,  # Mastra's example: auth-tool comes before fetch-tool
        ("fetch-tool", "log-tool", "auth-tool"): 0.0,  # wrong relative order
        ("fetch-tool", "auth-tool", "fetch-tool"): 1.0,  # a retry after auth: still in order (0 in Mastra's code)
    }
    ok = True
    for tools, expected in cases.items():
        result = flexible.run(run_calling(*tools))
        print(f"{' -> '.join(tools):<40} score={result.score}")
        for entry in result.explanation:
            print(f"    {entry.outcome:<12} {entry.detail}")
        ok = ok and result.score == expected
    # A tool expected twice must be called twice, in order.
    twice = create_tool_call_accuracy_scorer_code(expected_tool_order=["fetch-tool", "fetch-tool"])
    doubled = twice.run(run_calling("fetch-tool", "log-tool", "fetch-tool")).score
    single = twice.run(run_calling("fetch-tool")).score
    print(f"expected fetch-tool twice: called twice -> {doubled}, called once -> {single}")
    return 0 if ok and (doubled, single) == (1.0, 0.0) else 1


if __name__ == "__main__":
    raise SystemExit(main())
