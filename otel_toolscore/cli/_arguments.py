"""Value parsers for the command lines' flags: each refuses a bad value with a message naming it
(argparse turns it into a usage error, exit status 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["HelpFormatter", "bounded_float", "epilog", "positive_int", "tool_order", "unit_score"]


def tool_order(text: str) -> tuple[str, ...]:
    """``a,b,c`` -> ``("a", "b", "c")``; at least one name."""
    order = tuple(s.strip() for s in text.split(",") if s.strip())
    if not order:
        raise argparse.ArgumentTypeError("an order needs at least one tool name")
    return order


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def bounded_float(*, positive: bool = False, what: str = "a number") -> Callable[[str], float]:
    """A float parser: ``positive`` refuses 0 and below, otherwise only negatives are refused."""
    def parse(text: str) -> float:
        value = _number(text)
        if (positive and not value > 0) or value < 0:
            raise argparse.ArgumentTypeError(f"{text} must be {'positive' if positive else 'zero or more'} ({what})")
        return value
    return parse


def unit_score(text: str) -> float:
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is outside 0..1 (scores are between 0 and 1)")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be at least 1")
    return value


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that text written on several lines (the epilogs: examples and
    exit codes) keeps its lines."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def epilog(example: str | list[str], exit_status: list[str]) -> str:
    """The end of a command's ``--help``: an example and what each exit status means."""
    examples = [example] if isinstance(example, str) else example
    lines = ["example:" if len(examples) == 1 else "examples:", *(f"  {e}" for e in examples), "",
             "exit status:", *(f"  {line}" for line in exit_status), ""]
    return "\n".join(lines)
