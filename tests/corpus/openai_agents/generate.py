"""Record OpenAI Agents SDK traces through a real instrumentation, with a scripted local model.

Usage (each instrumentation needs its own venv, see README.md):
    python tests/corpus/openai_agents/generate.py openinference
    python tests/corpus/openai_agents/generate.py otel_v2
    python tests/corpus/openai_agents/generate.py openllmetry

The model is the SDK's own ``OpenAIChatCompletionsModel`` (or, with ``--responses``, the default
``OpenAIResponsesModel``; output goes to ``<instrumentation>_responses/``) pointed at
``fake_openai.FakeOpenAI`` on 127.0.0.1, so the SDK emits its real generation / response spans.
``--no-content`` turns the instrumentation's content capture off (folder suffix ``_nocontent``). The SDK's own trace upload is removed
(``set_trace_processors([])`` before instrumenting), so nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import importlib.metadata as md
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from _record import Recorder  # noqa: E402
from agents import (  # noqa: E402
    Agent,
    ModelBehaviorError,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
    set_trace_processors,
)
from fake_openai import FakeOpenAI  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

INSTRUMENTATIONS = {
    "openinference": "openinference-instrumentation-openai-agents",
    "otel_v2": "opentelemetry-instrumentation-openai-agents-v2",
    "openllmetry": "opentelemetry-instrumentation-openai-agents",
}

WEATHER = {"Paris": "18C, cloudy", "Tokyo": "25C, sunny"}


@function_tool
def get_weather(city: str) -> str:
    """Return the current weather for a city."""
    return WEATHER[city]


@function_tool
def search_flights(origin: str, destination: str) -> str:
    """Search flights between two cities."""
    return f"Flights {origin}->{destination}: AF123 08:00, AF456 12:00"


@function_tool
def book_flight(flight_id: str) -> str:
    """Book a flight by id."""
    return f"Booked {flight_id}, confirmation ZX9"


@function_tool
def get_stock_price(symbol: str) -> str:
    """Return the latest stock price for a ticker symbol."""
    raise RuntimeError(f"quote service unavailable for {symbol}")


def call(name: str, arguments: dict[str, Any], status: str = "ok", kind: str = "tool") -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "status": status, "kind": kind}


def run(
    agent: str, query: str, final: str | None, tools: list[str], calls: list[dict[str, Any]], parent: str | None = None
) -> dict[str, Any]:
    return {
        "agent_name": agent,
        "user_query": query,
        "final_output": final,
        "parent_agent": parent,
        "available_tools": tools,
        "tool_calls": calls,
    }


class Scenarios:
    def __init__(self, fake: FakeOpenAI, api: str) -> None:
        client = AsyncOpenAI(base_url=fake.base_url, api_key="sk-local-fake", max_retries=0)
        self.model: Any
        if api == "responses":
            self.model = OpenAIResponsesModel(model=fake.model, openai_client=client)
        else:
            self.model = OpenAIChatCompletionsModel(model=fake.model, openai_client=client)
        self.fake = fake

    def agent(self, name: str, tools: list[Any], **kw: Any) -> Agent[Any]:
        return Agent(name=name, instructions=f"You are the {name} agent.", model=self.model, tools=tools, **kw)

    async def go(
        self, agent: Agent[Any], query: str, script: list[dict[str, Any]], expect_error: bool = False, **kw: Any
    ) -> str | None:
        self.fake.script(script)
        try:
            result = await Runner.run(agent, query, max_turns=6, **kw)
        except ModelBehaviorError:
            if not expect_error:
                raise
            return None
        assert not expect_error, "the run was expected to fail"
        assert not self.fake.replies, "script not consumed"
        return str(result.final_output)

    async def single_tool(self) -> tuple[list[dict[str, Any]], str]:
        q, final = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
        out = await self.go(
            self.agent("weather_agent", [get_weather]),
            q,
            [{"tool_calls": [("get_weather", {"city": "Paris"})]}, {"content": final}],
        )
        assert out == final
        return [run("weather_agent", q, final, ["get_weather"], [call("get_weather", {"city": "Paris"})])], ""

    async def multi_step(self) -> tuple[list[dict[str, Any]], str]:
        q = "Book me the first flight from Paris to Rome."
        final = "Booked AF123 (confirmation ZX9)."
        tools = [search_flights, book_flight]
        await self.go(
            self.agent("travel_agent", tools),
            q,
            [
                {"tool_calls": [("search_flights", {"origin": "Paris", "destination": "Rome"})]},
                {"tool_calls": [("book_flight", {"flight_id": "AF123"})]},
                {"content": final},
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

    async def parallel(self) -> tuple[list[dict[str, Any]], str]:
        q = "Compare the weather in Paris and Tokyo."
        final = "Paris is 18C and cloudy; Tokyo is 25C and sunny."
        await self.go(
            self.agent("weather_agent", [get_weather]),
            q,
            [
                {"tool_calls": [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})]},
                {"content": final},
            ],
        )
        return [
            run(
                "weather_agent",
                q,
                final,
                ["get_weather"],
                [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Tokyo"})],
            )
        ], ("Both calls were requested in one model response and run concurrently; order here is the requested order.")

    async def tool_error(self) -> tuple[list[dict[str, Any]], str]:
        q = "What is ACME trading at?"
        final = "Sorry, the quote service is unavailable right now."
        await self.go(
            self.agent("stocks_agent", [get_stock_price]),
            q,
            [{"tool_calls": [("get_stock_price", {"symbol": "ACME"})]}, {"content": final}],
        )
        return [
            run(
                "stocks_agent",
                q,
                final,
                ["get_stock_price"],
                [call("get_stock_price", {"symbol": "ACME"}, status="error")],
            )
        ], (
            "The tool raises RuntimeError; the SDK's default failure_error_function turns it into an "
            "error string sent back to the model, and the run continues."
        )

    async def invalid_args_retry(self) -> tuple[list[dict[str, Any]], str]:
        q = "What is the weather in Paris?"
        final = "It is 18C and cloudy in Paris."
        await self.go(
            self.agent("weather_agent", [get_weather]),
            q,
            [
                {"tool_calls": [("get_weather", {"town": "Paris"})]},
                {"tool_calls": [("get_weather", {"city": "Paris"})]},
                {"content": final},
            ],
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
            "First call misses the required `city` argument (validation fails, the function never runs); "
            "the model retries with valid arguments."
        )

    async def no_tool(self) -> tuple[list[dict[str, Any]], str]:
        q, final = "Say hello.", "Hello!"
        await self.go(self.agent("weather_agent", [get_weather]), q, [{"content": final}])
        return [run("weather_agent", q, final, ["get_weather"], [])], ""

    async def agent_as_tool(self) -> tuple[list[dict[str, Any]], str]:
        translator = self.agent("translator", [])
        tool = translator.as_tool("translate_to_french", "Translate English text to French.")
        q = "How do I say 'Good morning' in French?"
        final = "In French: Bonjour."
        await self.go(
            self.agent("orchestrator", [tool]),
            q,
            [
                {"tool_calls": [("translate_to_french", {"input": "Good morning"})]},
                {"content": "Bonjour"},
                {"content": final},
            ],
        )
        return [
            run(
                "orchestrator",
                q,
                final,
                ["translate_to_french"],
                [call("translate_to_french", {"input": "Good morning"})],
            ),
            run("translator", "Good morning", "Bonjour", [], [], parent="orchestrator"),
        ], (
            "translator runs inside the orchestrator's translate_to_french call (Agent.as_tool); "
            "its parent_agent is the calling agent."
        )

    async def handoff(self) -> tuple[list[dict[str, Any]], str]:
        weather = self.agent("weather_agent", [get_weather])
        triage = self.agent("triage", [], handoffs=[weather])
        q, final = "What is the weather in Tokyo?", "It is 25C and sunny in Tokyo."
        await self.go(
            triage,
            q,
            [
                {"tool_calls": [("transfer_to_weather_agent", {})]},
                {"tool_calls": [("get_weather", {"city": "Tokyo"})]},
                {"content": final},
            ],
        )
        return [
            run(
                "triage",
                q,
                None,
                ["transfer_to_weather_agent"],
                [call("transfer_to_weather_agent", {}, kind="framework")],
            ),
            run("weather_agent", q, final, ["get_weather"], [call("get_weather", {"city": "Tokyo"})], parent="triage"),
        ], (
            "One Runner.run: triage hands off to weather_agent (transfer_to_weather_agent is the SDK's "
            "handoff tool). weather_agent's parent_agent is the agent that handed off; it sees the "
            "same conversation, so its user_query is the original one. triage has no final output."
        )

    async def unknown_tool(self) -> tuple[list[dict[str, Any]], str]:
        q, final = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
        await self.go(
            self.agent("weather_agent", [get_weather]),
            q,
            [
                {"tool_calls": [("get_forecast", {"city": "Paris"})]},
                {"tool_calls": [("get_weather", {"city": "Paris"})]},
                {"content": final},
            ],
            run_config=RunConfig(tool_not_found_behavior="return_error_to_model"),
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
            "The model first calls get_forecast, which the agent does not have. With "
            "RunConfig(tool_not_found_behavior='return_error_to_model') the SDK sends "
            "\"Tool 'get_forecast' not found.\" back and the model retries with get_weather."
        )

    async def unknown_tool_fatal(self) -> tuple[list[dict[str, Any]], str]:
        q = "What is the weather in Paris?"
        await self.go(
            self.agent("weather_agent", [get_weather]),
            q,
            [{"tool_calls": [("get_forecast", {"city": "Paris"})]}],
            expect_error=True,
        )
        return [
            run("weather_agent", q, None, ["get_weather"], [call("get_forecast", {"city": "Paris"}, status="error")])
        ], (
            "The model calls get_forecast, which the agent does not have; with the default "
            "tool_not_found_behavior the SDK raises ModelBehaviorError and the run ends without an answer."
        )

    async def two_turns(self) -> tuple[list[dict[str, Any]], str]:
        session = SQLiteSession("corpus-session")  # in-memory; both runs share the conversation
        agent = self.agent("weather_agent", [get_weather])
        q1, f1 = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
        q2, f2 = "And in Tokyo?", "It is 25C and sunny in Tokyo."
        await self.go(
            agent, q1, [{"tool_calls": [("get_weather", {"city": "Paris"})]}, {"content": f1}], session=session
        )
        await self.go(
            agent, q2, [{"tool_calls": [("get_weather", {"city": "Tokyo"})]}, {"content": f2}], session=session
        )
        return [
            run("weather_agent", q1, f1, ["get_weather"], [call("get_weather", {"city": "Paris"})]),
            run("weather_agent", q2, f2, ["get_weather"], [call("get_weather", {"city": "Tokyo"})]),
        ], "Two Runner.run calls sharing an in-memory SQLiteSession: two traces (one per run) in one file."


SCENARIOS = [
    "single_tool",
    "multi_step",
    "parallel",
    "tool_error",
    "invalid_args_retry",
    "no_tool",
    "agent_as_tool",
    "handoff",
    "unknown_tool",
    "unknown_tool_fatal",
    "two_turns",
]


# Each instrumentation's own switch for "no prompts, arguments or results" (``--no-content``).
NO_CONTENT_ENV = {
    "openinference": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
    "openllmetry": {"TRACELOOP_TRACE_CONTENT": "false"},
    "otel_v2": {},  # passed as capture_message_content="no_content" below
}


def instrument(which: str, rec: Recorder, content: bool) -> None:
    if not content:
        os.environ.update(NO_CONTENT_ENV[which])
    set_trace_processors([])  # drop the SDK's default exporter to api.openai.com
    if which == "openinference":
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument(tracer_provider=rec.tracer_provider)
    elif which == "openllmetry":
        # OpenLLMetry's package shares the import path of the contrib one (separate venvs).
        from opentelemetry.instrumentation.openai_agents import (
            OpenAIAgentsInstrumentor as TraceloopInstrumentor,
        )

        TraceloopInstrumentor().instrument(tracer_provider=rec.tracer_provider)
    else:
        from opentelemetry.instrumentation.openai_agents import (
            OpenAIAgentsInstrumentor as ContribInstrumentor,
        )

        ContribInstrumentor().instrument(
            tracer_provider=rec.tracer_provider,
            capture_message_content="span_and_event" if content else "no_content",
            capture_metrics=False,
        )


async def main(which: str, api: str, content: bool, only: list[str]) -> None:
    rec = Recorder(service_name="corpus-openai-agents")
    instrument(which, rec, content)
    versions = {p: md.version(p) for p in ("openai-agents", "openai", INSTRUMENTATIONS[which], "opentelemetry-sdk")}
    out = HERE / (which + ("" if api == "chat" else "_responses") + ("" if content else "_nocontent"))
    with FakeOpenAI() as fake:
        scen = Scenarios(fake, api)
        for name in only or SCENARIOS:
            runs, notes = await getattr(scen, name)()
            await asyncio.sleep(0.05)
            written = rec.write(out / name)
            truth = {
                "framework": "openai-agents",
                "instrumentation": INSTRUMENTATIONS[which],
                "versions": versions,
                "content_capture": content,
                "scenario": name,
                "model_api": "responses" if api == "responses" else "chat_completions",
                "runs": runs,
                "notes": notes or None,
            }
            (out / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
            print(name, [p.name for p in written])


if __name__ == "__main__":
    # generate.py <instrumentation> [--responses] [--no-content] [scenario ...]
    args = sys.argv[2:]
    api = "responses" if "--responses" in args else "chat"
    asyncio.run(main(sys.argv[1], api, "--no-content" not in args, [a for a in args if not a.startswith("--")]))
