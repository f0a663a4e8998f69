"""Zero-code use under ``opentelemetry-instrument``: an ``opentelemetry_post_instrument`` entry point.

The stock configurator builds the providers; this hook only puts the processor in front of the span
export processors it created (no competing configurator). ``OTEL_TOOLSCORE_ENABLED=false`` turns it off.
"""

from __future__ import annotations

import logging
import os
from typing import Any

__all__ = ["post_instrument"]

_log = logging.getLogger(__name__)


def post_instrument(*args: Any, **kwargs: Any) -> None:
    if os.environ.get("OTEL_TOOLSCORE_ENABLED", "true").strip().lower() in ("0", "false", "no", "off"):
        return
    try:
        from .online.setup import install

        install()
    except Exception:  # a misconfiguration must not stop the instrumented application
        _log.exception("otel-toolscore could not be installed")
