"""``otel-toolscore judge-check``: how far a judge model agrees with a labelled set, before trusting it.

Runs the LLM scorer (the endpoint and settings of ``OTEL_TOOLSCORE_JUDGE_*``, as online) over the
calibration set shipped with the package (:mod:`otel_toolscore.offline._calibration`) and reports
agreement per verdict and per score band, a confusion table, the runs it failed to answer, tokens
and latency. Every scenario is judged (no sampling); the rate limit and token budget still apply.
Arguments and results are sent to the judge whatever the settings say: the set is synthetic, and its
injection scenarios only mean something when the judge sees the tool results.

Exit status: 0; 1 when ``--min-agreement`` is given and the verdict agreement is below it (the reason
on stderr); 2 on a usage or settings error — a judge that cannot be built, has no key or whose
endpoint accepts no connection fails before anything is judged.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..settings import ConfigError
from ._arguments import HelpFormatter, epilog, unit_score
from ._judge_options import add_judge_arguments, build_judge, judge_problem
from ._messages import say
from ._progress import Progress, add_progress_arguments

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "judge-check",
        help="measure a judge model's agreement with the labelled calibration set shipped with the package",
        description=(
            "Judges every scenario of the calibration set with the LLM scorer (OTEL_TOOLSCORE_JUDGE_* settings, "
            "as online) and reports agreement per verdict and per score band, a confusion table, failures to "
            "answer, tokens and latency."
        ),
        epilog=epilog(
            ["otel-toolscore judge-check --list",
             "OTEL_TOOLSCORE_JUDGE_MODEL=gpt-4o-mini otel-toolscore judge-check --scenarios mastra --min-agreement 0.9"],
            ["0  judged (and the agreement reached --min-agreement, if given)",
             "1  the verdict agreement is below --min-agreement",
             "2  a usage error, or a judge that cannot be used (no model, no key, endpoint not reachable)"]),
        formatter_class=HelpFormatter,
    )
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="table for people (default) or one JSON document")
    p.add_argument("--scenarios", metavar="NAMES", type=lambda t: [s.strip() for s in t.split(",") if s.strip()],
                   help="comma-separated scenario ids or groups (default: all)")
    p.add_argument("--list", action="store_true", help="list the scenarios and their expected scores, judge nothing")
    p.add_argument("--min-agreement", type=unit_score, metavar="RATE",
                   help="exit 1 when the verdict agreement is below RATE (0..1)")
    add_progress_arguments(p)
    add_judge_arguments(p, sampling=False)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..offline._calibration import load_calibration_set, report, scenario_items, select
    from ..offline._judging import JudgePlan, estimate, judge_runs

    try:
        scenarios = select(load_calibration_set(), args.scenarios)
    except ValueError as exc:
        say("judge-check", str(exc))
        return 2
    if args.list:
        for s in scenarios:
            print(f"{s.id:<40} {s.group:<24} expected {s.expected_score:.2f} ({s.expected_verdict})")
        print(f"{len(scenarios)} scenario(s)")
        return 0
    try:
        judge, settings = build_judge(args, ratio=1.0, include_arguments=True, include_results=True)
    except (ConfigError, ValueError) as exc:
        say("judge-check", str(exc))
        return 2
    problem = None if args.dry_run else judge_problem(settings, args)
    if problem is not None:
        judge.shutdown(timeout_seconds=0)
        say("judge-check", problem)
        return 2
    items = scenario_items(scenarios)
    limit = args.max_judgments if args.max_judgments is not None else len(items)
    plan = JudgePlan(selected=[(i, "calibration") for i in range(min(limit, len(items)))],
                     skipped={i: "max_judgments" for i in range(limit, len(items))})
    try:
        if args.dry_run:
            est = estimate(items, plan, judge).to_dict(args.price_input, args.price_output)
            print(json.dumps({"dry_run": {"model": judge.model, **est}}, indent=2))
            return 0
        progress = Progress.from_args(args)
        progress.judging(len(plan.selected))
        failed = tokens = 0

        def done(item: Any) -> None:
            nonlocal failed, tokens
            j = item.judgment
            if j is not None and j.result is not None:
                tokens += j.result.usage.total_tokens
            else:
                failed += 1
            progress.judged(tokens, failed)

        try:
            totals = judge_runs(items, plan, judge, concurrency=settings.workers, on_done=done)
        finally:
            progress.close()
    finally:
        judge.shutdown(timeout_seconds=0)
    result = report(scenarios, items, totals)
    cut = _cut_reasons(result.rows)
    if args.format == "json":
        print(result.model_dump_json(indent=2))
    else:
        _print(result)
    if cut:
        say("judge-check", f"{cut} judge reason(s) longer than {MAX_REASON_CHARS} characters were cut "
            "(marked `…[cut N chars]`)")
    if args.min_agreement is not None and (result.verdict_agreement or 0.0) < args.min_agreement:
        say("judge-check", f"verdict agreement {_pct(result.verdict_agreement)} is below --min-agreement "
            f"{args.min_agreement:.0%}")
        return 1
    return 0


#: Longest judge reason printed per scenario (a judge can answer megabytes; the table shows 70 characters).
MAX_REASON_CHARS = 2000


def _cut_reasons(rows: list[dict[str, Any]]) -> int:
    """Cut every row's reason to :data:`MAX_REASON_CHARS`, saying so in it; how many were cut."""
    cut = 0
    for row in rows:
        reason = row.get("reason")
        if isinstance(reason, str) and len(reason) > MAX_REASON_CHARS:
            row["reason"] = f"{reason[:MAX_REASON_CHARS]}…[cut {len(reason) - MAX_REASON_CHARS} chars]"
            cut += 1
    return cut


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def _print(r: Any) -> None:
    print(f"{'scenario':<40} {'expected':>8} {'judge':>6} {'code':>5}  agree  reason")
    for row in r.rows:
        judged = "-" if row["judge_score"] is None else f"{row['judge_score']:.2f}"
        code = "-" if row["code_score"] is None else f"{row['code_score']:.0f}"
        mark = "yes" if row["agree"] else ("no" if row["judge_score"] is not None else row["outcome"])
        reason = " ".join(str(row["reason"] or "").split())[:70]
        print(f"{row['id']:<40} {row['expected_score']:>8.2f} {judged:>6} {code:>5}  {mark:<5}  {reason}")
    mae = "-" if r.mean_abs_error is None else f"{r.mean_abs_error:.3f}"
    print(f"\njudge {r.model}: {r.answered} of {r.scenarios} scenario(s) answered; "
          f"verdict agreement {_pct(r.verdict_agreement)}, band agreement {_pct(r.band_agreement)}, "
          f"mean absolute score error {mae}")
    print("per verdict:  " + "; ".join(f"{k} {c['agree']}/{c['count']} ({_pct(c['rate'])})" for k, c in r.verdict.items()))
    print("per band:     " + "; ".join(f"{k} {c['agree']}/{c['count']} ({_pct(c['rate'])})" for k, c in r.band.items()))
    columns = list(next(iter(r.confusion.values())).keys())
    print("\nconfusion (rows: expected band, columns: judged band)")
    print(f"{'':>10}" + "".join(f"{c:>11}" for c in columns))
    for expected, judged in r.confusion.items():
        print(f"{expected:>10}" + "".join(f"{judged[c]:>11}" for c in columns))
    failures = ", ".join(f"{k} {v}" for k, v in sorted(r.failures.items())) or "none"
    print(f"\nfailures to answer: {failures}")
    if r.code_agreement["compared"]:
        print(f"code scorer on the scenarios that carry an expectation: "
              f"{r.code_agreement['agree']}/{r.code_agreement['compared']} verdicts agree with the labels")
    lat = {k: "-" if v is None else f"{v:.2f} s" for k, v in r.latency_s.items()}
    print(f"tokens: {r.input_tokens:,} input + {r.output_tokens:,} output; "
          f"latency mean {lat['mean']}, p50 {lat['p50']}, max {lat['max']}")
