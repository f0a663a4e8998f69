"""``otel-toolscore demo``: a scripted agent, scored live by the span processor, and explained.

For every run the demo says which rule or ``expect()`` block applied, what it means in plain words
(strict or lenient, ordered or not), why the run passed or failed, and where the score went: the
attributes really set on the run's root span, the evaluation event really emitted and the metric
points really recorded (read back from in-memory exporters next to the OTLP ones).

With ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or a signal-specific endpoint) set, the same telemetry is sent
over OTLP. An endpoint nobody listens on is reported once and nothing is sent, instead of the
exporters' retry messages and a shutdown that waits for their back-off.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._arguments import HelpFormatter, epilog
from ._probe import unreachable

__all__ = ["add_parser", "unreachable_endpoints"]

_STEP = "toolscore.demo.step"  # a root-span attribute of the demo's own, to list runs in script order

# (agent, user query, tools the agent calls, expect() override or None)
_SCRIPT: list[tuple[str, str, list[str], dict[str, Any] | None]] = [
    ("weather_agent", "What's the weather in Paris?", ["get_weather"], None),
    ("weather_agent", "Weather in Oslo, please", ["search_web"], None),
    ("weather_agent", "Weather in Rome and the time there", ["get_weather", "get_time"], None),
    ("weather_agent", "Just the weather in Lima", ["get_weather", "get_time"], {"expected_tool": "get_weather", "strict_mode": True}),
    ("billing_agent", "Refund my last order", ["auth", "fetch_order", "refund"], None),
    ("billing_agent", "Refund order 42", ["fetch_order", "auth", "refund"], None),
    ("billing_agent", "Refund order 7", ["auth", "fetch_order", "refund"], {"expected_tool_order": ["auth", "fetch_order", "refund"], "strict_mode": True}),
    ("billing_agent", "Refund order 9 now", ["refund", "auth"], None),
    ("support_agent", "Hello!", [], None),
]

_ENDPOINT_VARS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
)
_PROBE_TIMEOUT_S = 2.0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="run a scripted agent through the span processor and explain each score",
        description=(
            "Runs a scripted agent (OTel GenAI spans) through ToolScoreSpanProcessor and prints each run's "
            "score, why it passed or failed, and where the score was recorded. Exports spans, metrics and "
            "evaluation events over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT (or a signal-specific endpoint) is set."
        ),
        epilog=epilog(["otel-toolscore demo",
                       "OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 otel-toolscore demo   # also export over OTLP"],
                      ["0  the demo ran (an unreachable OTLP endpoint is reported, not an error)",
                       "2  a usage error"]),
        formatter_class=HelpFormatter,
    )
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="table: the scores, then why each run passed or failed and where its score went "
                        "(default); json: the same per run, one document")
    p.set_defaults(func=run)


def unreachable_endpoints(environ: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    """``(variable, endpoint, reason)`` for each configured OTLP endpoint no server accepts a TCP
    connection on (checked once, with a short timeout)."""
    env = os.environ if environ is None else environ
    grpc = env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf").strip().lower() == "grpc"
    out = []
    for var in _ENDPOINT_VARS:
        value = (env.get(var) or "").strip()
        if not value:
            continue
        reason = unreachable(value, default_port=4317 if grpc else 4318, timeout_s=_PROBE_TIMEOUT_S)
        if reason is not None:
            out.append((var, value, reason))
    return out


class _Captured(logging.Handler):
    """Keeps the exporters' log records instead of printing them (one summary line at the end)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _quiet_exporters() -> Iterator[_Captured]:
    logger = logging.getLogger("opentelemetry")
    handler = _Captured()
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def run(args: argparse.Namespace) -> int:
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ..core import ScoredRun
    from ..expectations import Expectation, expect
    from ..online._setup import configure, otlp_endpoint_configured
    from ..scripted import run_scripted_agent

    scored: list[ScoredRun] = []
    lock = threading.Lock()

    def collect(item: ScoredRun) -> None:
        with lock:
            scored.append(item)

    configured = otlp_endpoint_configured()
    dead = unreachable_endpoints() if configured else []
    export = configured and not dead
    rules = [
        Expectation(name="weather", agent_name="weather_agent", expected_tool="get_weather"),
        Expectation(name="refund", agent_name="billing_agent", expected_tool_order=("auth", "refund")),
    ]
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    logs = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    with _quiet_exporters() as captured:
        installed = configure(
            export=export,
            set_global=False,
            expectations=rules,
            on_scored=collect,
            extra_span_processors=[SimpleSpanProcessor(spans)],
            metric_readers=[reader],
        )
        if installed.logger_provider is not None:
            installed.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
        tracer = installed.tracer_provider.get_tracer("otel_toolscore.demo")
        for step, (agent, query, tools, override) in enumerate(_SCRIPT):
            attrs = {_STEP: step}
            if override is None:
                run_scripted_agent(tracer, agent, query, tools, answer="(scripted answer)", attributes=attrs)
            else:
                with expect(**override):
                    run_scripted_agent(tracer, agent, query, tools, answer="(scripted answer)", attributes=attrs)
        installed.tracer_provider.force_flush()
        if installed.logger_provider is not None:
            installed.logger_provider.force_flush()
        metrics = reader.get_metrics_data()
        installed.shutdown()
    telemetry = _Telemetry(spans.get_finished_spans(), [r.log_record for r in logs.get_finished_logs()], metrics)
    scored.sort(key=lambda s: telemetry.step(s))
    if args.format == "json":
        print(json.dumps([_row(s, rules, telemetry) for s in scored], indent=2))
        return 0
    rows = [_row(s, rules, telemetry) for s in scored]
    _print_table(rows)
    print("\nWhy each run passed or failed, and where its score went:")
    for n, (s, row) in enumerate(zip(scored, rows), 1):
        _print_explanation(n, s, row)
    print()
    _print_metrics(telemetry)
    print()
    where = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "the configured OTLP endpoints"
    if dead:
        for var, endpoint, reason in dead:
            print(f"{var}={endpoint} is not reachable ({reason}): nothing was exported; the scores above were "
                  "read from in-memory exporters.")
    elif export:
        failures = [r for r in captured.records if r.levelno >= logging.WARNING]
        if failures:
            print(f"Exporting to {where} failed ({len(failures)} message(s) from the OTLP exporters; the first: "
                  f"{failures[0].getMessage()[:200]})")
        else:
            print(f"Spans (with toolscore.code.* on each run's root), evaluation events and metrics sent to {where}.")
    else:
        print("Set OTEL_EXPORTER_OTLP_ENDPOINT to send the spans, evaluation events and metrics over OTLP.")
    return 0


class _Telemetry:
    """What the in-memory exporters received: root spans by span id, evaluation events, metric points."""

    def __init__(self, spans: Any, records: list[Any], metrics: Any) -> None:
        from ..telemetry import names

        self.spans = {s.context.span_id: s for s in spans}
        self.events: dict[int, dict[str, Any]] = {}
        for r in records:
            attrs = dict(r.attributes or {})
            if r.event_name == names.EVENT_EVALUATION_RESULT and attrs.get(names.GEN_AI_EVALUATION_NAME) == names.EVAL_CODE:
                self.events[r.span_id] = attrs
        self.points: dict[str, list[tuple[dict[str, Any], float]]] = {}
        for rm in metrics.resource_metrics if metrics is not None else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    for p in m.data.data_points:
                        value = float(getattr(p, "count", None) or getattr(p, "value", 0) or 0)
                        self.points.setdefault(m.name, []).append((dict(p.attributes or {}), value))

    def step(self, s: Any) -> int:
        span = self.spans.get(s.ref.span_id)
        value = (span.attributes or {}).get(_STEP) if span is not None else None
        return int(value) if isinstance(value, int) else len(_SCRIPT)

    def root_attributes(self, s: Any) -> dict[str, Any]:
        span = self.spans.get(s.ref.span_id)
        attrs = dict(span.attributes or {}) if span is not None else {}
        return {k: v for k, v in attrs.items() if k.startswith("toolscore.") and k != _STEP}

    def root_name(self, s: Any) -> str:
        span = self.spans.get(s.ref.span_id)
        return span.name if span is not None else "(root span not seen)"


def _expected(exp: Any) -> str | None:
    if exp is None:
        return None
    expected = " -> ".join(exp.expected_tool_order) if exp.expected_tool_order else exp.expected_tool
    return f"{expected} ({'strict' if exp.strict_mode else 'lenient'})"


def _row(s: Any, rules: list[Any], telemetry: _Telemetry) -> dict[str, Any]:
    from ._explain import expectation_in_words, expectation_source, why_in_words

    exp = s.expectation
    result = s.result
    return {
        "trace_id": format(s.ref.trace_id, "032x"),
        "agent": s.run.agent_name,
        "expected": _expected(exp),
        "called": [c.name for c in s.run.tool_calls],
        "score": s.verdict.score if s.verdict is not None else None,
        "label": s.verdict.label if s.verdict is not None else None,
        "outcome": s.outcome,
        "rule": expectation_source(exp, rules),
        "meaning": expectation_in_words(exp) if exp is not None else None,
        "why": why_in_words(result) if result is not None else [],
        "root_span": telemetry.root_name(s),
        "root_attributes": telemetry.root_attributes(s),
        "event": telemetry.events.get(s.ref.span_id),
    }


def _print_table(rows: list[dict[str, Any]]) -> None:
    headers = ("#", "agent", "expected", "called", "score", "label", "outcome")
    cells = [
        [
            str(n),
            str(r["agent"] or "-"),
            str(r["expected"] or "-"),
            ", ".join(r["called"]) or "(none)",
            "-" if r["score"] is None else f"{r['score']:.2f}",
            r["label"] or "-",
            r["outcome"],
        ]
        for n, r in enumerate(rows, 1)
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths)).rstrip())


def _print_explanation(n: int, s: Any, row: dict[str, Any]) -> None:
    from ..telemetry import names

    called = ", ".join(row["called"]) or "no tool"
    print(f"\n{n}. {row['agent']} called {called}")
    if s.expectation is None:
        print(f"   not scored: {row['rule']}.")
        print(f"   recorded: toolscore.runs +1 with {names.ATTR_OUTCOME}={s.outcome}; no score attributes, no event.")
        return
    verdict = "PASS" if row["label"] == names.LABEL_PASS else "FAIL"
    print(f"   expected by {row['rule']}")
    print(f"   meaning:  {row['meaning']}")
    print(f"   result:   {verdict} ({row['score']:.2f}): " + "; ".join(row["why"]))
    attrs = row["root_attributes"]
    shown = ", ".join(f"{k}={v}" for k, v in attrs.items() if k in (names.CODE_SCORE, names.CODE_LABEL))
    others = [k for k in attrs if k not in (names.CODE_SCORE, names.CODE_LABEL)]
    print(f"   recorded: on the root span {row['root_span']!r}: {shown or 'no score attributes'}")
    if others:
        print(f"             (with {', '.join(others)})")
    event = row["event"]
    if event is not None:
        print(f"             event {names.EVENT_EVALUATION_RESULT} ({names.GEN_AI_EVALUATION_NAME}={names.EVAL_CODE}, "
              f"score {event.get(names.GEN_AI_EVALUATION_SCORE_VALUE)}, label {event.get(names.GEN_AI_EVALUATION_SCORE_LABEL)}) "
              "parented to that span")
    print(f"             one point in the {names.METRIC_SCORE} histogram ({names.GEN_AI_AGENT_NAME}={row['agent']}, "
          f"{names.GEN_AI_EVALUATION_SCORE_LABEL}={row['label']})")


def _print_metrics(telemetry: _Telemetry) -> None:
    from ..telemetry import names

    print("Metrics recorded (what a dashboard shows), one line per attribute set:")
    for name in (names.METRIC_SCORE, names.METRIC_RUNS):
        for attrs, count in sorted(telemetry.points.get(name, []), key=lambda p: sorted(p[0].items())):
            shown = ", ".join(f"{k}={v}" for k, v in sorted(attrs.items()) if k != names.GEN_AI_EVALUATION_NAME)
            print(f"  {name} {{{shown}}}: {int(count)} run(s)")
