"""``otel-toolscore extract FILE...``: the agent runs found in trace/log files, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..extract import ExtractionReport, ExtractOptions, extract_runs_with_report
from ..extract.facts import DEFAULT_OPTIONS
from ..model import AgentRun
from .arguments import positive_int
from .output import add_format_argument, chosen_format, write_csv, write_jsonl
from .progress import Progress, add_progress_arguments

__all__ = ["InputError", "add_parser", "bad_input", "finish", "print_report", "read_runs", "run_to_json"]

#: CSV columns of ``extract`` (JSON Lines carries the same keys, with the calls in full).
EXTRACT_COLUMNS = (
    "file", "trace_id", "run_id", "parent_run_id", "agent_name", "conventions", "user_query", "final_output",
    "available_tools", "tools_called",
)


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "extract",
        help="list the agent runs and tool calls found in OTLP trace/log files",
        description=(
            "Read OTLP files (protobuf, OTLP/JSON with hex or base64 ids, JSON Lines of export requests, "
            "gzip of any; trace and log files mixed) and print each agent run: ids, agent, conventions, "
            "the user's request, the tools available and the tool calls in order."
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    add_format_argument(p)
    p.add_argument("--no-content", action="store_true", help="drop arguments, results, request and answer")
    p.add_argument("--max-chars", type=int, default=8192, help="longest text/argument kept (default 8192)")
    add_parse_limit_argument(p)
    add_progress_arguments(p)
    p.set_defaults(func=run)


def add_parse_limit_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-parse-chars",
        type=positive_int,
        default=DEFAULT_OPTIONS.max_parse_chars,
        help="longest JSON text (message list, arguments, result) parsed at all; longer text is reported, not read "
        "(default 1048576)",
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


def read_runs(args: argparse.Namespace, progress: Progress | None = None) -> tuple[list[AgentRun], ExtractionReport]:
    """The runs of the files (:class:`InputError` for a file that cannot be read at all)."""
    check_files(list(args.files))
    options = ExtractOptions(
        max_chars=args.max_chars, capture_content=not args.no_content, max_parse_chars=args.max_parse_chars
    )
    if progress is None or not progress.enabled:
        return extract_runs_with_report(list(args.files), options)
    progress.reading(list(args.files))
    try:
        runs, report = extract_runs_with_report(list(args.files), options, progress=progress.source)
        progress.read(len(runs))
    finally:
        progress.close()
    return runs, report


def print_report(report: ExtractionReport) -> None:
    """The report's problems on stderr (one line each), so stdout stays machine-readable."""
    for line in report.problems():
        print(f"otel-toolscore: {line}", file=sys.stderr)


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
    print_report(report)
    problems = bad_input(report)
    for line in problems:
        print(f"otel-toolscore {command}: {line}", file=sys.stderr)
    return 2 if problems else 0


def run_to_json(run: AgentRun) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "trace_id": run.trace_id,
        "parent_run_id": run.parent_run_id,
        "agent_name": run.agent_name,
        "conversation_id": run.conversation_id,
        "conventions": run.conventions,
        "user_query": run.user_query,
        "final_output": run.final_output,
        "available_tools": [t.name for t in run.available_tools],
        "tool_calls": [
            c.model_dump(mode="json", exclude_none=True, exclude={"start_time_unix_nano", "end_time_unix_nano"})
            for c in run.tool_calls
        ],
    }


def _short(text: str | None, width: int) -> str:
    if not text:
        return "-"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _args(value: Any) -> str:
    if value is None:
        return ""
    return _short(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False), 60)


def print_table(runs: list[AgentRun]) -> None:
    for run in runs:
        parent = f"  parent {run.parent_run_id}" if run.parent_run_id else ""
        print(f"run {run.run_id}  trace {run.trace_id}{parent}")
        print(f"  agent       {run.agent_name or '-'}   [{', '.join(run.conventions)}]")
        print(f"  query       {_short(run.user_query, 100)}")
        print(f"  answer      {_short(run.final_output, 100)}")
        print(f"  tools       {', '.join(t.name for t in run.available_tools) or '-'}")
        if not run.tool_calls:
            print("  calls       (none)")
        for n, c in enumerate(run.tool_calls, 1):
            flags: list[str] = [] if c.kind == "tool" else [c.kind]
            if c.status == "error":
                flags.append(f"error:{c.error_type}" if c.error_type else "error")
            note = f" [{', '.join(flags)}]" if flags else ""
            print(f"  {n:>3}. {c.name}({_args(c.arguments)}){note}  id={c.call_id or '-'} via {c.source}")
        print()


def run(args: argparse.Namespace) -> int:
    try:
        runs, report = read_runs(args, Progress.from_args(args))
    except InputError as exc:
        print(f"otel-toolscore extract: {exc}", file=sys.stderr)
        return 2
    fmt = chosen_format(args)
    if fmt == "json":
        json.dump([run_to_json(r) for r in runs], sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif fmt in ("jsonl", "csv"):
        rows = [
            {"file": report.trace_sources.get(r.trace_id or ""), **run_to_json(r),
             "tools_called": [c.name for c in r.tool_calls]}
            for r in runs
        ]
        if fmt == "jsonl":
            write_jsonl(rows)
        else:
            write_csv(rows, EXTRACT_COLUMNS)
    else:
        print_table(runs)
        print(f"{len(runs)} run(s) in {report.traces} trace(s) from {len(report.sources)} file(s)")
    return finish(report, "extract")
