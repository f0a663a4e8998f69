"""``make bench`` works: the whole suite in ``--quick`` mode (tiny sizes) writes a complete results file.

No timing assertions: quick numbers mean nothing; this proves every section runs and reports.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.instructions import STAGES
from bench.offline_instructions import STAGES as OFFLINE_STAGES

ROOT = Path(__file__).resolve().parents[2]
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
    assert {(r["workload"], r["threads"], r["content_captured"], r["pause_between_runs_ms"]) for r in hot} == {
        ("genai7", 1, False, 0), ("genai7", 8, False, 0), ("genai7", 1, True, 0), ("genai7", 8, True, 0),
        ("openinference30", 1, True, 0), ("openinference30", 8, True, 0),
        ("genai7", 1, False, 5),  # runs trickling in, 5 ms apart
    }
    for row in hot:  # both CPU figures, each against its target
        assert row["ratio_agent"] > 0 and row["verdict_agent"] in ("PASS", "MISS")
        assert row["ratio_total"] > 0 and row["verdict_total"] in ("PASS", "MISS")
        assert row["roots_scored_and_exported"] > 0  # the candidate really scored the runs it timed
        # The yardstick ran in the same rounds, scored its runs, and set this row's whole-process target.
        assert row["yardstick_roots_scored_and_exported"] > 0 and row["yardstick_ratio_total"] > 0
        assert row["target_total"] == pytest.approx(1 + 2 * (row["yardstick_ratio_total"] - 1), abs=0.0006)
        assert row["target_agent"] == 1.10
        assert row["verdict_agent"] == ("PASS" if row["ratio_agent"] <= 1.10 else "MISS")
        assert row["verdict_total"] == ("PASS" if row["ratio_total"] <= row["target_total"] else "MISS")
        # The lean full design ran in the same rounds, scored its runs, and is judged by the same targets.
        assert row["lean_roots_scored_and_exported"] > 0 and row["lean_ratio_total"] > 0 and row["lean_ratio_agent"] > 0
        assert row["lean_worker_us_per_run"] > 0 and row["gap_total"] > 0 and row["gap_agent"] > 0
        assert row["lean_verdict_agent"] == ("PASS" if row["lean_ratio_agent"] <= 1.10 else "MISS")
        assert row["lean_verdict_total"] == ("PASS" if row["lean_ratio_total"] <= row["target_total"] else "MISS")
    yardstick = doc["sections"]["yardstick"]["rows"]
    assert len(yardstick) == 3  # the two minimal processors and ours, each against the SDK alone
    assert all(r["roots_scored_and_exported"] > 0 and r["ratio_total"] > 0 for r in yardstick)
    worker = next(r for r in yardstick if r["name"].endswith("minimal processor, worker thread"))
    assert all(r["target_total"] == pytest.approx(1 + 2 * (worker["ratio_total"] - 1), abs=0.002) for r in yardstick)
    # our worker's stages beside the lean design's worker, on each hot-path workload
    stages = [r for r in doc["sections"]["breakdown"]["rows"] if r["name"].startswith("worker stages")]
    assert {(r["workload"], r["content_captured"]) for r in stages} == {
        ("genai7", False), ("genai7", True), ("openinference30", True), ("openinference30", False)
    }
    for r in stages:
        parts = ("prepare_us", "read_us", "assembly_us", "scoring_us", "outputs_us", "hand_on_us", "other_us")
        assert all(r[p] >= 0 for p in parts if p != "other_us") and r["total_us"] > 0 and r["lean_total_us"] > 0
        assert sum(r[p] for p in parts) == pytest.approx(r["total_us"], abs=0.8)  # the stages make up the whole
    scorer_modes = {r["mode"] for r in doc["sections"]["scorer"]["rows"]}
    assert scorer_modes == {"ordered-lenient", "ordered-strict", "unordered", "subset", "superset"}
    assert all(r["spans"] > 0 for r in doc["sections"]["extraction"]["rows"])
    offline = {r["name"].split(",")[0]: r for r in doc["sections"]["offline"]["rows"]}
    floors = {"offline protobuf": ("ExportTraceServiceRequest.FromString", 0.10),
              "offline json lines": ("json.loads per line, streaming", 0.40)}
    for name, (floor, target) in floors.items():  # ours and its floor, on the same file in the same rounds
        row = offline[name]
        assert row["floor"] == floor and row["target"] == target
        assert row["spans"] > 0 and row["spans_per_s"] > 0 and row["floor_spans_per_s"] > 0 and row["ratio"] > 0
        assert row["verdict"] == ("PASS" if row["ratio"] >= target else "MISS")
    rss = offline["offline peak RSS"]
    assert rss["peak_rss_mb"] > 0 and rss["spans"] > 0 and rss["target"] == 300
    assert rss["verdict"] == ("PASS" if rss["peak_rss_mb"] <= 300 else "MISS")
    service = {r["target"]: r for r in doc["sections"]["service"]["rows"]}
    assert service["service"]["complete"] and service["rotel"]["complete"]
    ours = service["service"]
    assert ours["runs_scored"] == ours["runs"] and ours["evaluation_records"] >= ours["runs"]
    assert ours["spans_per_s"] > 0 and ours["cpu_us_per_span"] > 0  # read from the service's own /proc stat
    assert service["rotel"]["cpu_us_per_span"] >= 0  # clock ticks: a tiny load may cost rotel less than one
    assert ours["rotel_spans_per_s"] == service["rotel"]["spans_per_s"]
    assert ours["rotel_cpu_us_per_span"] == service["rotel"]["cpu_us_per_span"]
    assert ours["verdict_spans_per_s"] == ("PASS" if ours["spans_per_s"] >= 12_000 else "MISS")
    assert ours["verdict_cpu"] == ("PASS" if ours["cpu_us_per_span"] <= 60 else "MISS")
    imports = doc["sections"]["import_time"]["rows"]  # the two import targets, and the pydantic floor
    assert sorted(r["target"] for r in imports if r["target"] is not None) == [0.5, 1.6]
    for row in imports:
        assert row["ratio"] > 0 and row["sdk_trace_ms"] > 0 and row["candidate_ms"] > 0
        if row["target"] is not None:
            assert row["verdict"] == ("PASS" if row["ratio"] <= row["target"] else "MISS")
    # The table is printed too, with the verdict columns.
    assert "## hot_path" in proc.stdout and "## import_time" in proc.stdout
    assert "total target" in proc.stdout and "CPU µs/span" in proc.stdout and "json.loads per line, streaming" in proc.stdout


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lean", ["0", "1"])
def test_instruction_count_driver_processes_what_it_queued(lean: str) -> None:
    """``bench/instructions.py`` counts with callgrind (not installed here); the process it has
    callgrind run is plain Python: it queues recorded runs through the processor's hooks and has the
    worker's code process them, warm-up and counted halves alike, for ours and the lean design."""
    for count in ("0", "1"):
        proc = subprocess.run(
            [sys.executable, "bench/instructions.py", "--child", "openinference30", "on", "3", lean, count],
            cwd=ROOT, capture_output=True, text=True, timeout=110, check=False,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        # 2 * 3 + 20 runs queued: the warm-up's 23, and the counted 3 when counting
        assert f"scored roots: {23 + (3 if count == '1' else 0)}" in proc.stdout, proc.stdout


@pytest.mark.timeout(180)
def test_instruction_count_driver_stops_after_each_stage() -> None:
    """``bench/instructions.py --stages`` counts our worker stopped after each stage: the counted half
    is prepared, read, assembled or scored without going further — only the whole worker hands its
    scored roots on (the warm-up's 23 are handed on in every process)."""
    assert [name for name, _what in STAGES] == ["prepare", "read", "assemble", "score", "full"]
    for stage, _what in STAGES:
        proc = subprocess.run(
            [sys.executable, "bench/instructions.py", "--child", "genai7", "off", "3", "0", "1", "nogc", stage],
            cwd=ROOT, capture_output=True, text=True, timeout=110, check=False,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        assert f"scored roots: {23 + (3 if stage == 'full' else 0)}" in proc.stdout, (stage, proc.stdout)
    for args, said in ((["0", "1", "nogc", "scroe"], "unknown stage 'scroe'"), (["1", "1", "nogc", "read"], "our worker only")):
        # refused before anything is recorded: a misspelt stage, or a stage of the lean design's one loop
        proc = subprocess.run(
            [sys.executable, "bench/instructions.py", "--child", "genai7", "off", "3", *args],
            cwd=ROOT, capture_output=True, text=True, timeout=110, check=False,
        )
        assert proc.returncode != 0 and said in proc.stderr, proc.stderr[-2000:]
        assert "scored roots" not in proc.stdout


@pytest.mark.timeout(300)
def test_ab_comparison_measures_both_trees_and_reports_the_difference() -> None:
    """``bench/compare.py`` measures each source tree in its own processes, alternating, and prints each
    one's ratios and the difference (here the same tree twice, one process and one round each)."""
    proc = subprocess.run(
        [sys.executable, "bench/compare.py", str(ROOT), str(ROOT), "--pairs", "1", "--rounds", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=170, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("genai7, 1 thread, content off: whole process over the SDK alone")
    for name in ("A", "B"):
        row = next(line for line in lines if line.startswith(f"  {name} "))
        ratio = float(row.split("mean ")[1].split()[0])
        assert 0.5 < ratio < 10  # the processor costs something, within reason
        agent = float(row.split("agent thread ")[1].split()[0])  # the application's threads alone
        assert 0.5 < agent < 10
    assert lines[-1].startswith("  B - A: ") and "(agent thread " in lines[-1]
    bad = subprocess.run(
        [sys.executable, "bench/compare.py", str(ROOT), str(ROOT), "--pairs", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert bad.returncode == 2 and "--pairs" in bad.stderr
    # the trickle row: runs 5 ms apart
    trickle = subprocess.run(
        [sys.executable, "bench/compare.py", str(ROOT), str(ROOT), "--pairs", "1", "--rounds", "1", "--pause-ms", "5"],
        cwd=ROOT, capture_output=True, text=True, timeout=170, check=False,
    )
    assert trickle.returncode == 0, trickle.stderr[-4000:]
    assert trickle.stdout.startswith("genai7, 1 thread, content off, runs 5 ms apart: whole process over the SDK alone")
    negative = subprocess.run(
        [sys.executable, "bench/compare.py", str(ROOT), str(ROOT), "--pause-ms", "-1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert negative.returncode == 2 and "--pause-ms" in negative.stderr
    # the worker's stages, A and B in alternating processes, each stage's difference
    stages = subprocess.run(
        [sys.executable, "bench/compare.py", str(ROOT), str(ROOT), "--stages", "--pairs", "1", "--rounds", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=170, check=False,
    )
    assert stages.returncode == 0, stages.stderr[-4000:]
    lines = stages.stdout.splitlines()
    assert lines[0].startswith("genai7, content off: worker stages, us per run")
    rows = {line.split()[0]: [float(x) for x in line.split()[1:]] for line in lines[2:-1]}
    assert set(rows) == {"prepare", "read", "assembly", "scoring", "outputs", "hand_on", "other", "total", "lean_total"}
    for a, b, diff in rows.values():
        assert a > 0 and b > 0 and abs(b - a - diff) < 0.11
    assert 20 < rows["total"][0] < 2000
    one_thread = subprocess.run(
        [sys.executable, "bench/compare.py", str(ROOT), str(ROOT), "--stages", "--threads", "8"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert one_thread.returncode == 2 and "--stages" in one_thread.stderr


@pytest.mark.timeout(300)
def test_offline_instruction_count_driver_stops_after_each_stage() -> None:
    """``bench/offline_instructions.py`` counts with callgrind (not installed here); the process it has
    callgrind run is plain Python: it reads the corpus once (warm-up), then once more stopped after
    a stage — only the whole reader gives runs — for ours and the lean offline reader, and refuses a
    misspelt stage and a content setting the lean reader has not."""
    assert [name for name, _what in OFFLINE_STAGES["ours"]] == ["views", "read", "keep", "full"]
    assert [name for name, _what in OFFLINE_STAGES["lean"]] == ["views", "read", "full"]
    for who, lean, fmt in (("ours", "0", "0"), ("lean", "1", "1")):
        for stage, _what in OFFLINE_STAGES[who]:
            proc = subprocess.run(
                [sys.executable, "bench/offline_instructions.py", "--child", lean, "1", fmt, "on", "1", stage],
                cwd=ROOT, capture_output=True, text=True, timeout=110, check=False,
            )
            assert proc.returncode == 0, proc.stderr[-4000:]
            warm = re.search(r"runs: (\d+) warm-up, (\d+) counted", proc.stdout)
            assert warm is not None, proc.stdout
            assert int(warm.group(1)) > 500  # the corpus's runs, read whole in the warm-up
            assert int(warm.group(2)) == (int(warm.group(1)) if stage == "full" else 0), (who, stage)
    for args, said in ((["0", "1", "0", "on", "1", "kept"], "unknown stage 'kept'"),
                       (["1", "1", "0", "off", "1", "full"], "reads no content")):
        proc = subprocess.run(
            [sys.executable, "bench/offline_instructions.py", "--child", *args],
            cwd=ROOT, capture_output=True, text=True, timeout=110, check=False,
        )
        assert proc.returncode != 0 and said in proc.stderr, proc.stderr[-2000:]
        assert "runs:" not in proc.stdout
