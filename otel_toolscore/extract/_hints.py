"""Framework facts about *runs* that a span carries without being an agent span itself.

Some frameworks record an agent's run without a span that bounds it; the span that does carry the
fact is a step, a tool or a crew span. :class:`RunHints` holds those facts (on
``SpanFacts.hints``, ``None`` for nearly every span) until :mod:`._assemble` turns them into runs:

* ``step_agent`` — LlamaIndex workflow agents have no span per agent; each workflow step's event
  names the agent it runs as (``current_agent_name``). Consecutive steps of one agent are its run;
  an ``AgentWorkflow`` handing off to another agent starts the next run.
* ``hosted_agent`` / ``hosted_query`` — a tool that runs another agent inside its own span, with no
  agent span of its own (CrewAI's coworker tools: the coworker named in the ``coworker`` argument does
  the delegated ``task`` / ``question``). The tool span is a call of the calling agent *and* the root
  of the coworker's nested run, whose answer is the tool's result.
* ``roster`` — the tools of each agent of a crew, by agent name (CrewAI's kickoff ``crew_agents``),
  for runs that record no tool list of their own (a coworker's hosted run).
* ``workflow_step`` — the span is a step of a workflow (Mastra ``workflow_step``): a call when the
  workflow runs as a tool of an agent, nothing otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..run_records import ToolRecord

__all__ = ["RunHints"]


@dataclass(slots=True)
class RunHints:
    step_agent: str | None = None
    hosted_agent: str | None = None
    hosted_query: str | None = None
    roster: dict[str, list[ToolRecord]] | None = None
    workflow_step: bool = False
