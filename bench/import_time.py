"""Import time of ``otel_toolscore`` vs ``opentelemetry.sdk.trace`` alone, in fresh interpreters.

Two rows have targets, each a ratio to ``import opentelemetry.sdk.trace`` measured in the
same rounds:

* ``from otel_toolscore import ToolScoreSpanProcessor`` ≤ 1.6x — what a user's set-up imports: the
  processor, with the SDK it needs (and no pydantic);
* ``import otel_toolscore`` ≤ 0.5x — the package alone: its version and the table of public names.

The floor row (one pydantic model, nothing of ours) stays for comparison: it is what any module
defining a pydantic model costs, and why the processor's path defines none.

Each sample is one fresh ``python -c`` that times the statement with ``perf_counter`` (interpreter
start-up is not counted); baseline and candidate alternate, and the median of the per-round ratios
is reported (``bench/common.py``). Bytecode is cached, as it is for an installed package (pip
compiles on install): the children write and read it under a temporary ``PYTHONPYCACHEPREFIX``, one
warm-up run each, even when the environment says ``PYTHONDONTWRITEBYTECODE`` — otherwise the figure
would time the compiler on our source files against the SDK's compiled ones. ``-X importtime`` is
used once more to name the slowest modules a statement adds to the SDK's.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import Result

ROOT = Path(__file__).resolve().parent.parent

BASELINE = "import opentelemetry.sdk.trace"
#: (label, statement, target ratio or None for a floor row)
ROWS: tuple[tuple[str, str, float | None], ...] = (
    ("from otel_toolscore import ToolScoreSpanProcessor", "from otel_toolscore import ToolScoreSpanProcessor", 1.6),
    ("import otel_toolscore", "import otel_toolscore", 0.5),
    # the floor under any pydantic data model: pydantic with one model defined (``import pydantic``
    # alone is lazy; defining a model loads its field machinery), nothing of ours
    ("one pydantic model, nothing else", "import bench.one_pydantic_model", None),
)

_SNIPPET = "import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"


def _env(cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _sample(stmt: str, env: dict[str, str]) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _SNIPPET.format(stmt=stmt)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def _slowest_added(stmt: str, env: dict[str, str], limit: int = 5) -> list[str]:
    """Top self-time modules imported by ``stmt`` that ``opentelemetry.sdk.trace`` does not import."""

    def table(code: str) -> dict[str, int]:
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
        )
        rows: dict[str, int] = {}
        for line in proc.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            parts = line[len("import time:"):].split("|")
            if len(parts) == 3:
                rows[parts[2].strip()] = int(parts[0])
        return rows

    ours = table(stmt)
    sdk = table(BASELINE)
    added = sorted(((us, name) for name, us in ours.items() if name not in sdk), reverse=True)[:limit]
    return [f"{name} {us / 1000:.1f} ms" for us, name in added]


def run(result: Result, *, quick: bool) -> None:
    n = 3 if quick else 21
    with tempfile.TemporaryDirectory(prefix="toolscore-pyc-") as cache:
        env = _env(cache)
        for stmt in (BASELINE, *(row[1] for row in ROWS)):
            _sample(stmt, env)  # compiles and caches the bytecode
        for label, stmt, target in ROWS:
            base: list[float] = []
            cand: list[float] = []
            for i in range(n):
                if i % 2 == 0:
                    base.append(_sample(BASELINE, env))
                    cand.append(_sample(stmt, env))
                else:
                    cand.append(_sample(stmt, env))
                    base.append(_sample(BASELINE, env))
            ratios = sorted(c / b for b, c in zip(base, cand))
            ratio = round(statistics.median(ratios), 2)  # the verdict judges the figure shown
            result.add(
                name=f"import time, {label} vs {BASELINE}",
                samples=n,
                sdk_trace_ms=round(statistics.median(base) * 1000, 1),
                candidate_ms=round(statistics.median(cand) * 1000, 1),
                ratio=ratio,
                ratio_spread=[round(ratios[0], 2), round(ratios[-1], 2)],
                target=target,  # the ratio at most (None: a floor row, for comparison)
                verdict=("PASS" if ratio <= target else "MISS") if target is not None else None,
                slowest_added_modules=_slowest_added(stmt, env) if not quick and target is not None else [],
            )
