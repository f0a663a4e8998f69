"""Deprecated import path: this module moved to :mod:`otel_toolscore.telemetry._exporters`.

Kept so that code written against earlier releases keeps working; import from ``otel_toolscore.telemetry._exporters``.
"""

from __future__ import annotations

from ..telemetry._exporters import DEFAULT_PROTOCOL, Signal, exporters_from_env, otlp_exporter, otlp_protocol

__all__ = ["DEFAULT_PROTOCOL", "Signal", "exporters_from_env", "otlp_exporter", "otlp_protocol"]
