"""The README's front page, executed as written: the code blocks are read from README.md itself, so a
change to the README that breaks them fails here.

* the minimal example runs with no collector and prints exactly the output the README shows;
* the zero-code command runs under the real ``opentelemetry-instrument`` with the packages the README
  names (each one is checked to be installed), and the scores show in the console exporter's output;
  without a distro's configurator, the hook says that nothing is scored;
* the offline command, run on a terminal from the repository's root, prints the README's output
  line for line and exits with the status the README shows.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.docs import code_blocks
from tests.support.terminal import on_terminal

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
#: Variables that could send the commands' telemetry elsewhere or change what they do.
SCRUBBED = ("OTEL_", "OPENAI_", "LANGFUSE_", "PHOENIX_")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # `python`, `opentelemetry-instrument`, `otel-toolscore`
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def test_the_minimal_example_runs_as_written_and_prints_its_scores(tmp_path: Path) -> None:
    blocks = code_blocks("minimal example")
    (code,) = [body for lang, body in blocks if lang == "python"][:1]
    (shown,) = [body for lang, body in blocks if lang == ""][:1]
    script = tmp_path / "minimal.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == sorted(shown.splitlines())  # one line per run (worker order)
    assert done.stderr == ""  # no exporter retries, no warning: nothing needs a collector


def _zero_code() -> tuple[list[str], str]:
    """The packages of the README's ``pip install`` line and the command after it (continuations joined)."""
    (body,) = [b for lang, b in code_blocks("zero code") if lang == "sh"][:1]
    lines = body.strip().splitlines()
    assert lines[0].startswith("pip install "), lines[0]
    packages = lines[0].removeprefix("pip install ").split()
    return packages, "\n".join(lines[1:])


def test_the_zero_code_command_runs_as_written(tmp_path: Path) -> None:
    packages, command = _zero_code()
    assert packages == ["otel-toolscore", "opentelemetry-distro"]
    for name in packages:  # the exact packages the README names are what this environment runs with
        assert importlib.metadata.version(name)
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert '"toolscore.code.score": 1.0' in out and '"toolscore.code.score": 0.0' in out  # one pass, one fail
    assert '"gen_ai.evaluation.explanation": "fail: expected get_weather (lenient); called search_web"' in out
    assert "2 agent runs done" in out
    assert "Traceback" not in done.stderr


def test_without_a_distro_the_hook_says_nothing_is_scored(tmp_path: Path) -> None:
    """``opentelemetry-instrument`` with no configurator (what a missing ``opentelemetry-distro``
    leaves; here the installed one is not selected): no SDK provider exists, and the hook says so
    instead of claiming that scores leave as events and metrics."""
    _, command = _zero_code()
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=_env(OTEL_PYTHON_CONFIGURATOR="none"),
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "toolscore.code.score" not in done.stdout
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("otel-toolscore:")]
    assert "no OpenTelemetry SDK tracer provider" in line and "opentelemetry-distro" in line
    assert "no run is scored and nothing is exported" in line and "events and metrics" not in done.stderr


def test_the_offline_command_prints_what_the_readme_shows(tmp_path: Path) -> None:
    (body,) = [b for lang, b in code_blocks("score recorded traces") if lang == ""][:1]
    lines = body.rstrip("\n").splitlines()
    assert lines[0].startswith("$ otel-toolscore score ")
    status_at = lines.index("$ echo $?")
    expected_output, expected_status = lines[1:status_at], int(lines[status_at + 1])
    code, raw = on_terminal(["bash", "-c", lines[0].removeprefix("$ ")], env=_env(TERM="xterm"), cwd=ROOT, columns=250)
    shown = raw.replace("\r\n", "\n").rstrip("\n").splitlines()
    assert shown == expected_output
    assert code == expected_status == 1
    assert re.match(r"otel-toolscore score: mean score [\d.]+ of \d+ scored run\(s\) is below --fail-under 0.9", shown[-1])
