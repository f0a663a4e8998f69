"""``otel-toolscore score FILE...``: offline code scoring of every run (backfills, CI gates).

The expectation for a run is the first that applies: a rule of the rules file matching the run
(agent name / query regex / root attributes, see :mod:`otel_toolscore.expectations`), else
the default expectation. Both come from the processor's settings — ``OTEL_TOOLSCORE_RULES``,
``OTEL_TOOLSCORE_EXPECTED_TOOL[_ORDER]``, ``OTEL_TOOLSCORE_STRICT_MODE``,
``OTEL_TOOLSCORE_INCLUDE_FRAMEWORK_CALLS`` — with ``--rules`` / ``--expected-tool`` /
``--expected-order`` / ``--strict`` / ``--include-framework-calls`` over them. Runs with no expectation
are listed as not scored. ``--judge`` also runs the LLM scorer over the runs
(:mod:`otel_toolscore.offline._judging`: the online judge's settings, sampling, rate limit and token
budget; ``--dry-run`` prices it instead).

Everything that can be checked before work is: the rules, the flags, the report's path, and with
``--judge`` that the judge can be built, has a key and accepts a connection — so no file is read and
no token spent on a run that would fail at its end.

Exit status: 0; 1 when a gate fails — ``--fail-under`` (the mean score of the scored runs is below
it, or nothing was scored; with a 0/1 scorer the mean *is* the pass rate) or ``--fail-on-judge-error``
(a judgment failed) — with the reason on stderr; 2 on bad input (a missing file, a directory, a file
with no OTLP data, unreadable items), a usage error or a setting that cannot be used (a judge with
no key or no reachable endpoint, a report path that cannot be written).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..expectations import Expectation, RulesError, resolve
from ..model import AgentRun
from ..offline._records import RecordBuilder, common_root, field_names
from ..offline._report import DEFAULT_MAX_ROWS, Gate
from ..offline._results import FileRunScore, summarise
from ..offline._text import visible
from ..settings import ConfigError
from ._arguments import HelpFormatter, epilog, positive_int, tool_order, unit_score
from ._extract_cmd import InputError, add_parse_limit_argument, finish, read_runs
from ._judge_options import add_judge_arguments, build_judge, judge_problem
from ._messages import say
from ._output import add_format_argument, chosen_format, write_csv, write_json, write_jsonl
from ._progress import Progress, add_progress_arguments
from ._settings_args import expectations, extract_options, offline_settings

__all__ = ["add_parser", "score_runs"]

_EXAMPLES = [
    "otel-toolscore score traces/*.jsonl --expected-order search,fetch --fail-under 0.9",
    "otel-toolscore score traces/*.jsonl --rules rules.yaml --format csv --report report.html",
]
#: Judge outcomes that are failures (the others are skips the settings asked for).
_JUDGE_FAILURES = frozenset({"error", "timeout", "invalid_answer", "rate_limited", "circuit_open"})


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "score",
        help="score every run in OTLP files with the code tool-call-accuracy scorer",
        description=(
            "Score each agent run found in the files against an expected tool or tool order: a rule of "
            "--rules, else the default (--expected-tool / --expected-order). Without flags the processor's "
            "settings apply (OTEL_TOOLSCORE_RULES, OTEL_TOOLSCORE_EXPECTED_TOOL[_ORDER], OTEL_TOOLSCORE_STRICT_MODE, "
            "OTEL_TOOLSCORE_INCLUDE_FRAMEWORK_CALLS); flags win. JSON, JSON Lines and CSV carry the same fields "
            "(docs/offline.md)."
        ),
        epilog=epilog(_EXAMPLES, [
            "0  every run was scored (and the gates, if given, passed)",
            "1  a gate failed: the mean score is below --fail-under (or no run was scored), or a judgment",
            "   failed with --fail-on-judge-error; the reason is on stderr",
            "2  bad input (a missing file, a file with no OTLP data, unreadable items), a usage error, or a",
            "   setting that cannot be used (rules file, judge key or endpoint, report path)",
        ]),
        formatter_class=HelpFormatter,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="OTLP trace or log files")
    g = p.add_argument_group("expectations (default: the OTEL_TOOLSCORE_* settings the span processor reads)")
    which = g.add_mutually_exclusive_group()
    which.add_argument("--expected-tool", metavar="TOOL",
                       help="the tool each run should call (default OTEL_TOOLSCORE_EXPECTED_TOOL)")
    which.add_argument("--expected-order", type=tool_order, metavar="TOOLS",
                       help="comma-separated tools in the order they should be called "
                            "(default OTEL_TOOLSCORE_EXPECTED_TOOL_ORDER)")
    g.add_argument("--strict", action=argparse.BooleanOptionalAction, default=None,
                   help="strict mode: exactly that tool / exactly that order (default OTEL_TOOLSCORE_STRICT_MODE, "
                        "else lenient)")
    g.add_argument("--rules", metavar="FILE",
                   help="YAML/TOML expectation rules, matched per run before the default (default OTEL_TOOLSCORE_RULES)")
    g.add_argument("--include-framework-calls", action=argparse.BooleanOptionalAction, default=None,
                   help="count handoffs / output tools as calls (default OTEL_TOOLSCORE_INCLUDE_FRAMEWORK_CALLS, "
                        "else no)")
    o = p.add_argument_group("output and gates")
    add_format_argument(o)
    o.add_argument("--fail-under", type=unit_score, default=None, metavar="SCORE",
                   help="exit 1 when the mean score of the scored runs is below SCORE (0..1), or no run was scored")
    o.add_argument("--fail-on-judge-error", action="store_true",
                   help="exit 1 when a judgment failed (error, timeout, invalid answer, rate limited, open circuit); "
                        "by default failures are reported per run and the exit status ignores them")
    o.add_argument("--report", metavar="FILE.html",
                   help="also write a self-contained HTML report (gate and rules, pass rates, score distributions, "
                        "failing sequences and runs with links to their files, judge verdicts)")
    o.add_argument("--report-rows", type=positive_int, default=DEFAULT_MAX_ROWS, metavar="N",
                   help=f"rows per table of the report; the rest are summed up in an \"others\" row "
                        f"(default {DEFAULT_MAX_ROWS})")
    o.add_argument("--trace-url", metavar="TEMPLATE",
                   help="link each trace id of the report to your tracing UI, e.g. "
                        "http://localhost:16686/trace/{trace_id} (Jaeger)")
    r = p.add_argument_group("reading")
    r.add_argument("--no-content", action="store_true", help="read names only (drop arguments and text)")
    r.add_argument("--max-chars", type=positive_int, default=None, help=argparse.SUPPRESS)
    add_parse_limit_argument(r)
    add_progress_arguments(r)
    p.add_argument("--judge", action="store_true",
                   help="also judge the runs with the LLM scorer (any OpenAI-compatible endpoint; see below)")
    add_judge_arguments(p, sampling=True)
    p.set_defaults(func=run)


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


def _cell(text: str | None, width: int) -> str:
    """A table cell: one line, control and bidirectional characters visible, cut at ``width``."""
    value = visible(" ".join((text or "-").split())) or "-"
    return value if len(value) <= width else value[: width - 1] + "…"


def _path_cell(path: str | None, width: int) -> str:
    """A path cell: a long path keeps its end (the file's name), cut at the start."""
    value = _cell(path, 10 * width)
    return value if len(value) <= width else "…" + value[-(width - 1):]


def _judge_cell(item: FileRunScore) -> str:
    j = item.judgment
    if j is None:
        return "-"
    if j.result is not None:
        return f"{j.result.score:.2f} {j.label}"
    return j.outcome


def _print_table(scored: list[FileRunScore], summary: dict[str, Any], judge: dict[str, Any] | None,
                 builder: RecordBuilder) -> None:
    files = [_path_cell(builder.file(i.file), 60) for i in scored]
    width = max([4, *(len(f) for f in files)])
    jcol = f"  {'judge':<14}" if judge is not None else ""
    print(f"{'score':>5}  {'file':<{width}}  {'run':<16}  {'agent':<20}{jcol}  result")
    for item, file in zip(scored, files):
        res = item.result
        label = _cell(res.summary(), 400) if res is not None else "not scored: no expectation matched"
        score = f"{res.score:.2f}" if res is not None else "-"
        jcell = f"  {_judge_cell(item):<14}" if judge is not None else ""
        print(f"{score:>5}  {file:<{width}}  {_cell(item.run.run_id, 16):<16}  {_cell(item.run.agent_name, 20):<20}{jcell}  {label}")
        if item.judgment is not None and item.judgment.result is not None:
            print(f"{'':>5}  {'':<{width}}  judge: {_cell(item.judgment.result.reason, 400)}")
    mean = "-" if summary["mean"] is None else f"{summary['mean']:.3f}"
    rate = "-" if summary["pass_rate"] is None else f"{summary['pass_rate']:.1%}"
    not_scored = {k: n for k, n in summary["outcomes"].items() if k != "scored"}
    detail = f" ({', '.join(f'{n} {k}' for k, n in not_scored.items())})" if not_scored else ""
    print(f"\n{summary['count']} scored of {summary['runs']} run(s){detail}; mean {mean}; pass rate {rate}")
    for name, st in summary["per_agent"].items():
        print(f"  {_cell(name, 60)}: {st['count']} run(s), mean {st['mean']:.3f}, pass rate {st['pass_rate']:.1%}")
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


def _judge(args: argparse.Namespace, judge: Any, settings: Any, scored: list[FileRunScore], progress: Progress,
           fmt: str) -> dict[str, Any] | None:
    """Judge ``scored`` in place and return the judge summary (or print the dry-run estimate: ``None``)."""
    from ..offline._judging import estimate, judge_runs, plan_judgments

    plan = plan_judgments(scored, judge.sampler, args.max_judgments)
    if args.dry_run:
        _print_estimate(estimate(scored, plan, judge), args, fmt, judge.model)
        return None
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
    return _judge_summary(scored, totals)


def output_problem(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (checked before any work), or ``None``."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        return f"{path} is a directory"
    if not folder.is_dir():
        return f"{folder} is not a directory (create it first)"
    if target.exists() and not os.access(target, os.W_OK):
        return f"{path} is not writable"
    if not target.exists() and not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot create a file in {folder} (permission denied)"
    return None


def _document(builder: RecordBuilder, scored: list[FileRunScore], summary: dict[str, Any],
              judge: dict[str, Any] | None, gate: Gate | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "root": str(builder.root) if builder.root is not None else None,
        "results": [builder.scored(item, judged=judge is not None) for item in scored],
        "summary": summary,
    }
    if judge is not None:
        out["judge"] = judge
    if gate is not None:
        out["gate"] = {"fail_under": gate.fail_under, "mean": gate.mean, "passed": gate.passed}
    return out


def _judge_failures(judge: dict[str, Any]) -> dict[str, int]:
    counts = {**judge.get("outcomes", {}), **judge.get("not_judged", {})}
    return {k: n for k, n in sorted(counts.items()) if k in _JUDGE_FAILURES and n}


def run(args: argparse.Namespace) -> int:
    try:
        settings = offline_settings(args)
        rules, default = expectations(settings, args)
    except (ConfigError, RulesError) as exc:  # the message names the flag, variable or file
        say("score", str(exc))
        return 2
    if default is None and not rules and not args.judge:
        say("score", "no expectation to score against: give --expected-tool, --expected-order or --rules "
            "(or set OTEL_TOOLSCORE_EXPECTED_TOOL, OTEL_TOOLSCORE_EXPECTED_TOOL_ORDER or OTEL_TOOLSCORE_RULES), "
            "or --judge")
        return 2
    if args.dry_run and not args.judge:
        say("score", "--dry-run prices the judge: give --judge too")
        return 2
    if args.trace_url is not None and "{trace_id}" not in args.trace_url:
        say("score", f"--trace-url {args.trace_url!r} has no {{trace_id}} placeholder")
        return 2
    if args.report and (problem := output_problem(args.report)) is not None:
        say("score", f"cannot write the report: {problem}")
        return 2
    judge = judge_settings = None
    if args.judge:
        try:
            judge, judge_settings = build_judge(args)
        except (ConfigError, ValueError) as exc:
            say("score", str(exc))
            return 2
    try:
        if judge is not None and judge_settings is not None and not args.dry_run:
            problem = judge_problem(judge_settings, args)
            if problem is not None:
                say("score", problem)
                return 2
        return _score(args, settings, rules, default, judge, judge_settings)
    finally:
        if judge is not None:
            judge.shutdown(timeout_seconds=0)


def _score(args: argparse.Namespace, settings: Any, rules: list[Expectation], default: Expectation | None,
           judge: Any, judge_settings: Any) -> int:
    progress = Progress.from_args(args)
    try:
        runs, report = read_runs(list(args.files), extract_options(settings), progress)
    except InputError as exc:
        say("score", str(exc))
        return 2
    scored = score_runs(runs, rules, default, include_framework_calls=settings.include_framework_calls,
                        files=report.trace_sources)
    summary = summarise(scored)
    fmt = chosen_format(args)
    judged: dict[str, Any] | None = None
    if judge is not None:
        judged = _judge(args, judge, judge_settings, scored, progress, fmt)
        if args.dry_run:
            return finish(report, "score")
    gate = None
    if args.fail_under is not None:
        mean = summary["mean"]
        gate = Gate(args.fail_under, mean, mean is not None and mean >= args.fail_under)
    builder = RecordBuilder(common_root(args.files), include_framework_calls=settings.include_framework_calls)
    if fmt == "json":
        write_json(_document(builder, scored, summary, judged, gate))
    elif fmt == "jsonl":
        write_jsonl(builder.scored(item, judged=judged is not None) for item in scored)
    elif fmt == "csv":
        rows = (builder.scored(item, judged=judged is not None) for item in scored)
        write_csv(rows, field_names(score=True, judge=judged is not None), raw=args.csv_raw)
    else:
        _print_table(scored, summary, judged, builder)
    if args.report:
        from ..offline._report import write_report

        try:
            write_report(args.report, scored, summary, files=args.files, judge=judged, rules=rules, default=default,
                         gate=gate, trace_url=args.trace_url, max_rows=args.report_rows,
                         include_framework_calls=settings.include_framework_calls)
        except OSError as exc:
            say("score", f"cannot write the report {args.report}: {exc.strerror or exc}")
            return 2
    status = finish(report, "score")
    if status:
        return status
    failed = False
    if gate is not None and not gate.passed:
        say("score", _gate_words(gate, summary))
        failed = True
    if args.fail_on_judge_error and judged is not None and (failures := _judge_failures(judged)):
        listed = ", ".join(f"{n} {k}" for k, n in failures.items())
        say("score", f"{sum(failures.values())} judgment(s) failed ({listed}) and --fail-on-judge-error is given")
        failed = True
    return 1 if failed else 0


def _gate_words(gate: Gate, summary: dict[str, Any]) -> str:
    if gate.mean is None:
        return (f"no run was scored ({summary['runs']} run(s), none with an expectation), so --fail-under "
                f"{gate.fail_under:g} is not met")
    passed = round((summary["pass_rate"] or 0.0) * summary["count"])
    return (f"mean score {gate.mean:.3f} of {summary['count']} scored run(s) is below --fail-under {gate.fail_under:g} "
            f"({passed} passed, {summary['count'] - passed} failed)")
