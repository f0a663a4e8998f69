"""Per-span and per-log readers: one small function per convention, tables of keys, no parsing.

:func:`read_span` runs on the application's thread for every ended span, so it rejects spans that
carry nothing GenAI/agent-related with one set-disjointness test over the attribute keys plus a
name-prefix test, and for the others only reads scalar attributes: content is deferred (see
:mod:`._facts`). The readers run in precedence order and each fills only what is still empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._content import (
    adk_llm_request,
    adk_llm_response,
    genai_input_messages,
    genai_output_messages,
    has_openinference_inputs,
    io_value_input,
    io_value_output,
    langchain_tool_message_id,
    langgraph_tool_context,
    log_event_body,
    log_event_input,
    log_event_output,
    mastra_agent_output,
    mastra_step_output,
    openinference_inputs,
    openinference_output_value,
    openinference_outputs,
    pydantic_all_messages,
    tool_definitions,
    traceloop_args,
    traceloop_indexed,
    vercel_prompt,
    vercel_prompt_tools,
    vercel_response_toolcalls,
)
from ._facts import PARSER_KEYS, ExtractOptions, SpanFacts, root_attributes
from ._frameworks import (
    call_wrapper_arguments,
    crewai_agent_tools,
    crewai_called_name,
    crewai_hosted_run,
    crewai_roster,
    crewai_task_output,
    llamaindex_step_agent,
    smolagents_agent,
)
from ._hints import RunHints
from ._records import EventTuple, LogRecordView, SpanRecord
from ._values import clean_id

__all__ = ["classify_start", "may_have_facts", "read_log", "read_span"]

#: ``invoke_workflow`` is not here: ADK and Mastra wrap agents in it; a workflow with tool calls and no
#: agent inside still bounds a run through the local-root rule of the assembler.
_AGENT_OPS = AGENT_OPS = frozenset({"invoke_agent"})
_LLM_OPS = frozenset({"chat", "text_completion", "generate_content", "completion", "responses"})
#: Operations whose role the GenAI reader sets (no other reader's role applies to the span).
ROLE_OPS = frozenset({*_AGENT_OPS, "execute_tool", *_LLM_OPS})
_VERCEL_ROOTS = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"})
_OI_ROLES = {"AGENT": "agent", "TOOL": "tool", "LLM": "llm"}
#: LangGraph prebuilt agents' model-step node names (create_react_agent / langchain create_agent)
_LANGGRAPH_STEP_NODES = frozenset({"agent", "model"})
_TL_ROLES = {"workflow": "agent", "agent": "agent", "tool": "tool"}

#: Attribute keys any reader reacts to. A span with none of them (and no telling name or event)
#: is rejected before any other work.
_MARKERS = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.agent.name",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system",
        "gen_ai.provider.name",
        "gen_ai.prompt.0.role",
        "gen_ai.completion.0.role",
        "openinference.span.kind",
        "traceloop.span.kind",
        "llm.request.type",
        "ai.operationId",
        "mastra.span.type",
        "gcp.vertex.agent.llm_request",
        "gcp.vertex.agent.tool_call_args",
        "pydantic_ai.all_messages",
        "tool_arguments",
        "agent_name",
    }
)
_NAME_PREFIXES = ("invoke_agent", "execute_tool", "agent run", "running tool", "call_llm", "agent_run [", "ai.")
#: Events of GenAI <= 1.36 carried as span events (same names as the log events).
_BODY_EVENTS = frozenset(
    {
        "gen_ai.user.message",
        "gen_ai.system.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        "gen_ai.choice",
    }
)
_DETAIL_EVENTS = frozenset({"gen_ai.client.inference.operation.details", "gen_ai.content.prompt", "gen_ai.content.completion"})
_GENAI_CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions")
#: Instrumentation scope (prefix) → convention tag; tells frameworks apart that share a convention.
_SCOPE_TAGS = (
    ("pydantic-ai", "pydantic-ai"),
    ("gcp.vertex.agent", "adk"),
    ("strands", "strands"),
    ("openinference.instrumentation.openai_agents", "openai-agents"),
    ("opentelemetry.instrumentation.openai_agents", "openai-agents"),
    ("openai_agents", "openai-agents"),
    ("openinference.instrumentation.langchain", "langchain"),
    ("opentelemetry.instrumentation.langchain", "langchain"),
    ("openinference.instrumentation.smolagents", "smolagents"),
    ("openinference.instrumentation.llama_index", "llamaindex"),
    ("opentelemetry.instrumentation.llamaindex", "llamaindex"),
    ("openinference.instrumentation.crewai", "crewai"),
    ("opentelemetry.instrumentation.crewai", "crewai"),
    ("mastra", "mastra"),
)


_SCOPE_TAG_CACHE: dict[str, str | None] = {}


def _scope_tag(scope: str) -> str | None:
    """The framework tag of an instrumentation scope (memoised: a process sees a handful of scopes)."""
    try:
        return _SCOPE_TAG_CACHE[scope]
    except KeyError:
        pass
    found = None
    for prefix, tag in _SCOPE_TAGS:
        if scope.startswith(prefix) or (prefix in scope and "." not in prefix):
            found = tag
            break
    if len(_SCOPE_TAG_CACHE) < 1024:
        _SCOPE_TAG_CACHE[scope] = found
    return found


def _set_role(f: SpanFacts, role: str) -> None:
    if not f.role:
        f.role = role


def _str(value: Any) -> str | None:
    return str(value) if value is not None and value != "" else None


# -- readers, in precedence order --------------------------------------------------------------------
#: GenAI content attributes and their parsers, run at assembly (deferred), in this order.
GENAI_CONTENT = (
    ("gen_ai.input.messages", genai_input_messages),
    ("gen_ai.output.messages", genai_output_messages),
    ("gen_ai.tool.definitions", tool_definitions),
    ("gen_ai.agent.tools", tool_definitions),  # Strands: JSON list of tool names
)
for _key, _parser in GENAI_CONTENT:
    PARSER_KEYS[_parser] = (*PARSER_KEYS.get(_parser, ()), _key)


def _genai(rec: SpanRecord, a: Mapping[str, Any], f: SpanFacts, convs: list[str]) -> None:
    op = a.get("gen_ai.operation.name")
    tool = a.get("gen_ai.tool.name")
    name = rec.name
    if (
        op is None
        and tool is None
        and not name.startswith(("invoke_agent", "execute_tool"))
        and "gen_ai.agent.name" not in a
        and "gen_ai.input.messages" not in a
        and "gen_ai.output.messages" not in a
    ):
        return
    convs.append("genai")
    if tool == "(merged tools)" or name == "execute_tool (merged)":  # ADK's parallel pseudo-span
        _set_role(f, "other")
        return
    if op in _AGENT_OPS or (op is None and name.startswith("invoke_agent")):
        _set_role(f, "agent")
    elif op == "execute_tool" or (op is None and tool is not None and name.startswith("execute_tool")):
        _set_role(f, "tool")
    elif op in _LLM_OPS:
        _set_role(f, "llm")
    # other operations (create_agent, invoke_workflow, agent_step, custom values) leave the role to the
    # framework readers below; a span nobody claims ends up "other"
    if op in ("agent_handoff", "handoff"):  # openai-agents via OTel contrib / OpenLLMetry
        f.handoff_to = _str(a.get("gen_ai.handoff.to_agent"))
        f.handoff_from = _str(a.get("gen_ai.handoff.from_agent")) or ""
        return
    f.agent_name = f.agent_name or _str(a.get("gen_ai.agent.name"))
    f.agent_id = f.agent_id or _str(a.get("gen_ai.agent.id"))
    if f.role == "agent" and rec.status_code == "ERROR":
        f.status = "error"  # the run failed (a call answered by this run reads its status from it)
    f.conversation_id = f.conversation_id or _str(a.get("gen_ai.conversation.id"))
    if tool is not None and f.role == "tool":
        f.tool_name = str(tool)
        f.call_id = clean_id(a.get("gen_ai.tool.call.id"))
        f.raw_arguments = a.get("gen_ai.tool.call.arguments")
        f.raw_result = a.get("gen_ai.tool.call.result")
        if "gen_ai.agent.handoff.target.name" in a:
            f.framework = True
        if f.call_id is None and f.raw_result is not None and _scope_tag(rec.scope_name or "") == "langchain":
            f.defer(langchain_tool_message_id, f.raw_result)  # OpenLLMetry: the id is in the ToolMessage
    for key, parser in GENAI_CONTENT:
        value = a.get(key)
        if value is not None:
            f.defer(parser, value)


def _openinference(rec: SpanRecord, a: Mapping[str, Any], f: SpanFacts, convs: list[str]) -> None:
    kind = a.get("openinference.span.kind")
    if kind is None:
        return
    convs.append("openinference")
    kind = str(kind).upper()
    role = _OI_ROLES.get(kind, "other")
    if role == "agent" and "tool.name" in a:
        role = "tool"  # LangChain marks any run whose name contains "agent" AGENT, tools included
    elif role == "agent" and rec.name in _LANGGRAPH_STEP_NODES and "langgraph_node" in str(a.get("metadata", "")):
        role = "other"  # the ReAct graph's model-step node ("agent"/"model"): a step, not a run
    if role == "tool" and "tool.name" not in a and rec.name.startswith("handoff to "):
        role = "other"  # openai-agents handoff: the model's transfer_to_* call carries the real name
        f.handoff_to = rec.name[len("handoff to ") :] or None
    _set_role(f, role)
    f.conversation_id = f.conversation_id or _str(a.get("session.id"))
    framework = _scope_tag(rec.scope_name) if rec.scope_name else None
    if role == "agent" and f.role == "agent":
        f.agent_name = f.agent_name or _str(a.get("agent.name")) or _oi_agent_name(rec, a, framework)
        if rec.status_code == "ERROR":
            f.status = "error"  # the run failed (a managed agent's call reads its status from it)
    elif role == "other" and f.role == "other":
        f.agent_name = f.agent_name or _str(a.get("agent.name"))  # a CHAIN root that names its agent
    if role == "tool" and f.role == "tool":
        _oi_tool(rec, a, f, framework)
    elif kind == "LLM":
        f.defer(openinference_outputs, a)
        if has_openinference_inputs(a):  # nothing to hold the span for otherwise
            f.defer(openinference_inputs, a)
        if "output.value" in a:
            f.defer(openinference_output_value, a["output.value"])
    elif f.role == "agent" and framework == "crewai":
        if "input.value" in a:
            f.defer(crewai_agent_tools, a["input.value"])
        if "output.value" in a:
            f.defer(crewai_task_output, a["output.value"])
    elif f.role == "agent" and framework == "smolagents":
        f.defer(smolagents_agent, a)  # the task given to run(), the agent's tools and managed agents
        if "output.value" in a:
            f.defer(io_value_output, a["output.value"])
    elif f.role in ("agent", "other"):
        value = a.get("input.value")
        if isinstance(value, str) and '"tool_call_with_context"' in value[:200]:
            f.defer(langgraph_tool_context, value)
        elif value is not None:
            f.defer(io_value_input, value)
            if framework == "llamaindex" and isinstance(value, str) and "current_agent_name=" in value[-512:]:
                f.defer(llamaindex_step_agent, value)  # an agent workflow step's event ends naming its agent
        output = a.get("output.value")
        if output is not None and not (framework == "llamaindex" and _is_stop_event(output)):
            f.defer(io_value_output, output)
        if framework == "crewai" and "crew_agents" in a:
            f.defer(crewai_roster, a["crew_agents"])


def _is_stop_event(value: Any) -> bool:
    """A LlamaIndex workflow's result as the repr of its ``StopEvent(result=AgentOutput(...))``
    (often cut short by the instrumentation): no answer text can be read from it reliably."""
    return isinstance(value, str) and value.startswith("StopEvent(")


def _oi_tool(rec: SpanRecord, a: Mapping[str, Any], f: SpanFacts, framework: str | None) -> None:
    f.tool_name = f.tool_name or _str(a.get("tool.name")) or rec.name
    f.call_id = f.call_id or clean_id(a.get("tool_call.id", a.get("tool.id")))
    if f.raw_arguments is None:
        f.raw_arguments = a.get("input.value")
    if f.raw_result is None:
        f.raw_result = a.get("output.value")
    if framework == "langchain" and f.call_id is None and f.raw_result is not None:
        f.defer(langchain_tool_message_id, f.raw_result)  # the ToolMessage names the call it answers
    if framework in ("smolagents", "llamaindex") and f.raw_arguments is not None:
        # Tool.__call__ / FunctionTool.acall record their bound arguments {"args", "kwargs", ...}
        f.defer(call_wrapper_arguments, (f.raw_arguments, a.get("tool.parameters")))
    if framework == "llamaindex" and f.tool_name == "handoff" and '"to_agent"' in str(a.get("tool.parameters", "")):
        f.framework = True  # AgentWorkflow's built-in handoff(to_agent, reason)
    elif framework == "crewai":
        # CrewAI's tool.name is the display name ("Delegate work to coworker"); the model called the
        # name in the first line of the LLM-facing description ("Tool Name: delegate_work_to_coworker")
        f.tool_name = crewai_called_name(a.get("tool.description")) or f.tool_name
        value = a.get("input.value")
        if value is not None:
            f.defer(crewai_hosted_run, value)  # a coworker tool's arguments name the agent it runs


def _oi_agent_name(rec: SpanRecord, a: Mapping[str, Any], framework: str | None) -> str | None:
    """The name the user gave an agent, where an OpenInference instrumentation records it without
    ``agent.name``: CrewAI's AGENT span carries the agent's role in ``graph.node.id`` (its span name is
    ``<role>._execute_core``); smolagents names the AGENT span ``<name>.run`` after the agent's
    ``name`` (the class name when it has none) and records it nowhere else."""
    if framework == "crewai":
        return _str(a.get("graph.node.id"))
    if framework == "smolagents" and rec.name.endswith(".run"):
        return rec.name[: -len(".run")] or None
    return None


def _traceloop(rec: SpanRecord, a: Mapping[str, Any], f: SpanFacts, convs: list[str]) -> None:
    kind = a.get("traceloop.span.kind")
    llm = "llm.request.type" in a or "gen_ai.prompt.0.role" in a or "gen_ai.completion.0.role" in a
    if kind is None and not llm:
        return
    convs.append("openllmetry")
    if kind is not None:
        role = _TL_ROLES.get(str(kind), "other")
        _set_role(f, role)
        entity = _str(a.get("traceloop.entity.name"))
        if kind == "task":
            f.entity_name = entity
            value = a.get("traceloop.entity.input")
            if isinstance(value, str) and '"tool_call_with_context"' in value[:200]:
                f.defer(langgraph_tool_context, value)  # a LangGraph ``tools`` task (Send): the call it runs
        elif kind == "workflow":
            f.workflow = True
        if role == "agent":
            f.agent_name = f.agent_name or entity or _str(a.get("traceloop.workflow.name"))
            if "traceloop.entity.input" in a:
                f.defer(io_value_input, a["traceloop.entity.input"])
            if "traceloop.entity.output" in a:
                f.defer(io_value_output, a["traceloop.entity.output"])
        elif role == "tool" and f.role == "tool" and f.tool_name is None:
            f.tool_name = entity or rec.name.removesuffix(".tool")
            if "traceloop.entity.input" in a:
                f.defer(traceloop_args, a["traceloop.entity.input"])
            f.raw_result = a.get("traceloop.entity.output")
    if llm:
        _set_role(f, "llm")
        f.defer(traceloop_indexed, a)


def _vercel(rec: SpanRecord, a: Mapping[str, Any], f: SpanFacts, convs: list[str]) -> None:
    op = a.get("ai.operationId")
    if op is None:
        return
    convs.append("vercel-ai")
    op = str(op)
    if op in _VERCEL_ROOTS:
        _set_role(f, "agent")
        f.agent_name = f.agent_name or _str(a.get("ai.telemetry.functionId"))
        prompt = a.get("ai.prompt")
        if prompt is not None:
            f.defer(vercel_prompt, prompt)
    elif op.endswith((".doGenerate", ".doStream")):
        _set_role(f, "llm")
        for key, parser in (("ai.prompt.messages", vercel_prompt), ("ai.prompt.tools", vercel_prompt_tools)):
            value = a.get(key)
            if value is not None:
                f.defer(parser, value)
    elif op == "ai.toolCall":
        _set_role(f, "tool")
        if f.tool_name is None:
            f.tool_name = _str(a.get("ai.toolCall.name"))
            f.call_id = clean_id(a.get("ai.toolCall.id"))
            f.raw_arguments = a.get("ai.toolCall.args", a.get("ai.toolCall.input"))
            f.raw_result = a.get("ai.toolCall.result", a.get("ai.toolCall.output"))
    else:
        _set_role(f, "other")
        return
    calls = a.get("ai.response.toolCalls", a.get("ai.result.toolCalls"))
    if calls is not None:
        f.defer(vercel_response_toolcalls, calls)
    text = a.get("ai.response.text", a.get("ai.result.text"))
    if isinstance(text, str) and text and f.final_output is None:
        f.final_output = text


def _pydantic(rec: SpanRecord, a: Mapping[str, Any], f: SpanFacts, convs: list[str]) -> None:
    name = rec.name
    if not (
        rec.scope_name == "pydantic-ai"
        or name in ("agent run", "running tool", "running tools")
        or "pydantic_ai.all_messages" in a
        or "pydantic_ai.tool.failure_stage" in a
        or "tool_arguments" in a
    ):
        return
    convs.append("pydantic-ai")
    if name == "agent run":
        _set_role(f, "agent")
    elif name == "running tool":
        _set_role(f, "tool")
        if f.tool_name is None:
            f.tool_name = _str(a.get("gen_ai.tool.name"))
            f.call_id = clean_id(a.get("gen_ai.tool.call.id"))
    if f.role == "agent":
        f.agent_name = f.agent_name or _str(a.get("agent_name"))
    if f.role == "tool":
        if f.raw_arguments is None:
            f.raw_arguments = a.get("tool_arguments")
        if f.raw_result is None:
            f.raw_result = a.get("tool_response")
        stage = a.get("pydantic_ai.tool.failure_stage")
        if stage is not None:
            f.status = "error"
            f.error_type = f.error_type or ("validation" if stage == "validation" else str(stage))
    messages = a.get("pydantic_ai.all_messages", a.get("all_messages_events"))
    if messages is not None and f.role == "agent":
        f.defer(pydantic_all_messages, messages)
    final = a.get("final_result")
    if final is not None and f.role == "agent" and f.final_output is None:
        f.final_output = final if isinstance(final, str) else str(final)


def _adk(rec: SpanRecord, a: Mapping[str, Any], f: SpanFacts, convs: list[str]) -> None:
    if rec.scope_name != "gcp.vertex.agent" and "gcp.vertex.agent.llm_request" not in a and (
        "gcp.vertex.agent.tool_call_args" not in a
    ):
        return
    if "adk" not in convs:
        convs.append("adk")
    name = rec.name
    if name == "call_llm":
        _set_role(f, "llm")
        for key, parser in (
            ("gcp.vertex.agent.llm_request", adk_llm_request),
            ("gcp.vertex.agent.llm_response", adk_llm_response),
        ):
            value = a.get(key)
            if value is not None:
                f.defer(parser, value)
    elif name.startswith("agent_run [") and name.endswith("]"):
        _set_role(f, "agent")
        f.agent_name = f.agent_name or name[len("agent_run [") : -1]
    if f.role == "tool":
        if f.raw_arguments is None:
            f.raw_arguments = a.get("gcp.vertex.agent.tool_call_args")
        if f.raw_result is None:
            f.raw_result = a.get("gcp.vertex.agent.tool_response")


def _mastra(rec: SpanRecord, a: Mapping[str, Any], f: SpanFacts, convs: list[str]) -> None:
    stype = a.get("mastra.span.type")
    if stype is None:
        return
    if "mastra" not in convs:
        convs.append("mastra")
    if stype == "model_step":
        _set_role(f, "llm")
        value = a.get("mastra.model_step.output")
        if value is not None:
            f.defer(mastra_step_output, value)
    elif stype == "agent_run":
        if "mastra.agent_run.input" in a:
            f.defer(io_value_input, a["mastra.agent_run.input"])
        if "mastra.agent_run.output" in a:
            f.defer(mastra_agent_output, a["mastra.agent_run.output"])
    elif stype == "workflow_step" and not f.role:
        # A step of a workflow (a tool used as a step has no execute_tool span: this is its only
        # trace). The assembler keeps it as a call only inside a workflow that an agent ran as a tool.
        # Only the step id names the step: @mastra/otel-bridge names every step span after the
        # workflow and records no step id, and such a step is no call (tests/corpus/mastra/README.md).
        name = _str(a.get("mastra.workflow_step.step_id"))
        if name:
            f.role = "tool"
            f.tool_name = name
            f.raw_arguments = a.get("mastra.workflow_step.input")
            f.raw_result = a.get("mastra.workflow_step.output")
            if a.get("mastra.workflow_step.status") == "failed":
                f.status = "error"
                f.error_type = "step_failed"
            f.hints = RunHints(workflow_step=True)
            return
    # client_tool_call (an unknown tool: the requested call stands for it), model_generation,
    # model_inference, model_chunk, mapping, workflow_run / other workflow_*: no role of their own
    _set_role(f, "other")


def _span_events(rec: SpanRecord, f: SpanFacts, convs: list[str]) -> None:
    found = False
    tool = f.role == "tool"
    for ename, eattrs, _t in rec.events:
        if tool and ename == "gen_ai.tool.message":  # Strands: the call's arguments
            if f.raw_arguments is None:
                f.raw_arguments = eattrs.get("content")
        elif tool and ename == "gen_ai.choice":  # Strands: the call's result
            if f.raw_result is None:
                f.raw_result = eattrs.get("message")
        elif ename in _BODY_EVENTS:
            body: Any = eattrs.get("body", eattrs)
            f.defer(log_event_output if ename == "gen_ai.choice" else log_event_input, (ename, body))
            found = True
        elif ename in _DETAIL_EVENTS:
            _defer_detail(f, eattrs)
            found = True
        elif ename == "exception" and f.error_type is None and rec.status_code == "ERROR":
            f.error_type = _str(eattrs.get("exception.type"))
    if found:
        _set_role(f, "llm")
        if "genai" not in convs:
            convs.append("genai")


def _defer_detail(f: SpanFacts, attrs: Mapping[str, Any]) -> None:
    for key, parser in (
        ("gen_ai.input.messages", genai_input_messages),
        ("gen_ai.output.messages", genai_output_messages),
        ("gen_ai.tool.definitions", tool_definitions),
        ("gen_ai.prompt", genai_input_messages),
        ("gen_ai.completion", genai_output_messages),
    ):
        value = attrs.get(key)
        if value is not None:
            f.defer(parser, value)


_READERS = (_genai, _openinference, _traceloop, _vercel, _pydantic, _adk, _mastra)


def may_have_facts(name: str, attributes: Mapping[str, Any], has_events: bool) -> bool:
    """The test :func:`read_span` starts with, for a span not yet turned into a record: ``False``
    means no reader would find anything (most spans of a service: HTTP, database, queues)."""
    return has_events or not _MARKERS.isdisjoint(attributes) or name.startswith(_NAME_PREFIXES)


def read_span(rec: SpanRecord, options: ExtractOptions | None = None) -> SpanFacts | None:
    """What one finished span contributes, or ``None`` (fast) when it carries nothing GenAI/agent.

    Only cheap fields are filled here; content is parsed by :meth:`SpanFacts.materialize`.
    """
    a = rec.attributes
    name = rec.name
    events = rec.events
    if not may_have_facts(name, a, bool(events)):
        return None
    f = SpanFacts.new(
        rec.trace_id, rec.span_id, rec.parent_span_id, "", name, rec.start_time_unix_nano, rec.end_time_unix_nano
    )
    if rec.holder is not None:
        f.holder = rec.holder
    convs: list[str] = []
    for reader in _READERS:
        reader(rec, a, f, convs)
    if events:
        _span_events(rec, f, convs)
    return settle_facts(f, a, convs, rec.status_code, rec.status_message, rec.scope_name, events, options)


def settle_facts(
    f: SpanFacts,
    a: Mapping[str, Any],
    convs: list[str],
    status_code: str,
    status_message: str | None,
    scope: str | None,
    events: Sequence[EventTuple],
    options: ExtractOptions | None,
) -> SpanFacts | None:
    """What every span's reading ends with, once the convention readers have run: the framework tag,
    the role's defaults, error status, the root's attributes (shared by :func:`read_span` and the
    table-driven lane in :mod:`._fast_read`)."""
    if not convs or a.get("openinference.span.kind") == "EVALUATOR":
        return None  # an evaluator's carrier span (ours, or another evaluator's) is no agent activity
    if scope:
        tag = _scope_tag(scope)
        if tag is not None and tag not in convs:
            convs.append(tag)
    if not f.role:
        f.role = "other"
    if status_code == "ERROR" and status_message and "not found" in status_message:
        f.error_message = status_message[:2000]  # only "tool … not found" reports are used
    if f.role == "tool":
        if f.tool_name is None:
            f.role = "other"  # a tool span that names no tool is not a call we could report
        elif status_code == "ERROR":
            f.status = "error"
            f.error_type = f.error_type or _str(a.get("error.type")) or _error_from_events(events) or "error"
        elif a.get("error.type") is not None:
            f.status = "error"
            f.error_type = str(a["error.type"])
    if f.role == "agent":
        f.attributes = root_attributes(a)  # short scalars only: no reference to the span's content
    f.conventions = tuple(convs)
    if options is not None:
        settle_content(f, options)
    return f


def settle_content(f: SpanFacts, options: ExtractOptions) -> None:
    """Parse now what a pending run should not hold raw: with content not captured, the outputs (names
    and ids only are kept); any content past ``max_deferred_chars``, inputs included. Input content
    under that bound waits by reference until a run needs it (:func:`~._assemble.needs_inputs`)."""
    if not options.capture_content:
        f.materialize(options)  # outputs now: names and ids are kept, content is not
        if f.deferred and f.held_chars() > options.max_deferred_chars:
            f.materialize_inputs(options)  # inputs past the bound too
    elif (f.deferred or f.raw_arguments is not None or f.raw_result is not None) and (
        f.held_chars() > options.max_deferred_chars
    ):
        f.materialize(options)
        f.materialize_inputs(options)


def _error_from_events(events: Sequence[EventTuple]) -> str | None:
    for ename, eattrs, _t in events:
        if ename == "exception":
            return _str(eattrs.get("exception.type"))
    return None


def read_log(record: LogRecordView | Any, options: ExtractOptions | None = None) -> SpanFacts | None:
    """What one log record contributes (GenAI <= 1.36 events, ``…operation.details``, ADK events).

    Accepts a :class:`LogRecordView` or a live SDK log record (converted with
    :func:`~otel_toolscore.extract._records.log_view_from_sdk`). The facts carry the record's trace and
    span ids (``""`` when the record was emitted outside a span: such facts cannot join a run).
    """
    if not isinstance(record, LogRecordView):
        from ._records import log_view_from_sdk

        record = log_view_from_sdk(record)
    name = record.event_name
    attrs = record.attributes
    body = record.body
    f = SpanFacts.new(
        record.trace_id or "", record.span_id or "", None, "llm", name or "", record.time_unix_nano, record.time_unix_nano
    )
    f.from_log = True
    if name in _BODY_EVENTS:
        f.defer(log_event_body, (name, body if body is not None else dict(attrs)))
    elif any(k in attrs for k in _GENAI_CONTENT_KEYS):
        _defer_detail(f, attrs)
    elif isinstance(body, Mapping) and any(k in body for k in _GENAI_CONTENT_KEYS):
        _defer_detail(f, body)
    else:
        return None
    f.agent_name = _str(attrs.get("gen_ai.agent.name"))
    f.conversation_id = _str(attrs.get("gen_ai.conversation.id"))
    convs = ["genai"]
    tag = _scope_tag(record.scope_name or "")
    if tag is not None:
        convs.append(tag)
    f.conventions = tuple(convs)
    if options is not None:
        settle_content(f, options)
    return f


def classify_start(name: str, attributes: Mapping[str, Any] | None) -> str | None:
    """``"agent"`` / ``"tool"`` / ``"llm"`` / ``None`` at span start, from sampling-relevant
    attributes (``gen_ai.operation.name``, span kinds) and name prefixes. O(1)."""
    if attributes:
        op = attributes.get("gen_ai.operation.name")
        if op is not None:
            if op in _AGENT_OPS:
                return "agent"
            if op == "execute_tool":
                return None if name == "execute_tool (merged)" else "tool"
            if op in _LLM_OPS:
                return "llm"
            # an operation the GenAI reader does not know leaves the role to the other readers
        elif name.startswith("invoke_agent"):
            return "agent"  # the GenAI reader names the role first, from the span name, whatever follows
        kind = attributes.get("openinference.span.kind")
        if kind is not None:
            return _OI_ROLES.get(str(kind).upper())
        kind = attributes.get("traceloop.span.kind")
        if kind is not None:
            return _TL_ROLES.get(str(kind))
        if "llm.request.type" in attributes:  # OpenLLMetry model spans (legacy and current)
            return "llm"
        op = attributes.get("ai.operationId")
        if op is not None:
            if op in _VERCEL_ROOTS:
                return "agent"
            return "tool" if op == "ai.toolCall" else ("llm" if str(op).endswith((".doGenerate", ".doStream")) else None)
    if name.startswith("invoke_agent") or name == "agent run" or name.startswith("agent_run ["):
        return "agent"
    if name.startswith("execute_tool"):
        return None if name == "execute_tool (merged)" else "tool"
    if name in ("running tool", "ai.toolCall"):
        return "tool"
    if name in _VERCEL_ROOTS:
        return "agent"
    if name.startswith(("chat ", "call_llm", "text_completion ", "generate_content ")):
        return "llm"
    return None

