"""``otel-toolscore extract FILE...``: the agent runs found in trace/log files, as a table or JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..extract import ExtractionReport, ExtractOptions, extract_runs_with_report
from ..extract._facts import DEFAULT_OPTIONS
from ..model import AgentRun
from ..offline._records import RecordBuilder, common_root, field_names
from ..offline._text import visible
from ..settings import ConfigError
from ._arguments import HelpFormatter, epilog, positive_int
from ._messages import say
from ._output import add_format_argument, chosen_format, write_csv, write_json, write_jsonl
from ._progress import Progress, add_progress_arguments
from ._settings_args import extract_options, offline_settings

__all__ = ["InputError", "add_parser", "bad_input", "finish", "print_report", "read_runs"]

EXAMPLE = "otel-toolscore extract traces/*.jsonl --format csv > runs.csv"


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "extract",
        help="list the agent runs and tool calls found in OTLP trace/log files",
        description=(
            "Read OTLP files (protobuf, OTLP/JSON with hex or base64 ids, JSON Lines of export requests, "
            "gzip of any; trace and log files mixed) and print each agent run: ids, agent, conventions, "
            "the user's request, the tools available and the tool calls in order. JSON, JSON Lines and CSV "
            "carry the same fields as `score` (docs/offline.md). Limits come from OTEL_TOOLSCORE_* as for the "
            "span processor; the flags override them."
        ),
        epilog=epilog(EXAMPLE, ["0  the runs were printed",
                                "2  bad input (a missing file, a file with no OTLP data, unreadable items: what could "
                                "be read is still printed) or a usage error"]),
        formatter_class=HelpFormatter,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="OTLP trace or log files")
    add_format_argument(p)
    p.add_argument("--no-content", action="store_true", help="drop arguments, results, request and answer")
    p.add_argument("--max-chars", type=positive_int, default=None, metavar="N",
                   help="longest text/argument kept (default OTEL_TOOLSCORE_MAX_CONTENT_CHARS, else 8192)")
    add_parse_limit_argument(p)
    add_progress_arguments(p)
    p.set_defaults(func=run)


def add_parse_limit_argument(p: argparse._ActionsContainer) -> None:
    p.add_argument(
        "--max-parse-chars",
        type=positive_int,
        default=None,
        metavar="N",
        help="longest JSON text (message list, arguments, result) parsed at all; longer text is reported, not read "
        f"(default OTEL_TOOLSCORE_MAX_PARSE_CHARS, else {DEFAULT_OPTIONS.max_parse_chars})",
    )


class InputError(Exception):
    """A file named on the command line cannot be read at all (exit status 2)."""


def check_files(files: list[str]) -> None:
    """Refuse, before reading anything, a file that is missing or not a regular file."""
    for name in files:
        path = Path(name)
        if not path.exists():
            raise InputError(f"{name}: no such file")
        if path.is_dir():
            raise InputError(f"{name}: is a directory (name the trace files in it)")
        if not path.is_file():
            raise InputError(f"{name}: not a regular file")


def read_runs(files: list[str], options: ExtractOptions,
              progress: Progress | None = None) -> tuple[list[AgentRun], ExtractionReport]:
    """The runs of the files (:class:`InputError` for a file that cannot be read at all)."""
    check_files(files)
    if progress is None or not progress.enabled:
        return extract_runs_with_report(files, options)
    progress.reading(files)
    try:
        runs, report = extract_runs_with_report(files, options, progress=progress.source)
        progress.read(len(runs))
    finally:
        progress.close()
    return runs, report


def print_report(report: ExtractionReport, command: str) -> None:
    """The report's problems on stderr (one line each), so stdout stays machine-readable."""
    for line in report.problems():
        say(command, line)


def bad_input(report: ExtractionReport) -> list[str]:
    """What makes the input bad (exit status 2): a file with no OTLP data in it (empty, or not OTLP),
    or items that could not be read (the report lists them)."""
    out = []
    for src in report.sources:
        if src.spans_read == 0 and src.logs_read == 0 and src.malformed == 0:
            out.append(f"{src.source}: no OTLP spans or log records (empty, or not OTLP)")
        elif src.malformed:
            out.append(f"{src.source}: {src.malformed} item(s) could not be read")
    return out


def finish(report: ExtractionReport, command: str) -> int:
    """Report problems on stderr; 2 when the input was bad, else 0."""
    print_report(report, command)
    problems = bad_input(report)
    for line in problems:
        say(command, line)
    return 2 if problems else 0


def _short(text: str | None, width: int) -> str:
    """One line of at most ``width`` characters, every control or bidirectional character visible."""
    if not text:
        return "-"
    text = visible(" ".join(text.split()))
    return text if len(text) <= width else text[: width - 1] + "…"


def _args(value: Any) -> str:
    if value is None:
        return ""
    return _short(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False), 60)


def _name(text: str | None) -> str:
    return _short(text, 80)


def print_table(runs: list[AgentRun]) -> None:
    for run in runs:
        parent = f"  parent {_name(run.parent_run_id)}" if run.parent_run_id else ""
        print(f"run {_name(run.run_id)}  trace {_name(run.trace_id)}{parent}")
        print(f"  agent       {_name(run.agent_name)}   [{', '.join(_name(c) for c in run.conventions)}]")
        print(f"  query       {_short(run.user_query, 100)}")
        print(f"  answer      {_short(run.final_output, 100)}")
        print(f"  tools       {', '.join(_name(t.name) for t in run.available_tools) or '-'}")
        if not run.tool_calls:
            print("  calls       (none)")
        for n, c in enumerate(run.tool_calls, 1):
            flags: list[str] = [] if c.kind == "tool" else [c.kind]
            if c.status == "error":
                flags.append(f"error:{_name(c.error_type)}" if c.error_type else "error")
            note = f" [{', '.join(flags)}]" if flags else ""
            print(f"  {n:>3}. {_name(c.name)}({_args(c.arguments)}){note}  id={_name(c.call_id)} via {c.source}")
        print()


def run(args: argparse.Namespace) -> int:
    try:
        settings = offline_settings(args)
        runs, report = read_runs(list(args.files), extract_options(settings), Progress.from_args(args))
    except (InputError, ConfigError) as exc:
        say("extract", str(exc))
        return 2
    fmt = chosen_format(args)
    if fmt in ("json", "jsonl", "csv"):
        builder = RecordBuilder(common_root(args.files), include_framework_calls=settings.include_framework_calls)
        rows = [builder.run(r, report.trace_sources.get(r.trace_id or "")) for r in runs]
        if fmt == "json":
            write_json(rows)
        elif fmt == "jsonl":
            write_jsonl(rows)
        else:
            write_csv(rows, field_names(), raw=args.csv_raw)
    else:
        print_table(runs)
        print(f"{len(runs)} run(s) in {report.traces} trace(s) from {len(report.sources)} file(s)")
    return finish(report, "extract")
