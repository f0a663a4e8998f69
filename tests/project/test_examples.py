"""Every runnable example in examples/ exits 0 (each one checks its own printed results).

Generic on purpose: any ``examples/*.py`` added later is covered too. Examples that need a model
start their own local server on 127.0.0.1 when ``OPENAI_BASE_URL`` is not set, so the variables
that could point them (or an OTLP exporter) at another host are removed from their environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
#: Variable prefixes an example must not inherit: they could send traffic off this machine.
SCRUBBED = ("OPENAI_", "OTEL_EXPORTER_OTLP_", "LANGFUSE_")
TIMEOUT_S = 120


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
    env["PYTHONUNBUFFERED"] = "1"
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def test_examples_exist() -> None:
    names = {p.name for p in EXAMPLES}
    assert {
        "code_correct_tool.py",
        "code_strict_mode.py",
        "code_order_validation.py",
        "code_flexible_order.py",
    } <= names


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(example: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(example)],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, (
        f"{example.name} exited {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    )
    assert proc.stdout.strip(), f"{example.name} printed nothing"
