"""Settings of the online LLM judge, from ``OTEL_TOOLSCORE_JUDGE_*`` environment variables.

Enabling the judge takes three variables: ``OTEL_TOOLSCORE_JUDGE_MODEL``,
``OTEL_TOOLSCORE_JUDGE_BASE_URL`` (or ``OPENAI_BASE_URL``; omit for OpenAI itself) and
``OTEL_TOOLSCORE_JUDGE_API_KEY`` (or ``OPENAI_API_KEY``). Everything else has a production default.
As for the processor's settings, an unknown ``OTEL_TOOLSCORE_JUDGE_*`` variable or a value that cannot
be used logs a warning naming the variable and is ignored. One exception: a bad
``OTEL_TOOLSCORE_JUDGE_BASE_URL`` turns the judge off (see :func:`~otel_toolscore.online.judge.judge_from_env`)
rather than falling back to another endpoint, which would send the runs and the key elsewhere.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, SecretStr, field_validator

from ..config import ENV_PREFIX
from ..envconfig import ConfigError, EnvSettings
from ..files import read_config_text
from ..http_limits import DEFAULT_MAX_RESPONSE_BYTES, MAX_RESPONSE_BYTES_LIMIT, MIN_RESPONSE_BYTES
from ..scorers.llm import check_base_url

__all__ = ["JUDGE_ENV_PREFIX", "JudgeSettings", "load_tools_file"]

JUDGE_ENV_PREFIX = ENV_PREFIX + "JUDGE_"


class JudgeSettings(EnvSettings):
    """Every judge setting; ``OTEL_TOOLSCORE_JUDGE_<FIELD>`` in the environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    env_prefix: ClassVar[str] = JUDGE_ENV_PREFIX
    renamed_to_ms: ClassVar[Mapping[str, str]] = {
        "timeout_s": "timeout_ms",
        "deadline_s": "deadline_ms",
        "circuit_cooldown_s": "circuit_cooldown_ms",
        "shutdown_timeout_s": "shutdown_timeout_ms",
    }
    secret_fields: ClassVar[frozenset[str]] = frozenset({"api_key"})

    # -- the endpoint --------------------------------------------------------------------------------
    model: str | None = Field(None, description="Judge model name; setting it enables the judge.")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint (default: `OPENAI_BASE_URL`, then OpenAI).")
    api_key: SecretStr | None = Field(None, description="API key (default: `OPENAI_API_KEY`).")
    timeout_ms: int = Field(
        30_000, gt=0, le=600_000, description="Milliseconds per HTTP request, connect to last byte."
    )
    max_response_bytes: int = Field(
        DEFAULT_MAX_RESPONSE_BYTES, ge=MIN_RESPONSE_BYTES, le=MAX_RESPONSE_BYTES_LIMIT,
        description="Largest answer body read (decoded); a larger one is refused (`error`) and counted.",
    )
    max_retries: int = Field(2, ge=0, le=10, description="Retries of 408/409/429/5xx and connection errors.")
    deadline_ms: int | None = Field(
        None, gt=0, le=3_600_000,
        description="Longest one judgment may take, all included (connect, send, full answers, retries); "
        "then `timeout`. Default: twice `timeout_ms`.",
    )
    max_output_tokens: int | None = Field(
        None, ge=16, le=100_000, description="`max_tokens` sent with each request; also bounds budget reservations."
    )
    separate_reason_call: bool = Field(False, description="Mastra's two requests per run instead of one.")
    # -- what is sent --------------------------------------------------------------------------------
    tools: tuple[str, ...] | None = Field(None, description="Tool reference by name (comma-separated).")
    tools_file: str | None = Field(None, description="JSON or YAML list of `{name, description}` tools.")
    include_arguments: bool = Field(False, description="Send tool-call arguments (after redaction, truncated).")
    include_results: bool = Field(False, description="Send tool results (after redaction, truncated).")
    redact: bool = Field(True, description="Apply the built-in redactors to everything sent.")
    max_text_chars: int = Field(4000, ge=100, le=1_000_000, description="Characters sent per text (request, answer).")
    max_argument_chars: int = Field(1000, ge=50, le=1_000_000, description="Characters sent per argument/result.")
    # -- sampling ------------------------------------------------------------------------------------
    ratio: float = Field(0.05, ge=0.0, le=1.0, description="Share of traces judged (deterministic on the trace id).")
    always_when_code_fails: bool = Field(True, description="Judge every run the code scorer failed.")
    always_when_new_sequence: bool = Field(True, description="Judge runs with a tool sequence not seen yet.")
    always_when_flagged: bool = Field(True, description="Honour the `toolscore.judge` attribute/baggage flag.")
    sequence_memory: int = Field(10_000, ge=1, le=10_000_000, description="Tool sequences remembered (LRU).")
    max_per_minute: int | None = Field(60, ge=1, le=100_000, description="Judgments started per rolling minute.")
    max_tokens_per_hour: int | None = Field(
        200_000, ge=1, le=10_000_000_000, description="Judge tokens (input+output) per rolling hour."
    )
    # -- execution -----------------------------------------------------------------------------------
    workers: int = Field(4, ge=1, le=256, description="Worker threads calling the judge.")
    queue_size: int = Field(1_000, ge=1, le=1_000_000, description="Runs waiting for a worker; overflow is counted.")
    failure_threshold: int = Field(5, ge=1, le=1_000, description="Consecutive failures that open the circuit.")
    circuit_cooldown_ms: int = Field(30_000, gt=0, le=86_400_000, description="How long the circuit stays open.")
    shutdown_timeout_ms: int = Field(10_000, ge=0, le=3_600_000, description="How long shutdown drains the queue.")
    # -- what is written -----------------------------------------------------------------------------
    pass_threshold: float = Field(1.0, ge=0.0, le=1.0, description="Score at or above which the label is `pass`.")
    carrier_span: bool = Field(True, description="Write the `evaluate tool_call_accuracy_llm` span.")
    max_span_evaluations: int = Field(32, ge=0, le=4096, description="Per-call verdicts written on the carrier span.")

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str | None) -> str | None:
        return check_base_url(value) if value else value

    @property
    def enabled(self) -> bool:
        return bool(self.model and self.model.strip())

    @classmethod
    def parse_env(cls, name: str, text: str) -> Any:
        if name in _LIMITS and text.lower() in ("none", "unlimited", "off"):
            return None  # lifts the limit
        if name == "tools":
            return tuple(p.strip() for p in text.split(",") if p.strip())
        return super().parse_env(name, text)

    @classmethod
    def when_ignored(cls, name: str) -> str:
        if name == "base_url":
            return "the judge is off (a default endpoint would receive the runs and the key)"
        return super().when_ignored(name)

    @classmethod
    def check_env(cls, name: str, value: Any) -> None:
        if name == "tools_file" and value:
            load_tools_file(value)  # ConfigError (a ValueError) names the file: the variable is then ignored

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, /, **overrides: Any) -> JudgeSettings:
        """Settings from ``OTEL_TOOLSCORE_JUDGE_*`` variables, overridden by explicit arguments."""
        env = os.environ if environ is None else environ
        settings = cls.build(env, overrides, what="judge settings")
        bad_url = env.get(cls.env_name("base_url"), "").strip()
        if settings.enabled and bad_url and settings.base_url is None:
            # The variable was ignored: any default endpoint would receive the runs and the key.
            if "model" in overrides:
                raise ConfigError(f"{cls.env_name('base_url')} is not a usable URL: the judge cannot start")
            return settings.model_copy(update={"model": None})
        return settings


_LIMITS = frozenset({"max_output_tokens", "max_per_minute", "max_tokens_per_hour"})


def load_tools_file(path: str | Path) -> list[dict[str, Any]]:
    """A tool reference from a JSON or YAML file: a list of ``{name, description}`` (or a ``tools`` key)."""
    p = Path(path)
    text = read_config_text(p, "judge tools file", error=ConfigError)
    try:
        if p.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data: Any = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as exc:
        raise ConfigError(f"judge tools file {p} is not valid: {exc}") from None
    if isinstance(data, Mapping):
        data = data.get("tools")
    if not isinstance(data, list) or not all(isinstance(t, (Mapping, str)) for t in data):
        raise ConfigError(f"judge tools file {p} must hold a list of tools (or a mapping with a `tools` list)")
    return [dict(t) if isinstance(t, Mapping) else {"name": t} for t in data]
