"""Progress bars on stderr: shown on a terminal (a real pty here), never with ``--quiet`` or when
stderr is a pipe; stdout stays the machine-readable output."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MULTI = ROOT / "tests" / "corpus" / "vercel_ai" / "ai6_multi_step.traces.jsonl"


def _big_input(tmp_path: Path, copies: int = 300) -> Path:
    """Many export requests (> 1,024 spans, so the bar moves inside the file too)."""
    lines = [line for line in MULTI.read_text().splitlines() if line.strip()]
    path = tmp_path / "big.traces.jsonl"
    path.write_text("\n".join(lines * copies) + "\n")
    return path


def _run(argv: list[str], *, stderr_tty: bool, tmp_path: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="120")
    command = [sys.executable, "-c", "import sys; from otel_toolscore.cli import main; sys.exit(main(sys.argv[1:]))", *argv]
    if not stderr_tty:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        return done.returncode, done.stdout, done.stderr
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a terminal has a size
    stdout = tmp_path / "stdout.txt"
    with open(stdout, "w") as out_file:  # a file, not a pipe: the child never waits for us to read it
        proc = subprocess.Popen(command, env=env, stdout=out_file, stderr=slave, text=True)
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
    code = proc.wait(timeout=60)
    return code, stdout.read_text(), b"".join(chunks).decode("utf-8", "replace")


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    big = _big_input(tmp_path)
    code, out, err = _run(["score", "--format", "json", "--expected-tool", "getWeather", "--progress-delay-ms", "0", str(big)],
                          stderr_tty=True, tmp_path=tmp_path)
    assert code == 0, err
    assert json.loads(out)["summary"]["runs"] >= 1  # stdout untouched by the bar
    assert "reading" in err and "/1 files" in err and "spans" in err
    assert "1/1 files" in err and " runs" in err  # the last state: every file read, runs assembled
    assert "\r" in err  # a bar redrawn in place


def test_no_bar_with_quiet_or_without_a_terminal(tmp_path: Path) -> None:
    big = _big_input(tmp_path, copies=50)
    argv = ["extract", "--format", "jsonl", "--progress-delay-ms", "0", str(big)]
    code, out, err = _run([*argv, "--quiet"], stderr_tty=True, tmp_path=tmp_path)
    assert code == 0 and err == "" and out.strip()
    code, out, err = _run(argv, stderr_tty=False, tmp_path=tmp_path)
    assert code == 0 and err == "" and out.strip()
