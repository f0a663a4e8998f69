"""Mastra's "inappropriate tool" example: a weather question answered with a web search.

The judge marks the search as not appropriate and lists the weather tool as missing, so the score
is 0 / (1 call + 1 missing) = 0.0.

Run: python examples/llm_inappropriate_tool.py  (offline unless OPENAI_BASE_URL is set; see llm_basic.py)
"""

from __future__ import annotations

import os

from _judge_endpoint import judge_endpoint

from otel_toolscore.scorers.llm import create_tool_call_accuracy_scorer_llm
from otel_toolscore.testing import create_agent_test_run, create_test_message, create_tool_invocation

TOOLS = [
    {"id": "weather-tool", "description": "Get current weather information for any location"},
    {"id": "calendar-tool", "description": "Check calendar events and scheduling"},
    {"id": "search-tool", "description": "Search the web for general information"},
]
SCRIPTED_VERDICT = {
    "evaluations": [{"tool_called": "search-tool", "was_appropriate": False, "reasoning": "A web search does not give the weather."}],
    "missing_tools": ["weather-tool"],
    "reason": "The agent searched the web instead of using the weather tool.",
}


def main() -> int:
    run = create_agent_test_run(
        input_messages=[create_test_message("What's the weather in Tokyo?", role="user", id="input-1")],
        output=[
            create_test_message(
                "Here is what I found on the web about Tokyo.",
                role="assistant",
                id="output-1",
                tool_invocations=[create_tool_invocation("call-456", "search-tool", {"query": "Tokyo weather"}, {"results": []})],
            )
        ],
    )
    with judge_endpoint(SCRIPTED_VERDICT) as base_url:
        scorer = create_tool_call_accuracy_scorer_llm(
            os.environ.get("JUDGE_MODEL", "openai/gpt-4o-mini"), TOOLS, base_url=base_url, api_key="unused" if base_url else None
        )
        result = scorer.run(run)

    print("score:", result.score)  # 0.0
    print("missing tools:", result.analyze_step_result.missing_tools)  # ['weather-tool']
    for evaluation in result.analyze_step_result.evaluations:
        print(f"  {evaluation.tool_called}: appropriate={evaluation.was_appropriate} ({evaluation.reasoning})")
    print("reason:", result.reason)
    return 0 if base_url is None or result.score == 0.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
