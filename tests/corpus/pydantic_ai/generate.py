"""Record Pydantic AI traces (real agent + real instrumentation, scripted FunctionModel, offline).

Run from the repository root inside the venv described in README.md::

    python tests/corpus/pydantic_ai/generate.py [mode ...]     (all modes by default, e.g. ``v6_nocontent``)

Every scenario runs once per instrumentation mode and is written to ``<mode>_<scenario>`` in this
folder, with a ``.truth.json`` built from what this script asked the model to do (never from the
trace).
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _record import Recorder  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from pydantic_ai import Agent, ModelRetry, RunContext  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.instrumented import InstrumentationSettings  # noqa: E402

warnings.simplefilter("ignore")  # versions 2-4 emit a deprecation warning by design

rec = Recorder(service_name="corpus-pydantic-ai")

# (stem prefix, instrumentation version, include_content, label for the truth file)
MODES: list[tuple[str, int, bool, str]] = [
    ("v5", 5, True, "pydantic-ai instrumentation v5 (default)"),
    ("v5_nocontent", 5, False, "pydantic-ai instrumentation v5 (default), include_content=False"),
    ("v2", 2, True, "pydantic-ai instrumentation v2"),
    ("v2_nocontent", 2, False, "pydantic-ai instrumentation v2, include_content=False"),
    ("v6", 6, True, "pydantic-ai instrumentation v6 (opt-in: tool results in role=tool messages)"),
    ("v6_nocontent", 6, False, "pydantic-ai instrumentation v6 (opt-in), include_content=False"),
]

WEATHER = {"Paris": "sunny, 21 C", "London": "rain, 14 C", "Tokyo": "cloudy, 18 C"}
TIMES = {"Paris": "14:05", "London": "13:05", "Tokyo": "21:05"}


# ---- the script the fake model follows ---------------------------------------------------------
@dataclass
class Step:
    """One model response: tool calls (name, args, id) and/or text."""

    calls: list[tuple[str, dict[str, Any] | str, str]] = field(default_factory=list)
    text: str | None = None


def scripted(steps: list[Step]) -> FunctionModel:
    """A FunctionModel that returns the scripted responses in order (one per model request)."""
    queue = list(steps)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = queue.pop(0)
        parts: list[Any] = []
        if step.text is not None:
            parts.append(TextPart(step.text))
        parts += [ToolCallPart(name, args, tool_call_id=cid) for name, args, cid in step.calls]
        return ModelResponse(parts=parts)

    return FunctionModel(respond, model_name="scripted-model")


# ---- tools -------------------------------------------------------------------------------------
def get_weather(city: str) -> str:
    """Current weather for a city."""
    if city not in WEATHER:
        raise ModelRetry(f"Unknown city {city!r}; use a real city name.")
    return WEATHER[city]


def get_time(city: str) -> str:
    """Local time in a city."""
    return TIMES[city]


def get_forecast(city: str, days: int) -> str:
    """Weather forecast for a city for the next days."""
    return f"{city}: dry for {days} days"


def broken_lookup(city: str) -> str:
    """A tool whose backend is down: raises a plain exception (not ModelRetry)."""
    raise RuntimeError(f"weather backend unreachable for {city}")


def format_report(city: str, summary: str, temperature_c: int) -> str:
    """Format the final weather report (used as an output function)."""
    return f"{city}: {summary}, {temperature_c} C"


class WeatherReport(BaseModel):
    city: str
    summary: str
    temperature_c: int


# ---- truth -------------------------------------------------------------------------------------
@dataclass
class Call:
    name: str
    arguments: dict[str, Any] | str | None
    id: str
    status: str = "ok"
    kind: str = "tool"


@dataclass
class RunTruth:
    agent_name: str
    user_query: str
    final_output: str | None
    available_tools: list[str]
    tool_calls: list[Call]
    parent_agent: str | None = None


@dataclass
class Scenario:
    name: str
    build: Callable[[], Any]  # returns a coroutine performing the run(s)
    runs: list[RunTruth]
    notes: str = ""


def weather_agent(steps: list[Step], tools: list[Callable[..., Any]] | None = None,
                  name: str = "weather_agent", output_type: Any = str) -> Agent[None, Any]:
    agent: Agent[None, Any] = Agent(scripted(steps), name=name, output_type=output_type,
                                    instructions="You answer weather questions using the tools.")
    for tool in tools if tools is not None else [get_weather, get_time]:
        agent.tool_plain(tool)
    return agent


def simple(name: str, query: str, steps: list[Step], calls: list[Call], final: str,
           tools: list[Callable[..., Any]] | None = None, notes: str = "") -> Scenario:
    tools_list = tools if tools is not None else [get_weather, get_time]

    async def run() -> None:
        await weather_agent(steps, tools_list).run(query)

    return Scenario(name, run, [RunTruth("weather_agent", query, final, [t.__name__ for t in tools_list], calls)],
                    notes)


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    out.append(simple(
        "single_tool", "What is the weather in Paris?",
        [Step([("get_weather", {"city": "Paris"}, "call_w1")]), Step(text="It is sunny and 21 C in Paris.")],
        [Call("get_weather", {"city": "Paris"}, "call_w1")], "It is sunny and 21 C in Paris."))
    out.append(simple(
        "multi_step", "Weather and local time in Tokyo?",
        [Step([("get_weather", {"city": "Tokyo"}, "call_m1")]),
         Step([("get_time", {"city": "Tokyo"}, "call_m2")]),
         Step(text="Tokyo: cloudy, 18 C, local time 21:05.")],
        [Call("get_weather", {"city": "Tokyo"}, "call_m1"), Call("get_time", {"city": "Tokyo"}, "call_m2")],
        "Tokyo: cloudy, 18 C, local time 21:05."))
    out.append(simple(
        "parallel_calls", "Weather in Paris and the time in London?",
        [Step([("get_weather", {"city": "Paris"}, "call_p1"), ("get_time", {"city": "London"}, "call_p2")]),
         Step(text="Paris is sunny (21 C); it is 13:05 in London.")],
        [Call("get_weather", {"city": "Paris"}, "call_p1"), Call("get_time", {"city": "London"}, "call_p2")],
        "Paris is sunny (21 C); it is 13:05 in London.",
        notes="Both calls come from ONE model response; Pydantic AI runs them concurrently, so their "
              "execute_tool spans overlap in time and their end order may differ from request order."))
    out.append(simple(
        "tool_retry", "Weather in Atlantis, or else Paris?",
        [Step([("get_weather", {"city": "Atlantis"}, "call_r1")]),
         Step([("get_weather", {"city": "Paris"}, "call_r2")]),
         Step(text="Atlantis is unknown; Paris is sunny, 21 C.")],
        [Call("get_weather", {"city": "Atlantis"}, "call_r1", status="error"),
         Call("get_weather", {"city": "Paris"}, "call_r2")],
        "Atlantis is unknown; Paris is sunny, 21 C.",
        notes="The first get_weather call raises ModelRetry inside the tool (execution failure); the model "
              "is sent a retry prompt and calls again with a valid city."))
    out.append(simple(
        "invalid_args_retry", "Three-day forecast for London?",
        [Step([("get_forecast", {"city": "London", "days": "three"}, "call_v1")]),
         Step([("get_forecast", {"city": "London", "days": 3}, "call_v2")]),
         Step(text="London: dry for 3 days.")],
        [Call("get_forecast", {"city": "London", "days": "three"}, "call_v1", status="error"),
         Call("get_forecast", {"city": "London", "days": 3}, "call_v2")],
        "London: dry for 3 days.", tools=[get_forecast],
        notes="The first call's arguments fail validation (days='three' is not an int): the tool never runs; "
              "Pydantic AI sends a retry prompt and the model calls again with valid arguments."))
    out.append(simple(
        "no_tool", "Say hello.", [Step(text="Hello! Ask me about the weather.")], [],
        "Hello! Ask me about the weather."))

    # a plain exception in a tool aborts the run: the root span ends in error, there is no output
    q_exc = "Weather in Paris from the backup service?"

    async def run_exc() -> None:
        agent = weather_agent([Step([("broken_lookup", {"city": "Paris"}, "call_x1")])], [broken_lookup])
        try:
            await agent.run(q_exc)
        except RuntimeError:
            pass

    out.append(Scenario(
        "tool_exception", run_exc,
        [RunTruth("weather_agent", q_exc, None, ["broken_lookup"],
                  [Call("broken_lookup", {"city": "Paris"}, "call_x1", status="error")])],
        "broken_lookup raises RuntimeError (not ModelRetry): Pydantic AI does not catch it, the run aborts, "
        "the agent root span has ERROR status and there is no final output."))

    # agent as tool: the outer agent's tool runs a whole inner agent run (nested root)
    q_outer = "Plan my afternoon in Paris."
    inner_q = "What is the weather in Paris?"
    inner_final = "Sunny, 21 C."
    outer_final = "Paris is sunny this afternoon: go for a walk along the Seine."

    async def run_nested() -> None:
        inner = weather_agent([Step([("get_weather", {"city": "Paris"}, "call_i1")]), Step(text=inner_final)])
        outer: Agent[None, str] = Agent(
            scripted([Step([("ask_weather_agent", {"question": inner_q}, "call_o1")]), Step(text=outer_final)]),
            name="travel_agent", instructions="You plan trips; ask the weather agent about weather.")

        @outer.tool
        async def ask_weather_agent(ctx: RunContext[None], question: str) -> str:
            """Ask the weather agent a question."""
            result = await inner.run(question, usage=ctx.usage)
            return str(result.output)

        await outer.run(q_outer)

    out.append(Scenario(
        "agent_as_tool", run_nested,
        [RunTruth("travel_agent", q_outer, outer_final, ["ask_weather_agent"],
                  [Call("ask_weather_agent", {"question": inner_q}, "call_o1")]),
         RunTruth("weather_agent", inner_q, inner_final, ["get_weather", "get_time"],
                  [Call("get_weather", {"city": "Paris"}, "call_i1")], parent_agent="travel_agent")],
        "The inner agent run (weather_agent) is a child of travel_agent's execute_tool ask_weather_agent span, "
        "in the same trace. Its calls belong to the inner run only."))

    # structured output through the output tool final_result (a framework call)
    q_out = "Weather report for London as structured data."
    report = {"city": "London", "summary": "rain", "temperature_c": 14}

    async def run_output() -> None:
        agent = weather_agent(
            [Step([("get_weather", {"city": "London"}, "call_f1")]),
             Step([("final_result", report, "call_f2")])],
            [get_weather], output_type=WeatherReport)
        await agent.run(q_out)

    out.append(Scenario(
        "output_tool", run_output,
        [RunTruth("weather_agent", q_out, json.dumps(report, separators=(",", ":")), ["get_weather", "final_result"],
                  [Call("get_weather", {"city": "London"}, "call_f1"),
                   Call("final_result", report, "call_f2", kind="framework")])],
        "output_type=WeatherReport makes Pydantic AI offer an output tool named final_result; the model's call "
        "to it ends the run and is a framework call (kind=framework). With a plain output type (no output "
        "function) Pydantic AI emits NO execute_tool span for it: the call is visible only as a requested "
        "tool_call in the last chat span's gen_ai.output.messages (and in pydantic_ai.all_messages). "
        "final_output is the structured output as JSON (the root span's final_result attribute)."))

    # an output FUNCTION behind the output tool: now the framework call does get an execute_tool span
    q_fn = "Weather summary for Tokyo, formatted."
    fn_args = {"city": "Tokyo", "summary": "cloudy", "temperature_c": 18}

    async def run_output_fn() -> None:
        agent = weather_agent(
            [Step([("get_weather", {"city": "Tokyo"}, "call_g1")]),
             Step([("final_result", fn_args, "call_g2")])],
            [get_weather], output_type=format_report)
        await agent.run(q_fn)

    out.append(Scenario(
        "output_function", run_output_fn,
        [RunTruth("weather_agent", q_fn, format_report(**fn_args), ["get_weather", "final_result"],
                  [Call("get_weather", {"city": "Tokyo"}, "call_g1"),
                   Call("final_result", fn_args, "call_g2", kind="framework")])],
        "output_type=format_report (an output function) is offered to the model as the output tool "
        "final_result; because user code runs, Pydantic AI emits an execute_tool final_result span "
        "(logfire.msg 'running output function: final_result'). It is a framework call (kind=framework)."))

    # the real OpenAI chat model (openai client) against the scripted server on 127.0.0.1
    for streamed in (False, True):
        out.append(openai_scenario(streamed))
    return out


def openai_scenario(streamed: bool) -> Scenario:
    """Parallel calls through OpenAIChatModel, plain or streamed (agent.run_stream)."""
    from _fake_openai import FakeOpenAI, reply, text, tool_call
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    query = "Weather in London and the time in Tokyo?"
    final = "London: rain, 14 C; it is 21:05 in Tokyo."
    replies = [reply(tool_call("get_weather", city="London", call_id="call_oa1"),
                     tool_call("get_time", city="Tokyo", call_id="call_oa2")), text(final)]

    async def run() -> None:
        with FakeOpenAI(replies) as fake:
            model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=fake.base_url, api_key="test"))
            agent: Agent[None, str] = Agent(model, name="weather_agent",
                                            instructions="You answer weather questions using the tools.")
            agent.tool_plain(get_weather)
            agent.tool_plain(get_time)
            if streamed:
                async with agent.run_stream(query) as result:
                    output = await result.get_output()
            else:
                output = (await agent.run(query)).output
            assert output == final and fake.pending == 0, (output, fake.pending)

    return Scenario(
        "openai_streaming" if streamed else "openai_parallel_calls", run,
        [RunTruth("weather_agent", query, final, ["get_weather", "get_time"],
                  [Call("get_weather", {"city": "London"}, "call_oa1"), Call("get_time", {"city": "Tokyo"}, "call_oa2")])],
        "Real OpenAIChatModel (openai client) against the scripted Chat Completions server on 127.0.0.1"
        + (", streamed with agent.run_stream." if streamed else ".")
        + " Chat spans are named after the OpenAI model and carry gen_ai.provider.name=openai and server.*.")


# ---- driver ------------------------------------------------------------------------------------
def truth(s: Scenario, label: str, content: bool) -> dict[str, Any]:
    def call(c: Call) -> dict[str, Any]:
        return {"name": c.name, "id": c.id, "arguments": c.arguments if content else None,
                "status": c.status, "kind": c.kind}

    return {
        "framework": "pydantic-ai",
        "instrumentation": label,
        "versions": {p: version(p) for p in ("pydantic-ai-slim", "opentelemetry-sdk")},
        "content_capture": content,
        "scenario": s.name,
        "runs": [{
            "agent_name": r.agent_name,
            "user_query": r.user_query if content else None,
            "final_output": r.final_output if content else None,
            "parent_agent": r.parent_agent,
            "available_tools": r.available_tools,
            "tool_calls": [call(c) for c in r.tool_calls],
        } for r in s.runs],
        "notes": s.notes,
    }


def main(only: list[str]) -> None:
    unknown = set(only) - {m[0] for m in MODES}
    if unknown:
        raise SystemExit(f"unknown mode(s): {sorted(unknown)}")
    for prefix, ver, content, label in MODES:
        if only and prefix not in only:
            continue
        Agent.instrument_all(InstrumentationSettings(
            version=ver,  # type: ignore[arg-type]
            include_content=content, tracer_provider=rec.tracer_provider))
        for s in scenarios():
            asyncio.run(s.build())
            stem = HERE / f"{prefix}_{s.name}"
            written = rec.write(stem)
            stem.with_name(stem.name + ".truth.json").write_text(
                json.dumps(truth(s, label, content), indent=1) + "\n")
            print(stem.name, [p.name for p in written])


if __name__ == "__main__":
    main(sys.argv[1:])
