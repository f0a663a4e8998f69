"""Bounded retries for a sink's request: a few attempts with exponential backoff, then give up."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

__all__ = ["MAX_BACKOFF_S", "RetryableError", "SinkError", "check_request_limits", "http_failures", "with_retries"]

T = TypeVar("T")

#: longest wait between two attempts (a ``Retry-After`` beyond it is cut to it)
MAX_BACKOFF_S = 4.0
_FIRST_BACKOFF_S = 0.5


class SinkError(RuntimeError):
    """A sink could not deliver a batch (not worth retrying, or out of attempts)."""


class RetryableError(SinkError):
    """A failure that may pass: a connection error, 429, 5xx."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def with_retries(attempt: Callable[[], T], max_retries: int, *, sleep: Callable[[float], None] = time.sleep) -> T:
    """``attempt()``, retried up to ``max_retries`` more times while it raises :class:`RetryableError`."""
    delay = _FIRST_BACKOFF_S
    tries = 0
    while True:
        try:
            return attempt()
        except RetryableError as exc:
            if tries >= max_retries:
                raise
            tries += 1
            wait = exc.retry_after if exc.retry_after is not None else delay
            sleep(min(MAX_BACKOFF_S, wait))
            delay = min(MAX_BACKOFF_S, delay * 2)


def check_request_limits(timeout_s: float, max_retries: int, max_batch: int) -> None:
    """Fail fast on a sink's request limits (constructor arguments)."""
    if timeout_s <= 0:
        raise ValueError("timeout_s must be positive")
    if max_retries < 0:
        raise ValueError("max_retries must be 0 or more")
    if max_batch < 1:
        raise ValueError("max_batch must be at least 1")


@contextlib.contextmanager
def http_failures(where: str) -> Iterator[None]:
    """Turn what an HTTP request of a sink raised into its :class:`SinkError`: connection errors and
    timeouts (the request's deadline included) are retryable; a refused answer (body over the
    limit, redirect to another origin) and other HTTP errors are not.

    Raised ``from None``: a chained exception would print the request or the response whole."""
    import httpx

    from ..bounded_http import ClientRefusal
    from ..http_limits import mask_url

    try:
        yield
    except httpx.TransportError as exc:
        raise RetryableError(f"{where}: {type(exc).__name__}: {mask_url(exc)}") from None
    except ClientRefusal as exc:
        raise SinkError(f"{where}: {exc}") from None
    except httpx.HTTPError as exc:
        raise SinkError(f"{where}: {type(exc).__name__}: {mask_url(exc)}") from None
