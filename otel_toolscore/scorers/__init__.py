"""Scorers: pure functions of an :class:`~otel_toolscore.model.AgentRun`.

Importing this package loads nothing: each name loads its module on first use. The code scorer
loads no pydantic until a Mastra-shaped result is asked for; the LLM scorer's module imports
``openai`` only when a scorer is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from ._code_result import CallMatch, CodePreprocessResult, CodeScoreResult, ToolCallInfo
    from .code import ToolCallAccuracyCodeScorer, create_tool_call_accuracy_scorer_code
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

# name -> module that defines it; loaded on first attribute access.
_LAZY: dict[str, str] = {
    "ToolCallAccuracyCodeScorer": ".code",
    "create_tool_call_accuracy_scorer_code": ".code",
    "CallMatch": "._code_result",
    "CodePreprocessResult": "._code_result",
    "CodeScoreResult": "._code_result",
    "ToolCallInfo": "._code_result",
    "JudgeError": ".llm",
    "LLMAnalyzeResult": ".llm",
    "LLMScoreResult": ".llm",
    "ToolCallAccuracyLLMScorer": ".llm",
    "ToolEvaluation": ".llm",
    "create_tool_call_accuracy_scorer_llm": ".llm",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
