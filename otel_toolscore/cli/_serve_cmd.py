"""``otel-toolscore serve``: the OTLP scoring service (see :mod:`otel_toolscore.service`)."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import socket
import sys
import threading
from collections import Counter
from typing import Any

from .._deadline import Deadline
from ._arguments import HelpFormatter, epilog, positive_int, tool_order

__all__ = ["add_parser", "run"]


def _default(field: str) -> str:
    """``(default X)`` of a service setting, from the settings model (one source for both)."""
    from ..service.settings import ServiceSettings

    value = ServiceSettings.model_fields[field].default
    return f"(default {str(value).lower() if isinstance(value, bool) else value})"


_EXAMPLES = [
    "otel-toolscore serve --rules rules.yaml --export-endpoint http://collector:4318",
    "otel-toolscore serve --config toolscore.yaml --forward   # enrich and forward every span",
]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="receive OTLP traces and logs, score completed agent runs, export the scores over OTLP",
        description=(
            "Receives OTLP over gRPC and HTTP (protobuf and JSON), groups spans by trace, scores each completed "
            "agent run with the same pipeline as the span processor, and exports evaluation events, metrics and "
            "(with --forward) the received spans with score attributes over OTLP. Settings: flags > "
            "OTEL_TOOLSCORE_SERVICE_* / OTEL_TOOLSCORE_* variables > --config file > defaults. The LLM judge is "
            "enabled by OTEL_TOOLSCORE_JUDGE_MODEL (and the other OTEL_TOOLSCORE_JUDGE_* variables). "
            "SIGTERM or SIGINT drains and exits."
        ),
        epilog=epilog(_EXAMPLES, [
            "0  stopped by SIGTERM or SIGINT after draining",
            "2  a setting that cannot be used (flag, variable of a named sink, config file, rules file) or a",
            "   port or address that cannot be bound",
        ]),
        formatter_class=HelpFormatter,
    )
    p.add_argument("--config", metavar="FILE", help="YAML or TOML file with `service:` and `scoring:` sections")
    g = p.add_argument_group("service")
    g.add_argument("--host", help=f"address to bind {_default('host')}; 0.0.0.0 in a container")
    g.add_argument("--grpc-port", type=int, metavar="PORT", help=f"OTLP/gRPC port {_default('grpc_port')}; 0: any free port")
    g.add_argument("--http-port", type=int, metavar="PORT",
                   help=f"OTLP/HTTP port, also /healthz and /readyz {_default('http_port')}; 0: any free port")
    g.add_argument("--quiet-period-ms", type=int, metavar="MS",
                   help=f"wait this long without new spans before scoring a complete trace {_default('quiet_period_ms')}")
    g.add_argument("--hard-timeout-ms", type=int, metavar="MS",
                   help=f"score a trace as it is this long after its first span {_default('hard_timeout_ms')}")
    g.add_argument("--max-pending-spans", type=int, metavar="N",
                   help=f"spans buffered before requests are refused (retryable) {_default('max_pending_spans')}")
    g.add_argument("--max-pending-bytes", type=int, metavar="BYTES",
                   help=f"estimated bytes buffered before requests are refused {_default('max_pending_bytes')}")
    g.add_argument("--max-request-bytes", type=int, metavar="BYTES",
                   help=f"largest request body accepted {_default('max_request_bytes')}")
    g.add_argument("--forward", action=argparse.BooleanOptionalAction, default=None,
                   help=f"enrich-and-forward: export every received span, score attributes on run roots {_default('forward')}")
    g.add_argument("--export", action=argparse.BooleanOptionalAction, default=None,
                   help="export scores, metrics (and forwarded spans) over OTLP (default true; nothing is sent "
                        "without an endpoint)")
    g.add_argument("--export-endpoint", metavar="URL", help="OTLP endpoint (default: OTEL_EXPORTER_OTLP_* variables)")
    g.add_argument("--export-protocol", choices=("grpc", "http/protobuf"),
                   help="export protocol (default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)")
    g.add_argument("--drain-timeout-ms", type=int, metavar="MS", help=f"longest drain on SIGTERM {_default('drain_timeout_ms')}")
    g.add_argument("--retry-after-ms", type=int, metavar="MS",
                   help=f"retry delay advertised when refusing under overload {_default('retry_after_ms')}")
    g.add_argument("--metric-export-interval-ms", type=int, metavar="MS",
                   help=f"metric export period {_default('metric_export_interval_ms')}")
    g.add_argument("--recent-traces", type=int, metavar="N",
                   help=f"completed trace ids remembered to recognise late spans {_default('recent_traces')}")
    g.add_argument("--http-read-timeout-ms", type=int, metavar="MS",
                   help=f"longest time to receive one OTLP/HTTP request {_default('http_read_timeout_ms')}")
    g.add_argument("--http-idle-timeout-ms", type=int, metavar="MS",
                   help=f"close kept-alive OTLP/HTTP connections idle this long {_default('http_idle_timeout_ms')}")
    g.add_argument("--http-max-connections", type=int, metavar="N",
                   help=f"open OTLP/HTTP connections at once {_default('http_max_connections')}")
    g.add_argument("--forward-queue-spans", type=int, metavar="N",
                   help=f"--forward: spans waiting for export at once {_default('forward_queue_spans')}")
    g.add_argument("--forward-queue-bytes", type=int, metavar="BYTES",
                   help=f"--forward: encoded bytes of the spans waiting for export at once {_default('forward_queue_bytes')}")
    g.add_argument("--forward-request-bytes", type=int, metavar="BYTES",
                   help=f"--forward: encoded spans per export request at most {_default('forward_request_bytes')}, "
                        "gRPC's default limit")
    g.add_argument("--forward-max-response-bytes", type=int, metavar="BYTES",
                   help=f"--forward: largest response body read from the backend {_default('forward_max_response_bytes')}")
    g.add_argument("--queue-dir", metavar="DIR",
                   help="--forward: keep accepted requests on disk in DIR until their spans are forwarded; the next "
                        "start replays what a crash left (default: off, a crash loses the buffered traces)")
    g.add_argument("--queue-max-bytes", type=int, metavar="BYTES",
                   help=f"--queue-dir: most bytes on disk {_default('queue_max_bytes')}")
    g.add_argument("--queue-fsync", action=argparse.BooleanOptionalAction, default=None,
                   help=f"--queue-dir: sync each request to the disk before acknowledging it {_default('queue_fsync')}")
    # The seconds flags these replaced: still accepted, with a deprecation line on stderr.
    for old in _DEPRECATED_SECONDS_FLAGS:
        g.add_argument(f"--{old.replace('_', '-')}", type=float, help=argparse.SUPPRESS)
    s = p.add_argument_group("scoring (default: the OTEL_TOOLSCORE_* settings the span processor reads)")
    s.add_argument("--rules", metavar="FILE", help="expectation rules file, YAML or TOML (default OTEL_TOOLSCORE_RULES)")
    which = s.add_mutually_exclusive_group()
    which.add_argument("--expected-tool", metavar="TOOL",
                       help="default expected tool for runs no rule matches (default OTEL_TOOLSCORE_EXPECTED_TOOL)")
    which.add_argument("--expected-order", type=tool_order, metavar="TOOLS",
                       help="default expected tool order, comma-separated, for runs no rule matches "
                            "(default OTEL_TOOLSCORE_EXPECTED_TOOL_ORDER)")
    s.add_argument("--strict", action="store_true", default=None,
                   help="strict mode for the default expectation: exactly that tool / exactly that order "
                        "(default OTEL_TOOLSCORE_STRICT_MODE, else lenient)")
    s.add_argument("--sinks", metavar="NAMES",
                   help="score sinks, comma-separated: phoenix, langfuse (default OTEL_TOOLSCORE_SINKS, else none)")
    s.add_argument("--log-level", default="INFO", metavar="LEVEL",
                   help="Python log level of the service (default INFO; DEBUG logs one line per scored run)")
    s.add_argument("--summary-interval-ms", type=positive_int, default=60_000, metavar="MS",
                   help="with no export endpoint, log a summary of the scores at INFO this often (default 60000)")
    p.set_defaults(func=run)


_DEPRECATED_SECONDS_FLAGS = ("hard_timeout_s", "drain_timeout_s", "retry_after_s", "http_read_timeout_s", "http_idle_timeout_s")
_SERVICE_FLAGS = (
    "host", "grpc_port", "http_port", "quiet_period_ms", "hard_timeout_ms", "max_pending_spans", "max_pending_bytes",
    "max_request_bytes", "forward", "export", "export_endpoint", "export_protocol", "drain_timeout_ms",
    "retry_after_ms", "metric_export_interval_ms", "recent_traces", "http_read_timeout_ms", "http_idle_timeout_ms",
    "http_max_connections", "forward_queue_spans", "forward_queue_bytes", "forward_request_bytes",
    "forward_max_response_bytes", "queue_dir", "queue_max_bytes", "queue_fsync", *_DEPRECATED_SECONDS_FLAGS,
)
# flag (argparse dest) -> scoring setting
_SCORING_FLAGS = {"rules": "rules", "expected_tool": "expected_tool", "expected_order": "expected_tool_order",
                  "strict": "strict_mode", "sinks": "sinks"}
_log = logging.getLogger("otel_toolscore.serve")
#: Allocations between two young-generation collections in the service. Its buffered spans live
#: from their request to their trace's scoring, so each collection walks the spans received since
#: the last one, and finds almost nothing to free (reference counting frees the rest): at 50,000,
#: 0.6 s of collections per 98,000 spans forwarded at the bench's load; at 200,000, 0.2 to 0.3 s,
#: each collection pausing the process for up to about 0.1 s.
SERVE_GC_GEN0_THRESHOLD = 200_000


class RunLog:
    """One DEBUG line per scored run and, on demand, an INFO summary of the runs since the last one.

    Called on the service's scoring thread: the per-run work is a few counter updates (the DEBUG line
    is formatted only when DEBUG is on)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()  # (agent, pass|fail|outcome) since the last summary
        self._total = 0

    def __call__(self, scored: Any) -> None:
        # the run's record (the public model is built on demand: reading a name need not build it)
        agent = scored.record.agent_name or "(unnamed)"
        verdict = scored.verdict
        what = verdict.label if verdict is not None else scored.outcome
        with self._lock:
            self._counts[(agent, what)] += 1
            self._total += 1
        if _log.isEnabledFor(logging.DEBUG):
            detail = verdict.summary() if verdict is not None else f"not scored ({scored.outcome})"
            _log.debug("run trace=%032x span=%016x agent=%s score=%s %s", scored.ref.trace_id, scored.ref.span_id,
                       agent, verdict.score if verdict is not None else "-", detail)

    def summary(self, period: str) -> str | None:
        """The runs since the last summary in one line, or ``None`` when there were none."""
        with self._lock:
            counts, self._counts = self._counts, Counter()
        if not counts:
            return None
        passed = sum(n for (_, w), n in counts.items() if w == "pass")
        failed = sum(n for (_, w), n in counts.items() if w == "fail")
        other = sum(counts.values()) - passed - failed
        agents: dict[str, Counter[str]] = {}
        for (agent, what), n in counts.items():
            agents.setdefault(agent, Counter())[what] += n
        per_agent = "; ".join(
            f"{agent}: " + ", ".join(f"{n} {w}" for w, n in sorted(c.items())) for agent, c in sorted(agents.items())
        )
        scored = passed + failed
        rate = f"{passed / scored:.1%}" if scored else "-"
        return (f"{sum(counts.values())} run(s) {period}: {passed} pass, {failed} fail, {other} not scored; "
                f"pass rate {rate} ({per_agent})")


def _check_bindable(host: str) -> None:
    """Refuse at start a host this machine cannot listen on (a name that does not resolve, an address
    that is not local), with one message instead of a receiver's traceback later."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise ValueError(f"cannot listen on host {host!r}: it does not resolve ({exc})") from None
    problem: OSError | None = None
    for family, _type, _proto, _name, address in infos:  # one address that binds is enough
        try:
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.bind((address[0], 0))
            return
        except OSError as exc:
            problem = exc
    reason = (problem.strerror or str(problem)) if problem is not None else "no address"
    raise ValueError(f"cannot listen on host {host!r}: {reason}")


def run(args: argparse.Namespace) -> int:
    from ..expectations import load_rules
    from ..online._setup import otlp_endpoint_configured
    from ..service import ScoringService, load_config
    from ..settings import ConfigError
    from ..sinks._settings import resolve_sinks

    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for old in _DEPRECATED_SECONDS_FLAGS:
        if getattr(args, old) is not None:
            flag = old.replace("_", "-")
            print(f"otel-toolscore serve: --{flag} is deprecated; use --{flag[:-2]}-ms (milliseconds)", file=sys.stderr)
    try:
        config = load_config(
            config_file=args.config,
            service_overrides={k: getattr(args, k) for k in _SERVICE_FLAGS},
            scoring_overrides={setting: getattr(args, flag) for flag, setting in _SCORING_FLAGS.items()},
        )
        _check_bindable(config.service.host)
        if config.scoring.rules:
            load_rules(config.scoring.rules)  # a bad rules file is the one message, before anything starts
        # Sinks named on the command line fail here (a missing package, no credentials); those from
        # the environment or the config file are a warning each, as the processor reads them.
        sinks = resolve_sinks(config.scoring.sinks, strict=True) if args.sinks is not None else None
        run_log = RunLog()
        # With somewhere to export to, the log's summaries are not written: the run log is called
        # (on its own thread, per scored run) only when it writes something — summaries or DEBUG lines.
        exporting = config.service.export and (bool(config.service.export_endpoint) or otlp_endpoint_configured())
        logged = not exporting or _log.isEnabledFor(logging.DEBUG)
        service = ScoringService(config, judge_from_environment=True, sinks=sinks, on_scored=run_log if logged else None)
    except (ConfigError, ValueError, OSError) as exc:  # ConfigError, RulesError: the message names the key
        print(f"otel-toolscore serve: {exc}", file=sys.stderr)
        return 2
    _raise_open_file_limit()
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        service.start()
    except OSError as exc:
        print(f"otel-toolscore serve: {exc}", file=sys.stderr)
        return 2
    from . import tune_gc

    # Again, now that the service is built and listening: what it imported and set up (providers,
    # servers, the core's tables) is frozen out of every later collection too, and the young
    # generation is collected less often than the offline commands' (see SERVE_GC_GEN0_THRESHOLD).
    tune_gc(SERVE_GC_GEN0_THRESHOLD)
    svc = config.service
    # One machine-readable line: tests and scripts read the bound ports from it (ports may be 0).
    print(json.dumps({"event": "listening", "host": svc.host, "grpc_port": service.grpc_port,
                      "http_port": service.http_port, "forward": svc.forward}), flush=True)
    # With nowhere to export to, the log is the only place the scores show: a summary every interval.
    interval = args.summary_interval_ms / 1000
    next_summary = Deadline.after(interval)
    while not stop.wait(min(0.5, interval)):
        if not exporting and next_summary.expired:
            next_summary = Deadline.after(interval)
            line = run_log.summary(f"in the last {interval:g} s")
            if line:
                _log.info("%s", line)
    service.shutdown()
    if not exporting:
        line = run_log.summary("since the last summary")
        if line:
            _log.info("%s", line)
    print(json.dumps({"event": "stopped"}), flush=True)
    return 0


def _raise_open_file_limit() -> None:
    """Open-file soft limit up to the hard one: every OTLP/HTTP connection is a file descriptor."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = hard if hard != resource.RLIM_INFINITY else 65_536
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ImportError, OSError, ValueError):
        pass
