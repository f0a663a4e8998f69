"""Offline reading in instructions (callgrind): ours beside the lean offline reader, stage by stage.

CPU time on a shared 2-core machine moves by a quarter between rounds; an instruction count does
not. This tool writes the recorded corpus (``tests/corpus``, ``--copies`` times) as one file, has the
reader read it once (imports, first-use builds, caches: not counted), then counts one more reading
of it as the difference between a process that reads it twice and one that reads it once. Not part
of ``make bench`` (it needs valgrind, ~1 minute per figure):

    python bench/offline_instructions.py [--lean] [--stages] [--jsonl] [--copies N] [--content off]

prints ``instructions`` (and per span, per run). ``--stages`` counts the reading again stopped after
each stage — ours: the file decoded into views and fed (no span read); every span read into facts
(nothing kept); facts kept, output content parsed as it arrives (no run assembled); the whole reader,
runs and their models included — the lean reader: decoded into one dict per span; spans read into
facts (no run assembled); whole. Each stage is the difference between two such figures.
``--child`` is the process valgrind runs (internal).
"""

from __future__ import annotations

import gc
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.instructions import instructions  # noqa: E402

#: Where each reader's count stops, in order, and what each stage adds to the one before.
STAGES = {
    "ours": (
        ("views", "file decoded into views, spans fed (none read)"),
        ("read", "spans read into facts (none kept)"),
        ("keep", "facts kept, output content parsed on arrival (no run assembled)"),
        ("full", "runs assembled: calls, inputs a run needs, first request, run models"),
    ),
    "lean": (
        ("views", "file decoded, one dict of undecoded values per span"),
        ("read", "spans read into facts and trace state (no run assembled)"),
        ("full", "runs assembled (claimed, calls merged, records)"),
    ),
}


def _write_corpus(path: Path, copies: int, jsonl: bool) -> None:
    from bench.offline import _corpus_lines, _replicated, write_protobuf

    lines = _replicated(_corpus_lines(), copies)
    if jsonl:
        path.write_text("\n".join(lines) + "\n")
    else:
        write_protobuf(path, lines)


def _stop_ours(stage: str) -> None:
    """Our reader stopped after ``stage`` (the module attributes it calls through, replaced)."""
    from otel_toolscore.extract import _collect

    if stage == "views":
        _collect.Collector.span = lambda self, item, report: None  # type: ignore[method-assign]
    elif stage == "read":
        read_view = getattr(_collect, "read_view")  # noqa: B009 (a name it imports, not exports)

        def span(self: Any, item: Any, report: Any) -> None:
            read_view(item, self.options, (item.trace_hex, item.span_hex, item.parent_hex))

        _collect.Collector.span = span  # type: ignore[method-assign]
    elif stage == "keep":
        setattr(_collect, "assemble_records", lambda facts, parents, **kw: [])  # noqa: B010 (as read_view)


def _stop_lean(stage: str) -> None:
    from bench import lean_offline

    if stage == "views":
        lean_offline.LeanOfflineReader._span = lambda self, *a: None  # type: ignore[method-assign]
    elif stage == "read":
        lean_offline.LeanOfflineReader._run = lambda self, *a: None  # type: ignore[method-assign]


def _child(lean: bool, copies: int, jsonl: bool, content: bool, count: bool, stage: str) -> None:
    """Read the corpus file once (warm-up), then once more when ``count``, stopped after ``stage``."""
    who = "lean" if lean else "ours"
    if stage not in dict(STAGES[who]):
        raise SystemExit(f"unknown stage {stage!r} for {who}: one of {', '.join(dict(STAGES[who]))}")
    if lean and not content:
        raise SystemExit("the lean reader reads no content: --content off is for ours")
    from bench.lean_offline import read_runs
    from otel_toolscore.extract import ExtractOptions, extract_runs_with_report

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("corpus.jsonl" if jsonl else "corpus.pb")
        _write_corpus(path, copies, jsonl)
        options = ExtractOptions(capture_content=content)

        def read() -> int:
            if lean:
                return len(read_runs(path, not jsonl))
            return len(extract_runs_with_report(path, options)[0])

        warm = read()
        (_stop_lean if lean else _stop_ours)(stage)
        gc.collect()
        counted = read() if count else 0
        print(f"runs: {warm} warm-up, {counted} counted")  # what the caller's test checks


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        _flag, is_lean, n, is_jsonl, with_content, count, stage = argv
        _child(is_lean == "1", int(n), is_jsonl == "1", with_content == "on", count == "1", stage)
        return 0
    lean = "--lean" in argv
    stages = "--stages" in argv
    jsonl = "--jsonl" in argv
    copies = int(argv[argv.index("--copies") + 1]) if "--copies" in argv else 1
    content = not ("--content" in argv and argv[argv.index("--content") + 1] == "off")
    if lean and not content:
        print("the lean reader reads no content: --content off is for ours", file=sys.stderr)
        return 2
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: this tool counts instructions with callgrind", file=sys.stderr)
        return 2
    who = "lean" if lean else "ours"
    common = ["1" if lean else "0", str(copies), "1" if jsonl else "0", "on" if content else "off"]
    spans = _spans(copies)
    head = (f"{'the lean offline reader' if lean else 'ours'}, corpus x {copies} ({spans:,} spans) as "
            f"{'JSON Lines' if jsonl else 'protobuf'}, content {'on' if content else 'off'}")
    script = Path(__file__)
    if not stages:
        got = instructions(script, [*common, "1", "full"]) - instructions(script, [*common, "0", "full"])
        print(f"{head}: {got / 1e6:,.1f} M instructions, {got / spans:,.0f} per span")
        return 0
    print(f"{head}, M instructions by stage:")
    before = 0
    for stage, what in STAGES[who]:
        upto = instructions(script, [*common, "1", stage]) - instructions(script, [*common, "0", stage])
        print(f"  {what:<72} {(upto - before) / 1e6:>10,.1f}")
        before = upto
    print(f"  {'whole reading':<72} {before / 1e6:>10,.1f}  ({before / spans:,.0f} per span)")
    return 0


def _spans(copies: int) -> int:
    from bench.offline import _corpus_lines
    from bench.offline import _spans as count_spans

    return count_spans(_corpus_lines()) * copies


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
