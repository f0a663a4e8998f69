"""One TCP connection to an endpoint, to say at start that nothing listens there (instead of
retries, error rows and a long back-off later). Nothing is sent: the connection is closed at once.

When a proxy applies to the URL (``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY`` and ``NO_PROXY``,
as the HTTP clients read them), the proxy is what must be reachable, so the proxy is probed.
"""

from __future__ import annotations

import socket
import urllib.request
from urllib.parse import urlsplit

__all__ = ["shown_url", "unreachable"]


def _target(url: str, default_port: int) -> tuple[str, int]:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else default_port)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy and host and not urllib.request.proxy_bypass(host):
        pp = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if pp.hostname:
            return pp.hostname, pp.port or (443 if pp.scheme == "https" else 80)
    return host, port


def unreachable(url: str, *, default_port: int = 80, timeout_s: float = 5.0) -> str | None:
    """Why no TCP connection could be made to ``url`` (its host and port, or its proxy's), or ``None``."""
    try:
        host, port = _target(url, default_port)
    except ValueError:
        return "not a valid URL"
    if not host:
        return "no host in the URL"
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def shown_url(url: str) -> str:
    """``url`` fit for a message: a ``user:password@`` part is replaced by ``***@``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url if "@" not in url else "(a URL with credentials)"
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]).geturl()
