"""Mastra's "clarification" example: a vague request, no tool called, a clarifying question.

Asking for details instead of guessing is the right behaviour, so the score is 1.0.

Run: python examples/llm_clarification.py  (offline unless OPENAI_BASE_URL is set; see llm_basic.py)
"""

from __future__ import annotations

import os

from _judge_endpoint import judge_endpoint

from otel_toolscore.scorers.llm import create_tool_call_accuracy_scorer_llm
from otel_toolscore.testing import create_agent_test_run, create_test_message

TOOLS = [
    {"id": "weather-tool", "description": "Get current weather information for any location"},
    {"id": "calendar-tool", "description": "Check calendar events and scheduling"},
    {"id": "search-tool", "description": "Search the web for general information"},
]
SCRIPTED_VERDICT = {
    "evaluations": [],
    "missing_tools": [],
    "reason": "The request was too vague to pick a tool, so asking for details was right.",
}


def main() -> int:
    run = create_agent_test_run(
        input_messages=[create_test_message("I need help with something", role="user", id="input-1")],
        output=[
            create_test_message(
                "I'd be happy to help! Could you tell me more about what you need?", role="assistant", id="output-1"
            )
        ],
    )
    with judge_endpoint(SCRIPTED_VERDICT) as base_url:
        scorer = create_tool_call_accuracy_scorer_llm(
            os.environ.get("JUDGE_MODEL", "openai/gpt-4o-mini"), TOOLS, base_url=base_url, api_key="unused" if base_url else None
        )
        result = scorer.run(run)

    print("score:", result.score)  # 1.0
    print("reason:", result.reason)
    return 0 if base_url is None or result.score == 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
