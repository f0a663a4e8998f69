"""The LLM-judged tool-call-accuracy scorer (Mastra's ``createToolCallAccuracyScorerLLM``).

Rules: ``docs/llm-scorer.md``. One chat completion per run by default, asking for a JSON answer that
validates against a strict schema derived from :class:`JudgeAnswer`. Talks to any OpenAI-compatible
Chat Completions endpoint through the ``openai`` package, which is imported only when a client is
built so that ``import otel_toolscore`` stays light. ``run`` performs the judgment with an async
client on the scorer's own event-loop thread, so that its deadline can cancel it mid-read.

How the judge's answer is used (deterministic, never a made-up verdict):

* evaluations are paired with the run's counted calls by position. When the names differ only in
  order (same multiset), each call takes the first unused evaluation carrying its name; any other
  mismatch (wrong count, unknown name) is an invalid answer;
* an invalid answer (not JSON, wrong shape, mismatched evaluations) gets one corrective retry that
  shows the judge its reply and the problem; a second invalid answer raises
  ``JudgeError(kind="invalid_answer")``;
* missing tools are trimmed, empties dropped and duplicates removed (first occurrence kept); a
  tool the run called is dropped (it cannot be missing); when the available tools are known, a name
  not among them makes the answer invalid (and gets the corrective retry);
* the whole judgment has a deadline (``deadline_s``: connect, send, every answer, retries); every
  failure is a :class:`JudgeError` whose ``kind`` says why;
* reported token usage that is negative, not an integer or absurd is replaced by an estimate.

Score = appropriate ÷ (evaluations + missing tools), rounded half-up to two decimals; no calls and
nothing missing → 1.0. For a run that called no tool, an answer holding a single evaluation of a
pseudo tool (``"None"``, ``"no tool"`` …: what Mastra's prompt makes real judges write) is the
judge's verdict on calling no tool: appropriate → 1.0, inappropriate → 0.0.

The package's modules, one job each: ``_answers`` (answer and result models, reading a reply),
``_scoring`` (the score of an answer), ``_schema`` (the JSON-schema ladder), ``_prompt`` (prompt
text and the run-data block), ``_messages`` (the requests' chat messages), ``_protocol`` (the
exchange with the endpoint: retries, deadlines, errors), ``_io_loop`` (the scorer's event loop) and
``scorer`` (the class and its factory).
"""

from __future__ import annotations

from ._answers import (
    AnswerMismatchError,
    JudgeAnalysis,
    JudgeAnswer,
    JudgeError,
    JudgeErrorKind,
    JudgeReason,
    JudgeToolEvaluation,
    JudgeUsage,
    LLMAnalyzeResult,
    LLMScoreResult,
    ToolEvaluation,
)
from ._messages import DEFAULT_MAX_ARGUMENT_CHARS as DEFAULT_MAX_ARGUMENT_CHARS
from ._messages import DEFAULT_MAX_TEXT_CHARS as DEFAULT_MAX_TEXT_CHARS
from ._messages import ToolSpec as ToolSpec
from ._messages import build_judge_messages, estimate_tokens, normalise_tools
from ._protocol import MAX_REPORTED_TOKENS as MAX_REPORTED_TOKENS
from ._protocol import check_base_url
from ._schema import (
    OUTPUT_MODES,
    OutputMode,
    answer_schema_for,
    endpoint_output_mode,
    forget_endpoint_capabilities,
    response_format_for,
)
from ._scoring import align_evaluations, check_missing_tools, compute_score, score_answer
from .scorer import DEADLINE_TIMEOUTS as DEADLINE_TIMEOUTS
from .scorer import ToolCallAccuracyLLMScorer, create_tool_call_accuracy_scorer_llm

# The defaults and limits imported "as" themselves stay importable from here without joining __all__.

__all__ = [
    "OUTPUT_MODES",
    "AnswerMismatchError",
    "JudgeAnalysis",
    "JudgeAnswer",
    "JudgeError",
    "JudgeErrorKind",
    "JudgeReason",
    "JudgeToolEvaluation",
    "JudgeUsage",
    "LLMAnalyzeResult",
    "LLMScoreResult",
    "OutputMode",
    "ToolCallAccuracyLLMScorer",
    "ToolEvaluation",
    "align_evaluations",
    "answer_schema_for",
    "build_judge_messages",
    "check_base_url",
    "check_missing_tools",
    "compute_score",
    "create_tool_call_accuracy_scorer_llm",
    "endpoint_output_mode",
    "estimate_tokens",
    "forget_endpoint_capabilities",
    "normalise_tools",
    "response_format_for",
    "score_answer",
]
