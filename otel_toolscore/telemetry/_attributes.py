"""Span attributes that carry a score: our ``toolscore.*`` namespace and OpenInference annotations."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..scorers.code import CodeVerdict
from . import names as n

__all__ = ["MAX_EXPLANATION_CHARS", "code_score_attributes", "cut_text", "openinference_annotation"]


#: Longest explanation written (an event's ``gen_ai.evaluation.explanation``, an annotation, a sink's
#: record): a judge's reason can be megabytes.
MAX_EXPLANATION_CHARS = 4096


def cut_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis, when it is longer."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "\u2026"


def code_score_attributes(
    result: CodeVerdict, *, max_tools: int, call_count: int, max_name_chars: int | None = None
) -> dict[str, Any]:
    """The ``toolscore.code.*`` attributes for a scored run (absent keys mean "not applicable").
    Tool names longer than ``max_name_chars`` are cut (they come from data)."""
    p = result
    tools = p.actual_tools[:max_tools]
    if max_name_chars is not None and any(len(t) > max_name_chars for t in tools):
        tools = [cut_text(t, max_name_chars) for t in tools]
    attrs: dict[str, Any] = {
        n.CODE_SCORE: float(result.score),
        n.CODE_LABEL: result.label,
        n.CODE_STRICT_MODE: p.strict_mode,
        n.CODE_ACTUAL_TOOLS: tools,
        n.CODE_CORRECT_TOOL_CALLED: p.correct_tool_called,
        n.TOOL_CALL_COUNT: call_count,
    }
    if p.expected_tool is not None:
        attrs[n.CODE_EXPECTED_TOOL] = p.expected_tool
    if p.expected_tool_order is not None:
        attrs[n.CODE_EXPECTED_TOOL_ORDER] = list(p.expected_tool_order)
        attrs[n.CODE_CORRECT_ORDER_CALLED] = bool(p.correct_order_called)
    if result.match != "ordered":
        attrs[n.CODE_MATCH] = result.match
    return attrs


def openinference_annotation(
    existing: Mapping[str, Any],
    *,
    name: str,
    score: float | None,
    label: str | None,
    explanation: str | None,
    annotator_kind: str,
    identifier: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``annotations.<i>.annotation.*`` at the first index the span does not use yet
    (OpenInference's post-hoc feedback form, ``docs/judging.md``; ``metadata`` is written as a JSON object string)."""
    index = 0
    while f"{n.OI_ANNOTATION_PREFIX}.{index}.annotation.name" in existing:
        index += 1
    prefix = f"{n.OI_ANNOTATION_PREFIX}.{index}.annotation."
    attrs: dict[str, Any] = {prefix + "name": name, prefix + "annotator_kind": annotator_kind}
    if score is not None:
        attrs[prefix + "score"] = float(score)
    if label is not None:
        attrs[prefix + "label"] = label
    if explanation:
        attrs[prefix + "explanation"] = explanation
    if identifier:
        attrs[prefix + "identifier"] = identifier
    if metadata:
        attrs[prefix + "metadata"] = json.dumps(dict(metadata), sort_keys=True, default=str)
    return attrs
