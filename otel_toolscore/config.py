"""Settings shared by the span processor and the scoring service.

Every setting is a constructor argument and an ``OTEL_TOOLSCORE_<NAME>`` environment variable
(constructor arguments win, as in the OpenTelemetry SDK). An unknown ``OTEL_TOOLSCORE_*`` variable
or a value of the wrong type fails at start with one message naming the key: a typo in a limit
must not silently fall back to a default in production.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .telemetry.names import SINK_NAMES

__all__ = [
    "ENV_PREFIX", "SINKS_ENV", "SKIP", "ConfigError", "Settings", "build_settings", "parse_sink_names", "read_env"
]

_log = logging.getLogger(__name__)

ENV_PREFIX = "OTEL_TOOLSCORE_"
SINKS_ENV = ENV_PREFIX + "SINKS"


class ConfigError(ValueError):
    """A setting is unknown or invalid; the message names the key."""


class Settings(BaseModel):
    """Limits and switches of the online pipeline. Defaults suit a production agent service."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # -- what is written ---------------------------------------------------------------------------
    span_attributes: bool = Field(True, description="Write score attributes on a copy of the run's root span.")
    openinference_annotations: bool = Field(
        True, description="Also write OpenInference `annotations.N.annotation.*` attributes (Phoenix)."
    )
    events: bool = Field(True, description="Emit `gen_ai.evaluation.result` log records.")
    metrics: bool = Field(True, description="Record the score histogram and the funnel counters.")
    max_attribute_tools: int = Field(
        64, ge=1, le=4096, description="Most tool names written to `toolscore.code.actual_tools`."
    )
    max_metric_agents: int = Field(
        100, ge=0, le=10_000, description="Distinct agent names used as a metric attribute before `_OTHER`."
    )
    include_framework_calls: bool = Field(
        False, description="Count framework calls (handoffs, output tools) when scoring."
    )
    # -- expectations -----------------------------------------------------------------------------
    rules: str | None = Field(None, description="Path of a YAML/TOML expectation rules file.")
    expected_tool: str | None = Field(None, description="Default expected tool for runs no rule matches.")
    expected_tool_order: tuple[str, ...] | None = Field(
        None, description="Default expected order (comma-separated in the environment)."
    )
    strict_mode: bool = Field(False, description="Strict mode for the default expectation.")
    # -- limits (each has a counter of what it dropped) ------------------------------------------
    max_pending_traces: int = Field(
        10_000, ge=1, le=10_000_000, description="Traces watched at once (a span open, or a run waiting to be scored)."
    )
    max_spans_per_trace: int = Field(
        2_000, ge=1, le=1_000_000, description="Ended GenAI spans whose facts are kept per trace."
    )
    max_open_spans_per_trace: int = Field(
        10_000, ge=1, le=10_000_000, description="Open spans (and start contexts) tracked per trace."
    )
    max_known_spans_per_trace: int = Field(
        20_000, ge=1, le=10_000_000, description="Spans whose parent link is kept per trace (runs are found through them)."
    )
    max_calls_per_run: int = Field(1_000, ge=1, le=1_000_000, description="Tool calls kept per run.")
    max_content_chars: int = Field(8_192, ge=0, le=10_000_000, description="Characters kept per text value.")
    root_grace_ms: int = Field(
        500, ge=0, le=600_000, description="How long a run's root is held while its descendants are open."
    )
    trace_timeout_s: float = Field(
        300.0, gt=0, le=86_400, description="A trace pending longer than this is evicted (root never ended)."
    )
    emit_queue_size: int = Field(10_000, ge=1, le=10_000_000, description="Scored runs waiting to be emitted.")
    span_queue_size: int = Field(
        32_768, ge=1, le=10_000_000, description="Span starts/ends waiting for the scoring worker."
    )
    callback_queue_size: int = Field(
        10_000, ge=1, le=10_000_000, description="Scored runs waiting for the `on_scored` callback."
    )
    sinks: tuple[str, ...] = Field(
        (), description="Score sinks by name, comma-separated: `phoenix`, `langfuse` (see `otel_toolscore.sinks`)."
    )
    sink_queue_size: int = Field(
        10_000, ge=1, le=10_000_000, description="Score records waiting per sink."
    )
    capture_content: bool | None = Field(
        None,
        description="Keep prompts/answers/arguments while a run is pending; default: only when a judge is set.",
    )

    @field_validator("expected_tool_order")
    @classmethod
    def _order_not_empty(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and len(value) == 0:
            raise ValueError("must not be empty")
        return value

    @field_validator("sinks", mode="before")
    @classmethod
    def _known_sinks(cls, value: Any) -> Any:
        # Passed by a caller: an unknown name fails here (the environment's are filtered, with a
        # warning, before they reach the model).
        if isinstance(value, str):
            return parse_sink_names(value, source="sinks", strict=True)
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return parse_sink_names(",".join(value), source="sinks", strict=True)
        return value

    @classmethod
    def field_env_name(cls, name: str) -> str:
        return ENV_PREFIX + name.upper()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, /, **overrides: Any) -> Settings:
        """Settings from ``OTEL_TOOLSCORE_*`` variables, overridden by explicit arguments."""
        values = read_env(
            os.environ if environ is None else environ,
            ENV_PREFIX,
            cls.model_fields,
            parse=_parse_env,
            ignore=lambda key: key in _FOREIGN_KEYS or key.startswith(_FOREIGN_PREFIXES),
        )
        unknown = set(overrides) - set(cls.model_fields)
        if unknown:
            raise ConfigError(f"unknown setting {sorted(unknown)[0]!r}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return build_settings(cls, values, {n: cls.field_env_name(n) for n in cls.model_fields})


#: Returned by a ``parse`` function of :func:`read_env` for "not set": the default applies.
SKIP: Any = object()
M = TypeVar("M", bound=BaseModel)


def read_env(
    environ: Mapping[str, str],
    prefix: str,
    fields: Iterable[str],
    *,
    parse: Callable[[str, str], Any] | None = None,
    ignore: Callable[[str], bool] = lambda key: False,
    what: str = "settings",
) -> dict[str, Any]:
    """Values of the ``<prefix><FIELD>`` variables; an unknown variable with the prefix is an error.

    ``parse(name, stripped_text)`` turns a value into what the model validates, or :data:`SKIP`. The
    default skips empty values ("use the default", as in the OpenTelemetry SDK).
    """
    known = {prefix + name.upper(): name for name in fields}
    values: dict[str, Any] = {}
    for key, raw in environ.items():
        if not key.startswith(prefix) or ignore(key):
            continue
        name = known.get(key)
        if name is None:
            raise ConfigError(f"unknown setting {key}; known {what}: {', '.join(sorted(known))}")
        text = raw.strip()
        value = parse(name, text) if parse is not None else (text if text else SKIP)
        if value is not SKIP:
            values[name] = value
    return values


def build_settings(model: type[M], values: Mapping[str, Any], where: Mapping[str, str]) -> M:
    """``model(**values)``, with a validation error turned into one message naming the key's source."""
    try:
        return model(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "settings"
        raise ConfigError(f"invalid setting {where.get(loc, loc)} ({loc}): {err['msg']}") from None


# Variables with our prefix that other parts read (and check) themselves: the judge, the service,
# the score sinks.
_FOREIGN_KEYS: frozenset[str] = frozenset({ENV_PREFIX + "ENABLED"})
_FOREIGN_PREFIXES: tuple[str, ...] = (
    ENV_PREFIX + "JUDGE_", ENV_PREFIX + "SERVICE_", ENV_PREFIX + "PHOENIX_", ENV_PREFIX + "LANGFUSE_"
)


def parse_sink_names(text: str, *, source: str = SINKS_ENV, strict: bool = False) -> tuple[str, ...]:
    """``phoenix,langfuse`` → ``("phoenix", "langfuse")``; ``none`` or empty → ``()``.

    An unknown name raises :class:`ConfigError` when ``strict``, else is left out with a warning.
    """
    out: list[str] = []
    for part in text.split(","):
        item = part.strip().lower()
        if not item or item == "none":
            continue
        if item not in SINK_NAMES:
            message = f"{source}: unknown sink {item!r} (known: {', '.join(SINK_NAMES)})"
            if strict:
                raise ConfigError(message)
            _log.warning("otel-toolscore: %s; ignored", message)
            continue
        if item not in out:
            out.append(item)
    return tuple(out)


def _parse_env(name: str, raw: str) -> Any:
    if not raw:
        return SKIP  # an empty variable means "use the default", as in the OpenTelemetry SDK
    if name == "expected_tool_order":
        return tuple(p.strip() for p in raw.split(",") if p.strip())
    if name == "sinks":
        return parse_sink_names(raw)  # an unknown name is a warning, not a failed start
    return raw.strip()
