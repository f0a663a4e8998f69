"""The lean offline reader: the offline half of the lean full design, measured beside ours.

``bench/lean_design.py`` is the floor of the whole design on the span's thread and the worker; this
is the floor of reading the same design's runs out of a file — what ``extract_runs`` does for the
two conventions the lean design reads (OTel GenAI semantic conventions and OpenInference), done for
real and no further:

* **decode**: OTLP protobuf with the generated ``ExportTraceServiceRequest`` (one ``FromString`` of
  the file's bytes, as the floor it is measured against does); OTLP/JSON Lines one line at a time
  with ``json.loads``, each document dropped once read;
* **attributes**: per span one dict from each key to its *undecoded* value (an ``AnyValue`` message,
  or the JSON value object), decoded only for the keys a reader looks up — the key tables of
  :mod:`bench.lean_design` (role, tool name / id / status, agent name, conversation id, the model
  output's requested calls);
* **runs**: per trace bounded state (traces pending, facts per trace, parent links per trace: the
  limits of the live lean design, every refusal counted); an agent span or a local root (no parent
  id) ends a run, which is assembled at the end of what held it — a JSON line (one request), or a
  resource of the protobuf file (decoded as one request) — as spans of one batch can come in any
  order; assembled by the lean design's own functions: facts claimed by their
  nearest enclosing agent span, requested and executed calls merged by id then by name;
* **out**: one ``__slots__`` record per run (trace id, root span id, agent name, conversation id,
  tool names, calls with their status). No pydantic model, no content.

What it leaves out, compared with ours: every other convention and framework rule, content (user
request, answer, arguments, results, history, available tools), the run model, problems reported
per span, gzip and log inputs, streaming a protobuf file a resource at a time, and holding a trace
until spans that end after its root have come. Like the lean design it imports nothing of ours (its
value decoders included): a floor that ran our code would move with it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .lean_design import (
    AGENT,
    LLM,
    TOOL,
    Convention,
    Fact,
    claim,
    makes_run,
    merge_calls,
    read_fact,
    run_agent,
    span_role,
)

__all__ = ["LeanOfflineReader", "LeanRun", "read_runs"]

_ERROR_CODE = 2  # Status.STATUS_CODE_ERROR


def _any_value(v: Any) -> Any:
    """A protobuf ``AnyValue`` as the plain value the SDK would hold."""
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return v.string_value
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind)


def _json_value(v: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` object as the plain value the SDK would hold."""
    if type(v) is not dict:
        return None
    s = v.get("stringValue")
    if s is not None:
        return s
    for kind, value in v.items():
        if kind == "intValue":
            return int(value)
        if kind in ("boolValue", "doubleValue"):
            return value
        if kind == "arrayValue":
            return [_json_value(x) for x in value.get("values", ())] if type(value) is dict else None
        if kind == "kvlistValue":
            return ({kv.get("key"): _json_value(kv.get("value")) for kv in value.get("values", ())}
                    if type(value) is dict else None)
        if kind == "bytesValue":
            return value
    return None


class _LazyAttributes(dict):  # type: ignore[type-arg]
    """A span's attributes, key to its undecoded value: decoded by ``_decode`` only when looked up."""

    __slots__ = ()
    _decode: Any

    def get(self, key: str, default: Any = None) -> Any:
        v = dict.get(self, key)
        return default if v is None else self._decode(v)

    def __getitem__(self, key: str) -> Any:
        return self._decode(dict.__getitem__(self, key))


class _ProtoAttributes(_LazyAttributes):
    """Values are protobuf ``AnyValue`` messages."""

    __slots__ = ()
    _decode = staticmethod(_any_value)


class _JsonAttributes(_LazyAttributes):
    """Values are OTLP/JSON value objects."""

    __slots__ = ()
    _decode = staticmethod(_json_value)


class LeanRun:
    """One run read: where it is, whose it is, and its calls in order (tool name, status)."""

    __slots__ = ("agent_name", "calls", "conversation_id", "root_span_id", "trace_id")

    def __init__(self, trace_id: str, root_span_id: str, agent_name: str | None, conversation_id: str | None,
                 calls: list[tuple[str, str]]) -> None:
        self.trace_id = trace_id
        self.root_span_id = root_span_id
        self.agent_name = agent_name
        self.conversation_id = conversation_id
        self.calls = calls

    @property
    def names(self) -> list[str]:
        return [name for name, _status in self.calls]


class _Trace:
    """One trace being read: parent links, facts not yet in a run, agent spans, roots to assemble."""

    __slots__ = ("agents", "facts", "parents", "roots")

    def __init__(self) -> None:
        self.parents: dict[Any, Any] = {}
        self.facts: list[Fact] = []
        self.agents: set[Any] = set()
        self.roots: list[tuple[Any, Mapping[str, Any], Convention | None, str | None, bool]] = []


class LeanOfflineReader:
    """Reads runs out of OTLP files (see the module doc); ``drops`` counts what a limit refused."""

    def __init__(self, *, max_pending_traces: int = 10_000, max_spans_per_trace: int = 2_000,
                 max_known_spans_per_trace: int = 20_000, max_calls_per_run: int = 1_000) -> None:
        self._max_traces = max_pending_traces
        self._max_facts = max_spans_per_trace
        self._max_known = max_known_spans_per_trace
        self._max_calls = max_calls_per_run
        self._traces: dict[Any, _Trace] = {}
        self._ready: dict[Any, _Trace] = {}
        self.drops: Counter[str] = Counter()
        self.spans = 0

    # -- inputs -------------------------------------------------------------------------------------
    def read_protobuf(self, path: Path) -> Iterator[LeanRun]:
        """The runs of concatenated OTLP protobuf export requests."""
        request = ExportTraceServiceRequest.FromString(path.read_bytes())
        span = self._span
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for sp in ss.spans:
                    attrs = _ProtoAttributes({kv.key: kv.value for kv in sp.attributes})
                    span(sp.trace_id, sp.span_id, sp.parent_span_id or None, attrs, sp.name,
                         sp.start_time_unix_nano, sp.end_time_unix_nano, sp.status.code == _ERROR_CODE)
            yield from self._assemble_ready(bytes.hex)
        yield from self._finish(bytes.hex)

    def read_json_lines(self, path: Path) -> Iterator[LeanRun]:
        """The runs of an OTLP/JSON Lines file, one export request per line."""
        loads = json.loads
        span = self._span
        with path.open("rb") as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    doc = loads(line)
                except ValueError:
                    self.drops["malformed_line"] += 1
                    continue
                for rs in doc.get("resourceSpans", ()):
                    for ss in rs.get("scopeSpans", ()):
                        for sp in ss.get("spans", ()):
                            attrs = _JsonAttributes({kv.get("key"): kv.get("value") for kv in sp.get("attributes", ())})
                            status = sp.get("status")
                            span(sp.get("traceId"), sp.get("spanId"), sp.get("parentSpanId") or None, attrs,
                                 sp.get("name"), int(sp.get("startTimeUnixNano") or 0),
                                 int(sp.get("endTimeUnixNano") or 0),
                                 type(status) is dict and status.get("code") in (2, "STATUS_CODE_ERROR"))
                yield from self._assemble_ready(str)
        yield from self._finish(str)

    # -- spans --------------------------------------------------------------------------------------
    def _span(self, trace_id: Any, sid: Any, parent: Any, a: Mapping[str, Any], name: str | None,
              start: int, end: int, error: bool) -> None:
        self.spans += 1
        st = self._traces.get(trace_id)
        if st is None:
            if len(self._traces) >= self._max_traces:
                oldest = next(iter(self._traces))
                self._ready.pop(oldest, None)
                del self._traces[oldest]
                self.drops["pending_traces_limit"] += 1
            st = self._traces[trace_id] = _Trace()
        parents = st.parents
        if len(parents) < self._max_known:
            parents[sid] = parent
        else:
            self.drops["known_spans_limit"] += 1
        role, conv = span_role(a)
        if role in (TOOL, LLM):
            assert conv is not None
            if len(st.facts) >= self._max_facts:
                self.drops["spans_per_trace_limit"] += 1
            else:
                f = read_fact(a, conv, role, parent, start, end, error, name, self._max_calls, self.drops)
                if f is not None:
                    st.facts.append(f)
        if role == AGENT:
            st.agents.add(sid)
        if role == AGENT or parent is None:
            st.roots.append((sid, a, conv, name, parent is None))
            self._ready[trace_id] = st

    # -- runs ---------------------------------------------------------------------------------------
    def _assemble_ready(self, hexed: Any) -> Iterator[LeanRun]:
        if not self._ready:
            return
        ready, self._ready = self._ready, {}
        for trace_id, st in ready.items():
            roots, st.roots = st.roots, []
            done = False
            for sid, a, conv, name, local in roots:
                run = self._run(st, trace_id, sid, a, conv, name, hexed)
                if run is not None:
                    yield run
                done = done or local
            if done:
                self._traces.pop(trace_id, None)

    def _run(self, st: _Trace, trace_id: Any, sid: Any, a: Mapping[str, Any], conv: Convention | None,
             name: str | None, hexed: Any) -> LeanRun | None:
        facts = claim(st, sid)
        if not makes_run(sid, facts, st.agents):
            return None
        calls = merge_calls(facts, self._max_calls, self.drops)
        agent_name, conversation = run_agent(a, conv, facts, name)
        out = [((c.name or "", c.status) if type(c) is Fact else (c[1], "ok")) for c in calls]  # type: ignore[index]
        return LeanRun(hexed(trace_id), hexed(sid), agent_name, conversation, out)

    def _finish(self, hexed: Any) -> Iterator[LeanRun]:
        """Traces whose local root never came: counted, their facts not scored."""
        yield from self._assemble_ready(hexed)
        unfinished = sum(1 for st in self._traces.values() if st.facts)
        if unfinished:
            self.drops["trace_without_root"] += unfinished
        self._traces.clear()


def read_runs(path: Path, protobuf: bool) -> list[LeanRun]:
    """Every run of ``path`` read by a fresh :class:`LeanOfflineReader`."""
    reader = LeanOfflineReader()
    return list(reader.read_protobuf(path) if protobuf else reader.read_json_lines(path))
