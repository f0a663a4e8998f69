"""``otel-toolscore serve``: the scoring pipeline as an OTLP service behind the OpenTelemetry Collector."""

from __future__ import annotations

from ._app import IntakeResult, ScoringService
from .settings import ServiceConfig, ServiceSettings, load_config

__all__ = ["IntakeResult", "ScoringService", "ServiceConfig", "ServiceSettings", "load_config"]
