"""The command line on a real terminal (a pseudo-terminal from the ``pty`` module), asserted on the
screen a user sees: what the terminal shows once the command has ended, rendered from every byte
the command wrote (carriage returns, erase-line and cursor-up sequences applied).

* a command that ends before the bar's delay draws nothing, and the table starts the screen;
* a bar that was drawn is erased before stdout is written: no leftover bar, no table line glued to it;
* one large file shows a percentage that moves while the file is read (bytes counted as they are
  read, not when the file ends), with an ETA;
* ``--quiet`` or a stderr that is not a terminal: no bar at all.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.terminal import on_terminal as run_on_terminal
from tests.support.terminal import screen

ROOT = Path(__file__).resolve().parents[2]
VERCEL = ROOT / "tests" / "corpus" / "vercel_ai"
MULTI = VERCEL / "ai6_multi_step.traces.jsonl"


def big_input(tmp_path: Path, copies: int) -> Path:
    """One file of ``copies`` runs: the corpus file's trace, ~15 KB, under a new trace id each time."""
    text = MULTI.read_text().strip()
    trace_id = json.loads(text.splitlines()[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    path = tmp_path / "big.traces.jsonl"
    with path.open("w") as out:
        for i in range(copies):
            out.write(text.replace(trace_id, f"{i + 1:032x}") + "\n")
    return path


def on_terminal(argv: list[str], tmp_path: Path, *, stdout_too: bool) -> tuple[int, str, str]:
    """The command line with stderr (and stdout when ``stdout_too``) on a pseudo-terminal: the exit
    status, everything the terminal received, and stdout when it went to a file instead."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update(PYTHONPATH=str(ROOT), TERM="xterm")
    env.pop("COLUMNS", None)
    command = [sys.executable, "-c", "import sys; from otel_toolscore.cli import main; sys.exit(main(sys.argv[1:]))", *argv]
    out_path = tmp_path / "stdout.txt"
    code, raw = run_on_terminal(command, env=env, cwd=tmp_path, stdout_file=None if stdout_too else out_path)
    return code, raw, out_path.read_text() if out_path.exists() else ""


def _bar_on(lines: list[str]) -> list[str]:
    return [line for line in lines if "reading" in line or "judging" in line or "%|" in line]


def test_a_short_command_draws_nothing_and_the_table_starts_the_screen(tmp_path: Path) -> None:
    argv = ["score", "--format", "table", "--expected-order", "getWeather,convertTemperature", str(MULTI)]
    code, raw, _ = on_terminal(argv, tmp_path, stdout_too=True)  # the default 2 s delay
    assert code == 0, raw
    assert "reading" not in raw and "%|" not in raw  # never drawn, not even erased
    lines = screen(raw)
    assert lines[0].split()[:4] == ["score", "file", "run", "agent"], lines[:3]
    assert lines[1].startswith(" 1.00  ai6_multi_step.traces.jsonl")


def test_a_drawn_bar_is_erased_before_the_table(tmp_path: Path) -> None:
    big = big_input(tmp_path, copies=600)
    argv = ["score", "--format", "table", "--expected-tool", "getWeather", "--progress-delay-ms", "0", str(big)]
    code, raw, _ = on_terminal(argv, tmp_path, stdout_too=True)
    assert code == 0, raw[-2000:]
    assert "reading" in raw and "%|" in raw  # the bar was drawn while reading ...
    lines = screen(raw)
    assert not _bar_on(lines), _bar_on(lines)[:3]  # ... and nothing of it is left on the screen
    assert lines[0].split()[:4] == ["score", "file", "run", "agent"], lines[:3]  # the table starts a clean line
    summary = next(line for line in lines if " scored of " in line)
    assert summary.startswith("600 scored of 600 run(s)")


def test_the_percentage_moves_within_one_big_file(tmp_path: Path) -> None:
    big = big_input(tmp_path, copies=2000)  # one file of ~30 MB, read for a few seconds
    size = big.stat().st_size
    argv = ["extract", "--format", "jsonl", "--progress-delay-ms", "0", str(big)]
    code, raw, out = on_terminal(argv, tmp_path, stdout_too=False)
    assert code == 0, raw[-2000:]
    assert len(out.splitlines()) == 2000  # stdout untouched by the bar
    frames = [f for f in re.split(r"[\r\n]", raw) if f.startswith("reading:")]
    shown = [(int(m.group(1)), f) for f in frames if (m := re.match(r"reading:\s+(\d+)%", f))]
    inside = [(p, f) for p, f in shown if 0 < p < 100]
    # Before the file ended the bar showed at least two different shares of it (bytes counted as read).
    assert len({p for p, _ in inside}) >= 2, frames
    assert all("0/1 files" in f for _, f in inside), frames  # while the one file was still being read
    assert any(re.search(r"<\d\d:\d\d", f) for _, f in inside), frames  # an ETA, not <?
    assert f"/{size / 2**20:.1f}M" in raw or "/30.0M" in raw  # the total is the file's size
    assert not _bar_on(screen(raw))  # erased at the end


def test_no_bar_with_quiet_or_without_a_terminal(tmp_path: Path) -> None:
    big = big_input(tmp_path, copies=50)
    argv = ["extract", "--format", "jsonl", "--progress-delay-ms", "0", str(big)]
    code, raw, out = on_terminal([*argv, "--quiet"], tmp_path, stdout_too=False)
    assert code == 0 and raw == "" and len(out.splitlines()) == 50
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-m", "otel_toolscore", *argv], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stderr == "" and len(done.stdout.splitlines()) == 50


def test_stdout_stays_machine_readable_under_the_bar(tmp_path: Path) -> None:
    big = big_input(tmp_path, copies=300)
    argv = ["score", "--format", "json", "--expected-tool", "getWeather", "--progress-delay-ms", "0", str(big)]
    code, raw, out = on_terminal(argv, tmp_path, stdout_too=False)
    assert code == 0, raw
    assert json.loads(out)["summary"]["runs"] == 300
    assert "reading" in raw and not _bar_on(screen(raw))
