"""The LLM-judged tool-call-accuracy scorer (Mastra's ``createToolCallAccuracyScorerLLM``).

Rules: ``spec/scorers.md``. One chat completion per run by default, asking for a JSON answer that
validates against a strict schema derived from :class:`JudgeAnswer`. Talks to any OpenAI-compatible
Chat Completions endpoint through the ``openai`` package, which is imported only when a client is
built so that ``import otel_toolscore`` stays light. ``run`` performs the judgment with an async
client on the scorer's own event-loop thread, so that its deadline can cancel it mid-read.

How the judge's answer is used (deterministic, never a made-up verdict):

* evaluations are paired with the run's counted calls by position. When the names differ only in
  order (same multiset), each call takes the first unused evaluation carrying its name; any other
  mismatch (wrong count, unknown name) is an invalid answer;
* an invalid answer (not JSON, wrong shape, mismatched evaluations) gets one corrective retry that
  shows the judge its reply and the problem; a second invalid answer raises
  ``JudgeError(kind="invalid_answer")``;
* missing tools are trimmed, empties dropped and duplicates removed (first occurrence kept); a
  tool the run called is dropped (it cannot be missing); when the available tools are known, a name
  not among them makes the answer invalid (corrective retry, as above);
* the whole judgment has a deadline (``deadline_s``: connect, send, every answer, retries); every
  failure is a :class:`JudgeError` whose ``kind`` says why;
* reported token usage that is negative, not an integer or absurd is replaced by an estimate.

Score = appropriate ÷ (evaluations + missing tools), rounded half-up to two decimals; no calls and
nothing missing → 1.0. For a run that called no tool, an answer holding a single evaluation of a
pseudo tool (``"None"``, ``"no tool"`` …: what Mastra's prompt makes real judges write) is the
judge's verdict on calling no tool: appropriate → 1.0, inappropriate → 0.0.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import copy
import json
import logging
import os
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from ..http_limits import DEFAULT_MAX_RESPONSE_BYTES, check_max_response_bytes
from ..model import AgentRun, ToolCall, ToolDefinition
from ..redact import Redactor, resolve_redactor
from . import _judge_prompt as prompt

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

__all__ = [
    "OUTPUT_MODES",
    "AnswerMismatchError",
    "JudgeAnalysis",
    "JudgeAnswer",
    "JudgeError",
    "JudgeErrorKind",
    "JudgeReason",
    "JudgeToolEvaluation",
    "JudgeUsage",
    "LLMAnalyzeResult",
    "LLMScoreResult",
    "OutputMode",
    "ToolCallAccuracyLLMScorer",
    "ToolEvaluation",
    "align_evaluations",
    "answer_schema_for",
    "build_judge_messages",
    "check_base_url",
    "check_missing_tools",
    "compute_score",
    "create_tool_call_accuracy_scorer_llm",
    "endpoint_output_mode",
    "estimate_tokens",
    "forget_endpoint_capabilities",
    "normalise_tools",
    "response_format_for",
    "score_answer",
]

JudgeErrorKind = Literal["timeout", "rate_limited", "error", "invalid_answer"]
_log = logging.getLogger(__name__)
ToolSpec = ToolDefinition | Mapping[str, Any] | str

DEFAULT_MAX_TEXT_CHARS = 4000
DEFAULT_MAX_ARGUMENT_CHARS = 1000
# The default deadline of a judgment, in request timeouts (2 x 30 s = 60 s by default).
DEADLINE_TIMEOUTS = 2
# A reported token count outside [0, this] for one request is not believed (the estimate is used).
MAX_REPORTED_TOKENS = 10_000_000
# The bad reply echoed back in a corrective retry is cut to this size (it costs prompt tokens).
_MAX_ECHO_CHARS = 2000
# Where the openai client sends requests without a base URL (the origin our client is pinned to).
_OPENAI_BASE_URL = "https://api.openai.com/v1"


def check_base_url(url: str) -> str:
    """``url`` if it is an ``http``/``https`` URL with a host (and a valid port), else ``ValueError``.

    The ``openai`` client would accept anything and fail at the first judgment (``file://``, a typo);
    this refuses such a value when the scorer or the judge settings are built.
    """
    from urllib.parse import urlsplit

    text = url.strip()
    try:
        parts = urlsplit(text)
        port_ok = parts.port is None or parts.port > 0
    except ValueError as exc:
        raise ValueError(f"judge base URL {url!r} is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"judge base URL {url!r} must start with http:// or https://")
    if not parts.hostname or not port_ok or any(c.isspace() for c in text):
        raise ValueError(f"judge base URL {url!r} has no valid host (expected e.g. http://127.0.0.1:8080/v1)")
    return text


# -- what the judge answers -----------------------------------------------------------------------
class _Answer(BaseModel):
    # Extra keys are allowed in an answer and ignored; the schema sent to the judge forbids them.
    model_config = ConfigDict(extra="ignore")


class JudgeToolEvaluation(_Answer):
    tool_called: str = Field(validation_alias=AliasChoices("tool_called", "toolCalled"))
    was_appropriate: bool = Field(validation_alias=AliasChoices("was_appropriate", "wasAppropriate"))
    reasoning: str


class JudgeAnalysis(_Answer):
    """The analysis half of an answer (the first request in two-step mode)."""

    evaluations: list[JudgeToolEvaluation]
    missing_tools: list[str] = Field(validation_alias=AliasChoices("missing_tools", "missingTools"))


class JudgeAnswer(JudgeAnalysis):
    """The judge's whole answer in one-request mode."""

    reason: str


class JudgeReason(_Answer):
    """The second request's answer in two-step mode."""

    reason: str


# -- what the scorer returns ----------------------------------------------------------------------
class _Result(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class ToolEvaluation(_Result):
    tool_called: str
    was_appropriate: bool
    reasoning: str


class LLMAnalyzeResult(_Result):
    evaluations: list[ToolEvaluation]
    missing_tools: list[str]


class JudgeUsage(_Result):
    """Cost accounting for one scored run, summed over every request made for it."""

    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0
    latency_s: float = 0.0
    structured_output: bool = True  # False when the answer came from the JSON-in-prompt fallback
    output_mode: str = "json_schema"  # the lowest rung of OUTPUT_MODES used for this run


class LLMScoreResult(_Result):
    run_id: str
    score: float
    reason: str
    analyze_step_result: LLMAnalyzeResult
    usage: JudgeUsage

    @property
    def passed(self) -> bool:
        return self.score >= 1.0

    @property
    def label(self) -> str:
        return "pass" if self.passed else "fail"


class JudgeError(Exception):
    """The judge could not produce a usable verdict; ``kind`` says why (for counting)."""

    def __init__(
        self,
        kind: JudgeErrorKind,
        message: str,
        *,
        status_code: int | None = None,
        usage: JudgeUsage | None = None,
    ) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind: JudgeErrorKind = kind
        self.message = message
        self.status_code = status_code
        self.usage = usage


class AnswerMismatchError(ValueError):
    """The judge's evaluations cannot be paired with the run's calls."""


# -- pure parts: tools, messages, score -----------------------------------------------------------
def normalise_tools(tools: Sequence[ToolSpec] | None) -> list[ToolDefinition]:
    """Tool references in any accepted shape as :class:`ToolDefinition` s.

    Accepts ``ToolDefinition``, ``{name|id, description}``, OpenAI tool definitions
    (``{type: function, function: {name, description, parameters}}``), OTel
    ``gen_ai.tool.definitions`` entries and bare names (Mastra's exporter lists names only).
    """
    out: list[ToolDefinition] = []
    for tool in tools or ():
        if isinstance(tool, ToolDefinition):
            out.append(tool)
        elif isinstance(tool, str):
            out.append(ToolDefinition(name=tool))
        elif isinstance(tool, Mapping):
            inner = tool.get("function")
            data = inner if isinstance(inner, Mapping) else tool
            if not (data.get("name") or data.get("id")):
                raise ValueError(f"a tool definition needs a name (or id): {dict(tool)!r}")
            out.append(ToolDefinition.model_validate(data))
        else:
            raise TypeError(f"unsupported tool definition: {type(tool).__name__}")
    return out


def compute_score(evaluations: Sequence[ToolEvaluation | JudgeToolEvaluation | bool], missing_tools: Sequence[str]) -> float:
    """appropriate ÷ (evaluations + missing tools), half-up to 2 decimals; nothing at all → 1.0."""
    total = len(evaluations) + len(missing_tools)
    if total == 0:
        return 1.0
    appropriate = sum(1 for e in evaluations if (e if isinstance(e, bool) else e.was_appropriate))
    value = (Decimal(appropriate) / Decimal(total)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return float(value)


def check_missing_tools(
    names: Sequence[str], calls: Sequence[ToolCall], tools: Sequence[ToolDefinition] = ()
) -> list[str]:
    """The judge's missing tools checked against the run: names trimmed, empties and duplicates
    dropped; a tool the run *called* is dropped (it cannot be missing); when the available tools are
    known, a name not among them raises :class:`AnswerMismatchError` (the answer gets a corrective
    retry). Names come back as the tool reference spells them (the prompt may show them neutralised)."""
    called = {c.name.strip() for c in calls} | {_shown(c.name) for c in calls}
    known: dict[str, str] = {}
    for tool in tools:
        known.setdefault(tool.name.strip(), tool.name.strip())
        known.setdefault(_shown(tool.name), tool.name.strip())
    out: dict[str, None] = {}
    unknown: list[str] = []
    for raw in names:
        name = raw.strip()
        if not name or name in called:
            continue
        if known:
            canonical = known.get(name)
            if canonical is None:
                unknown.append(name)
                continue
            if canonical in called:
                continue
            name = canonical
        out.setdefault(name, None)
    if unknown:
        allowed = [n for n in dict.fromkeys(_shown(t.name) for t in tools) if n not in called]
        raise AnswerMismatchError(
            f"missing_tools names {[n[:_MAX_NAME_CHARS] for n in unknown[:5]]}, which are not among the available "
            f"tools that were not called ({allowed[:50] or 'none'})"
        )
    return list(out)


def align_evaluations(evaluations: Sequence[JudgeToolEvaluation], calls: Sequence[ToolCall]) -> list[ToolEvaluation]:
    """Pair evaluations with calls one for one (see the module docstring); raise on any mismatch."""
    if len(evaluations) != len(calls):
        raise AnswerMismatchError(
            f"expected {len(calls)} evaluation(s), one per numbered call, but got {len(evaluations)}"
        )

    def key(name: str) -> str:
        return name.strip()

    def names_of(call: ToolCall) -> set[str]:
        # The prompt shows names neutralised and on one line; accept either spelling back.
        return {key(call.name), key(prompt.neutralise(prompt.one_line(call.name)))}

    if all(key(e.tool_called) in names_of(c) for e, c in zip(evaluations, calls, strict=True)):
        pairs = list(zip(evaluations, calls, strict=True))
    else:
        pool: dict[str, deque[JudgeToolEvaluation]] = defaultdict(deque)
        for e in evaluations:
            pool[key(e.tool_called)].append(e)
        pairs = []
        for n, call in enumerate(calls, 1):
            bucket = next((pool[k] for k in sorted(names_of(call)) if pool.get(k)), None)
            if bucket is None:
                got = [e.tool_called for e in evaluations]
                raise AnswerMismatchError(
                    f"call {n} ({call.name!r}) has no evaluation; evaluations named {got}"
                )
            pairs.append((bucket.popleft(), call))
    return [
        ToolEvaluation(tool_called=c.name, was_appropriate=e.was_appropriate, reasoning=e.reasoning.strip())
        for e, c in pairs
    ]


def score_answer(
    answer: JudgeAnalysis | Mapping[str, Any], calls: Sequence[ToolCall], tools: Sequence[ToolDefinition] = ()
) -> tuple[float, LLMAnalyzeResult]:
    """Validate and align a judge answer against the counted calls and the available tools (see
    :func:`check_missing_tools`); return (score, analysis)."""
    parsed = answer if isinstance(answer, JudgeAnalysis) else JudgeAnalysis.model_validate(answer)
    if not calls and len(parsed.evaluations) == 1 and _is_no_tool(parsed.evaluations[0].tool_called):
        # Mastra's prompt asks the judge to rate "whether that was the right decision" when no tool
        # was called, and real judges answer with one evaluation of a pseudo tool ("None"): that is
        # the verdict on calling no tool — appropriate 1.0, inappropriate 0.0 — not a bad answer.
        verdict = parsed.evaluations[0]
        analysis = LLMAnalyzeResult(
            evaluations=[ToolEvaluation(tool_called=verdict.tool_called.strip() or "None",
                                        was_appropriate=verdict.was_appropriate,
                                        reasoning=verdict.reasoning.strip())],
            missing_tools=check_missing_tools(parsed.missing_tools, calls, tools),
        )
        return (1.0 if verdict.was_appropriate else 0.0), analysis
    analysis = LLMAnalyzeResult(
        evaluations=align_evaluations(parsed.evaluations, calls),
        missing_tools=check_missing_tools(parsed.missing_tools, calls, tools),
    )
    return compute_score(analysis.evaluations, analysis.missing_tools), analysis


#: How judges name "no tool" in the single evaluation of a run that called none.
_NO_TOOL_NAMES = frozenset({"", "none", "null", "n/a", "na", "no tool", "no tools", "no_tool", "no-tool",
                            "no tool called", "(none)", "nothing"})


def _is_no_tool(name: str) -> bool:
    return name.strip().strip("'\"`").lower() in _NO_TOOL_NAMES


def _inline_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema made strict-mode friendly: refs inlined, every property required,
    no additional properties, no titles (some OpenAI-compatible servers reject ``$ref``)."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
            out = {k: walk(v) for k, v in node.items() if k not in ("$defs", "title", "default", "description", "properties")}
            if isinstance(node.get("properties"), dict):  # property names are data, not keywords to drop
                out["properties"] = {name: walk(sub) for name, sub in node["properties"].items()}
            if out.get("type") == "object" and "properties" in out:
                out["required"] = list(out["properties"])
                out["additionalProperties"] = False
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    result: dict[str, Any] = walk(schema)
    return result


_SCHEMAS: dict[type[BaseModel], dict[str, Any]] = {}


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    if model not in _SCHEMAS:
        _SCHEMAS[model] = _inline_strict(model.model_json_schema())
    return _SCHEMAS[model]


OutputMode = Literal["json_schema", "json_object", "prompt"]
# The structured-output ladder, best first: OpenAI's strict ``json_schema``; llama.cpp's
# ``json_object`` carrying a ``schema`` (grammar-constrained there); the schema in the prompt.
OUTPUT_MODES: tuple[OutputMode, ...] = ("json_schema", "json_object", "prompt")
# Free-text fields are bounded in llama.cpp's form only: a grammar-constrained small model otherwise
# rambles until max_tokens and the JSON is cut off. (OpenAI's strict mode does not take maxLength.)
_MAX_REASONING_CHARS = 300
_MAX_NAME_CHARS = 100


def _shown(name: str) -> str:
    """A tool name as the prompt shows it (one line, angle brackets neutralised)."""
    return prompt.neutralise(prompt.one_line(name))


def answer_schema_for(
    calls: Sequence[ToolCall],
    tools: Sequence[ToolDefinition] = (),
    model: type[BaseModel] = JudgeAnswer,
) -> dict[str, Any]:
    """The answer schema narrowed to one run, so that a grammar-constrained server can only produce
    an answer that pairs with the run: exactly one evaluation per counted call, ``tool_called`` one
    of the called names, ``missing_tools`` drawn from the available tools that were not called
    (when the available tools are known). Python still validates every answer as before."""
    schema = copy.deepcopy(_schema(model))
    props = schema.get("properties", {})
    if "evaluations" in props:
        evaluations = props["evaluations"]
        evaluations["minItems"] = evaluations["maxItems"] = len(calls)
        called = list(dict.fromkeys(_shown(c.name) for c in calls))
        if called:
            evaluations["items"]["properties"]["tool_called"] = {"type": "string", "enum": called}
    if "missing_tools" in props and tools:
        called_raw = {c.name.strip() for c in calls} | {_shown(c.name) for c in calls}
        candidates = [n for n in dict.fromkeys(_shown(t.name) for t in tools) if n not in called_raw]
        missing = props["missing_tools"]
        missing["maxItems"] = len(candidates)
        if candidates:
            missing["items"] = {"type": "string", "enum": candidates}
    return schema


def _bounded(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with maxLength on its free strings (for llama.cpp's grammar)."""

    def walk(node: Any, key: str | None) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v, k) for k, v in node.items()}
            if out.get("type") == "string" and "enum" not in out:
                out["maxLength"] = _MAX_NAME_CHARS if key == "items" else _MAX_REASONING_CHARS
            return out
        if isinstance(node, list):
            return [walk(v, key) for v in node]
        return node

    result: dict[str, Any] = walk(schema, None)
    return result


def response_format_for(
    model: type[BaseModel] = JudgeAnswer,
    *,
    schema: dict[str, Any] | None = None,
    mode: OutputMode = "json_schema",
) -> dict[str, Any] | None:
    """The ``response_format`` request parameter for an answer model (or a given ``schema``) in one
    rung of the ladder: strict ``json_schema``, llama.cpp's ``json_object`` with a ``schema``, or
    ``None`` (the schema goes into the prompt instead)."""
    body = schema if schema is not None else _schema(model)
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": f"tool_call_accuracy_{model.__name__.lower()}", "strict": True, "schema": body},
        }
    if mode == "json_object":
        return {"type": "json_object", "schema": _bounded(body)}
    return None


def _user_request(run: AgentRun) -> str | None:
    if run.user_query:
        return run.user_query
    texts = [m.content for m in run.input_messages if m.role == "user" and m.content]
    return "\n\n".join(texts) or None


def _agent_response(run: AgentRun) -> str | None:
    if run.final_output:
        return run.final_output
    texts = [m.content for m in run.output_messages if m.role == "assistant" and m.content]
    return "\n\n".join(texts) or None


def build_judge_messages(
    run: AgentRun,
    available_tools: Sequence[ToolSpec] | None = None,
    *,
    include_arguments: bool = False,
    include_results: bool = False,
    redact: bool | Redactor | Sequence[Redactor] | None = None,
    json_in_prompt: bool = False,
    with_reason: bool = True,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
    max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS,
) -> list[dict[str, str]]:
    """The chat messages of the (analysis) request for one run. Pure: no I/O, deterministic.

    ``json_in_prompt`` adds the JSON schema to the system message (for endpoints without
    ``response_format``); ``with_reason=False`` asks for the analysis only (two-step mode).
    The run's own tool definitions, when it has any, replace ``available_tools``.
    """
    tools = run.available_tools or normalise_tools(available_tools)
    answer_model: type[BaseModel] = JudgeAnswer if with_reason else JudgeAnalysis
    system = prompt.SYSTEM_RULES + "\n" + (prompt.ANSWER_FORMAT if with_reason else prompt.ANSWER_FORMAT_NO_REASON)
    if json_in_prompt:
        system += prompt.SCHEMA_IN_PROMPT.format(schema=json.dumps(_schema(answer_model), separators=(",", ":")))
    data = prompt.format_run_data(
        user_request=_user_request(run),
        agent_response=_agent_response(run),
        calls=run.scored_calls(),
        tools=tools,
        include_arguments=include_arguments,
        include_results=include_results,
        redact=resolve_redactor(redact),
        max_text_chars=max_text_chars,
        max_argument_chars=max_argument_chars,
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": f"{data}\n\n{prompt.TASK}"}]


def _reason_messages(analysis_messages: list[dict[str, str]], analysis: LLMAnalyzeResult, score: float) -> list[dict[str, str]]:
    data = analysis_messages[-1]["content"].rsplit("\n\n", 1)[0]  # the <run_data> block, without the task line
    findings = json.dumps(analysis.model_dump(), ensure_ascii=False)
    request = prompt.REASON_REQUEST.format(analysis=prompt.neutralise(findings), score=score)
    return [{"role": "system", "content": prompt.REASON_SYSTEM}, {"role": "user", "content": f"{data}\n\n{request}"}]


def estimate_tokens(messages: Sequence[Mapping[str, Any]], *, response_format: Mapping[str, Any] | None = None) -> int:
    """A rough prompt size (≈ characters ÷ 4, plus a few tokens per message) for budgeting."""
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    if response_format is not None:
        chars += len(json.dumps(response_format, separators=(",", ":")))
    return chars // 4 + 4 * len(messages) + 1


# -- what each endpoint accepts --------------------------------------------------------------------
# base_url -> index in OUTPUT_MODES of the best mode it has not rejected (absent: the best).
_ENDPOINT_MODE: dict[str, int] = {}
_ENDPOINTS_LOCK = threading.Lock()
_REJECTION_HINTS = ("response_format", "response-format", "json_schema", "json schema", "structured output", "schema")


def forget_endpoint_capabilities() -> None:
    """Forget which structured-output modes endpoints were found to reject (they are re-probed)."""
    with _ENDPOINTS_LOCK:
        _ENDPOINT_MODE.clear()


def endpoint_output_mode(endpoint: str) -> OutputMode:
    """The structured-output mode the scorer currently uses for ``endpoint`` (a base URL)."""
    with _ENDPOINTS_LOCK:
        return OUTPUT_MODES[_ENDPOINT_MODE.get(endpoint.rstrip("/"), 0)]


def _step_down(endpoint: str, rejected: OutputMode) -> OutputMode:
    """Record that ``endpoint`` rejected ``rejected``; the mode to use from now on."""
    with _ENDPOINTS_LOCK:
        key = endpoint.rstrip("/")  # the openai client adds a trailing slash to base_url
        index = max(_ENDPOINT_MODE.get(key, 0), OUTPUT_MODES.index(rejected) + 1)
        index = min(index, len(OUTPUT_MODES) - 1)
        _ENDPOINT_MODE[key] = index
        return OUTPUT_MODES[index]


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _rejects_response_format(exc: BaseException) -> bool:
    """A 400/422, or a 5xx (llama-cpp-python answers 500 to a request it fails to validate), whose
    message or body names the structured-output parameter."""
    status = _status_of(exc)
    if status is None or not (status in (400, 422) or status >= 500):
        return False
    text = f"{exc} {getattr(exc, 'body', '')}".lower()
    return any(hint in text for hint in _REJECTION_HINTS)


def _to_judge_error(exc: BaseException, usage: JudgeUsage) -> JudgeError:
    import openai

    from ..bounded_http import refusal_in
    from ..http_limits import scrub_body

    refusal = refusal_in(exc)  # raised by our client; openai 1.x wraps it in APIConnectionError
    if refusal is not None:
        return JudgeError("error", f"the judge's answer was refused: {refusal}", usage=usage)
    status = _status_of(exc)
    # An error's text carries the endpoint's body (which may echo the request's Authorization
    # header): it reaches logs and the evaluation event, so only redacted and cut.
    said = scrub_body(str(exc), 500)
    if isinstance(exc, openai.APITimeoutError):
        return JudgeError("timeout", f"the judge did not answer in time ({said})", usage=usage)
    if isinstance(exc, openai.RateLimitError):
        return JudgeError("rate_limited", f"rate limited by the judge endpoint after retries ({said})", status_code=status, usage=usage)
    if isinstance(exc, openai.APIStatusError):
        return JudgeError("error", f"the judge endpoint answered HTTP {status} ({said})", status_code=status, usage=usage)
    if isinstance(exc, openai.APIConnectionError):
        return JudgeError("error", f"could not reach the judge endpoint ({said})", usage=usage)
    return JudgeError("error", f"{type(exc).__name__}: {said}", status_code=status, usage=usage)


def _json_text(content: str) -> str:
    """The JSON object inside a reply, tolerating code fences and text around it."""
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the reply holds no JSON object")
    text = content[start : end + 1]
    # llama.cpp's grammars let raw control characters (a line break) into strings, which strict JSON
    # forbids; read them leniently and re-encode, so pydantic validates proper JSON as before.
    return json.dumps(json.loads(text, strict=False), ensure_ascii=False)


# -- the request protocol, shared by the sync and async drivers ---------------------------------------
_T = TypeVar("_T")
# The protocol yields request keyword arguments and receives either a response or the exception
# the client raised; both drivers just perform the I/O.
_Protocol = Generator[dict[str, Any], Any, _T]


class _Tally:
    def __init__(self, model: str) -> None:
        self.model = model
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.requests = 0
        self.structured = True
        self.mode: OutputMode = "json_schema"
        self.started = time.perf_counter()

    def add(self, response: Any, request: Mapping[str, Any]) -> None:
        """Count one answer's usage. A count that is missing, not an integer, negative or beyond
        :data:`MAX_REPORTED_TOKENS` is replaced by an estimate (characters ÷ 4), so a broken or hostile
        endpoint cannot reach the budgets with it."""
        usage = getattr(response, "usage", None)
        if usage is None:  # no usage block at all: nothing was reported (as before), count nothing
            prompt, completion = 0, 0
        else:
            prompt = _believable(getattr(usage, "prompt_tokens", None), lambda: estimate_tokens(request.get("messages") or ()))
            completion = _believable(getattr(usage, "completion_tokens", None), lambda: _reply_chars(response) // 4 + 1)
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        model = getattr(response, "model", None)
        if isinstance(model, str) and model:
            self.model = model[:_MAX_NAME_CHARS]

    def usage(self) -> JudgeUsage:
        return JudgeUsage(
            model=self.model,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            total_tokens=self.prompt_tokens + self.completion_tokens,
            requests=self.requests,
            latency_s=round(time.perf_counter() - self.started, 6),
            structured_output=self.structured,
            output_mode=self.mode,
        )


def _believable(value: Any, estimate: Callable[[], int]) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_REPORTED_TOKENS:
        return value
    if value is not None:
        _log.debug("otel-toolscore judge endpoint reported unbelievable token usage %r; using an estimate", value)
    return estimate()


def _reply_chars(response: Any) -> int:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return 0
    return len(content) if isinstance(content, str) else 0


def _reply_text(response: Any) -> str:
    choices = getattr(response, "choices", None)
    if not choices:
        raise ValueError("the response holds no choices")
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if not isinstance(content, str) or not content.strip():
        refusal = getattr(message, "refusal", None)
        raise ValueError(f"the judge refused: {refusal}" if refusal else "the reply is empty")
    return content


class ToolCallAccuracyLLMScorer:
    """Judges with an LLM whether each tool call of a run was appropriate, and what was missing.

    Args:
        model: model name at the endpoint; Mastra's ``"openai/<model>"`` prefix is stripped.
        available_tools: the tool reference (any shape :func:`normalise_tools` accepts); a run's own
            tool definitions take precedence.
        base_url, api_key: the endpoint; default to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``.
        client: a ready ``openai.OpenAI`` or ``openai.AsyncOpenAI`` (used as it is: its own timeout
            and retry settings apply; a sync client's reads cannot be cut at the deadline, see
            :meth:`run`).
        timeout: seconds per request, connect to last byte (whatever the server trickles); max_retries:
            retries of 408/409/429/5xx and connection errors by the ``openai`` client (exponential
            backoff, ``Retry-After`` honoured up to its cap).
        max_response_bytes: the largest answer body read (decoded) by the client the scorer builds;
            a larger one is refused (``JudgeError(kind="error")``) and counted in
            ``toolscore.http.client.refused``. That client also follows no redirect to another
            origin and logs nothing through httpx (:mod:`otel_toolscore.bounded_http`).
        deadline_s: the longest one judgment may take, everything included (connect, send, every
            answer byte, retries, back-off, a corrective retry, the second request); past it the
            judgment fails with ``JudgeError(kind="timeout")``. Default: twice ``timeout``.
        include_arguments / include_results: send call arguments / results to the judge (after
            ``redact`` and truncation to ``max_argument_chars``).
        redact: ``None``/``True`` built-in redactors, ``False`` none, or a callable / sequence of them.
        separate_reason_call: Mastra's two requests (analysis, then reason) instead of one.
        request_options: extra keyword arguments for every request (``temperature``, ``max_tokens``...).
    """

    def __init__(
        self,
        model: str,
        available_tools: Sequence[ToolSpec] | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: OpenAI | AsyncOpenAI | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        deadline_s: float | None = None,
        include_arguments: bool = False,
        include_results: bool = False,
        redact: bool | Redactor | Sequence[Redactor] | None = None,
        separate_reason_call: bool = False,
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
        max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS,
        request_options: Mapping[str, Any] | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        if not model or not model.strip():
            raise ValueError("model must be a non-empty model name")
        self.model = model.strip().removeprefix("openai/")
        self.available_tools = normalise_tools(available_tools)
        self.base_url = check_base_url(base_url) if base_url else base_url
        deadline_s = DEADLINE_TIMEOUTS * timeout if deadline_s is None else deadline_s
        if not deadline_s > 0:
            raise ValueError("deadline_s must be a positive number of seconds")
        if not timeout > 0:
            raise ValueError("timeout must be a positive number of seconds")
        self.timeout = timeout
        self.max_retries = max_retries
        self.deadline_s = float(deadline_s)
        self.max_response_bytes = check_max_response_bytes(max_response_bytes)
        self.include_arguments = include_arguments
        self.include_results = include_results
        self.redactor: Redactor = resolve_redactor(redact)
        self.separate_reason_call = separate_reason_call
        self.max_text_chars = max_text_chars
        self.max_argument_chars = max_argument_chars
        self.request_options = dict(request_options or {})
        self._api_key = api_key
        self._sync_client: Any = None
        self._async_client: Any = None
        self._loop_client: Any = None
        self._loop_client_pid = 0
        self._io = _IOLoop()
        # With a client given, the other flavour is never built: its settings stay the caller's.
        self._given: Literal["sync", "async"] | None = None
        if client is not None:
            if _is_async_client(client):
                self._async_client, self._given = client, "async"
            else:
                self._sync_client, self._given = client, "sync"
        self._lock = threading.Lock()

    # -- pure helpers -------------------------------------------------------------------------------
    def build_messages(self, run: AgentRun, *, json_in_prompt: bool = False) -> list[dict[str, str]]:
        """The messages this scorer sends for ``run`` (first request)."""
        return build_judge_messages(
            run,
            self.available_tools,
            include_arguments=self.include_arguments,
            include_results=self.include_results,
            redact=self.redactor,
            json_in_prompt=json_in_prompt,
            with_reason=not self.separate_reason_call,
            max_text_chars=self.max_text_chars,
            max_argument_chars=self.max_argument_chars,
        )

    def estimate_prompt_tokens(self, run: AgentRun) -> int:
        """Rough prompt tokens of the first request, for budgets before anything is sent."""
        model = JudgeAnalysis if self.separate_reason_call else JudgeAnswer
        schema = answer_schema_for(run.scored_calls(), self._tools_for(run), model)
        return estimate_tokens(self.build_messages(run), response_format=response_format_for(model, schema=schema))

    def _tools_for(self, run: AgentRun) -> list[ToolDefinition]:
        return list(run.available_tools or self.available_tools)

    # -- clients --------------------------------------------------------------------------------------
    def _client_kwargs(self) -> dict[str, Any]:
        base_url = self.base_url or os.environ.get("OPENAI_BASE_URL") or None
        if base_url is not None and not self.base_url:
            check_base_url(base_url)
        api_key = self._api_key or os.environ.get("OPENAI_API_KEY")
        if api_key is None and base_url is not None:
            api_key = "unused"  # local OpenAI-compatible servers usually need no key; the client insists on one
        from ..bounded_http import bounded_async_client

        # The body cap, one deadline per request, no redirect to another origin, no httpx log lines.
        http_client = bounded_async_client(
            client="judge", origin=base_url or _OPENAI_BASE_URL, max_response_bytes=self.max_response_bytes,
            deadline_s=self.timeout,
        )
        return {"base_url": base_url, "api_key": api_key, "timeout": self.timeout, "max_retries": self.max_retries,
                "http_client": http_client}

    def _get_loop_client(self) -> Any:
        """The async client :meth:`run` uses on the scorer's own I/O loop."""
        with self._lock:
            if self._loop_client is None or self._loop_client_pid != os.getpid():  # a forked child builds its own
                import openai

                self._loop_client = openai.AsyncOpenAI(**self._client_kwargs())
                self._loop_client_pid = os.getpid()
            return self._loop_client

    def _get_async_client(self) -> Any:
        with self._lock:
            if self._async_client is None:
                import openai

                self._async_client = openai.AsyncOpenAI(**self._client_kwargs())
            return self._async_client

    # -- the protocol -----------------------------------------------------------------------------------
    def _ask(
        self,
        tally: _Tally,
        endpoint: str,
        build: Callable[[bool], list[dict[str, str]]],
        answer_model: type[BaseModel],
        schema: dict[str, Any],
        accept: Callable[[Any], _T],
    ) -> _Protocol[_T]:
        """One question to the judge: down the structured-output ladder until the endpoint accepts
        the mode, then one corrective retry. ``schema`` is the (per-run) answer schema; JSON-in-prompt
        shows the generic one, so that no run data reaches the system message."""
        mode = endpoint_output_mode(endpoint)
        messages = build(mode == "prompt")
        corrected = False
        while True:
            request: dict[str, Any] = {**self.request_options, "model": self.model, "messages": messages}
            response_format = response_format_for(answer_model, schema=schema, mode=mode)
            if response_format is not None:
                request["response_format"] = response_format
            tally.requests += 1
            outcome = yield request
            tally.structured = tally.structured and mode != "prompt"
            if OUTPUT_MODES.index(mode) > OUTPUT_MODES.index(tally.mode):
                tally.mode = mode
            reply: str | None = None
            if isinstance(outcome, BaseException):
                if mode != "prompt" and _rejects_response_format(outcome):
                    mode = _step_down(endpoint, mode)
                    if mode == "prompt":
                        messages = build(True)
                    continue
                if not _is_response_validation_error(outcome):
                    raise _to_judge_error(outcome, tally.usage()) from outcome
                problem = "the HTTP response was not a chat completion"
            else:
                tally.add(outcome, request)
                try:
                    reply = _reply_text(outcome)
                    return accept(answer_model.model_validate_json(_json_text(reply)))
                except ValidationError as exc:
                    problem = "the JSON does not match the required format: " + "; ".join(
                        f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
                    )
                except ValueError as exc:  # includes AnswerMismatchError
                    problem = str(exc)
                except RecursionError:
                    problem = "the JSON is nested too deeply"
            if corrected:
                raise JudgeError("invalid_answer", f"unusable answer after a corrective retry: {problem}", usage=tally.usage())
            corrected = True
            if reply is not None:
                messages = [
                    *messages,
                    {"role": "assistant", "content": prompt.truncate(reply, _MAX_ECHO_CHARS)},
                    {"role": "user", "content": prompt.CORRECTION.format(problem=problem)},
                ]

    def _protocol(self, run: AgentRun, endpoint: str, tally: _Tally) -> _Protocol[LLMScoreResult]:
        calls = run.scored_calls()
        tools = self._tools_for(run)

        def build(json_in_prompt: bool) -> list[dict[str, str]]:
            return self.build_messages(run, json_in_prompt=json_in_prompt)

        def accept(answer: JudgeAnalysis) -> tuple[float, LLMAnalyzeResult, str | None]:
            score, analysis = score_answer(answer, calls, tools)
            return score, analysis, answer.reason if isinstance(answer, JudgeAnswer) else None

        if not self.separate_reason_call:
            schema = answer_schema_for(calls, tools, JudgeAnswer)
            score, analysis, reason = yield from self._ask(tally, endpoint, build, JudgeAnswer, schema, accept)
        else:
            schema = answer_schema_for(calls, tools, JudgeAnalysis)
            score, analysis, _ = yield from self._ask(tally, endpoint, build, JudgeAnalysis, schema, accept)
            first = build(False)

            def build_reason(json_in_prompt: bool) -> list[dict[str, str]]:
                messages = _reason_messages(first, analysis, score)
                if json_in_prompt:
                    schema = json.dumps(_schema(JudgeReason), separators=(",", ":"))
                    messages[0]["content"] += prompt.SCHEMA_IN_PROMPT.format(schema=schema)
                return messages

            reason = yield from self._ask(
                tally, endpoint, build_reason, JudgeReason, _schema(JudgeReason), lambda a: a.reason
            )
        return LLMScoreResult(
            run_id=run.run_id,
            score=score,
            reason=(reason or "").strip(),
            analyze_step_result=analysis,
            usage=tally.usage(),
        )

    # -- drivers ---------------------------------------------------------------------------------------
    def run(self, run: AgentRun) -> LLMScoreResult:
        """Score one run, blocking, within ``deadline_s``. Raises :class:`JudgeError` (only) when no
        usable verdict was obtained.

        With a client the scorer built itself (or an ``AsyncOpenAI`` given), the judgment runs on an
        event loop where the deadline cancels it whatever the server does (a trickle of bytes
        included). A given sync ``OpenAI`` client cannot be interrupted mid-read: there the deadline
        bounds each request's timeout and is checked between requests.
        """
        if self._given == "async":
            return asyncio.run(self.arun(run))  # cannot be called from inside a running event loop
        if self._given == "sync":
            return self._run_given_sync(run)
        client = _built(self._get_loop_client)
        return self._io.call(lambda: self._judge_async(run, client), self.deadline_s)

    async def arun(self, run: AgentRun) -> LLMScoreResult:
        """Score one run without blocking the event loop (same deadline and errors as :meth:`run`)."""
        if self._given == "sync":
            return await asyncio.to_thread(self.run, run)
        return await self._judge_async(run, _built(self._get_async_client))

    def _deadline_error(self, tally: _Tally) -> JudgeError:
        return JudgeError(
            "timeout",
            f"no verdict within the judgment deadline of {self.deadline_s:g} s (connect, send, every answer and retry)",
            usage=tally.usage(),
        )

    async def _judge_async(self, run: AgentRun, client: Any) -> LLMScoreResult:
        import openai

        from ..bounded_http import ClientRefusal

        # ClientRefusal: our client refused the answer (openai 1.x wraps it as a connection error).
        caught: tuple[type[Exception], ...] = (openai.OpenAIError, *_BODY_ERRORS, ClientRefusal)
        tally = _Tally(self.model)

        async def drive() -> LLMScoreResult:
            protocol = self._protocol(run, str(client.base_url), tally)
            step: dict[str, Any] | LLMScoreResult = next(protocol)
            while isinstance(step, dict):
                outcome: Any
                try:
                    outcome = await client.chat.completions.create(**step)
                except caught as exc:
                    outcome = exc
                step = _advance(protocol, outcome)
            return step

        try:
            return await asyncio.wait_for(drive(), self.deadline_s)
        except asyncio.TimeoutError:
            raise self._deadline_error(tally) from None
        except JudgeError:
            raise
        except Exception as exc:  # a bug or an unforeseen client failure: still a JudgeError
            raise _unexpected(exc, tally) from exc

    def _run_given_sync(self, run: AgentRun) -> LLMScoreResult:
        import openai

        caught: tuple[type[Exception], ...] = (openai.OpenAIError, *_BODY_ERRORS)
        client = self._sync_client
        tally = _Tally(self.model)
        deadline = time.monotonic() + self.deadline_s
        try:
            protocol = self._protocol(run, str(client.base_url), tally)
            step: dict[str, Any] | LLMScoreResult = next(protocol)
            while isinstance(step, dict):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._deadline_error(tally)
                outcome: Any
                try:
                    outcome = client.chat.completions.create(**step, timeout=_bounded_timeout(client, remaining))
                except caught as exc:
                    outcome = exc
                step = _advance(protocol, outcome)
            return step
        except JudgeError:
            raise
        except Exception as exc:
            raise _unexpected(exc, tally) from exc

    def close(self) -> None:
        """Close the clients this scorer built and stop its I/O loop (an ``arun`` client: ``aclose``).

        Judgments still running on the loop end with ``JudgeError(kind="error")``."""
        if self._sync_client is not None and self._given != "sync":
            self._sync_client.close()
        client, self._loop_client = self._loop_client, None
        self._io.stop(client.close() if client is not None else None)

    async def aclose(self) -> None:
        if self._async_client is not None:
            await self._async_client.close()

    def __repr__(self) -> str:
        return (
            f"ToolCallAccuracyLLMScorer(model={self.model!r}, tools={[t.name for t in self.available_tools]!r}, "
            f"include_arguments={self.include_arguments}, separate_reason_call={self.separate_reason_call})"
        )


def _is_async_client(client: Any) -> bool:
    import openai

    return isinstance(client, openai.AsyncOpenAI)


def _is_response_validation_error(exc: BaseException) -> bool:
    """The endpoint answered 2xx but not with a chat completion (bad JSON, JSON nested too deeply
    to read, or the wrong shape)."""
    import openai

    return isinstance(exc, (openai.APIResponseValidationError, *_BODY_ERRORS))


# What reading a hostile body raises outside the openai client's own errors: a body that is not
# JSON or not UTF-8, and JSON nested deeper than the interpreter's recursion limit.
_BODY_ERRORS: tuple[type[Exception], ...] = (json.JSONDecodeError, UnicodeDecodeError, RecursionError)


def _unexpected(exc: BaseException, tally: _Tally) -> JudgeError:
    kind: JudgeErrorKind = "invalid_answer" if isinstance(exc, RecursionError) else "error"
    return JudgeError(kind, f"{type(exc).__name__}: {str(exc)[:500]}", usage=tally.usage())


def _built(get_client: Callable[[], Any]) -> Any:
    """A client, or the reason it cannot be built (no API key, a bad ``OPENAI_BASE_URL``) as a JudgeError."""
    try:
        return get_client()
    except Exception as exc:
        raise JudgeError("error", f"cannot build the judge client: {exc}") from exc


def _advance(protocol: _Protocol[LLMScoreResult], outcome: Any) -> dict[str, Any] | LLMScoreResult:
    """Hand the protocol a response (or the client's exception): the next request, or the result."""
    try:
        return protocol.send(outcome)
    except StopIteration as done:
        result: LLMScoreResult = done.value
        return result


def _bounded_timeout(client: Any, remaining: float) -> Any:
    """A given sync client's own timeout, lowered to what is left of the deadline."""
    own = getattr(client, "timeout", None)
    if isinstance(own, (int, float)) and own <= remaining:
        return own
    return remaining


class _IOLoop:
    """An event loop in a daemon thread, started on first use, where :meth:`ToolCallAccuracyLLMScorer.run`
    performs judgments with the scorer's own async client: a coroutine can be cancelled at its
    deadline, a blocking socket read cannot. Callers' context variables (OpenTelemetry's
    suppress-instrumentation keys) are carried over to the coroutine."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def _get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():  # after a fork the thread is gone: start anew
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="otel-toolscore-judge-io", daemon=True)
                thread.start()
                self._loop, self._thread, self._pid = loop, thread, os.getpid()
            return self._loop

    def call(self, make: Callable[[], Coroutine[Any, Any, _T]], deadline_s: float) -> _T:
        context = contextvars.copy_context()

        async def in_context() -> _T:
            for var, value in context.items():
                var.set(value)
            return await make()

        future = asyncio.run_coroutine_threadsafe(in_context(), self._get())
        try:
            # The coroutine keeps its own deadline; this wait only guards against a stopped loop.
            return future.result(timeout=deadline_s + _LOOP_GRACE_S)
        except concurrent.futures.CancelledError:
            raise JudgeError("error", "the scorer was closed while the judgment was running") from None
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise JudgeError("timeout", f"no verdict within the judgment deadline of {deadline_s:g} s") from None

    def stop(self, last: Coroutine[Any, Any, Any] | None = None) -> None:
        """Cancel what is running, await ``last`` (closing the client), stop and close the loop."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            if last is not None:
                last.close()
            return

        async def finish() -> None:
            current = asyncio.current_task()
            running = [task for task in asyncio.all_tasks() if task is not current]
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running, timeout=_LOOP_GRACE_S)
            if last is not None:
                with contextlib.suppress(Exception):
                    await last

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(finish(), loop).result(timeout=_LOOP_GRACE_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=_LOOP_GRACE_S)
        if not thread.is_alive():
            loop.close()


_LOOP_GRACE_S = 5.0


def create_tool_call_accuracy_scorer_llm(
    model: str,
    available_tools: Sequence[ToolSpec] | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    client: OpenAI | AsyncOpenAI | None = None,
    timeout: float = 30.0,
    max_retries: int = 2,
    deadline_s: float | None = None,
    include_arguments: bool = False,
    redact: bool | Redactor | Sequence[Redactor] | None = None,
    separate_reason_call: bool = False,
    **options: Any,
) -> ToolCallAccuracyLLMScorer:
    """Mastra's ``createToolCallAccuracyScorerLLM`` in Python; ``options`` are the extra keyword
    arguments of :class:`ToolCallAccuracyLLMScorer` (``include_results``, size limits, ``request_options``)."""
    return ToolCallAccuracyLLMScorer(
        model,
        available_tools,
        base_url=base_url,
        api_key=api_key,
        client=client,
        timeout=timeout,
        max_retries=max_retries,
        deadline_s=deadline_s,
        include_arguments=include_arguments,
        redact=redact,
        separate_reason_call=separate_reason_call,
        **options,
    )
