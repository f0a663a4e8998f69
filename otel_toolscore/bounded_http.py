"""Our outbound HTTP clients, bounded: a capped body, one deadline per request, one origin, quiet logs.

Every HTTP client of otel-toolscore (the Phoenix and Langfuse sinks, the LLM judge's ``openai``
client, the service's OTLP/HTTP forwarding sender) talks to a peer that may be slow, broken or
hostile, from inside the application's process. What it reads is bounded here, at the transport:

* **Body size.** A response body is read up to ``max_response_bytes`` (after decoding gzip/deflate,
  whose expansion is bounded chunk by chunk; the compressed bytes are capped too). A larger body,
  or a ``Content-Length`` announcing one, is refused (:class:`ResponseTooLarge`) and counted.
  ``Accept-Encoding`` is set to ``gzip, deflate``: encodings whose expansion cannot be bounded the
  same way are not asked for, and refused when sent anyway.
* **One deadline per request.** Connect, send, headers and every body byte share one deadline
  (``deadline_s``, or the request's own httpx timeout when shorter). httpx's timeouts are per
  socket operation, so a server sending one byte per second never trips them; here the request
  runs as a coroutine on an event loop and is cancelled at its deadline whatever the server does
  (:class:`DeadlineExceeded`, an ``httpx.TimeoutException``).
* **One origin.** A transport is pinned to the origin (scheme, host, port) it was built for. A
  redirect to another origin is never followed (:class:`OriginRefused`) and counted; same-origin
  redirects are left to the client's ``follow_redirects``.
* **Quiet logs.** httpx logs every request at INFO with its full URL (user-info included). Records
  of the ``httpx`` logger emitted while one of our requests runs are dropped by a filter scoped to
  those requests (:func:`quiet_httpx_logs`); the host's own httpx traffic logs as configured.

:class:`BoundedAsyncTransport` is the transport (give it to an ``httpx.AsyncClient``, e.g. the
``http_client`` of ``openai.AsyncOpenAI``); :class:`BoundedTransport` serves synchronous
``httpx.Client`` users by running it on an event loop in a thread of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import os
import threading
import zlib
from collections.abc import Coroutine, Iterator
from typing import Any

import httpx

from ._deadline import Deadline
from .envconfig import ConfigError
from .http_limits import DEFAULT_MAX_RESPONSE_BYTES, check_max_response_bytes, count_http_refusal, origin_of

__all__ = [
    "BoundedAsyncTransport",
    "BoundedTransport",
    "ClientRefusal",
    "DeadlineExceeded",
    "OriginRefused",
    "ResponseTooLarge",
    "bounded_async_client",
    "bounded_client",
    "quiet_httpx_logs",
    "read_capped",
    "read_capped_sync",
    "refusal_in",
]

_ACCEPT_ENCODING = "gzip, deflate"
_DECODED = frozenset({"gzip", "x-gzip", "deflate"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Response headers describing the body as sent; the body handed on is the decoded one.
_BODY_HEADERS = frozenset({b"content-encoding", b"content-length", b"transfer-encoding"})
# After the deadline, how long the calling thread waits for the cancelled request to unwind.
_UNWIND_S = 5.0


# -- refusals -------------------------------------------------------------------------------------------
class ClientRefusal(Exception):
    """A response one of our clients refused to take (not an HTTP error of the peer: not retried)."""

    reason = "refused"


class ResponseTooLarge(ClientRefusal):
    """The response body is over ``max_response_bytes`` (decoded), or its ``Content-Length`` says so."""

    reason = "response_too_large"


class OriginRefused(ClientRefusal):
    """A request to (a redirect towards) another origin than the one the client was built for."""

    reason = "redirect"


class DeadlineExceeded(httpx.TimeoutException):
    """No complete answer within the request's deadline (connect to last byte)."""


# -- logging ----------------------------------------------------------------------------------------------
_QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("otel_toolscore_quiet_http", default=False)
_FILTER_LOCK = threading.Lock()
_FILTERED: set[str] = set()
#: the loggers whose records are dropped while one of our requests runs (httpx logs each request at
#: INFO with its URL; httpcore logs connection details at DEBUG)
_QUIET_LOGGERS = ("httpx", "httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy")


class _OwnRequests(logging.Filter):
    """Drops the records emitted inside one of our requests; every other record passes untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _QUIET.get()


_OWN_REQUESTS = _OwnRequests()


def _install_filter() -> None:
    if len(_FILTERED) == len(_QUIET_LOGGERS):
        return
    with _FILTER_LOCK:
        for name in _QUIET_LOGGERS:
            if name not in _FILTERED:
                logging.getLogger(name).addFilter(_OWN_REQUESTS)
                _FILTERED.add(name)


@contextlib.contextmanager
def quiet_httpx_logs() -> Iterator[None]:
    """Inside the block (this thread or task), httpx's and httpcore's log records are dropped.

    A filter on those loggers, not a level change: the host's own requests, on other threads or
    outside such a block, log exactly as the host configured."""
    _install_filter()
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


# -- reading a body -----------------------------------------------------------------------------------------
class _CappedBody:
    """Collects a body's bytes up to ``limit`` decoded (and ``limit`` as sent)."""

    def __init__(self, limit: int, encoding: str) -> None:
        self.limit = limit
        self.raw = 0
        self.data = bytearray()
        enc = encoding.strip().lower()
        if enc in ("", "identity"):
            self._decoder: Any = None
        elif enc in _DECODED:
            # 32 + MAX_WBITS: a gzip or zlib header, detected (servers send both as "deflate").
            self._decoder = zlib.decompressobj(32 + zlib.MAX_WBITS)
        else:
            raise httpx.DecodingError(f"unsupported Content-Encoding {encoding!r} (asked for {_ACCEPT_ENCODING})")

    def feed(self, chunk: bytes) -> None:
        self.raw += len(chunk)
        if self.raw > self.limit:
            raise ResponseTooLarge(f"response body over the limit of {self.limit} bytes (max_response_bytes)")
        if self._decoder is None:
            self.data += chunk
            return
        room = self.limit - len(self.data)
        try:
            out = self._decoder.decompress(chunk, room + 1)  # never more than one byte past the limit
        except zlib.error as exc:
            raise httpx.DecodingError(f"bad compressed body: {exc}") from None
        if len(out) > room or self._decoder.unconsumed_tail:
            raise ResponseTooLarge(f"decoded response body over the limit of {self.limit} bytes (max_response_bytes)")
        self.data += out


def _announced_too_large(headers: httpx.Headers, limit: int) -> bool:
    declared = headers.get("content-length")
    if declared is None:
        return False
    try:
        return int(declared.strip()) > limit
    except ValueError:
        return False


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """The body of a streamed ``response``, decoded, refusing more than ``limit`` bytes."""
    if _announced_too_large(response.headers, limit):
        raise ResponseTooLarge(f"response announced {response.headers.get('content-length')} bytes, over the limit "
                               f"of {limit} (max_response_bytes)")
    body = _CappedBody(limit, response.headers.get("content-encoding", ""))
    async for chunk in response.aiter_raw():
        body.feed(chunk)
    return bytes(body.data)


def read_capped_sync(response: httpx.Response, limit: int, *, client: str, deadline: Deadline | None = None) -> bytes:
    """:func:`read_capped` for a streamed response of a synchronous client that is not ours (a
    refusal is counted under ``client``; ``deadline`` is checked between chunks: such a
    client's reads cannot be cancelled)."""
    try:
        if _announced_too_large(response.headers, limit):
            raise ResponseTooLarge(f"response announced {response.headers.get('content-length')} bytes, over the "
                                   f"limit of {limit} (max_response_bytes)")
        body = _CappedBody(limit, response.headers.get("content-encoding", ""))
        for chunk in response.iter_raw():
            body.feed(chunk)
            if deadline is not None and deadline.expired:
                count_http_refusal(client, "deadline")
                raise DeadlineExceeded("no complete answer within the request's deadline")
    except ResponseTooLarge:
        count_http_refusal(client, ResponseTooLarge.reason)
        raise
    return bytes(body.data)


def _decoded_response(response: httpx.Response, body: bytes, request: httpx.Request) -> httpx.Response:
    headers = [(k, v) for k, v in response.headers.raw if k.lower() not in _BODY_HEADERS]
    extensions = {k: v for k, v in response.extensions.items() if k in ("http_version", "reason_phrase")}
    return httpx.Response(response.status_code, headers=headers, content=body, request=request, extensions=extensions)


# -- the transports -------------------------------------------------------------------------------------------
class BoundedAsyncTransport(httpx.AsyncBaseTransport):
    """An async transport reading capped bodies within one deadline per request, pinned to one origin.

    Args:
        client: the name our refusals are counted under (``phoenix``, ``langfuse``, ``judge``, ``forward``).
        origin: the URL whose origin every request must have (``None``: the first request's).
        max_response_bytes: the largest body read (decoded).
        deadline_s: the longest one request may take, connect to last byte (the request's own httpx
            timeout applies instead when it is shorter).
        verify, cert, trust_env: as for ``httpx.AsyncClient`` (TLS, client certificate, proxies and
            CA bundles from the environment).
    """

    def __init__(
        self,
        *,
        client: str,
        origin: str | httpx.URL | None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        deadline_s: float = 30.0,
        verify: Any = True,
        cert: Any = None,
        trust_env: bool = True,
    ) -> None:
        if not deadline_s > 0:
            raise ConfigError("deadline_s must be a positive number of seconds")
        self.client = client
        self.max_response_bytes = check_max_response_bytes(max_response_bytes)
        self.deadline_s = float(deadline_s)
        self._origin = origin_of(httpx.URL(str(origin))) if origin is not None else None
        # The connection pool, proxies from the environment and TLS: httpx's own, redirects off
        # (they come back to the outer client, which asks this transport again).
        self._inner = httpx.AsyncClient(verify=verify, cert=cert, trust_env=trust_env, follow_redirects=False)

    def deadline_for(self, request: httpx.Request) -> float:
        """The request's deadline in seconds: ours, or its own timeout when shorter."""
        timeouts = request.extensions.get("timeout") or {}
        given = [float(v) for v in timeouts.values() if isinstance(v, (int, float)) and v > 0]
        return min([self.deadline_s, *([max(given)] if given else [])])

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        target = origin_of(request.url)
        if self._origin is None:
            self._origin = target
        elif target != self._origin:
            own = self._origin
            raise OriginRefused(f"refused to send to {target[0]}://{target[1]}:{target[2]} (a redirect to another "
                                f"origin than {own[0]}://{own[1]}:{own[2]}, which this client is configured for)")
        deadline = self.deadline_for(request)
        try:
            return await asyncio.wait_for(self._fetch(request), deadline)
        except asyncio.TimeoutError:
            count_http_refusal(self.client, "deadline")
            raise DeadlineExceeded(f"no complete answer within the request's deadline of {deadline:g} s "
                                   f"(connect to last byte)", request=request) from None
        except ResponseTooLarge:
            count_http_refusal(self.client, ResponseTooLarge.reason)
            raise

    async def _fetch(self, request: httpx.Request) -> httpx.Response:
        _install_filter()
        _QUIET.set(True)  # this task's context only: the records of this request are dropped
        request.headers["Accept-Encoding"] = _ACCEPT_ENCODING
        response = await self._inner.send(request, stream=True)
        try:
            if response.status_code in _REDIRECTS and "location" in response.headers:
                try:
                    to = request.url.join(response.headers["location"])
                    foreign = origin_of(to) != self._origin
                except (httpx.InvalidURL, ValueError, TypeError):
                    foreign = True
                if foreign:
                    count_http_refusal(self.client, OriginRefused.reason)
            body = await read_capped(response, self.max_response_bytes)
        finally:
            await response.aclose()
        return _decoded_response(response, body, request)

    async def aclose(self) -> None:
        with quiet_httpx_logs():
            await self._inner.aclose()


class _LoopThread:
    """An event loop in a daemon thread, started on first use and again after a fork."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._lock = threading.Lock()

    def get(self) -> tuple[asyncio.AbstractEventLoop, bool]:
        """The loop, and whether it is new (after a fork, what was bound to the old one is gone)."""
        with self._lock:
            if self._loop is not None and self._pid == os.getpid():
                return self._loop, False
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
            thread.start()
            self._loop, self._thread, self._pid = loop, thread, os.getpid()
            return loop, True

    def stop(self, last: Coroutine[Any, Any, Any] | None = None) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None or self._pid != os.getpid():
            if last is not None:
                last.close()
            return
        if last is not None:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(last, loop).result(timeout=_UNWIND_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=_UNWIND_S)
        if not thread.is_alive():
            loop.close()


class BoundedTransport(httpx.BaseTransport):
    """:class:`BoundedAsyncTransport` for a synchronous ``httpx.Client``: each request runs on an event
    loop in a thread of this transport, where its deadline can cancel it mid-read (a blocking
    socket read cannot be interrupted); the calling thread waits for the result.

    Takes the arguments of :class:`BoundedAsyncTransport`."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._async = BoundedAsyncTransport(**options)  # checks the options now
        self._loop = _LoopThread(f"otel-toolscore-http-{options.get('client', 'client')}")
        self._lock = threading.Lock()
        self._pid = os.getpid()

    @property
    def max_response_bytes(self) -> int:
        return self._async.max_response_bytes

    @property
    def deadline_s(self) -> float:
        return self._async.deadline_s

    def _transport(self) -> tuple[asyncio.AbstractEventLoop, BoundedAsyncTransport]:
        loop, _ = self._loop.get()
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the connection pool belonged to the parent's loop
                self._async = BoundedAsyncTransport(**self._options)
                self._pid = os.getpid()
            return loop, self._async

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content = request.read()
        extensions = {k: v for k, v in request.extensions.items() if k != "trace"}  # sync callbacks only
        sendable = httpx.Request(request.method, request.url, headers=request.headers, content=content,
                                 extensions=extensions)
        loop, transport = self._transport()
        future = asyncio.run_coroutine_threadsafe(transport.handle_async_request(sendable), loop)
        try:
            answer = future.result(timeout=transport.deadline_for(sendable) + _UNWIND_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise DeadlineExceeded("the request did not end after its deadline", request=request) from None
        except concurrent.futures.CancelledError:
            raise httpx.ReadError("the client was closed during the request", request=request) from None
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content, request=request,
                              extensions=answer.extensions)

    def close(self) -> None:
        self._loop.stop(self._async.aclose())


class _QuietClient(httpx.Client):
    """A client whose requests log nothing through httpx (see :func:`quiet_httpx_logs`)."""

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        with quiet_httpx_logs():
            return super().send(request, **kwargs)


class _QuietAsyncClient(httpx.AsyncClient):
    """An async client whose requests log nothing through httpx (see :func:`quiet_httpx_logs`)."""

    async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        with quiet_httpx_logs():
            return await super().send(request, **kwargs)


def bounded_client(*, follow_redirects: bool = True, **options: Any) -> httpx.Client:
    """A synchronous ``httpx.Client`` over a :class:`BoundedTransport` built with ``options`` (the
    arguments of :class:`BoundedAsyncTransport`). Proxies and CA bundles from the environment are
    the transport's; the client itself reads no environment."""
    transport = BoundedTransport(**options)
    return _QuietClient(transport=transport, trust_env=False, follow_redirects=follow_redirects,
                        timeout=transport.deadline_s)


def bounded_async_client(*, follow_redirects: bool = True, **options: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` over a :class:`BoundedAsyncTransport` built with ``options``."""
    transport = BoundedAsyncTransport(**options)
    return _QuietAsyncClient(transport=transport, trust_env=False, follow_redirects=follow_redirects,
                             timeout=transport.deadline_s)


def refusal_in(exc: BaseException | None) -> ClientRefusal | None:
    """The :class:`ClientRefusal` that ``exc`` is or was caused by (a client library may wrap it)."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, ClientRefusal):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None

