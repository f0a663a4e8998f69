"""otel-toolscore: score agent tool-call accuracy on live OpenTelemetry traces.

Importing the package loads nothing but its version: every public name is in one table below and
its module loads on first use. The span processor's import path loads the OpenTelemetry SDK and no
pydantic; the data model (pydantic) loads with the first model used, the judge, the rules files or
the command line; ``openai`` only when an LLM scorer is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_getattr
from ._version import __version__

# name -> module that defines it; loaded on first attribute access.
_LAZY: dict[str, str] = {
    "AgentRun": ".model",
    "Message": ".model",
    "ToolCall": ".model",
    "ToolDefinition": ".model",
    "ToolInvocation": ".model",
    "CodeScoreResult": ".scorers._code_result",
    "ToolCallAccuracyCodeScorer": ".scorers.code",
    "create_tool_call_accuracy_scorer_code": ".scorers.code",
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
    "ToolScoreLogRecordProcessor": ".online._log_processor",
    "Expectation": ".expectations",
    "expect": ".expectations",
    "Judge": ".judge",
    "JudgeStats": ".judge",
    "judge_from_env": ".judge",
    "JudgeSettings": ".judge",
    "JudgeSampler": ".judge",
    "configure": ".online._setup",
    "install": ".online._setup",
}

if TYPE_CHECKING:
    from .expectations import Expectation, expect
    from .extract import ExtractionReport, ExtractOptions, extract_runs, extract_runs_with_report, iter_runs
    from .judge import Judge, JudgeSampler, JudgeSettings, JudgeStats, judge_from_env
    from .model import AgentRun, Message, ToolCall, ToolDefinition, ToolInvocation
    from .online._log_processor import ToolScoreLogRecordProcessor
    from .online._setup import configure, install
    from .online.processor import ToolScoreSpanProcessor
    from .scorers._code_result import CodeScoreResult
    from .scorers.code import ToolCallAccuracyCodeScorer, create_tool_call_accuracy_scorer_code
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


__getattr__ = lazy_getattr(__name__, _LAZY)
