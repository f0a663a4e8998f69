"""Limits and safe views of what our HTTP clients talk to: settings' bounds, endpoint checks, masked
URLs, ``Retry-After`` and response bodies as they may be logged.

Kept apart from :mod:`otel_toolscore.bounded_http` (the transports) so that settings models can
use it without importing httpx; httpx is imported where a URL is parsed.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING

from .envconfig import ConfigError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "MAX_RESPONSE_BYTES_LIMIT",
    "MIN_RESPONSE_BYTES",
    "check_endpoint",
    "check_max_response_bytes",
    "count_http_refusal",
    "http_refusal_counts",
    "mask_url",
    "origin_of",
    "retry_after_seconds",
    "scrub_body",
]

#: Default largest response body our clients read (a judge's answer, a backend's error page).
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: Largest value the ``max_response_bytes`` settings accept.
MAX_RESPONSE_BYTES_LIMIT = 1 << 30
#: Smallest value the ``max_response_bytes`` settings accept.
MIN_RESPONSE_BYTES = 1024


def check_max_response_bytes(value: int) -> int:
    """``value`` if it is a usable ``max_response_bytes`` (an argument), else :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_RESPONSE_BYTES <= value <= MAX_RESPONSE_BYTES_LIMIT:
        raise ConfigError(
            f"max_response_bytes must be an integer in {MIN_RESPONSE_BYTES}..{MAX_RESPONSE_BYTES_LIMIT}, not {value!r}"
        )
    return value


# -- URLs, Retry-After, bodies ------------------------------------------------------------------------------
_USERINFO = re.compile(r"(^|://)([^/?#@\s]*@)")


def mask_url(url: object) -> str:
    """``url`` as text with its user-info (``user:password@``) replaced by ``***@``; safe to log."""
    return _USERINFO.sub(lambda m: m.group(1) + "***@", str(url), count=1)


def origin_of(url: httpx.URL) -> tuple[str, str, int]:
    """(scheme, host, port) with the scheme's default port filled in."""
    scheme = url.scheme.lower()
    port = url.port if url.port is not None else (443 if scheme == "https" else 80)
    return scheme, url.host.lower(), port


def check_endpoint(value: str, setting: str) -> httpx.URL:
    """``value`` as an ``http(s)`` URL with a host and a port in 1..65535, or :class:`ConfigError`
    naming ``setting`` (the value is shown with its user-info masked)."""
    text = value.strip() if isinstance(value, str) else value
    shown = repr(mask_url(text))
    if not isinstance(text, str) or not text:
        raise ConfigError(f"{setting}: an http(s) URL is needed, not {shown}")
    if any(c.isspace() or not c.isprintable() for c in text):
        raise ConfigError(f"{setting}: {shown} is not a usable URL (it contains a space or a control character)")
    import httpx

    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise ConfigError(f"{setting}: {shown} is not a usable URL ({mask_url(exc)})") from None
    if url.scheme.lower() not in ("http", "https"):
        raise ConfigError(f"{setting}: {shown} must start with http:// or https://")
    if not url.host:
        raise ConfigError(f"{setting}: {shown} has no host")
    if url.port is not None and not 0 < url.port < 65536:
        raise ConfigError(f"{setting}: {shown} has port {url.port}, outside 1..65535")
    return url


def retry_after_seconds(value: str | None) -> float | None:
    """An HTTP ``Retry-After`` value in seconds: delay-seconds or an HTTP-date (RFC 9110, 10.2.3);
    ``None`` when absent or unreadable. A date in the past is 0."""
    if not value:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds and seconds != float("inf") else None
    # email.utils loads with the first HTTP date: the span processor's import path counts refusals
    # through this module and never reads a Retry-After
    from email.utils import parsedate_to_datetime

    try:
        return max(0.0, parsedate_to_datetime(text).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def scrub_body(text: str, limit: int = 300) -> str:
    """A peer's response body as it may be logged: redacted (:func:`otel_toolscore.redact.redact`:
    an echoed ``Authorization`` header, keys, passwords), cut to ``limit`` characters, control
    characters shown escaped (one log line)."""
    from .redact import redact

    head = text[: limit * 4 + 1024]  # what is redacted: well past the cut, so no secret straddles it
    cleaned = redact(head)
    out = cleaned[:limit]
    if len(cleaned) > limit or len(text) > len(head):
        out += f"…[{len(text) - min(len(text), limit)} more chars]"
    if not out.isprintable():
        out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in out)
    return out


# -- answers refused, counted process-wide (reported as toolscore.http.client.refused by telemetry) --
_refusals_lock = threading.Lock()
_refusals: Counter[tuple[str, str]] = Counter()


def count_http_refusal(client: str, reason: str) -> None:
    """One answer of ``client`` (``phoenix``, ``langfuse``, ``judge``, ``forward``, ``logs``) refused for ``reason``."""
    with _refusals_lock:
        _refusals[(client, reason)] += 1


def http_refusal_counts() -> dict[tuple[str, str], int]:
    """Every count so far, by (client, reason)."""
    with _refusals_lock:
        return dict(_refusals)
