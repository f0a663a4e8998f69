"""Property tests of OTLP parsing and the convention readers behind ``extract_runs_with_report``.

Whatever the input — random bytes, real corpus files cut at any byte, gzip cut short, OTLP/JSON
documents whose attribute values are anything (invalid JSON in message attributes, wrong types,
huge strings) — extraction never raises, and what it could not read is counted in the
:class:`~otel_toolscore.extract.ExtractionReport` (``malformed``, with a message).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from otel_toolscore.extract import extract_runs_with_report

pytestmark = pytest.mark.timeout(120)

CORPUS = Path(__file__).parents[1] / "corpus"
FILES = sorted(p for p in CORPUS.glob("**/*.traces.jsonl") if "node_modules" not in p.parts)
FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck),
                phases=[Phase.explicit, Phase.generate], database=None)


@FUZZ
@given(data=st.binary(max_size=2_000))
def test_random_bytes(data: bytes) -> None:
    runs, report = extract_runs_with_report(data)
    assert isinstance(runs, list)
    assert report.sources


@FUZZ
@given(index=st.integers(0, max(0, len(FILES) - 1)), cut=st.floats(0.0, 1.0), gz=st.booleans())
def test_corpus_file_cut_anywhere(index: int, cut: float, gz: bool) -> None:
    if not FILES:
        pytest.fail("no corpus files found")
    blob = FILES[index].read_bytes()
    if gz:
        blob = gzip.compress(blob)
    at = int(len(blob) * cut)
    runs, report = extract_runs_with_report(blob[:at])
    assert isinstance(runs, list)
    head, rest = blob[:at], blob[at:]
    # A cut at a line boundary (or one that only drops trailing whitespace) leaves whole documents.
    whole_lines = gz or not head.strip() or not rest.strip() or head.endswith(b"\n") or rest.startswith(b"\n")
    if not whole_lines:
        assert report.malformed >= 1, "a cut document must be reported"
        assert report.problems()


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=10,
)
_text = st.one_of(
    st.text(max_size=30),
    _json.map(json.dumps),
    _json.map(json.dumps).map(lambda s: s[: len(s) // 2]),
    st.sampled_from(["{not json", "[1, 2, {", "null", "[]"]),
    st.integers(1_000, 100_000).map(lambda n: "y" * n),
)
_any_value: Any = st.recursive(
    st.one_of(
        _text.map(lambda s: {"stringValue": s}),
        st.integers(-(2**63), 2**63 - 1).map(lambda i: {"intValue": str(i)}),
        st.floats(allow_nan=False).map(lambda f: {"doubleValue": f}),
        st.booleans().map(lambda b: {"boolValue": b}),
        st.just({}),
    ),
    lambda c: st.one_of(
        st.lists(c, max_size=3).map(lambda vs: {"arrayValue": {"values": vs}}),
        st.dictionaries(st.text(max_size=8), c, max_size=3).map(
            lambda d: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in d.items()]}}
        ),
    ),
    max_leaves=6,
)
KEYS = ["gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.tool.name", "gen_ai.tool.call.arguments",
        "gen_ai.input.messages", "gen_ai.output.messages", "openinference.span.kind", "input.value", "output.value",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name", "traceloop.span.kind",
        "traceloop.entity.input", "ai.operationId", "ai.toolCall.name", "ai.toolCall.args", "ai.prompt.messages",
        "tool_arguments", "gcp.vertex.agent.tool_call_args", "gcp.vertex.agent.llm_response", "logfire.msg"]
_attr = st.fixed_dictionaries({"key": st.sampled_from(KEYS) | st.text(max_size=10), "value": _any_value})
_hex = st.integers(0, 2**64 - 1).map(lambda i: format(i, "016x"))


@st.composite
def otlp_docs(draw: Any) -> dict[str, Any]:
    trace_id = format(draw(st.integers(1, 2**128 - 1)), "032x")
    spans = []
    ids = draw(st.lists(_hex, min_size=1, max_size=6, unique=True))
    for i, sid in enumerate(ids):
        span: dict[str, Any] = {
            "traceId": draw(st.sampled_from([trace_id, "", "zz", trace_id[:10]])),
            "spanId": draw(st.sampled_from([sid, "", "not-hex"])),
            "name": draw(st.sampled_from(["invoke_agent a", "chat m", "execute_tool t", "agent run", "call_llm"])
                         | st.text(max_size=10)),
            "attributes": draw(st.lists(_attr, max_size=6)),
            "startTimeUnixNano": str(draw(st.integers(0, 2**63))),
            "endTimeUnixNano": draw(st.sampled_from(["1", "x", "99999999999999999999999"])),
        }
        if i:
            span["parentSpanId"] = draw(st.sampled_from([*ids[:i], "", "00"]))
        if draw(st.booleans()):
            span["events"] = [{"name": draw(st.sampled_from(["gen_ai.choice", "gen_ai.user.message", "x"])),
                               "attributes": draw(st.lists(_attr, max_size=3))}]
        spans.append(span)
    return {"resourceSpans": [{"resource": {"attributes": draw(st.lists(_attr, max_size=2))},
                               "scopeSpans": [{"scope": {"name": draw(st.text(max_size=10))}, "spans": spans}]}]}


@FUZZ
@given(docs=st.lists(otlp_docs(), min_size=1, max_size=3), as_lines=st.booleans())
def test_otlp_json_with_any_attribute_values(docs: list[dict[str, Any]], as_lines: bool) -> None:
    text = "\n".join(json.dumps(d) for d in docs) if as_lines else json.dumps(docs)
    runs, report = extract_runs_with_report(text.encode())
    assert isinstance(runs, list) and report.sources
    for run in runs:
        assert all(isinstance(c.name, str) for c in run.tool_calls)
