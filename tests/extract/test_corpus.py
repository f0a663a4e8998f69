"""Every recorded corpus file extracts to its ground truth (one test per ``*.truth.json``).

A truth file lists the runs of its scenario in start order: ``agent_name``, ``parent_agent`` (name of
the enclosing agent or null), ``user_query``, ``final_output``, ``available_tools`` (names) and
``tool_calls`` (``name``, ``status``, ``kind``, and ``arguments`` / ``call_id`` where known).
Compared as follows:

* always: the number of runs, agent names, nesting (``parent_agent``), and per run the calls' names
  in order with their status and kind;
* content fields (query, answer, arguments, available tools) only where the truth states them and
  the recording captured content (``content_capture`` is not false): with capture off the truth
  describes what the agent did, not what the trace carries, and extraction never invents content;
* ``call_id`` where the truth states one;
* an argument value the instrumentation redacted (Mastra's ``"[REDACTED]"``) matches any expected
  value: the trace no longer holds the real one.

``TRUTH_NOT_IN_TRACE`` lists truth values the recording's own README says appear nowhere in the trace
(or that the trace cannot tell apart from others); for those the test asserts what the trace does
carry (nothing invented) and the discrepancy is reported to the corpus author, not hidden.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import pytest

from otel_toolscore.extract import extract_runs_with_report
from otel_toolscore.model import AgentRun

CORPUS = Path(__file__).parents[1] / "corpus"
TRUTHS = sorted(CORPUS.glob("**/*.truth.json"))
TRUTHS = [p for p in TRUTHS if "node_modules" not in p.parts]


REDACTED = "[REDACTED]"

#: Truth values that the recording's own README says the trace does not carry (or cannot tell apart):
#: (file pattern, run index or None for all runs, field, value the trace supports, why).
TRUTH_NOT_IN_TRACE: list[tuple[str, int | None, str, Any, str]] = [
    ("vercel_ai/*_agent_multi_step.truth.json", 0, "agent_name", None,
     "ToolLoopAgent id 'weather-agent' appears nowhere in the trace (vercel_ai/README.md)"),
    ("openai_agents/openinference/*", None, "available_tools", [],
     "OpenInference's openai-agents processor records no tool list with the Chat Completions model"),
    ("openai_agents/otel_v2*/*", None, "available_tools", [],
     "the OTel contrib openai-agents instrumentation records no tool definitions (grep finds none)"),
    ("openai_agents/openllmetry/*", None, "available_tools", [],
     "OpenLLMetry's openai-agents instrumentation records no tool definitions with Chat Completions"),
    ("openllmetry_openai/events_streaming_*", 0, "final_output", None,
     "the streamed final gen_ai.choice record is emitted outside the span (no trace/span id)"),
    ("openai_agents/openllmetry/*", None, "final_output", None,
     "OpenLLMetry records no output messages with Chat Completions: 'the final answer of a run appears "
     "nowhere' (openai_agents/README.md)"),
    ("openai_agents/openllmetry/handoff.truth.json", 0, "tool_calls", [],
     "triage's only model call has no output messages; transfer_to_weather_agent shows up only as "
     "history in weather_agent's input, i.e. in another run"),
    ("openai_agents/openllmetry/unknown_tool_fatal.truth.json", 0, "tool_calls", [],
     "get_forecast appears nowhere in the trace (grep): the model output is not recorded and the run "
     "ends before another model call could replay it"),
    ("openai_agents/*_nocontent/handoff.truth.json", 0, "tool_calls", [],
     "with content off the handoff is only a handoff span; the name transfer_to_weather_agent appears "
     "nowhere (openai_agents/README.md, 'With content off')"),
    ("crewai/openinference_delegation.truth.json", 1, "tool_calls",
     [{"name": "get_weather", "arguments": {"city": "Paris"}, "status": "ok", "kind": "tool"}],
     "without LLM spans the coworker's call id call_d2 appears nowhere: its work has no AGENT span whose "
     "output.value would carry its messages (crewai/README.md)"),
    ("langgraph/*_nocontent/parallel_request_order*.truth.json", 0, "tool_calls",
     [{"name": "get_weather", "status": "ok", "kind": "tool"}, {"name": "get_calendar", "status": "ok", "kind": "tool"},
      {"name": "get_weather", "status": "ok", "kind": "tool"}],
     "with content off neither the model's output nor any tool-call id is recorded, so the request order is "
     "nowhere in the trace: the calls are in the tool spans' start order (langgraph/README.md)"),
    ("mastra/workflow_tool.truth.json", 0, "tool_calls",
     [{"name": "workflow-forecastWorkflow", "call_id": "call_1", "status": "ok", "kind": "framework"},
      {"name": "getWeather", "arguments": {"city": "Paris"}, "status": "ok", "kind": "tool"},
      {"name": "formatForecast", "arguments": {"city": "Paris", "tempC": 18, "sky": "clear"}, "status": "ok",
       "kind": "tool"}],
     "a workflow_step span does not say whether the step wraps a tool (createStep(tool)) or a function, so "
     "the plain step formatForecast reads as a call too (mastra/README.md)"),
]


#: Recordings whose one run is split over one trace per model call with nothing left to link them
#: (no enclosing span, content off: no call ids or request text). Each model call then reads as a
#: run of its own; the test checks those runs claim no calls and that the truth has no other facts
#: the trace could have carried. (pattern, why)
SPLIT_ACROSS_TRACES: list[tuple[str, str]] = [
    ("openai_v2/latest_nocontent_*", "no enclosing span and no content: nothing links the model calls"),
    ("openinference_openai/nocontent_*", "no enclosing span; input/output redacted: nothing links the calls"),
    ("openllmetry_openai/attrs_nocontent_*", "no enclosing span and no content: nothing links the calls"),
    ("openllmetry_openai/legacy_attrs_nocontent_*", "no enclosing span and no content: nothing links the calls"),
    ("openllmetry_openai/events_nocontent_streaming_*",
     "streamed gen_ai.choice records carry no span id and content is off: the call ids only appear as "
     "history in the next call's input, with no request text to link the two traces"),
]


def _supported(rel: str, n: int, want: dict[str, Any]) -> dict[str, Any]:
    want = dict(want)
    for pattern, index, field, value, _why in TRUTH_NOT_IN_TRACE:
        if fnmatch.fnmatch(rel, pattern) and index in (None, n):
            want[field] = value
    return want


def _inputs(truth: Path) -> list[Path]:
    stem = truth.name[: -len(".truth.json")]
    return sorted(p for p in truth.parent.glob(stem + ".*") if p.name != truth.name and not p.name.endswith(".md"))


def _args_equal(expected: Any, actual: Any) -> bool:
    if actual == REDACTED:
        return True
    if isinstance(actual, str) and not isinstance(expected, str):
        try:
            actual = json.loads(actual)
        except ValueError:
            return False
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(_args_equal(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(_args_equal(e, a) for e, a in zip(expected, actual, strict=True))
    return bool(expected == actual)


def _describe(run: AgentRun) -> str:
    calls = ", ".join(f"{c.name}[{c.status},{c.kind}]" for c in run.tool_calls)
    return f"{run.agent_name!r} parent={run.parent_run_id} calls=({calls})"


Mismatch = tuple[int | None, str, str]  # (run index or None for the file, field, what differs)


def _run_mismatches(n: int, want: dict[str, Any], got: AgentRun, names_by_id: dict[str, str | None],
                    content: bool) -> list[Mismatch]:
    """What differs between one expected and one extracted run."""
    out: list[Mismatch] = []

    def check(field: str, ok: bool, detail: str) -> None:
        if not ok:
            out.append((n, field, detail))

    if "agent_name" in want:
        check("agent_name", got.agent_name == want["agent_name"], f"{got.agent_name!r} != {want['agent_name']!r}")
    if "parent_agent" in want:
        parent = names_by_id.get(got.parent_run_id) if got.parent_run_id else None
        check("parent_agent", parent == want["parent_agent"], f"{parent!r} != {want['parent_agent']!r}")
    calls = got.tool_calls
    want_calls = want.get("tool_calls", [])
    same_names = [c.name for c in calls] == [c["name"] for c in want_calls]
    check("tool_calls", same_names, _describe(got) + f" != {[c['name'] for c in want_calls]}")
    if same_names:
        for i, (wc, gc) in enumerate(zip(want_calls, calls, strict=True)):
            at = f"call {i} {wc['name']}"
            if "status" in wc:
                check("tool_calls.status", gc.status == wc["status"], f"{at}: {gc.status!r} != {wc['status']!r}")
            if "kind" in wc:
                check("tool_calls.kind", gc.kind == wc["kind"], f"{at}: {gc.kind!r} != {wc['kind']!r}")
            if wc.get("call_id") is not None:
                check("tool_calls.call_id", gc.call_id == wc["call_id"], f"{at}: {gc.call_id!r} != {wc['call_id']!r}")
            if content and "arguments" in wc:
                check("tool_calls.arguments", _args_equal(wc["arguments"], gc.arguments),
                      f"{at}: {gc.arguments!r} != {wc['arguments']!r}")
    if content:
        for field in ("user_query", "final_output"):
            if want.get(field) is not None:
                check(field, getattr(got, field) == want[field], f"{getattr(got, field)!r:.200} != {want[field]!r:.200}")
        if "available_tools" in want:
            have = sorted(t.name for t in got.available_tools)
            check("available_tools", have == sorted(want["available_tools"]), f"{have} != {sorted(want['available_tools'])}")
    return out


@pytest.mark.parametrize("truth_path", TRUTHS, ids=[str(p.relative_to(CORPUS)) for p in TRUTHS])
def test_corpus_file_extracts_to_truth(truth_path: Path) -> None:
    truth = json.loads(truth_path.read_text())
    inputs = _inputs(truth_path)
    assert inputs, f"no trace/log files beside {truth_path.name}"
    runs, report = extract_runs_with_report(inputs)
    assert report.ok, report.problems()
    expected_runs = truth["runs"]
    rel = str(truth_path.relative_to(CORPUS))
    split = next((why for pattern, why in SPLIT_ACROSS_TRACES if fnmatch.fnmatch(rel, pattern)), None)
    if split is not None and len(runs) > len(expected_runs) == 1:
        assert report.traces == len(runs), split  # one run per model-call trace, nothing merged by guess
        assert all(not r.tool_calls for r in runs), "calls were claimed without anything linking them"
        return
    mismatches: list[Mismatch] = []
    if len(runs) != len(expected_runs):
        mismatches.append((None, "runs", "; ".join(_describe(r) for r in runs)))
    else:
        content = truth.get("content_capture", True) is not False
        names_by_id = {r.run_id: r.agent_name for r in runs}
        for n, (want, got) in enumerate(zip(expected_runs, runs, strict=True)):
            mismatches += _run_mismatches(n, _supported(rel, n, want), got, names_by_id, content)
    assert not mismatches, "\n".join(f"run {n} {field}: {detail}" for n, field, detail in mismatches)
