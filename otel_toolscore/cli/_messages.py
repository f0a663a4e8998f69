"""What the command line says on stderr: one prefix, ``otel-toolscore <command>:``, for its own
messages and for the warnings the library logs while the command runs (a bad ``OTEL_TOOLSCORE_*``
variable, a judge retry), so every line a user reads starts the same way."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..offline._text import visible

__all__ = ["PROG", "command_messages", "say"]

PROG = "otel-toolscore"
_LIBRARY_PREFIX = "otel-toolscore: "


def say(command: str | None, text: str) -> None:
    """One message on stderr, after what stdout holds so far (the two share a terminal)."""
    sys.stdout.flush()
    prefix = f"{PROG} {command}: " if command else f"{PROG}: "
    print(prefix + visible(text), file=sys.stderr, flush=True)


class _CommandHandler(logging.Handler):
    def __init__(self, command: str) -> None:
        super().__init__(logging.WARNING)
        self.command = command

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage().removeprefix(_LIBRARY_PREFIX)
            if record.exc_info and record.exc_info[1] is not None:
                text += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
            say(self.command, text)
        except Exception:
            self.handleError(record)


@contextmanager
def command_messages(command: str) -> Iterator[None]:
    """While a command runs, the library's warnings are printed with the command's prefix (and only
    there: the ``otel_toolscore`` logger does not also pass them to the root logger)."""
    logger = logging.getLogger("otel_toolscore")
    handler = _CommandHandler(command)
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
