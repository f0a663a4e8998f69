"""What a reader's facts say, field by field, for tests that hold two ways of reading to one answer."""

from __future__ import annotations

import dataclasses
from collections.abc import Container
from typing import Any

from otel_toolscore.extract._facts import Requested, SpanFacts


def facts_fields(f: SpanFacts, skip: Container[str] = ("plain",)) -> dict[str, Any]:
    """Every field of ``f`` but those in ``skip`` (how the facts were read, not what they say), requested
    calls by value (they compare by identity)."""
    out = {}
    for field in dataclasses.fields(f):
        if field.name in skip:
            continue
        value = getattr(f, field.name)
        if field.name in ("requested", "requested_fallback"):
            value = [tuple(getattr(r, k) for k in Requested.__slots__) for r in value]
        out[field.name] = value
    return out
