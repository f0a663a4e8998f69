"""Offline reading at file scale (issue 11): spans/s of ``extract_runs`` on a file, against the bare
decode of the same bytes, and peak RSS on a large JSON Lines file.

Input: every recorded trace of the corpus (``tests/corpus``, 19 stacks) replicated with fresh trace
ids to ~50k spans, written once as OTLP/JSON Lines and once as concatenated OTLP protobuf requests.

* ``protobuf``: ``extract_runs(path)`` vs ``ExportTraceServiceRequest.FromString`` of the same bytes
  (target ≥ 0.10 x the decoder's spans/s);
* ``json lines``: ``extract_runs(path)`` vs ``json.loads`` of every line of the same file (≥ 0.25 x);
* ``peak RSS``: a child process extracts a ~162 MB JSON Lines file (≤ 300 MB).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_toolscore.extract import extract_runs_with_report
from otel_toolscore.service.decode import _hex_ids_to_base64

from .common import Result

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"
TARGET_PROTOBUF = 0.10
TARGET_JSONL = 0.25
TARGET_RSS_MB = 300


def _corpus_lines() -> list[str]:
    lines = []
    for p in sorted(CORPUS.glob("**/*.traces.jsonl")):
        if "node_modules" not in p.parts:
            lines += [ln for ln in p.read_text().splitlines() if ln.strip()]
    return lines


def _trace_ids(line: str) -> set[str]:
    doc = json.loads(line)
    return {sp["traceId"] for rs in doc.get("resourceSpans", ()) for ss in rs.get("scopeSpans", ())
            for sp in ss.get("spans", ()) if isinstance(sp.get("traceId"), str) and len(sp["traceId"]) == 32}


def _renamed(line: str, tids: set[str], k: int) -> str:
    """``line`` with each trace id's first 6 hex digits replaced by copy number ``k``."""
    for tid in tids:
        line = line.replace(tid, f"{k:06x}{tid[6:]}")
    return line


def _replicated(lines: list[str], copies: int) -> list[str]:
    ids = [_trace_ids(ln) for ln in lines]
    return [_renamed(ln, tids, k) for k in range(copies) for ln, tids in zip(lines, ids)]


def _spans(lines: list[str]) -> int:
    return sum(len(sp) for ln in lines for rs in json.loads(ln).get("resourceSpans", ())
               for sp in (ss.get("spans", ()) for ss in rs.get("scopeSpans", ())))


def _best(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _rss_child(path: str) -> None:
    import resource

    from otel_toolscore.extract import ExtractionReport, iter_runs

    report = ExtractionReport()
    runs = sum(1 for _ in iter_runs(path, report=report))
    # VmHWM, not ru_maxrss: the latter starts from the parent's RSS at fork (the benchmark process
    # holds the whole corpus), whatever this process then uses
    hwm_kb = next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
                  if line.startswith("VmHWM:"))
    print(json.dumps({"runs": runs, "spans": report.sources[0].spans_read, "peak_rss_mb": hwm_kb / 1024,
                      "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run(result: Result, *, quick: bool) -> None:
    lines = _corpus_lines()
    copies = 1 if quick else 16
    data = _replicated(lines, copies)
    spans = _spans(data)
    rounds = 1 if quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        jsonl = Path(tmp) / "corpus.jsonl"
        jsonl.write_text("\n".join(data) + "\n")
        pb = Path(tmp) / "corpus.pb"
        with pb.open("wb") as fh:
            for ln in data:
                msg = json_format.ParseDict(_hex_ids_to_base64(json.loads(ln)), ExportTraceServiceRequest(),
                                            ignore_unknown_fields=True)
                fh.write(msg.SerializeToString())
        pb_bytes = pb.read_bytes()
        jl_bytes = jsonl.read_bytes()
        for name, path, floor, target, floor_name in (
            ("protobuf", pb, lambda: ExportTraceServiceRequest.FromString(pb_bytes), TARGET_PROTOBUF,
             "ExportTraceServiceRequest.FromString"),
            ("json lines", jsonl, lambda: [json.loads(x) for x in jl_bytes.splitlines() if x.strip()], TARGET_JSONL,
             "json.loads per line"),
        ):
            runs, report = extract_runs_with_report(path)
            t_ext = _best(lambda p=path: extract_runs_with_report(p), rounds)  # type: ignore[misc]
            t_dec = _best(floor, rounds)
            ratio = t_dec / t_ext  # spans/s ratio: extraction over the bare decoder
            result.add(
                name=f"offline {name}, {spans} spans",
                spans=spans,
                runs=len(runs),
                malformed=report.malformed,
                spans_per_s=round(spans / t_ext),
                floor=floor_name,
                floor_spans_per_s=round(spans / t_dec),
                ratio=round(ratio, 3),
                target=target,
                verdict="PASS" if ratio >= target else "MISS",
            )
        big = Path(tmp) / "big.jsonl"
        size_target = (8 if quick else 162) * 2**20
        ids = [_trace_ids(ln) for ln in lines]
        with big.open("w") as fh:  # each block its own trace ids, so nothing merges across blocks
            k = 0
            while fh.tell() < size_target:
                for ln, tids in zip(lines, ids):
                    fh.write(_renamed(ln, tids, k) + "\n")
                k += 1
        out = subprocess.run([sys.executable, "-m", "bench.offline", "rss", str(big)],
                             cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=900)
        if out.returncode != 0:
            result.notes.append(f"offline: RSS child failed: {out.stderr[-500:]}")
            return
        got = json.loads(out.stdout.strip().splitlines()[-1])
        result.add(
            name=f"offline peak RSS, {big.stat().st_size / 2**20:.0f} MB JSON lines",
            spans=got["spans"],
            runs=got["runs"],
            peak_rss_mb=round(got["peak_rss_mb"]),
            target=TARGET_RSS_MB,
            verdict="PASS" if got["peak_rss_mb"] <= TARGET_RSS_MB else "MISS",
        )


if __name__ == "__main__":
    if sys.argv[1] == "rss":
        _rss_child(sys.argv[2])
    else:
        raise SystemExit(f"unknown child {sys.argv[1]!r}")
