"""The judge's command-line options (``score --judge``, ``judge-check``) and the judge they build.

Settings come from the same ``OTEL_TOOLSCORE_JUDGE_*`` variables as online judging (model, endpoint,
key, sampling, rate limit, token budget, workers ...); the few flags here override them for one
command run. A bad variable or flag value exits 2 with the message naming it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

from ..judge import Judge, JudgeSettings
from ._arguments import bounded_float, positive_int
from ._probe import shown_url, unreachable

__all__ = ["add_judge_arguments", "build_judge", "judge_problem"]

#: Where the openai client sends requests when no endpoint is configured.
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Longest wait for the judge endpoint to accept a connection at start.
_PROBE_TIMEOUT_S = 5.0


def add_judge_arguments(parser: argparse.ArgumentParser, *, sampling: bool) -> argparse._ArgumentGroup:
    g = parser.add_argument_group(
        "LLM judge",
        "Endpoint, sampling, rate limit and token budget come from OTEL_TOOLSCORE_JUDGE_* (as online); "
        "these flags override them for this run.",
    )
    g.add_argument("--judge-model", metavar="MODEL",
                   help="judge model (default OTEL_TOOLSCORE_JUDGE_MODEL; required for judging)")
    g.add_argument("--judge-base-url", metavar="URL",
                   help="OpenAI-compatible endpoint (default OTEL_TOOLSCORE_JUDGE_BASE_URL, then OPENAI_BASE_URL)")
    if sampling:
        g.add_argument("--judge-ratio", type=float, metavar="R",
                       help="share of traces judged, 0..1 (default OTEL_TOOLSCORE_JUDGE_RATIO, 0.05); "
                            "failing runs and new tool sequences are judged whatever the ratio, as online")
    g.add_argument("--judge-concurrency", type=positive_int, metavar="N",
                   help="judgments in flight at once (default OTEL_TOOLSCORE_JUDGE_WORKERS, 4)")
    g.add_argument("--max-judgments", type=positive_int, metavar="N", help="judge at most N runs")
    g.add_argument("--dry-run", action="store_true",
                   help="send nothing: say how many runs would be judged and what it would cost in tokens")
    g.add_argument("--price-input", type=bounded_float(what="a price"), metavar="PRICE",
                   help="with --dry-run: price of a million input tokens, for a cost in money")
    g.add_argument("--price-output", type=bounded_float(what="a price"), metavar="PRICE",
                   help="with --dry-run: price of a million output tokens")
    return g


def build_judge(args: argparse.Namespace, **forced: Any) -> tuple[Judge, JudgeSettings]:
    """The judge of ``OTEL_TOOLSCORE_JUDGE_*`` with the flags (and ``forced`` settings) over them.

    Raises :class:`~otel_toolscore.settings.ConfigError` (a message naming the setting) on bad values
    or when no model is set."""
    overrides: dict[str, Any] = {}
    if args.judge_model:
        overrides["model"] = args.judge_model
    if args.judge_base_url:
        overrides["base_url"] = args.judge_base_url
    if getattr(args, "judge_ratio", None) is not None:
        overrides["ratio"] = args.judge_ratio
    if args.judge_concurrency is not None:
        overrides["workers"] = args.judge_concurrency
    overrides.update(forced)
    settings = JudgeSettings.from_env(**overrides)
    judge = Judge.from_settings(settings)
    return judge, settings


def judge_problem(settings: JudgeSettings, args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> str | None:
    """Why the judge cannot work, checked before any file is read and any token spent, naming the
    setting to change: no API key for an endpoint that needs one, or an endpoint that accepts no
    connection. ``None`` when it looks usable (nothing is sent to the endpoint)."""
    env = os.environ if environ is None else environ
    key_var = JudgeSettings.env_name("api_key")
    url_var = JudgeSettings.env_name("base_url")
    if getattr(args, "judge_base_url", None):
        base_url, source = str(args.judge_base_url), "--judge-base-url"
    elif settings.base_url:
        base_url, source = settings.base_url, url_var
    elif env.get("OPENAI_BASE_URL"):
        base_url, source = str(env["OPENAI_BASE_URL"]), "OPENAI_BASE_URL"
    else:
        base_url, source = OPENAI_DEFAULT_BASE_URL, ""
    if not source and settings.api_key is None and not env.get("OPENAI_API_KEY"):
        return (f"the judge has no API key: set {key_var} (or OPENAI_API_KEY), or point {url_var} "
                "(--judge-base-url) at an OpenAI-compatible server that needs none")
    reason = unreachable(base_url, timeout_s=min(_PROBE_TIMEOUT_S, settings.timeout_ms / 1000))
    if reason is None:
        return None
    where = f" ({source})" if source else f" (OpenAI's endpoint: set {url_var} or --judge-base-url for another)"
    return f"the judge endpoint {shown_url(base_url)}{where} is not reachable: {reason}"
