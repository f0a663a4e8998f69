"""``otel-toolscore score FILE...``: offline code scoring of every run (backfills, CI gates).

The expectation for a run is the first that applies: a rule of ``--rules`` matching the run (agent
name / query regex / root attributes, see :mod:`otel_toolscore.online.expectations`), else the one
given by ``--expected-tool`` / ``--expected-order`` / ``--strict``. Runs with no expectation are
listed as not scored. ``--judge`` also runs the LLM scorer over the runs (:mod:`otel_toolscore.offline.judging`:
the online judge's settings, sampling, rate limit and token budget; ``--dry-run`` prices it instead). Exit status: 0; 1 when ``--fail-under`` is given and the mean score of the
scored runs is below it (with a 0/1 scorer the mean *is* the pass rate), or when nothing was scored;
2 on bad input (a missing file, a directory, a file with no OTLP data, unreadable items) or a usage
error (``--fail-under`` outside 0..1, ``--expected-tool`` with ``--expected-order``, an empty order).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..config import ConfigError
from ..model import AgentRun
from ..offline.results import JUDGE_COLUMNS, SCORE_COLUMNS, FileRunScore, summarise
from ..online.expectations import Expectation, RulesError, load_rules, resolve
from .arguments import tool_order, unit_score
from .extract_cmd import InputError, add_parse_limit_argument, finish, read_runs
from .judge_options import add_judge_arguments, build_judge
from .output import add_format_argument, chosen_format, write_csv, write_jsonl
from .progress import Progress, add_progress_arguments

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
    which.add_argument("--expected-order", type=tool_order,
                       help="comma-separated tools in the order they should be called")
    p.add_argument("--strict", action="store_true", help="strict mode (exactly that tool / exactly that order)")
    p.add_argument("--rules", help="YAML/TOML expectation rules (matched per run before the flags above)")
    add_format_argument(p)
    p.add_argument("--fail-under", type=unit_score, default=None, metavar="SCORE",
                   help="exit 1 when the mean score of the scored runs is below SCORE (0..1)")
    p.add_argument("--include-framework-calls", action="store_true",
                   help="count handoffs / output tools as calls")
    p.add_argument("--no-content", action="store_true", help="read names only (drop arguments and text)")
    p.add_argument("--max-chars", type=int, default=8192, help=argparse.SUPPRESS)
    add_parse_limit_argument(p)
    add_progress_arguments(p)
    p.add_argument("--report", metavar="FILE.html",
                   help="also write a self-contained HTML report (pass rates, score distributions, failing "
                        "tool sequences, judge verdicts)")
    p.add_argument("--judge", action="store_true",
                   help="also judge the runs with the LLM scorer (any OpenAI-compatible endpoint; see below)")
    add_judge_arguments(p, sampling=True)
    p.set_defaults(func=run)


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


def _json_document(scored: list[FileRunScore], summary: dict[str, Any], judge: dict[str, Any] | None) -> dict[str, Any]:
    results = []
    for item in scored:
        res = item.result
        doc: dict[str, Any] = {
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
        }
        if judge is not None:
            j = item.judgment
            doc["judge"] = None if j is None else {
                "outcome": j.outcome,
                "sampled_by": j.sampled_by,
                "score": j.result.score if j.result is not None else None,
                "label": j.label,
                "reason": j.result.reason if j.result is not None else j.message,
                "result": j.result.model_dump(mode="json", by_alias=True) if j.result is not None else None,
            }
        results.append(doc)
    out: dict[str, Any] = {"results": results, "summary": summary}
    if judge is not None:
        out["judge"] = judge
    return out


def _judge_cell(item: FileRunScore) -> str:
    j = item.judgment
    if j is None:
        return "-"
    if j.result is not None:
        return f"{j.result.score:.2f} {j.label}"
    return j.outcome


def _print_table(scored: list[FileRunScore], summary: dict[str, Any], judge: dict[str, Any] | None) -> None:
    width = max([4, *(len(i.file_name) for i in scored)])
    jcol = f"  {'judge':<14}" if judge is not None else ""
    print(f"{'score':>5}  {'file':<{width}}  {'run':<16}  {'agent':<20}{jcol}  result")
    for item in scored:
        res = item.result
        label = res.summary() if res is not None else "not scored: no expectation matched"
        score = f"{res.score:.2f}" if res is not None else "-"
        jcell = f"  {_judge_cell(item):<14}" if judge is not None else ""
        print(f"{score:>5}  {item.file_name:<{width}}  {item.run.run_id:<16}  {item.run.agent_name or '-':<20}{jcell}  {label}")
        if item.judgment is not None and item.judgment.result is not None:
            print(f"{'':>5}  {'':<{width}}  judge: {item.judgment.result.reason}")
    mean = "-" if summary["mean"] is None else f"{summary['mean']:.3f}"
    rate = "-" if summary["pass_rate"] is None else f"{summary['pass_rate']:.1%}"
    print(f"\n{summary['count']} scored of {summary['runs']} run(s); mean {mean}; pass rate {rate}")
    for name, st in summary["per_agent"].items():
        print(f"  {name}: {st['count']} run(s), mean {st['mean']:.3f}, pass rate {st['pass_rate']:.1%}")
    if judge is not None:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(judge["outcomes"].items())) or "none"
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(judge["not_judged"].items())) or "none"
        mean_j = "-" if judge["mean"] is None else f"{judge['mean']:.3f}"
        print(f"judge {judge['model']}: {judge['judged']} judged (outcomes: {outcomes}); not judged: {skipped}; "
              f"mean {mean_j}; {judge['input_tokens']:,} input + {judge['output_tokens']:,} output tokens")
        if judge["agreement"]["compared"]:
            a = judge["agreement"]
            print(f"  judge and code scorer agree on {a['agree']} of {a['compared']} run(s) scored by both")


def _judge_summary(scored: list[FileRunScore], totals: Any) -> dict[str, Any]:
    judged = [i for i in scored if i.judgment is not None and i.judgment.result is not None]
    scores = [i.judgment.result.score for i in judged if i.judgment is not None and i.judgment.result is not None]
    both = [i for i in judged if i.result is not None]
    agree = sum(1 for i in both if i.judgment is not None and (i.judgment.label == i.label))
    return {
        **totals.to_dict(),
        "judged": len(judged),
        "mean": round(sum(scores) / len(scores), 4) if scores else None,
        "agreement": {"compared": len(both), "agree": agree},
    }


def _print_estimate(estimate: Any, args: argparse.Namespace, fmt: str, model: str) -> None:
    doc = estimate.to_dict(args.price_input, args.price_output)
    if fmt != "table":
        json.dump({"dry_run": {"model": model, **doc}}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(doc["not_judged"].items())) or "none"
    print(f"dry run, nothing sent: {doc['judgments']} run(s) would be judged by {model} "
          f"({doc['requests']} request(s) before any corrective retry); not judged: {skipped}")
    print(f"  estimated tokens: {doc['input_tokens']:,} input + {doc['output_tokens']:,} output = {doc['tokens']:,}; "
          f"worst case {doc['worst_case_tokens']:,} (every answer retried once)")
    if doc["cost"] is not None:
        print(f"  estimated cost: {doc['cost']:.4f} (at the given prices per million tokens)")
    if doc["max_tokens_per_hour"] is not None:
        verdict = "fits in" if doc["fits_budget"] else "exceeds"
        print(f"  the worst case {verdict} the token budget of {doc['max_tokens_per_hour']:,} per hour "
              "(judgments beyond it are skipped as `budget`)")
    if doc["minimum_minutes"]:
        print(f"  the rate limit of {doc['max_per_minute']} per minute makes it take at least {doc['minimum_minutes']:g} min")


def _judge(args: argparse.Namespace, scored: list[FileRunScore], progress: Progress, fmt: str) -> tuple[int, dict[str, Any] | None]:
    """Judge ``scored`` in place (or print the dry-run estimate); (exit status, judge summary)."""
    from ..offline.judging import estimate, judge_runs, plan_judgments

    try:
        judge, settings = build_judge(args)
    except (ConfigError, ValueError) as exc:
        print(f"otel-toolscore score: {exc}", file=sys.stderr)
        return 2, None
    try:
        plan = plan_judgments(scored, judge.sampler, args.max_judgments)
        if args.dry_run:
            _print_estimate(estimate(scored, plan, judge), args, fmt, judge.model)
            return 0, None
        progress.judging(len(plan.selected))
        failed = 0
        tokens = 0

        def done(item: FileRunScore) -> None:
            nonlocal failed, tokens
            j = item.judgment
            if j is not None and j.result is None:
                failed += 1
            if j is not None and j.result is not None:
                tokens += j.result.usage.total_tokens
            progress.judged(tokens, failed)

        try:
            totals = judge_runs(scored, plan, judge, concurrency=settings.workers, on_done=done)
        finally:
            progress.close()
        return 0, _judge_summary(scored, totals)
    finally:
        judge.shutdown(timeout_seconds=0)


def run(args: argparse.Namespace) -> int:
    rules: list[Expectation] = []
    if args.rules:
        try:
            rules = load_rules(args.rules)
        except RulesError as exc:
            print(f"otel-toolscore score: {exc}", file=sys.stderr)
            return 2
    default = _default_expectation(args)
    if default is None and not rules and not args.judge:
        print("otel-toolscore score: give --expected-tool, --expected-order or --rules (or --judge)", file=sys.stderr)
        return 2
    if args.dry_run and not args.judge:
        print("otel-toolscore score: --dry-run prices the judge: give --judge too", file=sys.stderr)
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
    judge: dict[str, Any] | None = None
    if args.judge:
        status, judge = _judge(args, scored, progress, fmt)
        if status or args.dry_run:
            return status or finish(report, "score")
    if fmt == "json":
        json.dump(_json_document(scored, summary, judge), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif fmt == "jsonl":
        write_jsonl(item.row(judged=judge is not None) for item in scored)
    elif fmt == "csv":
        columns = (*SCORE_COLUMNS, *JUDGE_COLUMNS) if judge is not None else SCORE_COLUMNS
        write_csv((item.row(judged=judge is not None) for item in scored), columns)
    else:
        _print_table(scored, summary, judge)
    if args.report:
        from ..offline.report import write_report

        try:
            write_report(args.report, scored, summary, files=args.files, judge=judge)
        except OSError as exc:
            print(f"otel-toolscore score: cannot write the report {args.report}: {exc.strerror or exc}", file=sys.stderr)
            return 2
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
