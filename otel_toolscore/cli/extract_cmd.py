"""``otel-toolscore extract FILE...``: the agent runs found in trace/log files, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..extract import ExtractionReport, ExtractOptions, extract_runs_with_report
from ..model import AgentRun

__all__ = ["add_parser", "print_report", "read_runs", "run_to_json"]


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
    p.add_argument("--format", choices=("table", "json"), default=None,
                   help="output format (default: table on a terminal, JSON otherwise)")
    p.add_argument("--no-content", action="store_true", help="drop arguments, results, request and answer")
    p.add_argument("--max-chars", type=int, default=8192, help="longest text/argument kept (default 8192)")
    p.set_defaults(func=run)


def read_runs(args: argparse.Namespace) -> tuple[list[AgentRun], ExtractionReport]:
    options = ExtractOptions(max_chars=args.max_chars, capture_content=not args.no_content)
    return extract_runs_with_report(list(args.files), options)


def print_report(report: ExtractionReport) -> None:
    """The report's problems on stderr (one line each), so stdout stays machine-readable."""
    for line in report.problems():
        print(f"otel-toolscore: {line}", file=sys.stderr)


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
    runs, report = read_runs(args)
    fmt = args.format or ("table" if sys.stdout.isatty() else "json")
    if fmt == "json":
        json.dump([run_to_json(r) for r in runs], sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print_table(runs)
        print(f"{len(runs)} run(s) in {report.traces} trace(s) from {len(report.sources)} file(s)")
    print_report(report)
    return 0
