"""How the core reads the spans each adapter gives it: a :class:`SpanSource` per kind of span object.

The core never looks into a span itself. The span processor feeds it the SDK's own span objects
(:data:`SDK_SPANS`); the scoring service, spans decoded from OTLP requests
(:mod:`otel_toolscore.service.views`). A source answers the few questions the core asks of a span —
its ids, its facts (through the extractor's readers), the role its start shows, its attributes, whether
it was sampled — each with as little work as that kind of object allows.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from opentelemetry.sdk.trace import ReadableSpan

from ..extract import ExtractOptions, SpanFacts, classify_start, read_span, record_from_readable
from ..extract._fast_read import read_live_oi_span, read_live_span
from ..extract._readers import AGENT_OPS, ROLE_OPS, may_have_facts
from ..extract._records import has_events, plain_attributes

__all__ = ["BARE_START", "CONTEXT_IS_TUPLE", "SDK_SPANS", "HexIds", "SdkSpans", "SpanIds", "SpanSource", "may_root_by_attributes", "scored_copy"]

_log = logging.getLogger(__name__)

#: (trace id, span id as 16 hex digits, parent span id or ``None``, whether the span is a local root:
#: no parent, or a remote one)
SpanIds = tuple[int, str, "str | None", bool]
#: (trace id as 32 hex digits, span id, parent span id or ``None``) of a span the caller has read
HexIds = tuple[str, str, "str | None"]


class SpanSource(Protocol):
    """What the core asks of a span object (see the module docstring)."""

    def ids(self, span: Any) -> SpanIds | None: ...

    def read(self, span: Any, options: ExtractOptions, ids: HexIds | None = None) -> SpanFacts | None: ...

    def role_at_start(self, span: Any) -> str | None: ...

    def attributes(self, span: Any) -> Mapping[str, Any]: ...

    def sampled(self, span: Any) -> bool: ...

    def may_root(self, span: Any) -> bool: ...


class SdkSpans:
    """The OpenTelemetry SDK's ``ReadableSpan`` (and ``Span``) objects."""

    @staticmethod
    def ids(span: Any) -> SpanIds | None:
        try:
            ctx = span._context
            parent = span._parent
        except AttributeError:
            ctx = span.context
            parent = span.parent
        if ctx is None:
            return None
        if CONTEXT_IS_TUPLE:  # (trace id, span id, is remote, …): no property call per field
            try:  # a 64-bit id's 16 hex digits: its 8 bytes' hex costs less than "%016x" (callgrind)
                if parent is None:
                    return ctx[0], ctx[1].to_bytes(8, "big").hex(), None, True
                return ctx[0], ctx[1].to_bytes(8, "big").hex(), parent[1].to_bytes(8, "big").hex(), parent[2]
            except (OverflowError, AttributeError, TypeError):  # no 64-bit id: as "%016x" writes it (or refuses)
                pass
            if parent is None:
                return ctx[0], "%016x" % ctx[1], None, True
            return ctx[0], "%016x" % ctx[1], "%016x" % parent[1], parent[2]
        if parent is None:
            return ctx.trace_id, "%016x" % ctx.span_id, None, True
        return ctx.trace_id, "%016x" % ctx.span_id, "%016x" % parent.span_id, parent.is_remote

    @staticmethod
    def read(span: Any, options: ExtractOptions, ids: HexIds | None = None) -> SpanFacts | None:
        try:
            a = span._attributes._dict
        except AttributeError:
            a = plain_attributes(span)
        facts = None
        if "gen_ai.operation.name" in a:
            facts = read_live_span(span, options, ids, a)  # a scalar GenAI span: one table lookup
        elif "openinference.span.kind" in a:
            facts = read_live_oi_span(span, options, ids, a)  # an OpenInference span: its reader alone
        if facts is None and may_have_facts(span.name, a, has_events(span)):
            facts = read_span(record_from_readable(span), options)
        # else: an HTTP, database, queue … span: only its parent link matters
        return facts

    @staticmethod
    def role_at_start(span: Any) -> str | None:
        return classify_start(span.name, plain_attributes(span))

    @staticmethod
    def attributes(span: Any) -> Mapping[str, Any]:
        return plain_attributes(span)

    @staticmethod
    def sampled(span: Any) -> bool:
        try:
            ctx = span._context
        except AttributeError:
            ctx = span.context
        if ctx is None:
            return True
        return bool(ctx[3] & 1) if CONTEXT_IS_TUPLE else bool(ctx.trace_flags.sampled)  # the W3C sampled bit

    @staticmethod
    def may_root(span: Any) -> bool:
        """Whether an ended span may be a run's root (:func:`may_root_by_attributes`). Runs on the
        worker for every span (on the application's thread when the queue is full): the SDK span's
        fields are read directly."""
        name: str
        try:
            parent = span._parent
            attrs = span._attributes._dict
            name = span._name
        except AttributeError:
            parent = span.parent
            attrs = plain_attributes(span)
            name = span.name
        if parent is None or (parent[2] if CONTEXT_IS_TUPLE else parent.is_remote):
            return True
        # the commonest answers, as may_root_by_attributes gives them, without its call: a GenAI
        # operation alone, or an OpenInference kind spelled as the spec spells it
        op = attrs.get("gen_ai.operation.name")
        if type(op) is str:
            answer = _OP_ROOTS.get(op)
            if answer is True or (answer is False and "openinference.span.kind" not in attrs):
                return answer
        elif op is None:
            kind = attrs.get("openinference.span.kind")
            if type(kind) is str:
                roots = _ROOTS_BY_KIND.get(kind)
                if roots is not None:
                    return roots or name.startswith("invoke_agent")
        return may_root_by_attributes(name, attrs, False)


def may_root_by_attributes(name: str, attrs: Mapping[str, Any], local_root: bool) -> bool:
    """Whether an ended span may be a run's root — a local root, or an agent span by the table of
    keys: the adapter leaves such a span to the core to hand on (with the score when there is one)."""
    if local_root:
        return True
    op = attrs.get("gen_ai.operation.name")
    if op is not None and op in AGENT_OPS:  # what the GenAI reader decides first
        return True
    kind = attrs.get("openinference.span.kind")
    if kind is not None:
        roots = _ROOTS_BY_KIND.get(kind) if type(kind) is str else None  # the spelling the spec gives
        if roots is None:
            roots = str(kind).upper() not in _NEVER_ROOTS
        if roots:
            # an agent, or a chain that roots a graph run when its parent is a tool span (the core
            # tells which when the batch is settled; it hands on the others unchanged)
            return True
        if op is None:
            # an OpenInference model, tool or evaluator span: classify_start names none of them an
            # agent but by a GenAI agent's span name
            return name.startswith("invoke_agent")
    if op is not None and op in ROLE_OPS:
        return False  # a model or tool span by the GenAI reader, whatever else it carries
    return classify_start(name, attrs) == "agent"


#: GenAI operations that settle :func:`may_root_by_attributes` alone: an agent's (a root), a model's or
#: a tool's (none, unless the span also carries an OpenInference kind).
_OP_ROOTS: dict[str, bool] = {**dict.fromkeys(ROLE_OPS, False), **dict.fromkeys(AGENT_OPS, True)}
#: OpenInference span kinds that never root a run (a model call, an executed call, an evaluator).
_NEVER_ROOTS = frozenset({"LLM", "TOOL", "EVALUATOR"})
#: the answer for each kind as the OpenInference spec spells it (any other spelling: upper-cased first)
_ROOTS_BY_KIND = {
    kind: kind not in _NEVER_ROOTS
    for kind in ("LLM", "TOOL", "EVALUATOR", "AGENT", "CHAIN", "RETRIEVER", "EMBEDDING", "RERANKER", "GUARDRAIL",
                 "PROMPT", "UNKNOWN")
}


def _context_is_tuple() -> bool:
    """Whether the API's ``SpanContext`` is the tuple ``(trace_id, span_id, is_remote, trace_flags, …)``
    it has always been (checked once: reading its fields by index skips a property call each)."""
    from opentelemetry.trace import SpanContext, TraceFlags

    probe = SpanContext(7, 9, True, TraceFlags(1))
    try:
        return isinstance(probe, tuple) and probe[0] == 7 and probe[1] == 9 and probe[2] is True and probe[3] == 1
    except Exception:  # pragma: no cover - a future API
        return False


#: whether ``ctx[0]``, ``ctx[1]``, ``ctx[2]``, ``ctx[3]`` read a span context's trace id, span id,
#: ``is_remote`` and trace flags (for the adapters' hooks too: no property call)
CONTEXT_IS_TUPLE = _context_is_tuple()


class _NoBareStart:
    """Stands for the SDK's started-span class where that class is not found: no object is of it."""


def _bare_start() -> type:
    """The class of the spans the SDK's tracer starts, when the SDK hands ``on_end`` a snapshot of
    another class (``ReadableSpan``): a queue item of that class can then only be a span's start, and
    the span processor queues a start that captured nothing as the span itself (no tuple). Otherwise
    a class no span is of: every start keeps its tuple."""
    try:
        from opentelemetry.sdk.trace import Span, _Span

        if issubclass(_Span, Span) and hasattr(Span, "_readable_span"):
            return _Span
    except ImportError:  # pragma: no cover - a future SDK
        pass
    return _NoBareStart


#: what a bare queue item of this class means: a span's start with no context captured (see
#: :func:`_bare_start`); any other bare item is a span's end
BARE_START: type = _bare_start()
SDK_SPANS = SdkSpans()


def scored_copy(span: ReadableSpan, added: dict[str, Any]) -> ReadableSpan:
    """A copy of an ended ``span`` carrying ``added`` attributes too (an ended span is immutable)."""
    attrs = dict(plain_attributes(span))  # a C-level copy (the public proxy iterates in Python)
    attrs.update(added)
    if type(span) is ReadableSpan:
        fields = getattr(span, "__dict__", None)
        if fields is not None and "_attributes" in fields:
            # the SDK's own snapshot: its fields as they are, the attributes replaced (what the
            # constructor below stores, without a property call per field)
            copy = _new(ReadableSpan)
            copy.__dict__ = {**fields, "_attributes": attrs}
            return copy
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attrs,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


_new = object.__new__
