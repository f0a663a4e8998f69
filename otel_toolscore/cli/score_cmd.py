"""``otel-toolscore score FILE...``: offline code scoring of every run (backfills, CI gates).

The expectation for a run is the first that applies: a rule of ``--rules`` matching the run (agent
name / query regex / root attributes, see :mod:`otel_toolscore.online.expectations`), else the one
given by ``--expected-tool`` / ``--expected-order`` / ``--strict``. Runs with no expectation are
listed as not scored. Exit status: 0; 1 when ``--fail-under`` is given and the mean score of the
scored runs is below it (with a 0/1 scorer the mean *is* the pass rate), or when nothing was scored;
2 on bad input (a missing file, a directory, a file with no OTLP data, unreadable items) or a usage
error (``--fail-under`` outside 0..1, ``--expected-tool`` with ``--expected-order``, an empty order).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..model import AgentRun
from ..online.expectations import Expectation, RulesError, load_rules, resolve
from ..scorers.code import CodeScoreResult, ToolCallAccuracyCodeScorer
from .extract_cmd import InputError, finish, read_runs

__all__ = ["add_parser", "score_runs"]


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "score",
        help="score every run in OTLP files with the code tool-call-accuracy scorer",
        description="Score each agent run found in the files against an expected tool or tool order.",
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--expected-tool", help="the tool each run should call")
    which.add_argument("--expected-order", type=_order,
                       help="comma-separated tools in the order they should be called")
    p.add_argument("--strict", action="store_true", help="strict mode (exactly that tool / exactly that order)")
    p.add_argument("--rules", help="YAML/TOML expectation rules (matched per run before the flags above)")
    p.add_argument("--format", choices=("table", "json"), default=None,
                   help="output format (default: table on a terminal, JSON otherwise)")
    p.add_argument("--fail-under", type=_unit_score, default=None, metavar="SCORE",
                   help="exit 1 when the mean score of the scored runs is below SCORE (0..1)")
    p.add_argument("--include-framework-calls", action="store_true",
                   help="count handoffs / output tools as calls")
    p.add_argument("--no-content", action="store_true", help="read names only (drop arguments and text)")
    p.add_argument("--max-chars", type=int, default=8192, help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _order(text: str) -> list[str]:
    order = [s.strip() for s in text.split(",") if s.strip()]
    if not order:
        raise argparse.ArgumentTypeError("an order needs at least one tool name")
    return order


def _unit_score(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is outside 0..1 (scores are between 0 and 1)")
    return value


def _default_expectation(args: argparse.Namespace) -> Expectation | None:
    order = args.expected_order
    if not args.expected_tool and not order:
        return None
    return Expectation(
        name="command line",
        expected_tool=args.expected_tool or None,
        expected_tool_order=tuple(order) if order else None,
        strict_mode=args.strict,
    )


def score_runs(
    runs: list[AgentRun],
    rules: list[Expectation],
    default: Expectation | None,
    *,
    include_framework_calls: bool = False,
) -> list[tuple[AgentRun, Expectation | None, CodeScoreResult | None]]:
    out: list[tuple[AgentRun, Expectation | None, CodeScoreResult | None]] = []
    for run in runs:
        exp = resolve(run, rules, default=default)
        if exp is None:
            out.append((run, None, None))
            continue
        scorer = exp.scorer
        if include_framework_calls:  # a scorer of our own: the rule's cached one stays as configured
            scorer = ToolCallAccuracyCodeScorer(
                exp.expected_tool,
                exp.strict_mode,
                exp.expected_tool_order,
                match=exp.match,
                expected_arguments=exp.expected_arguments,
                args_match=exp.args_match,
                include_framework_calls=True,
            )
        out.append((run, exp, scorer.run(run)))
    return out


def _summary(scored: list[tuple[AgentRun, Expectation | None, CodeScoreResult | None]]) -> dict[str, Any]:
    per_agent: dict[str, list[float]] = defaultdict(list)
    all_scores: list[float] = []
    for run, _, res in scored:
        if res is not None:
            per_agent[run.agent_name or "(unnamed)"].append(res.score)
            all_scores.append(res.score)

    def stats(scores: list[float]) -> dict[str, Any]:
        n = len(scores)
        return {
            "count": n,
            "mean": round(sum(scores) / n, 4) if n else None,
            "pass_rate": round(sum(1 for s in scores if s >= 1.0) / n, 4) if n else None,
        }

    return {
        "runs": len(scored),
        "not_scored": sum(1 for _, _, r in scored if r is None),
        **stats(all_scores),
        "per_agent": {name: stats(v) for name, v in sorted(per_agent.items())},
    }


def run(args: argparse.Namespace) -> int:
    rules: list[Expectation] = []
    if args.rules:
        try:
            rules = load_rules(args.rules)
        except RulesError as exc:
            print(f"otel-toolscore score: {exc}", file=sys.stderr)
            return 2
    default = _default_expectation(args)
    if default is None and not rules:
        print("otel-toolscore score: give --expected-tool, --expected-order or --rules", file=sys.stderr)
        return 2
    try:
        runs, report = read_runs(args)
    except InputError as exc:
        print(f"otel-toolscore score: {exc}", file=sys.stderr)
        return 2
    scored = score_runs(runs, rules, default, include_framework_calls=args.include_framework_calls)
    summary = _summary(scored)
    fmt = args.format or ("table" if sys.stdout.isatty() else "json")
    if fmt == "json":
        doc = {
            "results": [
                {
                    "file": report.trace_sources.get(run.trace_id or ""),
                    "run_id": run.run_id,
                    "trace_id": run.trace_id,
                    "agent_name": run.agent_name,
                    "expectation": exp.name if exp is not None else None,
                    "score": res.score if res is not None else None,
                    "label": res.label if res is not None else "not_scored",
                    "explanation": res.summary() if res is not None else "no expectation matched this run",
                    "result": res.model_dump(mode="json", by_alias=True) if res is not None else None,
                }
                for run, exp, res in scored
            ],
            "summary": summary,
        }
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        files = [Path(report.trace_sources.get(run.trace_id or "", "-")).name for run, _, _ in scored]
        width = max([4, *(len(f) for f in files)])
        print(f"{'score':>5}  {'file':<{width}}  {'run':<16}  {'agent':<20}  result")
        for (run, _, res), name in zip(scored, files):
            label = res.summary() if res is not None else "not scored: no expectation matched"
            score = f"{res.score:.2f}" if res is not None else "-"
            print(f"{score:>5}  {name:<{width}}  {run.run_id:<16}  {run.agent_name or '-':<20}  {label}")
        mean = "-" if summary["mean"] is None else f"{summary['mean']:.3f}"
        rate = "-" if summary["pass_rate"] is None else f"{summary['pass_rate']:.1%}"
        print(f"\n{summary['count']} scored of {summary['runs']} run(s); mean {mean}; pass rate {rate}")
        for name, st in summary["per_agent"].items():
            print(f"  {name}: {st['count']} run(s), mean {st['mean']:.3f}, pass rate {st['pass_rate']:.1%}")
    status = finish(report, "score")
    if status:
        return status
    if args.fail_under is not None:
        if summary["mean"] is None:
            print("otel-toolscore score: no run was scored", file=sys.stderr)
            return 1
        if summary["mean"] < args.fail_under:
            return 1
    return 0
