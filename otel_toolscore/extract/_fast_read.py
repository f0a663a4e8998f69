"""The table-driven lane of :func:`~._readers.read_span` for live spans.

Most spans of an instrumented agent are OTel GenAI model, tool and agent spans that only the GenAI
reader claims. For those, running the seven convention readers over a :class:`~._records.SpanRecord`
built first is most of the cost of reading a span. :func:`read_live_span` reads such a span straight
from the SDK object with one table lookup (``gen_ai.operation.name`` → role), defers its content
(messages, tool definitions) to the same parsers, and gives *exactly* the facts
:func:`~._readers.read_span` gives (``tests/extract/test_fast_lane.py`` checks it on every shape the
conventions know). A span of an operation the GenAI reader gives no role (``create_agent``,
``invoke_workflow``, ``execute_task``) is read as it leaves it, "other"; a span of the Pydantic AI
or ADK scope, with none of the keys and names their readers read beyond GenAI's, as GenAI with the
scope's framework tag; an OpenLLMetry task (a LangGraph node) as GenAI with the task's name.
Anything another reader could claim — another convention's keys, a framework reader's own keys or
span names, span events, a handoff — declines to the generic readers (``None``).

The SDK span's fields are read directly (``_name``, ``_attributes`` …, with the public properties
as the fallback for any other span class): a property costs a Python call, and a span is read once.
"""

from __future__ import annotations

from typing import Any

from ..run_records import CallRecord
from ._content import (
    genai_plain_outputs,
    has_openinference_inputs,
    io_value_input,
    oi_plain_outputs,
    openinference_inputs,
    openinference_outputs,
)
from ._facts import (
    _CHARS_PER_FLAT_KEY,
    IN_SPAN_ATTRIBUTES,
    ExtractOptions,
    InSpan,
    SpanFacts,
    reports_error,
    root_attributes,
)
from ._readers import _LLM_OPS, GENAI_CONTENT, _openinference, _scope_tag, _str, settle_content, settle_facts
from ._records import _STATUS_BY_ID, SpanRecord, plain_attributes
from ._values import clean_id

__all__ = ["read_live_oi_span", "read_live_span"]

#: ``gen_ai.operation.name`` → role, for the operations the GenAI reader alone decides. Any other
#: operation (``create_agent``, ``invoke_workflow``, a framework's own) but a handoff gives a span of
#: role "other" when no other reader reacts to the span (what the lane declines on, below).
_ROLE_OF_OP: dict[str, str] = {"invoke_agent": "agent", "execute_tool": "tool", **dict.fromkeys(_LLM_OPS, "llm")}
#: Operations the GenAI reader reads as a handoff (handoff facts: the generic readers).
_HANDOFF_OPS = frozenset({"agent_handoff", "handoff"})

#: Keys of the conventions other than GenAI and OpenInference (and the content keys the GenAI
#: reader hands to another convention's parser).
_OTHER_CONVENTION_KEYS = frozenset(
    {
        "traceloop.span.kind",
        "llm.request.type",
        "gen_ai.prompt.0.role",
        "gen_ai.completion.0.role",
        "ai.operationId",
        "mastra.span.type",
        "pydantic_ai.all_messages",
        "pydantic_ai.tool.failure_stage",
        "tool_arguments",
        "gcp.vertex.agent.llm_request",
        "gcp.vertex.agent.tool_call_args",
    }
)
#: Keys another reader (or a content parser) reacts to: their presence sends the span to the generic
#: readers. Kept in step with :mod:`._readers` by ``tests/extract/test_fast_lane.py``.
_GENERIC_KEYS = _OTHER_CONVENTION_KEYS | {
    # a handoff call (framework call) of the GenAI reader
    "gen_ai.agent.handoff.target.name",
    "openinference.span.kind",
}
#: Span names and scopes the Pydantic AI and ADK readers claim whatever the attributes.
_GENERIC_NAMES = frozenset({"agent run", "running tool", "running tools", "execute_tool (merged)"})
_GENERIC_SCOPES = frozenset({"pydantic-ai", "gcp.vertex.agent"})
#: What the Pydantic AI and ADK readers read of a GenAI span of their scope beyond what the GenAI
#: reader reads (``readers._pydantic``, ``readers._adk``): a span of such a scope with none of these
#: keys, and no name of theirs, gets from them only its framework tag, which the lane adds from the
#: scope as ``settle_facts`` does. With any of them it is declined (their other keys are declined
#: for every scope: :data:`_GENERIC_KEYS`).
_SCOPE_KEYS: dict[str, frozenset[str]] = {
    "pydantic-ai": frozenset({"agent_name", "all_messages_events", "final_result", "tool_response"}),
    "gcp.vertex.agent": frozenset({"gcp.vertex.agent.tool_response"}),
}
#: ... and the span names they give a role (ADK's ``call_llm`` and ``agent_run [name]``; Pydantic AI's
#: are declined for every scope: :data:`_GENERIC_NAMES`)
_SCOPE_NAMES: dict[str, tuple[str, ...]] = {"pydantic-ai": (), "gcp.vertex.agent": ("call_llm", "agent_run [")}
#: Keys of every reader but OpenInference's: a span carrying none of them (and no name, scope or
#: event another reader claims) is read by the OpenInference reader alone.
_NOT_OPENINFERENCE_KEYS = _OTHER_CONVENTION_KEYS | {
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.agent.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
}
_GENAI_NAME_PREFIXES = ("invoke_agent", "execute_tool")
_GENAI = ("genai",)
_CONTENT_KEYS = frozenset(key for key, _ in GENAI_CONTENT)
#: Keys whose presence takes a span the long way (content to parse or defer, an error type).
_PLAIN_SKIP = frozenset({*_CONTENT_KEYS, "error.type"})
#: A span carrying none of these is neither another reader's nor one to take the long way.
_GENERIC_OR_SKIP = _GENERIC_KEYS | _PLAIN_SKIP
try:
    from opentelemetry.trace import StatusCode as _StatusCode

    _ERROR: Any = _StatusCode.ERROR
except ImportError:  # pragma: no cover - the API is a dependency
    _ERROR = object()
_new = object.__new__
_CONVENTIONS: dict[str | None, tuple[str, ...]] = {}


def _conventions(
    scope_name: str | None, base: tuple[str, ...] = _GENAI, memo: dict[str | None, tuple[str, ...]] = _CONVENTIONS
) -> tuple[str, ...]:
    """``base`` (the conventions the readers add, in their order) plus the framework tag of the scope
    when it is not among them, as ``settle_facts`` adds it (memoised per base: a process sees a few
    scopes; ``base`` itself is shared, so facts of one reader share their tuple)."""
    convs = memo.get(scope_name)
    if convs is None:
        tag = _scope_tag(scope_name) if scope_name else None
        convs = base if tag is None or tag in base else (*base, tag)
        if len(memo) < 1024:
            memo[scope_name] = convs
    return convs


def _langchain_result_names_the_call(a: Any, scope_name: str) -> bool:
    """An OpenLLMetry LangChain tool span without a call id whose result is a ``ToolMessage``: the GenAI
    reader reads the id from it (``langchain_tool_message_id``; the generic readers)."""
    return (
        _scope_tag(scope_name) == "langchain"
        and clean_id(a.get("gen_ai.tool.call.id")) is None
        and a.get("gen_ai.tool.call.result") is not None
    )


#: The keys that decline a span beside an OpenLLMetry task's kind (its model call keys among them).
_GENERIC_BUT_KIND = _GENERIC_KEYS - {"traceloop.span.kind"}


def _openllmetry_task(a: Any) -> bool:
    """Whether a GenAI span (``execute_task`` mostly) is an OpenLLMetry task that the OpenLLMetry reader
    (``readers._traceloop``) only names (a task gives no role the GenAI reader's would not win over):
    ``traceloop.span.kind`` is ``task``, no other reader's key is there, and its input is no LangGraph
    ``Send`` to a tool (that reader's call context: the generic readers)."""
    if a.get("traceloop.span.kind") != "task" or not _GENERIC_BUT_KIND.isdisjoint(a):
        return False
    value = a.get("traceloop.entity.input")
    return not (isinstance(value, str) and '"tool_call_with_context"' in value[:200])


#: An OpenLLMetry task's conventions: the GenAI reader's, then the OpenLLMetry reader's.
_TASK = ("genai", "openllmetry")
_TASK_CONVENTIONS: dict[str | None, tuple[str, ...]] = {}


def _sdk_fields(span: Any) -> tuple[str, Any, Any, int | None, int | None, Any, str | None]:
    """(name, events, status, start, end, status code, scope name) of an ended span: the SDK's slots
    read directly (its properties copy or wrap), another SDK's span class through its properties."""
    try:
        scope = span._instrumentation_scope
        status = span._status
        events = span._events
        return (
            span._name,
            getattr(events, "_dq", events),  # the SDK's BoundedList: its deque (len() in C)
            status,
            span._start_time,
            span._end_time,
            status._status_code,
            scope._name if scope is not None else None,
        )
    except AttributeError:
        scope, status = span.instrumentation_scope, span.status
        return (
            span.name,
            span.events,
            status,
            span.start_time,
            span.end_time,
            status.status_code,
            scope.name if scope is not None else None,
        )


def _hex_ids(span: Any) -> tuple[str, str, str | None]:
    """(trace, span, parent) ids of a span in hex, for a caller that did not pass them."""
    ctx = span.context
    parent = span.parent
    return "%032x" % ctx.trace_id, "%016x" % ctx.span_id, "%016x" % parent.span_id if parent is not None else None


def _tool_call(
    values: dict[str, Any],
    tool: str,
    call_id: str | None,
    raw_result: Any,
    options: ExtractOptions,
    span_id: str,
    start: int | None,
    end: int | None,
) -> None:
    """A tool span's call into ``values``, as the readers make it (an error-reporting result fails it)."""
    values["tool_name"] = tool
    values["call_id"] = call_id
    status, error_type = "ok", None
    if raw_result is not None and reports_error(raw_result):
        status, error_type = "error", "tool_error"
        values["status"] = status
        values["error_type"] = error_type
    framework = tool in options.framework_tool_names or tool.startswith(options.framework_tool_prefixes)
    values["call"] = CallRecord(
        tool, call_id, None, None, status, error_type, "framework" if framework else "tool", "span", span_id,
        start or None, end or None,
    )


def read_live_span(
    span: Any, options: ExtractOptions, ids: tuple[str, str, str | None] | None = None, a: Any = None
) -> SpanFacts | None:
    """The facts of a live GenAI span only the GenAI reader claims, or ``None``: read it generically.

    ``ids``: the span's (trace, span, parent) ids in hex when the caller has them already; ``a``: its
    attribute dict (:func:`~._records.plain_attributes`), likewise."""
    if a is None:
        try:
            a = span._attributes._dict
        except AttributeError:
            a = plain_attributes(span)
    op = a.get("gen_ai.operation.name")
    if type(op) is not str:
        return None
    role = _ROLE_OF_OP.get(op)
    if role is None:
        if op in _HANDOFF_OPS:
            return None
        role = "other"
    plain = _GENERIC_OR_SKIP.isdisjoint(a)  # one pass over the keys for both questions, usually
    task = False
    if not plain and not _GENERIC_KEYS.isdisjoint(a):
        if not _openllmetry_task(a):
            return None
        task = True
    name, events, status, start, end, status_code, scope_name = _sdk_fields(span)
    if events or name in _GENERIC_NAMES:
        return None
    if role == "tool" and scope_name and _langchain_result_names_the_call(a, scope_name):
        return None
    if scope_name in _GENERIC_SCOPES and (
        not _SCOPE_KEYS[scope_name].isdisjoint(a) or name.startswith(_SCOPE_NAMES[scope_name])
    ):
        return None
    tool = a.get("gen_ai.tool.name")
    if tool == "(merged tools)":
        return None
    if ids is None:
        ids = _hex_ids(span)
    if (
        not options.capture_content
        and status_code is not _ERROR
        and plain
        and (role != "tool" or type(tool) is str)
    ):
        # The commonest span of all (no content, no error, a named tool): what the lines below
        # give it, in one step. (tests/extract/test_fast_lane.py holds both ways to read_span.)
        return _plain(span, a, role, name, start, end, scope_name, tool, ids, options)
    f = _new(SpanFacts)  # SpanFacts.new, inline: the other fields keep their class defaults
    f.trace_id, f.span_id, f.parent_span_id = ids
    f.role = role
    f.name = name
    f.start_time_unix_nano = start or 0
    f.end_time_unix_nano = end or 0
    f.holder = span
    code = _STATUS_BY_ID.get(id(status_code)) or status_code.name
    # what the GenAI reader sets for these operations (readers._genai), in its order
    agent_name = a.get("gen_ai.agent.name")
    if agent_name is not None and agent_name != "":
        f.agent_name = str(agent_name)
    agent_id = a.get("gen_ai.agent.id")
    if agent_id is not None and agent_id != "":
        f.agent_id = str(agent_id)
    conversation = a.get("gen_ai.conversation.id")
    if conversation is not None and conversation != "":
        f.conversation_id = str(conversation)
    raw_result = None
    if role == "tool":
        if tool is None:
            f.role = role = "other"  # a tool span that names no tool is not a call we could report
        else:
            f.tool_name = str(tool)
            call_id = a.get("gen_ai.tool.call.id")
            if call_id is not None:
                f.call_id = clean_id(call_id)
            f.raw_arguments = a.get("gen_ai.tool.call.arguments")
            f.raw_result = raw_result = a.get("gen_ai.tool.call.result")
    elif role == "agent" and code == "ERROR":
        f.status = "error"
    content = not _CONTENT_KEYS.isdisjoint(a)
    messages = None
    if content:
        if role != "tool" and not options.capture_content:
            messages = _messages_alone(a, options)
        if messages is None:
            for key, parser in GENAI_CONTENT:  # content: parsed at assembly, as the GenAI reader defers it
                value = a.get(key)
                if value is not None:
                    f.defer(parser, value)
    # what every reading ends with (readers.settle_facts), for a span of this convention alone
    if task:
        f.entity_name = _str(a.get("traceloop.entity.name"))
        f.conventions = _conventions(scope_name, _TASK, _TASK_CONVENTIONS)
    else:
        convs = _CONVENTIONS.get(scope_name)
        f.conventions = convs if convs is not None else _conventions(scope_name)
    if code == "ERROR":
        message = status.description
        if message and "not found" in message:
            f.error_message = message[:2000]  # only "tool … not found" reports are used
    if role == "tool":
        error = a.get("error.type")
        if code == "ERROR":
            f.status = "error"
            f.error_type = str(error) if error is not None and error != "" else "error"
        elif error is not None:
            f.status = "error"
            f.error_type = str(error)
        if not options.capture_content and not content:
            # names only, nothing left to parse (settle_content would materialize at once, with no
            # input content to put off): the call is built here, as materialize() builds it
            status_ = f.status
            error_type = f.error_type
            if status_ != "error" and raw_result is not None and reports_error(raw_result):
                status_ = f.status = "error"
                error_type = f.error_type = error_type or "tool_error"
            tool_name: str = f.tool_name  # type: ignore[assignment]
            framework = tool_name in options.framework_tool_names or tool_name.startswith(options.framework_tool_prefixes)
            f.call = CallRecord(
                tool_name,
                f.call_id,
                None,
                None,
                status_,
                error_type,
                "framework" if framework else "tool",
                "span",
                f.span_id,
                start or None,
                end or None,
            )
            if f.raw_arguments is not None or raw_result is not None:
                f.raw_arguments = f.raw_result = None
            f.materialized = True
            return f
    elif role == "agent":
        f.attributes = root_attributes(a)  # short scalars only: no reference to the span's content
    if messages is not None:
        _read_messages(f, messages[0], messages[1], options)
        return f
    if not content and not options.capture_content and role != "tool":
        f.materialized = True  # nothing to parse, no text kept (what materialize() leaves)
        return f
    settle_content(f, options)
    return f


#: Where a GenAI span's input messages wait when its outputs are read at once (one object for all:
#: ``InSpan`` is never changed).
_INPUT_MESSAGES = InSpan("gen_ai.input.messages")
#: The GenAI reader's content keys other than the two message lists: a span with any of them is
#: deferred and settled the general way (derived, so a key added there is not skipped here).
_NOT_MESSAGES = tuple(key for key, _ in GENAI_CONTENT if key not in ("gen_ai.input.messages", "gen_ai.output.messages"))
#: ... and the parsers of the two, as the GenAI reader pairs them
_INPUTS_PARSER = dict(GENAI_CONTENT)["gen_ai.input.messages"]
_OUTPUTS_PARSER = dict(GENAI_CONTENT)["gen_ai.output.messages"]


def _messages_alone(a: Any, options: ExtractOptions) -> tuple[str | None, str | None] | None:
    """(input messages, output messages) of a GenAI model or agent span, content not kept, whose only
    content is its messages as strings within the bounds that keep ``settle_content`` from parsing
    its inputs now (``max_deferred_chars``) or declining its outputs (``max_parse_chars``); ``None``
    for any other: deferred and settled the general way."""
    for key in _NOT_MESSAGES:
        if key in a:
            return None
    inputs = a.get("gen_ai.input.messages")
    if inputs is not None and (type(inputs) is not str or len(inputs) > options.max_deferred_chars):
        return None
    outputs = a.get("gen_ai.output.messages")
    if outputs is not None and (type(outputs) is not str or len(outputs) > options.max_parse_chars):
        return None
    return inputs, outputs


def _read_messages(f: SpanFacts, inputs: str | None, outputs: str | None, options: ExtractOptions) -> None:
    """What ``defer`` of both message lists and ``settle_content`` leave, content not kept, without
    their generic steps: the outputs parsed now (names and ids kept, the answer's text not), the
    inputs left in the span under their key until a run needs them (:func:`_messages_alone` checked
    both bounds)."""
    if inputs is not None:
        f.deferred = [(_INPUTS_PARSER, _INPUT_MESSAGES)]
    if outputs is not None:
        try:
            if not genai_plain_outputs(f, outputs, options):
                _OUTPUTS_PARSER(f, outputs, options)
        except Exception as exc:  # as SpanFacts._parse reports a parser that fails
            f.problem(f"span {f.span_id}: {_OUTPUTS_PARSER.__name__} failed: {type(exc).__name__}: {exc}")
        if f.final_output is not None:
            f.final_output = None  # content is not kept
    f.materialized = True


def _plain(
    span: Any,
    a: Any,
    role: str,
    name: str,
    start: int | None,
    end: int | None,
    scope_name: str | None,
    tool: str | None,
    ids: tuple[str, str, str | None],
    options: ExtractOptions,
) -> SpanFacts:
    """:func:`read_live_span` of a span with no content, no error status and no ``error.type``,
    content not kept: its facts built at once (materialized, as ``settle_content`` leaves them)."""
    f = _new(SpanFacts)
    convs = _CONVENTIONS.get(scope_name)
    values: dict[str, Any] = {
        "trace_id": ids[0],
        "span_id": ids[1],
        "parent_span_id": ids[2],
        "role": role,
        "name": name,
        "start_time_unix_nano": start or 0,
        "end_time_unix_nano": end or 0,
        "holder": span,
        "conventions": convs if convs is not None else _conventions(scope_name),
        "materialized": True,
        "plain": True,
    }
    agent_name = a.get("gen_ai.agent.name")
    if agent_name is not None and agent_name != "":
        values["agent_name"] = str(agent_name)
    agent_id = a.get("gen_ai.agent.id")
    if agent_id is not None and agent_id != "":
        values["agent_id"] = str(agent_id)
    conversation = a.get("gen_ai.conversation.id")
    if conversation is not None and conversation != "":
        values["conversation_id"] = str(conversation)
    if role == "tool":
        assert tool is not None
        call_id = a.get("gen_ai.tool.call.id")
        if call_id is not None:
            call_id = clean_id(call_id)
        _tool_call(values, tool, call_id, a.get("gen_ai.tool.call.result"), options, ids[1], start, end)
    elif role == "agent":
        values["attributes"] = root_attributes(a)
    f.__dict__ = values
    return f


def read_live_oi_span(
    span: Any, options: ExtractOptions, ids: tuple[str, str, str | None] | None = None, a: Any = None
) -> SpanFacts | None:
    """The facts of a live OpenInference span no other reader claims, or ``None``: read it generically.

    The OpenInference reader itself runs (:func:`~._readers.read_span` runs it too, with six others
    that would find nothing here), on a record built from the SDK span's fields without the
    conversions the readers do not look at (kind, resource, events). ``ids``, ``a``: as for
    :func:`read_live_span`."""
    if a is None:
        try:
            a = span._attributes._dict
        except AttributeError:
            a = plain_attributes(span)
    if "openinference.span.kind" not in a or not _NOT_OPENINFERENCE_KEYS.isdisjoint(a):
        return None
    name, events, status, start, end, status_code, scope_name = _sdk_fields(span)
    if events or name in _GENERIC_NAMES or scope_name in _GENERIC_SCOPES or name.startswith(_GENAI_NAME_PREFIXES):
        return None
    if ids is None:
        ids = _hex_ids(span)
    if not options.capture_content and status_code is not _ERROR and "error.type" not in a:
        facts = _plain_oi(span, a, name, start, end, scope_name, ids, options)
        if facts is not None:
            return facts
    code = _STATUS_BY_ID.get(id(status_code)) or status_code.name
    message = status.description
    rec = SpanRecord(
        ids[0], ids[1], ids[2], name, attributes=a, status_code=code, status_message=message,
        start_time_unix_nano=start or 0, end_time_unix_nano=end or 0, scope_name=scope_name, holder=span,
    )
    f = _new(SpanFacts)
    f.trace_id, f.span_id, f.parent_span_id = ids
    f.role = ""
    f.name = name
    f.start_time_unix_nano = start or 0
    f.end_time_unix_nano = end or 0
    f.holder = span
    convs: list[str] = []
    _openinference(rec, a, f, convs)
    return settle_facts(f, a, convs, code, message, scope_name, (), options)


_OI_PLAIN_TAGS = frozenset({None, "langchain"})
#: the conventions of an OpenInference span the plain lane reads, by scope name (``None``: a scope
#: whose framework tag sends its spans to the reader); memoised, as a process sees a few scopes
_OI_PLAIN_CONVENTIONS: dict[str | None, tuple[str, ...] | None] = {}
_UNSEEN: Any = object()


def _oi_plain_conventions(scope_name: str | None) -> tuple[str, ...] | None:
    tag = _scope_tag(scope_name) if scope_name else None
    convs = None if tag not in _OI_PLAIN_TAGS else ("openinference",) if tag is None else ("openinference", tag)
    if len(_OI_PLAIN_CONVENTIONS) < 1024:
        _OI_PLAIN_CONVENTIONS[scope_name] = convs
    return convs


def _plain_oi(
    span: Any,
    a: Any,
    name: str,
    start: int | None,
    end: int | None,
    scope_name: str | None,
    ids: tuple[str, str, str | None],
    options: ExtractOptions,
) -> SpanFacts | None:
    """:func:`read_live_oi_span` of the commonest OpenInference spans — a chain, a model call without
    ``output.value``, a tool with its call id or no result — with no error and content not kept,
    built at once as the OpenInference reader and ``settle_facts`` leave them; ``None`` for any other
    (the reader runs)."""
    convs = _OI_PLAIN_CONVENTIONS.get(scope_name, _UNSEEN)
    if convs is _UNSEEN:
        convs = _oi_plain_conventions(scope_name)
    if convs is None:
        return None
    kind = str(a["openinference.span.kind"]).upper()
    if kind == "AGENT" or kind == "EVALUATOR":
        return None
    values: dict[str, Any] = {
        "trace_id": ids[0],
        "span_id": ids[1],
        "parent_span_id": ids[2],
        "name": name,
        "start_time_unix_nano": start or 0,
        "end_time_unix_nano": end or 0,
        "holder": span,
        "conventions": convs,
        "materialized": True,
    }
    session = a.get("session.id")
    if session is not None and session != "":
        values["conversation_id"] = str(session)
    f = _new(SpanFacts)
    if kind == "TOOL":
        call_id = clean_id(a.get("tool_call.id", a.get("tool.id")))
        raw_result = a.get("output.value")
        if convs[-1] == "langchain" and call_id is None and raw_result is not None:
            return None  # the id is read from the result (a deferred parser): the reader's way
        tool = a.get("tool.name")
        if tool is None and name.startswith("handoff to "):
            return None  # openai-agents' handoff: the reader's way
        tool_name = str(tool) if tool is not None and tool != "" else name
        values["role"] = "tool"
        values["plain"] = True
        _tool_call(values, tool_name, call_id, raw_result, options, ids[1], start, end)
        f.__dict__ = values
        return f
    if kind == "LLM":
        if "output.value" in a or len(a) * _CHARS_PER_FLAT_KEY > options.max_deferred_chars:
            return None
        values["role"] = "llm"
        f.__dict__ = values
        try:
            if not oi_plain_outputs(f, a, options):
                openinference_outputs(f, a, options)
        except Exception as exc:  # as _parse reports a parser that fails
            f.problem(f"span {ids[1]}: openinference_outputs failed: {type(exc).__name__}: {exc}")
        f.final_output = None  # content is not kept
        if has_openinference_inputs(a):  # as the reader defers them
            f.deferred = [(openinference_inputs, IN_SPAN_ATTRIBUTES)]
        return f
    # a chain, or a kind no role is read from
    values["role"] = "other"
    agent = a.get("agent.name")
    if agent is not None and agent != "":
        values["agent_name"] = str(agent)
    value = a.get("input.value")
    if value is not None:
        if not isinstance(value, str) or '"tool_call_with_context"' in value[:200] or len(value) > options.max_deferred_chars:
            return None
        values["deferred"] = [(io_value_input, InSpan("input.value"))]  # as _by_reference finds it
    else:
        values["plain"] = True  # nothing left to parse
    f.__dict__ = values
    return f
