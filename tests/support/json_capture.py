"""A JSON HTTP capture server on 127.0.0.1: records every request, answers as scripted.

Stands in for a backend's REST API (Langfuse's scores API, Phoenix's annotations API) where a test
needs to see the exact payload a real client sent, or to script failures (503, 429, slow answers).
Real HTTP (stdlib ``ThreadingHTTPServer`` in a daemon thread), so the client's own encoding,
headers, timeouts and retries are the real ones. Use it as a context manager.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Answer", "JsonCaptureServer", "Received"]


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: Any = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class JsonCaptureServer:
    """Records requests (``.requests``); answers from ``enqueue``d answers, then ``default(request)``."""

    def __init__(self, default: Callable[[Received], Answer] | None = None) -> None:
        self.requests: list[Received] = []
        self.default = default or (lambda request: Answer())
        self._answers: deque[Answer] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    parsed = json.loads(raw) if raw else None
                except ValueError:
                    parsed = None
                received = Received(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, raw, parsed)
                with outer._lock:
                    outer.requests.append(received)
                    answer = outer._answers.popleft() if outer._answers else None
                if answer is None:
                    answer = outer.default(received)
                if answer.delay_s:
                    outer._closing.wait(answer.delay_s)
                payload = json.dumps(answer.body).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in answer.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            do_POST = do_GET = do_PUT = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="json-capture", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def enqueue(self, *answers: Answer) -> None:
        with self._lock:
            self._answers.extend(answers)

    def posted(self, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.path.split("?")[0] == path]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 15.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.02)
        return predicate()

    def __enter__(self) -> JsonCaptureServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
