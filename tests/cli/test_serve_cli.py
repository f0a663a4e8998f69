"""``otel-toolscore serve --expected-order ... --strict``: the default expectation from flags, one DEBUG
line per scored run, and an INFO summary of the scores when no export endpoint is set."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from otel_toolscore.cli import main

ROOT = Path(__file__).resolve().parents[2]
VERCEL = ROOT / "tests" / "corpus" / "vercel_ai"
MULTI = VERCEL / "ai6_multi_step.traces.jsonl"      # getWeather, convertTemperature
INVALID = VERCEL / "ai6_invalid_tool.traces.jsonl"  # getWeather


def _post(port: int, path: Path) -> None:
    for line in path.read_text().splitlines():
        if line.strip():
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces", data=line.encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(req, timeout=10) as resp:
                assert resp.status == 200


_SUMMARY = re.compile(r"run\(s\) in the last 0\.5 s: (\d+) pass, (\d+) fail, 0 not scored")


def _summed(content: str) -> tuple[int, int]:
    """Passes and failures over every summary line so far."""
    found = [(int(m.group(1)), int(m.group(2))) for m in _SUMMARY.finditer(content)]
    return sum(p for p, _ in found), sum(f for _, f in found)


def test_serve_flags_debug_lines_and_summary(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(ROOT)
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from otel_toolscore.cli import main; sys.exit(main())", "serve",
             "--grpc-port", "0", "--http-port", "0", "--quiet-period-ms", "100",
             "--expected-order", "getWeather,convertTemperature", "--strict",
             "--log-level", "DEBUG", "--summary-interval-ms", "500"],
            stdout=subprocess.PIPE, stderr=err, text=True, env=env,
        )
    try:
        assert proc.stdout is not None
        listening = json.loads(proc.stdout.readline())
        port = listening["http_port"]
        _post(port, MULTI)
        _post(port, INVALID)
        deadline = time.monotonic() + 30
        while _summed(content := log.read_text()) != (1, 1) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _summed(content) == (1, 1), content  # the two runs may land in one summary or two
        debug = [line for line in content.splitlines() if " DEBUG otel_toolscore.serve: run trace=" in line]
        assert len(debug) == 2, content
        assert any("agent=weather-assistant score=1.0 pass: expected getWeather -> convertTemperature (strict, ordered); "
                   "called getWeather, convertTemperature" in line for line in debug)
        assert any("score=0.0 fail: expected getWeather -> convertTemperature (strict, ordered)" in line for line in debug)
        summaries = [line for line in content.splitlines() if "run(s) in the last" in line]
        assert all(" INFO otel_toolscore.serve: " in line and "(weather-assistant: " in line for line in summaries)
        if len(summaries) == 1:
            assert "2 run(s) in the last 0.5 s: 1 pass, 1 fail, 0 not scored; pass rate 50.0% " \
                   "(weather-assistant: 1 fail, 1 pass)" in summaries[0]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 0


def test_serve_order_flags_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["serve", "--expected-order", " , "], ["serve", "--expected-tool", "a", "--expected-order", "a,b"],
                 ["serve", "--summary-interval-ms", "0"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2, argv
        assert capsys.readouterr().err.strip(), argv


@pytest.mark.parametrize("flag", ["--grpc-port", "--http-port"])
def test_serve_with_a_port_taken_says_which_in_one_line(flag: str) -> None:
    """gRPC's own log line and a traceback (exit 1) used to greet a taken gRPC port."""
    import socket

    from tests.support.serve_cli import CODE

    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        other = "--http-port" if flag == "--grpc-port" else "--grpc-port"
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        out = subprocess.run([sys.executable, "-c", CODE, "serve", flag, str(port), other, "0", "--no-export"],
                             env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert f"127.0.0.1:{port}" in line and flag in line and "address already in use" in line, line
