"""Record Google ADK traces from its built-in OpenTelemetry tracing, with a scripted BaseLlm.

Usage:
    python tests/corpus/google_adk/generate.py <variant> [scenario ...]

Variants (each sets its environment before ADK is imported; see README.md):
    v2_default        nothing set: ADK's default telemetry schema 2, no message content
    v2_content        schema 2 + OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT
    v1_legacy         ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1 (legacy spans; content in spans by default)
    v1_experimental   schema 1 + OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental + SPAN_AND_EVENT
    openinference     nothing set, traced by openinference-instrumentation-google-adk (separate venv)
    openinference_v1  ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1, traced by openinference-instrumentation-google-adk

The model is ``ScriptedLlm`` (a ``BaseLlm`` subclass) popping scripted turns; like Gemini it returns
function calls without ids, so ADK assigns ``adk-<uuid>`` ids. Nothing talks to Google.
"""

from __future__ import annotations

import asyncio
import importlib.metadata as md
import json
import os
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]

VARIANTS: dict[str, dict[str, str]] = {
    "v2_default": {},
    "v2_content": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT"},
    "v1_legacy": {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"},
    "v1_experimental": {
        "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1",
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT",
    },
    "openinference": {},
    "openinference_v1": {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"},
}
CONTENT = {
    "v2_default": False,
    "v2_content": True,
    "v1_legacy": True,
    "v1_experimental": True,
    "openinference": True,
    "openinference_v1": True,
}

VARIANT = sys.argv[1]
for key in (
    "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN",
    "OTEL_SEMCONV_STABILITY_OPT_IN",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
):
    os.environ.pop(key, None)
os.environ.update(VARIANTS[VARIANT])

from _record import Recorder  # noqa: E402

REC = Recorder(service_name="corpus-google-adk")
if VARIANT.startswith("openinference"):
    # OpenInference's instrumentor (own venv: requirements-openinference.txt) replaces ADK's tracer.
    from openinference.instrumentation.google_adk import GoogleADKInstrumentor

    GoogleADKInstrumentor().instrument(tracer_provider=REC.tracer_provider)

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models import BaseLlm, LlmCapabilities, LlmRequest, LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools import ToolContext  # noqa: E402
from google.adk.tools.agent_tool import AgentTool  # noqa: E402
from google.adk.tools.base_tool import BaseTool  # noqa: E402
from google.genai import types  # noqa: E402

Turn = str | list[tuple[str, dict[str, Any]]]
SCRIPT: list[Turn] = []


class ScriptedLlm(BaseLlm):
    model: str = "scripted-fake-gemini"

    @property
    def capabilities(self) -> LlmCapabilities:
        return LlmCapabilities(output_schema_and_tools=False)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        turn = SCRIPT.pop(0)
        if isinstance(turn, str):
            parts = [types.Part(text=turn)]
        else:
            parts = [types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in turn]
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            finish_reason=types.FinishReason.STOP,
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=20, candidates_token_count=10, total_token_count=30
            ),
        )


WEATHER = {"Paris": "18C, cloudy", "Tokyo": "25C, sunny"}


def get_weather(city: str) -> str:
    """Return the current weather for a city."""
    return WEATHER[city]


def search_flights(origin: str, destination: str) -> str:
    """Search flights between two cities."""
    return f"Flights {origin}->{destination}: AF123 08:00, AF456 12:00"


def book_flight(flight_id: str) -> str:
    """Book a flight by id."""
    return f"Booked {flight_id}, confirmation ZX9"


def get_stock_price(symbol: str) -> str:
    """Return the latest stock price for a ticker symbol."""
    raise RuntimeError(f"quote service unavailable for {symbol}")


def report_tool_error(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, error: Exception
) -> dict[str, Any]:
    """on_tool_error_callback: hand the error to the model instead of failing the run."""
    return {"error": f"{type(error).__name__}: {error}"}


def agent(name: str, tools: list[Any], **kw: Any) -> LlmAgent:
    return LlmAgent(
        name=name,
        model=ScriptedLlm(),
        instruction=f"You are the {name}.",
        description=f"The {name}.",
        tools=tools,
        **kw,
    )


def call(name: str, arguments: dict[str, Any], status: str = "ok", kind: str = "tool") -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "status": status, "kind": kind}


def run(
    agent_name: str,
    query: str,
    final: str | None,
    tools: list[str],
    calls: list[dict[str, Any]],
    parent: str | None = None,
) -> dict[str, Any]:
    return {
        "agent_name": agent_name,
        "user_query": query,
        "final_output": final,
        "parent_agent": parent,
        "available_tools": tools,
        "tool_calls": calls,
    }


async def go(root: LlmAgent, query: str, script: list[Turn], expect_error: bool = False) -> str | None:
    SCRIPT[:] = script
    runner = InMemoryRunner(agent=root, app_name="corpus")
    session = await runner.session_service.create_session(app_name="corpus", user_id="user-1", session_id="session-1")
    final = None
    try:
        async for event in runner.run_async(
            user_id="user-1",
            session_id=session.id,
            new_message=types.Content(role="user", parts=[types.Part(text=query)]),
        ):
            if event.is_final_response() and event.content and event.content.parts:
                final = "".join(p.text or "" for p in event.content.parts) or final
    except (RuntimeError, ValueError):
        if not expect_error:
            raise
    assert not SCRIPT, f"script not consumed: {SCRIPT}"
    return final


async def single_tool() -> tuple[list[dict[str, Any]], str]:
    q, final = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
    assert await go(agent("weather_agent", [get_weather]), q, [[("get_weather", {"city": "Paris"})], final]) == final
    return [run("weather_agent", q, final, ["get_weather"], [call("get_weather", {"city": "Paris"})])], ""


async def multi_step() -> tuple[list[dict[str, Any]], str]:
    q, final = "Book me the first flight from Paris to Rome.", "Booked AF123 (confirmation ZX9)."
    await go(
        agent("travel_agent", [search_flights, book_flight]),
        q,
        [
            [("search_flights", {"origin": "Paris", "destination": "Rome"})],
            [("book_flight", {"flight_id": "AF123"})],
            final,
        ],
    )
    return [
        run(
            "travel_agent",
            q,
            final,
            ["search_flights", "book_flight"],
            [
                call("search_flights", {"origin": "Paris", "destination": "Rome"}),
                call("book_flight", {"flight_id": "AF123"}),
            ],
        )
    ], ""


async def parallel() -> tuple[list[dict[str, Any]], str]:
    q, final = "Compare the weather in Paris and Tokyo.", "Paris is 18C and cloudy; Tokyo is 25C and sunny."
    await go(
        agent("weather_agent", [get_weather]),
        q,
        [[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})], final],
    )
    return [
        run(
            "weather_agent",
            q,
            final,
            ["get_weather"],
            [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Tokyo"})],
        )
    ], (
        "Both calls come in one model response; ADK runs them concurrently and merges the responses "
        "(look for the merged execute_tool span). Order here is the requested order."
    )


async def tool_error() -> tuple[list[dict[str, Any]], str]:
    q, final = "What is ACME trading at?", "Sorry, the quote service is unavailable right now."
    await go(
        agent("stocks_agent", [get_stock_price], on_tool_error_callback=report_tool_error),
        q,
        [[("get_stock_price", {"symbol": "ACME"})], final],
    )
    return [
        run(
            "stocks_agent", q, final, ["get_stock_price"], [call("get_stock_price", {"symbol": "ACME"}, status="error")]
        )
    ], (
        "The tool raises RuntimeError; the agent's on_tool_error_callback returns "
        "{'error': ...} as the function response and the run continues."
    )


async def tool_error_fatal() -> tuple[list[dict[str, Any]], str]:
    q = "What is ACME trading at?"
    await go(
        agent("stocks_agent", [get_stock_price]), q, [[("get_stock_price", {"symbol": "ACME"})]], expect_error=True
    )
    return [
        run("stocks_agent", q, None, ["get_stock_price"], [call("get_stock_price", {"symbol": "ACME"}, status="error")])
    ], (
        "No error callback: the RuntimeError propagates out of Runner.run_async and the run ends "
        "without a final answer."
    )


async def invalid_args_retry() -> tuple[list[dict[str, Any]], str]:
    q, final = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
    await go(
        agent("weather_agent", [get_weather]),
        q,
        [[("get_weather", {"town": "Paris"})], [("get_weather", {"city": "Paris"})], final],
    )
    return [
        run(
            "weather_agent",
            q,
            final,
            ["get_weather"],
            [call("get_weather", {"town": "Paris"}, status="error"), call("get_weather", {"city": "Paris"})],
        )
    ], (
        "First call misses the mandatory `city`: ADK's FunctionTool does not run the function and "
        "returns {'error': 'Invoking `get_weather()` failed ...'} as the response (no exception); "
        "the model retries with valid arguments."
    )


async def no_tool() -> tuple[list[dict[str, Any]], str]:
    q, final = "Say hello.", "Hello!"
    await go(agent("weather_agent", [get_weather]), q, [final])
    return [run("weather_agent", q, final, ["get_weather"], [])], ""


async def agent_as_tool() -> tuple[list[dict[str, Any]], str]:
    translator = agent("translator", [])
    q, final = "How do I say 'Good morning' in French?", "In French: Bonjour."
    await go(
        agent("orchestrator", [AgentTool(agent=translator)]),
        q,
        [[("translator", {"request": "Good morning"})], "Bonjour", final],
    )
    return [
        run("orchestrator", q, final, ["translator"], [call("translator", {"request": "Good morning"})]),
        run("translator", "Good morning", "Bonjour", [], [], parent="orchestrator"),
    ], (
        "AgentTool(translator): the tool is named after the agent; the nested agent runs in its own "
        "in-memory session inside the orchestrator's tool call."
    )


async def sub_agent_transfer() -> tuple[list[dict[str, Any]], str]:
    weather = agent("weather_agent", [get_weather], disallow_transfer_to_parent=True, disallow_transfer_to_peers=True)
    q, final = "What is the weather in Tokyo?", "It is 25C and sunny in Tokyo."
    await go(
        agent("triage", [], sub_agents=[weather]),
        q,
        [[("transfer_to_agent", {"agent_name": "weather_agent"})], [("get_weather", {"city": "Tokyo"})], final],
    )
    return [
        run(
            "triage",
            q,
            None,
            ["transfer_to_agent"],
            [call("transfer_to_agent", {"agent_name": "weather_agent"}, kind="framework")],
        ),
        run("weather_agent", q, final, ["get_weather"], [call("get_weather", {"city": "Tokyo"})], parent="triage"),
    ], (
        "triage has weather_agent as sub-agent; ADK adds its transfer_to_agent tool (framework "
        "handoff). weather_agent has disallow_transfer_to_parent/peers set, so it is offered "
        "get_weather only."
    )


async def unknown_tool() -> tuple[list[dict[str, Any]], str]:
    q, final = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
    await go(
        agent("weather_agent", [get_weather]),
        q,
        [[("get_forecast", {"city": "Paris"})], [("get_weather", {"city": "Paris"})], final],
    )
    return [
        run(
            "weather_agent",
            q,
            final,
            ["get_weather"],
            [call("get_forecast", {"city": "Paris"}, status="error"), call("get_weather", {"city": "Paris"})],
        )
    ], (
        "The model first calls get_forecast, which the agent does not have. ADK's tool lookup fails "
        "(ValueError 'Tool not found'); with no error callback ADK itself answers the call with a "
        "tool-not-found error response (non-fatal) and the model retries with get_weather."
    )


async def two_turns() -> tuple[list[dict[str, Any]], str]:
    SCRIPT[:] = [[("get_weather", {"city": "Paris"})], "It is 18C and cloudy in Paris."]
    root = agent("weather_agent", [get_weather])
    runner = InMemoryRunner(agent=root, app_name="corpus")
    await runner.session_service.create_session(app_name="corpus", user_id="user-1", session_id="session-2")
    turns = [
        ("What is the weather in Paris?", "Paris", "It is 18C and cloudy in Paris."),
        ("And in Tokyo?", "Tokyo", "It is 25C and sunny in Tokyo."),
    ]
    runs = []
    for query, city, final in turns:
        SCRIPT[:] = [[("get_weather", {"city": city})], final]
        async for _ in runner.run_async(
            user_id="user-1",
            session_id="session-2",
            new_message=types.Content(role="user", parts=[types.Part(text=query)]),
        ):
            pass
        assert not SCRIPT, f"script not consumed: {SCRIPT}"
        runs.append(run("weather_agent", query, final, ["get_weather"], [call("get_weather", {"city": city})]))
    return runs, "Two user turns in one session (session-2): two invocation traces in one file, same conversation id."


SCENARIOS = [
    single_tool,
    multi_step,
    parallel,
    tool_error,
    invalid_args_retry,
    no_tool,
    agent_as_tool,
    sub_agent_transfer,
    tool_error_fatal,
    unknown_tool,
    two_turns,
]


async def main(only: list[str]) -> None:
    packages = ["google-adk", "google-genai", "opentelemetry-sdk"]
    instrumentation = "google-adk (built-in, scope gcp.vertex.agent)"
    if VARIANT.startswith("openinference"):
        instrumentation = "openinference-instrumentation-google-adk"
        packages.append(instrumentation)
    versions = {p: md.version(p) for p in packages}
    out = HERE / VARIANT
    for fn in SCENARIOS:
        if only and fn.__name__ not in only:
            continue
        runs, notes = await fn()
        written = REC.write(out / fn.__name__)
        truth = {
            "framework": "google-adk",
            "instrumentation": instrumentation,
            "versions": versions,
            "content_capture": CONTENT[VARIANT],
            "scenario": fn.__name__,
            "environment": VARIANTS[VARIANT],
            "runs": runs,
            "notes": notes or None,
        }
        (out / f"{fn.__name__}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(fn.__name__, [p.name for p in written])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[2:]))
