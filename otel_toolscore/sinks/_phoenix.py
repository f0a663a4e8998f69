"""``PhoenixSink``: scores as Arize Phoenix span annotations, through Phoenix's REST API.

Phoenix (20.x) shows inline ``annotations.N.annotation.*`` span attributes as attributes only; its
Annotations panel lists what ``POST /v1/span_annotations`` created. Each record becomes one span
annotation: ``name``, ``annotator_kind`` (``CODE`` / ``LLM``), ``result`` (score, label, explanation),
``identifier`` and ``metadata``. Phoenix upserts on (span, name, identifier), so a re-score of the
same span replaces the annotation instead of adding one.

The request is asynchronous on Phoenix's side (no ``sync=true``): an annotation that arrives before
its span — the usual order, since the span is still in the exporter's batch — is held by Phoenix and
retried (every 10 s for up to 10 minutes in 20.x) instead of failing with 404.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from .._deadline import Deadline
from ..bounded_http import bounded_client, quiet_httpx_logs, read_capped_sync
from ..http_limits import (
    DEFAULT_MAX_RESPONSE_BYTES,
    check_endpoint,
    check_max_response_bytes,
    mask_url,
    retry_after_seconds,
    scrub_body,
)
from ._base import ScoreSink
from ._record import ScoreRecord
from ._retry import RetryableError, SinkError, check_request_limits, http_failures, with_retries

__all__ = ["DEFAULT_ENDPOINT", "PhoenixSink"]

DEFAULT_ENDPOINT = "http://localhost:6006"
_PATH = "/v1/span_annotations"


class PhoenixSink(ScoreSink):
    """Posts every score as a span annotation to Phoenix.

    Args:
        endpoint: Phoenix's base URL (``http://localhost:6006``, or a Phoenix Cloud space URL).
        api_key: sent as ``Authorization: Bearer <key>`` when Phoenix has authentication on.
        headers: extra request headers.
        timeout_s: the deadline of one request, connect to last byte, whatever the server trickles.
        max_retries: further attempts after a connection error, a timeout, 429 or 5xx (exponential
            backoff, ``Retry-After`` in seconds or as an HTTP date honoured up to 4 s); other errors are
            not retried.
        max_batch: annotations per request.
        max_response_bytes: the largest response body read (decoded); a larger one is refused and
            counted (``toolscore.http.client.refused``).
        client: an ``httpx.Client`` to use instead of the sink's own (its transport, proxies and TLS
            settings apply; its body is still read up to ``max_response_bytes``, and the deadline is
            checked between the chunks it returns, since its reads cannot be interrupted).

    The sink's own client follows no redirect to another origin (counted, the batch fails), keeps
    the endpoint's user-info out of every log line, warning and ``repr``, and logs a response body
    only redacted and cut.
    """

    name = "phoenix"

    def __init__(
        self,
        endpoint: str = DEFAULT_ENDPOINT,
        *,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 5.0,
        max_retries: int = 2,
        max_batch: int = 100,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        client: httpx.Client | None = None,
    ) -> None:
        url = check_endpoint(endpoint, "endpoint")  # ConfigError naming the setting
        check_request_limits(timeout_s, max_retries, max_batch)
        self.max_response_bytes = check_max_response_bytes(max_response_bytes)
        base = str(url).rstrip("/")
        # The OTLP endpoint Phoenix's own clients are often given: the REST API is beside it.
        self._base = base.removesuffix("/v1/traces")
        self._url = self._base + _PATH
        #: the base URL and the annotations URL as they may be shown (user-info masked)
        self.endpoint = mask_url(self._base)
        self.url = mask_url(self._url)
        self.max_retries = max_retries
        self.max_batch = max_batch
        self._headers = {"Content-Type": "application/json", **(dict(headers) if headers else {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._own_client = client is None
        self._client = client if client is not None else bounded_client(
            client="phoenix", origin=url, max_response_bytes=max_response_bytes, deadline_s=timeout_s
        )
        self._timeout_s = timeout_s

    def export(self, records: Sequence[ScoreRecord]) -> int | None:
        body = {"data": [annotation(r) for r in records]}
        with_retries(lambda: self._post(body), self.max_retries)
        return None

    def _post(self, body: dict[str, Any]) -> None:
        with http_failures(f"Phoenix at {self.endpoint}"):
            status, headers, text = self._send(body)
        if 200 <= status < 300:
            return
        detail = f"Phoenix at {self.endpoint} answered {status}: {scrub_body(text)}"
        if status == 429 or status >= 500:
            raise RetryableError(detail, retry_after=retry_after_seconds(headers.get("Retry-After")))
        if 300 <= status < 400:
            detail += f" (redirect to {mask_url(headers.get('Location', '?'))} not followed)"
        raise SinkError(detail)

    def _send(self, body: dict[str, Any]) -> tuple[int, httpx.Headers, str]:
        if self._own_client:
            response = self._client.post(self._url, json=body, headers=self._headers, timeout=self._timeout_s)
            return response.status_code, response.headers, response.text
        # A given client: its own transport, the body still read capped (deadline checked between chunks).
        deadline = Deadline.after(self._timeout_s)
        with quiet_httpx_logs(), self._client.stream(
            "POST", self._url, json=body, headers=self._headers, timeout=self._timeout_s
        ) as response:
            data = read_capped_sync(response, self.max_response_bytes, client="phoenix", deadline=deadline)
            return response.status_code, response.headers, data.decode("utf-8", "replace")

    def shutdown(self) -> None:
        if self._own_client:
            self._client.close()

    def __repr__(self) -> str:
        return f"PhoenixSink(endpoint={self.endpoint!r})"


def annotation(record: ScoreRecord) -> dict[str, Any]:
    """The span annotation Phoenix's ``POST /v1/span_annotations`` takes for ``record``."""
    result: dict[str, Any] = {"score": record.score}
    if record.label is not None:
        result["label"] = record.label
    if record.explanation:
        result["explanation"] = record.explanation
    metadata: dict[str, Any] = dict(record.metadata)
    if record.agent_name:
        metadata["gen_ai.agent.name"] = record.agent_name
    if record.conversation_id:
        metadata["gen_ai.conversation.id"] = record.conversation_id
    return {
        "span_id": record.span_id,
        "name": record.name,
        "annotator_kind": record.annotator_kind,
        "result": result,
        "identifier": record.identifier,
        "metadata": metadata,
    }

