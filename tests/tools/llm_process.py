"""A local OpenAI-compatible LLM server process for the real-LLM tests: start, wait, stop.

Shared by the llama.cpp server from PyPI (tests/tools/llama.py) and the one over node-llama-cpp
from npm (tests/tools/node_llm.py): both run in their own process group on 127.0.0.1 and are ready
when ``GET /v1/models`` answers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class LlmServer:
    base_url: str  # ends in /v1
    model: str  # the model name the server answers to
    log_path: Path
    process: subprocess.Popen[bytes]

    def log_tail(self, chars: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-chars:]
        return ""


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def llm_server_process(
    command: Sequence[str],
    *,
    name: str,
    port: int,
    model: str,
    log_path: Path,
    cwd: Path,
    env: Mapping[str, str],
    start_timeout_s: float,
    stop_timeout_s: float = 10.0,
) -> Iterator[LlmServer]:
    """Run ``command`` (a server listening on 127.0.0.1:``port``) until the block ends."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen(list(command), stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=dict(env),
                                   start_new_session=True)
    server = LlmServer(f"http://127.0.0.1:{port}/v1", model, log_path, process)
    try:
        deadline = time.monotonic() + start_timeout_s
        while not _ready(f"{server.base_url}/models"):
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}:\n{server.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} not ready after {start_timeout_s:.0f} s:\n{server.log_tail()}")
            time.sleep(0.25)
        yield server
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=stop_timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
