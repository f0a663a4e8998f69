"""Settings shared by the span processor and the scoring service.

Every setting is a constructor argument and an ``OTEL_TOOLSCORE_<NAME>`` environment variable
(constructor arguments win, as in the OpenTelemetry SDK). The environment is read the OpenTelemetry
way (:mod:`otel_toolscore.envconfig`): an unknown variable or a value that cannot be used logs a
warning naming the variable and is ignored, so a typo never stops the application or scoring.
Constructor arguments are checked at once and fail with one message naming the key.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, field_validator

from .envconfig import SKIP, ConfigError, EnvSettings, build_settings, read_env
from .telemetry.names import SINK_NAMES

__all__ = [
    "ENV_PREFIX", "SINKS_ENV", "SKIP", "ConfigError", "Settings", "build_settings", "parse_sink_names", "read_env"
]

_log = logging.getLogger(__name__)

ENV_PREFIX = "OTEL_TOOLSCORE_"
SINKS_ENV = ENV_PREFIX + "SINKS"


class Settings(EnvSettings):
    """Limits and switches of the online pipeline. Defaults suit a production agent service."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    env_prefix: ClassVar[str] = ENV_PREFIX
    renamed_to_ms: ClassVar[Mapping[str, str]] = {"trace_timeout_s": "trace_timeout_ms"}

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
    max_parse_chars: int = Field(
        1_048_576,
        ge=0,
        le=1_000_000_000,
        description="Longest JSON text (a message list, arguments, a result) parsed at all; longer text is not read.",
    )
    root_grace_ms: int = Field(
        500, ge=0, le=600_000, description="How long a run's root is held while its descendants are open."
    )
    trace_timeout_ms: int = Field(
        300_000, gt=0, le=86_400_000, description="A trace pending longer than this is evicted (root never ended)."
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
        return cls.env_name(name)

    @classmethod
    def parse_env(cls, name: str, text: str) -> Any:
        if name == "expected_tool_order":
            return tuple(p.strip() for p in text.split(",") if p.strip())
        if name == "sinks":
            return parse_sink_names(text)  # an unknown name is a warning, not a failed start
        return super().parse_env(name, text)

    @classmethod
    def check_env(cls, name: str, value: Any) -> None:
        if name == "rules" and value:
            from .online.expectations import load_rules

            load_rules(value)  # RulesError (a ValueError) names the file: the variable is then ignored

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, /, **overrides: Any) -> Settings:
        """Settings from ``OTEL_TOOLSCORE_*`` variables, overridden by explicit arguments."""
        return cls.build(
            os.environ if environ is None else environ,
            {k: v for k, v in overrides.items() if v is not None},
            ignore=lambda key: key in _FOREIGN_KEYS or key.startswith(_FOREIGN_PREFIXES),
        )


# Variables with our prefix that other parts read (and check) themselves: the zero-code switch, the
# judge, the service, the score sinks.
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
