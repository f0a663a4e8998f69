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

from .base import ScoreSink
from .record import ScoreRecord
from .retry import RetryableError, SinkError, check_request_limits, with_retries

__all__ = ["DEFAULT_ENDPOINT", "PhoenixSink"]

DEFAULT_ENDPOINT = "http://localhost:6006"
_PATH = "/v1/span_annotations"


class PhoenixSink(ScoreSink):
    """Posts every score as a span annotation to Phoenix.

    Args:
        endpoint: Phoenix's base URL (``http://localhost:6006``, or a Phoenix Cloud space URL).
        api_key: sent as ``Authorization: Bearer <key>`` when Phoenix has authentication on.
        headers: extra request headers.
        timeout_s: per request (connect, read, write).
        max_retries: further attempts after a connection error, 429 or 5xx (exponential backoff,
            ``Retry-After`` honoured up to 4 s); other errors are not retried.
        max_batch: annotations per request.
        client: an ``httpx.Client`` to use instead of the sink's own (proxies, TLS settings).
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
        client: httpx.Client | None = None,
    ) -> None:
        url = httpx.URL(endpoint.strip())
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"Phoenix endpoint must be an http(s) URL, not {endpoint!r}")
        check_request_limits(timeout_s, max_retries, max_batch)
        base = str(url).rstrip("/")
        # The OTLP endpoint Phoenix's own clients are often given: the REST API is beside it.
        self.endpoint = base.removesuffix("/v1/traces")
        self.url = self.endpoint + _PATH
        self.max_retries = max_retries
        self.max_batch = max_batch
        self._headers = {"Content-Type": "application/json", **(dict(headers) if headers else {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._own_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=timeout_s)
        self._timeout_s = timeout_s

    def export(self, records: Sequence[ScoreRecord]) -> int | None:
        body = {"data": [annotation(r) for r in records]}
        with_retries(lambda: self._post(body), self.max_retries)
        return None

    def _post(self, body: dict[str, Any]) -> None:
        try:
            response = self._client.post(self.url, json=body, headers=self._headers, timeout=self._timeout_s)
        except httpx.TransportError as exc:
            raise RetryableError(f"Phoenix at {self.endpoint}: {type(exc).__name__}: {exc}") from exc
        if response.is_success:
            return
        detail = f"Phoenix at {self.endpoint} answered {response.status_code}: {response.text[:300]}"
        if response.status_code == 429 or response.status_code >= 500:
            raise RetryableError(detail, retry_after=_retry_after(response))
        raise SinkError(detail)

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


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
