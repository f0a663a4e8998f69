"""A local OpenAI-compatible Chat Completions server for tests, examples and benchmarks.

Real HTTP on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in a daemon thread), so the ``openai``
client is exercised end to end: its retries, timeouts and response parsing are the real ones.

What a test can script:
* replies in a FIFO queue (``server.enqueue(...)``), each a :class:`Reply` or a callable
  ``(RecordedRequest) -> Reply``; when the queue is empty the ``handler`` answers (settable);
* faults: any status with any headers (``error``, ``rate_limited``), a body that is not JSON
  (``garbage``), a response trickled one byte at a time (``Reply.trickle``), a completion whose content is not valid for the caller (``chat_completion`` with
  any text), a delay (``Reply.delay`` or ``server.delay`` for every reply), a 400 rejecting
  ``response_format`` (``RejectResponseFormat``);
* every request is recorded (``server.requests``) with its parsed JSON body, so tests can assert
  what reached the endpoint (prompt text, ``response_format``, redaction);
* completions carry ``usage`` (given, or estimated as characters / 4).

Thread-safe; ``stop()`` wakes delayed handlers so shutdown is prompt. Use it as a context manager
or through the ``openai_server`` pytest fixture (``tests/support/fixtures.py``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Handler",
    "OpenAITestServer",
    "RecordedRequest",
    "RejectResponseFormat",
    "Reply",
    "chat_completion",
    "echo_judge",
    "error",
    "garbage",
    "judge_answer",
    "rate_limited",
]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any
    received_at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.json.get("messages") if isinstance(self.json, dict) else None
        return list(msgs) if isinstance(msgs, list) else []

    @property
    def prompt_text(self) -> str:
        """All message contents joined, for substring assertions."""
        return "\n".join(str(m.get("content") or "") for m in self.messages)

    @property
    def model(self) -> str | None:
        return self.json.get("model") if isinstance(self.json, dict) else None

    @property
    def response_format(self) -> Any:
        return self.json.get("response_format") if isinstance(self.json, dict) else None


@dataclass
class Reply:
    """An HTTP reply: ``body`` is JSON-encoded unless it is ``bytes`` or ``str``."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    #: seconds between bytes: the whole response (status line and headers too, unless
    #: ``trickle_body_only``) leaves one byte at a time, each well within any per-read timeout
    trickle: float = 0.0
    trickle_body_only: bool = False

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, bytes):
            return self.body, self.headers.get("Content-Type", "application/octet-stream")
        if isinstance(self.body, str):
            return self.body.encode(), self.headers.get("Content-Type", "text/plain; charset=utf-8")
        return json.dumps(self.body).encode(), "application/json"


Handler = Callable[[RecordedRequest], Reply]
Scripted = Reply | Handler

_ids = itertools.count(1)


def chat_completion(
    content: str | None,
    *,
    model: str = "test-judge",
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    request: RecordedRequest | None = None,
    finish_reason: str = "stop",
    refusal: str | None = None,
    delay: float = 0.0,
) -> Reply:
    """A successful chat completion with ``content`` as the assistant message and a ``usage`` block.

    Token counts default to characters / 4 of the request's prompt (when given) and of the content.
    """
    if prompt_tokens is None:
        prompt_tokens = max(1, len(request.prompt_text) // 4) if request is not None else 10
    if completion_tokens is None:
        completion_tokens = max(1, len(content or "") // 4)
    body = {
        "id": f"chatcmpl-test-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return Reply(200, body, delay=delay)


def judge_answer(
    evaluations: Iterable[tuple[str, bool] | Mapping[str, Any]] = (),
    missing_tools: Iterable[str] = (),
    reason: str = "scripted verdict",
    **kwargs: Any,
) -> Reply:
    """A completion whose content is a judge answer; evaluations as ``(tool, appropriate)`` pairs or dicts."""
    evals = [
        dict(e) if isinstance(e, Mapping) else {"tool_called": e[0], "was_appropriate": e[1], "reasoning": "scripted"}
        for e in evaluations
    ]
    answer = {"evaluations": evals, "missing_tools": list(missing_tools), "reason": reason}
    return chat_completion(json.dumps(answer), **kwargs)


def error(status: int = 500, message: str = "internal error", *, headers: Mapping[str, str] | None = None,
          error_type: str = "server_error", param: str | None = None) -> Reply:
    """An OpenAI-style error body with the given status."""
    body = {"error": {"message": message, "type": error_type, "param": param, "code": None}}
    return Reply(status, body, dict(headers or {}))


def rate_limited(retry_after: float | str = 0, message: str = "rate limit reached") -> Reply:
    """A 429 with ``Retry-After`` (seconds)."""
    return error(429, message, headers={"Retry-After": str(retry_after)}, error_type="rate_limit_error")


def garbage(text: str = "<html>upstream proxy error</html>", status: int = 200) -> Reply:
    """A body that is not JSON at all (with a JSON content type, as broken proxies do)."""
    return Reply(status, text.encode(), {"Content-Type": "application/json"})


class RejectResponseFormat:
    """A handler that answers 400 to any request carrying ``response_format`` and delegates the rest.

    ``message`` is what llama.cpp-like servers say; ``rejected`` counts the refusals.
    """

    def __init__(self, then: Handler, message: str = "'response_format' of type 'json_schema' is not supported") -> None:
        self.then = then
        self.message = message
        self.rejected = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        if request.response_format is not None:
            with self._lock:
                self.rejected += 1
            return error(400, self.message, error_type="invalid_request_error", param="response_format")
        return self.then(request)


_CALL_LINE = re.compile(r"^(\d+)\. (.+?)(?: \(failed\))?$")


def echo_judge(appropriate: bool | Callable[[str], bool] = True, missing_tools: Iterable[str] = (),
               reason: str = "echo verdict", delay: float = 0.0) -> Handler:
    """A handler that reads the numbered calls of the judge prompt's ``<tools_called>`` block and
    answers one evaluation per call (``appropriate`` may be a predicate on the tool name).

    Handy for load tests and online-judge tests where the runs vary and a queue is impractical.
    """
    missing = list(missing_tools)

    def handle(request: RecordedRequest) -> Reply:
        text = request.messages[-1].get("content", "") if request.messages else ""
        block = text.split("<tools_called", 1)[-1].split("</tools_called>", 1)[0]
        names = [m.group(2) for line in block.splitlines() if (m := _CALL_LINE.match(line))]
        verdict = appropriate if callable(appropriate) else (lambda _n: bool(appropriate))
        return judge_answer([(n, verdict(n)) for n in names], missing, reason, request=request, delay=delay)

    return handle


def _no_script(request: RecordedRequest) -> Reply:
    return error(500, f"test server: nothing scripted for {request.method} {request.path}")


class OpenAITestServer:
    """The server. ``base_url`` ends in ``/v1`` like OpenAI's; any path under it is accepted."""

    def __init__(self, handler: Handler | None = None, *, delay: float = 0.0, host: str = "127.0.0.1") -> None:
        if host not in ("127.0.0.1", "localhost"):
            raise ValueError("the test server only binds to the loopback interface")
        self.handler: Handler = handler or _no_script
        self.delay = delay
        self._host = host
        self._queue: deque[Scripted] = deque()
        self._requests: list[RecordedRequest] = []
        self._status_counts: Counter[int] = Counter()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()  # open client connections, closed on stop()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> OpenAITestServer:
        if self._httpd is not None:
            return self
        server = self

        class _RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body leave in separate writes: with Nagle on, the body waits for the
            # client's delayed ACK (~40 ms per request on Linux), which would dominate latency tests.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self) -> None:
                with server._lock:
                    server._connections.discard(self.connection)
                super().finish()

            def do_GET(self) -> None:
                server._serve(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                server._serve(self, self.rfile.read(length) if length else b"")

        self._stopping.clear()
        httpd = ThreadingHTTPServer((self._host, 0), _RequestHandler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="openai-test-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wake delayed handlers
        httpd.shutdown()
        httpd.server_close()
        # Keep-alive connections would otherwise outlive the server in their handler threads.
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAITestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------------------
    def enqueue(self, *replies: Scripted) -> None:
        """Queue replies for the next requests, in order (each used once)."""
        with self._lock:
            self._queue.extend(replies)

    def set_handler(self, handler: Handler) -> None:
        """The answer once the queue is empty (default: a 500 saying nothing was scripted)."""
        self.handler = handler

    def reset(self) -> None:
        """Drop queued replies, recorded requests and counters."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._status_counts.clear()

    # -- observations ------------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def status_counts(self) -> dict[int, int]:
        with self._lock:
            return dict(self._status_counts)

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._queue)

    # -- serving -----------------------------------------------------------------------------------
    def _serve(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        try:
            parsed: Any = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = RecordedRequest(
            method=h.command,
            path=h.path,
            headers={k.lower(): v for k, v in h.headers.items()},
            body=body,
            json=parsed,
            received_at=time.time(),
        )
        with self._lock:
            self._requests.append(request)
            scripted: Scripted = self._queue.popleft() if self._queue else self.handler
        if h.command == "GET" and h.path.rstrip("/").endswith("/models") and scripted is _no_script:
            reply = Reply(200, {"object": "list", "data": [{"id": "test-judge", "object": "model", "owned_by": "test"}]})
        else:
            try:
                reply = scripted if isinstance(scripted, Reply) else scripted(request)
            except Exception as exc:  # a broken handler is a 500, not a hung client
                reply = error(500, f"test server handler raised {type(exc).__name__}: {exc}")
        wait = reply.delay + self.delay
        if wait > 0 and self._stopping.wait(wait):
            h.close_connection = True  # shutting down: drop the connection unanswered
            return
        with self._lock:
            self._status_counts[reply.status] += 1
        payload, content_type = reply.encoded()
        if reply.trickle > 0:
            self._trickle(h, reply, payload, content_type)
            return
        try:
            h.send_response(reply.status)
            h.send_header("Content-Type", content_type)
            h.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers.items():
                if name.lower() not in ("content-type", "content-length"):
                    h.send_header(name, value)
            h.end_headers()
            h.wfile.write(payload)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before the reply

    def _trickle(self, h: BaseHTTPRequestHandler, reply: Reply, payload: bytes, content_type: str) -> None:
        head = [f"HTTP/1.1 {reply.status} OK", f"Content-Type: {content_type}", f"Content-Length: {len(payload)}",
                "Connection: close", *(f"{k}: {v}" for k, v in reply.headers.items())]
        header_bytes = ("\r\n".join(head) + "\r\n\r\n").encode()
        h.close_connection = True
        try:
            if reply.trickle_body_only:
                h.wfile.write(header_bytes)
                h.wfile.flush()
                rest = payload
            else:
                rest = header_bytes + payload
            for i in range(len(rest)):
                h.wfile.write(rest[i : i + 1])
                h.wfile.flush()
                if self._stopping.wait(reply.trickle):
                    return
        except OSError:
            pass  # the client gave up
