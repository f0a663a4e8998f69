"""Progress bars on stderr for the offline commands (``tqdm``): reading files, then judging runs.

Shown only when stderr is a terminal and ``--quiet`` is not given, and only once a phase has lasted
``delay`` seconds (two by default): a command that ends sooner draws nothing. Every redraw goes
through ``tqdm.update`` (which honours the delay); a bar that was drawn is erased when its phase
ends, before anything is written to stdout, so a table never starts on the bar's line. Bytes are
counted as they are read, within a file too, so one large file shows a moving percentage and an ETA.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

__all__ = ["Progress", "add_progress_arguments"]

DEFAULT_DELAY_S = 2.0
#: Shortest time between two redraws.
_MIN_INTERVAL_S = 0.2


def add_progress_arguments(parser: argparse._ActionsContainer) -> None:
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar on stderr (it is drawn only on a terminal, after 2 s)")
    # Milliseconds a phase must last before its bar shows (tests set 0).
    parser.add_argument("--progress-delay-ms", type=int, default=int(DEFAULT_DELAY_S * 1000), help=argparse.SUPPRESS)


class Progress:
    """The bars of one command run. Every method is a no-op when the bars are off."""

    def __init__(self, enabled: bool, *, delay: float = DEFAULT_DELAY_S, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.delay = max(0.0, delay)
        self.stream = stream or sys.stderr
        self._bar: Any = None
        self._sizes: dict[str, int] = {}
        self._bytes: dict[str, int] = {}
        self._seen: dict[str, int] = {}
        self._files = 0
        self._done_files = 0
        self._spans = 0

    @classmethod
    def from_args(cls, args: argparse.Namespace, stream: TextIO | None = None) -> Progress:
        out = stream or sys.stderr
        enabled = not getattr(args, "quiet", False) and out.isatty()
        delay_ms = getattr(args, "progress_delay_ms", None)
        return cls(enabled, delay=DEFAULT_DELAY_S if delay_ms is None else delay_ms / 1000, stream=out)

    def _open(self, **kwargs: Any) -> None:
        from tqdm import tqdm

        self.close()
        self._bar = tqdm(file=self.stream, delay=self.delay, mininterval=_MIN_INTERVAL_S, dynamic_ncols=True,
                         leave=False, **kwargs)

    def close(self) -> None:
        """End the phase: a bar that was drawn is erased (its line left empty for what follows)."""
        bar, self._bar = self._bar, None
        if bar is not None:
            bar.close()
            self.stream.flush()

    # -- reading ----------------------------------------------------------------------------------------
    def reading(self, files: list[str]) -> None:
        """A bar over the bytes of ``files`` (files, spans and runs in its text)."""
        if not self.enabled:
            return
        self._sizes = {}
        for name in files:
            try:
                self._sizes[name] = os.path.getsize(name)
            except OSError:
                self._sizes[name] = 0
        self._files = len(files)
        self._open(total=sum(self._sizes.values()) or None, unit="B", unit_scale=True, unit_divisor=1024,
                   desc="reading")
        self._postfix()

    def _postfix(self, runs: int | None = None) -> None:
        if self._bar is not None:
            text = f"{self._done_files}/{self._files} files, {self._spans:,} spans"
            self._bar.set_postfix_str(text if runs is None else f"{text}, {runs:,} runs", refresh=False)

    def source(self, report: Any, done: bool) -> None:
        """The extraction's progress callback: bytes and spans read so far; the file's end."""
        if self._bar is None:
            return
        name = report.source
        now = report.spans_read + report.logs_read
        self._spans += now - self._seen.get(name, 0)
        self._seen[name] = now
        read = int(getattr(report, "bytes_read", 0) or 0)
        if done:
            self._done_files += 1
            read = max(read, self._sizes.get(name, 0))  # the whole file counts once it is done
        moved = read - self._bytes.get(name, 0)
        self._bytes[name] = read
        self._postfix()
        self._bar.update(max(0, moved))  # redraws at most every _MIN_INTERVAL_S, never before the delay

    def read(self, runs: int) -> None:
        """Reading is over: ``runs`` were assembled."""
        self._postfix(runs)
        self.close()

    # -- judging ----------------------------------------------------------------------------------------
    def judging(self, total: int) -> None:
        """A bar over ``total`` judgments (with the ETA tqdm computes)."""
        if self.enabled:
            self._open(total=total, unit="judgment", desc="judging")

    def judged(self, tokens: int, failures: int) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(f"{tokens:,} tokens, {failures} failed", refresh=False)
            self._bar.update(1)
