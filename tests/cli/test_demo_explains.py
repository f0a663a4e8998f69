"""``otel-toolscore demo`` explains each run: the rule or expect() that applied, its meaning in plain
words, why the run passed or failed, and where the score went; a dead OTLP endpoint is said once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from otel_toolscore.cli import main
from tests.tools.otlp import free_port

ROOT = Path(__file__).resolve().parents[2]


def _demo(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    clean["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-c", "import sys; from otel_toolscore.cli import main; sys.exit(main(['demo']))"],
                          env={**clean, **env}, capture_output=True, text=True, timeout=120)


def _blocks(out: str) -> dict[int, str]:
    body = out.split("Why each run passed or failed, and where its score went:", 1)[1].split("Metrics recorded", 1)[0]
    blocks = [b.strip() for b in body.split("\n\n") if b.strip()]
    return {int(b.split(".", 1)[0]): b for b in blocks}


def test_demo_says_why_each_run_passed_or_failed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for var in [v for v in os.environ if v.startswith("OTEL_EXPORTER_OTLP")]:
        monkeypatch.delenv(var)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    blocks = _blocks(out)
    assert len(blocks) == 9
    # a rule, lenient single tool, failed because the expected tool never came
    assert "weather_agent called search_web" in blocks[2]
    assert "expected by rule 'weather' (matches runs where agent_name = weather_agent)" in blocks[2]
    assert "lenient: passes when get_weather is among the tools called; other tools may be called too" in blocks[2]
    assert "FAIL (0.00): get_weather was not called" in blocks[2]
    # lenient: an extra tool is fine
    assert "PASS (1.00)" in blocks[3] and "get_time was not expected (call #1); allowed in this mode" in blocks[3]
    # expect() wins over the rule, and strict means the only tool
    assert "expected by the expect() block the application wrapped around this run" in blocks[4]
    assert "strict: passes only when get_weather is the one and only tool called" in blocks[4]
    assert "FAIL (0.00): get_time was not expected (call #1)" in blocks[4]
    # ordered, lenient: a subsequence; strict: the exact list
    assert ("lenient order: passes when auth, then refund are called in that order; other tools may come "
            "before, between or after them") in blocks[6] and "PASS" in blocks[6]
    assert "strict order: passes only when exactly auth, then fetch_order, then refund are called" in blocks[7]
    assert "FAIL (0.00): refund called (call #0), but not in the expected order" in blocks[8]
    # no expectation: not scored, only counted
    assert "not scored: no rule, expect() block or default applies" in blocks[9]
    assert "toolscore.outcome=no_expectation" in blocks[9]
    # where the score went, read back from what was really recorded
    assert "on the root span 'invoke_agent weather_agent': toolscore.code.score=0.0, toolscore.code.label=fail" in blocks[2]
    assert "event gen_ai.evaluation.result (gen_ai.evaluation.name=tool_call_accuracy, score 0.0, label fail)" in blocks[2]
    assert "gen_ai.evaluation.score {gen_ai.agent.name=billing_agent, gen_ai.evaluation.score.label=pass}: 3 run(s)" in out
    assert "Set OTEL_EXPORTER_OTLP_ENDPOINT" in out


def test_demo_json_carries_the_explanation(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for var in [v for v in os.environ if v.startswith("OTEL_EXPORTER_OTLP")]:
        monkeypatch.delenv(var)
    assert main(["demo", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in rows] == ["pass", "fail", "pass", "fail", "pass", "pass", "pass", "fail", None]
    assert rows[1]["root_attributes"]["toolscore.code.score"] == 0.0 and rows[1]["why"] == ["get_weather was not called"]


def test_a_dead_endpoint_is_said_once() -> None:
    port = free_port()  # nothing listens there
    done = _demo({"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"})
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no exporter retries, no tracebacks
    lines = [line for line in done.stdout.splitlines() if "not reachable" in line]
    assert lines == [f"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:{port} is not reachable (Connection refused): "
                     "nothing was exported; the scores above were read from in-memory exporters."]
    assert "PASS (1.00)" in done.stdout


@pytest.fixture
def refusing_collector() -> Iterator[int]:
    """An HTTP server that accepts connections and answers every OTLP export with 400."""
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def test_an_endpoint_that_refuses_exports_is_said_once(refusing_collector: int) -> None:
    done = _demo({"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{refusing_collector}"})
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("Exporting to")]
    assert f"Exporting to http://127.0.0.1:{refusing_collector} failed (" in line
