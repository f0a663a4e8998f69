"""Record smolagents runs through openinference-instrumentation-smolagents, with a scripted local model.

Usage (in the venv described in README.md)::

    python tests/corpus/smolagents/generate.py [scenario ...]

Wiring as the OpenInference docs show it: ``SmolagentsInstrumentor().instrument(tracer_provider=...)``
before the agents are built. The model is smolagents' own ``OpenAIModel`` (an OpenAI-compatible
client) pointed at the scripted server of ``tests/corpus/_fake_openai.py`` on 127.0.0.1, so the agents
make their real model requests and the instrumentation sees real ``generate`` calls. Writes
``<mode>_<scenario>.{traces.jsonl,truth.json}`` beside this file; ``mode`` is ``toolcalling``
(``ToolCallingAgent``) or ``code`` (``CodeAgent``). The truth comes from the script and the agents'
own memory, never from the trace.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import _tools  # noqa: E402
from _fake_openai import FakeOpenAI, Reply, reply, text, tool_call  # noqa: E402
from _record import Recorder  # noqa: E402

rec = Recorder(service_name="corpus-smolagents")

from openinference.instrumentation.smolagents import SmolagentsInstrumentor  # noqa: E402

SmolagentsInstrumentor().instrument(tracer_provider=rec.tracer_provider)

from smolagents import CodeAgent, OpenAIModel, ToolCallingAgent, tool  # noqa: E402

VERSIONED = ("smolagents", "openinference-instrumentation-smolagents", "openinference-instrumentation",
             "openai", "opentelemetry-sdk")
get_weather, search_flights, book_flight, get_stock_price = (
    tool(fn) for fn in (_tools.get_weather, _tools.search_flights, _tools.book_flight, _tools.get_stock_price))


def call(name: str, arguments: Any, call_id: str | None, status: str = "ok", kind: str = "tool") -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "call_id": call_id, "status": status, "kind": kind}


def final(answer: str, call_id: str) -> tuple[Reply, dict[str, Any]]:
    """The model ends a ToolCallingAgent run by calling smolagents' built-in ``final_answer`` tool."""
    return (reply(tool_call("final_answer", answer=answer, call_id=call_id)),
            call("final_answer", {"answer": answer}, call_id, kind="framework"))


def run(agent: Any, query: str, answer: Any, calls: list[dict[str, Any]], parent: str | None = None) -> dict[str, Any]:
    return {
        "agent_name": agent.name,
        "user_query": query,
        "final_output": answer,
        "parent_agent": parent,
        # what the agent offered the model: its tools (final_answer included) and managed agents
        "available_tools": sorted([*agent.tools, *agent.managed_agents]),
        "tool_calls": calls,
    }


class Scenarios:
    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        self.model = OpenAIModel(model_id="gpt-4o-mini", api_base=fake.base_url, api_key="sk-local-fake",
                                 client_kwargs={"max_retries": 0})

    def tc_agent(self, name: str, tools: list[Any], **kw: Any) -> ToolCallingAgent:
        return ToolCallingAgent(tools=tools, model=self.model, name=name, max_steps=5, verbosity_level=0, **kw)

    def go(self, agent: Any, query: str, script: list[Reply]) -> Any:
        self.fake.push(*script)
        out = agent.run(query)
        assert self.fake.pending == 0, "script not consumed"
        return out

    # -- ToolCallingAgent ------------------------------------------------------------------------
    def toolcalling_single_tool(self) -> tuple[list[dict[str, Any]], str]:
        agent = self.tc_agent("weather_agent", [get_weather])
        q, a = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
        end, end_call = final(a, "call_s2")
        out = self.go(agent, q, [reply(tool_call("get_weather", city="Paris", call_id="call_s1")), end])
        assert out == a
        return [run(agent, q, a, [call("get_weather", {"city": "Paris"}, "call_s1"), end_call])], ""

    def toolcalling_multi_step(self) -> tuple[list[dict[str, Any]], str]:
        agent = self.tc_agent("travel_agent", [search_flights, book_flight])
        q, a = "Book me the first flight from Paris to Rome.", "Booked AF123 (confirmation ZX9)."
        end, end_call = final(a, "call_m3")
        out = self.go(agent, q, [
            reply(tool_call("search_flights", origin="Paris", destination="Rome", call_id="call_m1")),
            reply(tool_call("book_flight", flight_id="AF123", call_id="call_m2")), end])
        assert out == a
        return [run(agent, q, a, [call("search_flights", {"origin": "Paris", "destination": "Rome"}, "call_m1"),
                                  call("book_flight", {"flight_id": "AF123"}, "call_m2"), end_call])], ""

    def toolcalling_parallel(self) -> tuple[list[dict[str, Any]], str]:
        agent = self.tc_agent("weather_agent", [get_weather])
        q, a = "Compare the weather in Paris and Tokyo.", "Paris is 18C and cloudy; Tokyo is 25C and sunny."
        end, end_call = final(a, "call_p3")
        # ids deliberately out of lexical order: smolagents' memory sorts calls by id, the model did not
        out = self.go(agent, q, [reply(tool_call("get_weather", city="Paris", call_id="call_p2"),
                                       tool_call("get_weather", city="Tokyo", call_id="call_p1")), end])
        assert out == a
        return [run(agent, q, a, [call("get_weather", {"city": "Paris"}, "call_p2"),
                                  call("get_weather", {"city": "Tokyo"}, "call_p1"), end_call])], (
            "Both get_weather calls are requested in ONE model response (Paris listed first, id call_p2; "
            "Tokyo second, id call_p1). ToolCallingAgent runs them on a ThreadPoolExecutor; the Paris tool "
            "sleeps 50 ms, so it ends last. Order here is the model's listed order.")

    def toolcalling_tool_error(self) -> tuple[list[dict[str, Any]], str]:
        agent = self.tc_agent("stocks_agent", [get_stock_price])
        q, a = "What is ACME trading at?", "Sorry, the quote service is unavailable right now."
        end, end_call = final(a, "call_e2")
        out = self.go(agent, q, [reply(tool_call("get_stock_price", symbol="ACME", call_id="call_e1")), end])
        assert out == a
        return [run(agent, q, a, [call("get_stock_price", {"symbol": "ACME"}, "call_e1", status="error"),
                                  end_call])], (
            "The tool raises RuntimeError; smolagents records an AgentToolExecutionError in the step and "
            "the model recovers with final_answer.")

    def toolcalling_no_tool(self) -> tuple[list[dict[str, Any]], str]:
        agent = self.tc_agent("weather_agent", [get_weather])
        q, a = "Say hello.", "Hello! Ask me about the weather."
        end, end_call = final(a, "call_n1")
        out = self.go(agent, q, [end])
        assert out == a
        return [run(agent, q, a, [end_call])], (
            "A ToolCallingAgent can only answer through its final_answer tool: the run's one call is "
            "final_answer (kind framework); no user tool was called.")

    def toolcalling_managed_agent(self) -> tuple[list[dict[str, Any]], str]:
        inner = self.tc_agent("weather_agent", [get_weather], description="Answers weather questions.")
        manager = self.tc_agent("manager_agent", [], managed_agents=[inner])
        q, a = "Should I take an umbrella in Paris today?", "No umbrella needed: Paris is 18C and cloudy."
        inner_a = "Paris: 18C, cloudy."
        task = "What is the weather in Paris?"
        end_in, end_in_call = final(inner_a, "call_a3")
        end, end_call = final(a, "call_a4")
        out = self.go(manager, q, [
            reply(tool_call("weather_agent", task=task, call_id="call_a1")),
            reply(tool_call("get_weather", city="Paris", call_id="call_a2")), end_in, end])
        assert out == a
        inner_task = inner.memory.steps[0].task  # what smolagents really passed to the inner run()
        assert task in inner_task
        return [
            run(manager, q, a, [call("weather_agent", {"task": task}, "call_a1"), end_call]),
            run(inner, inner_task, inner_a, [call("get_weather", {"city": "Paris"}, "call_a2"), end_in_call],
                parent="manager_agent"),
        ], ("manager_agent calls its managed agent weather_agent as a tool (smolagents runs it through "
            "MultiStepAgent.__call__, which wraps the task in the managed_agent prompt template; that "
            "full text is the inner run's user_query). The inner run's final answer is the raw "
            "final_answer argument; the manager receives it wrapped in the report template.")

    # -- CodeAgent -------------------------------------------------------------------------------
    def code_agent(self, name: str, tools: list[Any]) -> CodeAgent:
        return CodeAgent(tools=tools, model=self.model, name=name, max_steps=4, verbosity_level=0)

    def code_multi_step(self) -> tuple[list[dict[str, Any]], str]:
        agent = self.code_agent("travel_agent", [search_flights, book_flight])
        q, a = "Book me the first flight from Paris to Rome.", "Booked AF123 (confirmation ZX9)."
        code = ('flights = search_flights(origin="Paris", destination="Rome")\n'
                'print(flights)\n'
                'booking = book_flight(flight_id="AF123")\n'
                f'final_answer("{a}")')
        out = self.go(agent, q, [text(f"Thought: search, then book.\n<code>\n{code}\n</code>")])
        assert out == a
        return [run(agent, q, a, [call("search_flights", {"origin": "Paris", "destination": "Rome"}, None),
                                  call("book_flight", {"flight_id": "AF123"}, None),
                                  call("final_answer", {"answer": a}, None, kind="framework")])], (
            "CodeAgent: ONE model response holds Python code that calls both tools and final_answer in "
            "sequence; the calls have no call ids (they are code, not tool_calls).")

    def code_tool_error(self) -> tuple[list[dict[str, Any]], str]:
        agent = self.code_agent("stocks_agent", [get_stock_price])
        q, a = "What is ACME trading at?", "Sorry, the quote service is unavailable right now."
        out = self.go(agent, q, [
            text('Thought: get the price.\n<code>\nprice = get_stock_price(symbol="ACME")\nprint(price)\n</code>'),
            text(f'Thought: the service failed.\n<code>\nfinal_answer("{a}")\n</code>')])
        assert out == a
        return [run(agent, q, a, [call("get_stock_price", {"symbol": "ACME"}, None, status="error"),
                                  call("final_answer", {"answer": a}, None, kind="framework")])], (
            "CodeAgent: the tool raises inside the executed code; the step ends in an execution error "
            "and the model answers in the next step.")


SCENARIOS: dict[str, Callable[[Scenarios], tuple[list[dict[str, Any]], str]]] = {
    name: fn for name, fn in vars(Scenarios).items() if name.startswith(("toolcalling_", "code_")) and callable(fn)
    and name != "code_agent"
}


def main(chosen: list[str]) -> None:
    versions = {p: version(p) for p in VERSIONED}
    for name in chosen or list(SCENARIOS):
        with FakeOpenAI() as fake:
            runs, notes = SCENARIOS[name](Scenarios(fake))
        stem = HERE / name
        written = rec.write(stem)
        mode, scenario = name.split("_", 1)
        truth = {
            "framework": f"smolagents ({'ToolCallingAgent' if mode == 'toolcalling' else 'CodeAgent'})",
            "instrumentation": "openinference-instrumentation-smolagents",
            "versions": versions,
            "content_capture": True,
            "scenario": scenario,
            "runs": runs,
            "notes": notes,
        }
        stem.with_name(stem.name + ".truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(name, [p.name for p in written])


if __name__ == "__main__":
    main(sys.argv[1:])
