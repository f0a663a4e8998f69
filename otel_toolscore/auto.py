"""Zero-code use under ``opentelemetry-instrument``: an ``opentelemetry_post_instrument`` entry point.

The stock configurator builds the providers; this hook only puts the processor in front of the span
export processors it created (no competing configurator). ``OTEL_TOOLSCORE_ENABLED=false`` turns it
off. As for every ``OTEL_TOOLSCORE_*`` variable, a value other than ``true``/``false`` is warned
about and ignored (the hook stays on): a typo never turns scoring off.

The configurator comes from a distro package (``opentelemetry-distro``, or a vendor's). Without one,
``opentelemetry-instrument`` sets up no SDK tracer provider: spans go nowhere, no run can be scored
and nothing is exported. The hook then says so in one warning, naming the package to install, and
installs nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from .envconfig import warn_env

__all__ = ["post_instrument"]

_log = logging.getLogger(__name__)

_ENABLED = "OTEL_TOOLSCORE_ENABLED"


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """``OTEL_TOOLSCORE_ENABLED``: only ``false`` (any case) turns the hook off."""
    text = (os.environ if environ is None else environ).get(_ENABLED, "").strip()
    if text.lower() == "false":
        return False
    if text and text.lower() != "true":
        warn_env(f"{_ENABLED}={text[:60]!r} is ignored (a boolean is `true` or `false`); scoring stays on")
    return True


def _sdk_tracer_provider() -> bool:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    return isinstance(trace.get_tracer_provider(), TracerProvider)


def post_instrument(*args: Any, **kwargs: Any) -> None:
    if not enabled():
        return
    try:
        if not _sdk_tracer_provider():
            _log.warning(
                "otel-toolscore: no OpenTelemetry SDK tracer provider was set up (install `opentelemetry-distro`, "
                "whose configurator builds the providers and exporters from the OTEL_* variables): no run is "
                "scored and nothing is exported"
            )
            return
        from .online._setup import install

        install()
    except Exception:  # a misconfiguration must not stop the instrumented application
        _log.exception("otel-toolscore could not be installed")
