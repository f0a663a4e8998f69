"""Record Strands Agents traces from its built-in OpenTelemetry tracing, with a scripted model provider.

Usage:
    python tests/corpus/strands/generate.py <variant> [scenario ...]

Variants (the environment is set before strands is imported, since its tracer reads it once):
    default               nothing set
    latest_experimental   OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental,gen_ai_tool_definitions
    default_redacted      OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_unredacted_attributes=   (content redacted)
    latest_redacted       latest_experimental + gen_ai_unredacted_attributes=            (content redacted)
    openinference         nothing set + openinference-instrumentation-strands-agents' span processor

The model is ``ScriptedModel``, a strands ``Model`` provider that streams scripted turns as
Bedrock-Converse-shaped stream events (tool-use ids ``tooluse_<n>``). Nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import importlib.metadata as md
import json
import os
import sys
from collections.abc import AsyncIterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]

VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "latest_experimental": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental,gen_ai_tool_definitions"},
    # Strands' content switch is its redaction opt-in: an empty allow-list redacts every
    # sensitive attribute (messages, system instructions, tool arguments and results).
    "openinference": {},  # default conventions + OpenInference's span processor
    "default_redacted": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_unredacted_attributes="},
    "latest_redacted": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental,gen_ai_tool_definitions,gen_ai_unredacted_attributes="
    },
}
VARIANT = sys.argv[1]
os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)
os.environ.update(VARIANTS[VARIANT])
os.environ.setdefault("AWS_REGION", "us-east-1")  # never used: no Bedrock model is built

from _record import Recorder  # noqa: E402

if VARIANT == "openinference":
    # openinference-instrumentation-strands-agents (own venv) rewrites Strands' spans in place when
    # they end, so its processor must run before the recorder's exporter: build the provider here
    # with that order and hand it to the Recorder, whose write() flushes it and reads REC.spans.
    from openinference.instrumentation.strands_agents import StrandsAgentsToOpenInferenceProcessor
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    REC = Recorder(service_name="corpus-strands", set_global=False)
    _provider = TracerProvider(resource=REC.tracer_provider.resource)
    _provider.add_span_processor(StrandsAgentsToOpenInferenceProcessor())
    _provider.add_span_processor(SimpleSpanProcessor(REC.spans))
    REC.tracer_provider = _provider
    trace.set_tracer_provider(_provider)
else:
    REC = Recorder(service_name="corpus-strands")

from strands import Agent, tool  # noqa: E402
from strands.models.model import Model  # noqa: E402
from strands.multiagent import Swarm  # noqa: E402

Turn = str | list[tuple[str, dict[str, Any]]]
SCRIPT: list[Turn] = []
_ids = iter(range(1, 10_000))


class ScriptedModel(Model):
    def __init__(self) -> None:
        self.config: dict[str, Any] = {"model_id": "scripted-fake-model"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError("not used by the corpus scenarios")

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncIterable[Any]:
        turn = SCRIPT.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(turn, str):
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": turn}}}
            yield {"contentBlockStop": {}}
            stop = "end_turn"
        else:
            for name, args in turn:
                yield {
                    "contentBlockStart": {"start": {"toolUse": {"name": name, "toolUseId": f"tooluse_{next(_ids)}"}}}
                }
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
            stop = "tool_use"
        yield {"messageStop": {"stopReason": stop}}
        yield {
            "metadata": {
                "usage": {"inputTokens": 20, "outputTokens": 10, "totalTokens": 30},
                "metrics": {"latencyMs": 1},
            }
        }


WEATHER = {"Paris": "18C, cloudy", "Tokyo": "25C, sunny"}


@tool
def get_weather(city: str) -> str:
    """Return the current weather for a city.

    Args:
        city: The city name.
    """
    return WEATHER[city]


@tool
def search_flights(origin: str, destination: str) -> str:
    """Search flights between two cities.

    Args:
        origin: Departure city.
        destination: Arrival city.
    """
    return f"Flights {origin}->{destination}: AF123 08:00, AF456 12:00"


@tool
def book_flight(flight_id: str) -> str:
    """Book a flight by id.

    Args:
        flight_id: The flight to book.
    """
    return f"Booked {flight_id}, confirmation ZX9"


@tool
def get_stock_price(symbol: str) -> str:
    """Return the latest stock price for a ticker symbol.

    Args:
        symbol: Ticker symbol.
    """
    raise RuntimeError(f"quote service unavailable for {symbol}")


def agent(name: str, tools: list[Any], **kw: Any) -> Agent:
    return Agent(
        name=name,
        model=ScriptedModel(),
        system_prompt=f"You are the {name}.",
        tools=tools,
        description=f"The {name}.",
        callback_handler=None,
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


async def go(a: Agent, query: str, script: list[Turn]) -> str:
    SCRIPT[:] = script
    result = await a.invoke_async(query)
    assert not SCRIPT, f"script not consumed: {SCRIPT}"
    return str(result).strip()


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
        "Both calls come in one model message; Strands' default ConcurrentToolExecutor runs them "
        "concurrently. Order here is the requested order."
    )


async def tool_error() -> tuple[list[dict[str, Any]], str]:
    q, final = "What is ACME trading at?", "Sorry, the quote service is unavailable right now."
    await go(agent("stocks_agent", [get_stock_price]), q, [[("get_stock_price", {"symbol": "ACME"})], final])
    return [
        run(
            "stocks_agent", q, final, ["get_stock_price"], [call("get_stock_price", {"symbol": "ACME"}, status="error")]
        )
    ], ("The tool raises RuntimeError; Strands turns it into a toolResult with status 'error' and the run continues.")


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
        "First call misses the required `city`: the @tool input validation fails (the function "
        "never runs) and an error toolResult goes back; the model retries with valid arguments."
    )


async def no_tool() -> tuple[list[dict[str, Any]], str]:
    q, final = "Say hello.", "Hello!"
    await go(agent("weather_agent", [get_weather]), q, [final])
    return [run("weather_agent", q, final, ["get_weather"], [])], ""


async def agent_as_tool() -> tuple[list[dict[str, Any]], str]:
    translator = agent("translator", [])
    q, final = "How do I say 'Good morning' in French?", "In French: Bonjour."
    await go(
        agent("orchestrator", [translator.as_tool(name="translate_to_french")]),
        q,
        [[("translate_to_french", {"input": "Good morning"})], "Bonjour", final],
    )
    return [
        run(
            "orchestrator", q, final, ["translate_to_french"], [call("translate_to_french", {"input": "Good morning"})]
        ),
        run("translator", "Good morning", "Bonjour", [], [], parent="orchestrator"),
    ], "Agent.as_tool(name='translate_to_french'): translator runs inside the orchestrator's tool call."


async def swarm_handoff() -> tuple[list[dict[str, Any]], str]:
    triage = agent("triage", [])
    weather = agent("weather_agent", [get_weather])
    swarm = Swarm([triage, weather], entry_point=triage, max_handoffs=3, max_iterations=5)
    q, final = "What is the weather in Tokyo?", "It is 25C and sunny in Tokyo."
    handoff_args = {"agent_name": "weather_agent", "message": "User wants the Tokyo weather."}
    SCRIPT[:] = [
        [("handoff_to_agent", handoff_args)],
        "Handing off to weather_agent.",
        [("get_weather", {"city": "Tokyo"})],
        final,
    ]
    result = await swarm.invoke_async(q)
    assert not SCRIPT, f"script not consumed: {SCRIPT}"
    assert str(result.status).lower().endswith("completed"), result.status
    return [
        run(
            "triage",
            q,
            "Handing off to weather_agent.",
            ["handoff_to_agent"],
            [call("handoff_to_agent", handoff_args, kind="framework")],
        ),
        run(
            "weather_agent",
            q,
            final,
            ["get_weather", "handoff_to_agent"],
            [call("get_weather", {"city": "Tokyo"})],
            parent="triage",
        ),
    ], (
        "Swarm(triage -> weather_agent). Swarm injects its handoff_to_agent tool into every node. "
        "triage's model ends its turn after the handoff call with a short text. Both agents' "
        "prompts are built by the Swarm ('Context:\\nUser Request: <query>' + handoff message + "
        "agent list); user_query here is the original request the script gave the swarm."
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
        "The model first calls get_forecast, which the agent does not have; Strands answers with an "
        "error toolResult and the model retries with get_weather."
    )


async def two_turns() -> tuple[list[dict[str, Any]], str]:
    a = agent("weather_agent", [get_weather])
    q1, f1 = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
    q2, f2 = "And in Tokyo?", "It is 25C and sunny in Tokyo."
    await go(a, q1, [[("get_weather", {"city": "Paris"})], f1])
    await go(a, q2, [[("get_weather", {"city": "Tokyo"})], f2])
    return [
        run("weather_agent", q1, f1, ["get_weather"], [call("get_weather", {"city": "Paris"})]),
        run("weather_agent", q2, f2, ["get_weather"], [call("get_weather", {"city": "Tokyo"})]),
    ], "The same Agent invoked twice (history kept in memory): two invoke_agent traces in one file."


SCENARIOS = [
    single_tool,
    multi_step,
    parallel,
    tool_error,
    invalid_args_retry,
    no_tool,
    agent_as_tool,
    swarm_handoff,
    unknown_tool,
    two_turns,
]


async def main(only: list[str]) -> None:
    packages = ["strands-agents", "opentelemetry-sdk"]
    instrumentation = "strands-agents (built-in)"
    if VARIANT == "openinference":
        instrumentation = "strands-agents (built-in) + openinference-instrumentation-strands-agents"
        packages.append("openinference-instrumentation-strands-agents")
    versions = {p: md.version(p) for p in packages}
    out = HERE / VARIANT
    for fn in SCENARIOS:
        if only and fn.__name__ not in only:
            continue
        runs, notes = await fn()
        written = REC.write(out / fn.__name__)
        truth = {
            "framework": "strands-agents",
            "instrumentation": instrumentation,
            "versions": versions,
            "content_capture": not VARIANT.endswith("_redacted"),
            "scenario": fn.__name__,
            "environment": VARIANTS[VARIANT],
            "runs": runs,
            "notes": notes or None,
        }
        (out / f"{fn.__name__}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(fn.__name__, [p.name for p in written])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[2:]))
