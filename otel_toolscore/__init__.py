"""otel-toolscore: score agent tool-call accuracy on live OpenTelemetry traces.

Importing the package is light: the data model and the code scorer load eagerly; the span processor,
extraction, judge and service load on first use, and ``openai`` only when an LLM scorer is built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .model import AgentRun, Message, ToolCall, ToolDefinition, ToolInvocation
from .scorers.code import (
    CodeScoreResult,
    ToolCallAccuracyCodeScorer,
    create_tool_call_accuracy_scorer_code,
)

# name -> module that defines it; loaded on first attribute access.
_LAZY: dict[str, str] = {
    "JudgeError": ".scorers.llm",
    "LLMScoreResult": ".scorers.llm",
    "ToolCallAccuracyLLMScorer": ".scorers.llm",
    "create_tool_call_accuracy_scorer_llm": ".scorers.llm",
    "extract_runs": ".extract",
    "extract_runs_with_report": ".extract",
    "iter_runs": ".extract",
    "ExtractOptions": ".extract",
    "ExtractionReport": ".extract",
    "ToolScoreSpanProcessor": ".online.processor",
    "ToolScoreLogRecordProcessor": ".online.log_processor",
    "Expectation": ".online.expectations",
    "expect": ".online.expectations",
    "Judge": ".online.judge",
    "JudgeStats": ".online.judge",
    "judge_from_env": ".online.judge",
    "JudgeSettings": ".online.judge_settings",
    "JudgeSampler": ".online.sampler",
    "configure": ".online.setup",
    "install": ".online.setup",
}

if TYPE_CHECKING:
    from .extract import ExtractionReport, ExtractOptions, extract_runs, extract_runs_with_report, iter_runs
    from .online.expectations import Expectation, expect
    from .online.judge import Judge, JudgeStats, judge_from_env
    from .online.judge_settings import JudgeSettings
    from .online.log_processor import ToolScoreLogRecordProcessor
    from .online.processor import ToolScoreSpanProcessor
    from .online.sampler import JudgeSampler
    from .online.setup import configure, install
    from .scorers.llm import (
        JudgeError,
        LLMScoreResult,
        ToolCallAccuracyLLMScorer,
        create_tool_call_accuracy_scorer_llm,
    )

__all__ = [
    "AgentRun",
    "CodeScoreResult",
    "Expectation",
    "ExtractOptions",
    "ExtractionReport",
    "Judge",
    "JudgeError",
    "JudgeSampler",
    "JudgeSettings",
    "JudgeStats",
    "LLMScoreResult",
    "Message",
    "ToolCall",
    "ToolCallAccuracyCodeScorer",
    "ToolCallAccuracyLLMScorer",
    "ToolDefinition",
    "ToolInvocation",
    "ToolScoreLogRecordProcessor",
    "ToolScoreSpanProcessor",
    "__version__",
    "configure",
    "create_tool_call_accuracy_scorer_code",
    "create_tool_call_accuracy_scorer_llm",
    "expect",
    "extract_runs",
    "extract_runs_with_report",
    "install",
    "iter_runs",
    "judge_from_env",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
