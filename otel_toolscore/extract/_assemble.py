"""Facts of one trace → :class:`~otel_toolscore.model.AgentRun` s.

Rules (``docs/frameworks.md`` says which framework needs which), each grounded in a recorded corpus (``tests/corpus``):

* **Runs.** A run is bounded by an agent span (``role == "agent"``). Facts that no agent span
  encloses go to a run bounded by their local root span when the trace has no agent span at all (a
  hand-written loop over an instrumented client), or when they include tool calls (a LangGraph graph
  whose root is a CHAIN). An OpenInference CHAIN directly under a tool span is a nested graph's root.
* **Not runs.** An agent span directly inside an agent span of the same name is the same agent seen
  twice (OpenLLMetry's ``invoke_agent X`` → ``X.workflow``; ADK under OpenInference); an agent span that
  encloses other agents and has no name or no model/tool call of its own is a wrapper
  (openai-agents' ``Agent workflow``, Strands' swarm, an OpenLLMetry workflow).
* **Runs and calls without their usual span** (:mod:`._implicit_runs`): a tool span that runs a
  coworker agent inside it is also that agent's run (CrewAI); a run whose workflow steps name
  different agents is cut into one run per agent (LlamaIndex handoffs); workflow steps are calls
  only inside a workflow an agent ran as a tool (Mastra); a requested call answered by a nested run
  takes that run's status (smolagents' managed agents).
* **Membership.** Each fact belongs to the nearest enclosing run; nested runs get ``parent_run_id``.
  An agent span left empty whose sibling task span carries its name adopts that task's subtree
  (OpenLLMetry + LangGraph subgraphs). Handed-off-to agents become children of the agent that
  handed off (:mod:`._handoffs`).
* **Calls.** Executed calls come from tool spans. Requested calls come from model outputs (model spans
  and their log events; a model span nested in a model span is the same model call). An agent span's
  own output (AI SDK 7's root, ``pydantic_ai.all_messages``) is used only when no model span in the
  run reported requested calls. A model call that recorded its input but no output gets, as its
  requested calls, the calls that first appear in the next model call's input.
* **One call, seen twice.** A requested and an executed call are one call when their ids match; the
  remaining ones are paired by name and order within the run (among calls of one name, the span
  that ran the requested arguments first). Calls keep the model's order within one output (parallel
  tool spans start in any order); requested calls without a tool span still count, right after the
  call before them in the same output. A call the same span was given as input is history, never a
  new call.
* **Errors.** A requested-only call is ``status="error"`` when its result (read from a later model
  call's input) is an error report (``AI_NoSuchToolError: …``, ``Tool 'x' not found``, an
  ``error-text`` output), when a span's error status names it as not found, or when the run's tool
  list is known and does not contain it (``error_type="unknown_tool"``).
* ``run_id`` and ``root_span_id`` are the root span id (hex); ``attributes`` holds the root span's
  short scalar attributes (content keys excluded), for expectation rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

from ..run_records import CallRecord, RunRecord, ToolRecord
from ._content import requested_calls
from ._facts import (
    ANSWER_PARSERS,
    DEFAULT_OPTIONS,
    REQUEST_PARSERS,
    ExtractOptions,
    Requested,
    SpanFacts,
    parsers_within,
)
from ._handoffs import reparent_handoffs
from ._implicit_runs import (
    RunFacts,
    answer_calls_from_nested_runs,
    hosted_root,
    hosting_tools,
    settle_workflow_steps,
    split_by_step_agent,
    step_agent,
)
from ._values import RawCall

if TYPE_CHECKING:
    from ..model import AgentRun

__all__ = ["assemble_records", "assemble_runs", "lean_run", "single_run"]


def assemble_runs(
    facts: Iterable[SpanFacts],
    parents: Mapping[str, str | None],
    *,
    local_roots: Iterable[str] = (),
    options: ExtractOptions | None = None,
) -> list[AgentRun]:
    """Turn the facts of ONE trace into runs (see the module docstring for the rules).

    ``parents`` maps span id → parent span id for every span seen in the trace, including spans that
    gave no facts, so the nearest enclosing run is found through intermediate spans. ``local_roots``
    names spans to treat as roots even though they have a parent (a remote parent, live).
    """
    return [r.to_model() for r in assemble_records(facts, parents, local_roots=local_roots, options=options)]


def assemble_records(
    facts: Iterable[SpanFacts],
    parents: Mapping[str, str | None],
    *,
    local_roots: Iterable[str] = (),
    options: ExtractOptions | None = None,
) -> list[RunRecord]:
    """:func:`assemble_runs` as :class:`~otel_toolscore.run_records.RunRecord` s (no model built)."""
    facts = facts if isinstance(facts, (list, tuple)) else list(facts)
    stops = local_roots if isinstance(local_roots, (set, frozenset)) else set(local_roots)
    opts = options or DEFAULT_OPTIONS
    lean = lean_run(facts, parents, stops, opts)
    if lean is not None:
        return lean
    for f in facts:
        f.materialize(opts)
    if needs_inputs(facts, content=opts.capture_content, parents=parents, local_roots=stops):
        for f in facts:
            if f.deferred and not parsers_within(f.deferred, REQUEST_PARSERS, ANSWER_PARSERS):
                # a request and an answer alone wait for _first_query / _first_answer (most chains)
                f.materialize_inputs(opts)
    single = single_run(facts, parents, stops, opts)
    return single if single is not None else _assemble(facts, parents, stops, opts)


def needs_inputs(
    facts: Sequence[SpanFacts],
    *,
    content: bool = False,
    parents: Mapping[str, str | None] | None = None,
    local_roots: Container[str] = (),
) -> bool:
    """Whether the input content left unparsed (:data:`~._facts.INPUT_PARSERS`) can change this trace's
    runs: only a call the model requested that no tool span ran (it may be history echoed back, or
    take its result and status from a later model call's input), and a model call that recorded no
    output (its calls are read from the next call's input) are decided by what the model was given.
    Everything else — the usual trace, every requested call ran — is read from outputs and tool spans.

    A requested call counts as run when a tool span has its id, or when tool spans not claimed by an
    id ran at least as many calls of its name (the general rules pair those by name and order). With
    ``content`` (content captured) only a tool span runs a call: one a LangGraph ``tools`` task was
    given but no tool span ran (an unknown tool) takes its result from a later model call's input.

    A model call is one group of model spans (a model span inside a model span joins the outer one:
    ``_Trace.llm_group``): a model span that shows no output is no silent model call when, with
    ``parents`` given, the span around it or one inside it (a Strands event-loop cycle and its chat
    span, ADK's call_llm and generate_content) or its own log records reported the output; nor is the
    trace's last model call (a final answer whose text was not recorded): no later input holds calls
    it could have asked for (``_fill_unreported_outputs`` reads a call's output from the next one's)."""
    if not any(f.deferred for f in facts):  # materialized: what is left is input content (and answers)
        return False
    ran: set[str] = set()
    by_name: dict[str, int] = {}
    for f in facts:
        call = f.call
        if call is not None:
            if call.call_id:
                ran.add(call.call_id)
            by_name[call.name] = by_name.get(call.name, 0) + 1
        if not content and f.context_call is not None and f.context_call.call_id:
            ran.add(f.context_call.call_id)
    unclaimed: dict[str, int] | None = None
    reported: set[str] | None = None
    last: str | None = None
    for f in facts:
        if f.role == "llm" and not f.from_log and not f.requested and not f.saw_output:
            if parents is None:
                return True
            if reported is None:
                reported = _reporting_model_spans(facts, parents, local_roots)
            sid = f.span_id
            if sid not in reported and (sid in local_roots or parents.get(sid) not in reported):
                if last is None:
                    last = _last_model_call(facts)
                if last != sid:
                    return True  # a model call that recorded no output: its calls are read from the next one's input
                # The trace's last model call (its answer, the content not recorded): no input comes after
                # it. (A group of model spans that reported nothing has a member that is not last.)
        for req in (*f.requested, *f.requested_fallback):
            if req.call_id and req.call_id in ran:
                continue
            if unclaimed is None:  # calls of each name whose ids no request names
                unclaimed = dict(by_name)
                for g in facts:
                    for r in (*g.requested, *g.requested_fallback):
                        c = r.call_id
                        if c and c in ran and r.name in unclaimed:
                            unclaimed[r.name] -= 1
            left = unclaimed.get(req.name, 0)
            if left <= 0:
                return True
            unclaimed[req.name] = left - 1
    return False


def _last_model_call(facts: Sequence[SpanFacts]) -> str:
    """The span of the model call that starts after every other model span and log record of the
    trace (``""`` when none starts strictly last: two at the same time)."""
    top = -1
    span = ""
    for f in facts:
        if f.role == "llm":
            start = f.start_time_unix_nano
            if start > top:
                top, span = start, f.span_id
            elif start == top and f.span_id != span:
                span = ""
    return span


def _reporting_model_spans(
    facts: Sequence[SpanFacts], parents: Mapping[str, str | None], local_roots: Container[str]
) -> set[str]:
    """The model spans whose model call reported its output: a model span inside a model span joins
    it (``_Trace.llm_group``), so a silent outer span is found through its inner one."""
    role: dict[str, str] = {}
    for f in facts:
        if not f.from_log and f.span_id not in role:
            role[f.span_id] = f.role  # a span's role is its first span fact's (_span_role)
    reported: set[str] = set()
    for f in facts:
        sid = f.span_id
        if (f.requested or f.saw_output) and role.get(sid, "llm") == "llm":
            reported.add(sid)
            outer = parents.get(sid) if sid not in local_roots else None
            if outer is not None and role.get(outer) == "llm":
                reported.add(outer)
    return reported


class _Trace:
    """The indexes of one trace the general rules share: its facts by span, each span's role and
    parent (a forest), and the memoised walks up that forest (each link followed once per pool of
    roots: O(spans) per trace, however deep the chain)."""

    __slots__ = ("_chains", "_enclosing", "by_span", "parent_of", "role_by_span")

    def __init__(self, by_span: dict[str, list[SpanFacts]], parent: dict[str, str | None]) -> None:
        self.by_span = by_span
        self.parent_of = parent.get
        self.role_by_span = {s: _span_role(fs) for s, fs in by_span.items()}  # asked many times per span
        self._chains: dict[int, dict[str, tuple[str | None, bool]]] = {}
        self._enclosing: dict[str, tuple[str | None, str]] = {}

    def role_of(self, span_id: str) -> str:
        return self.role_by_span.get(span_id, "")

    def explicit_name(self, span_id: str) -> str | None:
        names = [f.agent_name for f in self.by_span.get(span_id, ()) if not f.from_log and f.agent_name]
        return names[0] if names else None

    def nearest_root(self, span_id: str, pool: set[str]) -> tuple[str | None, bool]:
        """(nearest enclosing root in ``pool``, whether a tool span lies between)."""
        parent_of = self.parent_of
        start = parent_of(span_id)
        if start is None:
            return None, False
        memo = self._chains.setdefault(id(pool), {})
        path: list[str] = []
        cur: str | None = start
        found: tuple[str | None, bool] = (None, False)
        while cur is not None:
            known = memo.get(cur)
            if known is not None:
                found = known
                break
            if cur in pool:
                found = (cur, False)
                memo[cur] = found
                break
            path.append(cur)
            cur = parent_of(cur)
        root, through = found
        for node in reversed(path):  # a node's answer: what is above it, and whether it is a tool
            through = through or self.role_of(node) == "tool"
            memo[node] = (root, through)
        return memo[start] if path else found

    def forget_walks(self, pool: set[str]) -> None:
        """Walks memoised against ``pool`` before it changed."""
        self._chains.pop(id(pool), None)

    def enclosing(self, roots: set[str], adopted: Mapping[str, str], span_id: str, include_self: bool) -> tuple[str | None, str]:
        """(nearest run root, topmost ancestor reached); ``roots`` and ``adopted`` are final when first asked."""
        start: str | None = span_id if include_self else self.parent_of(span_id)
        if start is None:
            return None, span_id
        memo = self._enclosing
        path: list[str] = []
        cur: str | None = start
        found: tuple[str | None, str] | None = None
        while cur is not None:
            known = memo.get(cur)
            if known is not None:
                found = known
                break
            if cur in roots:
                found = (cur, cur)
                break
            if cur in adopted:
                found = (adopted[cur], adopted[cur])
                break
            path.append(cur)
            cur = self.parent_of(cur)
        if found is None:
            found = (None, path[-1])
        for node in path:
            memo[node] = found
        return found

    def llm_group(self, span_id: str) -> str:
        """A model span inside another model span is the same model call (ADK's call_llm →
        generate_content): both land in the outer span's group, whose first report of calls wins."""
        parent = self.parent_of(span_id)
        return parent if parent is not None and self.role_of(span_id) == "llm" and self.role_of(parent) == "llm" else span_id


def _span_role(fs: list[SpanFacts]) -> str:
    for f in fs:
        if not f.from_log:
            return f.role
    return "llm"


def _assemble(
    facts: Sequence[SpanFacts], parents: Mapping[str, str | None], stops: Container[str], opts: ExtractOptions
) -> list[RunRecord]:
    """The general rules, one step per heading of the module docstring."""
    trace = _index(facts, parents, stops, opts)
    if trace is None:
        return []
    roots = _run_roots(trace)
    merged_into = _not_runs(trace, roots)
    hosts, adopted = _runs_without_their_span(trace, roots)
    runs = _membership(trace, roots, merged_into, hosts, adopted)
    return _calls_and_errors(trace, runs, roots, hosts, adopted, opts)


def _index(
    facts: Sequence[SpanFacts], parents: Mapping[str, str | None], stops: Container[str], opts: ExtractOptions
) -> _Trace | None:
    """The trace's facts by span (a tool span takes the call id and arguments its parent was given
    for it), its forest of parents, and workflow steps settled; ``None`` for a trace without span facts."""
    by_span: dict[str, list[SpanFacts]] = {}
    for f in facts:
        if not f.span_id:
            continue
        f.materialize(opts)
        by_span.setdefault(f.span_id, []).append(f)
    if not by_span:
        return None
    for fs in by_span.values():
        for f in fs:
            if f.call is not None and f.parent_span_id in by_span:
                ctx = next((p.context_call for p in by_span[f.parent_span_id] if p.context_call), None)
                if ctx is not None and ctx.name == f.call.name:
                    f.call.call_id = f.call.call_id or ctx.call_id
                    if opts.capture_content and isinstance(ctx.arguments, Mapping) and not isinstance(
                        f.call.arguments, Mapping
                    ):
                        f.call.arguments = ctx.arguments
    trace = _Trace(by_span, _parent_forest(parents, by_span, stops))
    settle_workflow_steps(by_span, trace.role_by_span, trace.parent_of)
    return trace


def _run_roots(trace: _Trace) -> set[str]:
    """**Runs.** Agent spans, and a nested graph's root under a tool span (LangGraph/openai-agents
    agent-as-tool via OpenInference)."""
    role_of, parent_of = trace.role_of, trace.parent_of
    roots = {s for s in trace.by_span if role_of(s) == "agent"}
    for s, fs in trace.by_span.items():
        p = parent_of(s)
        if role_of(s) == "other" and p is not None and role_of(p) == "tool" and any(
            "openinference" in f.conventions for f in fs
        ):
            roots.add(s)
    return roots


def _not_runs(trace: _Trace, roots: set[str]) -> dict[str, str]:
    """**Not runs.** Removes from ``roots`` the same agent seen twice in a row (OpenLLMetry:
    ``invoke_agent X`` → ``X.workflow``) and wrappers around agents (openai-agents' unnamed ``Agent
    workflow``); returns the merged ones (span → the run it is part of)."""
    nearest_root, explicit_name, role_of = trace.nearest_root, trace.explicit_name, trace.role_of
    outer_of = {r: nearest_root(r, roots) for r in roots}
    merged_into: dict[str, str] = {}
    for r, (outer, through_tool) in outer_of.items():
        name = explicit_name(r)
        if outer is not None and not through_tool and name is not None and name == explicit_name(outer):
            merged_into[r] = outer  # the same agent seen by two instrumentations/layers: one run
    drop = set(merged_into)
    kept = roots - drop
    enclosing_roots = {nearest_root(r, kept)[0] for r in kept} - {None}
    # roots that own a model call or a tool call themselves (not through a nested agent)
    owners = {nearest_root(s, kept)[0] for s in trace.by_span if s not in kept and role_of(s) in ("tool", "llm")}
    for r in kept:
        # A wrapper around agents is no agent: unnamed ("Agent workflow"), or a workflow span that
        # owns no model/tool call itself. (Ownership is judged for workflows only: live, an outer
        # agent's own spans may not have reached the assembler yet.)
        workflow = any(f.workflow for f in trace.by_span.get(r, ()))
        if r in enclosing_roots and (explicit_name(r) is None or (workflow and r not in owners)):
            drop.add(r)
    roots -= drop
    return merged_into


def _runs_without_their_span(trace: _Trace, roots: set[str]) -> tuple[set[str], dict[str, str]]:
    """**Runs and calls without their usual span.** Adds to ``roots`` the tool spans that host a run
    with no agent span (CrewAI's coworker tools: calls and roots at once); returns them, and the task
    spans an empty agent span adopts (OpenLLMetry's LangGraph: a nested graph's ``invoke_agent X``
    span stays empty and its work sits in the sibling task span ``X``)."""
    by_span, role_of, parent_of = trace.by_span, trace.role_of, trace.parent_of
    hosts = hosting_tools(by_span, trace.role_by_span, parent_of)
    roots |= hosts
    trace.forget_walks(roots)
    adopted: dict[str, str] = {}
    children: dict[str | None, list[str]] = {}
    for s in by_span:
        children.setdefault(parent_of(s), []).append(s)
    owned = {trace.nearest_root(s, roots)[0] for s in by_span if s not in roots and role_of(s) in ("tool", "llm")}
    for r in roots:
        name = trace.explicit_name(r)
        if name is None or r in owned:
            continue
        for sib in children.get(parent_of(r), ()):
            if sib != r and any(f.entity_name == name for f in by_span[sib]):
                adopted[sib] = r
    return hosts, adopted


def _membership(
    trace: _Trace, roots: set[str], merged_into: Mapping[str, str], hosts: set[str], adopted: Mapping[str, str]
) -> dict[str, RunFacts]:
    """**Membership.** Each span's facts go to the nearest enclosing run; facts no run encloses make
    a run of their local root when they hold calls (or when the trace has no agent span at all)."""
    role_of, llm_group = trace.role_of, trace.llm_group
    runs: dict[str, RunFacts] = {r: RunFacts(r) for r in roots}
    orphans: dict[str, list[tuple[str, list[SpanFacts]]]] = {}
    for span_id, fs in trace.by_span.items():
        host = hosted_root(fs, trace.by_span, trace.parent_of) if span_id in hosts else None
        if host is not None:
            runs[span_id].agent_facts.append(host)  # the hosted run's root; the span is a call outside it
        root, top = trace.enclosing(roots, adopted, span_id, include_self=host is None)
        if root is None:
            orphans.setdefault(top, []).append((span_id, fs))
            continue
        _place(runs[root], span_id, fs, role_of(span_id), merged=span_id in merged_into, group=llm_group(span_id))
    for top, groups in orphans.items():
        roles = {role_of(s) for s, _ in groups}
        has_calls = "tool" in roles or any(f.requested or f.requested_fallback for _, fs in groups for f in fs)
        if not (has_calls or (not roots and "llm" in roles)):
            continue
        run = runs.setdefault(top, RunFacts(top))
        for span_id, fs in groups:
            _place(run, span_id, fs, role_of(span_id), group=llm_group(span_id))
    return runs


def _calls_and_errors(
    trace: _Trace,
    runs: dict[str, RunFacts],
    roots: set[str],
    hosts: set[str],
    adopted: Mapping[str, str],
    opts: ExtractOptions,
) -> list[RunRecord]:
    """**Calls** and **Errors**, run by run (:func:`_build`), in start order; then handed-off-to agents
    become children of the agent that handed off, and requested calls answered by a nested run take
    that run's status."""
    by_span = trace.by_span

    def enclosing(span_id: str, include_self: bool) -> tuple[str | None, str]:
        return trace.enclosing(roots, adopted, span_id, include_self)

    out: list[tuple[int, RunRecord]] = []
    handoffs: list[tuple[str | None, str | None, str | None, int]] = []  # (source run, from, to, time)
    for s, fs in by_span.items():
        for f in fs:
            if f.handoff_to is not None or f.handoff_from is not None:
                src, _ = enclosing(s, include_self=False)
                handoffs.append((src, f.handoff_from, f.handoff_to, f.start_time_unix_nano))
    spans_of = {r: (min((f.start_time_unix_nano for f in run.agent_facts), default=0),
                    max((f.end_time_unix_nano for f in run.agent_facts), default=0)) for r, run in runs.items()}
    for root_id, whole in runs.items():
        parent_root, top = enclosing(root_id, include_self=False) if root_id in roots else (None, "")
        if root_id in hosts and any(f.tools for fs in whole.llm_spans.values() for f in fs):
            for f in whole.agent_facts:
                f.tools = []  # the tools the model was sent win over the crew roster
        for run in split_by_step_agent(whole):
            agent_run = _build(run, parent_root, opts)
            if run is whole and parent_root is None and top != root_id and top in by_span and top not in runs:
                _take_wrapper_request(agent_run, by_span[top], opts)
            start = min((f.start_time_unix_nano for f in run.agent_facts), default=0) or _first_start(run)
            out.append((start, agent_run))
    out.sort(key=lambda item: item[0])
    result = [r for _, r in out]
    reparent_handoffs(result, handoffs, spans_of)
    failed = {r.run_id for r in result if any(f.role == "agent" and f.status == "error" for f in by_span.get(r.run_id, ()))}
    answer_calls_from_nested_runs(result, failed)
    return result


def lean_run(
    facts: Sequence[SpanFacts], parents: Mapping[str, str | None], local_roots: Container[str], opts: ExtractOptions
) -> list[RunRecord] | None:
    """The commonest traces, in one pass, or ``None``: one run, with content not kept, bounded by

    * one agent span that is a root (no parent, or a local root) with model, tool and other spans
      under it; or
    * no agent span at all and one root span over every fact, the top of a graph (an OpenInference
      chain, say) with model and tool spans under it;

    where every call a model output asked for ran — a tool span with its call id, or else one of
    its name — and every model span shows its output (or no model was given earlier calls to read
    them from). For such a trace the general rules about nesting, wrappers, handoffs, hosted runs,
    history, results and unknown tools are void, and the run is the tool spans' calls in the
    model's order. Anything else goes to :func:`single_run` and the general rules
    (``tests/extract/test_fast_lane.py`` checks this lane against them)."""
    if opts.capture_content:
        return None
    root: SpanFacts | None = None
    for f in facts:
        if f.role == "agent":
            if root is not None:
                return None
            root = f
    if root is None:  # a graph's top: the one root span among the facts
        for f in facts:
            if f.span_id in local_roots or (f.span_id in parents and parents[f.span_id] is None):
                if root is not None or f.role != "other":
                    return None
                root = f
        if root is None:
            return None
    elif root.span_id not in local_roots and parents.get(root.span_id, _UNKNOWN) is not None:
        return None  # an agent under some other span: the general rules
    root_id = root.span_id
    if not root_id:
        return None
    if not root.plain and (
        not root.materialized
        or root.from_log
        or root.hints is not None
        or root.handoff_to is not None
        or root.handoff_from is not None
        or root.context_call is not None
        or root.error_message
        or root.requested
        or root.requested_fallback
    ):
        return None
    tool_facts: list[SpanFacts] = []
    llm_facts: list[SpanFacts] = []
    other_facts: list[SpanFacts] = []
    role_of = {root_id: root.role}
    for f in facts:
        if f is not root:
            sid = f.span_id
            if not sid or sid in role_of or sid in local_roots:
                return None
            if not f.plain and (
                not f.materialized
                or f.from_log
                or f.hints is not None
                or f.handoff_to is not None
                or f.handoff_from is not None
                or f.context_call is not None
                or f.error_message
                or f.requested_fallback
            ):
                return None
            role_of[sid] = f.role
    # every fact lies under the root, through spans that are not local roots (memoised walks)
    under = {root_id}
    bound = len(parents) + len(role_of)
    silent = inputs = False
    ran: dict[str, CallRecord] = {}
    for f in facts:
        if f is root:
            continue
        sid = f.span_id
        parent = parents.get(sid, f.parent_span_id)
        if parent not in under:
            path = [sid]
            cur = parent
            while cur not in under:
                if cur is None or cur in local_roots or len(path) > bound or cur in path:
                    return None  # outside the run, or a cycle
                path.append(cur)
                cur = parents.get(cur)
            under.update(path)
        else:
            under.add(sid)
        role = f.role
        prole = role_of.get(parent) if parent is not None else None
        if role == "tool":
            call = f.call
            if call is None:
                return None
            if call.call_id:
                if call.call_id in ran:
                    return None  # two spans ran one id: the general rules pair them
                ran[call.call_id] = call
            tool_facts.append(f)
        elif role == "llm":
            if prole == "llm":
                return None  # one model call seen twice: grouped by the general rules
            if not f.requested and not f.saw_output:
                silent = True  # its calls may be read from the next model call's input
            llm_facts.append(f)
        elif role == "other":
            if prole == "tool":
                return None  # a nested graph's root under a tool span: the general rules
            other_facts.append(f)
        else:
            return None
        if not f.plain and (f.deferred or f.history_calls):
            inputs = True
    if silent and (inputs or root.deferred or root.history_calls):
        return None  # a model call without output, and inputs to read its calls from: the general rules
    if root.role != "agent" and not tool_facts and not llm_facts:
        return None  # a graph's top bounds a run when calls or model calls lie under it
    if len(llm_facts) > 1:
        llm_facts.sort(key=_START_ORDER)
    executed = tool_facts
    if len(executed) > 1:
        executed = sorted(executed, key=_START_ORDER)
    # the requested calls of each model output, paired by id, then by name in start order
    rows: list[tuple[SpanFacts, list[CallRecord | None]]] = []
    matched: set[int] = set()
    seen: set[str] = set()
    unpaired = 0
    for llm in llm_facts:
        hits: list[CallRecord | None] = []
        for req in llm.requested:
            cid = req.call_id
            hit = None
            if cid:
                if cid in seen:
                    continue  # the same call listed again
                seen.add(cid)
                hit = ran.get(cid)
                if hit is not None:
                    matched.add(id(hit))
            if hit is None:
                unpaired += 1
            hits.append(hit)
        if hits:
            rows.append((llm, hits))
    if unpaired:
        leftovers: dict[str, list[CallRecord]] = {}
        for f in executed:
            c = f.call
            assert c is not None
            if id(c) not in matched:
                leftovers.setdefault(c.name, []).append(c)
        for llm, hits in rows:
            for pos, hit in enumerate(hits):
                if hit is None:
                    same = leftovers.get(llm.requested[pos].name) if len(hits) == len(llm.requested) else None
                    if not same:
                        return None  # requested and not run (or listed twice): the general rules
                    cand = same.pop(0)
                    matched.add(id(cand))
                    hits[pos] = cand
    calls: list[tuple[tuple[int, int], CallRecord]] = []
    placed: set[int] = set()
    for llm, hits in rows:
        row_time = llm.end_time_unix_nano or 0
        for hit in hits:
            assert hit is not None
            t = hit.start_time_unix_nano
            if t and (not row_time or t < row_time):
                row_time = t
        for pos, hit in enumerate(hits):
            assert hit is not None
            asked = llm.requested[pos] if len(hits) == len(llm.requested) else None
            if hit.call_id is None and asked is not None and asked.call_id is not None:
                hit.call_id = asked.call_id  # paired by name: the model's id is the call's
            placed.add(id(hit))
            calls.append(((row_time, pos + 1), hit))
    for f in executed:
        c = f.call
        assert c is not None
        if id(c) not in placed:
            calls.append(((c.start_time_unix_nano or 0, 0), c))
    if len(calls) > 1:
        calls.sort(key=_call_order)
    if opts.include_framework_calls:
        tool_calls = [c for _, c in calls]
    else:
        tool_calls = [c for _, c in calls if c.kind != "framework"]
    if len(tool_calls) > opts.max_calls_per_run:
        tool_calls = tool_calls[: opts.max_calls_per_run]
    inner = [*tool_facts, *llm_facts, *other_facts]
    agent_name = root.agent_name or _first_of(inner, "agent_name")
    if agent_name is None and "openinference" in root.conventions:
        agent_name = root.name or None  # what _build reads for an OpenInference root
    conventions = list(root.conventions)
    last = root.conventions
    for f in inner:
        if f.conventions is last:
            continue
        last = f.conventions
        for conv in last:
            if conv not in conventions:
                conventions.append(conv)
    tools = root.tools or _first_of(llm_facts, "tools") or ()
    return [
        RunRecord(
            root_id,
            root.trace_id or _first_of(inner, "trace_id") or None,
            root_id,
            None,
            agent_name,
            root.conversation_id or _first_of(inner, "conversation_id"),
            conventions,
            None,
            None,
            list(tools),
            tool_calls,
            dict(root.attributes) if root.attributes else {},
        )
    ]


def single_run(
    facts: Sequence[SpanFacts], parents: Mapping[str, str | None], local_roots: Container[str], opts: ExtractOptions
) -> list[RunRecord] | None:
    """:func:`assemble_runs` for the commonest traces in one pass, or ``None`` for any other trace.

    The commonest traces hold one run, read from span attributes alone (no log records, handoffs, hints
    or context calls): one agent span and the model, tool and other spans it encloses, beside spans of
    no call outside it (a wrapper above it, whose request is the user's, as the general rules read it);
    or no agent span at all and one top span over every fact (a graph's CHAIN root, a hand-written
    loop). A second agent span is taken where the general rules make one run of the two (**Not runs**):
    the same agent seen twice, one directly inside the other (one more fact of the run's root), or an
    unnamed or workflow agent span around the run's agent holding no call of its own (a wrapper). A
    model span inside a model span joins the outer one's model call. For them every rule of
    :func:`assemble_runs` about nesting, hosted runs, adopted tasks and handoffs is void, and only
    :func:`_build` (shared) has work to do. Any fact outside those shapes — a third agent, two runs, a
    model or tool span outside the agent, a task outside it that an empty agent may adopt, a fact under
    a second top without an agent, a nested graph root under a tool span, a parent cycle on the way —
    returns ``None`` and the general rules run (``tests/extract/test_fast_lane.py`` checks both give the
    same runs).
    """
    for f in facts:
        if not f.materialized:
            f.materialize(opts)  # content parsers may add hints and context calls: look after them
    root: SpanFacts | None = None
    second: SpanFacts | None = None  # a second agent span: the same agent seen twice, or a wrapper
    by_span: dict[str, SpanFacts] = {}
    for f in facts:
        if (
            f.from_log
            or f.hints is not None
            or f.handoff_to is not None
            or f.handoff_from is not None
            or f.context_call is not None
            or f.role not in _SIMPLE_ROLES
            or not f.span_id
            or f.span_id in by_span
        ):
            return None
        if f.role == "agent":
            if root is None:
                root = f
            elif second is None:
                second = f
            else:
                return None
        by_span[f.span_id] = f
    if not by_span:
        return None
    bound = len(parents) + len(by_span)

    def parent_of(span_id: str) -> str | None:
        if span_id in local_roots:
            return None
        parent = parents.get(span_id, _UNKNOWN)
        if parent is not _UNKNOWN:
            return parent  # type: ignore[return-value]
        known = by_span.get(span_id)
        return known.parent_span_id if known is not None else None

    top_of: dict[str, str] = {}

    def top(span_id: str) -> str | None:
        """The topmost span above ``span_id`` (itself when it has no parent); ``None`` on a cycle."""
        path: list[str] = []
        on_path: set[str] = set()
        cur = span_id
        while True:
            known = top_of.get(cur)
            if known is not None:
                found = known
                break
            if cur in on_path or len(path) > bound:
                return None
            path.append(cur)
            on_path.add(cur)
            parent = parent_of(cur)
            if parent is None:
                found = cur
                break
            cur = parent
        for node in path:
            top_of[node] = found
        return found

    merged: SpanFacts | None = None  # an agent span inside the run's of the same name: one run
    wrapper: SpanFacts | None = None  # an agent span around the run's that is no run of its own
    if second is not None:
        assert root is not None
        pair = _outer_and_inner(root, second, parent_of, by_span, bound)
        if pair is None:
            return None  # two runs, or nested through a tool span (an agent run as a tool)
        outer, inner = pair
        name = inner.agent_name or None
        if name is not None and name == (outer.agent_name or None):
            root, merged = outer, inner  # the same agent seen by two layers (OpenLLMetry, ADK via OpenInference)
        elif not outer.agent_name or outer.workflow:
            # an unnamed wrapper (openai-agents' "Agent workflow"), or a workflow span, which is no run
            # when it owns no model or tool call itself: the run is the inner agent's, and the
            # wrapper must hold no call (checked as a fact outside the run, below)
            root, wrapper = inner, outer
        else:
            return None  # a named agent around another: two runs
    roles_seen: set[str] = set()
    firsts: list[str | None] = []
    groups: dict[str, str] | None = None  # a model span inside a model span → the outer one
    for f in facts:
        first = parent_of(f.span_id)
        firsts.append(first)
        above = by_span.get(first) if first is not None else None
        if above is not None:
            if f.role == "llm" and above.role == "llm":
                # one model call seen twice (ADK's call_llm → generate_content, Strands' cycle → chat):
                # the inner span joins the outer one's group, as llm_group puts it
                if groups is None:
                    groups = {}
                groups[f.span_id] = above.span_id
            elif f.role == "other" and above.role == "tool" and "openinference" in f.conventions:
                return None  # a nested graph's root: the general rules
        roles_seen.add(f.role)
    outside: dict[str, SpanFacts] = {}  # facts outside the agent's run: spans that hold no call (skipped)
    root_top: str | None = None
    if root is not None:
        root_id = root.span_id
        root_top = top(root_id)
        if root_top is None:
            return None  # a cycle above the agent would be cut below it
        inside = {root_id}  # spans known to lie under the agent
        for f, first in zip(facts, firsts):
            if f is root:
                continue
            if first == root_id:  # the commonest case: a child of the agent span
                inside.add(f.span_id)
                continue
            path = [f.span_id]
            on_path = {f.span_id}
            cur = first
            while cur not in inside:
                if cur is None or cur in local_roots:
                    break  # outside the agent's run
                if cur in on_path or len(path) > bound:
                    return None  # a cycle
                path.append(cur)
                on_path.add(cur)
                cur = parent_of(cur)
            else:
                inside.update(path)
                continue
            # (the walk reached no cycle: it ended at the top or at a local root)
            if (f.role != "other" and f is not wrapper) or f.requested or f.requested_fallback or f.entity_name:
                # a model or tool span outside the agent (its own run), a task an empty agent may
                # adopt (OpenLLMetry's LangGraph): the general rules
                return None
            outside[f.span_id] = f  # a wrapper's or a sibling's span without calls: no run of its own
    else:
        # No agent span: the facts under one top are a run when they show a call or a model call.
        tops = {top(f.span_id) for f in facts}
        only = tops.pop() if len(tops) == 1 else None
        if only is None or not ({"tool", "llm"} & roles_seen):
            return None
        root_id = only
    run = RunFacts(root_id)
    llm_spans = run.llm_spans
    for f in facts:  # what _place does with one fact per span and no log record
        role = f.role
        if (f.span_id == root_id and role in ("agent", "other")) or f is merged:
            run.agent_facts.append(f)
        elif role == "tool":
            if f.call is not None:
                run.tool_facts.append(f)
        elif role == "llm":
            group = groups.get(f.span_id, f.span_id) if groups is not None else f.span_id
            held = llm_spans.get(group)
            if held is None:
                llm_spans[group] = [f]
            else:
                held.append(f)
        elif not outside or f.span_id not in outside:
            run.other_facts.append(f)
    record = _build(run, None, opts)
    above = outside.get(root_top) if outside and root_top is not None else None
    if above is not None:  # the topmost span above the agent, of no run: as _calls_and_errors reads it
        _take_wrapper_request(record, (above,), opts)
    return [record]


def _take_wrapper_request(record: RunRecord, wrapper: Iterable[SpanFacts], opts: ExtractOptions) -> None:
    """A wrapper that is no run (ADK's invocation, Strands' invoke_swarm) holds the user's own words;
    the agent inside only sees a framework-built prompt ("Context: … User Request: …"): its request is
    the run's. Its input is parsed only when content is kept (the request is dropped otherwise)."""
    if opts.capture_content:
        query = _first_query(wrapper, opts)
        if query:
            record.user_query = query


def _outer_and_inner(
    a: SpanFacts, b: SpanFacts, parent_of: Callable[[str], str | None], by_span: Mapping[str, SpanFacts], bound: int
) -> tuple[SpanFacts, SpanFacts] | None:
    """(outer, inner) of two agent spans when one lies under the other with no tool span between them
    (the general rules' ``nearest_root`` and its ``through`` flag); ``None`` otherwise."""
    for outer, inner in ((a, b), (b, a)):
        cur = parent_of(inner.span_id)
        hops = 0
        through_tool = False
        while cur is not None and hops <= bound:
            if cur == outer.span_id:
                return None if through_tool else (outer, inner)
            known = by_span.get(cur)
            if known is not None and known.role == "tool":
                through_tool = True
            cur = parent_of(cur)
            hops += 1
    return None


_SIMPLE_ROLES = frozenset({"agent", "tool", "llm", "other"})
_UNKNOWN = object()


def _parent_forest(
    parents: Mapping[str, str | None], by_span: Mapping[str, list[SpanFacts]], stops: Container[str]
) -> dict[str, str | None]:
    """Every span's parent, with local roots cut off and parent cycles (a ring, a span its own
    parent: malformed input) broken where they close, in one O(spans) pass: what is left is a forest."""
    par: dict[str, str | None] = {}
    for sid in (*parents, *by_span):
        if sid in par:
            continue
        if sid in stops:
            par[sid] = None
        elif sid in parents:
            par[sid] = parents[sid]
        else:
            fs = by_span.get(sid)
            par[sid] = fs[0].parent_span_id if fs else None
    done: set[str] = set()
    for sid in list(par):
        path: list[str] = []
        on_path: set[str] = set()
        cur: str | None = sid
        while cur is not None and cur not in done:
            if cur in on_path:
                par[path[-1]] = None  # the link that closes the cycle
                break
            path.append(cur)
            on_path.add(cur)
            cur = par.get(cur)
        done.update(path)
    return par


def _call_key(raw: RawCall) -> tuple[str, str]:
    if raw.call_id:
        return ("id", raw.call_id)
    return (raw.name, json.dumps(raw.arguments, sort_keys=True, default=str))


def _fill_unreported_outputs(llm_groups: list[list[SpanFacts]], opts: ExtractOptions) -> None:
    """Model calls that record their input but not their output (OpenLLMetry with Chat Completions):
    a tool call that first shows up in a later model call's input, and was not already in the run's
    first input (earlier turns), was requested by the model call just before it."""
    if not any(f.history_calls for fs in llm_groups for f in fs):
        return  # no model call was given earlier calls: nothing to read back
    seen: set[tuple[str, str]] = set()
    for i, fs in enumerate(llm_groups):
        for f in fs:  # calls a model call reported itself are no news when replayed later
            seen.update(_call_key(RawCall(c.name, c.call_id, c.arguments)) for c in f.requested)
        history = [raw for f in fs for raw in f.history_calls]
        new = [raw for raw in history if _call_key(raw) not in seen]
        seen.update(_call_key(raw) for raw in history)
        if i == 0 or not new:
            continue
        previous = llm_groups[i - 1]
        if any(f.requested or f.saw_output for f in previous) or not any(f.saw_input for f in previous):
            continue  # the previous call reported an output, or recorded nothing at all (content off)
        unique: dict[tuple[str, str], RawCall] = {}
        for raw in new:
            unique.setdefault(_call_key(raw), raw)
        previous[0].requested = requested_calls(previous[0], list(unique.values()), opts)


_TOOL_NOT_FOUND = re.compile(r"Tool not found: \{'tool_name': '([^']+)'\}")


def _names_missing_tool(message: str, name: str) -> bool:
    return "not found" in message.lower() and (f"'{name}'" in message or f'"{name}"' in message)


def _first_start(run: RunFacts) -> int:
    starts = [f.start_time_unix_nano for f in run.tool_facts + run.other_facts]
    starts += [f.start_time_unix_nano for fs in run.llm_spans.values() for f in fs]
    return min(starts, default=0)


def _place(
    run: RunFacts, span_id: str, fs: list[SpanFacts], role: str, *, merged: bool = False, group: str = ""
) -> None:
    if (span_id == run.root and role in ("agent", "other")) or merged:
        run.agent_facts.extend(fs)
    elif role == "tool":
        run.tool_facts.extend(f for f in fs if f.call is not None)
        logs = [f for f in fs if f.from_log]
        if logs:
            run.llm_spans.setdefault(span_id, []).extend(logs)
    elif role == "llm":
        run.llm_spans.setdefault(group or span_id, []).extend(fs)
    else:
        run.other_facts.extend(fs)


#: sort keys (C-level, no Python call per item): a call's (time, place) key; facts in start order
_call_order = itemgetter(0)
_START_ORDER = attrgetter("start_time_unix_nano", "span_id")


def _first(values: Iterable[Any]) -> Any:
    return next((v for v in values if v), None)


def _first_of(facts: Iterable[SpanFacts], field: str) -> Any:
    """The first truthy ``field`` of ``facts`` (a loop: this runs for every field of every run)."""
    for f in facts:
        value = getattr(f, field)
        if value:
            return value
    return None


def _first_query(facts: Iterable[SpanFacts], opts: ExtractOptions) -> str | None:
    """The first user request of ``facts``: input content left for later (the offline reader leaves
    it: :meth:`~._facts.SpanFacts.materialize`) is parsed fact by fact, only until one names it."""
    return _first_parsed(facts, opts, SpanFacts.materialize_inputs, "user_query")


def _first_answer(facts: Iterable[SpanFacts], opts: ExtractOptions) -> str | None:
    """The first answer of ``facts``: an answer left for later (the offline reader leaves a chain's
    ``output.value``) is parsed fact by fact, only until one names it."""
    return _first_parsed(facts, opts, SpanFacts.materialize_answer, "final_output")


def _first_parsed(
    facts: Iterable[SpanFacts], opts: ExtractOptions, parse: Callable[[SpanFacts, ExtractOptions], object], field: str
) -> str | None:
    for f in facts:
        if f.deferred:
            parse(f, opts)
        value: str | None = getattr(f, field)
        if value:
            return value
    return None


def _build(run: RunFacts, parent_root: str | None, opts: ExtractOptions) -> RunRecord:
    root = run.root
    root_facts = run.agent_facts
    if len(root_facts) > 1:
        root_facts = sorted(root_facts, key=lambda f: f.span_id != root)
    llm_groups = list(run.llm_spans.values())
    if len(llm_groups) > 1:
        llm_groups.sort(key=lambda fs: (fs[0].start_time_unix_nano, fs[0].span_id))
    llm_facts = [f for fs in llm_groups for f in fs]
    inner = [*run.tool_facts, *llm_facts, *run.other_facts]
    everything = [*root_facts, *inner]
    trace_id = _first_of(everything, "trace_id") or None

    # -- calls ------------------------------------------------------------------------------------
    executed = run.tool_facts
    if len(executed) > 1:
        executed = sorted(executed, key=_START_ORDER)
    calls: list[tuple[tuple[int, int], CallRecord]] = []
    exec_calls = [f.call for f in executed if f.call is not None]
    by_id = {c.call_id: c for c in exec_calls if c.call_id}
    matched: set[int] = set()
    results: dict[str, tuple[Any, str | None]] = {}
    for f in everything:
        if f.results:
            results.update(f.results)

    _fill_unreported_outputs(llm_groups, opts)
    outputs: list[Sequence[Requested]] = []
    for fs in llm_groups:
        # a span's own attributes first, its log events only when the attributes carried no calls
        if len(fs) == 1:
            if fs[0].requested:
                outputs.append(fs[0].requested)
            continue
        lists = [f.requested for f in fs if f.requested and not f.from_log] or [f.requested for f in fs if f.requested]
        if lists:
            outputs.append(lists[0])
    if not outputs:
        outputs = [f.requested_fallback for f in root_facts if f.requested_fallback][:1]
    seen_requested: set[str] = set()
    pending: list[list[tuple[Requested, CallRecord | None]]] = []
    for output in outputs:
        row: list[tuple[Requested, CallRecord | None]] = []
        for req in output:
            cid = req.call_id
            hit = None
            if cid:
                if cid in seen_requested:
                    continue
                seen_requested.add(cid)
                hit = by_id.get(cid)
                if hit is not None:
                    if id(hit) in matched:
                        hit = None
                    else:
                        matched.add(id(hit))
            row.append((req, hit))
        pending.append(row)
    # second pass: pair the leftovers by name and order; among same-name calls, the span that ran
    # the requested arguments (parallel calls of one tool on threads start in any order)
    if len(matched) < len(exec_calls):
        leftovers: dict[str, list[CallRecord]] = {}
        for c in exec_calls:
            if id(c) not in matched:
                leftovers.setdefault(c.name, []).append(c)
        for row in pending:
            for i, (req, hit) in enumerate(row):
                same = leftovers.get(req.name)
                if hit is None and same:
                    at = next((k for k, c in enumerate(same) if req.arguments is not None and c.arguments == req.arguments), 0)
                    cand = same.pop(at)
                    matched.add(id(cand))
                    row[i] = (req, cand)
    history_of: dict[str, AbstractSet[str]] | None = None
    placed: set[int] = set()
    for row in pending:
        # One model output: its calls keep the model's order (parallel tool spans may start in any
        # order). The row sits at the model call's end, or earlier if a tool of it started earlier.
        row_time = 0
        for req, hit in row:
            for t in (hit.start_time_unix_nano if hit is not None else None, req.start_time_unix_nano):
                if t and (not row_time or t < row_time):
                    row_time = t
        for pos, (req, hit) in enumerate(row):
            if hit is not None:
                if isinstance(req.arguments, Mapping) and not isinstance(hit.arguments, Mapping):
                    hit.arguments = req.arguments  # the model's structured arguments beat a bare/repr value
                if hit.call_id is None and req.call_id is not None:
                    hit.call_id = req.call_id
                placed.add(id(hit))
                calls.append(((row_time, pos + 1), hit))
                continue
            if req.call_id:
                if history_of is None:
                    history_of = {f.span_id: f.history_ids for f in (*root_facts, *llm_facts) if f.history_ids}
                if req.call_id in history_of.get(req.span_id or "", ()):
                    continue  # a call the same span was given as input: history echoed back, not a new call
            result = results.get(req.call_id) if req.call_id else None
            if result is not None:
                req.result = result[0] if opts.capture_content else None
                if result[1]:
                    req.status = "error"
                    req.error_type = result[1]
            calls.append(((row_time, pos + 1), req.to_call()))
    if len(placed) < len(exec_calls):
        for c in exec_calls:
            if id(c) not in placed:
                calls.append(((c.start_time_unix_nano or 0, 0), c))
    calls.sort(key=_call_order)
    tools: Sequence[ToolRecord] = _first_of(root_facts, "tools") or _first_of(llm_facts, "tools") or []
    known = {t.name for t in tools} if tools else None
    failures = [f.error_message for f in everything if f.error_message and f.call is None]
    named = {c.name for _, c in calls} if failures else set()
    for message in failures:
        m = _TOOL_NOT_FOUND.search(message)
        if m and m.group(1) not in named:
            # openai-agents stops the run on an unknown tool; with the model output not recorded
            # (OpenLLMetry + Chat Completions) this status message is the only trace of the call
            named.add(m.group(1))
            lost = CallRecord(
                m.group(1), None, None, None, "error", "unknown_tool",
                "framework" if opts.is_framework(m.group(1)) else "tool", "error",
            )
            calls.append(((max((k[0] for k, _ in calls), default=0), 1 << 30), lost))
    if failures:
        for _, c in calls:
            if c.source == "requested" and c.status == "ok" and any(_names_missing_tool(m, c.name) for m in failures):
                c.status = "error"  # the run stopped on it: "Tool not found: {'tool_name': 'x'}"
                c.error_type = "unknown_tool"
    if known:
        for _, c in calls:
            if c.source == "requested" and c.status == "ok" and c.name not in known and c.kind == "tool":
                c.status = "error"  # the model asked for a tool the agent does not have
                c.error_type = "unknown_tool"
    if opts.include_framework_calls:
        tool_calls = [c for _, c in calls]
    else:
        tool_calls = [c for _, c in calls if c.kind != "framework"]
    if len(tool_calls) > opts.max_calls_per_run:
        tool_calls = tool_calls[: opts.max_calls_per_run]

    # -- run-level facts: the root first, then model spans, then anything inside ----------------
    user_query = final_output = None
    if opts.capture_content:  # without content both are dropped below: not looked for
        user_query = _first_query(root_facts, opts) or _first_query(llm_facts, opts)
        final_output = _first_answer(root_facts, opts) or _first_answer(
            sorted(llm_facts, key=lambda f: -f.end_time_unix_nano), opts
        )
    agent_name = _first_of(root_facts, "agent_name") or _first_of(inner, "agent_name") or step_agent(run)
    if agent_name is None:
        # OpenInference names AGENT/CHAIN root spans after the agent / graph and may set no agent.name
        agent_name = _first(f.name for f in root_facts if f.span_id == run.root and "openinference" in f.conventions)
    conversation_id = _first_of(root_facts, "conversation_id") or _first_of(inner, "conversation_id")
    conventions: list[str] = []
    last: tuple[str, ...] | None = None
    for f in everything:
        if f.conventions is last:
            continue  # facts of one reader share their tuple
        last = f.conventions
        for conv in last:
            if conv not in conventions:
                conventions.append(conv)
    root_attrs = _first_of(root_facts, "attributes")
    attributes = dict(root_attrs) if root_attrs else {}
    return RunRecord(
        run.root,
        trace_id,
        run.root,
        parent_root,
        agent_name,
        conversation_id,
        conventions,
        user_query if opts.capture_content else None,
        final_output if opts.capture_content else None,
        list(tools),
        tool_calls,
        attributes,
    )
