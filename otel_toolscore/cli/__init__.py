"""The ``otel-toolscore`` command line: thin over the library layers.

Each sub-command lives in its own module exposing ``add_parser(subparsers)``, which registers the
sub-command and sets ``func`` (``Callable[[argparse.Namespace], int]``) as its handler.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .. import __version__

# Sub-command modules, in the order ``--help`` lists them.
_COMMANDS = ("extract_cmd", "score_cmd", "judge_check_cmd", "serve_cmd", "demo_cmd")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="otel-toolscore",
        description="Score agent tool-call accuracy on OpenTelemetry traces (offline files or a live OTLP service).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMANDS:
        try:
            module = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue  # sub-command not shipped in this build
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
