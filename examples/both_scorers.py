"""Mastra's "comparing both scorers" example: the code scorer and the LLM judge on the same runs.

The code scorer checks the expected tool by name (0 or 1, no I/O); the LLM judge decides whether each
call served the request and what was missing. On the wrong-tool run both say 0; on a run that calls
the right tool plus an unrequested extra one, the code scorer (lenient mode) still says 1 while the
judge discounts the extra call.

Run: python examples/both_scorers.py  (offline unless OPENAI_BASE_URL is set; see llm_basic.py)
"""

from __future__ import annotations

import os
from typing import Any

from _judge_endpoint import judge_endpoint

from otel_toolscore.scorers.code import create_tool_call_accuracy_scorer_code
from otel_toolscore.scorers.llm import create_tool_call_accuracy_scorer_llm
from otel_toolscore.testing import create_agent_test_run, create_test_message, create_tool_invocation

TOOLS = [
    {"id": "weather-tool", "description": "Get current weather information for any location"},
    {"id": "calendar-tool", "description": "Check calendar events and scheduling"},
    {"id": "search-tool", "description": "Search the web for general information"},
]
SCRIPTED_VERDICTS: list[dict[str, Any]] = [
    {
        "evaluations": [{"tool_called": "search-tool", "was_appropriate": False, "reasoning": "Not a weather lookup."}],
        "missing_tools": ["weather-tool"],
        "reason": "The weather tool was needed, a web search was used.",
    },
    {
        "evaluations": [
            {"tool_called": "weather-tool", "was_appropriate": True, "reasoning": "The user asked for the weather."},
            {"tool_called": "calendar-tool", "was_appropriate": False, "reasoning": "Nobody asked about the calendar."},
        ],
        "missing_tools": [],
        "reason": "The weather call was right; the calendar call was not requested.",
    },
]


def weather_run(*tools: str) -> Any:
    calls = [create_tool_invocation(f"call-{i}", name, {"location": "Boston"}, {}) for i, name in enumerate(tools)]
    return create_agent_test_run(
        input_messages=[create_test_message("What's the weather in Boston?", role="user", id="input-1")],
        output=[create_test_message("Here you go.", role="assistant", id="output-1", tool_invocations=calls)],
    )


def main() -> int:
    code = create_tool_call_accuracy_scorer_code(expected_tool="weather-tool", strict_mode=False)
    runs = {"wrong tool": weather_run("search-tool"), "right tool + extra": weather_run("weather-tool", "calendar-tool")}
    scores = []
    with judge_endpoint(*SCRIPTED_VERDICTS) as base_url:
        llm = create_tool_call_accuracy_scorer_llm(
            os.environ.get("JUDGE_MODEL", "openai/gpt-4o-mini"), TOOLS, base_url=base_url, api_key="unused" if base_url else None
        )
        for label, run in runs.items():
            code_result, llm_result = code.run(run), llm.run(run)
            scores.append((code_result.score, llm_result.score))
            print(f"{label:>20}: code={code_result.score}  llm={llm_result.score}  ({llm_result.reason})")
    # wrong tool: (0.0, 0.0); right tool + extra: (1.0, 0.5)
    return 0 if base_url is None or scores == [(0.0, 0.0), (1.0, 0.5)] else 1


if __name__ == "__main__":
    raise SystemExit(main())
