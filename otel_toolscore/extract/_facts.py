"""What one span (or log record) contributes to a run: :class:`SpanFacts`, and the options.

Two phases keep the hot path cheap:

* :func:`~otel_toolscore.extract.read_span` fills the *cheap* fields only: role, ids, names, the
  executed tool's name / call id / status, times, conventions. Content-bearing attributes (message
  JSON, tool definitions, flattened OpenInference keys, arguments and results) are not parsed: the
  reader records *which* parser applies to *which* value in ``deferred`` (a reference to the value
  the span already holds, not a copy).
* :meth:`SpanFacts.materialize` (called by :func:`~otel_toolscore.extract.assemble_runs`, once per
  run when its root ends) runs the deferred parsers, truncates content to
  :class:`ExtractOptions` limits and builds the :class:`~otel_toolscore.model.ToolCall` objects.

With ``capture_content=False`` the readers materialize at once instead: tool names and ids are taken
from the messages and every content value is dropped, so a pending run holds no reference to the
application's prompts, arguments or results (what the processor keeps while a run is open).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from ..run_records import CallRecord, ToolRecord
from ._hints import RunHints
from ._records import plain_attributes
from ._values import REDACTION_MARKERS, Bad, RawCall, literal, load_json, maybe_json, plain, truncate, truncate_value

__all__ = ["ANSWER_PARSERS", "DEFAULT_OPTIONS", "EVENT_INPUT_PARSERS", "INPUT_PARSERS", "KEYED_PARSERS", "OUTPUT_PARSERS", "PARSER_KEYS", "REQUEST_PARSERS", "TEXT_PARSERS", "ExtractOptions", "Requested", "SpanFacts", "root_attributes"]


@dataclass(frozen=True, slots=True)
class ExtractOptions:
    """Limits and choices of the extractor.

    Attributes:
        max_chars: longest text / argument / result kept (longer ones are truncated, marked).
        capture_content: keep arguments, results, query and answer; ``False`` keeps names only.
        framework_tool_names: tool names the framework calls for itself (output tools).
        framework_tool_prefixes: name prefixes of framework calls (handoffs, numbered output tools).
        include_framework_calls: keep framework calls in ``AgentRun.tool_calls`` (as
            ``kind="framework"``; scorers skip them unless asked). ``False`` drops them.
        max_calls_per_run: calls kept per run; further ones are dropped and counted.
        max_deferred_chars: content a span may leave unparsed until assembly; a span carrying more
            (long histories in every model span of a long run) is parsed at read time, so a pending
            run holds truncated facts instead of the raw strings.
        max_parse_chars: longest JSON text parsed at all (a message list, tool definitions, a tool's
            arguments or result). A parser holds the interpreter lock for its whole call (~15 ms per
            MiB of message objects on the 2-core test machine), and every application thread waits;
            longer text is not parsed (its calls are not seen), counted and reported.
    """

    max_chars: int = 8192
    capture_content: bool = True
    framework_tool_names: frozenset[str] = frozenset({"final_result", "final_answer", "handoff_to_agent"})
    framework_tool_prefixes: tuple[str, ...] = ("transfer_to_", "final_result_", "handoff to ")
    include_framework_calls: bool = True
    max_calls_per_run: int = 2000
    max_deferred_chars: int = 32768
    max_parse_chars: int = 1_048_576

    def is_framework(self, name: str) -> bool:
        return name in self.framework_tool_names or name.startswith(self.framework_tool_prefixes)


DEFAULT_OPTIONS = ExtractOptions()

#: Attribute keys whose values are content or bulky, never copied into ``AgentRun.attributes``.
_BULKY_PREFIXES = ("gen_ai.input.", "gen_ai.output.", "gen_ai.system_instructions", "gen_ai.tool.definitions",
                   "llm.input_messages", "llm.output_messages", "input.value", "output.value", "ai.prompt",
                   "ai.response", "pydantic_ai.all_messages", "traceloop.entity.input", "traceloop.entity.output",
                   "gcp.vertex.agent.llm_", "final_result")
_MAX_ATTR_CHARS = 256
_BULKY_KEYS: dict[str, bool] = {}
_UNREAD = object()


def root_attributes(attrs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The short scalar attributes of a run root (content and bulky keys left out), for rules."""
    out: dict[str, Any] = {}
    if not attrs:
        return out
    bulky = _BULKY_KEYS
    # a decoded span's mapping (:mod:`._otlp_views`) decodes a value when it is read: content and
    # bulky values are then never read at all (its keys() keep the span's order, iter() does not)
    pairs = attrs.items() if type(attrs) is dict else ((k, _UNREAD) for k in attrs.keys())  # noqa: SIM118
    for key, value in pairs:
        skip = bulky.get(key)
        if skip is None:
            skip = key.startswith(_BULKY_PREFIXES)
            if len(bulky) < 4096:  # a process sees a bounded set of attribute keys; memoised
                bulky[key] = skip
        if skip:
            continue
        if value is _UNREAD:
            value = attrs[key]
        if isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= _MAX_ATTR_CHARS):
            out[key] = value
    return out


class Requested:
    """A call the model requested (read from its output), kept light until assembly: most are
    matched to the executed call's span and never become a :class:`ToolCall` of their own."""

    __slots__ = (
        "arguments", "call_id", "error_type", "invocation_index", "kind", "name", "result", "span_id",
        "start_time_unix_nano", "status",
    )

    def __init__(
        self, name: str, call_id: str | None, arguments: Any, kind: str, span_id: str, start: int | None, index: int
    ) -> None:
        self.name = name
        self.call_id = call_id
        self.arguments = arguments
        self.result: Any = None
        self.status = "ok"
        self.error_type: str | None = None
        self.kind = kind
        self.span_id: str | None = span_id
        self.start_time_unix_nano = start
        self.invocation_index = index

    def to_call(self) -> CallRecord:
        return CallRecord(
            self.name,
            self.call_id,
            self.arguments,
            self.result,
            "error" if self.status == "error" else "ok",
            self.error_type,
            "framework" if self.kind == "framework" else "tool",
            "requested",
            self.span_id,
            self.start_time_unix_nano,
            None,
            None,
            self.invocation_index,
        )


#: A deferred parser: fills content fields of ``facts`` from one raw value.
Deferred = Callable[["SpanFacts", Any, ExtractOptions], None]

#: Parsers of what a model was given (input messages, the request): :meth:`SpanFacts.defer` leaves
#: them for :meth:`SpanFacts.materialize_inputs` (registered by :mod:`._content`).
INPUT_PARSERS: set[Deferred] = set()
#: The attribute keys a parser's value is usually held under (registered where the readers are
#: defined): :meth:`SpanFacts._by_reference` looks there before it walks the span's attributes.
PARSER_KEYS: dict[Deferred, tuple[str, ...]] = {}
#: Parsers that fill nothing but the answer's text (left out when content is not kept).
TEXT_PARSERS: set[Deferred] = set()
#: Input parsers that fill nothing but the user's request (``user_query``), which only the
#: assembler's ``_first_query`` reads, fact by fact, parsing as it goes: a fact that holds nothing
#: else for later is left to it when a trace's inputs are parsed for its calls.
REQUEST_PARSERS: set[Deferred] = set()
#: Parsers that fill nothing but the answer's text (``final_output``), which only the assembler's
#: ``_first_answer`` reads, fact by fact, parsing as it goes (the run's root, else its last model
#: call): with input content waiting, a span's answer waits with it where the span's other parsers
#: are all input parsers (none of which touches the answer), so the order they run in changes nothing.
ANSWER_PARSERS: set[Deferred] = set()
#: Parsers of what a model (or agent) answered that never touch what an input parser fills (the
#: request, the history, ``saw_input``) and set a result only where none is yet: run before the
#: input parsers of the same span, they leave the facts as running everything in order does. Only
#: spans whose other parsers are all of these may leave their inputs for later with content kept
#: (``materialize(defer_inputs=True)``: the offline reader).
OUTPUT_PARSERS: set[Deferred] = set()
#: Parsers given a span's whole attribute mapping that look up a few keys in it: handed the mapping
#: as it is, not a plain copy of every value in it.
KEYED_PARSERS: set[Deferred] = set()
#: Input parsers of a span's events (its ``gen_ai.*.message`` history): with content not kept they wait
#: only where every other parser of the span is one of :data:`OUTPUT_PARSERS`; anywhere else they run
#: at once with the span's other parsers, in order (one that reads the history too, OpenLLMetry's
#: indexed prompt say, then sees it as it always did).
EVENT_INPUT_PARSERS: set[Deferred] = set()

#: Characters a flattened attribute is taken to hold when a mapping of them is kept for later.
_CHARS_PER_FLAT_KEY = 64

class InSpan:
    """Where input content waits: an attribute of the facts' ``holder`` (``key``), or all of them."""

    __slots__ = ("key",)

    def __init__(self, key: str | None) -> None:
        self.key = key

    def __eq__(self, other: object) -> bool:
        return type(other) is InSpan and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"InSpan({self.key!r})"


IN_SPAN_ATTRIBUTES = InSpan(None)


class _NoResults(Mapping[str, Any]):
    """The empty, shared ``results`` of facts that found none (immutable, so hashable)."""

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"


_NO_RESULTS: Mapping[str, tuple[Any, str | None]] = _NoResults()
_new = object.__new__


@dataclass(eq=False)
class SpanFacts:
    """What one span or log record contributes (see the module docstring for the two phases).

    ``role``: ``"agent"`` (bounds a run), ``"tool"`` (an executed call), ``"llm"`` (a model call),
    ``"other"`` (carries run-level facts only, e.g. a ``CHAIN`` root's input/output).

    Most spans fill a handful of fields: every other field reads its class-level default (immutable:
    ``None``, ``0``, ``()``), and a collection is created only when something is put in it (through the
    ``add_*`` / ``set_*`` methods). :meth:`new` builds facts without touching the defaults at all.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    role: str
    name: str = ""
    conventions: tuple[str, ...] = ()
    start_time_unix_nano: int = 0
    end_time_unix_nano: int = 0
    agent_name: str | None = None
    agent_id: str | None = None
    conversation_id: str | None = None
    #: executed call (role ``tool``), cheap fields
    tool_name: str | None = None
    call_id: str | None = None
    raw_arguments: Any = None
    raw_result: Any = None
    status: str = "ok"
    error_type: str | None = None
    framework: bool = False
    #: the agent a handoff span hands over to (openai-agents' handoff spans), for run nesting
    handoff_to: str | None = None
    handoff_from: str | None = None
    #: the call a LangGraph ``tools`` task was given (``tool_call_with_context``): name, id, arguments
    context_call: RawCall | None = None
    #: the agent role came from a workflow marker (OpenLLMetry ``traceloop.span.kind=workflow``)
    workflow: bool = False
    #: a task span's entity name (OpenLLMetry), to find the work of an agent span left empty
    entity_name: str | None = None
    #: status message of a span that ended in error (a framework's "Tool not found: …" on a turn span)
    error_message: str | None = None
    from_log: bool = False
    #: span attributes of a run root, by reference (``AgentRun.attributes`` is built from them)
    attributes: Mapping[str, Any] | None = None
    #: run facts a step / tool / crew span carries for a run it does not bound (see :mod:`._hints`)
    hints: RunHints | None = None
    #: the application's span object the facts were read from (live spans only): input content left
    #: for later is read again from it, so pending facts hold no reference to the content itself
    holder: Any = None
    #: content parsers and the raw values they read; after :meth:`materialize`, only the input
    #: parsers a run may still need (see :meth:`materialize_inputs`)
    deferred: Sequence[tuple[Deferred, Any]] = ()
    # -- filled by materialize() --------------------------------------------------------------
    call: CallRecord | None = None
    requested: Sequence[Requested] = ()
    #: requested calls that come from a whole-conversation dump (used only when no model span has any)
    requested_fallback: Sequence[Requested] = ()
    history_ids: AbstractSet[str] = frozenset()
    #: the model call's input messages were recorded (even if content is then dropped)
    saw_input: bool = False
    #: the model call's output was recorded (text or calls, even if content is then dropped)
    saw_output: bool = False
    #: tool calls replayed in this model call's input (name, id, arguments), in order
    history_calls: Sequence[RawCall] = ()
    #: tool results seen in messages, by call id: (value, error type or None)
    results: Mapping[str, tuple[Any, str | None]] = _NO_RESULTS
    user_query: str | None = None
    final_output: str | None = None
    tools: Sequence[ToolRecord] = ()
    problems: Sequence[str] = ()
    #: tool calls in this span's messages past ``max_calls_per_run`` (never built; counted by the caller)
    dropped_calls: int = 0
    #: content values longer than ``max_parse_chars``, left unparsed (counted by the caller)
    unparsed: int = 0
    materialized: bool = False
    #: built whole by a table-driven reader (:mod:`._fast_read`) from a span without content, errors or
    #: another convention's keys: materialized, nothing deferred, nothing dropped or left unparsed, and
    #: none of the fields that send a trace to the general assembly rules is set (log origin, hints,
    #: handoffs, context call, error message, history, fallback requests) — the assembler's lean lane
    #: and the core take it without testing each (a class default is a slow read)
    plain: bool = False

    @classmethod
    def new(
        cls, trace_id: str, span_id: str, parent_span_id: str | None, role: str, name: str, start: int, end: int
    ) -> SpanFacts:
        """Facts with the fields every span has; the others keep their class-level defaults."""
        f = _new(cls)
        f.trace_id = trace_id
        f.span_id = span_id
        f.parent_span_id = parent_span_id
        f.role = role
        f.name = name
        f.start_time_unix_nano = start
        f.end_time_unix_nano = end
        return f

    # -- filling collections (created on first use) ---------------------------------------------
    def problem(self, message: str) -> None:
        if not self.problems:
            self.problems = []
        self.problems.append(message)  # type: ignore[attr-defined]

    def add_history_id(self, call_id: str) -> None:
        if not self.history_ids:
            self.history_ids = set()
        self.history_ids.add(call_id)  # type: ignore[attr-defined]

    def add_history_calls(self, calls: Iterable[RawCall]) -> None:
        if not self.history_calls:
            self.history_calls = []
        self.history_calls.extend(calls)  # type: ignore[attr-defined]

    def set_result(self, call_id: str, value: tuple[Any, str | None], *, replace: bool = True) -> None:
        """A tool result by call id; with ``replace=False`` an earlier one is kept."""
        if not self.results:
            self.results = {}
        if replace or call_id not in self.results:
            self.results[call_id] = value  # type: ignore[index]

    def add_tool(self, tool: ToolRecord) -> None:
        if not self.tools:
            self.tools = []
        self.tools.append(tool)  # type: ignore[attr-defined]

    def defer(self, parser: Deferred, value: Any) -> None:
        """Parse ``value`` with ``parser`` when the facts are materialized; a parser of input content
        (:data:`INPUT_PARSERS`) only when a run needs it (:meth:`materialize_inputs`)."""
        if not self.deferred:
            self.deferred = []
        self.deferred.append((parser, value))  # type: ignore[attr-defined]

    def held_chars(self) -> int:
        """Characters of raw content this (not yet materialized) fact keeps a reference to."""
        held = _text_size(self.raw_arguments) + _text_size(self.raw_result)
        for parser, v in self.deferred:
            v = self._held(v)
            if parser in INPUT_PARSERS and isinstance(v, Mapping):
                # a flattened conversation (OpenInference) is held as the span's attribute mapping: its
                # size is estimated from its number of keys, not measured (that is the walk put off)
                held += len(v) * _CHARS_PER_FLAT_KEY
            elif type(v) is tuple and len(v) == 2 and isinstance(v[1], Mapping):
                # an event's (name, attributes): measured, or too large to hold when they cannot be
                size = _event_chars(v)
                held += sys.maxsize if size is None else size
            else:
                held += _text_size(v)
        return held

    def materialize(self, options: ExtractOptions | None = None, *, defer_inputs: bool = False) -> SpanFacts:
        """Run the deferred parsers and build the executed call (idempotent).

        Parsers of input content (:data:`INPUT_PARSERS`) run too when content is captured; otherwise
        they stay in ``deferred`` for :meth:`materialize_inputs`. With ``defer_inputs`` they stay
        there with content captured too, where the span's other parsers are all
        :data:`OUTPUT_PARSERS` (so the order they run in changes nothing): the assembler parses them
        only for a run that needs them (its request, or calls decided by what the model was given).
        Where every other parser of the span is one of :data:`ANSWER_PARSERS` (a chain's
        ``output.value``), those wait too, until the assembler asks for the answer
        (:meth:`materialize_answer`)."""
        if self.materialized:
            return self
        opts = options or DEFAULT_OPTIONS
        self.materialized = True
        deferred = self.deferred
        if deferred:
            if opts.capture_content:
                if defer_inputs and _inputs_may_wait(deferred):
                    # inputs wait; so do answers when nothing else is beside them (the list stays as it is)
                    if not parsers_within(deferred, INPUT_PARSERS, ANSWER_PARSERS):
                        self.deferred = [d for d in deferred if d[0] in INPUT_PARSERS]
                        self._parse([d for d in deferred if d[0] not in INPUT_PARSERS], opts)
                else:
                    self.deferred = ()
                    self._parse(deferred, opts)
            else:  # parsers of text only are not run: without content their text is dropped anyway
                # an event's input (as an event holds it) may wait where only answers are read besides;
                # anywhere else it runs now, in its place among the span's other parsers
                held = _inputs_may_wait(deferred)
                now: list[tuple[Deferred, Any]] = []
                inputs: list[tuple[Deferred, Any]] = []
                for d in deferred:
                    parser = d[0]
                    if parser in INPUT_PARSERS and (held or parser not in EVENT_INPUT_PARSERS):
                        inputs.append(d)
                    elif parser not in TEXT_PARSERS:
                        now.append(d)
                self.deferred = (self._by_reference(inputs, opts, held) or ()) if inputs else ()
                self._parse(now, opts)
        if self.tool_name is not None and self.role == "tool":
            result = self._content(self.raw_result, opts, "result")
            if self.status != "error" and reports_error(self.raw_result):
                # Mastra answers invalid arguments with status OK and {"error": true, "message": ...}
                self.status = "error"
                self.error_type = self.error_type or "tool_error"
            self.call = CallRecord(
                self.tool_name,
                self.call_id,
                self._content(self.raw_arguments, opts, "arguments"),
                result,
                "error" if self.status == "error" else "ok",
                self.error_type,
                "framework" if (self.framework or opts.is_framework(self.tool_name)) else "tool",
                "span",
                self.span_id,
                self.start_time_unix_nano or None,
                self.end_time_unix_nano or None,
            )
        if self.raw_arguments is not None or self.raw_result is not None:
            self.raw_arguments = self.raw_result = None  # the call holds the (truncated) content now
        self._settle_texts(opts)
        return self

    def materialize_answer(self, options: ExtractOptions | None = None) -> SpanFacts:
        """Parse the answer :meth:`materialize` left waiting (:data:`ANSWER_PARSERS`), not the inputs
        beside it. Idempotent."""
        if not self.materialized:
            self.materialize(options)
        deferred = self.deferred
        if deferred and not _no_answer_waits(deferred):
            opts = options or DEFAULT_OPTIONS
            self.deferred = [d for d in deferred if d[0] not in ANSWER_PARSERS] or ()
            self._parse([d for d in deferred if d[0] in ANSWER_PARSERS], opts)
            self._settle_texts(opts)
        return self

    def materialize_inputs(self, options: ExtractOptions | None = None) -> SpanFacts:
        """Parse the input content :meth:`materialize` left (the history and results of earlier
        calls, the user's request). Idempotent."""
        if not self.materialized:
            self.materialize(options)
        if self.deferred:
            opts = options or DEFAULT_OPTIONS
            waiting, self.deferred = self.deferred, ()
            self._parse(waiting, opts)
            self._settle_texts(opts)
        return self

    def _by_reference(
        self, inputs: list[tuple[Deferred, Any]], opts: ExtractOptions, events: bool = False
    ) -> list[tuple[Deferred, Any]]:
        """Input content waiting for a run that may need it, held as a reference into the
        application's span where there is one (the span holds it anyway; we hold no copy of the
        content): an attribute's key, or the whole attribute mapping. With ``events``, a value an
        event of the span holds (its text, or its attributes: :func:`_event_chars` tells their size,
        which ``max_deferred_chars`` bounds) is held as it is too; anything else is parsed now.

        What is held is later parsed in the order the values were parsed before they could wait: an
        event's text first, then the events' history, then what the span's attributes hold."""
        holder = self.holder
        if holder is None:
            return inputs
        attrs = plain_attributes(holder)
        kept: list[tuple[Deferred, Any]] = []
        texts: list[tuple[Deferred, Any]] = []
        history: list[tuple[Deferred, Any]] = []
        for parser, value in inputs:
            if value is attrs:
                kept.append((parser, IN_SPAN_ATTRIBUTES))
                continue
            key: str | None = None
            if type(value) is not tuple:  # an event's (name, body): never an attribute's value
                for known in PARSER_KEYS.get(parser, ()):
                    if attrs.get(known) is value:
                        key = known
                        break
                else:
                    key = next((k for k, v in attrs.items() if v is value), None)
            if key is not None:
                kept.append((parser, InSpan(key)))
            elif events and _event_chars(value) is not None:  # an event's own text or attributes
                (history if type(value) is tuple else texts).append((parser, value))
            else:
                self._parse(((parser, value),), opts)
        return [*texts, *history, *kept] if texts or history else kept

    def _held(self, value: Any) -> Any:
        if type(value) is InSpan:
            attrs = plain_attributes(self.holder)
            return attrs if value.key is None else attrs.get(value.key)
        return value

    def _parse(self, parsers: Iterable[tuple[Deferred, Any]], opts: ExtractOptions) -> None:
        for parser, value in parsers:
            value = self._held(value)
            if value is None:
                continue
            if (size := _text_size(value)) > opts.max_parse_chars:
                self._unparsed(parser.__name__, size, opts)
                continue
            try:
                # live values arrive as tuples / read-only mappings: made plain, except for a parser that
                # reads a few keys of a whole attribute mapping (it makes plain what it reads)
                parser(self, value if parser in KEYED_PARSERS else plain(value), opts)
            except Exception as exc:  # a reader bug or an odd shape must not lose the rest of the run
                self.problem(f"span {self.span_id}: {parser.__name__} failed: {type(exc).__name__}: {exc}")

    def _settle_texts(self, opts: ExtractOptions) -> None:
        if not opts.capture_content:
            self.user_query = None
            self.final_output = None
        else:
            # surrounding whitespace is formatting (Strands appends "\n" to answers), not content
            if self.user_query is not None:
                self.user_query = truncate(self.user_query.strip() or None, opts.max_chars)
            if self.final_output is not None:
                self.final_output = truncate(self.final_output.strip() or None, opts.max_chars)

    def _content(self, value: Any, opts: ExtractOptions, what: str) -> Any:
        if value is None or not opts.capture_content or (isinstance(value, str) and value in REDACTION_MARKERS):
            return None
        value = plain(value)
        if isinstance(value, str) and not self.too_long(value, opts, f"{what} of {self.tool_name}"):
            parsed = maybe_json(value)
            if parsed is value and value[:1] in ("{", "[") and isinstance(load_json(value), Bad):
                self.problem(f"span {self.span_id}: {what} of {self.tool_name} is not valid JSON")
            value = parsed
        if isinstance(value, dict) and "input_str" in value:
            # LangChain callbacks via OpenLLMetry: {"input_str": "<python repr>", "tags", "metadata"}
            value = literal(value["input_str"])
        return truncate_value(value, opts.max_chars)


    def too_long(self, value: Any, opts: ExtractOptions, what: str) -> bool:
        """Is ``value`` text longer than ``max_parse_chars``? (Then it is counted and reported.)"""
        if isinstance(value, (str, bytes, bytearray)) and len(value) > opts.max_parse_chars:
            self._unparsed(what, len(value), opts)
            return True
        return False

    def json_text(self, value: Any, opts: ExtractOptions, what: str) -> Any:
        """``maybe_json`` for one attribute's text, unless it is too long to parse (then the text
        itself): parsers given a whole mapping go through this per piece."""
        return value if self.too_long(value, opts, what) else maybe_json(value)

    def parsed_content(self, value: Any, opts: ExtractOptions, what: str = "a message value") -> Any:
        """An argument or result from a message: JSON text parsed (unless too long), then truncated."""
        return truncate_value(self.json_text(value, opts, what), opts.max_chars)

    def _unparsed(self, what: str, size: int, opts: ExtractOptions) -> None:
        self.unparsed += 1
        self.problem(
            f"span {self.span_id}: {what}: {size:,} characters, over max_parse_chars ({opts.max_parse_chars:,}): not parsed"
        )


def parsers_within(deferred: Sequence[tuple[Deferred, Any]], one: Container[Deferred], other: Container[Deferred]) -> bool:
    """Whether every parser of ``deferred`` is in ``one`` or ``other``: with the input parsers and
    :data:`ANSWER_PARSERS`, whether a span's answer may wait with its inputs (:meth:`SpanFacts.materialize`);
    with :data:`REQUEST_PARSERS` and the answer parsers, whether what a fact left holds nothing but a
    request and an answer (the assembler's ``_first_query`` and ``_first_answer`` parse those when a
    run asks). A loop, not ``all()`` of a generator: this runs per fact."""
    for parser, _ in deferred:  # noqa: SIM110
        if parser not in one and parser not in other:
            return False
    return True


def _no_answer_waits(deferred: Sequence[tuple[Deferred, Any]]) -> bool:
    for parser, _ in deferred:  # noqa: SIM110 (a loop: this runs per fact of every run)
        if parser in ANSWER_PARSERS:
            return False
    return True


def _inputs_may_wait(deferred: Sequence[tuple[Deferred, Any]]) -> bool:
    """Whether the input parsers among ``deferred`` may run after the others (see :data:`OUTPUT_PARSERS`)."""
    inputs = False
    for parser, _ in deferred:
        if parser in INPUT_PARSERS:
            inputs = True
        elif parser not in OUTPUT_PARSERS:
            return False
    return inputs


_SCALARS = (int, float, bool, type(None))


def _event_chars(value: Any) -> int | None:
    """Characters an input value from a span event holds, where they can be told: a text, or an
    event's ``(name, body)`` whose body is a text or the event's attributes (their texts, and the
    texts in their sequences); ``None`` for anything else (then it is parsed at once, not held)."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if type(value) is not tuple or len(value) != 2 or not isinstance(value[0], str):
        return None
    name, body = value
    if isinstance(body, (str, bytes, bytearray)):
        return len(name) + len(body)
    if not isinstance(body, Mapping):
        return None
    chars = len(name)
    for v in body.values():
        if isinstance(v, (str, bytes, bytearray)):
            chars += len(v)
        elif isinstance(v, (tuple, list)):
            for item in v:
                if isinstance(item, (str, bytes, bytearray)):
                    chars += len(item)
                elif not isinstance(item, _SCALARS):
                    return None
        elif not isinstance(v, _SCALARS):
            return None
    return chars


def _text_size(value: Any) -> int:
    """Characters of JSON text a deferred parser is given whole: a string, or the strings of a small
    tuple (an event's ``(name, body)``, a wrapper's ``(arguments, parameters)``). Parsers given a
    mapping (flattened attributes) parse piece by piece, each piece through ``parsed_content``."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, tuple) and len(value) <= 2:
        return sum(len(v) for v in value if isinstance(v, (str, bytes, bytearray)))
    return 0


def reports_error(raw: Any) -> bool:
    """A tool result that says the call failed: ``{"error": true, ...}`` / ``{"isError": true}``."""
    if isinstance(raw, str):
        if '"error"' not in raw and '"isError"' not in raw:
            return False
        raw = maybe_json(raw)
    return isinstance(raw, Mapping) and (raw.get("error") is True or raw.get("isError") is True)
