"""Worker cost in instructions (callgrind): ours beside the lean full design, with no noise from other jobs.

CPU-time ratios on a shared 2-core machine move with whatever else runs; an instruction count does
not. This tool records runs of a workload with the SDK, queues them through the processor's hooks
(ours, or the lean design's), then counts the instructions of the worker's own processing of half
of them — the same batches the live worker takes, every output on (root copy, evaluation record,
histogram point, counts) — as the difference between a run that processes them and one that stops
just before. Not part of ``make bench`` (it needs valgrind, ~1 minute per figure):

    python bench/instructions.py [genai7|openinference30] [on|off] [runs] [--lean] [--no-gc] [--stages]

prints ``instructions/run``. The garbage collector's passes are lumpy (one full pass more or less in
the counted half moves a figure by up to a fifth): ``--no-gc`` counts the code alone, the collector
off while the counted half runs. ``--stages`` (ours only) splits our worker's figure by counting it
again stopped after each stage — the batch prepared; every span read and kept (the core's roots never
settled); the runs assembled (scoring left out); scored; then the whole worker, outputs (evaluation
record, histogram point, counts) and the spans handed on — each stage the difference between two
such figures (five pairs of processes). ``--child`` is the process valgrind runs (internal).
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_BATCH = 256
_WARM_RUNS = 20


#: ``--stages``: where our worker's count stops, in order, and the name of what each adds to the one
#: before it (the last, ``full``, is the worker as it runs)
STAGES = (
    ("prepare", "batch prepared (starts matched to ends)"),
    ("read", "spans read and kept (ids, facts, trace state)"),
    ("assemble", "runs assembled (roots settled, not scored)"),
    ("score", "runs scored (expectation, verdict, score attributes)"),
    ("full", "outputs and handing on (record, point, counts; the SDK's on_end)"),
)
_LEAN_STAGES = "stages splits our worker only (the lean design's is one loop)"


def _child(
    workload: str, content: bool, runs: int, lean: bool, count: bool, no_gc: bool, stage: str = "full"
) -> None:
    """Queue ``2 * runs + 20`` recorded runs, process the first ``runs + 20`` (warm-up), then the rest
    only when ``count`` (callgrind's figure of a process with ``count`` minus one without it); the
    rest stops after ``stage`` (:data:`STAGES`)."""
    if stage not in dict(STAGES):
        raise SystemExit(f"unknown stage {stage!r}: one of {', '.join(name for name, _ in STAGES)}")
    if lean and stage != "full":
        raise SystemExit(_LEAN_STAGES)  # before any recording: nothing to count
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

    from bench.lean_design import lean_pipeline
    from bench.pipelines import candidate_pipeline, without_worker
    from bench.workloads import WORKLOADS

    run_fn, _spans, expectation = WORKLOADS[workload]

    class Recorder(SpanProcessor):
        def __init__(self) -> None:
            self.items: list[tuple[Any, ...]] = []

        def on_start(self, span: Any, parent_context: Any = None) -> None:
            self.items.append(("s", span, parent_context))

        def on_end(self, span: Any) -> None:
            self.items.append(("e", span))

    recorder = Recorder()
    provider = TracerProvider()
    provider.add_span_processor(recorder)
    tracer = provider.get_tracer("bench")
    total = 2 * runs + _WARM_RUNS
    for i in range(total):
        run_fn(tracer, content, i)
    pipe = lean_pipeline(expectation) if lean else candidate_pipeline(expectations=(expectation,))
    proc = without_worker(pipe)
    for item in recorder.items:
        if item[0] == "s":
            proc.on_start(item[1], item[2])
        else:
            proc.on_end(item[1])
    queued = list(proc._queue)
    proc._queue.clear()

    def process(items: list[Any], stage: str = "full") -> None:
        for k in range(0, len(items), _BATCH):
            batch = items[k : k + _BATCH]
            if lean:
                proc._queue.extend(batch)
                proc._loop()  # stopped: returns once the queue is empty
            elif stage == "full":
                proc._process(batch)
                proc._idle()
            elif stage == "prepare":
                proc._prepare(batch)
                proc._forwards.clear()
            else:  # the core fed; its release (spans, runs, counts) left where it is
                proc._core.feed(proc._prepare(batch))
                proc._forwards.clear()

    per_run = len(queued) // total
    first = (runs + _WARM_RUNS) * per_run
    process(queued[:first])  # imports, first-use builds, caches: not counted
    gc.collect()
    if no_gc:
        gc.disable()
    if stage == "read":
        proc._core.settle = lambda: None  # roots wait for a settle that never comes: read, kept, no more
    elif stage == "assemble":
        proc._core._score_run = lambda *_a, **_k: None  # assembled, then every run left unscored
    if count:
        process(queued[first:], stage)
    pipe.close()
    print(f"scored roots: {pipe.spans.scored_roots}")  # what the caller's test checks


def instructions(script: Path | str, args: list[str]) -> int:
    """Instructions callgrind counts in ``python script --child *args`` (the whole process)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, str(script), "--child", *args],
            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0"}, check=False,
        )
        found = re.search(r"Collected : ([\d,]+)", proc.stderr)
        if proc.returncode != 0 or found is None:
            raise SystemExit(f"valgrind failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        return int(found.group(1).replace(",", ""))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        workload, content, runs, lean, count = argv[1], argv[2] == "on", int(argv[3]), argv[4] == "1", argv[5] == "1"
        _child(workload, content, runs, lean, count, no_gc=argv[6:7] == ["nogc"], stage=argv[7] if len(argv) > 7 else "full")
        return 0
    lean = "--lean" in argv
    no_gc = "--no-gc" in argv
    stages = "--stages" in argv
    if stages and lean:
        print(f"--{_LEAN_STAGES}", file=sys.stderr)
        return 2
    rest = [a for a in argv if a not in ("--lean", "--no-gc", "--stages")]
    workload = rest[0] if rest else "genai7"
    content = (rest[1] if len(rest) > 1 else "off") == "on"
    runs = int(rest[2]) if len(rest) > 2 else 100
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: this tool counts instructions with callgrind", file=sys.stderr)
        return 2
    common = [workload, "on" if content else "off", str(runs), "1" if lean else "0"]
    gc_flag = "nogc" if no_gc else "gc"
    who = "lean design" if lean else "ours"
    gc_note = ", collector off" if no_gc else ""
    head = f"{who}, {workload}, content {'on' if content else 'off'}{gc_note}"
    if not stages:
        counted = instructions(__file__, [*common, "1", gc_flag, "full"])
        base = instructions(__file__, [*common, "0", gc_flag, "full"])
        print(f"{head}: {(counted - base) / runs:,.0f} instructions/run")
        return 0
    print(f"{head}, instructions/run by stage:")
    before = 0.0
    for stage, what in STAGES:
        upto = (instructions(__file__, [*common, "1", gc_flag, stage]) - instructions(__file__, [*common, "0", gc_flag, stage])) / runs
        print(f"  {what:<70} {upto - before:>12,.0f}")
        before = upto
    print(f"  {'whole worker':<70} {before:>12,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
