"""Text from traces made safe for each output: JSON, CSV, a terminal and HTML.

Everything here comes from the data (agent and tool names, requests, arguments, judge reasons) and
may hold anything a string can: a lone UTF-16 surrogate (``"\\ud800"`` in OTLP/JSON decodes to one),
terminal escapes, a right-to-left override that makes ``‮gnp.exe`` read as ``exe.png``. Each output
keeps what it can carry and shows the rest visibly; no output fails on any string.

* JSON and JSON Lines: a lone surrogate is written as its ``\\uXXXX`` escape (valid JSON, read back
  as the same string); everything else is written as it is, inside a JSON string.
* CSV: a lone surrogate becomes the six characters ``\\udXXX``; a cell that a spreadsheet would run
  as a formula (first character ``=``, ``+``, ``-``, ``@``, tab or carriage return) is prefixed with
  ``'`` unless the raw cells are asked for. Fields holding CR or LF are quoted by the writer.
* Terminal and HTML: control characters (C0, DEL, C1), bidirectional controls and other invisible
  format characters, and lone surrogates are shown as ``\\xNN`` / ``\\uXXXX`` escapes.
"""

from __future__ import annotations

import re

__all__ = ["FORMULA_PREFIXES", "csv_text", "json_text", "visible"]

_SURROGATE = re.compile("[\ud800-\udfff]")
# Control characters (C0 but tab and newline are shown too), DEL, C1; bidirectional embeddings,
# overrides, isolates and marks; zero-width and other invisible format characters; lone surrogates.
_INVISIBLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
#: First characters that make a spreadsheet read a cell as a formula (OWASP's list).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_text(dumped: str) -> str:
    """``json.dumps(..., ensure_ascii=False)`` output with lone surrogates written as JSON escapes.

    A surrogate can only be inside a JSON string there, where ``\\udXXX`` is a valid escape."""
    return _SURROGATE.sub(_json_escape, dumped)


def csv_text(text: str, *, raw: bool = False) -> str:
    """One CSV cell of text: lone surrogates escaped; a formula-leading cell neutralised with ``'``
    (``raw`` keeps it as it is)."""
    text = _SURROGATE.sub(_escape, text)
    if not raw and text.startswith(FORMULA_PREFIXES):
        return "'" + text
    return text


def visible(text: str) -> str:
    """``text`` with every control, bidirectional or invisible character (and lone surrogate) shown
    as an escape, for a terminal or a web page: what is displayed is what the data holds."""
    return _INVISIBLE.sub(_escape, text)
