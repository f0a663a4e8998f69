"""The JSON-schema ladder: the answer schema sent to the judge, and how each endpoint takes it.

Three rungs, best first (:data:`OUTPUT_MODES`): OpenAI's strict ``json_schema`` response format;
llama.cpp's ``json_object`` carrying a ``schema`` (grammar-constrained there, with lengths bounded);
the schema written into the prompt. The schema is derived from the answer model, made strict
(refs inlined, every property required, nothing extra) and narrowed to one run (one evaluation per
counted call, names drawn from the run). An endpoint that rejects a rung is remembered (per base
URL, for the process) and asked on the next rung from then on.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from ...model import ToolCall, ToolDefinition
from ._answers import MAX_NAME_CHARS, JudgeAnswer
from ._prompt import shown_name

OutputMode = Literal["json_schema", "json_object", "prompt"]
# The structured-output ladder, best first: OpenAI's strict ``json_schema``; llama.cpp's
# ``json_object`` carrying a ``schema`` (grammar-constrained there); the schema in the prompt.
OUTPUT_MODES: tuple[OutputMode, ...] = ("json_schema", "json_object", "prompt")
# Free-text fields are bounded in llama.cpp's form only: a grammar-constrained small model otherwise
# rambles until max_tokens and the JSON is cut off. (OpenAI's strict mode does not take maxLength.)
_MAX_REASONING_CHARS = 300


def _inline_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema made strict-mode friendly: refs inlined, every property required,
    no additional properties, no titles (some OpenAI-compatible servers reject ``$ref``)."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
            out = {k: walk(v) for k, v in node.items() if k not in ("$defs", "title", "default", "description", "properties")}
            if isinstance(node.get("properties"), dict):  # property names are data, not keywords to drop
                out["properties"] = {name: walk(sub) for name, sub in node["properties"].items()}
            if out.get("type") == "object" and "properties" in out:
                out["required"] = list(out["properties"])
                out["additionalProperties"] = False
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    result: dict[str, Any] = walk(schema)
    return result


_SCHEMAS: dict[type[BaseModel], dict[str, Any]] = {}


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The strict JSON schema of an answer model (built once per model)."""
    if model not in _SCHEMAS:
        _SCHEMAS[model] = _inline_strict(model.model_json_schema())
    return _SCHEMAS[model]


def answer_schema_for(
    calls: Sequence[ToolCall],
    tools: Sequence[ToolDefinition] = (),
    model: type[BaseModel] = JudgeAnswer,
) -> dict[str, Any]:
    """The answer schema narrowed to one run, so that a grammar-constrained server can only produce
    an answer that pairs with the run: exactly one evaluation per counted call, ``tool_called`` one
    of the called names, ``missing_tools`` drawn from the available tools that were not called
    (when the available tools are known). Python validates every answer all the same: a server may
    ignore the schema."""
    schema = copy.deepcopy(strict_schema(model))
    props = schema.get("properties", {})
    if "evaluations" in props:
        evaluations = props["evaluations"]
        evaluations["minItems"] = evaluations["maxItems"] = len(calls)
        called = list(dict.fromkeys(shown_name(c.name) for c in calls))
        if called:
            evaluations["items"]["properties"]["tool_called"] = {"type": "string", "enum": called}
    if "missing_tools" in props and tools:
        called_raw = {c.name.strip() for c in calls} | {shown_name(c.name) for c in calls}
        candidates = [n for n in dict.fromkeys(shown_name(t.name) for t in tools) if n not in called_raw]
        missing = props["missing_tools"]
        missing["maxItems"] = len(candidates)
        if candidates:
            missing["items"] = {"type": "string", "enum": candidates}
    return schema


def _with_max_lengths(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with maxLength on its free strings (for llama.cpp's grammar)."""

    def walk(node: Any, key: str | None) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v, k) for k, v in node.items()}
            if out.get("type") == "string" and "enum" not in out:
                out["maxLength"] = MAX_NAME_CHARS if key == "items" else _MAX_REASONING_CHARS
            return out
        if isinstance(node, list):
            return [walk(v, key) for v in node]
        return node

    result: dict[str, Any] = walk(schema, None)
    return result


def response_format_for(
    model: type[BaseModel] = JudgeAnswer,
    *,
    schema: dict[str, Any] | None = None,
    mode: OutputMode = "json_schema",
) -> dict[str, Any] | None:
    """The ``response_format`` request parameter for an answer model (or a given ``schema``) in one
    rung of the ladder: strict ``json_schema``, llama.cpp's ``json_object`` with a ``schema``, or
    ``None`` (the schema goes into the prompt instead)."""
    body = schema if schema is not None else strict_schema(model)
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": f"tool_call_accuracy_{model.__name__.lower()}", "strict": True, "schema": body},
        }
    if mode == "json_object":
        return {"type": "json_object", "schema": _with_max_lengths(body)}
    return None


# -- what each endpoint accepts --------------------------------------------------------------------
# base_url -> index in OUTPUT_MODES of the best mode it has not rejected (absent: the best).
_ENDPOINT_MODE: dict[str, int] = {}
_ENDPOINTS_LOCK = threading.Lock()


def forget_endpoint_capabilities() -> None:
    """Forget which structured-output modes endpoints were found to reject (they are re-probed)."""
    with _ENDPOINTS_LOCK:
        _ENDPOINT_MODE.clear()


def endpoint_output_mode(endpoint: str) -> OutputMode:
    """The structured-output mode the scorer currently uses for ``endpoint`` (a base URL)."""
    with _ENDPOINTS_LOCK:
        return OUTPUT_MODES[_ENDPOINT_MODE.get(endpoint.rstrip("/"), 0)]


def step_down(endpoint: str, rejected: OutputMode) -> OutputMode:
    """Record that ``endpoint`` rejected ``rejected``; the mode to use from now on."""
    with _ENDPOINTS_LOCK:
        key = endpoint.rstrip("/")  # the openai client adds a trailing slash to base_url
        index = max(_ENDPOINT_MODE.get(key, 0), OUTPUT_MODES.index(rejected) + 1)
        index = min(index, len(OUTPUT_MODES) - 1)
        _ENDPOINT_MODE[key] = index
        return OUTPUT_MODES[index]
