"""Nesting runs that frameworks start side by side: handoffs and agents run beside their tool.

Handed-off-to agents (openai-agents, ADK ``transfer_to_agent``, Strands swarms, langgraph-supervisor)
and, in OpenLLMetry's openai-agents, agents used as tools start as *siblings* of the agent that called
them. Truth for the corpus (and what a reader expects) is that they are that agent's children.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..model import AgentRun, ToolCall

__all__ = ["reparent_handoffs"]


def _handoff_target(call: ToolCall) -> str | None:
    args = call.arguments
    if isinstance(args, Mapping) and isinstance(args.get("agent_name"), str):
        return str(args["agent_name"])  # ADK transfer_to_agent(agent_name=...)
    if call.name.startswith("transfer_to_") and call.name != "transfer_to_agent":
        return call.name[len("transfer_to_") :]
    return None


def reparent_handoffs(
    runs: list[AgentRun],
    handoff_spans: list[tuple[str | None, str | None, str | None, int]],
    times: Mapping[str, tuple[int, int]],
) -> None:
    """Frameworks start a handed-off-to agent (and, in OpenLLMetry's openai-agents, an agent used as
    a tool) *beside* the agent that called it. Such a run becomes the caller's child when:

    * the caller made a handoff call naming it (``transfer_to_<name>``, ``agent_name`` argument) or a
      generic one whose target was redacted (then: the next sibling agent);
    * a handoff span names the source (enclosing run or ``from_agent``) and the target (or none:
      the next sibling agent starting after the span);
    * the run starts and ends inside one of a sibling run's tool calls.
    """
    by_id = {r.run_id: r for r in runs}

    def next_sibling(source: AgentRun, target: str | None, after: int = 0) -> AgentRun | None:
        for later in runs[runs.index(source) + 1 :]:
            if later.parent_run_id != source.parent_run_id or later.run_id == source.run_id:
                continue
            if times.get(later.run_id, (0, 0))[0] < after:
                continue
            if target is None or later.agent_name == target:
                return later
        return None

    moves: list[tuple[AgentRun, AgentRun]] = []
    for run in runs:
        for call in run.tool_calls:
            if call.kind != "framework":
                continue
            target = _handoff_target(call)
            generic = call.name in ("transfer_to_agent", "handoff_to_agent")
            if target or generic:
                hit = next_sibling(run, target)
                if hit is not None:
                    moves.append((run, hit))
    for src_id, from_name, to_name, at in handoff_spans:
        source = by_id.get(src_id) if src_id else None
        if source is None and from_name:
            source = next((r for r in runs if r.agent_name == from_name and times.get(r.run_id, (0, 0))[0] <= at), None)
        if source is not None:
            hit = next_sibling(source, to_name, after=at)
            if hit is not None:
                moves.append((source, hit))
    for run in runs:
        start, end = times.get(run.run_id, (0, 0))
        if not start:
            continue
        for other in runs:
            if other is run or other.parent_run_id != run.parent_run_id:
                continue
            if any(
                # a tool call still open (live, its span has not ended) contains whatever started in it
                c.source == "span" and c.start_time_unix_nano and c.start_time_unix_nano <= start
                and (not c.end_time_unix_nano or end <= c.end_time_unix_nano)
                for c in other.tool_calls
            ):
                moves.append((other, run))
                break
    for source, child in moves:
        if child.parent_run_id == source.parent_run_id and child is not source:
            child.parent_run_id = source.run_id
