"""The user documentation as tests read it: the README and every page under ``docs/``."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def all_docs() -> str:
    """README.md followed by every ``docs/*.md`` page."""
    return "\n".join([README.read_text(), *(p.read_text() for p in sorted(DOCS.glob("*.md")))])


def section(text: str, heading: str) -> str:
    """The body of the section titled ``heading`` (its ``#`` prefix included), up to the next
    heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    body = text.split(heading + "\n", 1)[1]
    out = []
    for line in body.splitlines():
        if line.startswith("#") and len(line) - len(line.lstrip("#")) <= level and line[level:level + 1] == " ":
            break
        out.append(line)
    return "\n".join(out)


def code_blocks(heading_pattern: str, text: str | None = None) -> list[tuple[str, str]]:
    """The fenced code blocks (language, body) of the README section whose heading matches
    ``heading_pattern`` (a regex, case-insensitive), in order."""
    doc = README.read_text(encoding="utf-8") if text is None else text
    heading = re.search(rf"^(#+) .*{heading_pattern}.*$", doc, re.M | re.I)
    assert heading, f"README.md has no heading matching {heading_pattern!r}"
    level = len(heading.group(1))
    rest = doc[heading.end():]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    body = rest[: end.start()] if end else rest
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```", body, re.M | re.S)]
