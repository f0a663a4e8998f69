"""The chat messages of a judgment: the analysis request, the reason request, their size.

Pure and deterministic: the same run and options give the same messages. The system message holds
the rules and the answer format (and the answer schema when the endpoint takes JSON in the prompt);
the user message holds the run as one ``<run_data>`` block (:func:`._prompt.format_run_data`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ...model import AgentRun, ToolDefinition
from ...redact import Redactor, resolve_redactor
from . import _prompt as prompt
from ._answers import JudgeAnalysis, JudgeAnswer, JudgeReason, LLMAnalyzeResult
from ._schema import strict_schema

ToolSpec = ToolDefinition | Mapping[str, Any] | str

DEFAULT_MAX_TEXT_CHARS = 4000
DEFAULT_MAX_ARGUMENT_CHARS = 1000


def normalise_tools(tools: Sequence[ToolSpec] | None) -> list[ToolDefinition]:
    """Tool references in any accepted shape as :class:`ToolDefinition` s.

    Accepts ``ToolDefinition``, ``{name|id, description}``, OpenAI tool definitions
    (``{type: function, function: {name, description, parameters}}``), OTel
    ``gen_ai.tool.definitions`` entries and bare names (Mastra's exporter lists names only).
    """
    out: list[ToolDefinition] = []
    for tool in tools or ():
        if isinstance(tool, ToolDefinition):
            out.append(tool)
        elif isinstance(tool, str):
            out.append(ToolDefinition(name=tool))
        elif isinstance(tool, Mapping):
            inner = tool.get("function")
            data = inner if isinstance(inner, Mapping) else tool
            if not (data.get("name") or data.get("id")):
                raise ValueError(f"a tool definition needs a name (or id): {dict(tool)!r}")
            out.append(ToolDefinition.model_validate(data))
        else:
            raise TypeError(f"unsupported tool definition: {type(tool).__name__}")
    return out


def _user_request(run: AgentRun) -> str | None:
    if run.user_query:
        return run.user_query
    texts = [m.content for m in run.input_messages if m.role == "user" and m.content]
    return "\n\n".join(texts) or None


def _agent_response(run: AgentRun) -> str | None:
    if run.final_output:
        return run.final_output
    texts = [m.content for m in run.output_messages if m.role == "assistant" and m.content]
    return "\n\n".join(texts) or None


def build_judge_messages(
    run: AgentRun,
    available_tools: Sequence[ToolSpec] | None = None,
    *,
    include_arguments: bool = False,
    include_results: bool = False,
    redact: bool | Redactor | Sequence[Redactor] | None = None,
    json_in_prompt: bool = False,
    with_reason: bool = True,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
    max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS,
) -> list[dict[str, str]]:
    """The chat messages of the (analysis) request for one run. Pure: no I/O, deterministic.

    ``json_in_prompt`` adds the JSON schema to the system message (for endpoints without
    ``response_format``); ``with_reason=False`` asks for the analysis only (two-step mode).
    The run's own tool definitions, when it has any, replace ``available_tools``.
    """
    tools = run.available_tools or normalise_tools(available_tools)
    answer_model: type[BaseModel] = JudgeAnswer if with_reason else JudgeAnalysis
    system = prompt.SYSTEM_RULES + "\n" + (prompt.ANSWER_FORMAT if with_reason else prompt.ANSWER_FORMAT_NO_REASON)
    if json_in_prompt:
        system += prompt.SCHEMA_IN_PROMPT.format(schema=json.dumps(strict_schema(answer_model), separators=(",", ":")))
    data = prompt.format_run_data(
        user_request=_user_request(run),
        agent_response=_agent_response(run),
        calls=run.scored_calls(),
        tools=tools,
        include_arguments=include_arguments,
        include_results=include_results,
        redact=resolve_redactor(redact),
        max_text_chars=max_text_chars,
        max_argument_chars=max_argument_chars,
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": f"{data}\n\n{prompt.TASK}"}]


def reason_messages(
    analysis_messages: list[dict[str, str]], analysis: LLMAnalyzeResult, score: float, *, json_in_prompt: bool = False
) -> list[dict[str, str]]:
    """The second request of two-step mode: the run data of the first, its findings and score, asking
    for a one-sentence reason (the reason schema in the system message with ``json_in_prompt``)."""
    data = analysis_messages[-1]["content"].rsplit("\n\n", 1)[0]  # the <run_data> block, without the task line
    findings = json.dumps(analysis.model_dump(), ensure_ascii=False)
    request = prompt.REASON_REQUEST.format(analysis=prompt.neutralise(findings), score=score)
    system = prompt.REASON_SYSTEM
    if json_in_prompt:
        system += prompt.SCHEMA_IN_PROMPT.format(schema=json.dumps(strict_schema(JudgeReason), separators=(",", ":")))
    return [{"role": "system", "content": system}, {"role": "user", "content": f"{data}\n\n{request}"}]


def estimate_tokens(messages: Sequence[Mapping[str, Any]], *, response_format: Mapping[str, Any] | None = None) -> int:
    """A rough prompt size (≈ characters ÷ 4, plus a few tokens per message) for budgeting."""
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    if response_format is not None:
        chars += len(json.dumps(response_format, separators=(",", ":")))
    return chars // 4 + 4 * len(messages) + 1
