"""The OTLP/HTTP receiver's connection layer: asyncio + h11, with every bound a hostile client meets.

The stdlib ``http.server`` makes a thread per connection and reads with no deadline, so idle or
trickling clients held threads and request slots without limit. Here one event-loop thread holds
every connection (an idle connection costs a socket and a coroutine, not a thread); h11 parses
HTTP/1.1 (it refuses a negative or non-numeric ``Content-Length`` before any body is read); and
this module adds the limits:

- at most ``http_max_connections`` open connections; past it a new connection is answered 503 with
  ``Retry-After`` and closed at once (a real listen backlog, :data:`LISTEN_BACKLOG`, holds bursts);
- a request (headers and body) must arrive within ``http_read_timeout_ms`` of its first byte (else
  503 + ``Retry-After``: OTLP senders retry that, and keep the data), a fresh connection must send
  its first request within it (else 408), and a kept-alive connection may idle
  ``http_idle_timeout_ms`` between requests: slow or silent clients are cut off, never waited for;
- a body longer than ``max_request_bytes`` is refused (413) from its ``Content-Length``, or as
  soon as a chunked body passes it, without reading the rest; a POST without a length is 411;
- bodies being received hold memory only as their bytes arrive, at most :func:`inflight_budget`
  bytes across all connections (past it: 429, retryable);
- a body is decoded only once it has fully arrived, by a small worker pool: a slow client never
  holds a worker a fast client needs.

What the request means is not this module's business: it hands the received body to a
``handle(path, content_type, content_encoding, body)`` callable (run on the worker pool) and sends
the answer back.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import socket
import threading
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field

import h11

__all__ = ["LISTEN_BACKLOG", "Answer", "HttpLimits", "HttpServer", "inflight_budget"]

_log = logging.getLogger(__name__)

#: ``listen()`` backlog (the kernel caps it at ``net.core.somaxconn``): a burst of connects waits
#: in the kernel's queue instead of being reset.
LISTEN_BACKLOG = 4096
_CHUNK = 65_536
_MAX_HEADER_BYTES = 64 * 1024
#: File descriptors kept for everything but OTLP/HTTP connections (gRPC, exporters, files).
_FD_RESERVE = 256
#: Worker threads decoding received bodies (decoding is CPU-bound: more threads would only queue on the GIL).
DECODE_WORKERS = 4


def inflight_budget(max_request_bytes: int) -> int:
    """Bytes of request bodies held at once across connections (being received or decoded)."""
    return 4 * max_request_bytes


@dataclass(frozen=True, slots=True)
class HttpLimits:
    max_request_bytes: int
    read_timeout_s: float
    idle_timeout_s: float
    max_connections: int
    retry_after: str  # the Retry-After header: whole seconds


@dataclass(slots=True)
class Answer:
    status: int
    body: bytes
    content_type: str = "text/plain"
    headers: dict[str, str] = field(default_factory=dict)
    close: bool = False


#: ``handle(method, path, headers, body) -> Answer``; GETs come with an empty body and run on the loop.
Handler = Callable[[str, str, dict[str, str], bytes], Answer]
#: Called with what happened, for the counters: ``(event, path_or_None)``; events are
#: connection_limit, read_timeout, idle_timeout, protocol_error, too_large, length_required, overload.
Observer = Callable[[str, "str | None"], None]
#: Before reading a POST body: an :class:`Answer` refuses it unread (unknown path, bad content type).
Precheck = Callable[[str, dict[str, str]], "Answer | None"]


class _Timeout(Exception):
    pass


class HttpServer:
    """A listening socket served by one event-loop thread; see the module docstring."""

    def __init__(
        self,
        host: str,
        port: int,
        limits: HttpLimits,
        *,
        handle: Handler,
        precheck: Precheck,
        observe: Observer,
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # create_server sets SO_REUSEADDR (restart while old connections linger) and never SO_REUSEPORT.
        self._sock = socket.create_server((host.strip("[]"), port), family=family, backlog=LISTEN_BACKLOG)
        self._sock.setblocking(False)
        self.port: int = self._sock.getsockname()[1]
        self.limits = limits = _within_file_limit(limits)
        self._handle = handle
        self._precheck = precheck
        self._observe = observe
        self._budget = inflight_budget(limits.max_request_bytes)
        self.inflight_bytes = 0
        self.connections = 0
        self._workers = futures.ThreadPoolExecutor(DECODE_WORKERS, thread_name_prefix="otel-toolscore-http-decode")
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._thread = threading.Thread(target=self._run, name="otel-toolscore-http", daemon=True)

    @property
    def saturated(self) -> bool:
        """New connections would be refused, or new bodies would not fit."""
        return self.connections >= self.limits.max_connections or self.inflight_bytes >= self._budget

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()
        if not self._started.wait(10):
            raise OSError("OTLP/HTTP receiver did not start")

    def stop(self, grace: float = 1.0) -> None:
        if self._thread.is_alive() and self._stopped is not None:
            stopped = self._stopped
            self._loop.call_soon_threadsafe(stopped.set)
            self._thread.join(grace + 2)
        self._workers.shutdown(wait=False, cancel_futures=True)
        with contextlib.suppress(OSError):
            self._sock.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    async def _main(self) -> None:
        self._stopped = asyncio.Event()
        server = await asyncio.start_server(self._accepted, sock=self._sock, backlog=LISTEN_BACKLOG, limit=_CHUNK)
        self._started.set()
        await self._stopped.wait()
        server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=1)

    # -- connections ------------------------------------------------------------------------------
    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            if self.connections >= self.limits.max_connections:
                self._observe("connection_limit", None)
                await self._write(writer, _raw(503, b"too many connections; retry later\n", "text/plain",
                                               {"Retry-After": self.limits.retry_after}))
                return
            self.connections += 1
            try:
                await self._serve(reader, writer)
            finally:
                self.connections -= 1
        except (ConnectionError, asyncio.CancelledError, OSError):
            pass
        except Exception:
            _log.debug("otlp/http connection failed", exc_info=True)
        finally:
            with contextlib.suppress(Exception):
                writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEADER_BYTES)
        loop = asyncio.get_running_loop()
        first = True
        while True:
            wait = self.limits.read_timeout_s if first else self.limits.idle_timeout_s
            try:
                event = await self._next(conn, reader, loop.time() + wait, first_byte=True)
            except _Timeout:
                self._observe("read_timeout" if first else "idle_timeout", None)
                if first:
                    await self._write(writer, _raw(408, b"request timeout\n", "text/plain"))
                return
            except h11.RemoteProtocolError as exc:
                self._observe("protocol_error", None)
                await self._write(writer, _raw(exc.error_status_hint, f"bad request: {exc}\n".encode(), "text/plain"))
                return
            first = False
            if isinstance(event, h11.ConnectionClosed):
                return
            if not isinstance(event, h11.Request):
                return
            answer = await self._request(conn, reader, writer, event, loop.time() + self.limits.read_timeout_s)
            if answer is None:
                return
            await self._write(writer, _answer_bytes(conn, answer))
            if answer.close or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()

    async def _request(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, req: h11.Request, deadline: float
    ) -> Answer | None:
        method = req.method.decode("ascii", "replace").upper()
        target = req.target.decode("ascii", "replace")
        path = target.split("?", 1)[0]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in req.headers}
        if method in ("GET", "HEAD"):
            answer = self._handle(method, path, headers, b"")
            if conn.their_state is not h11.DONE:
                answer.close = True  # a GET with a body: not read, so the connection cannot be reused
            if method == "HEAD":
                answer = Answer(answer.status, b"", answer.content_type, {**answer.headers, "Content-Length": str(len(answer.body))}, answer.close)
            return answer
        if method != "POST":
            return Answer(405, b"method not allowed\n", headers={"Allow": "GET, HEAD, POST"}, close=True)
        refusal = self._precheck(path, headers)
        if refusal is not None:
            refusal.close = refusal.close or conn.their_state is not h11.DONE
            return refusal
        length_text = headers.get("content-length")
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if length_text is None and not chunked:
            self._observe("length_required", path)
            return Answer(411, b"Content-Length required\n", close=True)
        limit = self.limits.max_request_bytes
        # h11 checked it is a non-negative integer; more than 18 digits is over any limit (and int() refuses
        # strings of thousands of digits).
        length = (int(length_text) if len(length_text) <= 18 else limit + 1) if length_text is not None else 0
        if length > limit:
            self._observe("too_large", path)
            shown = length_text if length_text is not None and len(length_text) <= 18 else "more than 10^18"
            return Answer(413, f"request body of {shown} bytes is over the limit of {limit}\n".encode(), close=True)
        if conn.they_are_waiting_for_100_continue:
            await self._write(writer, conn.send(h11.InformationalResponse(status_code=100, headers=[])))
        parts: list[bytes] = []
        held = 0
        try:
            while True:
                try:
                    event = await self._next(conn, reader, deadline)
                except _Timeout:
                    # 503 + Retry-After rather than 408: OTLP senders retry only 429/502/503/504, and a
                    # slow but honest sender should keep its data.
                    self._observe("read_timeout", path)
                    text = f"request body not received within {self.limits.read_timeout_s:g} s; retry later\n"
                    return Answer(503, text.encode(), headers={"Retry-After": self.limits.retry_after}, close=True)
                except h11.RemoteProtocolError as exc:
                    self._observe("protocol_error", path)
                    return Answer(400, f"bad request: {exc}\n".encode(), close=True)
                if isinstance(event, h11.Data):
                    size = len(event.data)
                    if held + size > limit:
                        self._observe("too_large", path)
                        return Answer(413, f"request body over the limit of {limit} bytes\n".encode(), close=True)
                    if self.inflight_bytes + size > self._budget:
                        self._observe("overload", path)
                        return Answer(429, b"too many request bodies in flight; retry later\n",
                                      headers={"Retry-After": self.limits.retry_after}, close=True)
                    self.inflight_bytes += size
                    held += size
                    parts.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:  # ConnectionClosed mid-body
                    return None
            body = b"".join(parts)
            parts.clear()
            loop = asyncio.get_running_loop()
            try:
                return await loop.run_in_executor(self._workers, self._handle, method, path, headers, body)
            except Exception:
                _log.exception("otel-toolscore serve: handling %s %s failed", method, path)
                return Answer(500, b"internal error (logged by the service)\n", close=True)
        finally:
            self.inflight_bytes -= held

    async def _next(self, conn: h11.Connection, reader: asyncio.StreamReader, deadline: float, first_byte: bool = False) -> object:
        loop = asyncio.get_running_loop()
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise _Timeout
            try:
                data = await asyncio.wait_for(reader.read(_CHUNK), remaining)
            except asyncio.TimeoutError:
                raise _Timeout from None
            if first_byte and data:
                # The request's own clock starts at its first byte (the wait before it was the idle time).
                deadline = max(deadline, loop.time() + self.limits.read_timeout_s)
                first_byte = False
            conn.receive_data(data)

    async def _write(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        try:
            await asyncio.wait_for(writer.drain(), self.limits.read_timeout_s)
        except asyncio.TimeoutError:
            self._observe("read_timeout", None)
            writer.transport.abort()


def _within_file_limit(limits: HttpLimits) -> HttpLimits:
    """``limits`` with at most as many connections as the process may open files (less a reserve),
    so the limit answers 503 rather than ``accept()`` failing with EMFILE."""
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return limits
    if soft == resource.RLIM_INFINITY or limits.max_connections <= soft - _FD_RESERVE:
        return limits
    allowed = max(1, soft - _FD_RESERVE)
    _log.warning(
        "otel-toolscore serve: http_max_connections %d is above what the open-file limit (%d) allows; using %d "
        "(raise the limit with `ulimit -n`)", limits.max_connections, soft, allowed,
    )
    return dataclasses.replace(limits, max_connections=allowed)


def _raw(status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> bytes:
    """A complete closing response, for when the connection's state machine cannot send one."""
    reason = {400: "Bad Request", 408: "Request Timeout", 413: "Content Too Large", 431: "Request Header Fields Too Large",
              503: "Service Unavailable"}.get(status, "Error")
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _answer_bytes(conn: h11.Connection, answer: Answer) -> bytes:
    headers = [("Content-Type", answer.content_type)]
    if "Content-Length" not in answer.headers:
        headers.append(("Content-Length", str(len(answer.body))))
    headers += list(answer.headers.items())
    if answer.close:
        headers.append(("Connection", "close"))
    try:
        out = conn.send(h11.Response(status_code=answer.status, headers=headers))
        if answer.body:
            out = (out or b"") + (conn.send(h11.Data(data=answer.body)) or b"")
        return (out or b"") + (conn.send(h11.EndOfMessage()) or b"")
    except h11.LocalProtocolError:
        answer.close = True
        return _raw(answer.status, answer.body, answer.content_type, answer.headers)
