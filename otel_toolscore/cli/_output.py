"""Output formats shared by ``extract`` and ``score``: a table for people, JSON, JSON Lines and CSV.

All three machine formats carry the records of :mod:`otel_toolscore.offline._records` (same field
names, same order). JSON is one indented document; JSON Lines and CSV hold one run per line, so they
stream into ``jq``, spreadsheets and warehouse loaders. In CSV a list of names becomes
comma-separated text, a sequence of calls `` -> ``-joined text, an object or a list of objects
compact JSON; ``None`` is empty. No string breaks an output (:mod:`otel_toolscore.offline._text`):
CSV is RFC 4180 (CRLF line ends, a field with CR, LF, a comma or a quote is quoted) and a cell a
spreadsheet would run as a formula is neutralised unless ``--csv-raw``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from ..offline._text import csv_text, json_text

__all__ = ["FORMATS", "add_format_argument", "chosen_format", "write_csv", "write_json", "write_jsonl"]

FORMATS = ("table", "json", "jsonl", "csv")

#: CSV columns holding calls in the order they were made.
SEQUENCE_COLUMNS = frozenset({"tools_called"})


def add_format_argument(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--format", choices=FORMATS, default=None,
        help="output format: table, json (one document), jsonl or csv (one run per line, the same fields) "
             "(default: table on a terminal, json otherwise)",
    )
    parser.add_argument(
        "--csv-raw", action="store_true",
        help="CSV: keep cells that start with = + - @ as they are (by default they are prefixed with ' so a "
             "spreadsheet does not run them as formulas)",
    )


def chosen_format(args: argparse.Namespace) -> str:
    return str(args.format or ("table" if sys.stdout.isatty() else "json"))


def dumps(value: Any, *, indent: int | None = None) -> str:
    """JSON text of ``value`` (UTF-8 as it is, lone surrogates as ``\\uXXXX`` escapes)."""
    separators = None if indent is not None else (",", ":")
    return json_text(json.dumps(value, ensure_ascii=False, indent=indent, separators=separators))


def write_json(value: Any, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    out.write(dumps(value, indent=2))
    out.write("\n")


def write_jsonl(rows: Iterable[Mapping[str, Any]], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    for row in rows:
        out.write(dumps(row))
        out.write("\n")


def _cell(value: Any, joiner: str, raw: bool) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return csv_text(joiner.join(value), raw=raw)
    if isinstance(value, (list, tuple, Mapping)):
        return csv_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")), raw=raw)
    return csv_text(str(value), raw=raw)


def write_csv(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], out: TextIO | None = None, *,
              raw: bool = False) -> None:
    """A header line, then one line per row (columns in that order; missing keys are empty)."""
    writer = csv.writer(out or sys.stdout, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c), " -> " if c in SEQUENCE_COLUMNS else ", ", raw) for c in columns])
