"""Offline reading at file scale: spans/s of ``extract_runs`` on a file, against the bare decode of
the same file in the same rounds, and peak RSS on a large JSON Lines file.

Input: every recorded trace of the corpus (``tests/corpus``, 19 stacks) replicated with fresh trace
ids to ~50k spans, written once as OTLP/JSON Lines and once as concatenated OTLP protobuf requests.

* ``protobuf``: ``extract_runs(path)`` vs ``ExportTraceServiceRequest.FromString`` of the same file's
  bytes (read inside the timing, as ours reads them) — target ≥ 0.10 x the decoder's spans/s;
* ``json lines``: ``extract_runs(path)`` vs a *streaming* ``json.loads`` of every line of the same
  file, each document dropped once parsed, as a streaming reader holds only the line at hand
  (≥ 0.40 x). Parsing every line into one list that keeps them all alive is no floor: the cyclic
  garbage collector then walks an ever larger heap, which made it several times slower than the
  streaming loop and the ratio look several times better than it is;
* ``lean``: the lean offline reader (``bench/lean_offline.py``: GenAI and OpenInference through the
  lean design's key tables, slots records, no content, no run model) on the same file against the
  same floor, in rounds of its own — the floor of the whole design offline, measured beside ours
  (``ours ÷ lean`` is ours' time over its time);
* ``peak RSS``: a child process extracts a ~162 MB JSON Lines file with ``iter_runs`` (VmHWM of the
  child, ≤ 300 MB).

Each round times the floor and ours back to back (the order alternating, the garbage collector run
before each); the ratio is the median of the per-round ratios of spans/s, ours over the floor's.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_toolscore.extract import extract_runs_with_report
from otel_toolscore.service._decode import _hex_ids_to_base64

from .common import Result, measure_paired, timed
from .lean_offline import read_runs

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"
TARGET_PROTOBUF = 0.10
TARGET_JSONL = 0.40
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


def write_protobuf(path: Path, lines: list[str]) -> None:
    """``lines`` (OTLP/JSON export requests) written to ``path`` as concatenated OTLP protobuf requests."""
    with path.open("wb") as fh:
        for ln in lines:
            msg = json_format.ParseDict(_hex_ids_to_base64(json.loads(ln)), ExportTraceServiceRequest(),
                                        ignore_unknown_fields=True)
            fh.write(msg.SerializeToString())


def json_lines_floor(path: Path) -> int:
    """A streaming JSON Lines reader's least work: ``json.loads`` of each line, the document dropped."""
    loads = json.loads
    docs = 0
    with path.open("rb") as fh:
        for line in fh:
            if line.strip():
                loads(line)
                docs += 1
    return docs


def protobuf_floor(path: Path) -> int:
    """The protobuf decoder's least work: ``ExportTraceServiceRequest.FromString`` of the file's bytes
    (concatenated requests decode as one; the message is dropped)."""
    return len(ExportTraceServiceRequest.FromString(path.read_bytes()).resource_spans)


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
        write_protobuf(pb, data)
        formats: tuple[tuple[str, Path, Callable[[Path], int], float, str], ...] = (
            ("protobuf", pb, protobuf_floor, TARGET_PROTOBUF, "ExportTraceServiceRequest.FromString"),
            ("json lines", jsonl, json_lines_floor, TARGET_JSONL, "json.loads per line, streaming"),
        )
        for name, path, floor, target, floor_name in formats:
            runs, report = extract_runs_with_report(path)  # also warms the reader's code paths up
            floor(path)
            paired = measure_paired(partial(timed, partial(floor, path)),
                                    partial(timed, partial(extract_runs_with_report, path)), rounds)
            ratios = [b / c for b, c in zip(paired.baseline, paired.candidate)]  # spans/s, ours over the floor's
            ratio = round(statistics.median(ratios), 3)  # judged as printed
            lean_runs = read_runs(path, name == "protobuf")  # also warms the lean reader up
            lean = measure_paired(partial(timed, partial(floor, path)),
                                  partial(timed, partial(read_runs, path, name == "protobuf")), rounds)
            lean_ratios = [b / c for b, c in zip(lean.baseline, lean.candidate)]
            result.add(
                name=f"offline {name}, {spans} spans",
                spans=spans,
                runs=len(runs),
                malformed=report.malformed,
                rounds=rounds,
                spans_per_s=round(spans / paired.candidate_median),
                floor=floor_name,
                floor_spans_per_s=round(spans / paired.baseline_median),
                ratio=ratio,
                ratio_min_max=[round(min(ratios), 3), round(max(ratios), 3)],
                target=target,
                verdict="PASS" if ratio >= target else "MISS",
                lean_runs=len(lean_runs),
                lean_spans_per_s=round(spans / lean.candidate_median),
                lean_ratio=round(statistics.median(lean_ratios), 3),
                lean_ratio_min_max=[round(min(lean_ratios), 3), round(max(lean_ratios), 3)],
                ours_over_lean=round(paired.candidate_median / lean.candidate_median, 2),
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
            raise RuntimeError(f"the RSS child failed: {out.stderr[-500:]}")
        got = json.loads(out.stdout.strip().splitlines()[-1])
        peak = round(got["peak_rss_mb"])
        result.add(
            name=f"offline peak RSS, {big.stat().st_size / 2**20:.0f} MB JSON lines",
            file_mb=round(big.stat().st_size / 2**20),
            spans=got["spans"],
            runs=got["runs"],
            peak_rss_mb=peak,
            target=TARGET_RSS_MB,
            verdict="PASS" if peak <= TARGET_RSS_MB else "MISS",
        )


if __name__ == "__main__":
    if sys.argv[1] == "rss":
        _rss_child(sys.argv[2])
    else:
        raise SystemExit(f"unknown child {sys.argv[1]!r}")
