"""External tools for the tests (rotel, promtool), installed on demand by ``ensure_tools.sh``.

Nothing is installed system-wide: rotel comes from PyPI into the project's venv, promtool (of the
Prometheus 3 release ``deploy/`` pins) from Debian's ``promtool`` package unpacked under
``.cache/debs`` (git-ignored).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.tools.otlp import free_port, wait_port

ROOT = Path(__file__).resolve().parents[2]
ENSURE = Path(__file__).with_name("ensure_tools.sh")
DEBS = ROOT / ".cache" / "debs"


def _ensure() -> None:
    subprocess.run(["bash", str(ENSURE), sys.executable], check=True, timeout=600, capture_output=True)


def rotel_binary() -> Path:
    """The ``rotel-agent`` binary shipped in the ``rotel`` wheel."""
    try:
        import rotel  # noqa: F401
    except ImportError:
        _ensure()
    import importlib

    rotel_pkg = importlib.import_module("rotel")
    path = Path(rotel_pkg.__file__ or "").parent / "rotel-agent"
    if not path.exists():
        raise FileNotFoundError(f"rotel-agent not found in {path.parent}")
    return path


def promtool_binary() -> Path:
    path = DEBS / "promtool" / "usr" / "bin" / "promtool"
    if not path.exists():
        _ensure()
    return path


@contextlib.contextmanager
def rotel(tmp: Path, exporter_endpoint: str, *, protocol: str = "grpc", extra: tuple[str, ...] = ()) -> Iterator[tuple[int, int]]:
    """A rotel collector on 127.0.0.1 (OTLP gRPC and HTTP receivers) exporting OTLP to ``exporter_endpoint``.

    Yields (grpc_port, http_port). Runs in the foreground of its own process; stopped with SIGTERM.
    """
    grpc_port, http_port = free_port(), free_port()
    log = tmp / f"rotel-{grpc_port}.log"
    args = [
        str(rotel_binary()), "start",
        "--otlp-grpc-endpoint", f"127.0.0.1:{grpc_port}",
        "--otlp-http-endpoint", f"127.0.0.1:{http_port}",
        "--exporter", "otlp",
        "--otlp-exporter-endpoint", exporter_endpoint,
        "--otlp-exporter-protocol", protocol,
        "--batch-timeout", "100ms",
        "--pid-file", str(tmp / f"rotel-{grpc_port}.pid"),
        "--log-file", str(log),
        *extra,
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROTEL_", "OTEL_"))}
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        wait_port(grpc_port)
        wait_port(http_port)
        yield grpc_port, http_port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        time.sleep(0)


def ensure_e2e_tools() -> dict[str, Path]:
    """VictoriaMetrics, vmalert, Alertmanager (Debian trixie) and Phoenix (PyPI, own venv), installed on demand."""
    paths = {
        "victoria-metrics": DEBS / "victoria-metrics" / "usr" / "bin" / "victoria-metrics",
        "vmalert": DEBS / "victoria-metrics" / "usr" / "bin" / "vmalert",
        "alertmanager": DEBS / "prometheus-alertmanager" / "usr" / "bin" / "alertmanager-local",
        "phoenix": ROOT / ".cache" / "phoenix-venv" / "bin" / "phoenix",
    }
    if not all(p.exists() for p in paths.values()):
        subprocess.run(["bash", str(ENSURE), "--e2e", sys.executable], check=True, timeout=1200, capture_output=True)
    # The directory the patched Alertmanager reads its default template from (see ensure_tools.sh).
    templates = Path("/tmp/otel-toolscore-am-tmpl-000000")
    templates.mkdir(exist_ok=True)
    for source in (DEBS / "prometheus-alertmanager" / "usr" / "share" / "prometheus" / "alertmanager").glob("*.tmpl"):
        (templates / source.name).write_bytes(source.read_bytes())
    return paths


@contextlib.contextmanager
def process(args: list[str], log: Path, env: dict[str, str] | None = None, stop_signal: int = 15) -> Iterator[subprocess.Popen[bytes]]:
    """A background process logging to ``log``; stopped (signal, then kill) on exit."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(stop_signal)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
