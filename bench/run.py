"""``make bench``: the whole benchmark suite; prints a table and writes ``bench/results.json``.

Every figure is a ratio against a baseline measured in the same run (interleaved rounds, medians)
or a scaling curve; absolute times are printed for information only — they depend on the machine
and on whatever else it is doing.

Usage: ``python bench/run.py [--quick] [--only hot_path,scorer,...] [--out PATH]``.
``--quick`` runs every section with tiny sizes (seconds, for the smoke test); its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import Result  # noqa: E402

SECTIONS = ("hot_path", "yardstick", "breakdown", "scorer", "extraction", "offline", "memory", "judge", "service", "import_time")

# Columns shown in the terminal table per section (everything is in results.json).
COLUMNS: dict[str, list[tuple[str, str]]] = {
    "hot_path": [
        ("SDK agent µs", "baseline_agent_us_per_run"),
        ("ours agent µs", "candidate_agent_us_per_run"),
        ("agent ratio", "ratio_agent"),
        ("<=1.10x", "verdict_agent"),
        ("SDK total µs", "baseline_total_us_per_run"),
        ("ours total µs", "candidate_total_us_per_run"),
        ("total ratio", "ratio_total"),
        ("min..max", "ratio_total_min_max"),
        ("yardstick total", "yardstick_ratio_total"),
        ("total target", "target_total"),
        ("total verdict", "verdict_total"),
        ("worker µs", "worker_us_per_run"),
        ("emitter µs", "emitter_us_per_run"),
        ("lean agent", "lean_ratio_agent"),
        ("lean total", "lean_ratio_total"),
        ("lean worker µs", "lean_worker_us_per_run"),
        ("ours÷lean total", "gap_total"),
    ],
    "yardstick": [
        ("SDK agent µs", "baseline_agent_us_per_run"),
        ("agent µs", "agent_us_per_run"),
        ("agent ratio", "ratio_agent"),
        ("SDK total µs", "baseline_total_us_per_run"),
        ("total µs", "total_us_per_run"),
        ("total ratio", "ratio_total"),
        ("min..max", "ratio_total_min_max"),
        ("total target", "target_total"),
    ],
    "breakdown": [
        ("SDK on_start µs", "sdk_on_start_us"),
        ("ours on_start µs", "ours_on_start_us"),
        ("SDK on_end µs", "sdk_on_end_us"),
        ("ours on_end µs", "ours_on_end_us"),
        ("SDK root end µs", "sdk_on_end_root_us"),
        ("ours root end µs", "ours_on_end_root_us"),
        ("added µs/run", "added_us_per_run"),
        ("ratio to SDK", "ratio_to_sdk"),
        ("µs/run", "us_per_run"),
        ("prepare µs", "prepare_us"),
        ("read µs", "read_us"),
        ("assembly µs", "assembly_us"),
        ("scoring µs", "scoring_us"),
        ("outputs µs", "outputs_us"),
        ("hand-on µs", "hand_on_us"),
        ("other µs", "other_us"),
        ("worker µs", "total_us"),
        ("lean worker µs", "lean_total_us"),
        ("gap µs", "gap_us"),
        ("stall ms, parsed", "parsed_stall_ms"),
        ("stall ms, default limit", "default_stall_ms"),
    ],
    "scorer": [
        ("runs/s", "runs_per_s"),
        ("naive runs/s", "naive_runs_per_s"),
        ("x naive", "speedup_vs_naive"),
        ("µs/call", "us_per_call"),
        ("µs/call +explain", "us_per_call_with_explanation"),
        ("exponent", "scaling_exponent"),
        ("exp. +explain", "scaling_exponent_with_explanation"),
        ("naive exp.", "naive_scaling_exponent"),
    ],
    "extraction": [
        ("spans", "spans"),
        ("spans/s", "spans_per_s"),
        ("decode-only spans/s", "decode_only_spans_per_s"),
        ("x decode", "ratio_vs_decode"),
    ],
    "offline": [
        ("spans", "spans"),
        ("runs", "runs"),
        ("spans/s", "spans_per_s"),
        ("floor", "floor"),
        ("floor spans/s", "floor_spans_per_s"),
        ("ratio", "ratio"),
        ("lean ratio", "lean_ratio"),
        ("ours÷lean", "ours_over_lean"),
        ("peak RSS MB", "peak_rss_mb"),
        ("target", "target"),
        ("verdict", "verdict"),
    ],
    "memory": [
        ("B/pending run (ours)", "processor_bytes_per_pending_run"),
        ("B/open run (SDK)", "sdk_bytes_per_open_run"),
        ("runs", "runs"),
        ("RSS first MiB", "rss_first_batch_mib"),
        ("RSS last MiB", "rss_last_mib"),
        ("slope B/100k runs", "slope_bytes_per_100k_runs_second_half"),
        ("pending", "pending_with_processor"),
        ("at limit", "at_limit"),
        ("B/pending trace (RSS)", "processor_bytes_per_pending_trace"),
    ],
    "judge": [
        ("judged/s", "judged_per_s"),
        ("workers÷delay", "workers_over_delay"),
        ("÷ (workers÷delay)", "ratio_to_workers_over_delay"),
        ("efficiency", "efficiency"),
        ("off µs/run", "judge_off_us_per_run"),
        ("on µs/run", "judge_on_us_per_run"),
        ("ratio", "ratio"),
        ("queued", "queued"),
        ("B/queued run", "bytes_per_queued_run"),
    ],
    "service": [
        ("spans", "spans"),
        ("spans/s", "spans_per_s"),
        (">=12,000/s", "verdict_spans_per_s"),
        ("CPU µs/span", "cpu_us_per_span"),
        ("<=60 µs", "verdict_cpu"),
        ("cores busy", "cpu_cores"),
        ("rotel spans/s", "rotel_spans_per_s"),
        ("rotel CPU µs/span", "rotel_cpu_us_per_span"),
        ("÷ rotel spans/s", "ratio"),
        ("refused", "refused"),
        ("retry wait s", "retry_wait_s"),
        ("runs scored", "runs_scored"),
    ],
    "import_time": [
        ("sdk.trace ms", "sdk_trace_ms"),
        ("statement ms", "candidate_ms"),
        ("ratio", "ratio"),
        ("target <=", "target"),
        ("verdict", "verdict"),
    ],
}


def _runner(section: str) -> Callable[..., None]:
    if section == "hot_path":
        from bench import hot_path

        return hot_path.run
    if section == "yardstick":
        from bench import yardstick

        return yardstick.run
    if section == "breakdown":
        from bench import breakdown

        return breakdown.run
    if section == "scorer":
        from bench import scorer

        return scorer.run
    if section == "extraction":
        from bench import extraction

        return extraction.run
    if section == "offline":
        from bench import offline

        return offline.run
    if section == "memory":
        from bench import memory

        return memory.run
    if section == "judge":
        from bench import judge

        return judge.run
    if section == "service":
        from bench import service

        return service.run
    if section == "import_time":
        from bench import import_time

        return import_time.run
    raise SystemExit(f"unknown section {section!r}; sections: {', '.join(SECTIONS)}")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, list):
        return "..".join(_cell(v) for v in value)
    return str(value)


def format_table(section: str, result: Result) -> str:
    cols = [(h, k) for h, k in COLUMNS.get(section, []) if any(k in r for r in result.rows)]
    header = ["figure"] + [h for h, _ in cols]
    body = [[str(r.get("name", ""))] + [_cell(r.get(k)) for _, k in cols] for r in result.rows]
    widths = [max(len(x) for x in col) for col in zip(header, *body)] if body else [len(h) for h in header]
    lines = [f"## {section}"]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    lines.append("  ".join("-" * w for w in widths))
    for row in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    for note in result.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def _revision() -> str:
    """The commit measured (``+dirty`` when the working tree differs from it)."""
    import subprocess

    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "otel_toolscore"],
                               cwd=ROOT, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes: proves the suite runs; numbers mean nothing")
    ap.add_argument("--only", default="", help="comma-separated sections (default: all): " + ", ".join(SECTIONS))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results.json"), help="where to write the JSON results")
    ap.add_argument("--rss-seconds", type=float, default=30.0, help="time budget of the RSS-over-runs measurement")
    args = ap.parse_args(argv)
    sections = [s.strip() for s in args.only.split(",") if s.strip()] or list(SECTIONS)
    started = time.perf_counter()
    doc: dict[str, Any] = {
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "quick": args.quick,
        "revision": _revision(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average_at_start": _load(),
        },
        "sections": {},
    }
    failed = 0
    for section in sections:
        result = Result(section)
        t0 = time.perf_counter()
        print(f"[bench] {section} …", file=sys.stderr, flush=True)
        try:
            run = _runner(section)
            if section == "memory":
                run(result, quick=args.quick, rss_budget_s=args.rss_seconds)
            else:
                run(result, quick=args.quick)
            status = "ok"
        except Exception as exc:
            failed += 1
            status = f"error: {type(exc).__name__}: {exc}"
            result.notes.append(status)
            traceback.print_exc()
        doc["sections"][section] = {
            "status": status,
            "seconds": round(time.perf_counter() - t0, 1),
            "rows": result.rows,
            "notes": result.notes,
        }
        print(format_table(section, result), flush=True)
        print(flush=True)
    doc["machine"]["load_average_at_end"] = _load()
    doc["seconds"] = round(time.perf_counter() - started, 1)
    Path(args.out).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"[bench] {len(sections)} sections in {doc['seconds']} s; results in {args.out}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
