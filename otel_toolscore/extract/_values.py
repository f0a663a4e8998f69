"""Value helpers shared by the readers: JSON that may be a string, truncation, message shapes.

Message parsing accepts every shape real traffic mixes (agentevals' observation, conventions §2.2):
OTel parts-based messages (``{role, parts:[{type:"tool_call", id, name, arguments}]}``), OpenAI
content-based ones (``{role, content, tool_calls:[{id, function:{name, arguments}}]}``), choices
(``{index, finish_reason, message}``), Anthropic-style content blocks (``tool_use``), AI SDK parts
(``tool-call``) and Vercel's ``ai.response.toolCalls`` entries. Detection is per message.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "Bad",
    "ParsedMessages",
    "RawCall",
    "clean_id",
    "error_type_of_text",
    "load_json",
    "parse_messages",
    "plain",
    "semconv_messages",
    "text_of",
    "truncate",
    "truncate_value",
]

#: Types that are never a mapping: ``isinstance(x, Mapping)`` (an ABC check, ~0.25 µs) is asked only
#: of the others; message parsing asks it of nearly every value it meets.
_NOT_MAPS = frozenset({type(None), str, int, float, bool, list, tuple, bytes})

#: Values instrumentations write in place of captured content (Strands/Mastra, OpenInference, ADK).
REDACTION_MARKERS = frozenset({"[REDACTED]", "__REDACTED__", "<elided>", "[redacted]"})

#: Starts of user-role texts that a framework wrote, not the user.
_NOT_A_REQUEST = ("For context:",)

#: Call ids that mean "no id" (ADK writes ``'<not specified>'``; ids may carry stray blanks).
_NO_ID = frozenset({"", "<not specified>", "none", "null", "undefined"})


class Bad:
    """Marker returned by :func:`load_json` for a string that should have been JSON and is not."""

    __slots__ = ("error", "text")

    def __init__(self, text: str, error: str) -> None:
        self.text = text
        self.error = error


_MAX_DEPTH = 64


def plain(value: Any, _depth: int = 0) -> Any:
    """``value`` with every sequence a list and every mapping a dict (strings untouched).

    The live SDK hands attribute arrays as tuples, log bodies as nested tuples and mappings as
    ``BoundedAttributes``/``MappingProxyType``; decoded OTLP gives lists and dicts. The readers see
    one shape: this is applied once, where raw values meet the parsers. Nesting deeper than 64
    levels is cut (``None``): no real message is that deep, and recursion must stay bounded.
    """
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if _depth >= _MAX_DEPTH:
        return None
    if isinstance(value, (tuple, list)):
        return [plain(v, _depth + 1) for v in value]
    if (type(value) is dict or (type(value) not in _NOT_MAPS and isinstance(value, Mapping))):
        return {str(k): plain(v, _depth + 1) for k, v in value.items()}
    return value


def load_json(value: Any) -> Any:
    """Parse a JSON string; anything else is returned as is. Bad JSON gives a :class:`Bad`."""
    if isinstance(value, (bytes, bytearray)):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return Bad(repr(value[:80]), "attribute is not UTF-8")
    if not isinstance(value, str):
        return value
    if value in REDACTION_MARKERS:
        return None
    try:
        return orjson.loads(value)
    except (orjson.JSONDecodeError, TypeError):
        pass  # NaN/Infinity, integers past 64 bits, lone surrogates, deep nesting: the stdlib decides
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as exc:
        return Bad(value, f"bad JSON: {exc}")


def maybe_json(value: Any) -> Any:
    """Parse a string that looks like a JSON object/array; otherwise keep the string."""
    if isinstance(value, str) and value[:1] in ("{", "[") and value[-1:] in ("}", "]"):
        parsed = load_json(value)
        return value if isinstance(parsed, Bad) else parsed
    return value


def literal(value: Any) -> Any:
    """A JSON or Python-literal string (``{'city': 'Paris'}``) as a value; other strings unchanged.

    ``ast.literal_eval`` evaluates literals only (no names, calls or attribute access), so text from
    a trace cannot run code; oversized text is not evaluated at all.
    """
    if not isinstance(value, str):
        return value
    parsed = maybe_json(value)
    if parsed is not value or value[:1] not in ("{", "[", "(") or len(value) > 100_000:
        return parsed
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value


def _repr_keywords(text: str) -> dict[str, Any]:
    """Keyword arguments of a ``Name(key=literal, ...)`` repr, read with ``ast`` (never evaluated)."""
    if len(text) > 100_000:
        return {}
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    out: dict[str, Any] = {}
    if isinstance(node, ast.Call):
        for kw in node.keywords:
            if kw.arg is None:
                continue
            try:
                out[kw.arg] = ast.literal_eval(kw.value)
            except (ValueError, SyntaxError, TypeError, RecursionError):
                continue
    return out


def clean_id(value: Any) -> str | None:
    """A call id, stripped; placeholders for "no id" become ``None``."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text.lower() in _NO_ID else text


def truncate(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + "…[truncated]"


def truncate_value(value: Any, limit: int) -> Any:
    """Keep structured values whose JSON fits the limit; otherwise a truncated JSON/text string."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return truncate(value, limit)
    try:
        # most values are far under the limit: orjson's compact bytes tell so at a fraction of the
        # cost. The text measured below is at most 3x as long (a space after each one-byte ", " or
        # ": ", "-Infinity" where orjson writes "null"), and never longer in characters than in bytes.
        if len(orjson.dumps(value, default=str)) * 3 <= limit:
            return value
    except (TypeError, ValueError, RecursionError):
        pass  # non-string keys, integers past 64 bits, ...: measured as always
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = str(value)
    return value if len(text) <= limit else truncate(text, limit)


def text_of(content: Any) -> str | None:
    """Plain text of a message content: a string, a list of text parts/blocks, or a ``{text}``."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if (type(content) is dict or (type(content) not in _NOT_MAPS and isinstance(content, Mapping))):
        for key in ("content", "text"):
            if isinstance(content.get(key), str) and content.get("type", "text") == "text":
                return str(content[key])
        return None
    if isinstance(content, list):
        texts = [t for t in (_part_text(p) for p in content) if t]
        return "\n".join(texts) if texts else None
    return None


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if (type(part) is dict or (type(part) not in _NOT_MAPS and isinstance(part, Mapping))) and part.get("type", "text") in ("text", "output_text", "input_text"):
        for key in ("content", "text"):
            if isinstance(part.get(key), str):
                return str(part[key])
    return None


@dataclass(slots=True)
class RawCall:
    """A tool call found in a message: name, id and arguments as found (arguments not yet parsed)."""

    name: str
    call_id: str | None
    arguments: Any
    position: int = 0


@dataclass(slots=True)
class ParsedMessages:
    """What a list of messages says: calls in order, result ids, user and assistant texts."""

    calls: list[RawCall]
    result_ids: list[str]
    #: tool results by call id: (value, error type or None) — read from the history of later model calls
    results: dict[str, tuple[Any, str | None]]
    user_texts: list[str]
    assistant_texts: list[str]
    system_texts: list[str]
    #: index into ``calls`` of the first call after the last user message (for all-message dumps)
    first_call_after_last_user: int = 0
    #: calls not kept (past the cap)
    dropped_calls: int = 0


class _CappedCalls(list[RawCall]):
    """The calls of one parse, refusing (and counting) every call past the cap. It counts them
    itself: a reference back to the parse's result would make a cycle of every parse, left for
    the garbage collector where reference counting frees it at once."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self._cap = cap
        self.dropped = 0

    def append(self, call: RawCall) -> None:
        if len(self) < self._cap:
            super().append(call)
        else:
            self.dropped += 1


def _call_from(entry: Mapping[str, Any]) -> RawCall | None:
    """A tool call from one part / tool_calls entry / content block, or ``None``."""
    tu = entry.get("toolUse")
    if (type(tu) is dict or (type(tu) not in _NOT_MAPS and isinstance(tu, Mapping))):  # Bedrock Converse content block (Strands)
        name = tu.get("name")
        return RawCall(str(name), clean_id(tu.get("toolUseId")), tu.get("input")) if name else None
    fc = entry.get("function_call") or entry.get("functionCall")
    if (type(fc) is dict or (type(fc) not in _NOT_MAPS and isinstance(fc, Mapping))):  # Gemini / ADK part
        name = fc.get("name")
        return RawCall(str(name), clean_id(fc.get("id")), fc.get("args")) if name else None
    fn = entry.get("function")
    if (type(fn) is dict or (type(fn) not in _NOT_MAPS and isinstance(fn, Mapping))):  # OpenAI chat tool_calls / OpenInference tool_call
        name = fn.get("name")
        return RawCall(str(name), clean_id(entry.get("id")), fn.get("arguments")) if name else None
    etype = entry.get("type")
    if etype in ("tool_call", "function_call", "tool_use", "tool-call", "toolCall") or (
        etype is None and ("toolName" in entry or "tool_name" in entry)
    ):
        name = entry.get("name") or entry.get("toolName") or entry.get("tool_name")
        if not name:
            return None
        if etype == "function_call":  # OpenAI Responses item: "id" is the item id, "call_id" the call's
            call_id = entry.get("call_id", entry.get("id"))
        else:
            call_id = entry.get("id", entry.get("toolCallId", entry.get("call_id", entry.get("tool_call_id"))))
        args = entry.get("arguments", entry.get("args", entry.get("input")))
        return RawCall(str(name), clean_id(call_id), args)
    if etype is None and ("toolCallType" in entry or "toolCallId" in entry):  # ai.response.toolCalls entries
        name = entry.get("toolName")
        if not name:
            return None
        return RawCall(str(name), clean_id(entry.get("toolCallId")), entry.get("args", entry.get("input")))
    return None


def _result_id(entry: Mapping[str, Any]) -> str | None:
    etype = entry.get("type")
    if etype in ("tool_call_response", "tool_result", "tool-result", "function_call_output", "tool-error"):
        return clean_id(entry.get("id", entry.get("tool_use_id", entry.get("toolCallId", entry.get("call_id")))))
    fr = entry.get("function_response") or entry.get("functionResponse")  # Gemini / ADK parts
    if (type(fr) is dict or (type(fr) not in _NOT_MAPS and isinstance(fr, Mapping))):
        return clean_id(fr.get("id"))
    tr = entry.get("toolResult")  # Bedrock Converse (Strands)
    if (type(tr) is dict or (type(tr) not in _NOT_MAPS and isinstance(tr, Mapping))):
        return clean_id(tr.get("toolUseId"))
    return None


#: ``"AI_NoSuchToolError: …"``, ``"Error: …"``, ``"ValueError: …"``: how frameworks hand a failed call
#: back to the model as its tool result (observed: AI SDK 6/7, Mastra, LangGraph).
_ERROR_TEXT = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception))(?::|\s*\()")


#: openai-agents' answer to a call of a tool the agent does not have.
_NOT_FOUND_TEXT = re.compile(r"\bTool '[^']*' not found\b")


def error_type_of_text(value: Any) -> str | None:
    """The error class named at the start of a tool-result text, if the text is an error report."""
    if isinstance(value, str):
        m = _ERROR_TEXT.match(value)
        if m:
            return m.group(1)
        if _NOT_FOUND_TEXT.search(value[:2000]):
            return "unknown_tool"
    return None


def _result_value(entry: Mapping[str, Any]) -> tuple[Any, str | None]:
    """A tool result part's value and, when the part says the call failed, an error type."""
    tr = entry.get("toolResult")
    if (type(tr) is dict or (type(tr) not in _NOT_MAPS and isinstance(tr, Mapping))):
        content = tr.get("content")
        return content, ("tool_error" if tr.get("status") == "error" else None)
    if entry.get("type") == "tool-error":
        return entry.get("error"), "tool_error"
    if entry.get("is_error") is True or entry.get("isError") is True:
        return entry.get("content"), "tool_error"
    output = entry.get("output")
    if (type(output) is dict or (type(output) not in _NOT_MAPS and isinstance(output, Mapping))) and isinstance(output.get("type"), str) and "value" in output:
        # AI SDK 5+: {"type": "text"|"json"|"error-text"|"error-json", "value": ...}
        value = output["value"]
        if output["type"].startswith("error"):
            return value, error_type_of_text(value) or "tool_error"
        return value, None
    for key in ("response", "result", "output", "content"):
        if key in entry:
            value = entry[key]
            return value, error_type_of_text(value)
    fr = entry.get("function_response") or entry.get("functionResponse")
    if (type(fr) is dict or (type(fr) not in _NOT_MAPS and isinstance(fr, Mapping))):
        return fr.get("response"), None
    return None, None


def iter_messages(data: Any) -> Iterator[Mapping[str, Any]]:
    """Messages of a message list, a single message, choices, or ``{"messages": [...]}``."""
    if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))):
        if isinstance(data.get("message"), Mapping):  # a choice
            yield data["message"]
        elif isinstance(data.get("messages"), list):
            yield from iter_messages(data["messages"])
        elif isinstance(data.get("output"), list) and "object" in data:  # an OpenAI Responses object
            yield {"role": "assistant", "content": data["output"]}
        elif isinstance(data.get("contents"), list):  # Gemini / ADK llm_request
            yield from iter_messages(data["contents"])
        elif isinstance(data.get("content"), Mapping):  # ADK llm_response
            yield data["content"]
        elif "role" in data or "parts" in data or "tool_calls" in data:
            yield data
        elif _call_from(data) is not None:
            yield {"role": "assistant", "parts": [data]}
    elif isinstance(data, list):
        for item in data:
            if isinstance(item, (Mapping, list)):
                yield from iter_messages(item)


#: What the OTel GenAI conventions' own messages and parts hold (``gen_ai.input.messages`` /
#: ``gen_ai.output.messages``): anything else takes :func:`parse_messages`.
_SEMCONV_MESSAGE_KEYS = frozenset({"role", "parts", "finish_reason"})
_SEMCONV_CALL_KEYS = frozenset({"type", "id", "name", "arguments"})
_SEMCONV_TEXT_KEYS = frozenset({"type", "content"})
#: A tool's answer as instrumentations write it: its value under ``response`` (the conventions) or
#: ``result`` (Pydantic AI), sometimes with the tool's ``name`` (read as _result_value reads them).
_SEMCONV_RESPONSE_KEYS = frozenset({"type", "id", "name", "response", "result"})
#: Roles whose text is the model's answer.
_ASSISTANT_ROLES = frozenset({"assistant", "model", "ai"})
#: Texts :func:`parse_messages` reads as something else than text (a repr of a call).
_REPR_STARTS = ("ResponseFunctionToolCall(", "{'")


def semconv_messages(data: Any, max_calls: int | None = None) -> ParsedMessages | None:
    """:func:`parse_messages` of a message list in the OTel GenAI conventions' own shape — messages of
    a ``role``, ``parts`` and a ``finish_reason``, whose parts are ``text``, named ``tool_call`` and
    ``tool_call_response`` parts (a history: tools' answers in ``tool`` messages) — read in one pass
    without trying every other convention's shapes; ``None`` (nothing read) for any other shape:
    :func:`_parse_any` reads it (``tests/extract/test_fast_lane.py`` holds both ways to the same result)."""
    read: ParsedMessages | None = _semconv_read(data, max_calls, True)
    return read


def semconv_output_calls(data: Any, max_calls: int) -> tuple[list[tuple[str, Any]], bool, int] | None:
    """What :func:`semconv_messages` reads from a model's output messages when their text is not kept:
    the first ``max_calls`` calls as (name, id as found), whether an assistant said anything, and the
    calls past the cap — with no call or message objects; ``None`` wherever ``semconv_messages``
    gives ``None``, and for a tool's answer, which no output holds (the same walk:
    ``tests/extract/test_fast_lane.py`` holds both to the same facts)."""
    read: tuple[list[tuple[str, Any]], bool, int] | None = _semconv_read(data, max_calls, False)
    return read


def _semconv_read(data: Any, max_calls: int | None, full: bool) -> Any:
    """The one walk of :func:`semconv_messages` (``full``: a :class:`ParsedMessages`) and of
    :func:`semconv_output_calls` (not ``full``: calls as (name, id) pairs, whether an assistant spoke,
    the calls dropped)."""
    if type(data) is not list:
        return None
    calls: list[Any] = []
    out = ParsedMessages(calls, [], {}, [], [], []) if full else None
    said = False
    dropped = 0
    cap = max_calls if max_calls is not None else -1
    for message in data:
        if type(message) is not dict or not _SEMCONV_MESSAGE_KEYS.issuperset(message):
            return None
        role = message.get("role")
        parts = message.get("parts")
        if type(role) is not str or type(parts) is not list or (role == "tool" and out is None):
            return None
        texts: list[str] = []
        for part in parts:
            if type(part) is not dict:
                return None
            ptype = part.get("type")
            if ptype == "tool_call":
                name = part.get("name")
                if type(name) is not str or not name or not _SEMCONV_CALL_KEYS.issuperset(part):
                    return None
                if cap < 0 or len(calls) < cap:
                    if full:
                        calls.append(RawCall(name, clean_id(part.get("id")), part.get("arguments"), len(calls)))
                    else:
                        calls.append((name, part.get("id")))
                else:
                    dropped += 1
            elif ptype == "text":
                content = part.get("content")
                if content is None and len(part) == 1:
                    continue  # a text part whose content was not recorded says nothing
                if type(content) is not str or not _SEMCONV_TEXT_KEYS.issuperset(part) or content.startswith(_REPR_STARTS):
                    return None
                if content and content not in REDACTION_MARKERS:
                    texts.append(content)
            elif ptype == "tool_call_response" and out is not None:
                # a tool's answer in a model call's history (every turn after the first carries them),
                # read as _parse_any reads it: its id and value; one without an id says nothing
                if not _SEMCONV_RESPONSE_KEYS.issuperset(part):
                    return None
                rid = clean_id(part.get("id"))
                if rid is not None:
                    out.result_ids.append(rid)
                    out.results[rid] = _result_value(part)
            else:
                return None
        if not texts:
            continue
        if out is None:
            said = said or role in _ASSISTANT_ROLES
            continue
        text = texts[0] if len(texts) == 1 else "\n".join(texts)
        if role == "user" or role == "human":
            if not text.startswith(_NOT_A_REQUEST):  # ADK replays other agents' turns as "For context: …"
                out.user_texts.append(text)
                out.first_call_after_last_user = len(calls)
        elif role in _ASSISTANT_ROLES:
            out.assistant_texts.append(text)
        elif role in ("system", "developer"):
            out.system_texts.append(text)
    if out is None:
        return calls, said, dropped
    out.dropped_calls = dropped
    return out


def parse_messages(data: Any, max_calls: int | None = None) -> ParsedMessages:
    """Read calls, result ids and texts from any supported message shape (see the module docstring).

    At most ``max_calls`` calls are kept (``dropped_calls`` counts the rest): a message with 100,000
    tool calls costs one pass over the parsed JSON, not 100,000 call objects. Messages in the OTel
    GenAI conventions' own shape are read in one pass (:func:`semconv_messages`); any other shape
    tries every convention's shapes (:func:`_parse_any`).
    """
    parsed = semconv_messages(data, max_calls)
    return parsed if parsed is not None else _parse_any(data, max_calls)


def _parse_any(data: Any, max_calls: int | None = None) -> ParsedMessages:
    """:func:`parse_messages` of any supported shape, each message tried against every convention's."""
    capped = _CappedCalls(max_calls) if max_calls is not None else None
    out = ParsedMessages(capped if capped is not None else [], [], {}, [], [], [])
    for message in iter_messages(data):
        role = str(message.get("role") or message.get("type") or "")
        texts: list[str] = []
        pieces: Iterable[Any] = ()
        if isinstance(message.get("parts"), list):
            pieces = message["parts"]
        content = message.get("content")
        if isinstance(content, list):
            pieces = [*pieces, *content]
        elif isinstance(content, str) and content:
            texts.append(content)
        for piece in pieces:
            if not (type(piece) is dict or (type(piece) not in _NOT_MAPS and isinstance(piece, Mapping))):
                if isinstance(piece, str) and piece:
                    texts.append(piece)
                continue
            call = _call_from(piece)
            if call is not None:
                call.position = len(out.calls)
                out.calls.append(call)
                continue
            rid = _result_id(piece)
            if rid is not None:
                out.result_ids.append(rid)
                out.results[rid] = _result_value(piece)
                continue
            text = _part_text(piece)
            if text and text.startswith("ResponseFunctionToolCall("):
                # openai-agents (Responses model) via the OTel contrib: a repr of the output item
                kw = _repr_keywords(text)
                if kw.get("name"):
                    out.calls.append(RawCall(str(kw["name"]), clean_id(kw.get("call_id")), kw.get("arguments"),
                                             position=len(out.calls)))
                    continue
            if text and text.startswith("{'") and "'tool_calls'" in text:
                # openai-agents via the OTel contrib: a Python repr of the Chat Completions message
                repr_msg = literal(text)
                if (type(repr_msg) is dict or (type(repr_msg) not in _NOT_MAPS and isinstance(repr_msg, Mapping))) and repr_msg.get("tool_calls"):
                    for entry in repr_msg["tool_calls"]:
                        call = _call_from(entry) if (type(entry) is dict or (type(entry) not in _NOT_MAPS and isinstance(entry, Mapping))) else None
                        if call is not None:
                            call.position = len(out.calls)
                            out.calls.append(call)
                    continue
            if text:
                texts.append(text)
        for entry in message.get("tool_calls") or ():
            if (type(entry) is dict or (type(entry) not in _NOT_MAPS and isinstance(entry, Mapping))):
                call = _call_from(entry) or _call_from({**entry, "type": "tool_call"})
                if call is not None:
                    call.position = len(out.calls)
                    out.calls.append(call)
        if role == "tool":
            rid = clean_id(message.get("tool_call_id", message.get("id")))
            if rid:
                out.result_ids.append(rid)
                if rid not in out.results:
                    out.results[rid] = (content, error_type_of_text(content))
        texts = [t for t in texts if t not in REDACTION_MARKERS]
        text = "\n".join(texts) if texts else None
        if role in ("user", "human") and text and text.startswith(_NOT_A_REQUEST):
            text = None  # ADK replays other agents' turns as user messages "For context: …"
        if role in ("user", "human") and text:
            out.user_texts.append(text)
            out.first_call_after_last_user = len(out.calls)
        elif role in ("assistant", "model", "ai") and text:
            out.assistant_texts.append(text)
        elif role in ("system", "developer") and text:
            out.system_texts.append(text)
    if capped is not None:
        out.dropped_calls = capped.dropped
    return out
