"""Mastra's basic LLM-scorer example: the agent calls the right tool, the judge scores it 1.0.

Run: python examples/llm_basic.py
With OPENAI_BASE_URL (and OPENAI_API_KEY, JUDGE_MODEL) set, a real OpenAI-compatible endpoint judges;
otherwise a local test server plays the judge with a scripted verdict, so the example runs offline.
"""

from __future__ import annotations

import json
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
    "evaluations": [{"tool_called": "weather-tool", "was_appropriate": True, "reasoning": "The user asked for the weather."}],
    "missing_tools": [],
    "reason": "The agent used the weather tool for a weather question.",
}


def main() -> int:
    run = create_agent_test_run(
        input_messages=[create_test_message("What's the weather like in New York?", role="user", id="input-1")],
        output=[
            create_test_message(
                "Let me check the weather for you.",
                role="assistant",
                id="output-1",
                tool_invocations=[
                    create_tool_invocation("call-123", "weather-tool", {"location": "New York"}, {"temperature": "72°F"})
                ],
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
    print(json.dumps(result.model_dump(by_alias=True), indent=2, ensure_ascii=False))
    return 0 if base_url is None or result.score == 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
