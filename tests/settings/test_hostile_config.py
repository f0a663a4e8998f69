"""Hostile configuration: files that are not text, never end or are huge; addresses that are not addresses.

Configuration: each case given explicitly (an argument, a flag, a config file) fails at
once with one message naming the file or the key (exit 2 for the CLI), never a bare
``UnicodeDecodeError``, a hang, a memory blow-up or a traceback. Given by an environment variable, the
same value is warned about (naming the variable) and ignored, as OpenTelemetry reads its variables: the program starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from otel_toolscore.expectations import RulesError, load_rules
from otel_toolscore.files import MAX_CONFIG_FILE_BYTES, read_config_text
from otel_toolscore.judge import JudgeSettings, judge_from_env, load_tools_file
from otel_toolscore.service.settings import load_config
from otel_toolscore.settings import ConfigError

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]


def _load_service_config(path: Path) -> Any:
    return load_config(config_file=path, environ={})


# Every reader of a user-named configuration file, with the error type it raises and the file's role.
READERS: list[tuple[str, Callable[[Path], Any], type[Exception], str]] = [
    ("rules.yaml", load_rules, RulesError, "rules file"),
    ("rules.toml", load_rules, RulesError, "rules file"),
    ("tools.json", load_tools_file, ConfigError, "judge tools file"),
    ("tools.yaml", load_tools_file, ConfigError, "judge tools file"),
    ("service.yaml", _load_service_config, ConfigError, "config file"),
    ("service.toml", _load_service_config, ConfigError, "config file"),
]
IDS = [r[0] for r in READERS]


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text.strip(), f"message is not one line: {text!r}"
    return text


@pytest.mark.parametrize(("name", "read", "error", "role"), READERS, ids=IDS)
def test_random_bytes_name_the_file(tmp_path: Path, name: str, read: Callable[[Path], Any],
                                    error: type[Exception], role: str) -> None:
    path = tmp_path / name
    path.write_bytes(bytes(range(256)) * 4 + os.urandom(4096))
    with pytest.raises(error) as info:
        read(path)
    assert not isinstance(info.value, UnicodeDecodeError)
    message = _one_line(info.value)
    assert str(path) in message and role in message and "UTF-8" in message


@pytest.mark.parametrize(("name", "read", "error", "role"), READERS, ids=IDS)
def test_deeply_nested_content_names_the_file(tmp_path: Path, name: str, read: Callable[[Path], Any],
                                              error: type[Exception], role: str) -> None:
    path = tmp_path / name
    depth = 100_000
    path.write_text(("a = " if name.endswith(".toml") else "a: ") + "[" * depth + "]" * depth + "\n")
    with pytest.raises(error) as info:
        read(path)
    assert str(path) in _one_line(info.value) and role in str(info.value)


@pytest.mark.parametrize(("name", "read", "error", "role"), READERS, ids=IDS)
def test_dev_zero_is_refused_at_once(name: str, read: Callable[[Path], Any], error: type[Exception], role: str) -> None:
    started = time.monotonic()
    with pytest.raises(error) as info:
        read(Path("/dev/zero"))
    assert time.monotonic() - started < 5
    assert "/dev/zero" in _one_line(info.value) and "not a regular file" in str(info.value)


@pytest.mark.parametrize(("name", "read", "error", "role"), READERS, ids=IDS)
def test_fifo_without_writer_is_refused_without_waiting(tmp_path: Path, name: str, read: Callable[[Path], Any],
                                                         error: type[Exception], role: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(error) as info:
        read(fifo)
    assert time.monotonic() - started < 5
    assert str(fifo) in _one_line(info.value) and "not a regular file" in str(info.value)


@pytest.mark.parametrize(("name", "read", "error", "role"), READERS, ids=IDS)
def test_150_mb_file_is_refused_before_reading(tmp_path: Path, name: str, read: Callable[[Path], Any],
                                                error: type[Exception], role: str) -> None:
    path = tmp_path / name
    with path.open("wb") as f:  # sparse: 150 MB of size, no disk or memory spent on it
        f.truncate(150 * 1024 * 1024)
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(error) as info:
            read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 5
    assert peak < 2 * 1024 * 1024, f"peak {peak} bytes while refusing a 150 MB file"
    message = _one_line(info.value)
    assert str(path) in message and "too large" in message and str(MAX_CONFIG_FILE_BYTES) in message


def test_a_file_reporting_no_size_is_still_read_only_to_the_limit(tmp_path: Path) -> None:
    # /proc-like files report size 0 and still hold bytes: the read itself is bounded.
    proc = Path("/proc/self/maps")
    if not proc.exists():
        pytest.skip("needs Linux /proc")
    assert proc.stat().st_size == 0
    with pytest.raises(ValueError, match="too large: more than 64 bytes"):
        read_config_text(proc, "rules file", max_bytes=64)
    path = tmp_path / "rules.yaml"
    path.write_text("a: 1\n" * 100)
    assert read_config_text(path, "rules file", max_bytes=500) == "a: 1\n" * 100


def test_missing_file_and_directory_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match=r"cannot read rules file .*nope\.yaml: No such file"):
        load_rules(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match=r"not a regular file|Is a directory"):
        load_tools_file(tmp_path)


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_bytes(b'\xef\xbb\xbf[{"name": "search"}]')
    assert load_tools_file(path) == [{"name": "search"}]


# -- addresses -------------------------------------------------------------------------------------------
BAD_URLS = ["not a url", "file:///etc/passwd", "ftp://127.0.0.1/v1", "http://", "http://:8080/v1",
            "http://127.0.0.1:99999/v1", "127.0.0.1:8080/v1"]


@pytest.mark.parametrize("url", BAD_URLS)
def test_judge_base_url_that_is_not_http_is_refused_in_code(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        JudgeSettings.from_env({}, base_url=url)
    assert "base_url" in _one_line(info.value)


@pytest.mark.parametrize("url", BAD_URLS)
def test_judge_base_url_that_is_not_http_turns_the_judge_off_from_the_environment(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert judge_from_env({"OTEL_TOOLSCORE_JUDGE_MODEL": "m", "OTEL_TOOLSCORE_JUDGE_BASE_URL": url}) is None
    assert any("OTEL_TOOLSCORE_JUDGE_BASE_URL" in r.getMessage() and "judge is off" in r.getMessage()
               for r in caplog.records)
    caplog.clear()
    assert judge_from_env({"OTEL_TOOLSCORE_JUDGE_MODEL": "m", "OPENAI_BASE_URL": url}) is None  # the fallback too
    assert any("OPENAI_BASE_URL" in r.getMessage() and "judge is off" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "https://gateway.example/v1", "http://[::1]:8080/v1"])
def test_good_judge_base_urls_are_kept(url: str) -> None:
    assert JudgeSettings.from_env({"OTEL_TOOLSCORE_JUDGE_BASE_URL": url}).base_url == url


@pytest.mark.parametrize("host", ["256.1.1.1", "1.2.3", "999.0.0.1", "bad host", "-leading.dash", "a..b", "::zz"])
def test_service_host_that_is_not_an_address_is_refused_as_a_flag_and_ignored_as_a_variable(
    host: str, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(environ={}, service_overrides={"host": host})
    assert "--host" in _one_line(info.value)
    assert load_config(environ={"OTEL_TOOLSCORE_SERVICE_HOST": host}).service.host == "127.0.0.1"
    assert any("OTEL_TOOLSCORE_SERVICE_HOST" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("host", "kept"), [("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "0.0.0.0"), ("[::1]", "::1"),
                                            ("localhost", "localhost"), ("otel-toolscore.svc.local", "otel-toolscore.svc.local")])
def test_good_hosts_are_kept(host: str, kept: str) -> None:
    assert load_config(environ={"OTEL_TOOLSCORE_SERVICE_HOST": host}).service.host == kept


# -- the CLI: one message, exit 2, no traceback ----------------------------------------------------------
def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_TOOLSCORE_", "OPENAI_", "OTEL_EXPORTER"))}
    clean["PYTHONPATH"] = str(REPO) + os.pathsep + clean.get("PYTHONPATH", "")
    clean.update(env or {})
    return subprocess.run([sys.executable, "-c", "import sys; from otel_toolscore.cli import main; sys.exit(main())", *args], capture_output=True, text=True,
                          timeout=60, env=clean, stdin=subprocess.DEVNULL)


def _assert_refused(out: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and "listening" not in out.stdout
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, out.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


SERVE = ("serve", "--grpc-port", "0", "--http-port", "0", "--no-export")


def _serve_starts(*args: str, env: dict[str, str]) -> str:
    """Start ``serve`` with ``env`` added, wait for it to listen, stop it; its stderr."""
    from tests.support.serve_cli import serve_until_listening

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_TOOLSCORE_", "OPENAI_", "OTEL_EXPORTER"))}
    clean["PYTHONPATH"] = str(REPO) + os.pathsep + clean.get("PYTHONPATH", "")
    clean.update(env)
    code, err = serve_until_listening(*SERVE[1:], *args, env=clean)  # SERVE starts with the command
    assert code == 0 and "Traceback" not in err, err
    return err


def _warned(err: str, *needles: str) -> None:
    lines = [line for line in err.splitlines() if "WARNING" in line and all(n in line for n in needles)]
    assert lines, (needles, err)


@pytest.mark.parametrize("host", ["256.1.1.1", "10.255.255.254.1"])
def test_serve_refuses_a_bad_host_flag_and_ignores_a_bad_host_variable(host: str) -> None:
    _assert_refused(_cli(*SERVE, "--host", host), "--host", host)
    _warned(_serve_starts(env={"OTEL_TOOLSCORE_SERVICE_HOST": host}), "OTEL_TOOLSCORE_SERVICE_HOST", host)


def test_serve_refuses_a_host_it_cannot_listen_on() -> None:
    # A valid address that is not this machine's (TEST-NET-3, RFC 5737): refused before any receiver starts.
    _assert_refused(_cli(*SERVE, "--host", "203.0.113.7"), "203.0.113.7")


@pytest.mark.parametrize("url", ["not a url", "file:///etc/passwd"])
def test_serve_starts_without_the_judge_when_its_base_url_is_bad(url: str) -> None:
    env = {"OTEL_TOOLSCORE_JUDGE_MODEL": "m", "OTEL_TOOLSCORE_JUDGE_BASE_URL": url}
    _warned(_serve_starts(env=env), "OTEL_TOOLSCORE_JUDGE_BASE_URL", "judge is off")


def test_serve_refuses_hostile_files(tmp_path: Path) -> None:
    noise = tmp_path / "noise.yaml"
    noise.write_bytes(os.urandom(8192) + b"\xff\xfe")
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    big = tmp_path / "big.yaml"
    with big.open("wb") as f:
        f.truncate(150 * 1024 * 1024)
    for path in (noise, fifo, big, Path("/dev/zero")):
        _assert_refused(_cli(*SERVE, "--config", str(path)), str(path), "config file")
        _assert_refused(_cli(*SERVE, "--rules", str(path)), str(path), "rules file")
    # The same files named by variables: warned about, ignored, the service starts.
    for path in (noise, fifo):
        tools_env = {"OTEL_TOOLSCORE_JUDGE_MODEL": "m", "OTEL_TOOLSCORE_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
                     "OTEL_TOOLSCORE_JUDGE_TOOLS_FILE": str(path), "OTEL_TOOLSCORE_RULES": str(path)}
        err = _serve_starts(env=tools_env)
        _warned(err, "OTEL_TOOLSCORE_JUDGE_TOOLS_FILE", str(path), "judge tools file")
        _warned(err, "OTEL_TOOLSCORE_RULES", str(path), "rules file")


def test_score_refuses_hostile_rules(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("")
    out = _cli("score", str(trace), "--rules", "/dev/zero")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "/dev/zero" in out.stderr and "not a regular file" in out.stderr


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_serve_still_starts_on_a_good_host(host: str) -> None:
    _serve_starts("--host", host, env={})
