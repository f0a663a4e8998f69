"""The public line: what each face of the package exports, and where those names live.

A face is a module users import from (``otel_toolscore``, ``.scorers``, ``.sinks``, ``.extract``,
``.service``, ``.judge``, ``.testing``). Its ``__all__`` is pinned here, name by name: adding or
removing a public name is a decision, made in this file and in CHANGELOG.md. Every name resolves in
a fresh interpreter, and is defined either by a module private by path (a segment starting with
``_``) or by one of the few modules the documentation names as public (``DOCUMENTED``): everything
else in the package is an internal that may move.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FACES: dict[str, list[str]] = {
    "otel_toolscore": [
        "AgentRun", "CodeScoreResult", "Expectation", "ExtractOptions", "ExtractionReport", "Judge", "JudgeError",
        "JudgeSampler", "JudgeSettings", "JudgeStats", "LLMScoreResult", "Message", "ToolCall",
        "ToolCallAccuracyCodeScorer", "ToolCallAccuracyLLMScorer", "ToolDefinition", "ToolInvocation",
        "ToolScoreLogRecordProcessor", "ToolScoreSpanProcessor", "__version__", "configure",
        "create_tool_call_accuracy_scorer_code", "create_tool_call_accuracy_scorer_llm", "expect", "extract_runs",
        "extract_runs_with_report", "install", "iter_runs", "judge_from_env",
    ],
    "otel_toolscore.scorers": [
        "CallMatch", "CodePreprocessResult", "CodeScoreResult", "JudgeError", "LLMAnalyzeResult", "LLMScoreResult",
        "ToolCallAccuracyCodeScorer", "ToolCallAccuracyLLMScorer", "ToolCallInfo", "ToolEvaluation",
        "create_tool_call_accuracy_scorer_code", "create_tool_call_accuracy_scorer_llm",
    ],
    "otel_toolscore.sinks": [
        "AnnotatorKind", "LangfuseSink", "PhoenixSink", "ScoreRecord", "ScoreSink", "SinkDispatcher", "SinkError",
        "SinkStats", "resolve_sinks", "sink_from_name",
    ],
    "otel_toolscore.extract": [
        "DEFAULT_OPTIONS", "ExtractOptions", "ExtractionReport", "LogRecordView", "SourceReport", "SpanFacts",
        "SpanRecord", "assemble_runs", "classify_start", "extract_runs", "extract_runs_with_report", "iter_runs",
        "log_view_from_sdk", "log_views_from_proto", "read_log", "read_span", "record_from_readable",
        "span_records_from_proto",
    ],
    "otel_toolscore.service": ["IntakeResult", "ScoringService", "ServiceConfig", "ServiceSettings", "load_config"],
    "otel_toolscore.judge": [
        "JUDGE_ENV_PREFIX", "Judge", "JudgeAttempt", "JudgeSampler", "JudgeSettings", "JudgeStats", "Reservation",
        "RollingLimit", "SequenceMemory", "TokenBudget", "judge_from_env", "load_tools_file", "ratio_threshold",
        "trace_id_in_ratio",
    ],
    "otel_toolscore.testing": ["create_agent_test_run", "create_test_message", "create_tool_invocation", "create_ui_message"],
}

#: Modules the documentation (README, docs/) names as public, besides the faces themselves.
DOCUMENTED = {
    "otel_toolscore.model",  # the run model users build and read
    "otel_toolscore.expectations",  # Expectation, expect()
    "otel_toolscore.scorers.code",  # Mastra's code scorer, by its module
    "otel_toolscore.scorers.llm.scorer",  # Mastra's LLM scorer (the scorers.llm package re-exports it)
    "otel_toolscore.online.processor",  # the span processor
    "otel_toolscore.service.settings",  # the service's settings and config file
}

_WHERE = """
import importlib, json, sys
face = importlib.import_module(sys.argv[1])
out = {}
for name in face.__all__:
    value = getattr(face, name)
    out[name] = getattr(value, "__module__", None) if callable(value) else None
print(json.dumps({"all": list(face.__all__), "where": out}))
"""


def _private_by_path(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])


@pytest.mark.parametrize("face", sorted(FACES))
def test_each_face_exports_exactly_its_pinned_names_and_each_lives_behind_the_line(face: str) -> None:
    out = subprocess.run([sys.executable, "-c", _WHERE, face], capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(out.stdout)
    assert sorted(seen["all"]) == sorted(FACES[face])
    assert len(seen["all"]) == len(set(seen["all"])), "a name listed twice"
    outside = {
        name: module
        for name, module in seen["where"].items()
        if module is not None
        and module.startswith("otel_toolscore")
        and module not in FACES
        and module not in DOCUMENTED
        and not _private_by_path(module)
    }
    assert outside == {}, "public names defined in modules that are public by path but not documented"
