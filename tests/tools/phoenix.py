"""Arize Phoenix as a real tracing backend for the tests: its own venv under ``.cache``, a server on 127.0.0.1.

Phoenix has many dependencies that must not enter the project's venv, so it lives in
``.cache/phoenix-venv`` (git-ignored; the same venv ``ensure_tools.sh --e2e`` fills). Installing takes
minutes, so it happens once: a stamp file records the pinned version, and the venv is rebuilt only when
it is missing or the pin changes. The server gets free ports (HTTP and gRPC off 4317/6006), a private
working dir and sqlite file, and every setting that makes it reach the internet turned off.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.tools.otlp import free_port

PHOENIX_VERSION = "20.26.1"  # verified: OTLP/HTTP /v1/traces, REST /v1/projects/{p}/spans and span_annotations
ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".cache" / "phoenix-venv"
STAMP = VENV / ".otel-toolscore-phoenix-pin"
INSTALL_TIMEOUT_S = 1200.0

T = TypeVar("T")


def _installed_version() -> str | None:
    """The arize-phoenix version found in the venv's site-packages (no interpreter start: that takes seconds)."""
    found = sorted(VENV.glob("lib/python*/site-packages/arize_phoenix-*.dist-info"))
    if not found:
        return None
    return found[-1].name.removeprefix("arize_phoenix-").removesuffix(".dist-info")


def ensure_phoenix() -> Path:
    """The ``phoenix`` executable of the pinned version, installing it into ``VENV`` if needed."""
    binary = VENV / "bin" / "phoenix"
    VENV.parent.mkdir(parents=True, exist_ok=True)
    # One installer at a time (parallel test workers, or ensure_tools.sh's --e2e path).
    with open(VENV.parent / "phoenix-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists() and STAMP.exists() and STAMP.read_text().strip() == PHOENIX_VERSION:
            return binary
        if binary.exists() and _installed_version() == PHOENIX_VERSION:
            # Built by another path (ensure_tools.sh) with the same pin: adopt it instead of reinstalling.
            STAMP.write_text(PHOENIX_VERSION + "\n")
            return binary
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=120)
        done = subprocess.run(
            [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", f"arize-phoenix=={PHOENIX_VERSION}"],
            capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pip install arize-phoenix=={PHOENIX_VERSION} failed:\n{done.stderr[-4000:]}")
        STAMP.write_text(PHOENIX_VERSION + "\n")
        return binary


def get_json(url: str, timeout: float = 10.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def wait_until(what: str, probe: Callable[[], T | None], timeout: float = 30.0, interval: float = 0.25) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` and the last error."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = probe()
            if value:
                return value
        except (OSError, urllib.error.URLError, KeyError, ValueError) as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not seen within {timeout:.0f}s (last error: {last_error!r})")
        time.sleep(interval)


@dataclass(frozen=True)
class PhoenixServer:
    url: str  # http://127.0.0.1:<port>; OTLP/HTTP at {url}/v1/traces, REST at {url}/v1/...
    grpc_port: int
    log: Path
    proc: subprocess.Popen[bytes]

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else "(no log)"


def _env(port: int, grpc_port: int, workdir: Path) -> dict[str, str]:
    # Nothing inherited that could point Phoenix (or its own OTel instrumentation) elsewhere.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    env.update(
        PHOENIX_HOST="127.0.0.1",
        PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT=str(grpc_port),
        PHOENIX_WORKING_DIR=str(workdir),
        PHOENIX_SQL_DATABASE_URL=f"sqlite:///{workdir / 'phoenix.db'}",
        # Documented in phoenix/config.py of the pinned version: the master switch for the UI's
        # FullStory/Scarf pixels, and "no public-internet requests on its own initiative".
        PHOENIX_TELEMETRY_ENABLED="false",
        PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
        PHOENIX_DISABLE_AGENT_ASSISTANT="true",
    )
    return env


@contextlib.contextmanager
def phoenix_server(tmp: Path, start_timeout: float = 180.0) -> Iterator[PhoenixServer]:
    """``phoenix serve`` on 127.0.0.1 with free ports and its state under ``tmp``; always stopped."""
    binary = ensure_phoenix()
    port, grpc_port = free_port(), free_port()
    workdir = tmp / "phoenix"
    workdir.mkdir(parents=True, exist_ok=True)
    log = tmp / "phoenix.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [str(binary), "serve"], stdout=out, stderr=subprocess.STDOUT, env=_env(port, grpc_port, workdir),
            cwd=workdir, start_new_session=True,
        )
    server = PhoenixServer(url=f"http://127.0.0.1:{port}", grpc_port=grpc_port, log=log, proc=proc)
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"phoenix serve exited with {proc.returncode} before ready:\n{server.log_tail()}")
            try:
                # /readyz answers once the database (migrated at start) is reachable.
                with urllib.request.urlopen(f"{server.url}/readyz", timeout=2) as response:
                    if response.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() >= deadline:
                raise TimeoutError(f"phoenix serve not ready within {start_timeout:.0f}s:\n{server.log_tail()}")
            time.sleep(0.2)
        yield server
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    # Its own session (start_new_session): the signal reaches only Phoenix and what it started.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
