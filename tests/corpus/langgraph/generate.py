"""Record LangGraph (prebuilt ReAct agent) traces through a real instrumentation, with a scripted model.

Usage (each instrumentation needs its own venv, see README.md):
    python tests/corpus/langgraph/generate.py openinference [scenario ...]
    python tests/corpus/langgraph/generate.py openllmetry [scenario ...]
    (add ``--no-content`` to record with content capture off into ``<instrumentation>_nocontent/``)

The model is ``ScriptedChatModel``, a langchain-core ``BaseChatModel`` that pops scripted AIMessages
(with ``tool_calls`` ids ``call_<n>``) from a queue shared by all its instances; nothing leaves the machine.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]

from _record import Recorder  # noqa: E402

INSTRUMENTATIONS = {
    "openinference": "openinference-instrumentation-langchain",
    "openllmetry": "opentelemetry-instrumentation-langchain",
}


def instrument(which: str, rec: Recorder) -> None:
    # Instrument before langchain modules build their callback managers.
    if which == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=rec.tracer_provider)
    else:
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=rec.tracer_provider)


WHICH = sys.argv[1]
# ``--no-content``: each instrumentation's own switch for "no prompts, arguments or results".
CONTENT = "--no-content" not in sys.argv
NO_CONTENT_ENV = {
    "openinference": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
    "openllmetry": {"TRACELOOP_TRACE_CONTENT": "false"},
}
if not CONTENT:
    os.environ.update(NO_CONTENT_ENV[WHICH])
REC = Recorder(service_name="corpus-langgraph")
instrument(WHICH, REC)

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402
from langgraph.prebuilt import ToolNode, create_react_agent  # noqa: E402

SCRIPT: list[AIMessage] = []
_ids = iter(range(1, 10_000))


def say(text: str) -> AIMessage:
    return AIMessage(content=text)


def ask(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": f"call_{next(_ids)}", "type": "tool_call"} for n, a in calls],
    )


class ScriptedChatModel(BaseChatModel):
    model_name: str = "scripted-fake-chat"

    @property
    def _llm_type(self) -> str:
        return "scripted-fake-chat"

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        msg = SCRIPT.pop(0)
        msg.usage_metadata = {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30}
        return ChatResult(generations=[ChatGeneration(message=msg)])

    def _stream(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        """The streamed form of the next scripted message, cut as an OpenAI-style stream is: text in
        pieces, then per call a chunk with its index, id and name, then its arguments in fragments."""
        msg = SCRIPT.pop(0)
        text = str(msg.content)
        pieces: list[AIMessageChunk] = [AIMessageChunk(content=text[i : i + 8]) for i in range(0, len(text), 8)]
        for index, tc in enumerate(msg.tool_calls):
            args = json.dumps(tc["args"])
            pieces.append(AIMessageChunk(content="", tool_call_chunks=[
                {"index": index, "id": tc["id"], "name": tc["name"], "args": "", "type": "tool_call_chunk"}]))
            pieces.extend(
                AIMessageChunk(content="", tool_call_chunks=[
                    {"index": index, "id": None, "name": None, "args": args[i : i + 6], "type": "tool_call_chunk"}])
                for i in range(0, len(args), 6)
            )
        pieces.append(AIMessageChunk(content="", usage_metadata={"input_tokens": 20, "output_tokens": 10, "total_tokens": 30},
                                     chunk_position="last"))
        for piece in pieces:
            chunk = ChatGenerationChunk(message=piece)
            if run_manager is not None:
                run_manager.on_llm_new_token(str(piece.content), chunk=chunk)
            yield chunk

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


WEATHER = {"Paris": "18C, cloudy", "Tokyo": "25C, sunny"}
#: ``parallel_request_order``: a tool sets its event once running (inside its tool span), and
#: ``staggered_starts`` holds a requested call until the event it waits for is set.
STARTED: dict[str, threading.Event] = {}
WAITS_FOR: dict[str, str] = {}


def _started(key: str) -> None:
    if key in STARTED:
        STARTED[key].set()


@tool
def get_weather(city: str) -> str:
    """Return the current weather for a city."""
    _started(f"get_weather {city}")
    return WEATHER[city]


@tool
def get_calendar(day: str) -> str:
    """Return the user's appointments on a day."""
    _started(f"get_calendar {day}")
    return f"{day}: 09:00 stand-up, 14:00 dentist"


def staggered_starts(request: Any, handler: Any) -> Any:
    """ToolNode ``wrap_tool_call``: runs a call's tool only once the tool it waits for has started, so
    the tool spans start in an order other than the model's (as threads may run parallel calls)."""
    call = request.tool_call
    first = next(iter(call["args"].values()), "")
    waits_for = WAITS_FOR.get(f"{call['name']} {first}")
    if waits_for is not None and not STARTED[waits_for].wait(10):
        raise RuntimeError(f"{waits_for} never started")
    return handler(request)


@tool
def search_flights(origin: str, destination: str) -> str:
    """Search flights between two cities."""
    return f"Flights {origin}->{destination}: AF123 08:00, AF456 12:00"


@tool
def book_flight(flight_id: str) -> str:
    """Book a flight by id."""
    return f"Booked {flight_id}, confirmation ZX9"


@tool
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


def agent(name: str, tools: Any) -> Any:
    return create_react_agent(ScriptedChatModel(), tools=tools, name=name, prompt=f"You are the {name}.")


def go(graph: Any, query: str, script: list[AIMessage], **config: Any) -> str:
    SCRIPT[:] = script
    out = graph.invoke({"messages": [("user", query)]}, config=config or None)
    assert not SCRIPT, "script not consumed"
    return str(out["messages"][-1].content)


def go_streaming(graph: Any, query: str, script: list[AIMessage]) -> str:
    """``graph.stream`` with ``stream_mode="messages"``: the model streams (``ScriptedChatModel._stream``)
    token by token to the caller, as a chat UI runs an agent."""
    SCRIPT[:] = script
    last: dict[str, Any] = {}
    tokens = 0
    for mode, item in graph.stream({"messages": [("user", query)]}, stream_mode=["messages", "values"]):
        if mode == "values":
            last = item
        else:
            tokens += 1
    assert not SCRIPT, "script not consumed"
    assert tokens > len(script), "the model did not stream"
    return str(last["messages"][-1].content)


def single_tool() -> tuple[list[dict[str, Any]], str]:
    q, final = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
    assert go(agent("weather_agent", [get_weather]), q, [ask(("get_weather", {"city": "Paris"})), say(final)]) == final
    return [run("weather_agent", q, final, ["get_weather"], [call("get_weather", {"city": "Paris"})])], ""


def multi_step() -> tuple[list[dict[str, Any]], str]:
    q, final = "Book me the first flight from Paris to Rome.", "Booked AF123 (confirmation ZX9)."
    go(
        agent("travel_agent", [search_flights, book_flight]),
        q,
        [
            ask(("search_flights", {"origin": "Paris", "destination": "Rome"})),
            ask(("book_flight", {"flight_id": "AF123"})),
            say(final),
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


def parallel() -> tuple[list[dict[str, Any]], str]:
    q, final = "Compare the weather in Paris and Tokyo.", "Paris is 18C and cloudy; Tokyo is 25C and sunny."
    go(
        agent("weather_agent", [get_weather]),
        q,
        [ask(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})), say(final)],
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
        "Both calls come from one AIMessage; create_react_agent v2 runs each in its own `tools` task "
        "(Send), concurrently. Order here is the requested order."
    )


def _request_order(streaming: bool) -> tuple[list[dict[str, Any]], str]:
    q = "What is the weather in Paris and Tokyo, and what is on my calendar on Monday?"
    final = "Paris 18C cloudy, Tokyo 25C sunny; Monday: stand-up at 09:00, dentist at 14:00."
    STARTED.clear()
    STARTED.update({k: threading.Event() for k in ("get_weather Paris", "get_calendar Monday", "get_weather Tokyo")})
    WAITS_FOR.clear()
    WAITS_FOR.update({"get_calendar Monday": "get_weather Tokyo", "get_weather Paris": "get_calendar Monday"})
    graph = agent("assistant_agent", ToolNode([get_weather, get_calendar], wrap_tool_call=staggered_starts))
    request = ask(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"}), ("get_calendar", {"day": "Monday"}))
    assert (go_streaming if streaming else go)(graph, q, [request, say(final)]) == final
    assert all(e.is_set() for e in STARTED.values())
    calls = [{**call(tc["name"], tc["args"]), "call_id": tc["id"]} for tc in request.tool_calls]
    return [run("assistant_agent", q, final, ["get_weather", "get_calendar"], calls)], (
        "Three calls in one AIMessage, in the model's order get_weather(Paris), get_weather(Tokyo), "
        "get_calendar(Monday). Each runs in its own `tools` task (Send); ToolNode's wrap_tool_call holds "
        "get_calendar until get_weather(Tokyo) runs and get_weather(Paris) until get_calendar runs, so the "
        "tool spans START in the order get_weather(Tokyo), get_calendar, get_weather(Paris) (the `tools` task "
        "spans still start in request order). The truth is the model's order, with the model's call ids."
        + (" The graph runs through graph.stream(stream_mode=['messages', 'values']), so the model "
           "streams its reply (text pieces, then tool_call_chunks: id and name, then argument fragments)."
           if streaming else "")
    )


def parallel_request_order() -> tuple[list[dict[str, Any]], str]:
    return _request_order(streaming=False)


def parallel_request_order_streaming() -> tuple[list[dict[str, Any]], str]:
    return _request_order(streaming=True)


def tool_error() -> tuple[list[dict[str, Any]], str]:
    q, final = "What is ACME trading at?", "Sorry, the quote service is unavailable right now."
    go(
        agent("stocks_agent", ToolNode([get_stock_price], handle_tool_errors=True)),
        q,
        [ask(("get_stock_price", {"symbol": "ACME"})), say(final)],
    )
    return [
        run(
            "stocks_agent", q, final, ["get_stock_price"], [call("get_stock_price", {"symbol": "ACME"}, status="error")]
        )
    ], (
        "The tool raises RuntimeError; ToolNode(handle_tool_errors=True) turns it into an error "
        "ToolMessage and the run continues (with the default handler the graph would raise)."
    )


def invalid_args_retry() -> tuple[list[dict[str, Any]], str]:
    q, final = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
    go(
        agent("weather_agent", [get_weather]),
        q,
        [ask(("get_weather", {"town": "Paris"})), ask(("get_weather", {"city": "Paris"})), say(final)],
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
        "First call misses the required `city` argument: ToolNode's validation fails (the function "
        "never runs) and an error ToolMessage goes back; the model retries with valid arguments."
    )


def no_tool() -> tuple[list[dict[str, Any]], str]:
    q, final = "Say hello.", "Hello!"
    go(agent("weather_agent", [get_weather]), q, [say(final)])
    return [run("weather_agent", q, final, ["get_weather"], [])], ""


def agent_as_tool() -> tuple[list[dict[str, Any]], str]:
    translator = agent("translator", [])

    @tool
    def translate_to_french(text: str) -> str:
        """Translate English text to French."""
        out = translator.invoke({"messages": [("user", text)]})
        return str(out["messages"][-1].content)

    q, final = "How do I say 'Good morning' in French?", "In French: Bonjour."
    go(
        agent("orchestrator", [translate_to_french]),
        q,
        [ask(("translate_to_french", {"text": "Good morning"})), say("Bonjour"), say(final)],
    )
    return [
        run("orchestrator", q, final, ["translate_to_french"], [call("translate_to_french", {"text": "Good morning"})]),
        run("translator", "Good morning", "Bonjour", [], [], parent="orchestrator"),
    ], (
        "translator is a second create_react_agent graph invoked inside the orchestrator's "
        "translate_to_french tool (same trace). Neither graph name contains 'agent'."
    )


def session() -> tuple[list[dict[str, Any]], str]:
    q, final = "What is the weather in Tokyo?", "It is 25C and sunny in Tokyo."
    go(
        agent("weather_agent", [get_weather]),
        q,
        [ask(("get_weather", {"city": "Tokyo"})), say(final)],
        configurable={"thread_id": "thread-42"},
        metadata={"session_id": "session-42"},
    )
    return [run("weather_agent", q, final, ["get_weather"], [call("get_weather", {"city": "Tokyo"})])], (
        "Same as single_tool but invoked with config metadata session_id=session-42 and "
        "configurable thread_id=thread-42 (no checkpointer)."
    )


def unknown_tool() -> tuple[list[dict[str, Any]], str]:
    q, final = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
    go(
        agent("weather_agent", [get_weather]),
        q,
        [ask(("get_forecast", {"city": "Paris"})), ask(("get_weather", {"city": "Paris"})), say(final)],
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
        "The model first calls get_forecast, which the agent does not have; ToolNode answers with an "
        "error ToolMessage (no tool runs) and the model retries with get_weather."
    )


def two_turns() -> tuple[list[dict[str, Any]], str]:
    from langgraph.checkpoint.memory import InMemorySaver

    graph = create_react_agent(
        ScriptedChatModel(),
        tools=[get_weather],
        name="weather_agent",
        prompt="You are the weather_agent.",
        checkpointer=InMemorySaver(),
    )
    q1, f1 = "What is the weather in Paris?", "It is 18C and cloudy in Paris."
    q2, f2 = "And in Tokyo?", "It is 25C and sunny in Tokyo."
    cfg = {"configurable": {"thread_id": "thread-7"}}
    go(graph, q1, [ask(("get_weather", {"city": "Paris"})), say(f1)], **cfg)
    go(graph, q2, [ask(("get_weather", {"city": "Tokyo"})), say(f2)], **cfg)
    return [
        run("weather_agent", q1, f1, ["get_weather"], [call("get_weather", {"city": "Paris"})]),
        run("weather_agent", q2, f2, ["get_weather"], [call("get_weather", {"city": "Tokyo"})]),
    ], (
        "Two invocations of one graph with an InMemorySaver checkpointer and thread_id=thread-7: two "
        "traces in one file; the second run's state (and root input/output) includes the first turn."
    )


def supervisor_handoff() -> tuple[list[dict[str, Any]], str]:
    from langgraph_supervisor import create_supervisor

    weather = agent("weather_agent", [get_weather])
    graph = create_supervisor(
        [weather], model=ScriptedChatModel(), prompt="You are the supervisor.", supervisor_name="supervisor"
    ).compile(name="supervisor")
    q, final = "What is the weather in Tokyo?", "It is 25C and sunny in Tokyo."
    go(
        graph,
        q,
        [
            ask(("transfer_to_weather_agent", {})),
            ask(("get_weather", {"city": "Tokyo"})),
            say("Tokyo: 25C, sunny."),
            say(final),
        ],
    )
    return [
        run(
            "supervisor",
            q,
            final,
            ["transfer_to_weather_agent"],
            [call("transfer_to_weather_agent", {}, kind="framework")],
        ),
        run(
            "weather_agent",
            q,
            "Tokyo: 25C, sunny.",
            ["get_weather"],
            [call("get_weather", {"city": "Tokyo"})],
            parent="supervisor",
        ),
    ], (
        "langgraph-supervisor: the supervisor's model calls its handoff tool transfer_to_weather_agent; "
        "weather_agent (a create_react_agent subgraph) runs on the shared message list, then the "
        "framework appends a synthetic transfer_back_to_supervisor AIMessage/ToolMessage pair "
        "(not a tool execution, not listed here) and the supervisor answers. weather_agent's "
        "user_query is the original query (shared history)."
    )


def lc_create_agent() -> tuple[list[dict[str, Any]], str]:
    from langchain.agents import create_agent

    graph = create_agent(
        ScriptedChatModel(),
        tools=[search_flights, book_flight],
        system_prompt="You are the travel_agent.",
        name="travel_agent",
    )
    q, final = "Book me the first flight from Paris to Rome.", "Booked AF123 (confirmation ZX9)."
    go(
        graph,
        q,
        [
            ask(("search_flights", {"origin": "Paris", "destination": "Rome"})),
            ask(("book_flight", {"flight_id": "AF123"})),
            say(final),
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
    ], (
        "Same as multi_step but built with langchain.agents.create_agent (langchain 1.x, the "
        "successor of create_react_agent; node names `model` and `tools`)."
    )


SCENARIOS = [
    single_tool,
    multi_step,
    parallel,
    tool_error,
    invalid_args_retry,
    no_tool,
    agent_as_tool,
    session,
    supervisor_handoff,
    lc_create_agent,
    unknown_tool,
    two_turns,
    parallel_request_order,
    parallel_request_order_streaming,
]


def main(only: list[str]) -> None:
    versions = {
        p: md.version(p)
        for p in (
            "langgraph",
            "langgraph-prebuilt",
            "langchain-core",
            "langchain",
            "langgraph-supervisor",
            INSTRUMENTATIONS[WHICH],
            "opentelemetry-sdk",
        )
    }
    out = HERE / (WHICH if CONTENT else f"{WHICH}_nocontent")
    for fn in SCENARIOS:
        if only and fn.__name__ not in only:
            continue
        runs, notes = fn()
        written = REC.write(out / fn.__name__)
        truth = {
            "framework": "langgraph",
            "instrumentation": INSTRUMENTATIONS[WHICH],
            "versions": versions,
            "content_capture": CONTENT,
            "scenario": fn.__name__,
            "runs": runs,
            "notes": notes or None,
        }
        (out / f"{fn.__name__}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(fn.__name__, [p.name for p in written])


if __name__ == "__main__":
    main([a for a in sys.argv[2:] if not a.startswith("--")])
