"""``ToolCallAccuracyLLMScorer``: the LLM-judged scorer's settings, clients and entry points.

The class holds what a judgment needs (model, tools, limits, redaction), builds the ``openai``
clients it owns (bounded: a capped body, one deadline per request, one origin), and runs a
judgment (:mod:`._protocol`) blocking (:meth:`~ToolCallAccuracyLLMScorer.run`, on its own event
loop where the deadline can cancel it) or awaited (:meth:`~ToolCallAccuracyLLMScorer.arun`).
:func:`create_tool_call_accuracy_scorer_llm` is Mastra's factory name for it.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from ...http_limits import DEFAULT_MAX_RESPONSE_BYTES, check_max_response_bytes
from ...model import AgentRun, ToolDefinition
from ...redact import Redactor, resolve_redactor
from ._answers import JudgeAnalysis, JudgeAnswer, JudgeError, LLMScoreResult
from ._io_loop import IOLoop
from ._messages import (
    DEFAULT_MAX_ARGUMENT_CHARS,
    DEFAULT_MAX_TEXT_CHARS,
    ToolSpec,
    build_judge_messages,
    estimate_tokens,
    normalise_tools,
)
from ._protocol import Protocol, UsageTally, check_base_url, judge_async, judge_given_sync, judgment
from ._schema import answer_schema_for, response_format_for

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

__all__ = ["DEADLINE_TIMEOUTS", "ToolCallAccuracyLLMScorer", "create_tool_call_accuracy_scorer_llm"]

# The default deadline of a judgment, in request timeouts (2 x 30 s = 60 s by default).
DEADLINE_TIMEOUTS = 2
# Where the openai client sends requests without a base URL (the origin our client is pinned to).
_OPENAI_BASE_URL = "https://api.openai.com/v1"


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
        self._io = IOLoop()
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
        from ...bounded_http import bounded_async_client

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

    # -- judging ------------------------------------------------------------------------------------------
    def _judgment(self, run: AgentRun, endpoint: str, tally: UsageTally) -> Protocol[LLMScoreResult]:
        return judgment(
            run,
            endpoint,
            tally,
            request_options={**self.request_options, "model": self.model},
            build=lambda json_in_prompt: self.build_messages(run, json_in_prompt=json_in_prompt),
            tools=self._tools_for(run),
            separate_reason_call=self.separate_reason_call,
        )

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
            return judge_given_sync(self._protocol_of(run), self._sync_client, self.model, self.deadline_s)
        client = _client_or_error(self._get_loop_client)
        return self._io.call(lambda: self._judge_async(run, client), self.deadline_s)

    async def arun(self, run: AgentRun) -> LLMScoreResult:
        """Score one run without blocking the event loop (same deadline and errors as :meth:`run`)."""
        if self._given == "sync":
            return await asyncio.to_thread(self.run, run)
        return await self._judge_async(run, _client_or_error(self._get_async_client))

    async def _judge_async(self, run: AgentRun, client: Any) -> LLMScoreResult:
        return await judge_async(self._protocol_of(run), client, self.model, self.deadline_s)

    def _protocol_of(self, run: AgentRun) -> Callable[[str, UsageTally], Protocol[LLMScoreResult]]:
        return lambda endpoint, tally: self._judgment(run, endpoint, tally)

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


def _client_or_error(get_client: Callable[[], Any]) -> Any:
    """A client, or the reason it cannot be built (no API key, a bad ``OPENAI_BASE_URL``) as a JudgeError."""
    try:
        return get_client()
    except Exception as exc:
        raise JudgeError("error", f"cannot build the judge client: {exc}") from exc


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _parameters_of(cls: Callable[_P, Any]) -> Callable[[Callable[..., _R]], Callable[_P, _R]]:
    """Give a factory exactly ``cls``'s parameters: for type checkers (``ParamSpec``) and for
    ``inspect.signature`` / ``help`` (``__signature__``), so that they are written once, on the class."""

    def decorate(factory: Callable[..., _R]) -> Callable[_P, _R]:
        factory.__dict__["__signature__"] = inspect.signature(cls).replace(return_annotation=cls.__name__)
        return factory

    return decorate


@_parameters_of(ToolCallAccuracyLLMScorer)
def create_tool_call_accuracy_scorer_llm(*args: Any, **kwargs: Any) -> ToolCallAccuracyLLMScorer:
    """Mastra's ``createToolCallAccuracyScorerLLM`` in Python: a :class:`ToolCallAccuracyLLMScorer`
    built from the class's own parameters (``model``, ``available_tools``, then keyword arguments)."""
    return ToolCallAccuracyLLMScorer(*args, **kwargs)
