"""Deprecated import path: this module moved to :mod:`otel_toolscore.settings`.

Kept so that code written against earlier releases keeps working; import from ``otel_toolscore.settings``.
"""

from __future__ import annotations

from .settings import ENV_PREFIX, SINKS_ENV, SKIP, ConfigError, Settings, build_settings, parse_sink_names, read_env

__all__ = [
    "ENV_PREFIX",
    "SINKS_ENV",
    "SKIP",
    "ConfigError",
    "Settings",
    "build_settings",
    "parse_sink_names",
    "read_env",
]
