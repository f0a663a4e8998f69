"""Progress bars on stderr for the offline commands (``tqdm``): reading files, then judging runs.

Shown only when stderr is a terminal and ``--quiet`` is not given, and only once a phase has lasted
``delay`` seconds (two by default), so short inputs print nothing and stdout stays machine-readable.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

__all__ = ["Progress", "add_progress_arguments"]

DEFAULT_DELAY_S = 2.0


def add_progress_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar on stderr")
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
        self._seen: dict[str, int] = {}
        self._files = 0
        self._done_files = 0
        self._spans = 0
        self._done_bytes = 0

    @classmethod
    def from_args(cls, args: argparse.Namespace, stream: TextIO | None = None) -> Progress:
        out = stream or sys.stderr
        enabled = not getattr(args, "quiet", False) and out.isatty()
        delay_ms = getattr(args, "progress_delay_ms", None)
        return cls(enabled, delay=DEFAULT_DELAY_S if delay_ms is None else delay_ms / 1000, stream=out)

    def _open(self, **kwargs: Any) -> None:
        from tqdm import tqdm

        self.close()
        self._bar = tqdm(file=self.stream, delay=self.delay, dynamic_ncols=True, leave=False, **kwargs)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

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
        self._open(total=sum(self._sizes.values()) or None, unit="B", unit_scale=True, desc="reading")
        self._show_reading()

    def _show_reading(self) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(f"{self._done_files}/{self._files} files, {self._spans:,} spans", refresh=False)

    def source(self, report: Any, done: bool) -> None:
        """The extraction's progress callback: spans read so far, and the file's bytes once it is done."""
        if self._bar is None:
            return
        name = report.source
        before = self._seen.get(name, 0)
        now = report.spans_read + report.logs_read
        self._seen[name] = now
        self._spans += now - before
        if done:
            self._done_files += 1
            self._bar.update(self._sizes.get(name, 0))
        self._show_reading()
        self._bar.refresh()

    def read(self, runs: int) -> None:
        """Reading is over: ``runs`` were assembled."""
        if self._bar is not None:
            self._bar.set_postfix_str(f"{self._done_files}/{self._files} files, {self._spans:,} spans, {runs:,} runs")
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
