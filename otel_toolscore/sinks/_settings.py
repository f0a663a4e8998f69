"""Sinks by name (``OTEL_TOOLSCORE_SINKS``) and their settings (``OTEL_TOOLSCORE_<SINK>_<NAME>``).

As the OpenTelemetry SDK's configuration spec asks of environment variables: a bad value or an
unknown variable is a warning naming it, and the default is used — a typo must never turn scoring
off. Names given as arguments (``sinks=["phoenix"]``, ``serve --sinks``) fail fast instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from typing import ClassVar

from ..envconfig import EnvSettings, SecretStr, setting
from ..http_limits import (
    DEFAULT_MAX_RESPONSE_BYTES,
    MAX_RESPONSE_BYTES_LIMIT,
    MIN_RESPONSE_BYTES,
    check_endpoint,
    mask_url,
)
from ..settings import ENV_PREFIX, SINKS_ENV, ConfigError, parse_sink_names
from ._base import ScoreSink

__all__ = [
    "LangfuseSinkSettings",
    "PhoenixSinkSettings",
    "parse_sink_names",
    "resolve_sinks",
    "sink_from_name",
    "sink_settings_from_env",
]

_log = logging.getLogger(__name__)

_TIMEOUT = "Deadline of one request, connect to last byte."
_MAX_RESPONSE = "Largest response body read (decoded); a larger one is refused and counted."


class _SinkSettings(EnvSettings):
    """A sink's settings: ``OTEL_TOOLSCORE_<SINK>_<NAME>`` variables, read as the processor's are."""

    secret_fields: ClassVar[frozenset[str]] = frozenset({"api_key"})

    @classmethod
    def unknown_variable(cls, key: str, hint: str | None, what: str) -> str:
        known = ", ".join(sorted(cls.env_name(f) for f in cls.model_fields))
        return f"unknown setting {key} ignored ({f'did you mean {hint}? ' if hint else ''}known: {known})"


class PhoenixSinkSettings(_SinkSettings):
    """``OTEL_TOOLSCORE_PHOENIX_*``; endpoint and key fall back to Phoenix's own variables."""

    env_prefix: ClassVar[str] = f"{ENV_PREFIX}PHOENIX_"

    endpoint: str | None = setting(
        None, "Phoenix base URL (default: `PHOENIX_COLLECTOR_ENDPOINT`, else `http://localhost:6006`)."
    )
    api_key: SecretStr | None = setting(None, "Bearer key (default: `PHOENIX_API_KEY`).")
    timeout_ms: int = setting(5_000, _TIMEOUT, ge=1, le=600_000)
    max_retries: int = setting(2, "Further attempts after a connection error, 429 or 5xx.", ge=0, le=10)
    max_batch: int = setting(100, "Annotations per request.", ge=1, le=10_000)
    max_response_bytes: int = setting(
        DEFAULT_MAX_RESPONSE_BYTES, _MAX_RESPONSE, ge=MIN_RESPONSE_BYTES, le=MAX_RESPONSE_BYTES_LIMIT
    )


class LangfuseSinkSettings(_SinkSettings):
    """``OTEL_TOOLSCORE_LANGFUSE_*``; credentials and host are the Langfuse SDK's own variables."""

    env_prefix: ClassVar[str] = f"{ENV_PREFIX}LANGFUSE_"

    timeout_ms: int = setting(5_000, _TIMEOUT, ge=1, le=600_000)
    max_retries: int = setting(2, "Further attempts after a connection error, 408/409/429 or 5xx.", ge=0, le=10)
    max_batch: int = setting(100, "Records per request (two scores each).", ge=1, le=10_000)
    max_response_bytes: int = setting(
        DEFAULT_MAX_RESPONSE_BYTES, _MAX_RESPONSE, ge=MIN_RESPONSE_BYTES, le=MAX_RESPONSE_BYTES_LIMIT
    )


_SETTINGS: dict[str, type[_SinkSettings]] = {"phoenix": PhoenixSinkSettings, "langfuse": LangfuseSinkSettings}


def sink_settings_from_env(name: str, environ: Mapping[str, str] | None = None) -> _SinkSettings:
    """The settings of sink ``name`` from its variables; bad or unknown ones are warned about and ignored."""
    model = _SETTINGS[name]
    return model.build(os.environ if environ is None else environ, {}, what=f"{name} sink settings")


def sink_from_name(name: str, environ: Mapping[str, str] | None = None) -> ScoreSink:
    """The built-in sink ``name``, configured from the environment. Raises when it cannot be built
    (``ImportError``: a missing package; ``ValueError``: missing credentials; :class:`ConfigError`
    naming the variable: an endpoint that is not a usable URL)."""
    env = os.environ if environ is None else environ
    settings = sink_settings_from_env(name, env)
    if isinstance(settings, PhoenixSinkSettings):
        from ._phoenix import DEFAULT_ENDPOINT, PhoenixSink

        key = settings.api_key.get_secret_value() if settings.api_key is not None else env.get("PHOENIX_API_KEY")
        endpoint, source = _phoenix_endpoint(settings, env, DEFAULT_ENDPOINT)
        check_endpoint(endpoint, source)  # names the variable, not the constructor's argument
        return PhoenixSink(
            endpoint,
            api_key=key or None,
            timeout_s=settings.timeout_ms / 1000,
            max_retries=settings.max_retries,
            max_batch=settings.max_batch,
            max_response_bytes=settings.max_response_bytes,
        )
    assert isinstance(settings, LangfuseSinkSettings)
    from ._langfuse import LangfuseSink

    return LangfuseSink(
        timeout_s=settings.timeout_ms / 1000,
        max_retries=settings.max_retries,
        max_batch=settings.max_batch,
        max_response_bytes=settings.max_response_bytes,
        environ=env,
    )


def _phoenix_endpoint(settings: PhoenixSinkSettings, env: Mapping[str, str], default: str) -> tuple[str, str]:
    if settings.endpoint:
        return settings.endpoint, f"{ENV_PREFIX}PHOENIX_ENDPOINT"
    collector = env.get("PHOENIX_COLLECTOR_ENDPOINT")
    if collector and collector.strip():
        return collector, "PHOENIX_COLLECTOR_ENDPOINT"
    return default, "the default Phoenix endpoint"


def resolve_sinks(
    sinks: Iterable[ScoreSink | str], *, strict: bool, environ: Mapping[str, str] | None = None
) -> list[ScoreSink]:
    """Sink objects for ``sinks`` (objects as they are, names built from the environment).

    ``strict`` (names the caller passed): an unknown name or a sink that cannot be built raises
    :class:`ConfigError`. Otherwise (names from ``OTEL_TOOLSCORE_SINKS``) it is a warning and the
    sink is left out: scoring goes on without it.
    """
    out: list[ScoreSink] = []
    for item in sinks:
        if isinstance(item, ScoreSink):
            out.append(item)
            continue
        if not isinstance(item, str):
            raise ConfigError(f"a sink must be a ScoreSink or a sink name, not {type(item).__name__}")
        for name in parse_sink_names(item, source="sinks" if strict else SINKS_ENV, strict=strict):
            try:
                out.append(sink_from_name(name, environ))
            except (ImportError, ValueError) as exc:  # ConfigError included
                if strict:
                    raise ConfigError(f"sink {name!r}: {exc}") from None
                _log.warning("otel-toolscore: sink %r from %s not started: %s", name, SINKS_ENV, mask_url(exc))
            except Exception as exc:  # whatever else building it raised: still never into the host
                if strict:
                    raise ConfigError(f"sink {name!r}: {type(exc).__name__}: {mask_url(exc)}") from None
                _log.warning("otel-toolscore: sink %r from %s not started: %s: %s", name, SINKS_ENV,
                             type(exc).__name__, mask_url(exc))
    return out
