"""Run ``otel-toolscore serve`` as a process: start it, wait until it listens, stop it with SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Mapping

CODE = "import sys; from otel_toolscore.cli import main; sys.exit(main())"


def serve_until_listening(*args: str, env: Mapping[str, str]) -> tuple[int, str]:
    """``serve *args`` in ``env`` (the whole environment), stopped once it said it listens: (exit code, stderr)."""
    proc = subprocess.Popen([sys.executable, "-c", CODE, "serve", *args], env=dict(env), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line:
            proc.wait(timeout=30)
            raise AssertionError(f"serve did not start: {proc.stderr.read() if proc.stderr else ''}")
        assert json.loads(line)["event"] == "listening", line
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err
