"""A hostile HTTP peer on 127.0.0.1: endless bodies, gzip bombs, trickled bytes, redirects, echoes.

What a broken or malicious backend (or a proxy in front of one) answers our HTTP clients: the
sinks, the judge's ``openai`` client, the forwarding sender. Real sockets (stdlib
``ThreadingHTTPServer`` in a daemon thread); every request is recorded (path, headers, body, arrival
time). The answer comes from ``behaviour(request)``: one of the dataclasses below.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Endless", "HostileServer", "Plain", "Seen", "Trickle"]

#: An "endless" body stops after this much, so that a client without a cap fails its memory
#: ceiling in a test instead of taking the test machine down.
SAFETY_BYTES = 768 * 1024 * 1024


@dataclass(frozen=True)
class Seen:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # monotonic


@dataclass(frozen=True)
class Plain:
    """An ordinary answer."""

    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})


@dataclass(frozen=True)
class Endless:
    """A 200 with a chunked body that does not end (``gzip``: a gzip stream of zeros, ~1000:1)."""

    status: int = 200
    gzip: bool = False
    content_type: str = "application/json"


@dataclass(frozen=True)
class Trickle:
    """``body`` one byte every ``every_s`` seconds; ``headers_too``: the status line and headers as well."""

    body: bytes = b'{"data": []}' + b" " * 4096
    every_s: float = 1.0
    headers_too: bool = False
    status: int = 200


Behaviour = Plain | Endless | Trickle


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # a client hanging up mid-answer is what the tests make them do


class HostileServer:
    """Answers every request as ``behaviour(seen)`` says; a context manager."""

    def __init__(self, behaviour: Callable[[Seen], Behaviour] | None = None) -> None:
        self.behaviour: Callable[[Seen], Behaviour] = behaviour or (lambda seen: Plain())
        self.seen: list[Seen] = []
        self.sent_bytes = 0  # body bytes written by Endless answers
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def handle_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length > 0 else b""
                seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic())
                with outer._lock:
                    outer.seen.append(seen)
                answer = outer.behaviour(seen)
                try:
                    if isinstance(answer, Endless):
                        outer._endless(self, answer)
                    elif isinstance(answer, Trickle):
                        outer._trickle(self, answer)
                    else:
                        self.send_response(answer.status)
                        for k, v in answer.headers.items():
                            self.send_header(k, v)
                        self.send_header("Content-Length", str(len(answer.body)))
                        self.end_headers()
                        self.wfile.write(answer.body)
                except OSError:
                    self.close_connection = True  # the client hung up: what a refusing client does

            do_POST = do_GET = do_PUT = handle_one

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="hostile-http", daemon=True)

    # -- answers ------------------------------------------------------------------------------------
    def _endless(self, h: BaseHTTPRequestHandler, answer: Endless) -> None:
        h.send_response(answer.status)
        h.send_header("Content-Type", answer.content_type)
        h.send_header("Transfer-Encoding", "chunked")
        if answer.gzip:
            h.send_header("Content-Encoding", "gzip")
        h.end_headers()
        h.close_connection = True
        packer = zlib.compressobj(6, zlib.DEFLATED, 31) if answer.gzip else None
        zeros = b"\0" * (1 << 20)
        filler = b'{"data": "' + b"x" * (64 * 1024 - 10)
        sent = 0
        while sent < SAFETY_BYTES and not self._stopping.is_set():
            chunk = packer.compress(zeros) + packer.flush(zlib.Z_SYNC_FLUSH) if packer is not None else filler
            h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk) if packer is None else len(zeros)
            with self._lock:
                self.sent_bytes += len(chunk)

    def _trickle(self, h: BaseHTTPRequestHandler, answer: Trickle) -> None:
        head = (f"HTTP/1.1 {answer.status} OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(answer.body)}\r\n\r\n").encode()
        h.close_connection = True
        if not answer.headers_too:
            h.wfile.write(head)
            head = b""
        for i in range(len(head) + len(answer.body)):
            byte = head[i : i + 1] if i < len(head) else answer.body[i - len(head) : i - len(head) + 1]
            h.wfile.write(byte)
            h.wfile.flush()
            if self._stopping.wait(answer.every_s):
                return

    # -- the server ---------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self, path: str | None = None) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if path is None or s.path.split("?")[0] == path]

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
