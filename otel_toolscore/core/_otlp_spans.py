"""The core's :class:`~._sources.SpanSource` of spans decoded from OTLP (:class:`OtlpSpans`).

The views themselves — a lean protobuf ``Span`` whose attributes are a key table, values decoded on
look-up, and the same view over OTLP/JSON — are the extractor's (:mod:`otel_toolscore.extract._otlp_views`),
so the offline reader reads files through them too; their names are importable from here as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..extract import ExtractOptions, SpanFacts, classify_start
from ..extract._otlp_views import (
    LEAN_RESOURCE_SPANS,
    LEAN_SPAN,
    LEAN_TRACE_REQUEST,
    OtlpAttributes,
    OtlpEvent,
    OtlpResource,
    OtlpScope,
    OtlpSpan,
    lean_span_view,
    read_view,
    scope_view,
    status_of,
)
from ._sources import HexIds, SpanIds, may_root_by_attributes

__all__ = [
    "LEAN_RESOURCE_SPANS",
    "LEAN_SPAN",
    "LEAN_TRACE_REQUEST",
    "OTLP_SPANS",
    "OtlpAttributes",
    "OtlpEvent",
    "OtlpResource",
    "OtlpScope",
    "OtlpSpan",
    "OtlpSpans",
    "lean_span_view",
    "read_view",
    "scope_view",
    "status_of",
]


# -- the core's source --------------------------------------------------------------------------------
class OtlpSpans:
    """The :class:`~._sources.SpanSource` of :class:`OtlpSpan` views (the scoring service's spans).

    A trace arrives whole, so the core gets each view once, at its end. A span is a process-local
    root when it has no parent or its parent is remote (``parent_remote``, which the service settles
    per trace before feeding it)."""

    @staticmethod
    def ids(span: Any) -> SpanIds | None:
        parent = span.parent_hex
        return span.trace_id, span.span_hex, parent, parent is None or bool(span.parent_remote)

    @staticmethod
    def read(span: Any, options: ExtractOptions, ids: HexIds | None = None) -> SpanFacts | None:
        return read_view(span, options, ids)

    @staticmethod
    def role_at_start(span: Any) -> str | None:
        return classify_start(span._name, span._dict)

    @staticmethod
    def attributes(span: Any) -> Mapping[str, Any]:
        return span._dict  # type: ignore[no-any-return]

    @staticmethod
    def sampled(span: Any) -> bool:
        return True  # every exported span was sampled

    @staticmethod
    def may_root(span: Any) -> bool:
        return may_root_by_attributes(
            span._name, span._dict, span.parent_hex is None or bool(span.parent_remote)
        )


OTLP_SPANS = OtlpSpans()
