"""Import time of ``otel_toolscore`` vs ``opentelemetry.sdk.trace`` alone, in fresh interpreters.

Each sample is one fresh ``python -c`` that times the import with ``perf_counter`` (interpreter
start-up is not counted); baseline and candidate alternate, and the median of N samples is taken.
``-X importtime`` is used once more to name the slowest modules our import adds.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

from .common import Result

ROOT = Path(__file__).resolve().parent.parent

_SNIPPET = "import time; t = time.perf_counter(); import {mod}; print(time.perf_counter() - t)"


def _sample(module: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _SNIPPET.format(mod=module)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def _slowest_added(limit: int = 5) -> list[str]:
    """Top self-time modules imported by ``otel_toolscore`` that ``opentelemetry.sdk.trace`` does not import."""

    def table(module: str) -> dict[str, int]:
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {module}"],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
        )
        rows: dict[str, int] = {}
        for line in proc.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            parts = line[len("import time:"):].split("|")
            if len(parts) == 3:
                rows[parts[2].strip()] = int(parts[0])
        return rows

    ours = table("otel_toolscore")
    sdk = table("opentelemetry.sdk.trace")
    added = sorted(((us, name) for name, us in ours.items() if name not in sdk), reverse=True)[:limit]
    return [f"{name} {us / 1000:.1f} ms" for us, name in added]


def run(result: Result, *, quick: bool) -> None:
    n = 1 if quick else 9
    for label, candidate in (
        ("otel_toolscore", "otel_toolscore"),
        # what a user's set-up imports: the package and its span processor (the issue's "processor
        # and code scorer"), with the SDK it needs
        ("otel_toolscore + processor", "otel_toolscore.online.processor"),
        # the floor under the package's data model: pydantic with one model defined (``import
        # pydantic`` alone is lazy; defining a model loads its field machinery), nothing of ours
        ("one pydantic model, nothing else", "bench.one_pydantic_model"),
    ):
        base: list[float] = []
        cand: list[float] = []
        for i in range(n):
            if i % 2 == 0:
                base.append(_sample("opentelemetry.sdk.trace"))
                cand.append(_sample(candidate))
            else:
                cand.append(_sample(candidate))
                base.append(_sample("opentelemetry.sdk.trace"))
        ratios = [c / b for b, c in zip(base, cand)]
        result.add(
            name=f"import time, {label} vs opentelemetry.sdk.trace",
            samples=n,
            sdk_trace_ms=round(statistics.median(base) * 1000, 1),
            otel_toolscore_ms=round(statistics.median(cand) * 1000, 1),
            ratio=round(statistics.median(ratios), 2),
            slowest_added_modules=_slowest_added() if not quick and candidate == "otel_toolscore" else [],
        )
