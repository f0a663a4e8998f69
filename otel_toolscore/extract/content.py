"""Deferred parsers: content-bearing values turned into run facts at assembly time.

Each parser has the signature ``(facts, value, options) -> None`` and only *fills* fields that are
still empty (the first reader in precedence order wins, see the package docstring). None of them
raises on bad input: a value that should be JSON and is not is recorded in ``facts.problems``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..model import ToolDefinition
from .facts import ExtractOptions, Requested, SpanFacts
from .values import (
    Bad,
    ParsedMessages,
    RawCall,
    clean_id,
    load_json,
    maybe_json,
    parse_messages,
    text_of,
)

__all__ = [
    "adk_llm_request",
    "adk_llm_response",
    "agent_input_messages",
    "agent_output_messages",
    "genai_input_messages",
    "genai_output_messages",
    "io_value_input",
    "io_value_output",
    "langgraph_tool_context",
    "log_event_body",
    "mastra_agent_output",
    "mastra_step_output",
    "openinference_flat",
    "openinference_output_value",
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
        facts.problems.append(f"span {facts.span_id}: {what}: {parsed.error}")
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
            facts.history_ids.add(raw.call_id)
    if opts.capture_content:
        facts.history_calls.extend(pm.calls)
    else:  # names and ids are not content; arguments are
        facts.history_calls.extend(RawCall(c.name, c.call_id, None, c.position) for c in pm.calls)
    for rid, (value, err) in pm.results.items():
        facts.history_ids.add(rid)
        facts.results[rid] = (facts.parsed_content(value, opts) if opts.capture_content else None, err)
    if facts.user_query is None and pm.user_texts:
        facts.user_query = pm.user_texts[-1]


def _absorb_output(facts: SpanFacts, pm: ParsedMessages, opts: ExtractOptions, *, fallback: bool) -> None:
    facts.dropped_calls += pm.dropped_calls
    if pm.calls or pm.assistant_texts:
        facts.saw_output = True
    calls = _requested(facts, pm, opts)
    if calls:
        target = facts.requested_fallback if fallback else facts.requested
        if not target:
            target.extend(calls)
    for rid, (value, err) in pm.results.items():
        facts.results.setdefault(rid, (facts.parsed_content(value, opts), err))
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


def _definition(facts: SpanFacts, item: Any, opts: ExtractOptions) -> ToolDefinition | None:
    if facts.too_long(item, opts, "a tool definition"):
        return None  # neither parsed nor taken for a name
    if isinstance(item, str):
        parsed = maybe_json(item)
        if isinstance(parsed, str):
            return ToolDefinition.model_construct(name=item, description=None, parameters=None) if item else None
        item = parsed
    if not isinstance(item, Mapping):
        return None
    if isinstance(item.get("function"), Mapping):  # OpenAI {"type":"function","function":{...}}
        item = item["function"]
    name = item.get("name") or item.get("id")
    if not name:
        return None
    params = item.get("parameters", item.get("inputSchema", item.get("input_schema")))
    desc = item.get("description")
    return ToolDefinition.model_construct(
        name=str(name),
        description=str(desc) if desc is not None else None,
        parameters=params if isinstance(params, dict) else None,
    )


def _add_definitions(facts: SpanFacts, items: Iterable[Any], opts: ExtractOptions) -> None:
    if facts.tools:
        return
    seen: set[str] = set()
    for item in items:
        d = _definition(facts, item, opts)
        if d is not None and d.name not in seen:
            seen.add(d.name)
            facts.tools.append(d)


def tool_definitions(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """``gen_ai.tool.definitions``: objects, OpenAI functions, or Mastra's list of names; JSON or not."""
    data = _json(facts, value, "gen_ai.tool.definitions") if isinstance(value, str) else value
    if isinstance(data, Mapping):
        data = [data]
    if isinstance(data, (list, tuple)):
        _add_definitions(facts, data, opts)


# -- GenAI <= 1.36 events (log records and span events) ---------------------------------------------
def log_event_body(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """One ``gen_ai.*.message`` / ``gen_ai.choice`` event: ``value`` is ``(event name, body)``."""
    name, body = value
    if isinstance(body, str):
        body = maybe_json(body)  # its length was checked with the event's (materialize)
    if isinstance(body, Mapping):  # span-event attributes carry nested values as JSON strings
        body = {k: facts.json_text(v, opts, f"{name} {k}") if k in ("message", "content", "tool_calls") else v
                for k, v in body.items()}
    if name == "gen_ai.choice":
        if isinstance(body, Mapping) and isinstance(body.get("message"), Mapping) and "role" not in body["message"]:
            body = {**body, "message": {"role": "assistant", **body["message"]}}
        if isinstance(body, Mapping) and isinstance(body.get("message"), list):  # content blocks (Strands)
            body = {"message": {"role": "assistant", "content": body["message"]}}
        elif isinstance(body, Mapping) and "message" not in body and ("tool_calls" in body or "content" in body):
            body = {"message": {"role": "assistant", **body}}
        elif isinstance(body, Mapping) and isinstance(body.get("message"), Mapping) and body.get("tool_calls"):
            # OpenLLMetry puts tool_calls beside the message, not inside it
            body = {"message": {"role": "assistant", **body["message"], "tool_calls": body["tool_calls"]}}
        _absorb_output(facts, parse_messages(body, opts.max_calls_per_run), opts, fallback=False)
        return
    if not isinstance(body, Mapping):
        body = {"content": body} if isinstance(body, str) else {}
    role = {"gen_ai.user.message": "user", "gen_ai.system.message": "system", "gen_ai.tool.message": "tool"}.get(
        name, "assistant"
    )
    message = {"role": body.get("role", role), **body}
    if role == "tool" and "tool_call_id" not in message:
        message["tool_call_id"] = body.get("id")
    _absorb_history(facts, parse_messages(message, opts.max_calls_per_run), opts)


# -- OpenInference --------------------------------------------------------------------------------
_OI_MESSAGE = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_OI_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(.+)$")
_OI_CONTENT = re.compile(r"^contents\.(\d+)\.message_content\.(.+)$")
_OI_TOOL = re.compile(r"^llm\.tools\.(\d+)\.tool\.(.+)$")


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


def openinference_flat(facts: SpanFacts, attrs: Mapping[str, Any], opts: ExtractOptions) -> None:
    """Flattened ``llm.input_messages.*`` / ``llm.output_messages.*`` / ``llm.tools.*`` keys."""
    inputs: dict[int, dict[str, Any]] = {}
    outputs: dict[int, dict[str, Any]] = {}
    tools: dict[int, dict[str, Any]] = {}
    for key, val in attrs.items():
        if not key.startswith("llm."):
            continue
        if m := _OI_MESSAGE.match(key):
            side = inputs if m.group(1) == "input" else outputs
            side.setdefault(int(m.group(2)), {})[m.group(3)] = val
        elif m := _OI_TOOL.match(key):
            tools.setdefault(int(m.group(1)), {})[m.group(2)] = val
    if inputs:
        _absorb_history(facts, parse_messages(_oi_messages(inputs), opts.max_calls_per_run), opts)
    if outputs:
        _absorb_output(facts, parse_messages(_oi_messages(outputs), opts.max_calls_per_run), opts, fallback=facts.role == "agent")
    if tools:
        _add_definitions(facts, (t.get("json_schema", t.get("name")) for _, t in sorted(tools.items())), opts)
    fc = attrs.get("llm.function_call")
    if fc and not facts.requested and not outputs:
        data = None if facts.too_long(fc, opts, "llm.function_call") else _json(facts, fc, "llm.function_call")
        if isinstance(data, Mapping) and data.get("name"):
            _absorb_output(facts, parse_messages({"role": "assistant", "tool_calls": [{"function": data}]}, opts.max_calls_per_run), opts, fallback=False)


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
    if isinstance(data, Mapping):
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
    for key, val in attrs.items():
        if m := _TL_INDEXED.match(key):
            side = prompt if m.group(1) == "prompt" else completion
            side.setdefault(int(m.group(2)), {})[m.group(3)] = val
        elif m := _TL_FUNCS.match(key):
            funcs.setdefault(int(m.group(1)), {})[m.group(2)] = val

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
                isinstance(msg["content"], list) and not all(isinstance(p, Mapping) for p in msg["content"])
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
    if isinstance(data, Mapping):
        args, kwargs = data.get("args"), data.get("kwargs")
        if "inputs" in data and args is None:
            data = maybe_json(data["inputs"])
        elif isinstance(kwargs, Mapping) and not args:
            data = dict(kwargs)
        elif isinstance(args, list) and len(args) == 1 and not kwargs:
            data = args[0]
    if isinstance(data, Mapping) and set(data) == {"input_str"}:
        data = maybe_json(data["input_str"])
    facts.raw_arguments = data


# -- Vercel AI SDK ---------------------------------------------------------------------------------
def vercel_prompt(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """Root ``ai.prompt``: ``{"system", "prompt": text}`` or ``{"system", "messages": [...]}``;
    doGenerate ``ai.prompt.messages``: the message list (history)."""
    data = _json(facts, value, "ai.prompt")
    if isinstance(data, Mapping) and isinstance(data.get("prompt"), str):
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
        entries = [{**e, "type": "tool_call"} for e in data if isinstance(e, Mapping)]
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
            facts.history_ids.add(raw.call_id)
    if facts.user_query is None and pm.user_texts:
        facts.user_query = pm.user_texts[-1]
    if not facts.requested_fallback:
        facts.requested_fallback.extend(_requested(facts, pm, opts, start=cut))
    for rid, (val, err) in pm.results.items():
        facts.results.setdefault(rid, (facts.parsed_content(val, opts), err))
    if facts.final_output is None and pm.assistant_texts:
        facts.final_output = pm.assistant_texts[-1]


# -- Google ADK --------------------------------------------------------------------------------------
def adk_llm_request(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    data = _json(facts, value, "gcp.vertex.agent.llm_request")
    if not isinstance(data, Mapping):
        return
    _absorb_history(facts, parse_messages(data, opts.max_calls_per_run), opts)
    config = data.get("config")
    if isinstance(config, Mapping) and isinstance(config.get("tools"), list):
        decls: list[Any] = []
        for tool in config["tools"]:
            if isinstance(tool, Mapping):
                fds = tool.get("function_declarations") or tool.get("functionDeclarations") or ()
                decls.extend(fds if isinstance(fds, list) else ())
        _add_definitions(facts, decls, opts)


def adk_llm_response(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    data = _json(facts, value, "gcp.vertex.agent.llm_response")
    if isinstance(data, Mapping):
        _absorb_output(facts, parse_messages(data, opts.max_calls_per_run), opts, fallback=False)


# -- Mastra OTel exporter ------------------------------------------------------------------------------
def mastra_step_output(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """``mastra.model_step.output`` = ``{"text", "toolCalls": [{toolCallId, toolName, args}]}``: one
    model step's requested calls (Mastra's ``chat`` spans carry none)."""
    data = _json(facts, value, "mastra.model_step.output")
    if isinstance(data, Mapping):
        calls = [c for c in data.get("toolCalls") or () if isinstance(c, Mapping)]
        text = data.get("text") if isinstance(data.get("text"), str) else ""
        _absorb_output(facts, parse_messages({"role": "assistant", "content": text, "tool_calls": calls}, opts.max_calls_per_run), opts,
                       fallback=False)


def mastra_agent_output(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """``mastra.agent_run.output`` = ``{"text": <answer>, "files": []}``."""
    data = maybe_json(value)
    if isinstance(data, Mapping) and isinstance(data.get("text"), str) and data["text"]:
        facts.final_output = facts.final_output or data["text"]
    elif isinstance(data, str) and data:
        facts.final_output = facts.final_output or data


def openinference_output_value(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """An LLM span's ``output.value`` (the raw response JSON): fills arguments the flattened
    ``llm.output_messages.*`` keys left out (openai-agents drops ``{}``), or the calls themselves."""
    data = maybe_json(value)
    if not isinstance(data, (Mapping, list)):
        return
    pm = parse_messages(data, opts.max_calls_per_run)
    if not pm.calls:
        return
    if not facts.requested:
        facts.requested.extend(_requested(facts, pm, opts))
        return
    by_id = {raw.call_id: raw for raw in pm.calls if raw.call_id}
    for call in facts.requested:
        raw = by_id.get(call.call_id) if call.call_id else None
        if raw is not None and call.arguments is None and opts.capture_content:
            call.arguments = facts.parsed_content(raw.arguments, opts)


def langgraph_tool_context(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """LangGraph's ``tools`` task input ``{"__type": "tool_call_with_context", "tool_call": {name, args,
    id}}``: the call its child tool span executes (OpenInference tool spans carry no call id)."""
    data = maybe_json(value)
    call = data.get("tool_call") if isinstance(data, Mapping) else None
    if isinstance(call, Mapping) and call.get("name"):
        args = call.get("args") if opts.capture_content else None
        facts.context_call = RawCall(str(call["name"]), clean_id(call.get("id")), args)
