"""Scorers: pure functions of an :class:`~otel_toolscore.model.AgentRun`.

The LLM scorer's module imports ``openai`` only when a scorer is built, so importing this package
stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .code import (
    CallMatch,
    CodePreprocessResult,
    CodeScoreResult,
    ToolCallAccuracyCodeScorer,
    ToolCallInfo,
    create_tool_call_accuracy_scorer_code,
)

if TYPE_CHECKING:
    from .llm import (
        JudgeError,
        LLMAnalyzeResult,
        LLMScoreResult,
        ToolCallAccuracyLLMScorer,
        ToolEvaluation,
        create_tool_call_accuracy_scorer_llm,
    )

__all__ = [
    "CallMatch",
    "CodePreprocessResult",
    "CodeScoreResult",
    "JudgeError",
    "LLMAnalyzeResult",
    "LLMScoreResult",
    "ToolCallAccuracyCodeScorer",
    "ToolCallAccuracyLLMScorer",
    "ToolCallInfo",
    "ToolEvaluation",
    "create_tool_call_accuracy_scorer_code",
    "create_tool_call_accuracy_scorer_llm",
]

_LLM_NAMES = {
    "JudgeError",
    "LLMAnalyzeResult",
    "LLMScoreResult",
    "ToolCallAccuracyLLMScorer",
    "ToolEvaluation",
    "create_tool_call_accuracy_scorer_llm",
}


def __getattr__(name: str) -> Any:
    if name in _LLM_NAMES:
        from . import llm

        return getattr(llm, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
