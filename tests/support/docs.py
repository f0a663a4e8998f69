"""The user documentation as tests read it: the README and every page under ``docs/``."""

from __future__ import annotations

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
