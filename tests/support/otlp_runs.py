"""OTLP/JSON export requests of agent runs (OTel GenAI conventions) with any text in them, for tests
that feed hostile names, requests and arguments to the offline commands.

Written with ``json.dumps`` (``ensure_ascii``): a lone surrogate becomes its ``\\udXXX`` escape in the
file, which JSON decoders read back as the lone surrogate — what a real OTLP/JSON file can hold.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Run:
    agent: str = "weather_agent"
    tools: Sequence[str] = ("get_weather",)
    query: str = "What is the weather in Paris?"
    answer: str = "Sunny."
    arguments: str = "{}"
    attributes: dict[str, str] = field(default_factory=dict)


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _span(trace_id: str, span_id: str, parent: str | None, times: tuple[int, int], attrs: list[dict[str, Any]]) -> dict[str, Any]:
    span = {"traceId": trace_id, "spanId": span_id, "name": attrs[0]["value"]["stringValue"], "kind": 1,
            "startTimeUnixNano": str(times[0]), "endTimeUnixNano": str(times[1]), "attributes": attrs}
    if parent:
        span["parentSpanId"] = parent
    return span


def request(index: int, run: Run) -> dict[str, Any]:
    """One export request holding run number ``index`` (its trace id is ``index`` in hex)."""
    trace_id = f"{index:032x}"
    root = f"{index:012x}0000"
    spans = [_span(trace_id, root, None, (1000, 9000), [
        _attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", run.agent),
        _attr("gen_ai.input.messages", _messages("user", run.query)),
        _attr("gen_ai.output.messages", _messages("assistant", run.answer)),
        *(_attr(k, v) for k, v in run.attributes.items()),
    ])]
    spans += [
        _span(trace_id, f"{index:012x}{n + 1:04x}", root, (2000 + n, 2500 + n), [
            _attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", tool),
            _attr("gen_ai.tool.call.id", f"call_{n}"), _attr("gen_ai.tool.call.arguments", run.arguments),
        ])
        for n, tool in enumerate(run.tools)
    ]
    return {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "hostile")]},
                               "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}]}]}


def write_runs(path: Path, runs: Iterable[Run], *, first: int = 1) -> Path:
    """``runs`` as JSON Lines of export requests, one run per line, trace ids from ``first``."""
    with path.open("w", encoding="ascii") as out:
        for i, run in enumerate(runs, first):
            out.write(json.dumps(request(i, run)) + "\n")
    return path
