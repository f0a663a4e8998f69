"""Runs and calls that frameworks record without the span that would normally show them.

:mod:`._assemble` bounds runs by agent spans and reads calls from tool spans. Some frameworks leave one
of the two out; the span that carries the fact instead holds :class:`~._hints.RunHints`:

* **Workflow steps** (Mastra): a tool used as a workflow step gets a ``workflow_step`` span and no
  ``execute_tool`` span. Inside a workflow that an agent ran as a tool, each step is a call of the
  agent's run (after the workflow call, in start order) and the workflow tool itself is a framework
  call (its steps are the work). A workflow run on its own, outside any agent's tool call, is no
  agent run and its steps are no calls. Mastra's spans do not tell a step made from a tool
  (``createStep(tool)``) from one made from a function: both are calls named by step id.
* **Hosted runs** (CrewAI's coworker tools): the coworker's work runs inside the tool span, with no
  agent span. When a model or tool span ran inside it, that tool span is a call of the delegating
  agent's run *and* the root of the coworker's run (named by the ``coworker`` argument, matched to
  the crew's roles as CrewAI matches them: blanks collapsed, quotes dropped, case folded; its request
  is the delegated task, its answer the tool's result; its tools are the crew roster's when no model
  span lists them).
* **Step agents** (LlamaIndex ``AgentWorkflow`` / ``FunctionAgent``): no span per agent; each workflow
  step names the agent it runs as. A run whose steps name one agent is that agent's; when the name
  changes (a handoff), the steps from the first step of the next agent on are that agent's run,
  rooted at that step's span, beside the first (same parent).
* **Calls answered by a nested run** (smolagents' managed agents run through ``__call__``, no tool
  span): a requested call with no tool span whose name is the name of an agent run nested in the
  calling run is that run's invocation: ``ok`` unless the nested run's root span ended in error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ..run_records import RunRecord as AgentRun
from ..run_records import ToolRecord
from ._facts import SpanFacts

__all__ = [
    "RunFacts",
    "answer_calls_from_nested_runs",
    "hosted_root",
    "hosting_tools",
    "settle_workflow_steps",
    "split_by_step_agent",
    "step_agent",
]

#: Parent links followed when looking for an enclosing tool or crew span (real nesting is shallow).
_MAX_HOPS = 64


class RunFacts:
    """The facts of one run, by role, while a trace is assembled."""

    __slots__ = ("agent_facts", "llm_spans", "other_facts", "root", "tool_facts")

    def __init__(self, root: str) -> None:
        self.root = root
        self.agent_facts: list[SpanFacts] = []
        self.tool_facts: list[SpanFacts] = []
        self.llm_spans: dict[str, list[SpanFacts]] = {}
        self.other_facts: list[SpanFacts] = []


def _ancestors(span_id: str, parent_of: Callable[[str], str | None]) -> Iterable[str]:
    cur = parent_of(span_id)
    for _ in range(_MAX_HOPS):
        if cur is None:
            return
        yield cur
        cur = parent_of(cur)


def settle_workflow_steps(
    by_span: Mapping[str, list[SpanFacts]], roles: dict[str, str], parent_of: Callable[[str], str | None]
) -> None:
    """Workflow steps stay calls only inside a tool call (whose call becomes ``framework``); others
    become ``other`` spans. ``roles`` (span id → role) is updated in place."""
    for span_id, fs in by_span.items():
        if roles.get(span_id) != "tool" or not any(f.hints is not None and f.hints.workflow_step for f in fs):
            continue
        host = None
        for anc in _ancestors(span_id, parent_of):
            role = roles.get(anc)
            if role == "tool" and not any(f.hints is not None and f.hints.workflow_step for f in by_span[anc]):
                host = anc
                break
            if role == "agent":
                break
        if host is None:
            roles[span_id] = "other"
            continue
        for f in by_span[host]:
            if f.call is not None:
                f.call.kind = "framework"


def hosting_tools(
    by_span: Mapping[str, list[SpanFacts]], roles: Mapping[str, str], parent_of: Callable[[str], str | None]
) -> set[str]:
    """Tool spans that host a run: they name an agent (``hosted_agent``) and a model or tool span ran
    inside them (a coworker CrewAI could not find answers with an error text and runs nothing)."""
    candidates = {s for s, fs in by_span.items() if roles.get(s) == "tool" and any(
        f.hints is not None and f.hints.hosted_agent for f in fs)}
    if not candidates:
        return set()
    hosts: set[str] = set()
    for span_id in by_span:
        if roles.get(span_id) in ("tool", "llm"):
            hit = next((a for a in _ancestors(span_id, parent_of) if a in candidates), None)
            if hit is not None:
                hosts.add(hit)
    return hosts


def _crew_role_key(name: str) -> str:
    """How CrewAI compares a coworker argument with the agents' roles: blanks collapsed, quotes
    removed, case-folded."""
    return " ".join(name.split()).replace('"', "").casefold()


def hosted_root(
    fs: list[SpanFacts], by_span: Mapping[str, list[SpanFacts]], parent_of: Callable[[str], str | None]
) -> SpanFacts | None:
    """The root facts of the run a tool span hosts (see the module docstring), or ``None``."""
    tool = next((f for f in fs if f.hints is not None and f.hints.hosted_agent), None)
    if tool is None or tool.hints is None or tool.hints.hosted_agent is None:
        return None
    name = tool.hints.hosted_agent
    tools: list[ToolRecord] = []
    for anc in _ancestors(tool.span_id, parent_of):
        roster = next((f.hints.roster for f in by_span.get(anc, ()) if f.hints is not None and f.hints.roster), None)
        if roster is not None:
            wanted = _crew_role_key(name)
            role = next((r for r in roster if _crew_role_key(r) == wanted), None)
            if role is not None:
                name, tools = role, roster[role]
            break
    result = tool.call.result if tool.call is not None else None
    root = SpanFacts(
        tool.trace_id,
        tool.span_id,
        tool.parent_span_id,
        "agent",
        name=tool.name,
        conventions=tool.conventions,
        start_time_unix_nano=tool.start_time_unix_nano,
        end_time_unix_nano=tool.end_time_unix_nano,
        agent_name=name,
        user_query=tool.hints.hosted_query,
        final_output=result if isinstance(result, str) and result.strip() else None,
        materialized=True,
    )
    root.tools = list(tools)
    return root


def split_by_step_agent(run: RunFacts) -> list[RunFacts]:
    """``run`` cut where the agent its workflow steps run as changes (LlamaIndex handoffs); the first
    part keeps the root span, each later part is rooted at its first step's span."""
    markers = sorted(
        (f for f in run.other_facts if f.hints is not None and f.hints.step_agent),
        key=lambda f: (f.start_time_unix_nano, f.span_id),
    )
    cuts: list[tuple[int, str]] = []  # (start of the part, its root span)
    current = None
    for f in markers:
        name = f.hints.step_agent if f.hints is not None else None
        if current is not None and name != current:
            cuts.append((f.start_time_unix_nano, f.span_id))
        current = name
    if not cuts:
        return [run]
    parts = [run, *(RunFacts(span) for _, span in cuts)]

    def part(f: SpanFacts) -> RunFacts:
        index = 0
        for n, (start, _) in enumerate(cuts, 1):
            if f.start_time_unix_nano >= start:
                index = n
        return parts[index]

    tool_facts, other_facts, llm_spans = run.tool_facts, run.other_facts, run.llm_spans
    run.tool_facts, run.other_facts, run.llm_spans = [], [], {}
    for f in tool_facts:
        part(f).tool_facts.append(f)
    for f in other_facts:
        part(f).other_facts.append(f)
    for group, fs in llm_spans.items():
        part(fs[0]).llm_spans[group] = fs
    return parts


def step_agent(run: RunFacts) -> str | None:
    """The agent the run's earliest named workflow step runs as."""
    named = [f for f in run.other_facts if f.hints is not None and f.hints.step_agent]
    if not named:
        return None
    first = min(named, key=lambda f: (f.start_time_unix_nano, f.span_id))
    return first.hints.step_agent if first.hints is not None else None


def answer_calls_from_nested_runs(runs: list[AgentRun], failed_roots: set[str]) -> None:
    """Requested calls with no tool span, named like an agent run nested in the calling run, take
    their status from that run (``failed_roots``: root span ids that ended in error)."""
    children: dict[str, dict[str | None, list[AgentRun]]] = {}
    for run in runs:
        if run.parent_run_id is not None:
            children.setdefault(run.parent_run_id, {}).setdefault(run.agent_name, []).append(run)
    for run in runs:
        kids = children.get(run.run_id)
        if not kids:
            continue
        for call in run.tool_calls:
            if call.source != "requested" or not kids.get(call.name):
                continue
            nested = kids[call.name].pop(0)
            failed = nested.run_id in failed_roots
            call.status = "error" if failed else "ok"
            call.error_type = "agent_error" if failed else None
