"""What the judge answers and what the scorer returns.

The answer models (:class:`JudgeAnswer` and its halves) validate the judge's JSON, tolerating extra
keys and both spellings of a key (``tool_called`` / ``toolCalled``); the result models
(:class:`LLMScoreResult` …) are Mastra-shaped (camelCase with ``by_alias=True``) and frozen.
:class:`JudgeError` is the one failure a judgment raises. The reply readers take the JSON object
out of a chat completion's text.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .._verdict import PassFail

JudgeErrorKind = Literal["timeout", "rate_limited", "error", "invalid_answer"]
# The longest name an answer carries: a tool name in the schema's grammar and in an error message,
# the model name an endpoint reports.
MAX_NAME_CHARS = 100


# -- what the judge answers -----------------------------------------------------------------------
class _Answer(BaseModel):
    # Extra keys are allowed in an answer and ignored; the schema sent to the judge forbids them.
    model_config = ConfigDict(extra="ignore")


class JudgeToolEvaluation(_Answer):
    tool_called: str = Field(validation_alias=AliasChoices("tool_called", "toolCalled"))
    was_appropriate: bool = Field(validation_alias=AliasChoices("was_appropriate", "wasAppropriate"))
    reasoning: str


class JudgeAnalysis(_Answer):
    """The analysis half of an answer (the first request in two-step mode)."""

    evaluations: list[JudgeToolEvaluation]
    missing_tools: list[str] = Field(validation_alias=AliasChoices("missing_tools", "missingTools"))


class JudgeAnswer(JudgeAnalysis):
    """The judge's whole answer in one-request mode."""

    reason: str


class JudgeReason(_Answer):
    """The second request's answer in two-step mode."""

    reason: str


# -- what the scorer returns ----------------------------------------------------------------------
class _Result(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class ToolEvaluation(_Result):
    tool_called: str
    was_appropriate: bool
    reasoning: str


class LLMAnalyzeResult(_Result):
    evaluations: list[ToolEvaluation]
    missing_tools: list[str]


class JudgeUsage(_Result):
    """Cost accounting for one scored run, summed over every request made for it."""

    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0
    latency_s: float = 0.0
    structured_output: bool = True  # False when the answer came from the JSON-in-prompt fallback
    output_mode: str = "json_schema"  # the lowest rung of OUTPUT_MODES used for this run


class LLMScoreResult(_Result, PassFail):
    """A judged run: its score and the judge's reason; ``passed`` / ``label`` as for the code scorer."""

    run_id: str
    score: float
    reason: str
    analyze_step_result: LLMAnalyzeResult
    usage: JudgeUsage


class JudgeError(Exception):
    """The judge could not produce a usable verdict; ``kind`` says why (for counting)."""

    def __init__(
        self,
        kind: JudgeErrorKind,
        message: str,
        *,
        status_code: int | None = None,
        usage: JudgeUsage | None = None,
    ) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind: JudgeErrorKind = kind
        self.message = message
        self.status_code = status_code
        self.usage = usage


class AnswerMismatchError(ValueError):
    """The judge's evaluations cannot be paired with the run's calls."""



# -- reading a reply ----------------------------------------------------------------------------------
def json_text(content: str) -> str:
    """The JSON object inside a reply, tolerating code fences and text around it."""
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the reply holds no JSON object")
    text = content[start : end + 1]
    # llama.cpp's grammars let raw control characters (a line break) into strings, which strict JSON
    # forbids; they are read leniently and re-encoded, so that pydantic always validates strict JSON.
    return json.dumps(json.loads(text, strict=False), ensure_ascii=False)


def reply_chars(response: Any) -> int:
    """The length of a chat completion's first answer text (0 when it has none)."""
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return 0
    return len(content) if isinstance(content, str) else 0


def reply_text(response: Any) -> str:
    """A chat completion's first answer text; ``ValueError`` when it is missing, empty or a refusal."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise ValueError("the response holds no choices")
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if not isinstance(content, str) or not content.strip():
        refusal = getattr(message, "refusal", None)
        raise ValueError(f"the judge refused: {refusal}" if refusal else "the reply is empty")
    return content
