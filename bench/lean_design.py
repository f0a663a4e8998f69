"""The lean full design: the whole scoring design at its leanest, measured beside ours in every round.

The yardstick (``bench/yardstick.py``) is the cheapest processor that writes what a scored run must
write; it reads one convention's tool names and nothing else. This processor is the floor of the
*whole design* instead — everything ``ToolScoreSpanProcessor`` does for the workloads of
``bench/workloads.py``, done for real, with no knowledge of them beyond the expectation passed in:

* **span-thread hooks, O(1)**: ``on_start`` queues only the context a local root (no parent, or a
  remote one) started in — the evaluation record is emitted in it; ``on_end`` appends the span to
  one bounded deque (a full deque hands the span straight on and is counted). No lock, no I/O;
* **one worker thread**, woken every 2 ms (as ours and the yardstick's are) or at once by
  ``force_flush``, which queues a marker and waits until the worker has passed it (never sleeping on
  a batch timer); every span is handed on by the worker, in end order, roots as scored copies;
* **per-trace bounded state**: parent links (``max_known_spans_per_trace``), the tool and model
  spans' facts (``max_spans_per_trace``), traces watched (``max_pending_traces``, the oldest evicted),
  a trace timeout, calls per run (``max_calls_per_run``); every refusal counted in
  ``toolscore.dropped`` by reason;
* **two conventions through precomputed key tables** (:data:`GENAI`, :data:`OPENINFERENCE`): the role
  (``gen_ai.operation.name`` invoke_agent / execute_tool / chat…; ``openinference.span.kind`` AGENT /
  CHAIN / TOOL / LLM), the tool's name, call id and status, the agent's name and conversation id,
  and the calls a model output *requested* — GenAI ``gen_ai.output.messages`` JSON parsed only when
  present, OpenInference ``llm.output_messages.{i}.message.tool_calls.{j}.tool_call.{id,function.name}``
  looked up key by key in a table built once (no walk over a span's keys);
* **runs**: an agent span (GenAI ``invoke_agent``, OpenInference ``AGENT``) roots a run; the spans
  whose nearest enclosing agent span is it belong to it, so a sub-agent's calls are its own run's,
  not its parent's; with no agent span around them, the tool and model spans under a local root
  (the top CHAIN of a graph) are that root's run;
* **calls**: requested and executed calls merged by id, then the rest paired by name in start order;
  model outputs in start order, each keeping the model's order; a requested call no tool span ran
  still counts (right after the one before it), and so does a tool span no output asked for;
* **score**: the tool-call-accuracy code score of the expectation (one expected tool or an expected
  order; strict or lenient — the comparison of ``otel_toolscore/scorers/code.py``, written again here);
* **outputs, from the worker**: the root's copy with the ``toolscore.code.*`` attributes and the
  OpenInference annotation, one ``gen_ai.evaluation.result`` log record in the root's context, one
  ``gen_ai.evaluation.score`` histogram point, and ``toolscore.runs`` / ``toolscore.dropped``
  counters (added once per drained batch, as ours does).

What it leaves out, compared with ours (``docs/performance.md``, "The lean full design"): every other
convention and framework rule, expectation rules beyond the one expectation's agent name, the
application's ``expect()`` / attributes / baggage, the judge, content capture and redaction, sinks
and callbacks, the run model, the match modes other than ordered and argument matching, and holding
a root while its descendants are open.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import NonRecordingSpan, StatusCode, set_span_in_context

from .pipelines import Pipeline, root_copy, scoring_pipeline

__all__ = ["GENAI", "OPENINFERENCE", "WORKER_THREAD", "Fact", "LeanDesignProcessor", "LeanExpectation", "claim", "lean_pipeline", "makes_run", "merge_calls", "read_fact", "run_agent", "span_role"]

#: The worker thread's name (``bench/workloads.py`` reads its CPU time by this prefix).
WORKER_THREAD = "lean-design-worker"

# Roles of a span.
OTHER, AGENT, TOOL, LLM, CHAIN = 0, 1, 2, 3, 4

_ERROR = StatusCode.ERROR
_SUPPRESS = otel_context._SUPPRESS_INSTRUMENTATION_KEY
#: OpenInference flattened output keys precomputed for this many messages x calls per message;
#: beyond them the key is formatted on the spot (rare), never found by walking the span's keys.
_OI_MESSAGES, _OI_CALLS = 8, 16
_OI_OUT = "llm.output_messages."


def _oi_call_keys(i: int, j: int) -> tuple[str, str]:
    base = f"{_OI_OUT}{i}.message.tool_calls.{j}.tool_call."
    return base + "id", base + "function.name"


_OI_CALL_TABLE = [[_oi_call_keys(i, j) for j in range(_OI_CALLS)] for i in range(_OI_MESSAGES)]
_OI_ROLE_TABLE = [f"{_OI_OUT}{i}.message.role" for i in range(_OI_MESSAGES)]
_OI_CONTENT_0 = f"{_OI_OUT}0.message.content"


class Convention:
    """One convention's key table: where its role, tool, agent and requested calls are read."""

    __slots__ = (
        "agent_key",
        "conversation_key",
        "name",
        "read_requested",
        "role_key",
        "roles",
        "tool_id_keys",
        "tool_name_from_span",
        "tool_name_key",
    )

    def __init__(
        self,
        name: str,
        role_key: str,
        roles: Mapping[str, int],
        tool_name_key: str,
        tool_id_keys: tuple[str, ...],
        agent_key: str,
        conversation_key: str,
        read_requested: Callable[[Mapping[str, Any], int, Counter[str]], tuple[list[tuple[str | None, str]], bool]],
        tool_name_from_span: bool,
    ) -> None:
        self.name = name
        self.role_key = role_key
        self.roles = dict(roles)
        self.tool_name_key = tool_name_key
        self.tool_id_keys = tool_id_keys
        self.agent_key = agent_key
        self.conversation_key = conversation_key
        self.read_requested = read_requested
        self.tool_name_from_span = tool_name_from_span


def _no_id(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _genai_requested(a: Mapping[str, Any], limit: int, drops: Counter[str]) -> tuple[list[tuple[str | None, str]], bool]:
    """(call id, tool name) of each ``tool_call`` part of ``gen_ai.output.messages`` (JSON parsed only
    when present), and whether the span showed its output at all."""
    raw = a.get("gen_ai.output.messages")
    if raw is None:
        return [], "gen_ai.response.finish_reasons" in a
    if isinstance(raw, str):
        if len(raw) > MAX_PARSE_CHARS:
            drops["content_too_large"] += 1
            return [], True
        try:
            messages = json.loads(raw)
        except ValueError:
            drops["malformed_content"] += 1
            return [], True
    else:
        messages = raw
    out: list[tuple[str | None, str]] = []
    if not isinstance(messages, list):
        return out, True
    for message in messages:
        parts = message.get("parts") if isinstance(message, dict) else None
        if not isinstance(parts, list):
            continue
        for part in parts:
            if isinstance(part, dict) and part.get("type") == "tool_call":
                name = part.get("name")
                if isinstance(name, str) and name:
                    if len(out) >= limit:
                        drops["calls_per_run_limit"] += 1
                        continue
                    out.append((_no_id(part.get("id")), name))
    return out, True


def _oi_requested(a: Mapping[str, Any], limit: int, drops: Counter[str]) -> tuple[list[tuple[str | None, str]], bool]:
    """(call id, tool name) of each flattened ``llm.output_messages.{i}…tool_calls.{j}`` call, looked up
    through the key table, and whether the span showed its output at all."""
    out: list[tuple[str | None, str]] = []
    get = a.get
    saw = False
    i = 0
    while True:
        if i < _OI_MESSAGES:
            row: list[tuple[str, str]] | None = _OI_CALL_TABLE[i]
            role_key = _OI_ROLE_TABLE[i]
        else:
            row, role_key = None, f"{_OI_OUT}{i}.message.role"
        first = row[0] if row is not None else _oi_call_keys(i, 0)
        if role_key not in a and first[1] not in a:
            break
        saw = True
        j = 0
        while True:
            id_key, name_key = row[j] if row is not None and j < _OI_CALLS else _oi_call_keys(i, j)
            name = get(name_key)
            if name is None:
                break
            if len(out) < limit:
                out.append((_no_id(get(id_key)), str(name)))
            else:
                drops["calls_per_run_limit"] += 1
            j += 1
        i += 1
    return out, saw or _OI_CONTENT_0 in a


GENAI = Convention(
    "genai",
    "gen_ai.operation.name",
    {"invoke_agent": AGENT, "execute_tool": TOOL, "chat": LLM, "text_completion": LLM, "generate_content": LLM,
     "completion": LLM, "responses": LLM},
    "gen_ai.tool.name",
    ("gen_ai.tool.call.id",),
    "gen_ai.agent.name",
    "gen_ai.conversation.id",
    _genai_requested,
    False,
)
OPENINFERENCE = Convention(
    "openinference",
    "openinference.span.kind",
    {"AGENT": AGENT, "TOOL": TOOL, "LLM": LLM, "CHAIN": CHAIN},
    "tool.name",
    ("tool_call.id", "tool.id"),
    "agent.name",
    "session.id",
    _oi_requested,
    True,
)
CONVENTIONS = (GENAI, OPENINFERENCE)

#: Longest JSON text parsed (ours: ``max_parse_chars``).
MAX_PARSE_CHARS = 1_048_576
MAX_NAME_CHARS = 256
MAX_ATTRIBUTE_TOOLS = 64
MAX_EXPLANATION_CHARS = 4096
MAX_METRIC_AGENTS = 100


class LeanExpectation:
    """The one expectation scored: an expected tool or an expected order, strict or lenient; with an
    agent name, runs of other agents are not scored (``no_expectation``)."""

    __slots__ = ("agent_name", "expected_tool", "expected_tool_order", "strict_mode")

    def __init__(
        self,
        expected_tool: str | None = None,
        expected_tool_order: tuple[str, ...] | None = None,
        strict_mode: bool = False,
        agent_name: str | None = None,
    ) -> None:
        if not expected_tool and not expected_tool_order:
            raise ValueError("an expected tool or an expected tool order is needed")
        self.expected_tool = expected_tool or None
        self.expected_tool_order = tuple(expected_tool_order) if expected_tool_order else None
        self.strict_mode = bool(strict_mode)
        self.agent_name = agent_name

    @classmethod
    def like(cls, expectation: Any) -> LeanExpectation:
        """The same expectation as one of ours (read by attribute name: nothing of ours is imported);
        what this design does not do is refused, not ignored."""
        if getattr(expectation, "match", "ordered") != "ordered" or getattr(expectation, "args_match", None) is not None:
            raise ValueError("the lean design scores the ordered match of names only")
        if getattr(expectation, "query_regex", None) or getattr(expectation, "attributes", None):
            raise ValueError("the lean design matches runs by agent name only")
        return cls(expectation.expected_tool, expectation.expected_tool_order, expectation.strict_mode,
                   expectation.agent_name)

    def score(self, names: list[str]) -> tuple[float, bool, bool | None]:
        """(score, correct tool called, correct order called): Mastra's code scorer, names only."""
        want = self.expected_tool
        if want is None:
            correct_tool = False
        elif self.strict_mode:
            correct_tool = len(names) == 1 and names[0] == want
        else:
            correct_tool = want in names
        order = self.expected_tool_order
        correct_order: bool | None = None
        if order is not None:
            if self.strict_mode:
                correct_order = len(names) == len(order) and all(n == o for n, o in zip(names, order))
            else:  # the expected order is a subsequence of the calls (greedy earliest matching)
                k = 0
                for n in names:
                    if k < len(order) and n == order[k]:
                        k += 1
                correct_order = k == len(order)
        if not names:
            score = 0.0
        elif order is not None:
            score = 1.0 if correct_order else 0.0
        else:
            score = 1.0 if correct_tool else 0.0
        return score, correct_tool, correct_order

    def summary(self, label: str, names: list[str]) -> str:
        want = " -> ".join(self.expected_tool_order) if self.expected_tool_order else (self.expected_tool or "")
        mode = "strict" if self.strict_mode else "lenient"
        if self.expected_tool_order:
            mode += ", ordered"
        return f"{label}: expected {want} ({mode}); called {', '.join(names) if names else 'no tools'}"


class Fact:
    """What a tool or model span said, kept until its run is scored."""

    __slots__ = ("agent_name", "call_id", "conversation_id", "end", "name", "parent", "requested", "role",
                 "saw_output", "start", "status", "taken")

    def __init__(self, role: int, parent: int | None, start: int, end: int) -> None:
        self.role = role
        self.parent = parent
        self.start = start
        self.end = end
        self.name: str | None = None
        self.call_id: str | None = None
        self.status = "ok"
        self.requested: list[tuple[str | None, str]] = []
        self.saw_output = False
        self.agent_name: str | None = None
        self.conversation_id: str | None = None
        self.taken = False  # a tool span paired with a requested call


class _Trace:
    """One trace being watched: parent links, facts not yet in a run, agent spans ended, contexts."""

    __slots__ = ("agents", "contexts", "created", "facts", "parents")

    def __init__(self, now: float) -> None:
        self.parents: dict[int, int | None] = {}
        self.facts: list[Fact] = []
        self.agents: set[int] = set()
        self.contexts: dict[int, Any] = {}
        self.created = now


class _Flush:
    """A marker ``force_flush`` queues: set once the worker has handed on everything before it."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


class _Labels:
    """At most ``limit`` distinct agent names as a metric attribute; later ones become ``_OTHER``."""

    __slots__ = ("limit", "seen")

    def __init__(self, limit: int, declared: tuple[str, ...]) -> None:
        self.limit = limit
        self.seen = set(declared)

    def __call__(self, name: str | None) -> str | None:
        if name is None or name in self.seen:
            return name
        if len(self.seen) < self.limit:
            self.seen.add(name)
            return name
        return "_OTHER"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "\u2026"


def _quiet_on_start(processor: SpanProcessor) -> bool:
    method = getattr(type(processor), "on_start", None)
    return method in (SpanProcessor.on_start, BatchSpanProcessor.on_start, SimpleSpanProcessor.on_start)


class LeanDesignProcessor(SpanProcessor):
    """The lean full design (see the module doc). Every span is handed on to ``downstream`` by the
    worker; the roots of scored runs as copies carrying the score."""

    def __init__(
        self,
        downstream: SpanProcessor,
        *,
        expectation: LeanExpectation,
        meter_provider: MeterProvider,
        logger_provider: LoggerProvider,
        span_queue_size: int = 32_768,
        max_pending_traces: int = 10_000,
        max_spans_per_trace: int = 2_000,
        max_known_spans_per_trace: int = 20_000,
        max_calls_per_run: int = 1_000,
        trace_timeout_s: float = 300.0,
        poll_s: float = 0.002,
    ) -> None:
        for name, value in (("span_queue_size", span_queue_size), ("max_pending_traces", max_pending_traces),
                            ("max_spans_per_trace", max_spans_per_trace),
                            ("max_known_spans_per_trace", max_known_spans_per_trace),
                            ("max_calls_per_run", max_calls_per_run)):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        if trace_timeout_s <= 0 or poll_s <= 0:
            raise ValueError("trace_timeout_s and poll_s must be positive")
        self.downstream = downstream
        self.expectation = expectation
        self._downstream_starts = not _quiet_on_start(downstream)
        self._capacity = span_queue_size
        self._max_traces = max_pending_traces
        self._max_facts = max_spans_per_trace
        self._max_known = max_known_spans_per_trace
        self._max_calls = max_calls_per_run
        self._timeout = trace_timeout_s
        self._poll = poll_s
        self._queue: collections.deque[Any] = collections.deque()
        # spans the full queue refused, counted on the application's threads: next() of a C
        # iterator is atomic (no lock); the worker's own next() calls are subtracted
        self._refused = itertools.count()
        self._refused_reads = 0
        self._refused_reported = 0
        self._traces: dict[int, _Trace] = {}
        self._evicted: collections.OrderedDict[int, None] = collections.OrderedDict()
        self._max_evicted = max(1024, 4 * max_pending_traces)
        self._last_sweep = time.monotonic()
        #: counts made by the worker, added to the metrics once per drained batch
        self.drops: Counter[str] = Counter()
        self.runs: Counter[tuple[str, str | None]] = Counter()
        #: everything dropped so far, by reason (what the metric was given; for tests)
        self.dropped_total: Counter[str] = Counter()
        self._agent_label = _Labels(MAX_METRIC_AGENTS, (expectation.agent_name,) if expectation.agent_name else ())
        meter = meter_provider.get_meter("bench.lean_design")
        self._histogram = meter.create_histogram(
            "gen_ai.evaluation.score", unit="1", description="Evaluation scores of agent runs (0..1).",
            explicit_bucket_boundaries_advisory=[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99],  # as ours
        )
        self._runs_counter = meter.create_counter("toolscore.runs", unit="{run}")
        self._drops_counter = meter.create_counter("toolscore.dropped", unit="{item}")
        self._logger = logger_provider.get_logger("bench.lean_design")
        self._metric_extra = {"toolscore.expected_tool": expectation.expected_tool} if expectation.expected_tool else {}
        self._wake = threading.Event()
        self._stopped = False
        self._worker = threading.Thread(target=self._loop, name=WORKER_THREAD, daemon=True)
        self._worker.start()

    # -- the application's threads: one deque append, nothing else ------------------------------------
    def on_start(self, span: Any, parent_context: otel_context.Context | None = None) -> None:
        try:
            parent = span._parent
        except AttributeError:
            parent = span.parent
        if parent is None or parent.is_remote:  # a local root: the context it started in
            q = self._queue
            if len(q) < self._capacity:
                q.append((span, parent_context if parent_context is not None else otel_context.get_current()))
            else:
                next(self._refused)
        if self._downstream_starts:
            with contextlib.suppress(Exception):
                self.downstream.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        q = self._queue
        if len(q) < self._capacity:
            q.append(span)
            return
        next(self._refused)  # not read, not lost: handed on as it is
        with contextlib.suppress(Exception):
            self.downstream.on_end(span)

    # -- the worker thread ----------------------------------------------------------------------------
    def _loop(self) -> None:
        q = self._queue
        wake = self._wake
        while True:
            if not q:
                self._flush_counts()
                if self._stopped:
                    return
                wake.wait(self._poll)
                wake.clear()
                continue
            token = otel_context.attach(otel_context.set_value(_SUPPRESS, True))
            try:
                popleft = q.popleft
                for _ in range(4096):
                    try:
                        item = popleft()
                    except IndexError:
                        break
                    if type(item) is tuple:
                        self._started(item[0], item[1])
                    elif type(item) is _Flush:
                        self._flush_counts()
                        item.done.set()
                    else:
                        self._ended(item)
                now = time.monotonic()
                if now - self._last_sweep >= 1.0:  # timeouts, and counts under a queue never empty
                    self._last_sweep = now
                    self._sweep(now)
                    self._flush_counts()
            finally:
                otel_context.detach(token)

    def _trace(self, trace_id: int) -> _Trace | None:
        st = self._traces.get(trace_id)
        if st is not None:
            return st
        if trace_id in self._evicted:
            return None
        traces = self._traces
        if len(traces) >= self._max_traces:
            self._evict(next(iter(traces)), "pending_traces_limit")
        st = traces[trace_id] = _Trace(time.monotonic())
        return st

    def _evict(self, trace_id: int, reason: str) -> None:
        self._traces.pop(trace_id, None)
        self.drops[reason] += 1
        evicted = self._evicted
        evicted[trace_id] = None
        if len(evicted) > self._max_evicted:
            evicted.popitem(last=False)

    def _sweep(self, now: float) -> None:
        """Evict traces older than the timeout (insertion order is age order: stop at the first young one)."""
        limit = now - self._timeout
        traces = self._traces
        while traces:
            trace_id = next(iter(traces))
            if traces[trace_id].created > limit:
                break
            self._evict(trace_id, "trace_timeout")

    def _started(self, span: Any, context: Any) -> None:
        try:
            ctx = span._context
        except AttributeError:
            ctx = span.context
        if ctx is None:
            self.drops["malformed_span"] += 1
            return
        st = self._trace(ctx.trace_id)
        if st is not None and len(st.contexts) < self._max_known:
            st.contexts[ctx.span_id] = context

    def _ended(self, span: Any) -> None:
        try:
            root = self._read(span)
        except Exception:  # odd attribute values: handed on as they are, counted
            self.drops["malformed_span"] += 1
            root = None
        if root is None:
            self._hand_on(span)

    def _hand_on(self, span: Any) -> None:
        try:
            self.downstream.on_end(span)
        except Exception:
            self.drops["downstream_error"] += 1

    def _read(self, span: Any) -> Any:
        """Read one ended span into its trace; score the run it roots. Returns ``None`` when the span
        is still to be handed on, anything else when it was (a root, as its copy)."""
        try:
            ctx, parent, attrs = span._context, span._parent, span._attributes
        except AttributeError:
            ctx, parent, attrs = span.context, span.parent, span.attributes
        a: Mapping[str, Any] = getattr(attrs, "_dict", attrs) or {}
        trace_id, sid = ctx.trace_id, ctx.span_id
        local = parent is None or parent.is_remote
        st = self._traces.get(trace_id) or self._trace(trace_id)
        if st is None:
            self.drops["late_span"] += 1  # its trace was evicted: scored without it, or not at all
            return None
        parents = st.parents
        if len(parents) < self._max_known:
            parents[sid] = None if local else parent.span_id
        else:
            self.drops["known_spans_limit"] += 1
        # span_role(a), inline: one call less per span on the floor's hot path
        role = OTHER
        conv: Convention | None = None
        for c in CONVENTIONS:
            value = a.get(c.role_key)
            if value is not None:
                conv = c
                if type(value) is str:
                    role = c.roles.get(value, OTHER)
                    if role == OTHER and c is OPENINFERENCE:
                        role = c.roles.get(value.upper(), OTHER)
                break
        if role in (TOOL, LLM):
            assert conv is not None
            if len(st.facts) >= self._max_facts:
                self.drops["spans_per_trace_limit"] += 1
            else:
                try:
                    start, end, status = span._start_time, span._end_time, span._status
                except AttributeError:
                    start, end, status = span.start_time, span.end_time, span.status
                f = read_fact(a, conv, role, None if local else parent.span_id, start or 0, end or 0,
                              status.status_code is _ERROR, span.name, self._max_calls, self.drops)
                if f is not None:
                    st.facts.append(f)
        if role == AGENT:
            st.agents.add(sid)
            return self._root_ended(st, trace_id, sid, span, a, conv, local)
        if local:
            return self._root_ended(st, trace_id, sid, span, a, conv, local)
        return None

    # -- runs ---------------------------------------------------------------------------------------
    def _root_ended(
        self, st: _Trace, trace_id: int, sid: int, span: Any, a: Mapping[str, Any], conv: Convention | None, local: bool
    ) -> Any:
        facts = claim(st, sid)
        handed = None
        if makes_run(sid, facts, st.agents):
            handed = self._score(st, sid, span, a, conv, facts)
        if local:
            del self._traces[trace_id]
        return handed

    def _score(
        self, st: _Trace, sid: int, span: Any, a: Mapping[str, Any], conv: Convention | None, facts: list[Fact]
    ) -> Any:
        calls = merge_calls(facts, self._max_calls, self.drops)
        names = [(c.name or "") if type(c) is Fact else c[1] for c in calls]  # type: ignore[index]
        agent_name, conversation = run_agent(a, conv, facts, span.name)
        if agent_name is not None and len(agent_name) > MAX_NAME_CHARS:
            self.drops["name_too_long"] += 1
            agent_name = _cut(agent_name, MAX_NAME_CHARS)
        exp = self.expectation
        label = self._agent_label(agent_name)
        if exp.agent_name is not None and agent_name != exp.agent_name:
            self.runs[("no_expectation", label)] += 1
            return None
        if not calls and not any(f.saw_output or f.role == TOOL for f in facts):
            self.runs[("no_tool_calls_visible", label)] += 1
            return None
        score, correct_tool, correct_order = exp.score(names)
        verdict = "pass" if score >= 1.0 else "fail"
        explanation = exp.summary(verdict, names)
        if len(explanation) > MAX_EXPLANATION_CHARS:
            self.drops["explanation_too_long"] += 1
            explanation = _cut(explanation, MAX_EXPLANATION_CHARS)
        tools = names[:MAX_ATTRIBUTE_TOOLS]
        long_names = sum(1 for t in tools if len(t) > MAX_NAME_CHARS)
        if long_names:
            self.drops["name_too_long"] += long_names
            tools = [_cut(t, MAX_NAME_CHARS) for t in tools]
        added: dict[str, Any] = dict(a)
        added["toolscore.code.score"] = score
        added["toolscore.code.label"] = verdict
        added["toolscore.code.strict_mode"] = exp.strict_mode
        added["toolscore.code.actual_tools"] = tools
        added["toolscore.code.correct_tool_called"] = correct_tool
        added["toolscore.tool_call_count"] = len(names)
        if exp.expected_tool is not None:
            added["toolscore.code.expected_tool"] = exp.expected_tool
        if exp.expected_tool_order is not None:
            added["toolscore.code.expected_tool_order"] = list(exp.expected_tool_order)
            added["toolscore.code.correct_order_called"] = bool(correct_order)
        index = 0
        while f"annotations.{index}.annotation.name" in a:
            index += 1
        prefix = f"annotations.{index}.annotation."
        added[prefix + "name"] = "tool_call_accuracy"
        added[prefix + "annotator_kind"] = "CODE"
        added[prefix + "score"] = score
        added[prefix + "label"] = verdict
        added[prefix + "explanation"] = explanation
        try:
            ctx = span._context
        except AttributeError:
            ctx = span.context
        copy = root_copy(span, added)
        self._hand_on(copy)
        # the record and the point in the root's context, over the one its local root started in
        base = st.contexts.get(sid)
        if base is None and st.contexts:
            base = next(iter(st.contexts.values()))
        context = set_span_in_context(NonRecordingSpan(ctx), base)
        record: dict[str, Any] = {
            "gen_ai.evaluation.name": "tool_call_accuracy",
            "gen_ai.evaluation.score.value": score,
            "gen_ai.evaluation.score.label": verdict,
            "gen_ai.evaluation.explanation": explanation,
        }
        if agent_name:
            record["gen_ai.agent.name"] = agent_name
        if conversation:
            record["gen_ai.conversation.id"] = _cut(conversation, MAX_NAME_CHARS)
        point: dict[str, Any] = {"gen_ai.evaluation.name": "tool_call_accuracy", "gen_ai.evaluation.score.label": verdict}
        if label is not None:
            point["gen_ai.agent.name"] = label
        if self._metric_extra:
            point.update(self._metric_extra)
        try:
            self._logger.emit(
                context=context,
                event_name="gen_ai.evaluation.result",
                severity_number=SeverityNumber.INFO,
                body=f"evaluation: tool_call_accuracy={score}",
                attributes=record,
            )
            self._histogram.record(score, point, context=context)
        except Exception:  # the SDK's outputs failing: counted, the run is still scored
            self.drops["emit_error"] += 1
        self.runs[("scored", label)] += 1
        return copy

    def _flush_counts(self) -> None:
        """Add the runs and drops counted since the last call to the metrics (one call per key)."""
        refused = next(self._refused) - self._refused_reads
        self._refused_reads += 1
        if refused > self._refused_reported:
            self.drops["span_queue_full"] += refused - self._refused_reported
            self._refused_reported = refused
        if self.runs:
            for (outcome, agent), amount in self.runs.items():
                attrs = {"toolscore.outcome": outcome}
                if agent is not None:
                    attrs["gen_ai.agent.name"] = agent
                self._runs_counter.add(amount, attrs)
            self.runs.clear()
        if self.drops:
            for reason, amount in self.drops.items():
                self._drops_counter.add(amount, {"toolscore.reason": reason})
                self.dropped_total[reason] += amount
            self.drops.clear()

    # -- lifecycle ----------------------------------------------------------------------------------
    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until the worker has handed on everything queued before this call (it is woken at
        once, not at its next poll), then flush the downstream — within ``timeout_millis``."""
        deadline = time.monotonic() + timeout_millis / 1000
        ok = True
        if self._worker.is_alive():
            marker = _Flush()
            self._queue.append(marker)  # past the capacity check: a flush is never refused
            self._wake.set()
            ok = marker.done.wait(max(0.0, deadline - time.monotonic()))
        return self.downstream.force_flush(int(max(0.0, deadline - time.monotonic()) * 1000)) and ok

    def shutdown(self) -> None:
        self.force_flush()
        self._stopped = True
        self._wake.set()
        self._worker.join(5)
        self.downstream.shutdown()

    @property
    def pending_traces(self) -> int:
        return len(self._traces)


def span_role(a: Mapping[str, Any]) -> tuple[int, Convention | None]:
    """A span's role and the convention that told it (the first whose role key the span has)."""
    for c in CONVENTIONS:
        value = a.get(c.role_key)
        if value is not None:
            if type(value) is not str:
                return OTHER, c
            role = c.roles.get(value, OTHER)
            if role == OTHER and c is OPENINFERENCE:
                role = c.roles.get(value.upper(), OTHER)
            return role, c
    return OTHER, None


def read_fact(
    a: Mapping[str, Any], conv: Convention, role: int, parent: Any, start: int, end: int, error: bool,
    span_name: str | None, max_calls: int, drops: Counter[str],
) -> Fact | None:
    """What a tool or model span says (its attributes ``a`` read through ``conv``'s key table), or
    ``None`` for a tool span naming no tool."""
    f = Fact(role, parent, start, end)
    if role == TOOL:
        name = a.get(conv.tool_name_key)
        if name is None or name == "":
            if not conv.tool_name_from_span:
                return None  # a tool span naming no tool is no call we could report
            name = span_name
        f.name = str(name)
        for key in conv.tool_id_keys:
            call_id = a.get(key)
            if call_id is not None:
                f.call_id = _no_id(call_id)
                break
        if error or "error.type" in a:
            f.status = "error"
    else:
        f.requested, f.saw_output = conv.read_requested(a, max_calls, drops)
    agent = a.get(conv.agent_key)
    if agent is not None and agent != "":
        f.agent_name = str(agent)
    conversation = a.get(conv.conversation_key)
    if conversation is not None and conversation != "":
        f.conversation_id = str(conversation)
    return f


def claim(st: Any, root: Any) -> list[Fact]:
    """Take the facts of ``st`` (parent links ``st.parents``, agent spans ``st.agents``) whose nearest
    enclosing agent span (or local root) is ``root``; the others stay. Every parent link is followed
    once (memoised)."""
    parents = st.parents
    agents = st.agents
    owner: dict[Any, bool] = {root: True, None: False}
    mine: list[Fact] = []
    rest: list[Fact] = []
    for f in st.facts:
        cur = f.parent
        path: list[Any] = []
        while True:
            known = owner.get(cur)
            if known is not None:
                break
            if cur in agents or cur not in parents:  # another run's agent, or not ended yet
                known = False
                break
            path.append(cur)
            cur = parents[cur]
        for node in path:
            owner[node] = known
        (mine if known else rest).append(f)
    st.facts = rest
    return mine


def makes_run(root: Any, facts: list[Fact], agents: set[Any]) -> bool:
    """Whether the span ``root`` that claimed ``facts`` is a run: an agent span always; a local root
    when it holds a tool span or a requested call, or any fact in a trace without agent spans."""
    return root in agents or any(f.role == TOOL or f.requested for f in facts) or (bool(facts) and not agents)


def run_agent(a: Mapping[str, Any], conv: Convention | None, facts: list[Fact], span_name: str | None
              ) -> tuple[str | None, str | None]:
    """(agent name, conversation id) of a run: its root's, else the first of its spans' that has one."""
    agent_name = None
    conversation = None
    if conv is not None:
        value = a.get(conv.agent_key)
        if value is not None and value != "":
            agent_name = str(value)
        value = a.get(conv.conversation_key)
        if value is not None and value != "":
            conversation = str(value)
    if agent_name is None:
        agent_name = next((f.agent_name for f in facts if f.agent_name), None)
        if agent_name is None and conv is OPENINFERENCE:
            agent_name = span_name or None  # OpenInference names a graph's or agent's root after it
    if conversation is None:
        conversation = next((f.conversation_id for f in facts if f.conversation_id), None)
    return agent_name, conversation


def merge_calls(facts: list[Fact], max_calls: int, drops: Counter[str]) -> list[Fact | tuple[str | None, str]]:
    """The run's calls in order: each model output's requested calls, merged with the tool spans
    that ran them (by id, then by name in start order), and the tool spans no output asked for."""
    tools = [f for f in facts if f.role == TOOL]
    llms = [f for f in facts if f.role == LLM and f.requested]
    if len(tools) > 1:
        tools.sort(key=_start)
    if len(llms) > 1:
        llms.sort(key=_start)
    by_id = {f.call_id: f for f in tools if f.call_id}
    seen: set[str] = set()
    taken = 0
    rows: list[tuple[Fact, list[tuple[tuple[str | None, str], Fact | None]]]] = []
    for llm in llms:
        row: list[tuple[tuple[str | None, str], Fact | None]] = []
        for req in llm.requested:
            cid = req[0]
            if cid and cid in seen:
                continue  # the same call listed again
            hit = None
            if cid:
                seen.add(cid)
                hit = by_id.pop(cid, None)  # popped: a tool span answers one request
                if hit is not None:
                    hit.taken = True
                    taken += 1
            row.append((req, hit))
        rows.append((llm, row))
    if taken < len(tools):  # the rest paired by name, in start order
        by_name: dict[str, list[Fact]] = {}
        for f in tools:
            if not f.taken:
                by_name.setdefault(f.name or "", []).append(f)
        for _llm, row in rows:
            for i, (req, hit) in enumerate(row):
                same = by_name.get(req[1]) if hit is None else None
                if same:
                    first = same.pop(0)
                    first.taken = True
                    row[i] = (req, first)
    keyed: list[tuple[tuple[int, int], Fact | tuple[str | None, str]]] = []
    for llm, row in rows:
        row_time = llm.end  # the model's output ends its turn, unless a call of it started earlier
        for _req, hit in row:
            if hit is not None and hit.start and (not row_time or hit.start < row_time):
                row_time = hit.start
        keyed.extend(((row_time, pos + 1), req if hit is None else hit) for pos, (req, hit) in enumerate(row))
    keyed.extend(((f.start, 0), f) for f in tools if not f.taken)
    if len(keyed) > 1:
        keyed.sort(key=_first)
    calls = [c for _, c in keyed]
    if len(calls) > max_calls:
        drops["calls_per_run_limit"] += len(calls) - max_calls
        del calls[max_calls:]
    return calls


def _start(f: Fact) -> int:
    return f.start


def _first(item: tuple[tuple[int, int], Any]) -> tuple[int, int]:
    return item[0]


def lean_pipeline(expectation: Any) -> Pipeline:
    """The SDK + BatchSpanProcessor with :class:`LeanDesignProcessor` in front, scoring ``expectation``
    (one of ours, read by attribute name), with real meter and logger providers over no-op exporters."""
    lean = LeanExpectation.like(expectation)
    return scoring_pipeline(lambda downstream, mp, lp: LeanDesignProcessor(
        downstream, expectation=lean, meter_provider=mp, logger_provider=lp))
