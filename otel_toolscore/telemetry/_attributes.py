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
    if max_name_chars is not None and tools and max(map(len, tools)) > max_name_chars:
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
    keys = _annotation_keys(0)
    while keys[0] in existing:
        index += 1
        keys = _annotation_keys(index)
    k_name, k_kind, k_score, k_label, k_explanation, k_identifier, k_metadata = keys
    attrs: dict[str, Any] = {k_name: name, k_kind: annotator_kind}
    if score is not None:
        attrs[k_score] = float(score)
    if label is not None:
        attrs[k_label] = label
    if explanation:
        attrs[k_explanation] = explanation
    if identifier:
        attrs[k_identifier] = identifier
    if metadata:
        attrs[k_metadata] = json.dumps(dict(metadata), sort_keys=True, default=str)
    return attrs


_ANNOTATION_FIELDS = ("name", "annotator_kind", "score", "label", "explanation", "identifier", "metadata")


def _keys_at(index: int) -> tuple[str, ...]:
    prefix = f"{n.OI_ANNOTATION_PREFIX}.{index}.annotation."
    return tuple(prefix + field for field in _ANNOTATION_FIELDS)


#: the keys of the first annotations, built once (every scored root gets one; read-only, so any thread)
_ANNOTATION_KEYS = tuple(_keys_at(i) for i in range(8))


def _annotation_keys(index: int) -> tuple[str, ...]:
    """The attribute keys of the annotation at ``index``, in :data:`_ANNOTATION_FIELDS` order."""
    return _ANNOTATION_KEYS[index] if index < len(_ANNOTATION_KEYS) else _keys_at(index)
