"""Deferred parsers: content-bearing values turned into run facts at assembly time.

Each parser has the signature ``(facts, value, options) -> None`` and only *fills* fields that are
still empty (the first reader in precedence order wins, see the package docstring). None of them
raises on bad input: a value that should be JSON and is not is recorded in ``facts.problems``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..run_records import ToolRecord
from ._facts import (
    ANSWER_PARSERS,
    EVENT_INPUT_PARSERS,
    INPUT_PARSERS,
    KEYED_PARSERS,
    OUTPUT_PARSERS,
    PARSER_KEYS,
    REQUEST_PARSERS,
    TEXT_PARSERS,
    ExtractOptions,
    Requested,
    SpanFacts,
)
from ._values import (
    _NOT_A_REQUEST,
    _NOT_MAPS,
    REDACTION_MARKERS,
    Bad,
    ParsedMessages,
    RawCall,
    clean_id,
    load_json,
    maybe_json,
    parse_messages,
    plain,
    semconv_output_calls,
    text_of,
)

__all__ = [
    "adk_llm_request",
    "adk_llm_response",
    "agent_input_messages",
    "agent_output_messages",
    "genai_input_messages",
    "genai_output_messages",
    "has_openinference_inputs",
    "io_value_input",
    "io_value_output",
    "langchain_tool_message_id",
    "langgraph_tool_context",
    "log_event_body",
    "log_event_input",
    "log_event_output",
    "mastra_agent_output",
    "mastra_step_output",
    "openinference_inputs",
    "openinference_output_value",
    "openinference_outputs",
    "pydantic_all_messages",
    "tool_definitions",
    "traceloop_args",
    "traceloop_indexed",
    "vercel_prompt",
    "vercel_prompt_tools",
    "vercel_response_toolcalls",
]


def _json(facts: SpanFacts, value: Any, what: str) -> Any:
    parsed = load_json(value)
    if isinstance(parsed, Bad):
        facts.problem(f"span {facts.span_id}: {what}: {parsed.error}")
        return None
    return parsed


def requested_calls(facts: SpanFacts, raws: list[RawCall], opts: ExtractOptions) -> list[Requested]:
    """Requested calls of a model call, in output order (at most ``opts.max_calls_per_run``)."""
    calls = []
    capture = opts.capture_content
    start = facts.end_time_unix_nano or None
    for n, raw in enumerate(raws[: opts.max_calls_per_run]):
        args = facts.parsed_content(raw.arguments, opts) if capture else None
        kind = "framework" if opts.is_framework(raw.name) else "tool"
        calls.append(Requested(raw.name, raw.call_id, args, kind, facts.span_id, start, n))
    return calls


def _requested(facts: SpanFacts, pm: ParsedMessages, opts: ExtractOptions, *, start: int = 0) -> list[Requested]:
    return requested_calls(facts, pm.calls[start:], opts)


def _absorb_history(facts: SpanFacts, pm: ParsedMessages, opts: ExtractOptions) -> None:
    """Input messages: the user's request, and the ids / results of calls made earlier (history)."""
    facts.saw_input = True
    facts.dropped_calls += pm.dropped_calls
    for raw in pm.calls:
        if raw.call_id:
            facts.add_history_id(raw.call_id)
    if pm.calls:
        if opts.capture_content:
            facts.add_history_calls(pm.calls)
        else:  # names and ids are not content; arguments are
            facts.add_history_calls(RawCall(c.name, c.call_id, None, c.position) for c in pm.calls)
    for rid, (value, err) in pm.results.items():
        facts.add_history_id(rid)
        facts.set_result(rid, (facts.parsed_content(value, opts) if opts.capture_content else None, err))
    if facts.user_query is None and pm.user_texts:
        facts.user_query = pm.user_texts[-1]


def _absorb_output(facts: SpanFacts, pm: ParsedMessages, opts: ExtractOptions, *, fallback: bool) -> None:
    facts.dropped_calls += pm.dropped_calls
    if pm.calls or pm.assistant_texts:
        facts.saw_output = True
    calls = _requested(facts, pm, opts)
    if calls:
        if fallback:
            if not facts.requested_fallback:
                facts.requested_fallback = calls
        elif not facts.requested:
            facts.requested = calls
    for rid, (value, err) in pm.results.items():
        if rid not in facts.results:
            facts.set_result(rid, (facts.parsed_content(value, opts), err))
    if facts.final_output is None and pm.assistant_texts:
        facts.final_output = pm.assistant_texts[-1]


# -- OTel GenAI >= 1.37 ------------------------------------------------------------------------------
def genai_input_messages(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    data = _json(facts, value, "gen_ai.input.messages")
    if data is not None:
        _absorb_history(facts, parse_messages(data, opts.max_calls_per_run), opts)


def genai_output_messages(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    data = _json(facts, value, "gen_ai.output.messages")
    if data is not None:
        _absorb_output(facts, parse_messages(data, opts.max_calls_per_run), opts, fallback=facts.role == "agent")


agent_input_messages = genai_input_messages


def agent_output_messages(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """Output messages of an agent span: the answer, and requested calls used only as a fallback."""
    data = _json(facts, value, "output messages")
    if data is not None:
        _absorb_output(facts, parse_messages(data, opts.max_calls_per_run), opts, fallback=True)


def _definition(facts: SpanFacts, item: Any, opts: ExtractOptions) -> ToolRecord | None:
    if facts.too_long(item, opts, "a tool definition"):
        return None  # neither parsed nor taken for a name
    if isinstance(item, str):
        parsed = maybe_json(item)
        if isinstance(parsed, str):
            return ToolRecord(item) if item else None
        item = parsed
    if not (type(item) is dict or (type(item) not in _NOT_MAPS and isinstance(item, Mapping))):
        return None
    if isinstance(item.get("function"), Mapping):  # OpenAI {"type":"function","function":{...}}
        item = item["function"]
    name = item.get("name") or item.get("id")
    if not name:
        return None
    params = item.get("parameters", item.get("inputSchema", item.get("input_schema")))
    desc = item.get("description")
    return ToolRecord(str(name), str(desc) if desc is not None else None, params if isinstance(params, dict) else None)


def _add_definitions(facts: SpanFacts, items: Iterable[Any], opts: ExtractOptions) -> None:
    if facts.tools:
        return
    seen: set[str] = set()
    for item in items:
        d = _definition(facts, item, opts)
        if d is not None and d.name not in seen:
            seen.add(d.name)
            facts.add_tool(d)


def tool_definitions(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """``gen_ai.tool.definitions``: objects, OpenAI functions, or Mastra's list of names; JSON or not."""
    data = _json(facts, value, "gen_ai.tool.definitions") if isinstance(value, str) else value
    if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))):
        data = [data]
    if isinstance(data, (list, tuple)):
        _add_definitions(facts, data, opts)


# -- GenAI <= 1.36 events (log records and span events) ---------------------------------------------
def log_event_body(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """One ``gen_ai.*.message`` / ``gen_ai.choice`` event: ``value`` is ``(event name, body)``."""
    name, body = value
    if isinstance(body, str):
        body = maybe_json(body)  # its length was checked with the event's (materialize)
    if (type(body) is dict or (type(body) not in _NOT_MAPS and isinstance(body, Mapping))):  # span-event attributes carry nested values as JSON strings
        body = {k: facts.json_text(v, opts, f"{name} {k}") if k in ("message", "content", "tool_calls") else v
                for k, v in body.items()}
    if name == "gen_ai.choice":
        if (type(body) is dict or (type(body) not in _NOT_MAPS and isinstance(body, Mapping))) and isinstance(body.get("message"), Mapping) and "role" not in body["message"]:
            body = {**body, "message": {"role": "assistant", **body["message"]}}
        if (type(body) is dict or (type(body) not in _NOT_MAPS and isinstance(body, Mapping))) and isinstance(body.get("message"), list):  # content blocks (Strands)
            body = {"message": {"role": "assistant", "content": body["message"]}}
        elif (type(body) is dict or (type(body) not in _NOT_MAPS and isinstance(body, Mapping))) and "message" not in body and ("tool_calls" in body or "content" in body):
            body = {"message": {"role": "assistant", **body}}
        elif (type(body) is dict or (type(body) not in _NOT_MAPS and isinstance(body, Mapping))) and isinstance(body.get("message"), Mapping) and body.get("tool_calls"):
            # OpenLLMetry puts tool_calls beside the message, not inside it
            body = {"message": {"role": "assistant", **body["message"], "tool_calls": body["tool_calls"]}}
        _absorb_output(facts, parse_messages(body, opts.max_calls_per_run), opts, fallback=False)
        return
    if not (type(body) is dict or (type(body) not in _NOT_MAPS and isinstance(body, Mapping))):
        body = {"content": body} if isinstance(body, str) else {}
    role = {"gen_ai.user.message": "user", "gen_ai.system.message": "system", "gen_ai.tool.message": "tool"}.get(
        name, "assistant"
    )
    message = {"role": body.get("role", role), **body}
    if role == "tool" and "tool_call_id" not in message:
        message["tool_call_id"] = body.get("id")
    _absorb_history(facts, parse_messages(message, opts.max_calls_per_run), opts)


def log_event_input(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """:func:`log_event_body` of a span event that is what the model was given (``gen_ai.user`` /
    ``system`` / ``assistant`` / ``tool.message``: the request and the history): an input parser, so it
    may wait, as the span's input attributes do, until a run needs it (:data:`EVENT_INPUT_PARSERS`)."""
    log_event_body(facts, value, opts)


def log_event_output(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """:func:`log_event_body` of a span's ``gen_ai.choice`` event: the answer only (an output parser)."""
    log_event_body(facts, value, opts)


# -- OpenInference --------------------------------------------------------------------------------
_OI_MESSAGE = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_OI_INPUT_PREFIX = "llm.input_messages."
_OI_FIRST_INPUT_ROLE = _OI_INPUT_PREFIX + "0.message.role"
_OI_FIRST_INPUT_CONTENT = _OI_INPUT_PREFIX + "0.message.content"
#: What lets two keys name one message field: an index in two spellings (``01`` and ``1``, digits of
#: another script), a line break (``$`` matches before a final one)
_NON_CANONICAL_INDEX = re.compile(r"\.0\d|[^\x00-\x7f]|\n")
_OI_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(.+)$")
_OI_CONTENT = re.compile(r"^contents\.(\d+)\.message_content\.(.+)$")


def _oi_messages(flat: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    messages = []
    for index in sorted(flat):
        fields = flat[index]
        calls: dict[int, dict[str, Any]] = {}
        contents: dict[int, dict[str, Any]] = {}
        message: dict[str, Any] = {}
        for key, val in fields.items():
            if m := _OI_CALL.match(key):
                calls.setdefault(int(m.group(1)), {})[m.group(2)] = val
            elif m := _OI_CONTENT.match(key):
                contents.setdefault(int(m.group(1)), {})[m.group(2)] = val
            else:
                message[key] = val
        out: dict[str, Any] = {"role": message.get("role"), "content": message.get("content")}
        if not out["content"] and contents:
            out["content"] = [{"type": c.get("type", "text"), "text": c.get("text")} for _, c in sorted(contents.items())]
        tool_calls = []
        for _, c in sorted(calls.items()):
            tool_calls.append(
                {"id": c.get("id"), "function": {"name": c.get("function.name"), "arguments": c.get("function.arguments")}}
            )
        if not tool_calls and message.get("function_call_name"):  # legacy single function call
            tool_calls.append(
                {"function": {"name": message["function_call_name"], "arguments": message.get("function_call_arguments_json")}}
            )
        if tool_calls:
            out["tool_calls"] = tool_calls
        if message.get("tool_call_id"):
            out["tool_call_id"] = message["tool_call_id"]
        messages.append(out)
    return messages


class _OiMessageKeys:
    """The flattened keys of output message ``i`` (``llm.output_messages.<i>.message.*``), built once."""

    __slots__ = ("call_args", "call_id", "call_name", "content", "fc_args", "fc_name", "part_text", "part_type",
                 "role", "tool_call_id")

    def __init__(self, side: str, i: int) -> None:
        base = f"llm.{side}_messages.{i}.message."
        self.role = base + "role"
        self.content = base + "content"
        self.tool_call_id = base + "tool_call_id"
        self.fc_name = base + "function_call_name"
        self.fc_args = base + "function_call_arguments_json"
        self.call_id = [f"{base}tool_calls.{j}.tool_call.id" for j in range(_OI_TABLE_CALLS)]
        self.call_name = [f"{base}tool_calls.{j}.tool_call.function.name" for j in range(_OI_TABLE_CALLS)]
        self.call_args = [f"{base}tool_calls.{j}.tool_call.function.arguments" for j in range(_OI_TABLE_CALLS)]
        self.part_type = [f"{base}contents.{j}.message_content.type" for j in range(_OI_TABLE_PARTS)]
        self.part_text = [f"{base}contents.{j}.message_content.text" for j in range(_OI_TABLE_PARTS)]


#: Keys are precomputed for the first messages, calls and content parts; beyond them they are built
#: as needed (a model output rarely holds more than one message and a few calls).
_OI_TABLE_MESSAGES = 4
_OI_TABLE_CALLS = 16
_OI_TABLE_PARTS = 4
_OI_OUTPUT_KEYS = [_OiMessageKeys("output", i) for i in range(_OI_TABLE_MESSAGES)]
_OI_TOOL_SCHEMA = [f"llm.tools.{i}.tool.json_schema" for i in range(32)]
_OI_TOOL_NAME = [f"llm.tools.{i}.tool.name" for i in range(32)]


def _oi_key(table: list[str], j: int, build: str) -> str:
    return table[j] if j < len(table) else build


def _oi_output_messages(attrs: Mapping[str, Any], max_calls: int) -> list[dict[str, Any]]:
    """Output messages from their flattened keys, probed in index order (OpenInference writes list
    positions: ``0, 1, …``): the same messages the flattened form encodes, read without visiting the
    span's other keys (its input messages may hold a whole conversation)."""
    get = attrs.get
    messages: list[dict[str, Any]] = []
    i = 0
    while True:
        keys = _OI_OUTPUT_KEYS[i] if i < _OI_TABLE_MESSAGES else _OiMessageKeys("output", i)
        role = get(keys.role)
        content = get(keys.content)
        name0 = get(keys.call_name[0])
        id0 = get(keys.call_id[0])
        part0 = get(keys.part_type[0])
        text0 = get(keys.part_text[0])
        fc_name = get(keys.fc_name)
        tool_call_id = get(keys.tool_call_id)
        if (role is None and content is None and name0 is None and id0 is None and part0 is None and text0 is None
                and fc_name is None and tool_call_id is None):
            return messages
        out: dict[str, Any] = {"role": role, "content": content}
        if not content and (part0 is not None or text0 is not None):
            parts = []
            j = 0
            while True:
                ptype = get(_oi_key(keys.part_type, j, f"llm.output_messages.{i}.message.contents.{j}.message_content.type"))
                ptext = get(_oi_key(keys.part_text, j, f"llm.output_messages.{i}.message.contents.{j}.message_content.text"))
                if ptype is None and ptext is None:
                    break
                parts.append({"type": "text" if ptype is None else ptype, "text": ptext})
                j += 1
            out["content"] = parts
        tool_calls = []
        j = 0
        while j <= max_calls:
            base = f"llm.output_messages.{i}.message.tool_calls.{j}.tool_call."
            name = name0 if j == 0 else get(_oi_key(keys.call_name, j, base + "function.name"))
            cid = id0 if j == 0 else get(_oi_key(keys.call_id, j, base + "id"))
            args = get(_oi_key(keys.call_args, j, base + "function.arguments"))
            if name is None and cid is None and args is None:
                break
            tool_calls.append({"id": cid, "function": {"name": name, "arguments": args}})
            j += 1
        if not tool_calls and fc_name:  # legacy single function call
            tool_calls.append({"function": {"name": fc_name, "arguments": get(keys.fc_args)}})
        if tool_calls:
            out["tool_calls"] = tool_calls
        if tool_call_id:
            out["tool_call_id"] = tool_call_id
        messages.append(out)
        i += 1


_ROLE_TEXTS = {"user": "user_texts", "human": "user_texts", "assistant": "assistant_texts", "model": "assistant_texts",
               "ai": "assistant_texts", "system": "system_texts", "developer": "system_texts"}


def _oi_parsed_outputs(attrs: Mapping[str, Any], max_calls: int) -> ParsedMessages | None:
    """What :func:`~._values.parse_messages` reads from the output messages, read straight from the
    key table when every message is a plain one (a role, text content, tool calls); ``None`` for any
    other shape (content parts, a legacy function call, a tool's answer), which takes the general way."""
    get = attrs.get
    out = ParsedMessages([], [], {}, [], [], [])
    calls = out.calls
    i = 0
    while i < _OI_TABLE_MESSAGES:
        keys = _OI_OUTPUT_KEYS[i]
        role = plain(get(keys.role))
        content = get(keys.content)
        name0 = plain(get(keys.call_name[0]))
        id0 = plain(get(keys.call_id[0]))
        if (get(keys.part_type[0]) is not None or get(keys.part_text[0]) is not None or get(keys.fc_name) is not None
                or get(keys.tool_call_id) is not None):
            return None
        if role is None and content is None and name0 is None and id0 is None:
            return out if i else None
        if content is not None and not isinstance(content, str):
            return None
        j = 0
        while j <= max_calls:  # as the general way reads them: one past the cap, to count a drop
            if j < _OI_TABLE_CALLS:
                name = name0 if j == 0 else plain(get(keys.call_name[j]))
                cid = id0 if j == 0 else plain(get(keys.call_id[j]))
                args = plain(get(keys.call_args[j]))
            else:
                return None  # more calls than the table holds: the general way
            if name is None and cid is None and args is None:
                break
            if name:
                if len(calls) < max_calls:
                    calls.append(RawCall(str(name), clean_id(cid), args, len(calls)))
                else:
                    out.dropped_calls += 1
            j += 1
        role_text = str(role or "")
        if role_text == "tool":
            return None
        if content and content not in REDACTION_MARKERS:
            field = _ROLE_TEXTS.get(role_text)
            if field == "user_texts":
                if not content.startswith(_NOT_A_REQUEST):
                    out.user_texts.append(content)
                    out.first_call_after_last_user = len(calls)
            elif field is not None:
                getattr(out, field).append(content)
        i += 1
    return None  # more messages than the table holds: the general way


def oi_plain_outputs(facts: SpanFacts, attrs: Mapping[str, Any], opts: ExtractOptions) -> bool:
    """:func:`openinference_outputs` of the commonest model span when content is not kept — plain
    output messages (a role, text content or none, tool calls) and no tool definitions — read from
    the key table with no intermediate messages: what the general way leaves in ``facts``, or
    ``False`` (nothing done) for any other shape. Every value must already be a string (or absent):
    anything else is converted by the general way (``tests/extract/test_fast_lane.py`` holds both)."""
    get = attrs.get
    if get(_OI_TOOL_SCHEMA[0]) is not None or get(_OI_TOOL_NAME[0]) is not None:
        return False
    max_calls = opts.max_calls_per_run
    found: list[tuple[str, str | None]] = []
    dropped = 0
    said: str | None = None  # the last assistant text
    i = 0
    while True:
        if i == _OI_TABLE_MESSAGES:
            return False  # more messages than the table holds: the general way
        keys = _OI_OUTPUT_KEYS[i]
        role = get(keys.role)
        content = get(keys.content)
        name0 = get(keys.call_name[0])
        id0 = get(keys.call_id[0])
        if (get(keys.part_type[0]) is not None or get(keys.part_text[0]) is not None or get(keys.fc_name) is not None
                or get(keys.tool_call_id) is not None):
            return False
        if role is None and content is None and name0 is None and id0 is None:
            break
        if ((role is not None and type(role) is not str) or (content is not None and type(content) is not str)
                or (name0 is not None and type(name0) is not str) or (id0 is not None and type(id0) is not str)
                or role == "tool"):
            return False
        j = 0
        while j <= max_calls:  # as the general way reads them: one past the cap, to count a drop
            if j == _OI_TABLE_CALLS:
                return False
            if j:
                name0 = get(keys.call_name[j])
                id0 = get(keys.call_id[j])
                if (name0 is not None and type(name0) is not str) or (id0 is not None and type(id0) is not str):
                    return False
            if name0 is None and id0 is None and get(keys.call_args[j]) is None:
                break
            if name0:
                if len(found) < max_calls:
                    found.append((name0, id0))
                else:
                    dropped += 1
            j += 1
        if content and content not in REDACTION_MARKERS and _ROLE_TEXTS.get(role or "") == "assistant_texts":
            said = content
        i += 1
    if dropped:
        facts.dropped_calls += dropped
    if found or said is not None:
        facts.saw_output = True
        if said is not None and facts.final_output is None:
            facts.final_output = said
    if found:
        facts.requested = _named_calls(facts, found, opts)
    return True


def _named_calls(facts: SpanFacts, found: list[tuple[str, Any]], opts: ExtractOptions) -> list[Requested]:
    """The requested calls of the plain lanes (content not kept: no arguments), from (name, id as found)
    pairs in output order (at most ``max_calls_per_run`` already)."""
    start = facts.end_time_unix_nano or None
    span_id = facts.span_id
    names, prefixes = opts.framework_tool_names, opts.framework_tool_prefixes  # opts.is_framework, inline
    return [
        Requested(
            name, clean_id(cid), None, "framework" if name in names or name.startswith(prefixes) else "tool",
            span_id, start, n,
        )
        for n, (name, cid) in enumerate(found)
    ]


def genai_plain_outputs(facts: SpanFacts, value: str, opts: ExtractOptions) -> bool:
    """:func:`genai_output_messages` of a model or agent span when content is not kept, for output
    messages in the conventions' own shape (:func:`~._values.semconv_output_calls`): the requested
    calls built straight from the parsed JSON, the answer's text not kept (what the general way
    leaves once content is dropped); ``False`` (nothing done) for any other value or shape, a
    redaction marker, and text that is no JSON (the general way reports it)."""
    data = load_json(value)
    read = None if isinstance(data, Bad) else semconv_output_calls(data, opts.max_calls_per_run)
    if read is None:
        return False
    found, said, dropped = read
    if dropped:
        facts.dropped_calls += dropped
    if found or said:
        facts.saw_output = True
    if found:
        calls = _named_calls(facts, found, opts)
        if facts.role == "agent":  # an agent's calls are a fallback, as genai_output_messages keeps them
            if not facts.requested_fallback:
                facts.requested_fallback = calls
        elif not facts.requested:
            facts.requested = calls
    return True


def openinference_outputs(facts: SpanFacts, attrs: Mapping[str, Any], opts: ExtractOptions) -> None:
    """An LLM span's flattened ``llm.output_messages.*`` and ``llm.tools.*`` keys (and the legacy
    ``llm.function_call``), read through key tables."""
    parsed = _oi_parsed_outputs(attrs, opts.max_calls_per_run)
    outputs: list[dict[str, Any]] | bool = parsed is not None
    if parsed is None:
        outputs = plain(_oi_output_messages(attrs, opts.max_calls_per_run))
        if outputs:
            parsed = parse_messages(outputs, opts.max_calls_per_run)
    if parsed is not None:
        _absorb_output(facts, parsed, opts, fallback=facts.role == "agent")
    get = attrs.get
    tools = []
    i = 0
    while True:
        schema = plain(get(_oi_key(_OI_TOOL_SCHEMA, i, f"llm.tools.{i}.tool.json_schema")))
        name = plain(get(_oi_key(_OI_TOOL_NAME, i, f"llm.tools.{i}.tool.name")))
        if schema is None and name is None:
            break
        tools.append(schema if schema is not None else name)
        i += 1
    if tools:
        _add_definitions(facts, tools, opts)
    fc = plain(get("llm.function_call"))
    if fc and not facts.requested and not outputs:
        data = None if facts.too_long(fc, opts, "llm.function_call") else _json(facts, fc, "llm.function_call")
        if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))) and data.get("name"):
            _absorb_output(facts, parse_messages({"role": "assistant", "tool_calls": [{"function": data}]}, opts.max_calls_per_run), opts, fallback=False)


def openinference_inputs(facts: SpanFacts, attrs: Mapping[str, Any], opts: ExtractOptions) -> None:
    """An LLM span's flattened ``llm.input_messages.*`` keys: the request and the conversation so far
    (parsed only when a run needs them: see :func:`~._assemble.needs_inputs`)."""
    # the keys in no set order (a decoded span's key set: its own order is read from its bytes),
    # unless two keys could name one message field (an index written "01" or in other digits, a key
    # that is no string): then the last of them in the span's order wins, so that order is followed
    picked: list[tuple[Any, str]] | None = []
    for key in attrs:
        if type(key) is not str or (key.startswith(_OI_INPUT_PREFIX) and _NON_CANONICAL_INDEX.search(key)):
            picked = None
            break
        if key.startswith(_OI_INPUT_PREFIX):
            picked.append((key, key))  # type: ignore[union-attr]
    if picked is None:
        picked = [(key, name) for key, name in _string_keys(attrs) if name.startswith(_OI_INPUT_PREFIX)]
    inputs: dict[int, dict[str, Any]] = {}
    for key, name in picked:
        if m := _OI_MESSAGE.match(name):
            inputs.setdefault(int(m.group(2)), {})[m.group(3)] = plain(attrs[key], 1)
    if inputs:
        _absorb_history(facts, parse_messages(_oi_messages(inputs), opts.max_calls_per_run), opts)


def _string_keys(attrs: Mapping[str, Any]) -> Iterator[tuple[Any, str]]:
    """(key, key as a string) of an attribute mapping, in its order: a parser given the whole mapping
    (:data:`~._facts.KEYED_PARSERS`) picks the keys it reads and makes plain only their values, where
    ``plain`` of the mapping would decode and copy every value the span holds (``plain`` of a mapping
    names each key ``str(key)`` and its values one level down: the same here)."""
    for key in attrs.keys():  # noqa: SIM118 - a decoded span's keys() keeps its order, iter() does not
        yield key, key if type(key) is str else str(key)


def has_openinference_inputs(attrs: Mapping[str, Any]) -> bool:
    """Whether an LLM span holds any key :func:`openinference_inputs` would read (``llm.input_messages.*``).

    A span without one (inputs hidden, or none recorded) has no input to defer: holding the parser
    and the span for it only sent the trace to the general rules (a model call without output, and
    input to read its calls from) to find nothing there. The first message's role or content answers
    at once; otherwise every key is looked at (one that is no string counts, as the parser reads it
    as ``str(key)``)."""
    if _OI_FIRST_INPUT_ROLE in attrs or _OI_FIRST_INPUT_CONTENT in attrs:
        return True
    for key in attrs:  # noqa: SIM110 - a loop, not any() of a generator: this runs per model span
        if type(key) is not str or key.startswith(_OI_INPUT_PREFIX):
            return True
    return False


def maybe_json_string(text: str) -> str:
    loaded = load_json(text)
    return loaded if isinstance(loaded, str) else text


def _io_text(value: Any, role: str) -> str | None:
    """Text of an ``input.value`` / ``output.value``: plain text, or messages / ``{"input": ...}`` JSON."""
    if value is None:
        return None
    data = maybe_json(value) if isinstance(value, str) else value
    if isinstance(data, str) and len(data) >= 2 and data[0] == data[-1] == '"':
        data = maybe_json_string(data)  # OpenLLMetry's entity output: a JSON-encoded string
    if isinstance(data, str):
        return data or None
    pm = parse_messages(data, 0)  # texts only: no call is kept
    texts = pm.user_texts if role == "user" else pm.assistant_texts
    if texts:
        return texts[-1]
    if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))):
        for key in ("input", "query", "question", "prompt", "message", "user_input", "output", "answer", "result"):
            inner = data.get(key)
            if isinstance(inner, str) and inner:
                return inner
            if isinstance(inner, (Mapping, list)):
                got = _io_text(inner, role)
                if got:
                    return got
        if len(data) == 1:
            only = next(iter(data.values()))
            return only if isinstance(only, str) and only else None
    return text_of(data)


def io_value_input(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    if facts.user_query is None:
        facts.user_query = _io_text(value, "user")


def io_value_output(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    if facts.final_output is None:
        facts.final_output = _io_text(value, "assistant")


# -- OpenLLMetry / Traceloop -----------------------------------------------------------------------
_TL_INDEXED = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_TL_TOOLCALL = re.compile(r"^tool_calls\.(\d+)\.(.+)$")
_TL_FUNCS = re.compile(r"^(?:llm\.request\.functions|gen_ai\.tool\.definitions)\.(\d+)\.(.+)$")


def traceloop_indexed(facts: SpanFacts, attrs: Mapping[str, Any], opts: ExtractOptions) -> None:
    """Legacy indexed ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` / ``llm.request.functions.N.*``."""
    prompt: dict[int, dict[str, Any]] = {}
    completion: dict[int, dict[str, Any]] = {}
    funcs: dict[int, dict[str, Any]] = {}
    for key, name in _string_keys(attrs):
        if m := _TL_INDEXED.match(name):
            side = prompt if m.group(1) == "prompt" else completion
            side.setdefault(int(m.group(2)), {})[m.group(3)] = plain(attrs[key], 1)
        elif m := _TL_FUNCS.match(name):
            funcs.setdefault(int(m.group(1)), {})[m.group(2)] = plain(attrs[key], 1)

    def messages(side: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for _, fields in sorted(side.items()):
            calls: dict[int, dict[str, Any]] = {}
            for key, val in fields.items():
                if m := _TL_TOOLCALL.match(key):
                    calls.setdefault(int(m.group(1)), {})[m.group(2)] = val
            content = facts.json_text(fields.get("content"), opts, "gen_ai.prompt/completion content")
            msg: dict[str, Any] = {"role": fields.get("role"), "content": content}
            if isinstance(msg["content"], (Mapping,)) or (
                isinstance(msg["content"], list) and not all((type(p) is dict or (type(p) not in _NOT_MAPS and isinstance(p, Mapping))) for p in msg["content"])
            ):
                msg["content"] = fields.get("content")
            if calls:
                msg["tool_calls"] = [
                    {"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("arguments")}}
                    for _, c in sorted(calls.items())
                ]
            if fields.get("tool_call_id"):
                msg["tool_call_id"] = fields["tool_call_id"]
            out.append(msg)
        return out

    if prompt:
        _absorb_history(facts, parse_messages(messages(prompt), opts.max_calls_per_run), opts)
    if completion:
        _absorb_output(facts, parse_messages(messages(completion), opts.max_calls_per_run), opts, fallback=facts.role == "agent")
    if funcs:
        _add_definitions(facts, (f for _, f in sorted(funcs.items())), opts)


def traceloop_args(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """``traceloop.entity.input`` = ``{"args": [...], "kwargs": {...}}``: keyword arguments when
    there are no positional ones; a LangChain ``{"inputs": ...}`` wrapper is unwrapped."""
    data = maybe_json(value)
    if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))):
        args, kwargs = data.get("args"), data.get("kwargs")
        if "inputs" in data and args is None:
            data = maybe_json(data["inputs"])
        elif (type(kwargs) is dict or (type(kwargs) not in _NOT_MAPS and isinstance(kwargs, Mapping))) and not args:
            data = dict(kwargs)
        elif isinstance(args, list) and len(args) == 1 and not kwargs:
            data = args[0]
    if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))) and set(data) == {"input_str"}:
        data = maybe_json(data["input_str"])
    facts.raw_arguments = data


# -- Vercel AI SDK ---------------------------------------------------------------------------------
def vercel_prompt(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """Root ``ai.prompt``: ``{"system", "prompt": text}`` or ``{"system", "messages": [...]}``;
    doGenerate ``ai.prompt.messages``: the message list (history)."""
    data = _json(facts, value, "ai.prompt")
    if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))) and isinstance(data.get("prompt"), str):
        if facts.user_query is None:
            facts.user_query = data["prompt"]
        return
    if data is not None:
        _absorb_history(facts, parse_messages(data, opts.max_calls_per_run), opts)


def vercel_prompt_tools(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    data = value
    if isinstance(data, str):
        data = _json(facts, data, "ai.prompt.tools")
    if isinstance(data, (list, tuple)):
        _add_definitions(facts, data, opts)


def vercel_response_toolcalls(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    data = _json(facts, value, "ai.response.toolCalls")
    if isinstance(data, list):
        entries = [{**e, "type": "tool_call"} for e in data if (type(e) is dict or (type(e) not in _NOT_MAPS and isinstance(e, Mapping)))]
        _absorb_output(
            facts, parse_messages({"role": "assistant", "parts": entries}, opts.max_calls_per_run), opts, fallback=facts.role == "agent"
        )


# -- Pydantic AI -----------------------------------------------------------------------------------
def pydantic_all_messages(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """``pydantic_ai.all_messages``: the whole conversation; calls after the last user message are
    this run's (a fallback behind the model spans), earlier ones are history."""
    data = _json(facts, value, "pydantic_ai.all_messages")
    if data is None:
        return
    pm = parse_messages(data, opts.max_calls_per_run)
    cut = pm.first_call_after_last_user
    for raw in pm.calls[:cut]:
        if raw.call_id:
            facts.add_history_id(raw.call_id)
    if facts.user_query is None and pm.user_texts:
        facts.user_query = pm.user_texts[-1]
    if not facts.requested_fallback:
        facts.requested_fallback = _requested(facts, pm, opts, start=cut)
    for rid, (val, err) in pm.results.items():
        if rid not in facts.results:
            facts.set_result(rid, (facts.parsed_content(val, opts), err))
    if facts.final_output is None and pm.assistant_texts:
        facts.final_output = pm.assistant_texts[-1]


# -- Google ADK --------------------------------------------------------------------------------------
def adk_llm_request(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    data = _json(facts, value, "gcp.vertex.agent.llm_request")
    if not (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))):
        return
    _absorb_history(facts, parse_messages(data, opts.max_calls_per_run), opts)
    config = data.get("config")
    if (type(config) is dict or (type(config) not in _NOT_MAPS and isinstance(config, Mapping))) and isinstance(config.get("tools"), list):
        decls: list[Any] = []
        for tool in config["tools"]:
            if (type(tool) is dict or (type(tool) not in _NOT_MAPS and isinstance(tool, Mapping))):
                fds = tool.get("function_declarations") or tool.get("functionDeclarations") or ()
                decls.extend(fds if isinstance(fds, list) else ())
        _add_definitions(facts, decls, opts)


def adk_llm_response(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    data = _json(facts, value, "gcp.vertex.agent.llm_response")
    if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))):
        _absorb_output(facts, parse_messages(data, opts.max_calls_per_run), opts, fallback=False)


# -- Mastra OTel exporter ------------------------------------------------------------------------------
def mastra_step_output(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """``mastra.model_step.output`` = ``{"text", "toolCalls": [{toolCallId, toolName, args}]}``: one
    model step's requested calls (Mastra's ``chat`` spans carry none)."""
    data = _json(facts, value, "mastra.model_step.output")
    if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))):
        calls = [c for c in data.get("toolCalls") or () if (type(c) is dict or (type(c) not in _NOT_MAPS and isinstance(c, Mapping)))]
        text = data.get("text") if isinstance(data.get("text"), str) else ""
        _absorb_output(facts, parse_messages({"role": "assistant", "content": text, "tool_calls": calls}, opts.max_calls_per_run), opts,
                       fallback=False)


def mastra_agent_output(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """``mastra.agent_run.output`` = ``{"text": <answer>, "files": []}``."""
    data = maybe_json(value)
    if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))) and isinstance(data.get("text"), str) and data["text"]:
        facts.final_output = facts.final_output or data["text"]
    elif isinstance(data, str) and data:
        facts.final_output = facts.final_output or data




def openinference_output_value(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """An LLM span's ``output.value`` (the raw response JSON): fills arguments the flattened
    ``llm.output_messages.*`` keys left out (openai-agents drops ``{}``), or the calls themselves."""
    if facts.requested and (not opts.capture_content or _all_have_arguments(facts.requested)):
        return  # the calls are known, and no arguments are kept or none is missing: nothing to read here
    data = maybe_json(value)
    if not isinstance(data, (Mapping, list)):
        return
    pm = parse_messages(data, opts.max_calls_per_run)
    if not pm.calls:
        return
    if not facts.requested:
        facts.requested = _requested(facts, pm, opts)
        return
    by_id = {raw.call_id: raw for raw in pm.calls if raw.call_id}
    for call in facts.requested:
        raw = by_id.get(call.call_id) if call.call_id else None
        if raw is not None and call.arguments is None and opts.capture_content:
            call.arguments = facts.parsed_content(raw.arguments, opts)


def _all_have_arguments(requested: Sequence[Requested]) -> bool:
    for call in requested:  # noqa: SIM110 (a loop, not all() of a generator: per model span)
        if call.arguments is None:
            return False
    return True


def langgraph_tool_context(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """LangGraph's ``tools`` task input ``{"__type": "tool_call_with_context", "tool_call": {name, args,
    id}}`` (OpenLLMetry wraps it in ``{"inputs": …}``): the call its child tool span executes (neither
    instrumentation's tool spans carry a call id attribute)."""
    data = maybe_json(value)
    if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))) and isinstance(data.get("inputs"), Mapping):
        data = data["inputs"]
    call = data.get("tool_call") if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))) else None
    if (type(call) is dict or (type(call) not in _NOT_MAPS and isinstance(call, Mapping))) and call.get("name"):
        args = call.get("args") if opts.capture_content else None
        facts.context_call = RawCall(str(call["name"]), clean_id(call.get("id")), args)


def langchain_tool_message_id(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """A LangChain tool span's result, the ``ToolMessage`` the tool returned, names the call it answers
    (``tool_call_id``): serialized by OpenLLMetry (``{"output": {"lc": 1, "id": [..., "ToolMessage"],
    "kwargs": {…, "tool_call_id"}}}``) or by OpenInference (``{"type": "tool", "data": {…, "tool_call_id"}}``).
    An id, not content: read with content capture off too (``tests/corpus/langgraph/README.md``)."""
    if facts.call_id is not None:
        return
    data = maybe_json(value)
    if (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))) and isinstance(data.get("output"), Mapping):
        data = data["output"]
    if not (type(data) is dict or (type(data) not in _NOT_MAPS and isinstance(data, Mapping))):
        return
    if data.get("lc") == 1 and isinstance(data.get("id"), list) and data["id"][-1:] == ["ToolMessage"]:
        fields = data.get("kwargs")
    elif data.get("type") == "tool":
        fields = data.get("data")
    else:
        return
    if (type(fields) is dict or (type(fields) not in _NOT_MAPS and isinstance(fields, Mapping))):
        facts.call_id = clean_id(fields.get("tool_call_id"))


INPUT_PARSERS.update({genai_input_messages, io_value_input, log_event_input, openinference_inputs, vercel_prompt})
EVENT_INPUT_PARSERS.add(log_event_input)
PARSER_KEYS[io_value_input] = ("input.value", "traceloop.entity.input")
TEXT_PARSERS.update({io_value_output, mastra_agent_output})
REQUEST_PARSERS.add(io_value_input)
ANSWER_PARSERS.add(io_value_output)
KEYED_PARSERS.update({openinference_outputs, openinference_inputs, traceloop_indexed})
# answers only: they fill requested calls, the answer's text, tool definitions and results not yet
# known, never the request or the history (log events, whole-conversation dumps, ADK requests and
# the framework parsers may: a span with one of those parses its inputs in order, at once)
OUTPUT_PARSERS.update({
    genai_output_messages, agent_output_messages, log_event_output, openinference_outputs, openinference_output_value,
    io_value_output, tool_definitions, vercel_prompt_tools, vercel_response_toolcalls, adk_llm_response,
    mastra_step_output, mastra_agent_output,
})
