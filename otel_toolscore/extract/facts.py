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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model import ToolCall, ToolDefinition
from .hints import RunHints
from .values import REDACTION_MARKERS, Bad, RawCall, literal, load_json, maybe_json, plain, truncate, truncate_value

__all__ = ["DEFAULT_OPTIONS", "ExtractOptions", "Requested", "SpanFacts", "root_attributes"]


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


def root_attributes(attrs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The short scalar attributes of a run root (content and bulky keys left out), for rules."""
    out: dict[str, Any] = {}
    if not attrs:
        return out
    for key, value in attrs.items():
        if key.startswith(_BULKY_PREFIXES):
            continue
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

    def to_call(self) -> ToolCall:
        return ToolCall(
            name=self.name,
            call_id=self.call_id,
            arguments=self.arguments,
            result=self.result,
            status="error" if self.status == "error" else "ok",
            error_type=self.error_type,
            kind="framework" if self.kind == "framework" else "tool",
            source="requested",
            span_id=self.span_id,
            start_time_unix_nano=self.start_time_unix_nano,
            end_time_unix_nano=None,
            message_index=None,
            invocation_index=self.invocation_index,
        )


#: A deferred parser: fills content fields of ``facts`` from one raw value.
Deferred = Callable[["SpanFacts", Any, ExtractOptions], None]


@dataclass(slots=True)
class SpanFacts:
    """What one span or log record contributes (see the module docstring for the two phases).

    ``role``: ``"agent"`` (bounds a run), ``"tool"`` (an executed call), ``"llm"`` (a model call),
    ``"other"`` (carries run-level facts only, e.g. a ``CHAIN`` root's input/output).
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
    #: run facts a step / tool / crew span carries for a run it does not bound (see :mod:`.hints`)
    hints: RunHints | None = None
    deferred: list[tuple[Deferred, Any]] = field(default_factory=list)
    # -- filled by materialize() --------------------------------------------------------------
    call: ToolCall | None = None
    requested: list[Requested] = field(default_factory=list)
    #: requested calls that come from a whole-conversation dump (used only when no model span has any)
    requested_fallback: list[Requested] = field(default_factory=list)
    history_ids: set[str] = field(default_factory=set)
    #: the model call's input messages were recorded (even if content is then dropped)
    saw_input: bool = False
    #: the model call's output was recorded (text or calls, even if content is then dropped)
    saw_output: bool = False
    #: tool calls replayed in this model call's input (name, id, arguments), in order
    history_calls: list[RawCall] = field(default_factory=list)
    #: tool results seen in messages, by call id: (value, error type or None)
    results: dict[str, tuple[Any, str | None]] = field(default_factory=dict)
    user_query: str | None = None
    final_output: str | None = None
    tools: list[ToolDefinition] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: tool calls in this span's messages past ``max_calls_per_run`` (never built; counted by the caller)
    dropped_calls: int = 0
    #: content values longer than ``max_parse_chars``, left unparsed (counted by the caller)
    unparsed: int = 0
    materialized: bool = False

    def defer(self, parser: Deferred, value: Any) -> None:
        self.deferred.append((parser, value))

    def held_chars(self) -> int:
        """Characters of raw content this (not yet materialized) fact keeps a reference to."""
        return sum(_text_size(v) for v in (self.raw_arguments, self.raw_result, *(v for _, v in self.deferred)))

    def materialize(self, options: ExtractOptions | None = None) -> SpanFacts:
        """Run the deferred parsers and build the executed :class:`ToolCall` (idempotent)."""
        if self.materialized:
            return self
        opts = options or DEFAULT_OPTIONS
        self.materialized = True
        for parser, value in self.deferred:
            if (size := _text_size(value)) > opts.max_parse_chars:
                self._unparsed(parser.__name__, size, opts)
                continue
            try:
                parser(self, plain(value), opts)  # live values arrive as tuples / read-only mappings
            except Exception as exc:  # a reader bug or an odd shape must not lose the rest of the run
                self.problems.append(f"span {self.span_id}: {parser.__name__} failed: {type(exc).__name__}: {exc}")
        self.deferred = []
        if self.tool_name is not None and self.role == "tool":
            result = self._content(self.raw_result, opts, "result")
            if self.status != "error" and _reports_error(self.raw_result):
                # Mastra answers invalid arguments with status OK and {"error": true, "message": ...}
                self.status = "error"
                self.error_type = self.error_type or "tool_error"
            self.call = ToolCall(
                name=self.tool_name,
                call_id=self.call_id,
                arguments=self._content(self.raw_arguments, opts, "arguments"),
                result=result,
                status="error" if self.status == "error" else "ok",
                error_type=self.error_type,
                kind="framework" if (self.framework or opts.is_framework(self.tool_name)) else "tool",
                source="span",
                span_id=self.span_id,
                start_time_unix_nano=self.start_time_unix_nano or None,
                end_time_unix_nano=self.end_time_unix_nano or None,
                message_index=None,
                invocation_index=None,
            )
        self.raw_arguments = self.raw_result = None  # the call holds the (truncated) content now
        if not opts.capture_content:
            self.user_query = None
            self.final_output = None
        else:
            # surrounding whitespace is formatting (Strands appends "\n" to answers), not content
            self.user_query = truncate(self.user_query.strip() or None if self.user_query else None, opts.max_chars)
            self.final_output = truncate(self.final_output.strip() or None if self.final_output else None, opts.max_chars)
        return self

    def _content(self, value: Any, opts: ExtractOptions, what: str) -> Any:
        if value is None or not opts.capture_content or (isinstance(value, str) and value in REDACTION_MARKERS):
            return None
        value = plain(value)
        if isinstance(value, str) and not self.too_long(value, opts, f"{what} of {self.tool_name}"):
            parsed = maybe_json(value)
            if parsed is value and value[:1] in ("{", "[") and isinstance(load_json(value), Bad):
                self.problems.append(f"span {self.span_id}: {what} of {self.tool_name} is not valid JSON")
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
        self.problems.append(
            f"span {self.span_id}: {what}: {size:,} characters, over max_parse_chars ({opts.max_parse_chars:,}): not parsed"
        )


def _text_size(value: Any) -> int:
    """Characters of JSON text a deferred parser is given whole: a string, or the strings of a small
    tuple (an event's ``(name, body)``, a wrapper's ``(arguments, parameters)``). Parsers given a
    mapping (flattened attributes) parse piece by piece, each piece through ``parsed_content``."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, tuple) and len(value) <= 2:
        return sum(len(v) for v in value if isinstance(v, (str, bytes, bytearray)))
    return 0


def _reports_error(raw: Any) -> bool:
    """A tool result that says the call failed: ``{"error": true, ...}`` / ``{"isError": true}``."""
    if isinstance(raw, str):
        if '"error"' not in raw and '"isError"' not in raw:
            return False
        raw = maybe_json(raw)
    return isinstance(raw, Mapping) and (raw.get("error") is True or raw.get("isError") is True)
