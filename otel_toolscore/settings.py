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

from .envconfig import SKIP, ConfigError, EnvSettings, build_settings, read_env, setting
from .telemetry.names import SINK_NAMES

__all__ = [
    "ENV_PREFIX", "SINKS_ENV", "SKIP", "ConfigError", "Settings", "build_settings", "parse_sink_names", "read_env"
]

_log = logging.getLogger(__name__)

ENV_PREFIX = "OTEL_TOOLSCORE_"
SINKS_ENV = ENV_PREFIX + "SINKS"


def _order_not_empty(value: tuple[str, ...]) -> tuple[str, ...]:
    if len(value) == 0:
        raise ValueError("must not be empty")
    return value


def _known_sinks(value: Any) -> Any:
    # Passed by a caller: an unknown name fails here (the environment's are filtered, with a
    # warning, before they reach the settings).
    if isinstance(value, str):
        return parse_sink_names(value, source="sinks", strict=True)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return parse_sink_names(",".join(value), source="sinks", strict=True)
    return value


class Settings(EnvSettings):
    """Limits and switches of the online pipeline. Defaults suit a production agent service."""

    env_prefix: ClassVar[str] = ENV_PREFIX
    renamed_to_ms: ClassVar[Mapping[str, str]] = {"trace_timeout_s": "trace_timeout_ms"}

    # -- what is written ---------------------------------------------------------------------------
    span_attributes: bool = setting(True, "Write score attributes on a copy of the run's root span.")
    openinference_annotations: bool = setting(
        True, "Also write OpenInference `annotations.N.annotation.*` attributes (Phoenix)."
    )
    events: bool = setting(True, "Emit `gen_ai.evaluation.result` log records.")
    metrics: bool = setting(True, "Record the score histogram and the funnel counters.")
    max_attribute_tools: int = setting(
        64, "Most tool names written to `toolscore.code.actual_tools`.", ge=1, le=4096
    )
    max_metric_agents: int = setting(
        100, "Distinct agent names used as a metric attribute before `_OTHER`.", ge=0, le=10_000
    )
    max_name_chars: int = setting(
        256,
        "Longest agent or tool name (or conversation id) from data written to a metric attribute, an "
        "event or a span attribute; longer ones are cut (`…`) and counted (`toolscore.dropped{name_too_long}`).",
        ge=16,
        le=1_000_000,
    )
    include_framework_calls: bool = setting(
        False, "Count framework calls (handoffs, output tools) when scoring."
    )
    # -- expectations -----------------------------------------------------------------------------
    rules: str | None = setting(None, "Path of a YAML/TOML expectation rules file.")
    expected_tool: str | None = setting(None, "Default expected tool for runs no rule matches.")
    expected_tool_order: tuple[str, ...] | None = setting(
        None, "Default expected order (comma-separated in the environment).", check=_order_not_empty
    )
    strict_mode: bool = setting(False, "Strict mode for the default expectation.")
    # -- limits (each has a counter of what it dropped) ------------------------------------------
    max_pending_traces: int = setting(
        10_000, "Traces watched at once (a span open, or a run waiting to be scored).", ge=1, le=10_000_000
    )
    max_spans_per_trace: int = setting(
        2_000, "Ended GenAI spans whose facts are kept per trace.", ge=1, le=1_000_000
    )
    max_open_spans_per_trace: int = setting(
        10_000, "Open spans (and start contexts) tracked per trace.", ge=1, le=10_000_000
    )
    max_known_spans_per_trace: int = setting(
        20_000, "Spans whose parent link is kept per trace (runs are found through them).", ge=1, le=10_000_000
    )
    max_calls_per_run: int = setting(1_000, "Tool calls kept per run.", ge=1, le=1_000_000)
    max_content_chars: int = setting(8_192, "Characters kept per text value.", ge=0, le=10_000_000)
    max_parse_chars: int = setting(
        1_048_576,
        "Longest JSON text (a message list, arguments, a result) parsed at all; longer text is not read.",
        ge=0,
        le=1_000_000_000,
    )
    root_grace_ms: int = setting(
        500, "How long a run's root is held while its descendants are open.", ge=0, le=600_000
    )
    trace_timeout_ms: int = setting(
        300_000, "A trace pending longer than this is evicted (root never ended).", gt=0, le=86_400_000
    )
    emit_queue_size: int = setting(10_000, "Scored runs waiting to be emitted.", ge=1, le=10_000_000)
    span_queue_size: int = setting(
        32_768, "Span starts/ends waiting for the scoring worker.", ge=1, le=10_000_000
    )
    callback_queue_size: int = setting(
        10_000, "Scored runs waiting for the `on_scored` callback.", ge=1, le=10_000_000
    )
    sinks: tuple[str, ...] = setting(
        (), "Score sinks by name, comma-separated: `phoenix`, `langfuse` (see `otel_toolscore.sinks`).",
        before=_known_sinks,
    )
    sink_queue_size: int = setting(10_000, "Score records waiting per sink.", ge=1, le=10_000_000)
    capture_content: bool | None = setting(
        None, "Keep prompts/answers/arguments while a run is pending; default: only when a judge is set."
    )

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
            from .expectations import load_rules

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
