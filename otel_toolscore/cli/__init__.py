"""The ``otel-toolscore`` command line: thin over the library layers.

Each sub-command lives in its own module exposing ``add_parser(subparsers)``, which registers the
sub-command and sets ``func`` (``Callable[[argparse.Namespace], int]``) as its handler.

Usage errors are reported by the parser of the command they belong to (its usage line, then the
error), with the closest known flag or command when there is one; exit status 2.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import importlib
import sys
from collections.abc import Sequence

from .._version import __version__
from ._arguments import HelpFormatter
from ._messages import PROG, command_messages

# Sub-command modules, in the order ``--help`` lists them.
_COMMANDS = ("_extract_cmd", "_score_cmd", "_judge_check_cmd", "_serve_cmd", "_demo_cmd")
#: Commands that set up logging themselves (a service's log lines; the demo's captured exporters).
_OWN_LOGGING = frozenset({"serve", "demo"})
#: Commands that read many spans: the garbage collector is tuned for them (``tune_gc``).
_BULK = frozenset({"extract", "score", "judge-check", "serve"})
#: Allocations between two young-generation collections for those commands (the default is 700).
GC_GEN0_THRESHOLD = 50_000


def tune_gc(gen0: int = GC_GEN0_THRESHOLD) -> None:
    """The collector set for reading many spans, once the command is set up: everything built so far
    (modules, parsers, settings) is frozen out of every later collection, and the young generation is
    collected every ``gen0`` allocations (50,000 by default) instead of 700. Reading spans makes
    short-lived objects that reference counting frees; the collector's passes over the rest were a
    cost with nothing to find."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(gen0, gen1, gen2)

_EPILOG = """\
examples:
  otel-toolscore demo
  otel-toolscore score traces/*.jsonl --expected-tool get_weather --fail-under 0.9 --report report.html

exit status:
  0  success
  1  a gate failed (score --fail-under or --fail-on-judge-error, judge-check --min-agreement)
  2  a usage error, bad input, or a setting that cannot be used

`otel-toolscore COMMAND --help`: a command's options with their defaults, an example, its exit codes.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Score agent tool-call accuracy on OpenTelemetry traces (offline files or a live OTLP service).",
        epilog=_EPILOG,
        formatter_class=HelpFormatter,
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


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _suggestion(word: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _unrecognized(parser: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    """The error for arguments ``parser`` does not know: each unknown flag with the closest known one."""
    unknown = [e.split("=", 1)[0] for e in extra if e.startswith("-")]
    if not unknown:
        return f"unrecognized arguments: {' '.join(extra)}"
    flags = [s for s in parser._option_string_actions if s.startswith("--")]
    listed = ", ".join(f"{flag}{_suggestion(flag, flags)}" for flag in unknown)
    return f"unrecognized argument{'s' if len(unknown) > 1 else ''} {listed}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    commands = _commands(parser)
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and not args_list[0].startswith("-") and args_list[0] not in commands:
        parser.error(f"unknown command {args_list[0]!r}{_suggestion(args_list[0], list(commands))}; "
                     f"the commands are {', '.join(commands)}")
    args, extra = parser.parse_known_args(args_list)
    if extra:
        target = commands.get(getattr(args, "command", None) or "", parser)
        target.error(_unrecognized(target, extra))
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    if args.command in _BULK:
        tune_gc()
    try:
        if args.command in _OWN_LOGGING:
            return int(func(args))
        with command_messages(args.command):
            return int(func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
