"""The judgment's exchange with the endpoint: the questions asked, the answers' cost, the failures.

A judgment is a generator (:func:`judgment`) that yields the keyword arguments of each chat
completion request and receives the response, or the exception the client raised; it walks down
the structured-output ladder when an endpoint rejects a rung, gives an unusable answer one
corrective retry, and returns the :class:`LLMScoreResult`. Two drivers perform its I/O:
:func:`judge_async` (an async client, under one ``asyncio`` deadline that cancels the judgment
whatever the server does) and :func:`judge_given_sync` (a caller's sync client, whose reads cannot
be cut: the deadline bounds each request's timeout and is checked between requests). Every failure
leaves as a :class:`JudgeError` carrying the tokens already spent (:class:`UsageTally`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Generator, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..._deadline import Deadline
from ...model import AgentRun, ToolDefinition
from . import _prompt as prompt
from ._answers import (
    MAX_NAME_CHARS,
    JudgeAnalysis,
    JudgeAnswer,
    JudgeError,
    JudgeErrorKind,
    JudgeReason,
    JudgeUsage,
    LLMAnalyzeResult,
    LLMScoreResult,
    json_text,
    reply_chars,
    reply_text,
)
from ._messages import estimate_tokens, reason_messages
from ._schema import (
    OUTPUT_MODES,
    OutputMode,
    answer_schema_for,
    endpoint_output_mode,
    response_format_for,
    step_down,
    strict_schema,
)
from ._scoring import score_answer

_log = logging.getLogger(__name__)

# A reported token count outside [0, this] for one request is not believed (the estimate is used).
MAX_REPORTED_TOKENS = 10_000_000
# The bad reply echoed back in a corrective retry is cut to this size (it costs prompt tokens).
_MAX_ECHO_CHARS = 2000
_REJECTION_HINTS = ("response_format", "response-format", "json_schema", "json schema", "structured output", "schema")
# What reading a hostile body raises outside the openai client's own errors: a body that is not
# JSON or not UTF-8, and JSON nested deeper than the interpreter's recursion limit.
_BODY_ERRORS: tuple[type[Exception], ...] = (json.JSONDecodeError, UnicodeDecodeError, RecursionError)

_T = TypeVar("_T")
# The protocol yields request keyword arguments and receives either a response or the exception
# the client raised; both drivers just perform the I/O.
Protocol = Generator[dict[str, Any], Any, _T]


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


# -- what a judgment cost ---------------------------------------------------------------------------
class UsageTally:
    """The tokens, requests and output modes of one judgment so far (what :class:`JudgeUsage` reports)."""

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
        if usage is None:  # no usage block at all: the endpoint reported nothing, so nothing is counted
            prompt, completion = 0, 0
        else:
            prompt = _believable(getattr(usage, "prompt_tokens", None), lambda: estimate_tokens(request.get("messages") or ()))
            completion = _believable(getattr(usage, "completion_tokens", None), lambda: reply_chars(response) // 4 + 1)
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        model = getattr(response, "model", None)
        if isinstance(model, str) and model:
            self.model = model[:MAX_NAME_CHARS]

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



# -- the questions ----------------------------------------------------------------------------------
def ask(
    tally: UsageTally,
    endpoint: str,
    request_options: Mapping[str, Any],
    build: Callable[[bool], list[dict[str, str]]],
    answer_model: type[BaseModel],
    schema: dict[str, Any],
    accept: Callable[[Any], _T],
) -> Protocol[_T]:
    """One question to the judge: down the structured-output ladder until the endpoint accepts
    the mode, then one corrective retry. ``request_options`` hold the model and the caller's
    extra request arguments; ``schema`` is the (per-run) answer schema; JSON-in-prompt shows the
    generic one, so that no run data reaches the system message."""
    mode = endpoint_output_mode(endpoint)
    messages = build(mode == "prompt")
    corrected = False
    while True:
        request: dict[str, Any] = {**request_options, "messages": messages}
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
                mode = step_down(endpoint, mode)
                if mode == "prompt":
                    messages = build(True)
                continue
            if not _is_response_validation_error(outcome):
                raise to_judge_error(outcome, tally.usage()) from outcome
            problem = "the HTTP response was not a chat completion"
        else:
            tally.add(outcome, request)
            try:
                reply = reply_text(outcome)
                return accept(answer_model.model_validate_json(json_text(reply)))
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


def judgment(
    run: AgentRun,
    endpoint: str,
    tally: UsageTally,
    *,
    request_options: Mapping[str, Any],
    build: Callable[[bool], list[dict[str, str]]],
    tools: list[ToolDefinition],
    separate_reason_call: bool,
) -> Protocol[LLMScoreResult]:
    """The whole judgment of ``run``: one question (the answer with its reason), or Mastra's two
    (the analysis, then the reason). ``build(json_in_prompt)`` gives the first request's messages."""
    calls = run.scored_calls()

    def accept(answer: JudgeAnalysis) -> tuple[float, LLMAnalyzeResult, str | None]:
        score, analysis = score_answer(answer, calls, tools)
        return score, analysis, answer.reason if isinstance(answer, JudgeAnswer) else None

    if not separate_reason_call:
        schema = answer_schema_for(calls, tools, JudgeAnswer)
        score, analysis, reason = yield from ask(tally, endpoint, request_options, build, JudgeAnswer, schema, accept)
    else:
        schema = answer_schema_for(calls, tools, JudgeAnalysis)
        score, analysis, _ = yield from ask(tally, endpoint, request_options, build, JudgeAnalysis, schema, accept)
        first = build(False)

        def build_reason(json_in_prompt: bool) -> list[dict[str, str]]:
            return reason_messages(first, analysis, score, json_in_prompt=json_in_prompt)

        reason = yield from ask(
            tally, endpoint, request_options, build_reason, JudgeReason, strict_schema(JudgeReason), lambda a: a.reason
        )
    return LLMScoreResult(
        run_id=run.run_id,
        score=score,
        reason=(reason or "").strip(),
        analyze_step_result=analysis,
        usage=tally.usage(),
    )


# -- the drivers ------------------------------------------------------------------------------------
async def judge_async(
    protocol_for: Callable[[str, UsageTally], Protocol[LLMScoreResult]], client: Any, model: str, deadline_s: float
) -> LLMScoreResult:
    """Run a judgment with an ``openai.AsyncOpenAI`` client within ``deadline_s``, all included.

    ``protocol_for(endpoint, tally)`` makes the judgment's protocol."""
    import openai

    from ...bounded_http import ClientRefusal

    # ClientRefusal: our client refused the answer (openai 1.x wraps it as a connection error).
    caught: tuple[type[Exception], ...] = (openai.OpenAIError, *_BODY_ERRORS, ClientRefusal)
    tally = UsageTally(model)

    async def drive() -> LLMScoreResult:
        protocol = protocol_for(str(client.base_url), tally)
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
        return await asyncio.wait_for(drive(), deadline_s)
    except asyncio.TimeoutError:
        raise _deadline_error(deadline_s, tally) from None
    except JudgeError:
        raise
    except Exception as exc:  # a bug or an unforeseen client failure: still a JudgeError
        raise _unexpected(exc, tally) from exc


def judge_given_sync(
    protocol_for: Callable[[str, UsageTally], Protocol[LLMScoreResult]], client: Any, model: str, deadline_s: float
) -> LLMScoreResult:
    """Run a judgment with a caller's ``openai.OpenAI`` client: its reads cannot be cut, so the
    deadline lowers each request's timeout to what is left and is checked between requests."""
    import openai

    caught: tuple[type[Exception], ...] = (openai.OpenAIError, *_BODY_ERRORS)
    tally = UsageTally(model)
    deadline = Deadline.after(deadline_s)
    try:
        protocol = protocol_for(str(client.base_url), tally)
        step: dict[str, Any] | LLMScoreResult = next(protocol)
        while isinstance(step, dict):
            if deadline.expired:
                raise _deadline_error(deadline_s, tally)
            outcome: Any
            try:
                outcome = client.chat.completions.create(**step, timeout=_timeout_within(client, deadline.remaining()))
            except caught as exc:
                outcome = exc
            step = _advance(protocol, outcome)
        return step
    except JudgeError:
        raise
    except Exception as exc:
        raise _unexpected(exc, tally) from exc


def _deadline_error(deadline_s: float, tally: UsageTally) -> JudgeError:
    return JudgeError(
        "timeout",
        f"no verdict within the judgment deadline of {deadline_s:g} s (connect, send, every answer and retry)",
        usage=tally.usage(),
    )


def _advance(protocol: Protocol[LLMScoreResult], outcome: Any) -> dict[str, Any] | LLMScoreResult:
    """Hand the protocol a response (or the client's exception): the next request, or the result."""
    try:
        return protocol.send(outcome)
    except StopIteration as done:
        result: LLMScoreResult = done.value
        return result


def _timeout_within(client: Any, remaining: float) -> Any:
    """A given sync client's own timeout, lowered to what is left of the deadline."""
    own = getattr(client, "timeout", None)
    if isinstance(own, (int, float)) and own <= remaining:
        return own
    return remaining


# -- failures ---------------------------------------------------------------------------------------
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


def to_judge_error(exc: BaseException, usage: JudgeUsage) -> JudgeError:
    import openai

    from ...bounded_http import refusal_in
    from ...http_limits import scrub_body

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


def _is_response_validation_error(exc: BaseException) -> bool:
    """The endpoint answered 2xx but not with a chat completion (bad JSON, JSON nested too deeply
    to read, or the wrong shape)."""
    import openai

    return isinstance(exc, (openai.APIResponseValidationError, *_BODY_ERRORS))


def _unexpected(exc: BaseException, tally: UsageTally) -> JudgeError:
    kind: JudgeErrorKind = "invalid_answer" if isinstance(exc, RecursionError) else "error"
    return JudgeError(kind, f"{type(exc).__name__}: {str(exc)[:500]}", usage=tally.usage())
