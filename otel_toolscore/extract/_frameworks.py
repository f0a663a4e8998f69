"""Deferred parsers for framework-specific keys: smolagents, LlamaIndex and CrewAI under OpenInference,
and what each framework's instrumentation always records (:func:`traces_every_tool_call`).

Same contract as :mod:`._content` (``(facts, value, options) -> None``, fill only what is empty, never
raise). Each one reads a fact the framework's README in ``tests/corpus/<framework>/`` locates; the
Python reprs read here are read only at fixed, anchored places (a pydantic repr's first or last
field) and parsed with ``ast.literal_eval``, never evaluated.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from ..run_records import ToolRecord
from ._content import _absorb_output, _add_definitions, io_value_input
from ._facts import ExtractOptions, SpanFacts
from ._hints import RunHints
from ._values import load_json, maybe_json, parse_messages

__all__ = [
    "call_wrapper_arguments",
    "crewai_agent_tools",
    "crewai_called_name",
    "crewai_hosted_run",
    "crewai_roster",
    "crewai_task_output",
    "crewai_tool_name",
    "llamaindex_step_agent",
    "smolagents_agent",
    "traces_every_tool_call",
]

#: Framework tags (:mod:`._readers` ``_SCOPE_TAGS`` and the AI SDK's own keys) whose instrumentation
#: records a tool span for every tool the agent runs, whatever its content setting, as every recording
#: in ``tests/corpus`` shows (docs/frameworks.md, "always a tool span"). A run of theirs with model
#: spans and no tool span called no tool. Left out: the bare conventions (``genai``, ``openinference``,
#: ``openllmetry``: a hand-written loop over an instrumented client runs its tools unseen, and the AI
#: SDK's ``@ai-sdk/otel`` spans carry no framework tag) and smolagents (a managed agent's call has no
#: tool span).
_EVERY_TOOL_TRACED = frozenset(
    {"pydantic-ai", "adk", "strands", "openai-agents", "langchain", "llamaindex", "crewai", "vercel-ai", "mastra"}
)


def traces_every_tool_call(conventions: Iterable[str]) -> bool:
    """Whether a run read under ``conventions`` (``AgentRun.conventions``) would show a tool span for
    every tool its agent ran: then no tool span means no call, content capture on or off."""
    return "smolagents" not in conventions and not _EVERY_TOOL_TRACED.isdisjoint(conventions)

#: A Python string literal as ``repr()`` writes it (single or double quotes, backslash escapes).
_PY_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.DOTALL)
_MAX_REPR = 100_000


def _python_string(text: str, pos: int, *, closes: str = "") -> str | None:
    """The Python string literal starting at ``pos`` of ``text`` (followed by exactly ``closes``
    and the end of ``text`` when given), or ``None``."""
    m = _PY_STRING.match(text, pos)
    if m is None or (closes and text[m.end() :] != closes):
        return None
    try:
        value = ast.literal_eval(m.group(0))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) and value else None


def _hints(facts: SpanFacts) -> RunHints:
    if facts.hints is None:
        facts.hints = RunHints()
    return facts.hints


# -- wrapped Python calls (smolagents Tool.__call__, LlamaIndex FunctionTool.acall) -----------------
_WRAPPER_KEYS = frozenset({"args", "kwargs", "sanitize_inputs_outputs"})


def _parameter_names(params: Any) -> list[str]:
    """Parameter names in declaration order: a JSON schema's ``properties`` (LlamaIndex) or a
    ``{name: spec}`` mapping (smolagents' ``tool.parameters``)."""
    data = maybe_json(params) if isinstance(params, str) else params
    if not isinstance(data, Mapping):
        return []
    props = data.get("properties")
    if isinstance(props, Mapping) and "type" in data:
        return [str(k) for k in props]
    return [str(k) for k, v in data.items() if isinstance(v, Mapping)]


def call_wrapper_arguments(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """A TOOL span's ``input.value`` holding the wrapper's bound arguments instead of the tool's:
    smolagents ``{"args": [...], "sanitize_inputs_outputs": b, "kwargs": {...}}``, LlamaIndex
    ``{"kwargs": {...}}``. ``value`` is ``(input.value, tool.parameters)``.

    The arguments are ``kwargs``, with positional ones named after the tool's parameters in order
    (a CodeAgent's ``final_answer("x")`` is ``{"answer": "x"}``). LlamaIndex passes a workflow
    ``Context`` to tools that take one (repr ``<workflows.context…Context object at …>``, not a
    declared parameter): the framework's, not the model's, so left out. Anything else is kept as
    recorded."""
    raw, params = value
    data = maybe_json(raw) if isinstance(raw, str) else raw
    if not isinstance(data, Mapping) or not data or not set(data) <= _WRAPPER_KEYS:
        return
    args = data.get("args") or []
    kwargs = data.get("kwargs") or {}
    if not isinstance(args, list) or not isinstance(kwargs, Mapping):
        return
    names = _parameter_names(params)
    if len(args) > len(names):
        return  # positional values we cannot name: the record stays as it is
    out: dict[str, Any] = dict(zip(names, args))
    for key, val in kwargs.items():
        if key not in names and isinstance(val, str) and val.startswith("<workflows.context.") and val.endswith(">"):
            continue
        out[str(key)] = val
    facts.raw_arguments = out


# -- smolagents ---------------------------------------------------------------------------------------
_SMOL_MANAGED = re.compile(r"^smolagents\.managed_agents\.(\d+)\.(name|description)$")


def smolagents_agent(facts: SpanFacts, attrs: Mapping[str, Any], opts: ExtractOptions) -> None:
    """smolagents' AGENT span: ``input.value`` = ``{"task": <the task given to run()>, "stream", …}``
    (the model sees it as ``"New task:\\n<task>"``); the agent's tools in ``smolagents.tools_names``
    (a CodeAgent sends none to the model) and its managed agents, which the model calls as tools, in
    ``smolagents.managed_agents.N.{name,description}`` (``llm.tools`` leaves them out)."""
    value = attrs.get("input.value")
    if value is not None and facts.user_query is None:
        data = facts.json_text(value, opts, "input.value")
        task = data.get("task") if isinstance(data, Mapping) else None
        if isinstance(task, str) and task:
            facts.user_query = task
        else:
            io_value_input(facts, value, opts)
    items: list[Any] = []
    names = attrs.get("smolagents.tools_names")
    names = load_json(names) if isinstance(names, str) else names
    if isinstance(names, list):
        items.extend(n for n in names if isinstance(n, str))
    managed: dict[int, dict[str, Any]] = {}
    for key, val in attrs.items():
        if key.startswith("smolagents.managed_agents.") and (m := _SMOL_MANAGED.match(key)):
            managed.setdefault(int(m.group(1)), {})[m.group(2)] = val
    items.extend(entry for _, entry in sorted(managed.items()) if entry.get("name"))
    _add_definitions(facts, items, opts)


# -- LlamaIndex ------------------------------------------------------------------------------------------
_AGENT_FIELD = "current_agent_name="


def llamaindex_step_agent(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """A LlamaIndex workflow step's ``input.value`` ``{"ctx": …, "ev": "<event repr>"}``: the agent a
    step runs as, when the event is an ``AgentInput`` / ``AgentSetup`` — pydantic reprs whose LAST
    field is ``current_agent_name='<name>'`` (read there only: message text earlier in the repr can
    contain anything)."""
    data = maybe_json(value) if isinstance(value, str) else value
    event = data.get("ev") if isinstance(data, Mapping) else None
    if not isinstance(event, str) or len(event) > _MAX_REPR or not event.endswith(")"):
        return
    at = event.rfind(_AGENT_FIELD)
    if at <= 0 or event[at - 2 : at] != ", ":
        return
    name = _python_string(event, at + len(_AGENT_FIELD), closes=")")
    if name is not None:
        _hints(facts).step_agent = name


# -- CrewAI ------------------------------------------------------------------------------------------------
_MAX_TOOL_NAME = 64


def crewai_tool_name(name: str) -> str:
    """The name CrewAI 1.x gives a tool in the model's request (``sanitize_tool_name``): ASCII-folded,
    camelCase split with ``_``, lower case, quotes dropped, every other run of non-alphanumerics one
    ``_``, trimmed; past 64 characters cut and suffixed with ``_`` + 8 hex digits of its SHA-256."""
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"([a-z])([A-Z])", r"\1_\2", text)
    text = re.sub(r"['\"]+", "", text.lower())
    text = re.sub(r"[^a-z0-9]+", "_", text).strip("_")
    if len(text) > _MAX_TOOL_NAME:
        import hashlib  # rare (a name past 64 characters): not on the span processor's import path

        suffix = "_" + hashlib.sha256(text.encode()).hexdigest()[:8]
        text = text[: _MAX_TOOL_NAME - len(suffix)].rstrip("_") + suffix
    return text


def crewai_called_name(description: Any) -> str | None:
    """The name the model calls a CrewAI tool by: first line of its LLM-facing description
    (``"Tool Name: <name>\\nTool Arguments: …"``, CrewAI's ``formatted_description``)."""
    if not isinstance(description, str) or not description.startswith("Tool Name: "):
        return None
    line = description[len("Tool Name: ") :].split("\n", 1)[0].strip()
    return line or None


def _definitions(names: list[str]) -> list[ToolRecord]:
    seen: dict[str, ToolRecord] = {}
    for name in names:
        called = crewai_tool_name(name)
        if called and called not in seen:
            seen[called] = ToolRecord(called)
    return list(seen.values())


def crewai_agent_tools(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """A CrewAI AGENT span's ``input.value`` (the arguments of ``Agent._execute_core``): ``tools`` are
    the tools this execution was given — the agent's own plus CrewAI's coworker tools when it may
    delegate — each as its pydantic ``str()``, ``name='<display name>' description=…``."""
    data = maybe_json(value) if isinstance(value, str) else value
    tools = data.get("tools") if isinstance(data, Mapping) else None
    if not isinstance(tools, list) or facts.tools:
        return
    names = []
    for entry in tools:
        if isinstance(entry, str) and entry.startswith("name=") and len(entry) <= _MAX_REPR:
            name = _python_string(entry, len("name="))
            if name is not None:
                names.append(name)
    facts.tools = [*facts.tools, *_definitions(names)]


def crewai_task_output(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """A CrewAI AGENT span's ``output.value`` (the TaskOutput JSON): the task's ``description`` is the
    user's request (the model only sees CrewAI's "Current Task: …" prompt), ``raw`` the answer, and
    ``messages`` the agent's conversation — the calls the model requested there, with their ids, are
    the run's requested calls when no model span reports any (no LLM instrumentation)."""
    data = maybe_json(value) if isinstance(value, str) else value
    if not isinstance(data, Mapping):
        return
    description = data.get("description")
    if facts.user_query is None and isinstance(description, str) and description.strip():
        facts.user_query = description
    raw = data.get("raw")
    if facts.final_output is None and isinstance(raw, str) and raw.strip():
        facts.final_output = raw
    messages = data.get("messages")
    if isinstance(messages, list):
        _absorb_output(facts, parse_messages(messages, opts.max_calls_per_run), opts, fallback=True)


def crewai_hosted_run(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """The arguments of CrewAI's coworker tools (``delegate_work_to_coworker(task, context, coworker)``,
    ``ask_question_to_coworker(question, context, coworker)``): the coworker's work runs inside the
    tool's span with no agent span of its own — a run of the agent named ``coworker``, asked ``task``
    / ``question``."""
    data = maybe_json(value) if isinstance(value, str) else value
    if not isinstance(data, Mapping):
        return
    coworker = data.get("coworker")
    request = data.get("task", data.get("question"))
    if not isinstance(coworker, str) or not coworker.strip() or not isinstance(request, str):
        return
    hints = _hints(facts)
    hints.hosted_agent = coworker.strip()
    hints.hosted_query = request if opts.capture_content else None


def crewai_roster(facts: SpanFacts, value: Any, opts: ExtractOptions) -> None:
    """The kickoff span's ``crew_agents``: each agent's ``role`` and ``tools_names`` (display names,
    case-folded by the instrumentation), for runs that record no tool list of their own."""
    data = load_json(value) if isinstance(value, str) else value
    if not isinstance(data, list):
        return
    roster: dict[str, list[ToolRecord]] = {}
    for agent in data:
        if isinstance(agent, Mapping) and isinstance(agent.get("role"), str):
            names = agent.get("tools_names")
            roster[agent["role"]] = _definitions([n for n in names if isinstance(n, str)] if isinstance(names, list) else [])
    if roster:
        _hints(facts).roster = roster
