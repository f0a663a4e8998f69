"""A command on a real pseudo-terminal (the ``pty`` module), and the screen a user sees afterwards."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
from collections.abc import Mapping, Sequence
from pathlib import Path

COLUMNS, ROWS = 120, 40
_CSI = re.compile(r"\x1b\[(\d*)([A-Za-z])")


def on_terminal(command: Sequence[str], *, env: Mapping[str, str], cwd: Path, stdout_file: Path | None = None,
                columns: int = COLUMNS, timeout: float = 120) -> tuple[int, str]:
    """Run ``command`` with stdin, stderr and (unless ``stdout_file``) stdout on a new
    pseudo-terminal of ``columns`` x ROWS; return its exit status and every byte the terminal received."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, columns, 0, 0))
    try:
        # stdout to a file, not a pipe: the child never waits for a reader
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(open(stdout_file, "w")) if stdout_file is not None else None
            proc = subprocess.Popen(list(command), env=dict(env), cwd=cwd, stdin=slave, stdout=out or slave, stderr=slave)
    finally:
        os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=timeout), b"".join(chunks).decode("utf-8", "replace")


def screen(raw: str, columns: int = COLUMNS) -> list[str]:
    """The lines a terminal of ``columns`` shows after receiving ``raw`` (enough of a VT100 for what
    the command line and tqdm write: text, CR, LF, erase in line, cursor up; auto-wrap)."""
    lines: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(raw):
        ch = raw[i]
        match = _CSI.match(raw, i) if ch == "\x1b" else None
        if match:
            n, op = int(match.group(1) or 1), match.group(2)
            if op == "A":
                row = max(0, row - n)
            elif op == "K":
                del lines[row][col:]
            i = match.end()
            continue
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row, col = row + 1, 0
        elif ch >= " ":
            if col >= columns:
                row, col = row + 1, 0
            while len(lines) <= row:
                lines.append([])
            line = lines[row]
            line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
        while len(lines) <= row:
            lines.append([])
        i += 1
    return ["".join(line).rstrip() for line in lines]
