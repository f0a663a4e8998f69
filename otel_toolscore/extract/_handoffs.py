"""Nesting runs that frameworks start side by side: handoffs and agents run beside their tool.

Handed-off-to agents (openai-agents, ADK ``transfer_to_agent``, Strands swarms, langgraph-supervisor)
and, in OpenLLMetry's openai-agents, agents used as tools start as *siblings* of the agent that called
them. Truth for the corpus (and what a reader expects) is that they are that agent's children.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..run_records import CallRecord as ToolCall
from ..run_records import RunRecord as AgentRun

__all__ = ["reparent_handoffs"]


def _handoff_target(call: ToolCall) -> str | None:
    args = call.arguments
    if isinstance(args, Mapping) and isinstance(args.get("agent_name"), str):
        return str(args["agent_name"])  # ADK transfer_to_agent(agent_name=...)
    if call.name.startswith("transfer_to_") and call.name != "transfer_to_agent":
        return call.name[len("transfer_to_") :]
    return None


#: Pairwise comparisons of runs (and their calls) one trace may cost these rules.
_PAIR_BUDGET = 200_000


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
    position = {id(r): i for i, r in enumerate(runs)}
    # Real traces hold a handful of runs; a malformed one (thousands of agent spans in a ring) must
    # not turn these pairwise rules quadratic: past the budget, the remaining rules are not applied.
    budget = [_PAIR_BUDGET]

    def spend(n: int) -> bool:
        budget[0] -= n
        return budget[0] >= 0

    def next_sibling(source: AgentRun, target: str | None, after: int = 0) -> AgentRun | None:
        later_runs = runs[position[id(source)] + 1 :]
        if not spend(len(later_runs)):
            return None
        for later in later_runs:
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
        if not spend(sum(len(o.tool_calls) + 1 for o in runs) if len(runs) > 64 else len(runs)):
            break
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
