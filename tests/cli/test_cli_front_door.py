"""The command line as a new user meets it: gates that say why they failed, problems found before any
work (a report path, a judge with no key or no reachable endpoint: exit 2 naming our setting, no
request sent), the processor's OTEL_TOOLSCORE_* settings read by ``score`` (flags win), usage errors
from the command they belong to with the closest flag, our own wording and one prefix on stderr,
"did you mean" for config keys, and ``--help`` with defaults, an example and the exit codes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otel_toolscore.cli import build_parser, main
from otel_toolscore.service.settings import ServiceSettings
from tests.support.openai_server import OpenAITestServer, echo_judge, garbage

ROOT = Path(__file__).resolve().parents[2]
VERCEL = ROOT / "tests" / "corpus" / "vercel_ai"
MULTI = str(VERCEL / "ai6_multi_step.traces.jsonl")
INVALID = str(VERCEL / "ai6_invalid_tool.traces.jsonl")
ORDER = ["--expected-order", "getWeather,convertTemperature"]
PYDANTIC_WORDS = ("Value error", "Input should", "Extra inputs", "Field required", "validation error")


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in [v for v in os.environ if v.startswith(("OTEL_TOOLSCORE_", "OPENAI_"))]:
        monkeypatch.delenv(var)


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    base.update(PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, "-m", "otel_toolscore", *argv], env=base, capture_output=True, text=True,
                          timeout=120)


def _closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- gates ------------------------------------------------------------------------------------------
def test_fail_under_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "--format", "json", *ORDER, "--fail-under", "0.9", MULTI, INVALID]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["gate"] == {"fail_under": 0.9, "mean": 0.5, "passed": False}
    assert err == ("otel-toolscore score: mean score 0.500 of 2 scored run(s) is below --fail-under 0.9 "
                   "(1 passed, 1 failed)\n")
    assert main(["score", "--format", "json", "--rules", str(_rules(Path(os.environ.get("TMPDIR", "/tmp")))),
                 "--fail-under", "0.5", INVALID]) == 1
    assert "no run was scored" in capsys.readouterr().err
    assert main(["score", "--format", "json", *ORDER, "--fail-under", "0.5", MULTI, INVALID]) == 0
    assert capsys.readouterr().err == ""


def _rules(folder: Path) -> Path:
    path = folder / "nobody-rules.yaml"
    path.write_text("rules:\n  - name: nobody\n    agent_name: nobody\n    expected_tool: x\n")
    return path


def test_judge_errors_fail_the_exit_status_only_when_asked(openai_server: OpenAITestServer,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    openai_server.set_handler(lambda _request: garbage())
    argv = ["score", "--format", "jsonl", "--expected-tool", "getWeather", "--judge", "--judge-model", "m",
            "--judge-base-url", openai_server.base_url, "--judge-ratio", "1", "--quiet", MULTI]
    assert main(argv) == 0  # reported per run, by default
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[0]["judge_outcome"] in ("invalid_answer", "error")
    assert main([*argv, "--fail-on-judge-error"]) == 1
    err = capsys.readouterr().err
    assert "1 judgment(s) failed (1 " in err and "--fail-on-judge-error" in err
    openai_server.set_handler(echo_judge())
    assert main([*argv, "--fail-on-judge-error"]) == 0
    capsys.readouterr()


# -- checked before any work ------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["missing-folder", "a-directory", "under-a-file"])
def test_a_bad_report_path_fails_before_the_judge_spends_anything(where: str, tmp_path: Path, openai_server: OpenAITestServer,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    openai_server.set_handler(echo_judge())
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    target = {"missing-folder": tmp_path / "nope" / "report.html", "a-directory": tmp_path,
              "under-a-file": tmp_path / "notes.txt" / "report.html"}[where]
    argv = ["score", "--expected-tool", "getWeather", "--judge", "--judge-model", "m", "--judge-base-url",
            openai_server.base_url, "--judge-ratio", "1", "--quiet", "--report", str(target), MULTI]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("otel-toolscore score: cannot write the report: ")
    assert openai_server.request_count == 0  # no token spent


def test_a_report_in_a_missing_folder_fails_before_reading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "--expected-tool", "x", "--report", str(tmp_path / "no" / "r.html"), str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "is not a directory" in err and "no such file" not in err  # the report is checked first


def test_a_judge_without_an_api_key_fails_at_start_naming_our_setting(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert main(["score", "--expected-tool", "getWeather", "--judge", "--judge-model", "gpt-4o-mini", MULTI]) == 2
    err = capsys.readouterr().err
    assert err.startswith("otel-toolscore score: the judge has no API key: set OTEL_TOOLSCORE_JUDGE_API_KEY")
    assert "OPENAI_API_KEY" in err and err.count("\n") == 1  # one line, no error row per run
    assert time.monotonic() - started < 30  # generous: nothing was waited for


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_an_unreachable_judge_fails_at_start_naming_our_setting(how: str, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    flags = ["--judge-base-url", url] if how == "flag" else []
    if how == "variable":
        monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_BASE_URL", url)
    started = time.monotonic()
    assert main(["score", "--expected-tool", "getWeather", "--judge", "--judge-model", "m", *flags, MULTI]) == 2
    took = time.monotonic() - started
    err = capsys.readouterr().err
    setting = "--judge-base-url" if how == "flag" else "OTEL_TOOLSCORE_JUDGE_BASE_URL"
    assert err.startswith(f"otel-toolscore score: the judge endpoint {url} ({setting}) is not reachable: ")
    assert "OPENAI" not in err and err.count("\n") == 1
    assert took < 30, took  # generous ceiling: a refused connection is immediate (measured well under 1 s)
    assert main(["judge-check", "--judge-model", "m", *flags, "--quiet"]) == 2
    assert f"the judge endpoint {url} ({setting}) is not reachable" in capsys.readouterr().err


def test_credentials_in_the_judge_url_are_not_repeated(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://user:s3cret@127.0.0.1:{_closed_port()}/v1"
    assert main(["score", "--expected-tool", "x", "--judge", "--judge-model", "m", "--judge-base-url", url, MULTI]) == 2
    err = capsys.readouterr().err
    assert "s3cret" not in err and "***@127.0.0.1" in err


# -- the processor's settings -----------------------------------------------------------------------
def test_score_reads_the_processor_settings_and_flags_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    def results(*argv: str) -> list[dict[str, object]]:
        assert main(["score", "--format", "json", *argv, MULTI, INVALID]) == 0
        return list(json.loads(capsys.readouterr().out)["results"])

    monkeypatch.setenv("OTEL_TOOLSCORE_EXPECTED_TOOL", "getWeather")
    first = results()
    assert [r["score"] for r in first] == [1.0, 1.0] and first[0]["expectation"] == "OTEL_TOOLSCORE_EXPECTED_TOOL"
    monkeypatch.setenv("OTEL_TOOLSCORE_STRICT_MODE", "true")
    assert results()[0]["score"] == 0.0  # strict: getWeather alone, and MULTI converts the temperature too
    assert [r["score"] for r in results("--no-strict")] == [1.0, 1.0]  # the flag wins
    second = results(*ORDER)  # a flag's default replaces the environment's (an order, not a tool)
    assert [r["score"] for r in second] == [1.0, 0.0] and second[0]["expectation"] == "command line"
    assert "getWeather -> convertTemperature (strict, ordered)" in str(second[0]["explanation"])
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: fahrenheit\n    query_regex: Fahrenheit\n"
                     "    expected_tool_order: [getWeather, convertTemperature]\n")
    monkeypatch.setenv("OTEL_TOOLSCORE_RULES", str(rules))
    monkeypatch.delenv("OTEL_TOOLSCORE_STRICT_MODE")
    assert [r["expectation"] for r in results()] == ["fahrenheit", "OTEL_TOOLSCORE_EXPECTED_TOOL"]
    monkeypatch.setenv("OTEL_TOOLSCORE_MAX_CALLS_PER_RUN", "0")  # a bad value: warned about, ignored
    assert main(["score", "--format", "json", MULTI]) == 0
    err = capsys.readouterr().err
    assert err == ("otel-toolscore score: OTEL_TOOLSCORE_MAX_CALLS_PER_RUN='0' is ignored (must be at least 1); "
                   "the default applies\n")


def test_serve_and_score_read_the_same_rules_variable(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - name: a\n    expected_tol: x\n")
    for argv in (["score", "--rules", str(bad), MULTI], ["serve", "--rules", str(bad), "--grpc-port", "0", "--http-port", "0"]):
        done = _cli(*argv)
        assert done.returncode == 2
        command = argv[0]
        # one line, the rules file's problem, before anything starts (no exporter warning first)
        assert done.stderr == (f"otel-toolscore {command}: rules file {bad}: rule #1 (a): expected_tol: unknown key "
                               "(did you mean expected_tool?)\n"), done.stderr


# -- usage errors and messages ----------------------------------------------------------------------
def test_a_misspelt_flag_gets_the_commands_usage_and_the_closest_flag() -> None:
    done = _cli("score", "--fial-under", "0.9", "--expected-tool", "x", MULTI)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: otel-toolscore score ")
    assert done.stderr.rstrip().endswith(
        "otel-toolscore score: error: unrecognized argument --fial-under (did you mean --fail-under?)")
    done = _cli("serve", "--grcp-port", "0")
    assert done.returncode == 2 and done.stderr.startswith("usage: otel-toolscore serve ")
    assert "(did you mean --grpc-port?)" in done.stderr
    done = _cli("scroe", MULTI)
    assert done.returncode == 2 and "unknown command 'scroe' (did you mean score?)" in done.stderr


def test_one_prefix_for_every_line_of_a_command(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(Path(MULTI).read_text() + "{oops\n")
    done = _cli("score", "--format", "json", "--expected-tool", "getWeather", "--fail-under", "0.9", str(bad),
                env={"OTEL_TOOLSCORE_MAX_CALLS_PER_RUN": "lots", "OTEL_TOOLSCORE_SPAN_ATRIBUTES": "true"})
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) >= 4, lines  # two settings warnings, the bad line, the file's summary
    assert all(line.startswith("otel-toolscore score: ") for line in lines), lines
    assert any("did you mean OTEL_TOOLSCORE_SPAN_ATTRIBUTES?" in line for line in lines)
    assert not any(word in done.stderr for word in PYDANTIC_WORDS)


def test_our_own_wording_for_validation_errors(tmp_path: Path) -> None:
    cases = {
        "service:\n  grpc_port: lots\n": "service.grpc_port in {f} (grpc_port): is not a whole number",
        "service:\n  grpc_prot: 5\n": "unknown setting service.grpc_prot in {f} (did you mean grpc_port?)",
        "scoring:\n  max_call_per_run: 5\n": "unknown setting scoring.max_call_per_run in {f} (did you mean max_calls_per_run?)",
        "scoring:\n  max_calls_per_run: 0\n": "scoring.max_calls_per_run in {f} (max_calls_per_run): must be at least 1",
        "servce:\n  host: 0.0.0.0\n": "unknown section 'servce' (did you mean service?)",
        "service:\n  export_protocol: udp\n": "must be one of 'grpc' or 'http/protobuf'",
    }
    for n, (text, expected) in enumerate(cases.items()):
        config = tmp_path / f"c{n}.yaml"
        config.write_text(text)
        done = _cli("serve", "--config", str(config))
        assert done.returncode == 2, text
        assert done.stderr.startswith("otel-toolscore serve: ") and done.stderr.count("\n") == 1, done.stderr
        assert expected.format(f=config) in done.stderr, done.stderr
        assert not any(word in done.stderr for word in PYDANTIC_WORDS), done.stderr
    regex = tmp_path / "regex.yaml"
    regex.write_text("rules:\n  - name: a\n    expected_tool: x\n    query_regex: '(a'\n")
    done = _cli("score", "--rules", str(regex), MULTI)
    assert done.returncode == 2 and "query_regex does not compile" in done.stderr
    assert not any(word in done.stderr for word in PYDANTIC_WORDS), done.stderr


# -- --help ---------------------------------------------------------------------------------------------
def _commands() -> dict[str, object]:
    parser = build_parser()
    return dict(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]


@pytest.mark.parametrize("command", ["extract", "score", "judge-check", "serve", "demo"])
def test_help_has_an_example_and_the_exit_codes(command: str) -> None:
    done = _cli(command, "--help")
    assert done.returncode == 0
    assert "\nexample" in done.stdout and "otel-toolscore " + command in done.stdout.split("\nexample", 1)[1]
    assert "\nexit status:\n  0  " in done.stdout and "  2  " in done.stdout
    parser = _commands()[command]
    for action in parser._actions:  # type: ignore[attr-defined]
        if action.help and action.help != "==SUPPRESS==" and action.option_strings and action.dest != "help":
            assert action.help.strip(), (command, action.dest)


def test_every_serve_option_names_its_default() -> None:
    serve = _commands()["serve"]
    missing = []
    for action in serve._actions:  # type: ignore[attr-defined]
        shown = action.dest in ServiceSettings.model_fields and action.help != "==SUPPRESS=="
        if shown and "default" not in (action.help or ""):
            missing.append(action.dest)
    assert missing == []
    help_text = _cli("serve", "--help").stdout
    assert "(default 4317)" in help_text and "(default 500)" in help_text and "(default 16777216)" in help_text


def test_one_metavar_per_kind_of_value() -> None:
    commands = _commands()
    for name in ("score", "serve"):
        actions = {a.dest: a for a in commands[name]._actions}  # type: ignore[attr-defined]
        assert actions["expected_order"].metavar == "TOOLS" and actions["rules"].metavar == "FILE"
        assert actions["expected_tool"].metavar == "TOOL"
    for name in ("judge-check", "demo"):
        fmt = next(a for a in commands[name]._actions if a.dest == "format")  # type: ignore[attr-defined]
        assert fmt.help and "json" in fmt.help.lower() and "table" in fmt.help


def test_bulk_commands_tune_the_garbage_collector(tmp_path: Path) -> None:
    """extract/score/judge-check/serve freeze what setting up built and collect the young generation
    less often (reading spans makes short-lived objects reference counting frees)."""
    code = (
        "import gc, sys\n"
        "from otel_toolscore.cli import main\n"
        "before = gc.get_freeze_count()\n"
        f"rc = main(['extract', {str(tmp_path / 'none.jsonl')!r}])\n"
        "print(gc.get_threshold()[0], gc.get_freeze_count() > before, rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    threshold, frozen, _rc = out.stdout.split()
    assert int(threshold) == 50_000 and frozen == "True", out.stderr
