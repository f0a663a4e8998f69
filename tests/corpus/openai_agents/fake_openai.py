"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1, for recording corpus traces.

Each POST /v1/chat/completions or /v1/responses pops the next scripted reply and answers it in
that API's shape. A reply is either
``{"content": "text"}`` or ``{"tool_calls": [("tool_name", {"arg": 1}), ...]}``; tool-call ids are
``call_<n>`` numbered in order, so the generator knows them without reading the trace.
Requests are kept in ``server.requests`` so a generator can assert the script was fully consumed.
Nothing here talks to any other host.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any]


class FakeOpenAI:
    def __init__(self, model: str = "fake-gpt") -> None:
        self.model = model
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._counter = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def script(self, replies: Iterable[Reply]) -> None:
        with self._lock:
            if self.replies:
                raise RuntimeError(f"previous script not consumed: {self.replies}")
            self.replies = list(replies)

    def next_call_id(self) -> str:
        self._counter += 1
        return f"call_{self._counter}"

    def _completion(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        finish = "stop"
        if reply.get("tool_calls"):
            finish = "tool_calls"
            message["tool_calls"] = [
                {
                    "id": self.next_call_id(),
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for name, args in reply["tool_calls"]
            ]
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 1767225600,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
        }

    def _response(self, reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
        """The same reply as a Responses API object (the Agents SDK's default model API).

        Like the real API it echoes the request's instructions, tools and tool settings."""
        n = len(self.requests)
        output: list[dict[str, Any]] = []
        for i, (name, args) in enumerate(reply.get("tool_calls") or []):
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{n}_{i}",
                    "call_id": self.next_call_id(),
                    "name": name,
                    "arguments": json.dumps(args),
                    "status": "completed",
                }
            )
        if reply.get("content") is not None:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply["content"], "annotations": []}],
                }
            )
        return {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 1767225600,
            "model": self.model,
            "status": "completed",
            "output": output,
            "parallel_tool_calls": request.get("parallel_tool_calls", True),
            "tool_choice": request.get("tool_choice", "auto"),
            "tools": request.get("tools", []),
            "error": None,
            "incomplete_details": None,
            "instructions": request.get("instructions"),
            "metadata": {},
            "temperature": None,
            "top_p": None,
            "usage": {
                "input_tokens": 20,
                "output_tokens": 10,
                "total_tokens": 30,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep recordings' stdout quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    fake.requests.append(body)
                    if not fake.replies:
                        payload = {"error": {"message": "script exhausted", "type": "fake"}}
                        status = 500
                    else:
                        reply = fake.replies.pop(0)
                        if self.path.rstrip("/").endswith("/responses"):
                            payload = fake._response(reply, body)
                        else:
                            payload = fake._completion(reply)
                        status = 200
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
