"""Settings of the online LLM judge, from ``OTEL_TOOLSCORE_JUDGE_*`` environment variables.

Enabling the judge takes three variables: ``OTEL_TOOLSCORE_JUDGE_MODEL``,
``OTEL_TOOLSCORE_JUDGE_BASE_URL`` (or ``OPENAI_BASE_URL``; omit for OpenAI itself) and
``OTEL_TOOLSCORE_JUDGE_API_KEY`` (or ``OPENAI_API_KEY``). Everything else has a production default.
As for the processor's settings, an unknown ``OTEL_TOOLSCORE_JUDGE_*`` variable or a value that cannot
be used logs a warning naming the variable and is ignored. One exception: a bad
``OTEL_TOOLSCORE_JUDGE_BASE_URL`` turns the judge off (see :func:`~otel_toolscore.judge.judge_from_env`)
rather than falling back to another endpoint, which would send the runs and the key elsewhere.
:func:`scorer_from_settings` and :func:`sampler_from_settings` build what the settings describe.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from ..envconfig import ConfigError, EnvSettings, SecretStr, setting
from ..files import read_config_text
from ..http_limits import DEFAULT_MAX_RESPONSE_BYTES, MAX_RESPONSE_BYTES_LIMIT, MIN_RESPONSE_BYTES
from ..scorers.llm import ToolCallAccuracyLLMScorer, check_base_url, create_tool_call_accuracy_scorer_llm
from ..settings import ENV_PREFIX
from ._sampler import JudgeSampler

__all__ = ["JUDGE_ENV_PREFIX", "JudgeSettings", "load_tools_file", "sampler_from_settings", "scorer_from_settings"]

JUDGE_ENV_PREFIX = ENV_PREFIX + "JUDGE_"


def _checked_base_url(value: str) -> str:
    return check_base_url(value) if value else value


class JudgeSettings(EnvSettings):
    """Every judge setting; ``OTEL_TOOLSCORE_JUDGE_<FIELD>`` in the environment."""

    env_prefix: ClassVar[str] = JUDGE_ENV_PREFIX
    renamed_to_ms: ClassVar[Mapping[str, str]] = {
        "timeout_s": "timeout_ms",
        "deadline_s": "deadline_ms",
        "circuit_cooldown_s": "circuit_cooldown_ms",
        "shutdown_timeout_s": "shutdown_timeout_ms",
    }
    secret_fields: ClassVar[frozenset[str]] = frozenset({"api_key"})

    # -- the endpoint --------------------------------------------------------------------------------
    model: str | None = setting(None, "Judge model name; setting it enables the judge.")
    base_url: str | None = setting(
        None, "OpenAI-compatible endpoint (default: `OPENAI_BASE_URL`, then OpenAI).", check=_checked_base_url
    )
    api_key: SecretStr | None = setting(None, "API key (default: `OPENAI_API_KEY`).")
    timeout_ms: int = setting(30_000, "Milliseconds per HTTP request, connect to last byte.", gt=0, le=600_000)
    max_response_bytes: int = setting(
        DEFAULT_MAX_RESPONSE_BYTES,
        "Largest answer body read (decoded); a larger one is refused (`error`) and counted.",
        ge=MIN_RESPONSE_BYTES,
        le=MAX_RESPONSE_BYTES_LIMIT,
    )
    max_retries: int = setting(2, "Retries of 408/409/429/5xx and connection errors.", ge=0, le=10)
    deadline_ms: int | None = setting(
        None,
        "Longest one judgment may take, all included (connect, send, full answers, retries); "
        "then `timeout`. Default: twice `timeout_ms`.",
        gt=0,
        le=3_600_000,
    )
    max_output_tokens: int | None = setting(
        None, "`max_tokens` sent with each request; also bounds budget reservations.", ge=16, le=100_000
    )
    separate_reason_call: bool = setting(False, "Mastra's two requests per run instead of one.")
    # -- what is sent --------------------------------------------------------------------------------
    tools: tuple[str, ...] | None = setting(None, "Tool reference by name (comma-separated).")
    tools_file: str | None = setting(None, "JSON or YAML list of `{name, description}` tools.")
    include_arguments: bool = setting(False, "Send tool-call arguments (after redaction, truncated).")
    include_results: bool = setting(False, "Send tool results (after redaction, truncated).")
    redact: bool = setting(True, "Apply the built-in redactors to everything sent.")
    max_text_chars: int = setting(4000, "Characters sent per text (request, answer).", ge=100, le=1_000_000)
    max_argument_chars: int = setting(1000, "Characters sent per argument/result.", ge=50, le=1_000_000)
    # -- sampling ------------------------------------------------------------------------------------
    ratio: float = setting(0.05, "Share of traces judged (deterministic on the trace id).", ge=0.0, le=1.0)
    always_when_code_fails: bool = setting(True, "Judge every run the code scorer failed.")
    always_when_new_sequence: bool = setting(True, "Judge runs with a tool sequence not seen yet.")
    always_when_flagged: bool = setting(True, "Honour the `toolscore.judge` attribute/baggage flag.")
    sequence_memory: int = setting(10_000, "Tool sequences remembered (LRU).", ge=1, le=10_000_000)
    max_per_minute: int | None = setting(60, "Judgments started per rolling minute.", ge=1, le=100_000)
    max_tokens_per_hour: int | None = setting(
        200_000, "Judge tokens (input+output) per rolling hour.", ge=1, le=10_000_000_000
    )
    # -- execution -----------------------------------------------------------------------------------
    workers: int = setting(4, "Worker threads calling the judge.", ge=1, le=256)
    queue_size: int = setting(1_000, "Runs waiting for a worker; overflow is counted.", ge=1, le=1_000_000)
    failure_threshold: int = setting(5, "Consecutive failures that open the circuit.", ge=1, le=1_000)
    circuit_cooldown_ms: int = setting(30_000, "How long the circuit stays open.", gt=0, le=86_400_000)
    shutdown_timeout_ms: int = setting(10_000, "How long shutdown drains the queue.", ge=0, le=3_600_000)
    # -- what is written -----------------------------------------------------------------------------
    pass_threshold: float = setting(1.0, "Score at or above which the label is `pass`.", ge=0.0, le=1.0)
    carrier_span: bool = setting(True, "Write the `evaluate tool_call_accuracy_llm` span.")
    max_span_evaluations: int = setting(32, "Per-call verdicts written on the carrier span.", ge=0, le=4096)

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


def scorer_from_settings(
    settings: JudgeSettings,
    *,
    available_tools: Sequence[Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> ToolCallAccuracyLLMScorer:
    """The LLM scorer the settings describe; ``settings.model`` must be set. The endpoint and key
    fall back to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` in ``environ`` (default: the process's)."""
    if not settings.enabled:
        raise ConfigError(f"the judge needs a model: set {JudgeSettings.env_name('model')}")
    assert settings.model is not None
    env = os.environ if environ is None else environ
    tools: list[Any] = list(available_tools or ())
    if settings.tools:
        tools.extend(settings.tools)
    if settings.tools_file:
        tools.extend(load_tools_file(settings.tools_file))
    api_key = settings.api_key.get_secret_value() if settings.api_key is not None else env.get("OPENAI_API_KEY")
    base_url = settings.base_url or env.get("OPENAI_BASE_URL") or None
    if base_url and not settings.base_url:
        try:
            check_base_url(base_url)
        except ValueError as exc:
            raise ConfigError(f"invalid OPENAI_BASE_URL (used as the judge endpoint): {exc}") from None
    request_options: dict[str, Any] = {}
    if settings.max_output_tokens is not None:
        request_options["max_tokens"] = settings.max_output_tokens
    return create_tool_call_accuracy_scorer_llm(
        settings.model,
        tools,
        base_url=base_url,
        api_key=api_key,
        timeout=settings.timeout_ms / 1000,
        max_retries=settings.max_retries,
        deadline_s=None if settings.deadline_ms is None else settings.deadline_ms / 1000,
        include_arguments=settings.include_arguments,
        include_results=settings.include_results,
        redact=settings.redact,
        separate_reason_call=settings.separate_reason_call,
        max_text_chars=settings.max_text_chars,
        max_argument_chars=settings.max_argument_chars,
        request_options=request_options,
        max_response_bytes=settings.max_response_bytes,
    )


def sampler_from_settings(settings: JudgeSettings) -> JudgeSampler:
    """The sampler (ratio, priorities, rate limit, token budget) the settings describe."""
    return JudgeSampler(
        settings.ratio,
        always_when_code_fails=settings.always_when_code_fails,
        always_when_new_sequence=settings.always_when_new_sequence,
        always_when_flagged=settings.always_when_flagged,
        max_per_minute=settings.max_per_minute,
        max_tokens_per_hour=settings.max_tokens_per_hour,
        sequence_memory=settings.sequence_memory,
    )
