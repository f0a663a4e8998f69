"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 for the corpus generators.

Standard library only, so it runs in any generator venv. The server answers each
``POST /v1/chat/completions`` with the next scripted reply (or with whatever a callable returns for
the request), in the non-streaming or the streaming (SSE) shape the real API uses, including
``tool_calls`` and ``usage``. Every request body is kept in ``server.requests`` so a generator can
check what the client really sent.

Usage::

    from _fake_openai import FakeOpenAI, text, tool_call, reply

    with FakeOpenAI([reply(tool_call("get_weather", city="Paris")), text("It is sunny.")]) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="test")
        ...

A reply is a plain dict: ``{"content": str | None, "tool_calls": [{"id", "name", "arguments"}],
"finish_reason": str (optional), "usage": {"prompt_tokens", "completion_tokens"} (optional)}``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any]
Script = Callable[[dict[str, Any]], Reply]

_ids = itertools.count(1)


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, *, call_id: str | None = None,
              **kwargs: Any) -> dict[str, Any]:
    """One requested call. ``arguments`` may be a raw (even invalid) JSON string; kwargs build a dict."""
    args: dict[str, Any] | str = arguments if arguments is not None else dict(kwargs)
    return {"id": call_id or f"call_{next(_ids):04d}", "name": name, "arguments": args}


def reply(*calls: dict[str, Any], content: str | None = None, usage: dict[str, int] | None = None) -> Reply:
    """An assistant message: optional text plus zero or more tool calls."""
    out: Reply = {"content": content, "tool_calls": list(calls)}
    if usage is not None:
        out["usage"] = usage
    return out


def text(content: str, usage: dict[str, int] | None = None) -> Reply:
    return reply(content=content, usage=usage)


def _arguments_json(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args, separators=(",", ":"))


def _usage(body: dict[str, Any], rep: Reply) -> dict[str, int]:
    given = rep.get("usage") or {}
    # deterministic stand-in for token counts: ~4 chars a token over the request / reply text
    prompt = given.get("prompt_tokens", max(1, len(json.dumps(body.get("messages", []))) // 4))
    completion = given.get("completion_tokens",
                           max(1, len(json.dumps([rep.get("content"), rep.get("tool_calls")])) // 4))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class FakeOpenAI:
    """Scripted server. ``script`` is a sequence of replies (served in order) or a callable."""

    def __init__(self, script: Iterable[Reply] | Script = (), *, model: str | None = None,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self._fn: Script | None = script if callable(script) else None
        self._queue: deque[Reply] = deque([] if callable(script) else list(script))
        self.model = model  # None: echo the requested model
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None
        self._created = 1_767_225_600  # fixed timestamp: reproducible files

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeOpenAI:
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        return len(self._queue)

    # -- answering -------------------------------------------------------------------------------
    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self._fn is not None:
                return self._fn(body)
            if not self._queue:
                raise LookupError("fake OpenAI server: script exhausted")
            return self._queue.popleft()

    def completion(self, body: dict[str, Any], rep: Reply, n: int) -> dict[str, Any]:
        calls = rep.get("tool_calls") or []
        message: dict[str, Any] = {"role": "assistant", "content": rep.get("content"), "refusal": None}
        if calls:
            message["tool_calls"] = [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": _arguments_json(c["arguments"])}}
                for c in calls
            ]
        finish = rep.get("finish_reason") or ("tool_calls" if calls else "stop")
        return {
            "id": f"chatcmpl-fake{n:04d}", "object": "chat.completion", "created": self._created,
            "model": self.model or body.get("model", "fake-model"), "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": _usage(body, rep),
        }

    def chunks(self, body: dict[str, Any], rep: Reply, n: int) -> list[dict[str, Any]]:
        """The streamed form: role chunk, content pieces, one chunk per tool-call fragment, finish."""
        base = {"id": f"chatcmpl-fake{n:04d}", "object": "chat.completion.chunk", "created": self._created,
                "model": self.model or body.get("model", "fake-model"), "system_fingerprint": "fp_fake"}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        out = [chunk({"role": "assistant", "content": "" if rep.get("content") is not None else None})]
        content = rep.get("content") or ""
        for i in range(0, len(content), 16):
            out.append(chunk({"content": content[i:i + 16]}))
        for idx, c in enumerate(rep.get("tool_calls") or []):
            args = _arguments_json(c["arguments"])
            out.append(chunk({"tool_calls": [{"index": idx, "id": c["id"], "type": "function",
                                              "function": {"name": c["name"], "arguments": ""}}]}))
            for i in range(0, len(args), 12):
                out.append(chunk({"tool_calls": [{"index": idx, "function": {"arguments": args[i:i + 12]}}]}))
        finish = rep.get("finish_reason") or ("tool_calls" if rep.get("tool_calls") else "stop")
        out.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            out.append({**base, "choices": [], "usage": _usage(body, rep)})
        return out

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self
        counter = itertools.count(1)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep generator output quiet
                pass

            def _send_json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send_json(200, {"object": "list", "data": [
                        {"id": fake.model or "fake-model", "object": "model", "created": fake._created,
                         "owned_by": "fake"}]})
                else:
                    self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                    return
                body = json.loads(raw or b"{}")
                try:
                    rep = fake._next_reply(body)
                except LookupError as exc:
                    self._send_json(500, {"error": {"message": str(exc), "type": "server_error"}})
                    return
                n = next(counter)
                if not body.get("stream"):
                    self._send_json(200, fake.completion(body, rep, n))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for ch in fake.chunks(body, rep, n):
                    self.wfile.write(f"data: {json.dumps(ch)}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(0.001)  # distinct chunk times, as a real stream has
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        return Handler


# ---- a plain, hand-written Chat Completions tool loop (no agent framework, no agent span) ----------
# Shared by the generators that record an instrumented `openai` client on its own, so every
# instrumentation sees exactly the same conversation.

PLAIN_SYSTEM = "You answer weather questions. Use the tools."
PLAIN_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Local time in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
]
_WEATHER = {"Paris": "sunny, 21 C", "London": "rain, 14 C", "Tokyo": "cloudy, 18 C"}
_TIMES = {"Paris": "14:05", "London": "13:05", "Tokyo": "21:05"}
PLAIN_IMPLS: dict[str, Callable[..., str]] = {
    "get_weather": lambda city: _WEATHER[city],
    "get_time": lambda city: _TIMES[city],
}


class PlainScenario:
    """One conversation: the model's scripted replies, and the calls/answer the script therefore knows."""

    def __init__(self, name: str, query: str, replies: list[Reply], final: str, *, stream: bool = False,
                 notes: str = "") -> None:
        self.name, self.query, self.replies, self.final = name, query, replies, final
        self.stream, self.notes = stream, notes

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [c for r in self.replies for c in (r.get("tool_calls") or [])]


def plain_scenarios() -> list[PlainScenario]:
    return [
        PlainScenario("single_tool", "What is the weather in Paris?",
                      [reply(tool_call("get_weather", city="Paris", call_id="call_s1")),
                       text("It is sunny and 21 C in Paris.")], "It is sunny and 21 C in Paris."),
        PlainScenario("multi_step", "Weather and local time in Tokyo?",
                      [reply(tool_call("get_weather", city="Tokyo", call_id="call_m1")),
                       reply(tool_call("get_time", city="Tokyo", call_id="call_m2")),
                       text("Tokyo: cloudy, 18 C, local time 21:05.")], "Tokyo: cloudy, 18 C, local time 21:05."),
        PlainScenario("parallel_calls", "Weather in Paris and the time in London?",
                      [reply(tool_call("get_weather", city="Paris", call_id="call_p1"),
                             tool_call("get_time", city="London", call_id="call_p2")),
                       text("Paris is sunny (21 C); it is 13:05 in London.")],
                      "Paris is sunny (21 C); it is 13:05 in London.",
                      notes="Both calls are requested in ONE model response (two tool_calls)."),
        PlainScenario("no_tool", "Say hello.", [text("Hello! Ask me about the weather.")],
                      "Hello! Ask me about the weather."),
        PlainScenario("streaming_parallel_calls", "Weather in London and the time in Paris?",
                      [reply(tool_call("get_weather", city="London", call_id="call_q1"),
                             tool_call("get_time", city="Paris", call_id="call_q2")),
                       text("London: rain, 14 C; it is 14:05 in Paris.")],
                      "London: rain, 14 C; it is 14:05 in Paris.", stream=True,
                      notes="stream=True with stream_options.include_usage: the tool calls arrive as "
                            "fragments over several chunks and are reassembled by the instrumentation."),
    ]


def _complete_streamed(client: Any, **kwargs: Any) -> tuple[str | None, list[dict[str, Any]]]:
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs):
        for choice in chunk.choices:
            if choice.delta.content:
                content.append(choice.delta.content)
            for tc in choice.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                if tc.id:
                    slot["id"] = tc.id
                if tc.function and tc.function.name:
                    slot["name"] += tc.function.name
                if tc.function and tc.function.arguments:
                    slot["arguments"] += tc.function.arguments
    return ("".join(content) or None), [calls[i] for i in sorted(calls)]


def run_plain_loop(client: Any, scenario: PlainScenario, model: str = "gpt-4o-mini",
                   impls: dict[str, Callable[..., str]] | None = None) -> str | None:
    """The classic loop: call the model, run each requested tool, send the results back, repeat.

    ``impls`` replaces the tool functions (e.g. with decorated ones that make tool spans)."""
    impls = impls or PLAIN_IMPLS
    messages: list[dict[str, Any]] = [{"role": "system", "content": PLAIN_SYSTEM},
                                      {"role": "user", "content": scenario.query}]
    for _ in range(8):
        kwargs = {"model": model, "messages": messages, "tools": PLAIN_TOOLS}
        if scenario.stream:
            content, calls = _complete_streamed(client, **kwargs)
        else:
            msg = client.chat.completions.create(**kwargs).choices[0].message
            content = msg.content
            calls = [{"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
                     for tc in msg.tool_calls or []]
        if not calls:
            return content
        messages.append({"role": "assistant", "content": content, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls]})
        for c in calls:
            result = impls[c["name"]](**json.loads(c["arguments"]))
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
    raise RuntimeError("tool loop did not finish")


def plain_truth(scenario: PlainScenario, *, framework: str, instrumentation: str, versions: dict[str, str],
                content_capture: bool, tools_recorded: bool = True, calls_recorded: bool = True,
                notes: str = "") -> dict[str, Any]:
    """Ground truth from the script (never from the trace). No agent span exists: agent_name is null.

    ``tools_recorded`` / ``calls_recorded`` say whether this instrumentation mode records the request's
    tool definitions / the tool calls at all; when it does not, the lists are empty on purpose, because
    an extractor must report nothing rather than guess (the notes say so).
    """
    return {
        "framework": framework,
        "instrumentation": instrumentation,
        "versions": versions,
        "content_capture": content_capture,
        "scenario": scenario.name,
        "runs": [{
            "agent_name": None,
            "user_query": scenario.query if content_capture else None,
            "final_output": scenario.final if content_capture else None,
            "parent_agent": None,
            "available_tools": [t["function"]["name"] for t in PLAIN_TOOLS] if tools_recorded else [],
            "tool_calls": [{"name": c["name"], "id": c["id"],
                            "arguments": (c["arguments"] if content_capture else None),
                            "status": "ok", "kind": "tool"} for c in scenario.calls] if calls_recorded else [],
        }],
        "notes": " ".join(n for n in (
            scenario.notes, notes,
            "" if tools_recorded else "The request's tool definitions are not recorded in this mode, so "
                                      "available_tools is empty on purpose (the script offered get_weather, get_time).",
            "" if calls_recorded else "No tool call is recorded in this mode, so tool_calls is empty on purpose "
                                      f"(the script's model requested: {[c['name'] for c in scenario.calls]}).",
        ) if n),
    }
