"""The judge's command-line options (``score --judge``, ``judge-check``) and the judge they build.

Settings come from the same ``OTEL_TOOLSCORE_JUDGE_*`` variables as online judging (model, endpoint,
key, sampling, rate limit, token budget, workers ...); the few flags here override them for one
command run. A bad variable or flag value exits 2 with the message naming it.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..online.judge import Judge
from ..online.judge_settings import JudgeSettings
from .arguments import bounded_float, positive_int

__all__ = ["add_judge_arguments", "build_judge"]


def add_judge_arguments(parser: argparse.ArgumentParser, *, sampling: bool) -> argparse._ArgumentGroup:
    g = parser.add_argument_group(
        "LLM judge",
        "Endpoint, sampling, rate limit and token budget come from OTEL_TOOLSCORE_JUDGE_* (as online); "
        "these flags override them for this run.",
    )
    g.add_argument("--judge-model", metavar="MODEL", help="judge model (default OTEL_TOOLSCORE_JUDGE_MODEL)")
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

    Raises :class:`~otel_toolscore.config.ConfigError` (a message naming the setting) on bad values
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
