"""``make bench`` works: the whole suite in ``--quick`` mode (tiny sizes) writes a complete results file.

No timing assertions: quick numbers mean nothing; this proves every section runs and reports.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = {"hot_path", "yardstick", "breakdown", "scorer", "extraction", "offline", "memory", "judge", "service", "import_time"}


@pytest.mark.timeout(300)
def test_bench_quick_runs_every_section(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "bench/run.py", "--quick", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=280, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    doc = json.loads(out.read_text())
    assert doc["quick"] is True
    assert set(doc["sections"]) == SECTIONS
    for name, section in doc["sections"].items():
        assert section["status"] == "ok", (name, section["notes"])
        assert section["rows"], name
    hot = doc["sections"]["hot_path"]["rows"]
    assert {(r["workload"], r["threads"], r["content_captured"]) for r in hot} == {
        ("genai7", 1, False), ("genai7", 8, False), ("genai7", 1, True), ("genai7", 8, True),
        ("openinference30", 1, True), ("openinference30", 8, True),
    }
    for row in hot:  # both CPU figures, each against its target
        assert row["ratio_agent"] > 0 and row["verdict_agent"] in ("PASS", "MISS")
        assert row["ratio_total"] > 0 and row["verdict_total"] in ("PASS", "MISS")
        assert row["roots_scored_and_exported"] > 0  # the candidate really scored the runs it timed
    yardstick = doc["sections"]["yardstick"]["rows"]
    assert len(yardstick) == 3  # the two minimal processors and ours, each against the SDK alone
    assert all(r["roots_scored_and_exported"] > 0 and r["ratio_total"] > 0 for r in yardstick)
    scorer_modes = {r["mode"] for r in doc["sections"]["scorer"]["rows"]}
    assert scorer_modes == {"ordered-lenient", "ordered-strict", "unordered", "subset", "superset"}
    assert all(r["spans"] > 0 for r in doc["sections"]["extraction"]["rows"])
    service = {r["target"]: r for r in doc["sections"]["service"]["rows"]}
    assert service["service"]["complete"] and service["rotel"]["complete"]
    # The table is printed too.
    assert "## hot_path" in proc.stdout and "## import_time" in proc.stdout
