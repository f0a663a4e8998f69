"""Output formats shared by ``extract`` and ``score``: a table for people, JSON, JSON Lines and CSV.

JSON is one indented document (what the commands always printed); JSON Lines and CSV hold one run
per line with flat columns, so they stream into ``jq``, spreadsheets and warehouse loaders. In CSV a
list becomes comma-separated text, a sequence of calls `` -> ``-joined text; ``None`` is empty.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

__all__ = ["FORMATS", "add_format_argument", "chosen_format", "write_csv", "write_jsonl"]

FORMATS = ("table", "json", "jsonl", "csv")


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=FORMATS, default=None,
        help="output format: table, json (one document), jsonl or csv (one run per line) "
             "(default: table on a terminal, json otherwise)",
    )


def chosen_format(args: argparse.Namespace) -> str:
    return str(args.format or ("table" if sys.stdout.isatty() else "json"))


def write_jsonl(rows: Iterable[Mapping[str, Any]], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
        out.write("\n")


#: CSV columns holding calls in the order they were made.
SEQUENCE_COLUMNS = frozenset({"tools_called"})


def _cell(value: Any, joiner: str = ", ") -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return joiner.join(_cell(v) for v in value)
    if isinstance(value, (dict, Mapping)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def write_csv(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], out: TextIO | None = None) -> None:
    """A header line, then one line per row (columns in that order; missing keys are empty)."""
    writer = csv.writer(out or sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c), " -> " if c in SEQUENCE_COLUMNS else ", ") for c in columns])
