"""Record CrewAI crews through openinference-instrumentation-crewai, with a scripted local model.

Usage (in the venv described in README.md)::

    python tests/corpus/crewai/generate.py [mode ...] [scenario ...]

Modes (each in its own child process, because instrumentation is process-wide):

* ``openinference``: ``CrewAIInstrumentor().instrument(tracer_provider=...)`` alone;
* ``openinference_openai``: the same plus ``OpenAIInstrumentor().instrument(tracer_provider=...)``,
  as OpenInference's CrewAI docs pair them for LLM spans. CrewAI 1.x calls the model through its
  native OpenAI provider (``crewai.llms.providers.openai``, the ``openai`` SDK), not through litellm
  (litellm is not even installed), so the OpenAI instrumentation is the one that sees the LLM calls.

The crews' ``LLM(model="gpt-4o-mini", base_url=...)`` points at the scripted server of
``tests/corpus/_fake_openai.py`` on 127.0.0.1. CrewAI's own telemetry and trace upload are switched off
(``CREWAI_DISABLE_TELEMETRY``, ``CREWAI_TRACING_ENABLED=false``). Writes
``<mode>_<scenario>.{traces.jsonl,truth.json}`` beside this file. The truth comes from the script,
never from the trace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

MODES = {
    "openinference": "openinference-instrumentation-crewai",
    "openinference_openai": "openinference-instrumentation-crewai + openinference-instrumentation-openai",
}
VERSIONED = ("crewai", "openinference-instrumentation-crewai", "openinference-instrumentation-openai",
             "openinference-instrumentation", "openai", "opentelemetry-sdk")
QUIET_ENV = {"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_TRACING_ENABLED": "false",
             "OTEL_SDK_DISABLED": "false", "CREWAI_DISABLE_TRACKING": "true"}


def call(name: str, arguments: Any, call_id: str | None, status: str = "ok", kind: str = "tool") -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "call_id": call_id, "status": status, "kind": kind}


def run(agent: str, query: str, answer: str, tools: list[str], calls: list[dict[str, Any]],
        parent: str | None = None) -> dict[str, Any]:
    return {"agent_name": agent, "user_query": query, "final_output": answer, "parent_agent": parent,
            "available_tools": tools, "tool_calls": calls}


def record(mode: str, chosen: list[str]) -> None:
    from _fake_openai import FakeOpenAI, Reply, reply, text, tool_call
    from _record import Recorder

    rec = Recorder(service_name="corpus-crewai")
    from openinference.instrumentation.crewai import CrewAIInstrumentor

    CrewAIInstrumentor().instrument(tracer_provider=rec.tracer_provider)
    if mode == "openinference_openai":
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=rec.tracer_provider)

    import _tools
    from crewai import LLM, Agent, Crew, Process, Task
    from crewai.tools import tool

    get_weather, search_flights, book_flight, get_stock_price = (
        tool(fn.__name__)(fn)
        for fn in (_tools.get_weather, _tools.search_flights, _tools.book_flight, _tools.get_stock_price))

    class Scenarios:
        def __init__(self, fake: FakeOpenAI) -> None:
            self.fake = fake
            self.llm = LLM(model="gpt-4o-mini", base_url=fake.base_url, api_key="sk-local-fake", max_retries=0)

        def agent(self, role: str, tools: list[Any], **kw: Any) -> Any:
            return Agent(role=role, goal="Answer the user's request accurately.",
                         backstory="You are careful and brief.", tools=tools, llm=self.llm, verbose=False, **kw)

        def go(self, agent: Any, query: str, script: list[Reply], *, agents: list[Any] | None = None,
               more_tasks: tuple[tuple[Any, str], ...] = ()) -> str:
            self.fake.push(*script)
            tasks = [Task(description=q, expected_output="A short answer.", agent=a)
                     for a, q in ((agent, query), *more_tasks)]
            crew = Crew(agents=agents or [agent], tasks=tasks, process=Process.sequential, verbose=False)
            out = crew.kickoff()
            assert self.fake.pending == 0, f"script not consumed ({self.fake.pending} left)"
            return str(out.raw)

        def single_tool(self) -> tuple[list[dict[str, Any]], str]:
            q, a = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
            out = self.go(self.agent("Weather reporter", [get_weather]), q,
                          [reply(tool_call("get_weather", city="Paris", call_id="call_s1")), text(a)])
            assert out == a, out
            return [run("Weather reporter", q, a, ["get_weather"],
                        [call("get_weather", {"city": "Paris"}, "call_s1")])], ""

        def multi_step(self) -> tuple[list[dict[str, Any]], str]:
            q, a = "Book me the first flight from Paris to Rome.", "Booked AF123 (confirmation ZX9)."
            out = self.go(self.agent("Travel agent", [search_flights, book_flight]), q, [
                reply(tool_call("search_flights", origin="Paris", destination="Rome", call_id="call_m1")),
                reply(tool_call("book_flight", flight_id="AF123", call_id="call_m2")), text(a)])
            assert out == a, out
            return [run("Travel agent", q, a, ["search_flights", "book_flight"],
                        [call("search_flights", {"origin": "Paris", "destination": "Rome"}, "call_m1"),
                         call("book_flight", {"flight_id": "AF123"}, "call_m2")])], ""

        def parallel(self) -> tuple[list[dict[str, Any]], str]:
            q, a = "Compare the weather in Paris and Tokyo.", "Paris is 18C and cloudy; Tokyo is 25C and sunny."
            out = self.go(self.agent("Weather reporter", [get_weather]), q, [
                reply(tool_call("get_weather", city="Paris", call_id="call_p2"),
                      tool_call("get_weather", city="Tokyo", call_id="call_p1")), text(a)])
            assert out == a, out
            return [run("Weather reporter", q, a, ["get_weather"],
                        [call("get_weather", {"city": "Paris"}, "call_p2"),
                         call("get_weather", {"city": "Tokyo"}, "call_p1")])], (
                "Both get_weather calls are requested in ONE model response (Paris listed first, id "
                "call_p2; Tokyo second, id call_p1). CrewAI runs native tool calls of one turn on a "
                "ThreadPoolExecutor; the Paris tool sleeps 50 ms, so it ends last. Order here is the "
                "model's listed order.")

        def tool_error(self) -> tuple[list[dict[str, Any]], str]:
            q, a = "What is ACME trading at?", "Sorry, the quote service is unavailable right now."
            out = self.go(self.agent("Stock analyst", [get_stock_price]), q, [
                reply(tool_call("get_stock_price", symbol="ACME", call_id="call_e1")), text(a)])
            assert out == a, out
            return [run("Stock analyst", q, a, ["get_stock_price"],
                        [call("get_stock_price", {"symbol": "ACME"}, "call_e1", status="error")])], (
                "The tool raises RuntimeError; CrewAI sends the error text back to the model, which answers.")

        def no_tool(self) -> tuple[list[dict[str, Any]], str]:
            q, a = "Say hello.", "Hello! Ask me about the weather."
            out = self.go(self.agent("Weather reporter", [get_weather]), q, [text(a)])
            assert out == a, out
            return [run("Weather reporter", q, a, ["get_weather"], [])], ""

        def delegation(self) -> tuple[list[dict[str, Any]], str]:
            reporter = self.agent("Weather reporter", [get_weather])
            planner = self.agent("Trip planner", [], allow_delegation=True)
            q, a = "Should I take an umbrella in Paris today?", "No umbrella needed: Paris is 18C and cloudy."
            sub_task, ctx, sub_a = "What is the weather in Paris?", "The user plans a day in Paris.", "Paris: 18C, cloudy."
            args = {"task": sub_task, "context": ctx, "coworker": "Weather reporter"}
            out = self.go(planner, q, [
                reply(tool_call("delegate_work_to_coworker", args, call_id="call_d1")),
                reply(tool_call("get_weather", city="Paris", call_id="call_d2")), text(sub_a), text(a)],
                agents=[planner, reporter])
            assert out == a, out
            return [run("Trip planner", q, a, ["ask_question_to_coworker", "delegate_work_to_coworker"],
                        [call("delegate_work_to_coworker", args, "call_d1")]),
                    run("Weather reporter", sub_task, sub_a, ["get_weather"],
                        [call("get_weather", {"city": "Paris"}, "call_d2")], parent="Trip planner")], (
                "Trip planner (allow_delegation=True) gets CrewAI's coworker tools and delegates to "
                "Weather reporter with delegate_work_to_coworker; the coworker's task (its description is "
                "the delegated `task`, the `context` is appended by CrewAI) runs inside that tool call.")

        def two_tasks(self) -> tuple[list[dict[str, Any]], str]:
            reporter = self.agent("Weather reporter", [get_weather])
            writer = self.agent("Postcard writer", [])
            q1, a1 = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
            q2, a2 = "Write a one-line postcard from Paris.", "Greetings from a cloudy, mild Paris!"
            out = self.go(reporter, q1, [reply(tool_call("get_weather", city="Paris", call_id="call_w1")),
                                         text(a1), text(a2)],
                          agents=[reporter, writer], more_tasks=((writer, q2),))
            assert out == a2, out
            return [run("Weather reporter", q1, a1, ["get_weather"], [call("get_weather", {"city": "Paris"}, "call_w1")]),
                    run("Postcard writer", q2, a2, [], [])], (
                "One crew, two sequential tasks by two agents: the second task gets the first one's output as "
                "context (CrewAI appends it to the prompt). Two runs side by side, neither nested in the other.")

    scenarios: dict[str, Callable[[Scenarios], tuple[list[dict[str, Any]], str]]] = {
        n: f for n, f in vars(Scenarios).items() if callable(f) and n not in ("agent", "go") and not n.startswith("_")
    }
    versions = {p: version(p) for p in VERSIONED}
    for name, fn in scenarios.items():
        if chosen and name not in chosen:
            continue
        with FakeOpenAI() as fake:
            runs, notes = fn(Scenarios(fake))
        stem = HERE / f"{mode}_{name}"
        written = rec.write(stem)
        truth = {"framework": "crewai", "instrumentation": MODES[mode], "versions": versions,
                 "content_capture": True, "scenario": name, "runs": runs, "notes": notes}
        stem.with_name(stem.name + ".truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(stem.name, [p.name for p in written])


def main(args: list[str]) -> None:
    if args[:1] == ["--child"]:
        record(args[1], args[2:])
        return
    modes = [a for a in args if a in MODES]
    scenarios = [a for a in args if a not in MODES]
    for mode in modes or list(MODES):
        subprocess.run([sys.executable, __file__, "--child", mode, *scenarios], check=True,
                       stdin=subprocess.DEVNULL, env={**os.environ, **QUIET_ENV})


if __name__ == "__main__":
    main(sys.argv[1:])
