"""``LangfuseSink``: scores as Langfuse scores, through the ``langfuse`` SDK's API client.

Langfuse's OTLP endpoint turns spans into traces and observations but maps no span attribute to a
score. For spans it received over OTLP, the Langfuse trace id is the OpenTelemetry trace id and the
observation id is the span id (both in hex), so each record becomes two scores on the evaluated
observation:

* ``<name>`` (``tool_call_accuracy`` / ``tool_call_accuracy_llm``): ``NUMERIC``, the score;
* ``<name>.label``: ``CATEGORICAL``, ``pass`` / ``fail``;

both with the explanation as ``comment``. Score ids are derived from (trace, span, name, identifier),
so a re-score replaces the scores instead of adding more (Langfuse upserts scores by id).

Needs the ``langfuse`` package, 5.x (``pip install 'otel-toolscore[langfuse]'``). Only the SDK's
REST client is used (``langfuse.api``): no ``Langfuse()`` client is created here — it would set up a
tracer provider of its own, and its per-key singleton would impose our settings on the
application's own Langfuse client. Credentials and host come from the arguments or the
SDK's variables: ``LANGFUSE_PUBLIC_KEY``, ``LANGFUSE_SECRET_KEY``, ``LANGFUSE_BASE_URL`` (or
``LANGFUSE_HOST``), ``LANGFUSE_TRACING_ENVIRONMENT``.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import http_limits
from ..bounded_http import bounded_client
from ._base import ScoreSink
from ._record import ScoreRecord
from ._retry import RetryableError, SinkError, check_request_limits, http_failures, with_retries

if TYPE_CHECKING:
    import httpx
    from langfuse.api import LangfuseAPI

__all__ = ["DEFAULT_BASE_URL", "LangfuseSink", "langfuse_scores"]

#: the Langfuse SDK's own default host
DEFAULT_BASE_URL = "https://cloud.langfuse.com"
# Namespace of the score ids (any fixed UUID: it only has to stay the same across releases).
_SCORE_ID_NAMESPACE = uuid.UUID("6f1d3c2a-8b4e-5d7f-9a0b-1c2d3e4f5a6b")
LABEL_SUFFIX = ".label"
# langfuse is an optional extra: every import of it turns a missing package into this message.
_NEEDS_LANGFUSE = "LangfuseSink needs the langfuse package (5.x): pip install 'otel-toolscore[langfuse]'"


class LangfuseSink(ScoreSink):
    """Posts every score to Langfuse's scores API (``POST /api/public/scores``), one request per batch.

    Args:
        public_key, secret_key, base_url, environment: default to the Langfuse SDK's variables.
        timeout_s: the deadline of one request, connect to last byte, whatever the server trickles.
        max_retries: further attempts after a connection error, a timeout, 408/409/429 or 5xx
            (exponential backoff; ``Retry-After``, in seconds or as an HTTP date, honoured up to 4 s);
            other errors are not retried.
        max_batch: records per request (two scores each).
        max_response_bytes: the largest response body read (decoded); a larger one is refused and
            counted (``toolscore.http.client.refused``).
        api: a ``langfuse.api.LangfuseAPI`` to use (e.g. ``Langfuse().api``) instead of building one
            (its own HTTP client then applies: no body cap, deadline or redirect rule of ours).
        environ: where the variables are read (default ``os.environ``).

    The sink's own client follows no redirect to another origin (counted, the batch fails), keeps
    user-info out of every log line, warning and ``repr``, and logs a response body only redacted
    and cut.
    """

    name = "langfuse"

    def __init__(
        self,
        *,
        public_key: str | None = None,
        secret_key: str | None = None,
        base_url: str | None = None,
        environment: str | None = None,
        timeout_s: float = 5.0,
        max_retries: int = 2,
        max_batch: int = 100,
        max_response_bytes: int = http_limits.DEFAULT_MAX_RESPONSE_BYTES,
        api: LangfuseAPI | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        _import_langfuse()
        try:
            from langfuse.api import LangfuseAPI
            from langfuse.api.core import ApiError
        except ImportError as exc:
            raise ImportError(_NEEDS_LANGFUSE) from exc
        check_request_limits(timeout_s, max_retries, max_batch)
        self.max_response_bytes = http_limits.check_max_response_bytes(max_response_bytes)
        env = os.environ if environ is None else environ
        self.environment = environment or env.get("LANGFUSE_TRACING_ENVIRONMENT") or None
        self.max_retries = max_retries
        self.max_batch = max_batch
        self._timeout_s = timeout_s
        self._api_error = ApiError
        self._client: httpx.Client | None = None
        if api is None:
            public_key = public_key or env.get("LANGFUSE_PUBLIC_KEY")
            secret_key = secret_key or env.get("LANGFUSE_SECRET_KEY")
            if not public_key or not secret_key:
                raise ValueError("LangfuseSink needs a public and a secret key (LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY)")
            base_url, setting = _base_url(base_url, env)
            url = http_limits.check_endpoint(base_url, setting)  # ConfigError naming where the URL came from
            from .._version import __version__

            self._client = bounded_client(
                client="langfuse", origin=url, max_response_bytes=max_response_bytes, deadline_s=timeout_s
            )
            api = LangfuseAPI(
                base_url=base_url.strip().rstrip("/"),
                username=public_key,
                password=secret_key,
                x_langfuse_sdk_name="otel-toolscore",
                x_langfuse_sdk_version=__version__,
                x_langfuse_public_key=public_key,
                timeout=timeout_s,
                httpx_client=self._client,
            )
            #: the base URL as it may be shown (user-info masked)
            self.base_url = http_limits.mask_url(base_url.strip().rstrip("/"))
        else:
            self.base_url = http_limits.mask_url(base_url or "")
        self._api = api

    def export(self, records: Sequence[ScoreRecord]) -> int | None:
        scores: list[Any] = []
        for record in records:
            scores.extend(langfuse_scores(record, environment=self.environment))
        response = with_retries(lambda: self._send(scores), self.max_retries)
        rejected = getattr(response, "rejected", None)  # 207: some accepted, some not (not retried)
        if isinstance(rejected, int) and rejected > 0:
            return min(len(records), rejected)
        return None

    def _send(self, scores: list[Any]) -> Any:
        # Raised `from None`: the SDK's ApiError prints the response's headers and body whole.
        try:
            with http_failures(f"Langfuse at {self.base_url}"):
                return self._api.scores.create(
                    request=scores,
                    request_options={"max_retries": 0, "timeout_in_seconds": math.ceil(self._timeout_s)},
                )
        except self._api_error as exc:
            status = exc.status_code
            detail = f"Langfuse at {self.base_url} answered {status}: {http_limits.scrub_body(str(exc.body))}"
            if status is None or status >= 500 or status in (408, 409, 429):
                raise RetryableError(detail, retry_after=_retry_after(exc.headers)) from None
            raise SinkError(detail) from None

    def shutdown(self) -> None:
        if self._client is not None:
            self._client.close()

    def __repr__(self) -> str:
        return f"LangfuseSink(base_url={self.base_url!r})"


def _import_langfuse() -> None:
    """Import the ``langfuse`` package, leaving the host's ``httpx`` logger as it was.

    Importing it sets the ``httpx`` logger to WARNING and gives it a console handler of its own
    (``langfuse/logger.py``, to quieten its requests): a change to the whole process's logging. When
    the import is ours (the application has not imported langfuse itself), that is undone; our own
    requests are kept out of httpx's log by :func:`otel_toolscore.bounded_http.quiet_httpx_logs`.
    """
    if "langfuse" in sys.modules:
        return
    logger = logging.getLogger("httpx")
    level, handlers = logger.level, list(logger.handlers)
    try:
        import langfuse  # noqa: F401
    except ImportError:
        return  # said by the caller
    finally:
        logger.setLevel(level)
        for handler in [h for h in logger.handlers if h not in handlers]:
            logger.removeHandler(handler)


def _base_url(given: str | None, env: Mapping[str, str]) -> tuple[str, str]:
    """The base URL and the setting it came from (named when it is not a usable URL)."""
    if given:
        return given, "base_url"
    for name in ("LANGFUSE_BASE_URL", "LANGFUSE_HOST"):
        value = env.get(name)
        if value and value.strip():
            return value, name
    return DEFAULT_BASE_URL, "base_url"


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    """``Retry-After`` of an error response (the SDK hands its headers over as a plain dict)."""
    for key, value in (headers or {}).items():
        if key.lower() == "retry-after":
            return http_limits.retry_after_seconds(value)
    return None


def langfuse_scores(record: ScoreRecord, *, environment: str | None = None) -> list[Any]:
    """The two Langfuse scores (numeric, then categorical when there is a label) of ``record``."""
    try:
        from langfuse.api import CreateScoreRequest
    except ImportError as exc:
        raise ImportError(_NEEDS_LANGFUSE) from exc

    metadata: dict[str, Any] = {"annotator_kind": record.annotator_kind, "identifier": record.identifier}
    metadata.update(record.metadata)
    if record.agent_name:
        metadata["gen_ai.agent.name"] = record.agent_name
    if record.conversation_id:
        metadata["gen_ai.conversation.id"] = record.conversation_id
    common: dict[str, Any] = {"trace_id": record.trace_id, "observation_id": record.span_id, "metadata": metadata}
    if record.explanation:
        common["comment"] = record.explanation
    if environment:
        common["environment"] = environment  # absent, not null: the API then uses its default
    scores = [
        CreateScoreRequest(
            id=score_id(record, record.name), name=record.name, value=record.score, data_type="NUMERIC", **common
        )
    ]
    if record.label is not None:
        label_name = record.name + LABEL_SUFFIX
        scores.append(
            CreateScoreRequest(
                id=score_id(record, label_name), name=label_name, value=record.label, data_type="CATEGORICAL", **common
            )
        )
    return scores


def score_id(record: ScoreRecord, name: str) -> str:
    """The same id for the same (trace, span, score name, producer): Langfuse then replaces, not adds."""
    return str(uuid.uuid5(_SCORE_ID_NAMESPACE, f"{record.trace_id}/{record.span_id}/{name}/{record.identifier}"))
