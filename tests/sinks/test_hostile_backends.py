"""Hostile backends against every HTTP client of ours: the Phoenix and Langfuse sinks, the judge's
``openai`` client, the service's OTLP/HTTP forwarding sender and ``judge-check``.

What an attacker's (or a broken proxy's) answers did to them, sent again over real sockets to
127.0.0.1, with the promise asserted and the figure measured in the test against a generous ceiling:
an endless body (memory), a gzip bomb, one byte per second (request duration), a redirect to
another origin (records delivered there), an error body echoing the request's ``Authorization``
header and a URL with a password (what reaches the logs), ``Retry-After`` as seconds and as an
HTTP date (the wait before the retry).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from email.utils import formatdate
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from otel_toolscore import create_tool_call_accuracy_scorer_llm
from otel_toolscore.model import AgentRun, ToolCall
from otel_toolscore.scorers.llm import JudgeError
from otel_toolscore.service._otlp_sender import HttpTraceSender
from otel_toolscore.sinks import LangfuseSink, PhoenixSink, ScoreRecord, SinkDispatcher, SinkError
from otel_toolscore.telemetry._http_refusals import http_refusal_counts
from tests.support.hostile_http import Endless, HostileServer, Plain, Seen, Trickle
from tests.support.openai_server import OpenAITestServer, echo_judge

pytestmark = pytest.mark.timeout(180)

#: What a client may hold while refusing an endless body: generous against its 4 MiB cap (the
#: clients before the cap reached 2.84 GB and a MemoryError).
MEMORY_CEILING = 64 * 1024 * 1024
#: A 1 byte/s answer must end within the request timeout plus this (the clients before held one
#: export 45 s at a 2 s timeout).
SLACK_S = 3.0
TIMEOUT_S = 2.0
PK, SK = "pk-lf-hostile", "sk-lf-hostile-secret"
#: A bearer key without digits (the shape the redactor used to let through) and a URL password.
API_KEY = "AbCdEfGhIjKlMnOpQrStUvWxYz-phoenix"
URL_PASSWORD = "s3cret-url-pass"


def record() -> ScoreRecord:
    return ScoreRecord(trace_id="0af7651916cd43dd8448eb211c80319c", span_id="b7ad6b7169203331",
                       name="tool_call_accuracy", annotator_kind="CODE", score=1.0, label="pass")


def a_run() -> AgentRun:
    return AgentRun(run_id="r-1", user_query="Weather in Paris?", final_output="Sunny.",
                    tool_calls=[ToolCall(name="get_weather", call_id="c1")])


def otlp_body() -> bytes:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    with provider.get_tracer("t").start_as_current_span("invoke_agent a"):
        pass
    return bytes(encode_spans(spans.get_finished_spans()).SerializeToString())


# -- the clients, each sending one request to a base URL and returning what it raised --------------------
def exporting(make: Callable[[], Any]) -> Callable[[], object]:
    """A call exporting one record through the sink ``make()`` builds, then shutting it down."""
    def call() -> object:
        sink = make()
        try:
            return sink.export([record()])
        finally:
            sink.shutdown()
    return call


def phoenix(url: str, **kw: Any) -> Callable[[], object]:
    return exporting(lambda: PhoenixSink(url, **{"max_retries": 0, "timeout_s": 30.0, **kw}))


def langfuse(url: str, **kw: Any) -> Callable[[], object]:
    return exporting(lambda: LangfuseSink(public_key=PK, secret_key=SK, base_url=url, environ={},
                                          **{"max_retries": 0, "timeout_s": 30.0, **kw}))


def judge(url: str, **kw: Any) -> Callable[[], object]:
    def call() -> object:
        scorer = create_tool_call_accuracy_scorer_llm("test-judge", ["get_weather"], base_url=url + "/v1",
                                                      api_key="sk-test-local", **{"max_retries": 0, "timeout": 30.0, **kw})
        try:
            return scorer.run(a_run())
        finally:
            scorer.close()
    return call


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def forward(url: str, **kw: Any) -> Callable[[], object]:
    """The sender returns False when it gives a batch up; why is in its error log line."""
    def call() -> object:
        sender = HttpTraceSender(url + "/v1/traces", **{"timeout_s": 30.0, **kw})
        errors = _Errors()
        logger = logging.getLogger("otel_toolscore.service._otlp_sender")
        logger.addHandler(errors)
        try:
            ok = sender.send(otlp_body(), 1)
            if not ok:
                raise RuntimeError(f"the forwarding sender gave the batch up: {' / '.join(errors.lines)}")
            return ok
        finally:
            logger.removeHandler(errors)
            sender.shutdown()
    return call


CLIENTS: dict[str, Callable[..., Callable[[], object]]] = {
    "phoenix": phoenix, "langfuse": langfuse, "judge": judge, "forward": forward,
}
ERRORS = (SinkError, JudgeError, RuntimeError)


def raised(call: Callable[[], object]) -> BaseException:
    try:
        call()
    except ERRORS as exc:
        return exc
    raise AssertionError("the client took the hostile answer")


def peak_memory(call: Callable[[], object]) -> tuple[BaseException, int]:
    """What ``call`` raised and the peak of Python allocations meanwhile (every thread)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        exc = raised(call)
        return exc, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def refusals(client: str, reason: str) -> int:
    return http_refusal_counts().get((client, reason), 0)


# -- 1. every body read through a size cap ----------------------------------------------------------------
@pytest.mark.parametrize("gzip", [False, True], ids=["endless", "gzip-bomb"])
@pytest.mark.parametrize("client", list(CLIENTS))
def test_an_endless_body_is_refused_at_the_cap_with_bounded_memory(client: str, gzip: bool) -> None:
    with HostileServer(lambda seen: Endless(gzip=gzip)) as server:
        before = refusals(client, "response_too_large")
        exc, peak = peak_memory(CLIENTS[client](server.url))
        sent = server.sent_bytes
    print(f"{client} {'gzip bomb' if gzip else 'endless body'}: peak {peak / 2**20:.1f} MiB of Python allocations, "
          f"server sent {sent / 1024:,.0f} KiB")
    assert "over the limit" in str(exc) and "max_response_bytes" in str(exc), exc
    assert peak < MEMORY_CEILING, f"{client} held {peak / 2**20:.0f} MiB refusing an endless body"
    assert refusals(client, "response_too_large") == before + 1


@pytest.mark.parametrize("client", ["phoenix", "langfuse", "judge"])
def test_the_cap_is_a_setting_and_a_content_length_over_it_is_refused_unread(client: str) -> None:
    big = json.dumps({"data": [], "pad": "x" * 300_000}).encode()
    with HostileServer(lambda seen: Plain(500 if client != "judge" else 200, big)) as server:
        exc = raised(CLIENTS[client](server.url, max_response_bytes=64 * 1024))
    assert "announced" in str(exc) and str(len(big)) in str(exc), exc


def test_the_cap_settings_come_from_the_environment() -> None:
    from otel_toolscore.judge import JudgeSettings
    from otel_toolscore.service.settings import ServiceSettings
    from otel_toolscore.sinks._settings import sink_settings_from_env

    env = {"OTEL_TOOLSCORE_PHOENIX_MAX_RESPONSE_BYTES": "65536", "OTEL_TOOLSCORE_LANGFUSE_MAX_RESPONSE_BYTES": "70000",
           "OTEL_TOOLSCORE_JUDGE_MAX_RESPONSE_BYTES": "80000",
           "OTEL_TOOLSCORE_SERVICE_FORWARD_MAX_RESPONSE_BYTES": "90000"}
    assert sink_settings_from_env("phoenix", env).max_response_bytes == 65536  # type: ignore[attr-defined]
    assert sink_settings_from_env("langfuse", env).max_response_bytes == 70000  # type: ignore[attr-defined]
    assert JudgeSettings.from_env(env).max_response_bytes == 80000
    values, _ = ServiceSettings.read_environment(env)
    assert values["forward_max_response_bytes"] == 90000
    assert JudgeSettings.from_env({}).max_response_bytes == 4 * 1024 * 1024  # the default


def test_judge_check_under_an_endless_body_keeps_its_memory(tmp_path: Any) -> None:
    # VmHWM, the child's own high-water mark: ru_maxrss starts from the parent's RSS at fork (a pytest
    # process of 800 MB made a child of 90 MB read as 835 MiB)
    code = ("import re, sys; from otel_toolscore.cli import main; rc = main(sys.argv[1:]); "
            "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1); "
            "print('PEAK', hwm, file=sys.stderr); sys.exit(rc)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update(NO_PROXY="127.0.0.1", no_proxy="127.0.0.1", OTEL_TOOLSCORE_JUDGE_MAX_RETRIES="0")
    with HostileServer(lambda seen: Endless()) as server:
        out = subprocess.run([sys.executable, "-c", code, "judge-check", "--judge-model", "m", "--judge-base-url",
                              server.url + "/v1", "--max-judgments", "2", "--quiet", "--format", "json"],
                             env=env, capture_output=True, text=True, timeout=150)
    assert out.returncode == 0, out.stderr[-2000:]
    peak_kib = int(out.stderr.rsplit("PEAK", 1)[1].split()[0])
    report = json.loads(out.stdout)
    print(f"judge-check against an endless body: peak RSS {peak_kib / 1024:.0f} MiB, failures {report['failures']}")
    assert report["answered"] == 0 and sum(report["failures"].values()) >= 2
    assert peak_kib < 400 * 1024, f"judge-check reached {peak_kib / 1024:.0f} MiB"  # the interpreter and openai: ~100


def test_judge_check_cuts_a_20_mb_reason(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from otel_toolscore.cli import main

    for var in [v for v in os.environ if v.startswith(("OTEL_TOOLSCORE_", "OPENAI_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("OTEL_TOOLSCORE_JUDGE_MAX_RESPONSE_BYTES", str(64 * 1024 * 1024))  # let it through the client
    reason = "because " * 2_500_000  # 20 MB
    with OpenAITestServer(echo_judge(reason=reason)) as server:
        for fmt in ("json", "table"):
            rc = main(["judge-check", "--judge-model", "m", "--judge-base-url", server.base_url, "--max-judgments", "1",
                       "--quiet", "--format", fmt])
            out, err = capsys.readouterr()
            print(f"judge-check --format {fmt} with a 20 MB reason: {len(out):,} characters on stdout")
            assert rc == 0 and len(out) < 200_000, len(out)
            assert "judge reason(s) longer than 2000 characters were cut" in err
            if fmt == "json":
                (row,) = [r for r in json.loads(out)["rows"] if r["reason"] and r["reason"].startswith("because")]
                assert row["reason"].endswith(f"…[cut {len(reason.strip()) - 2000} chars]")


# -- 3. one deadline per request, whatever the server trickles -------------------------------------------
@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "headers-and-body"])
@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_trickling_server_is_cut_at_the_request_timeout(client: str, headers_too: bool) -> None:
    options = {"judge": {"timeout": TIMEOUT_S}, "forward": {"timeout_s": TIMEOUT_S}}.get(client, {"timeout_s": TIMEOUT_S})
    before = refusals(client, "deadline")
    with HostileServer(lambda seen: Trickle(every_s=1.0, headers_too=headers_too)) as server:
        started = time.monotonic()
        exc = raised(CLIENTS[client](server.url, **options))
        took = time.monotonic() - started
    print(f"{client}: a 1 byte/s answer ended after {took:.2f} s (timeout {TIMEOUT_S:g} s)")
    assert took < TIMEOUT_S + SLACK_S, f"{client} was held {took:.1f} s by a trickle at a {TIMEOUT_S:g} s timeout"
    assert "deadline" in str(exc) or "time" in str(exc).lower(), exc
    assert refusals(client, "deadline") >= before + 1


# -- 4. no secret in a log line, a warning, a repr ------------------------------------------------------------
def _echo_authorization(status: int) -> Callable[[Seen], Plain]:
    def answer(seen: Seen) -> Plain:
        body = {"error": "unauthorized", "you_sent": {"authorization": seen.headers.get("authorization", "")},
                "debug": f"Authorization: {seen.headers.get('authorization', '')}"}
        return Plain(status, json.dumps(body).encode())
    return answer


@pytest.fixture
def every_log(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[], str]]:
    """Everything logged meanwhile at any level, formatted with tracebacks, as one text."""
    caplog.set_level(logging.DEBUG)
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    yield lambda: "\n".join(formatter.format(r) for r in caplog.records)


@pytest.mark.parametrize("status", [401, 500])
def test_no_credential_reaches_a_log_line_warning_or_repr(status: int, every_log: Callable[[], str],
                                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="httpx")  # a host that logs its requests (langfuse's import sets WARNING)
    basic = base64.b64encode(f"{PK}:{SK}".encode()).decode()
    with HostileServer(_echo_authorization(status)) as server:
        host_port = server.url.removeprefix("http://")
        secret_url = f"http://user:{URL_PASSWORD}@{host_port}"
        sinks = [PhoenixSink(secret_url, api_key=API_KEY, max_retries=1, timeout_s=5),
                 LangfuseSink(public_key=PK, secret_key=SK, base_url=secret_url, max_retries=1, environ={})]
        shown = [repr(s) for s in sinks] + [s.endpoint for s in sinks[:1]] + [s.base_url for s in sinks[1:]]  # type: ignore[attr-defined]
        dropped: list[tuple[str, int]] = []
        dispatcher = SinkDispatcher(sinks, queue_size=10, count_drop=lambda reason, n: dropped.append((reason, n)))
        for _ in range(3):
            dispatcher.offer(record())
        assert dispatcher.wait_idle(time.monotonic() + 30)
        dispatcher.stop(time.monotonic() + 10)
        errors = []
        for sink in (PhoenixSink(secret_url, api_key=API_KEY, max_retries=0),
                     LangfuseSink(public_key=PK, secret_key=SK, base_url=secret_url, max_retries=0, environ={})):
            errors.append(str(raised(lambda s=sink: s.export([record()]))))
            sink.shutdown()
        sender = HttpTraceSender(f"{secret_url}/v1/traces", headers={"authorization": f"Bearer {API_KEY}"}, timeout_s=5)
        assert sender.send(otlp_body(), 1) is False
        shown.append(repr(sender.endpoint))
        sender.shutdown()
        # the host's own httpx client still logs its requests: the filter is scoped to ours
        with httpx.Client() as host:
            host.get(f"{server.url}/host")
        assert server.requests("/v1/span_annotations") and server.requests("/api/public/scores")
        sent = server.requests()[0].headers["authorization"]
    logged = every_log()
    assert sum(n for reason, n in dropped if reason == "sink_failed") == 6
    assert "sink 'phoenix' failed" in logged and "sink 'langfuse' failed" in logged  # the warnings were there
    assert "[REDACTED" in logged  # and the echoed body in them, redacted
    for secret in (URL_PASSWORD, API_KEY, SK, basic, sent.split()[-1]):
        for where, text in (("log", logged), ("repr", " ".join(shown)), ("errors", " ".join(errors))):
            assert secret not in text, f"{secret!r} in the {where}"
    our_lines = [r for r in caplog.records if r.name == "httpx" and "/host" not in r.getMessage()]
    assert our_lines == [], "httpx logged our requests"
    assert any(r.name == "httpx" and "/host" in r.getMessage() for r in caplog.records), "the host's httpx was silenced"


# -- 5. redirects to another origin, Retry-After ------------------------------------------------------------
@pytest.mark.parametrize("client", ["phoenix", "langfuse", "forward"])
def test_a_redirect_to_another_origin_is_refused_and_counted(client: str) -> None:
    with HostileServer(lambda seen: Plain(200, b'{"data": []}')) as elsewhere:
        def answer(seen: Seen) -> Plain:
            return Plain(307, b"", {"Location": f"{elsewhere.url}{seen.path}"})

        with HostileServer(answer) as backend:
            before = refusals(client, "redirect")
            exc = raised(CLIENTS[client](backend.url, max_retries=0) if client != "forward" else forward(backend.url))
            assert len(backend.requests()) == 1
        assert elsewhere.requests() == [], f"{client} sent {len(elsewhere.requests())} request(s) to another origin"
    assert refusals(client, "redirect") == before + 1
    print(f"{client}: {exc}")


@pytest.mark.parametrize("client", ["phoenix", "langfuse"])
def test_a_same_origin_redirect_is_followed(client: str) -> None:
    def answer(seen: Seen) -> Plain:
        if not seen.path.startswith("/moved"):
            return Plain(307, b"", {"Location": "/moved" + seen.path})
        return Plain(200, b'{"data": []}' if client == "phoenix" else b'{"message": "Accepted"}')

    with HostileServer(answer) as backend:
        CLIENTS[client](backend.url)()
        moved = [s for s in backend.requests() if s.path.startswith("/moved")]
    assert len(moved) == 1 and moved[0].body, "the redirected request lost its body"


@pytest.mark.parametrize("client", ["phoenix", "langfuse"])
@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_retry_after_is_honoured_as_seconds_and_as_an_http_date(client: str, form: str) -> None:
    answers = iter([None])

    def answer(seen: Seen) -> Plain:
        if next(answers, "done") is None:
            value = "2" if form == "seconds" else formatdate(time.time() + 3, usegmt=True)
            return Plain(429, b'{"error": "slow down"}', {"Retry-After": value})
        return Plain(200, b'{"data": []}' if client == "phoenix" else b'{"message": "Accepted"}')

    with HostileServer(answer) as backend:
        CLIENTS[client](backend.url, max_retries=1)()
        first, second = backend.requests()
    waited = second.at - first.at
    print(f"{client}: Retry-After as {form}: retried after {waited:.2f} s")
    # 2 s asked (the date: 3 s ahead at one-second resolution, so 2 to 3 s); the old Langfuse sink retried after 0.5 s
    assert 1.8 <= waited < 4.0 + SLACK_S, waited


def test_importing_langfuse_through_the_sink_leaves_the_hosts_httpx_logger_alone() -> None:
    """The langfuse package sets the ``httpx`` logger to WARNING and adds a handler when imported."""
    code = ("import logging; logging.getLogger('httpx').setLevel(logging.INFO); "
            "from otel_toolscore.sinks import LangfuseSink; "
            "LangfuseSink(public_key='pk', secret_key='sk', base_url='http://127.0.0.1:9', environ={}).shutdown(); "
            "import sys; log = logging.getLogger('httpx'); assert 'langfuse' in sys.modules; "
            "print(logging.getLevelName(log.level), len(log.handlers))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["INFO", "0"]


def test_a_judge_endpoint_echoing_the_key_leaves_it_out_of_the_judge_error() -> None:
    key = "sk-proj-" + "AbCdEfGhIjKlMnOpQrSt"

    def answer(seen: Seen) -> Plain:
        echoed = seen.headers.get("authorization", "")
        return Plain(401, json.dumps({"error": {"message": f"bad credentials: {echoed}", "type": "auth"}}).encode())

    with HostileServer(answer) as server:
        scorer = create_tool_call_accuracy_scorer_llm("m", ["get_weather"], base_url=server.url + "/v1", api_key=key,
                                                      max_retries=0)
        with pytest.raises(JudgeError) as info:
            scorer.run(a_run())
        scorer.close()
    assert info.value.kind == "error" and "401" in info.value.message
    assert key not in info.value.message and "[REDACTED" in info.value.message
