"""Bounded reading of the files a user points the configuration at (rules, judge tools, ``--config``).

One reader for all of them, so every such file gets the same guarantees: only a regular file is read
(a FIFO, ``/dev/zero`` or a directory is refused at once, without waiting for a writer or reading
forever), at most :data:`MAX_CONFIG_FILE_BYTES` are read (a larger file is refused before its content
is loaded), and the bytes must be UTF-8. Every refusal is one exception whose message names the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["MAX_CONFIG_FILE_BYTES", "read_config_text"]

#: Largest configuration file read (rules, tool lists and service configs are a few KiB in practice).
MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024

_CHUNK = 64 * 1024


def read_config_text(
    path: str | Path,
    what: str,
    *,
    error: type[Exception] = ValueError,
    max_bytes: int = MAX_CONFIG_FILE_BYTES,
) -> str:
    """The text of the configuration file ``path`` (``what`` names its role in messages).

    Raises ``error`` (e.g. :class:`~otel_toolscore.settings.ConfigError`) with a message naming the
    file when it cannot be opened, is not a regular file, holds more than ``max_bytes`` bytes, or is
    not UTF-8 text. A leading UTF-8 byte-order mark is dropped.
    """
    p = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; the type check below refuses it.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise error(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{what} {p} is not a regular file (a device, FIFO or directory cannot be read as one)")
        if info.st_size > max_bytes:
            raise error(f"{what} {p} is too large: {info.st_size} bytes, the limit is {max_bytes}")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:  # the file may grow while it is read: stop one byte past the limit
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise error(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > max_bytes:
        raise error(f"{what} {p} is too large: more than {max_bytes} bytes")
    data = b"".join(chunks)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{what} {p} is not UTF-8 text (invalid byte at offset {exc.start})") from None
