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
from typing import Any

from ..model import AgentRun
from ..online.expectations import Expectation, RulesError, load_rules, resolve
from .extract_cmd import InputError, finish, read_runs
from .output import add_format_argument, chosen_format, write_csv, write_jsonl
from .progress import Progress, add_progress_arguments
from .results import SCORE_COLUMNS, FileRunScore, summarise

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
    add_format_argument(p)
    p.add_argument("--fail-under", type=_unit_score, default=None, metavar="SCORE",
                   help="exit 1 when the mean score of the scored runs is below SCORE (0..1)")
    p.add_argument("--include-framework-calls", action="store_true",
                   help="count handoffs / output tools as calls")
    p.add_argument("--no-content", action="store_true", help="read names only (drop arguments and text)")
    p.add_argument("--max-chars", type=int, default=8192, help=argparse.SUPPRESS)
    add_progress_arguments(p)
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
    files: dict[str, str] | None = None,
) -> list[FileRunScore]:
    """Each run with the first expectation that applies and its code score (``None``: no expectation).

    ``files``: trace id -> the file the trace was read from (for reports)."""
    out: list[FileRunScore] = []
    for run in runs:
        file = (files or {}).get(run.trace_id or "")
        exp = resolve(run, rules, default=default)
        if exp is None:
            out.append(FileRunScore(run, file, None, None))
            continue
        scorer = exp.scorer_with_framework_calls if include_framework_calls else exp.scorer
        out.append(FileRunScore(run, file, exp, scorer.run(run)))
    return out


def _json_document(scored: list[FileRunScore], summary: dict[str, Any]) -> dict[str, Any]:
    results = []
    for item in scored:
        res = item.result
        results.append({
            "file": item.file,
            "run_id": item.run.run_id,
            "trace_id": item.run.trace_id,
            "agent_name": item.run.agent_name,
            "expectation": item.expectation_name,
            "score": res.score if res is not None else None,
            "label": item.label,
            "outcome": item.outcome,
            "explanation": item.explanation,
            "result": res.model_dump(mode="json", by_alias=True) if res is not None else None,
        })
    return {"results": results, "summary": summary}


def _print_table(scored: list[FileRunScore], summary: dict[str, Any]) -> None:
    width = max([4, *(len(i.file_name) for i in scored)])
    print(f"{'score':>5}  {'file':<{width}}  {'run':<16}  {'agent':<20}  result")
    for item in scored:
        res = item.result
        label = res.summary() if res is not None else "not scored: no expectation matched"
        score = f"{res.score:.2f}" if res is not None else "-"
        print(f"{score:>5}  {item.file_name:<{width}}  {item.run.run_id:<16}  {item.run.agent_name or '-':<20}  {label}")
    mean = "-" if summary["mean"] is None else f"{summary['mean']:.3f}"
    rate = "-" if summary["pass_rate"] is None else f"{summary['pass_rate']:.1%}"
    print(f"\n{summary['count']} scored of {summary['runs']} run(s); mean {mean}; pass rate {rate}")
    for name, st in summary["per_agent"].items():
        print(f"  {name}: {st['count']} run(s), mean {st['mean']:.3f}, pass rate {st['pass_rate']:.1%}")


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
    progress = Progress.from_args(args)
    try:
        runs, report = read_runs(args, progress)
    except InputError as exc:
        print(f"otel-toolscore score: {exc}", file=sys.stderr)
        return 2
    scored = score_runs(runs, rules, default, include_framework_calls=args.include_framework_calls,
                        files=report.trace_sources)
    summary = summarise(scored)
    fmt = chosen_format(args)
    if fmt == "json":
        json.dump(_json_document(scored, summary), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif fmt == "jsonl":
        write_jsonl(item.row() for item in scored)
    elif fmt == "csv":
        write_csv((item.row() for item in scored), SCORE_COLUMNS)
    else:
        _print_table(scored, summary)
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
