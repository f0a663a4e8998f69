"""Record LlamaIndex agent runs through openinference-instrumentation-llama-index, with a scripted model.

Usage (in the venv described in README.md)::

    python tests/corpus/llama_index/generate.py [scenario ...]

Wiring as the OpenInference docs show it: ``LlamaIndexInstrumentor().instrument(tracer_provider=...)``
before the agents run. The agents are ``FunctionAgent`` (run on its own: one-agent workflow) and
``AgentWorkflow`` (several agents with handoff), with LlamaIndex's own ``llama_index.llms.openai.OpenAI``
LLM pointed at the scripted server of ``tests/corpus/_fake_openai.py`` on 127.0.0.1 (FunctionAgent
streams by default, so the server streams). Writes ``<mode>_<scenario>.{traces.jsonl,truth.json}``
beside this file (``function_agent_*`` / ``agent_workflow_*``). The truth comes from the script, never
from the trace.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import _tools  # noqa: E402
from _fake_openai import FakeOpenAI, Reply, reply, text, tool_call  # noqa: E402
from _record import Recorder  # noqa: E402

rec = Recorder(service_name="corpus-llama-index")

from openinference.instrumentation.llama_index import LlamaIndexInstrumentor  # noqa: E402

LlamaIndexInstrumentor().instrument(tracer_provider=rec.tracer_provider)

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent  # noqa: E402
from llama_index.llms.openai import OpenAI  # noqa: E402

VERSIONED = ("llama-index-core", "llama-index-llms-openai", "llama-index-workflows",
             "openinference-instrumentation-llama-index", "openinference-instrumentation", "openai",
             "opentelemetry-sdk")


async def get_weather(city: str) -> str:
    """Return the current weather for a city.

    Args:
        city: The city name.
    """
    # async, as the LlamaIndex docs write tools: a blocking sleep would stall the workflow's event
    # loop and serialise the parallel calls
    if city == "Paris":
        await asyncio.sleep(_tools.PARIS_DELAY_S)
    return _tools.WEATHER[city]


search_flights, book_flight, get_stock_price = _tools.search_flights, _tools.book_flight, _tools.get_stock_price


def call(name: str, arguments: Any, call_id: str | None, status: str = "ok", kind: str = "tool") -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "call_id": call_id, "status": status, "kind": kind}


def run(agent: str, query: str | None, answer: str | None, tools: list[str], calls: list[dict[str, Any]],
        parent: str | None = None) -> dict[str, Any]:
    return {"agent_name": agent, "user_query": query, "final_output": answer, "parent_agent": parent,
            "available_tools": tools, "tool_calls": calls}


class Scenarios:
    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        self.llm = OpenAI(model="gpt-4o-mini", api_base=fake.base_url, api_key="sk-local-fake", max_retries=0)

    def agent(self, name: str, tools: list[Any], **kw: Any) -> FunctionAgent:
        # description and prompt deliberately free of the agent's name, so that any place the trace
        # shows the name is the framework's or the instrumentation's doing
        return FunctionAgent(name=name, description="Answers questions with its tools.", tools=tools,
                             llm=self.llm, system_prompt="You answer questions with your tools.", **kw)

    async def go(self, workflow: Any, query: str, script: list[Reply]) -> str:
        self.fake.push(*script)
        out = await workflow.run(user_msg=query)
        assert self.fake.pending == 0, "script not consumed"
        return str(out)

    # -- FunctionAgent ---------------------------------------------------------------------------
    async def function_agent_single_tool(self) -> tuple[list[dict[str, Any]], str]:
        q, a = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
        out = await self.go(self.agent("weather_agent", [get_weather]), q,
                            [reply(tool_call("get_weather", city="Paris", call_id="call_s1")), text(a)])
        assert out == a, out
        return [run("weather_agent", q, a, ["get_weather"], [call("get_weather", {"city": "Paris"}, "call_s1")])], ""

    async def function_agent_multi_step(self) -> tuple[list[dict[str, Any]], str]:
        q, a = "Book me the first flight from Paris to Rome.", "Booked AF123 (confirmation ZX9)."
        out = await self.go(self.agent("travel_agent", [search_flights, book_flight]), q, [
            reply(tool_call("search_flights", origin="Paris", destination="Rome", call_id="call_m1")),
            reply(tool_call("book_flight", flight_id="AF123", call_id="call_m2")), text(a)])
        assert out == a, out
        return [run("travel_agent", q, a, ["search_flights", "book_flight"],
                    [call("search_flights", {"origin": "Paris", "destination": "Rome"}, "call_m1"),
                     call("book_flight", {"flight_id": "AF123"}, "call_m2")])], ""

    async def function_agent_parallel(self) -> tuple[list[dict[str, Any]], str]:
        q, a = "Compare the weather in Paris and Tokyo.", "Paris is 18C and cloudy; Tokyo is 25C and sunny."
        out = await self.go(self.agent("weather_agent", [get_weather]), q, [
            reply(tool_call("get_weather", city="Paris", call_id="call_p2"),
                  tool_call("get_weather", city="Tokyo", call_id="call_p1")), text(a)])
        assert out == a, out
        return [run("weather_agent", q, a, ["get_weather"], [call("get_weather", {"city": "Paris"}, "call_p2"),
                                                             call("get_weather", {"city": "Tokyo"}, "call_p1")])], (
            "Both get_weather calls are requested in ONE model response (Paris listed first, id call_p2; "
            "Tokyo second, id call_p1). The workflow runs them as concurrent call_tool steps; the Paris "
            "tool awaits 50 ms, so it ends last. Order here is the model's listed order.")

    async def function_agent_tool_error(self) -> tuple[list[dict[str, Any]], str]:
        q, a = "What is ACME trading at?", "Sorry, the quote service is unavailable right now."
        out = await self.go(self.agent("stocks_agent", [get_stock_price]), q, [
            reply(tool_call("get_stock_price", symbol="ACME", call_id="call_e1")), text(a)])
        assert out == a, out
        return [run("stocks_agent", q, a, ["get_stock_price"],
                    [call("get_stock_price", {"symbol": "ACME"}, "call_e1", status="error")])], (
            "The tool raises RuntimeError; the agent's call_tool step catches it and sends the error text "
            "back to the model as a ToolOutput(is_error=True); the model answers.")

    async def function_agent_no_tool(self) -> tuple[list[dict[str, Any]], str]:
        q, a = "Say hello.", "Hello! Ask me about the weather."
        out = await self.go(self.agent("weather_agent", [get_weather]), q, [text(a)])
        assert out == a, out
        return [run("weather_agent", q, a, ["get_weather"], [])], ""

    async def function_agent_agent_as_tool(self) -> tuple[list[dict[str, Any]], str]:
        translator = self.agent("translator", [])

        async def translate_to_french(text: str) -> str:
            """Translate English text to French."""
            return str(await translator.run(user_msg=text))

        q, a = "How do I say 'Good morning' in French?", "In French: Bonjour."
        out = await self.go(self.agent("orchestrator", [translate_to_french]), q, [
            reply(tool_call("translate_to_french", text="Good morning", call_id="call_t1")),
            text("Bonjour"), text(a)])
        assert out == a, out
        return [run("orchestrator", q, a, ["translate_to_french"],
                    [call("translate_to_french", {"text": "Good morning"}, "call_t1")]),
                run("translator", "Good morning", "Bonjour", [], [], parent="orchestrator")], (
            "translator (a second FunctionAgent) runs inside the orchestrator's translate_to_french tool, "
            "as the LlamaIndex docs show for agents used as tools.")

    # -- AgentWorkflow (multi-agent handoff) -----------------------------------------------------
    async def agent_workflow_handoff(self) -> tuple[list[dict[str, Any]], str]:
        triage = self.agent("triage_agent", [], can_handoff_to=["weather_agent"])
        weather = self.agent("weather_agent", [get_weather])
        workflow = AgentWorkflow(agents=[triage, weather], root_agent="triage_agent")
        q, a = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
        reason = "The user asks about the weather."
        out = await self.go(workflow, q, [
            reply(tool_call("handoff", to_agent="weather_agent", reason=reason, call_id="call_h1")),
            reply(tool_call("get_weather", city="Paris", call_id="call_h2")), text(a)])
        assert out == a, out
        return [run("triage_agent", q, None, ["handoff"],
                    [call("handoff", {"to_agent": "weather_agent", "reason": reason}, "call_h1", kind="framework")]),
                run("weather_agent", q, a, ["get_weather", "handoff"],
                    [call("get_weather", {"city": "Paris"}, "call_h2")])], (
            "AgentWorkflow with root_agent triage_agent, which hands off to weather_agent through "
            "LlamaIndex's built-in `handoff` tool (kind framework). Both agents are steps of ONE workflow "
            "run: the user's request is the same for both; only weather_agent gives the final answer. "
            "Every agent of an AgentWorkflow is offered the handoff tool.")


SCENARIOS: dict[str, Callable[[Scenarios], Awaitable[tuple[list[dict[str, Any]], str]]]] = {
    name: fn for name, fn in vars(Scenarios).items()
    if name.startswith(("function_agent_", "agent_workflow_")) and callable(fn)
}


async def main(chosen: list[str]) -> None:
    versions = {p: version(p) for p in VERSIONED}
    for name in chosen or list(SCENARIOS):
        with FakeOpenAI() as fake:
            runs, notes = await SCENARIOS[name](Scenarios(fake))
        stem = HERE / name
        written = rec.write(stem)
        mode = "function_agent" if name.startswith("function_agent_") else "agent_workflow"
        truth = {
            "framework": f"llama-index ({'FunctionAgent' if mode == 'function_agent' else 'AgentWorkflow'})",
            "instrumentation": "openinference-instrumentation-llama-index",
            "versions": versions,
            "content_capture": True,
            "scenario": name[len(mode) + 1:],
            "runs": runs,
            "notes": notes,
        }
        stem.with_name(stem.name + ".truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(name, [p.name for p in written])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
