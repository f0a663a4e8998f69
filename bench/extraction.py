"""Extraction: spans per second through ``extract_runs`` for each convention folder of the corpus.

Input is the recorded corpus (``tests/corpus/<framework>/[<variant>/]*.traces.jsonl``, OTLP/JSON as
the exporters wrote it), read into memory first so disk I/O is not measured. The baseline, timed in
the same rounds, is the floor any OTLP/JSON consumer pays: ``json_format.Parse`` of the same lines
into ``ExportTraceServiceRequest`` messages. ``ratio_vs_decode`` is extraction time over that floor.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_toolscore.extract import extract_runs_with_report

from .common import Result

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"


def convention_folders() -> dict[str, list[Path]]:
    folders: dict[str, list[Path]] = {}
    for p in sorted(CORPUS.glob("**/*.traces.jsonl")):
        if "node_modules" in p.parts:
            continue
        folders.setdefault(str(p.parent.relative_to(CORPUS)), []).append(p)
    return folders


def _decode_floor(blobs: list[bytes]) -> None:
    for blob in blobs:
        for line in blob.splitlines():
            if line.strip():
                json_format.Parse(line, ExportTraceServiceRequest(), ignore_unknown_fields=True)


def _per_pass(fn: Callable[[], object], budget_s: float) -> float:
    n = 0
    t0 = time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= budget_s:
            return elapsed / n


def run(result: Result, *, quick: bool) -> None:
    rounds = 1 if quick else 3
    budget = 0.02 if quick else 0.05
    folders = convention_folders()
    if quick:
        folders = dict(list(folders.items())[:3])
    total_spans = 0
    total_ext = 0.0
    total_dec = 0.0
    for name, files in folders.items():
        blobs = [f.read_bytes() for f in files]
        runs, report = extract_runs_with_report(blobs)
        spans = sum(s.spans_read for s in report.sources)
        if spans == 0:
            result.notes.append(f"extraction: {name}: no spans read ({report.problems()[:1]})")
            continue
        ext: list[float] = []
        dec: list[float] = []
        for r in range(rounds):
            pair: list[tuple[str, Callable[[], object]]] = [("ext", partial(extract_runs_with_report, blobs)), ("dec", partial(_decode_floor, blobs))]
            for which, fn in pair if r % 2 == 0 else reversed(pair):
                (ext if which == "ext" else dec).append(_per_pass(fn, budget))
        t_ext = statistics.median(ext)
        t_dec = statistics.median(dec)
        total_spans += spans
        total_ext += t_ext
        total_dec += t_dec
        result.add(
            name=f"extraction, {name}",
            convention=name,
            files=len(files),
            spans=spans,
            runs=len(runs),
            malformed=report.malformed,
            spans_per_s=round(spans / t_ext),
            decode_only_spans_per_s=round(spans / t_dec),
            ratio_vs_decode=round(t_ext / t_dec, 2),
        )
    if total_spans:
        result.add(
            name="extraction, whole corpus",
            convention="*",
            spans=total_spans,
            spans_per_s=round(total_spans / total_ext),
            decode_only_spans_per_s=round(total_spans / total_dec),
            ratio_vs_decode=round(total_ext / total_dec, 2),
        )
