"""``otel-toolscore demo``: a scripted agent, scored live by the span processor, shown as a table."""

from __future__ import annotations

import argparse
import os
import threading
from typing import Any

__all__ = ["add_parser"]

# (agent, user query, tools the agent calls, expect() override or None)
_SCRIPT: list[tuple[str, str, list[str], dict[str, Any] | None]] = [
    ("weather_agent", "What's the weather in Paris?", ["get_weather"], None),
    ("weather_agent", "Weather in Oslo, please", ["search_web"], None),
    ("weather_agent", "Weather in Rome and the time there", ["get_weather", "get_time"], None),
    ("weather_agent", "Just the weather in Lima", ["get_weather", "get_time"], {"expected_tool": "get_weather", "strict_mode": True}),
    ("billing_agent", "Refund my last order", ["auth", "fetch_order", "refund"], None),
    ("billing_agent", "Refund order 42", ["fetch_order", "auth", "refund"], None),
    ("billing_agent", "Refund order 7", ["auth", "fetch_order", "refund"], {"expected_tool_order": ["auth", "fetch_order", "refund"], "strict_mode": True}),
    ("support_agent", "Hello!", [], None),
]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="run a scripted agent through the span processor and show the scores",
        description=(
            "Runs a scripted agent (OTel GenAI spans) through ToolScoreSpanProcessor and prints each run's "
            "score. Exports spans, metrics and evaluation events over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT "
            "(or a signal-specific endpoint) is set."
        ),
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..online.expectations import Expectation, expect
    from ..online.live import ScoredRun
    from ..online.setup import configure, otlp_endpoint_configured
    from ..scripted import run_scripted_agent

    scored: list[ScoredRun] = []
    lock = threading.Lock()

    def collect(item: ScoredRun) -> None:
        with lock:
            scored.append(item)

    export = otlp_endpoint_configured()
    installed = configure(
        export=export,
        set_global=False,
        expectations=[
            Expectation(name="weather", agent_name="weather_agent", expected_tool="get_weather"),
            Expectation(name="refund", agent_name="billing_agent", expected_tool_order=("auth", "refund")),
        ],
        on_scored=collect,
    )
    tracer = installed.tracer_provider.get_tracer("otel_toolscore.demo")
    for agent, query, tools, override in _SCRIPT:
        if override is None:
            run_scripted_agent(tracer, agent, query, tools, answer="(scripted answer)")
        else:
            with expect(**override):
                run_scripted_agent(tracer, agent, query, tools, answer="(scripted answer)")
    installed.shutdown()
    order = {query: i for i, (_, query, _, _) in enumerate(_SCRIPT)}
    scored.sort(key=lambda s: order.get(s.run.user_query or "", len(order)))
    if args.format == "json":
        import json

        print(json.dumps([_row(s) for s in scored], indent=2))
    else:
        _print_table([_row(s) for s in scored])
        where = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "the configured OTLP endpoints"
        print()
        if export:
            print(f"Spans (with toolscore.code.* on each run's root), evaluation events and metrics sent to {where}.")
        else:
            print("Set OTEL_EXPORTER_OTLP_ENDPOINT to send the spans, evaluation events and metrics over OTLP.")
    return 0


def _row(s: Any) -> dict[str, Any]:
    exp = s.expectation
    expected = None
    if exp is not None:
        expected = " -> ".join(exp.expected_tool_order) if exp.expected_tool_order else exp.expected_tool
        expected += " (strict)" if exp.strict_mode else ""
    return {
        "trace_id": format(s.ref.trace_id, "032x"),
        "agent": s.run.agent_name,
        "query": s.run.user_query,
        "expected": expected,
        "called": [c.name for c in s.run.tool_calls],
        "score": s.verdict.score if s.verdict is not None else None,
        "label": s.verdict.label if s.verdict is not None else None,
        "outcome": s.outcome,
    }


def _print_table(rows: list[dict[str, Any]]) -> None:
    headers = ("agent", "expected", "called", "score", "label", "outcome")
    cells = [
        [
            str(r["agent"] or "-"),
            str(r["expected"] or "-"),
            ", ".join(r["called"]) or "(none)",
            "-" if r["score"] is None else f"{r['score']:.2f}",
            r["label"] or "-",
            r["outcome"],
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths)))
