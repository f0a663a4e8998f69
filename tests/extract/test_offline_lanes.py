"""The offline reader's lanes give exactly what the general code gives.

* OTLP/JSON spans made into views slot by slot (:func:`~otel_toolscore.extract._otlp_json.span_views_from_json`)
  carry the fields :func:`~otel_toolscore.extract._otlp_json.span_records_from_json` reads from the
  same document, and a malformed document fails both with the same words — over many generated
  shapes: both JSON spellings, hex and base64 ids, enums as numbers and names, ids repeated across
  spans, events, statuses, missing and wrong-typed fields.
* Parsers given a span's whole attribute mapping (:data:`~otel_toolscore.extract._facts.KEYED_PARSERS`:
  OpenInference input messages, legacy indexed prompts) read from a decoded protobuf span's key
  table fill the very facts they fill from ``plain()`` of the same mapping (a dict in the span's
  order, what they were given before) — in both of their ways: keys in no set order, and the span's
  own order where two keys could name one field (``01`` and ``1``, other scripts' digits, a line break).
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import random
from typing import Any

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_toolscore.extract import ExtractOptions, extract_runs
from otel_toolscore.extract import _content as content
from otel_toolscore.extract._facts import KEYED_PARSERS, SpanFacts
from otel_toolscore.extract._otlp_json import OtlpJsonError, span_records_from_json, span_views_from_json
from otel_toolscore.extract._otlp_views import LEAN_SPAN, OtlpAttributes
from otel_toolscore.extract._values import plain
from otel_toolscore.service._wire import _any_value  # the values of the spans built here, as the service encodes them

KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUSES = ("UNSET", "OK", "ERROR")


# -- OTLP/JSON views against the records --------------------------------------------------------------
def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(n * 2))


def _an_id(rng: random.Random, n: int, pool: list[str]) -> Any:
    roll = rng.random()
    if pool and roll < 0.3:
        return rng.choice(pool)  # repeated from a span before (a trace id, a parent)
    if roll < 0.55:
        value = _hex(rng, n)
    elif roll < 0.7:
        value = base64.b64encode(bytes(rng.randrange(256) for _ in range(n))).decode()
    elif roll < 0.75:
        value = "0" * (2 * n)
    elif roll < 0.8:
        return rng.choice([None, "", 0, 12, [], "zz" * n, "not an id!"])
    else:
        value = _hex(rng, n).lower()
    pool.append(value)
    return value


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return {"stringValue": rng.choice(["a", "", "{\"x\": 1}", "chat", "ünï"])}
    if roll < 0.6:
        return {rng.choice(["intValue", "int_value"]): rng.choice([3, "42", -1])}
    if roll < 0.67:
        return {"boolValue": rng.random() < 0.5}
    if roll < 0.72:
        return {"doubleValue": rng.choice([1.5, "2.5", 0])}
    if roll < 0.78 and depth < 2:
        return {"arrayValue": {"values": [_value(rng, depth + 1) for _ in range(rng.randrange(3))]}}
    if roll < 0.83 and depth < 2:
        return {"kvlistValue": {"values": _attributes(rng, depth + 1)}}
    if roll < 0.86:
        return {"bytesValue": base64.b64encode(b"raw").decode()}
    if roll < 0.9:
        return {}
    return rng.choice([None, "text", 5])


def _attributes(rng: random.Random, depth: int = 0) -> Any:
    if rng.random() < 0.1:
        return rng.choice([None, [], {}])
    keys = ["gen_ai.operation.name", "gen_ai.tool.name", "llm.model_name", "openinference.span.kind", "k", "k"]
    return [{"key": rng.choice(keys), "value": _value(rng, depth)} for _ in range(rng.randrange(5))]


def _span(rng: random.Random, tids: list[str], sids: list[str], snake: bool) -> Any:
    def key(camel: str, sn: str) -> str:
        return sn if snake and rng.random() < 0.7 else camel

    sp: dict[str, Any] = {}
    for camel, sn, n, pool in (("traceId", "trace_id", 16, tids), ("spanId", "span_id", 8, sids),
                               ("parentSpanId", "parent_span_id", 8, sids)):
        if rng.random() < 0.92:
            sp[key(camel, sn)] = _an_id(rng, n, pool)
    if rng.random() < 0.95:
        sp["name"] = rng.choice(["chat gpt", "execute_tool x", "", None, 7])
    if rng.random() < 0.9:
        sp["kind"] = rng.choice([0, 1, 2, 3, 5, 9, -1, True, None, "SPAN_KIND_CLIENT", "INTERNAL", "odd", 1.0])
    for camel, sn in (("startTimeUnixNano", "start_time_unix_nano"), ("endTimeUnixNano", "end_time_unix_nano")):
        if rng.random() < 0.9:
            sp[key(camel, sn)] = rng.choice(["1700000000000000000", 1700000000000000123, "", None, 0, "12"])
    if rng.random() < 0.8:
        sp["attributes"] = _attributes(rng)
    roll = rng.random()
    if roll < 0.5:
        sp["status"] = rng.choice([
            {}, {"code": 2, "message": "boom"}, {"code": 1}, {"code": "STATUS_CODE_ERROR"}, {"code": "OK", "message": ""},
            {"code": 7}, {"code": None, "message": "m"}, {"message": "only"}, "bad", None, {"code": 0, "message": "x"},
        ])
    if rng.random() < 0.3:
        sp["events"] = rng.choice([
            [], None, [{"name": "gen_ai.choice", "timeUnixNano": "5", "attributes": _attributes(rng)}],
            [{"name": "e", "time_unix_nano": 3}, {"attributes": []}],
        ])
    return sp


def _document(rng: random.Random) -> Any:
    snake = rng.random() < 0.3
    tids: list[str] = []
    sids: list[str] = []
    resources = []
    for _ in range(rng.randrange(1, 3)):
        scopes = []
        for _ in range(rng.randrange(1, 3)):
            spans = [_span(rng, tids, sids, snake) for _ in range(rng.randrange(0, 6))]
            scope: Any = rng.choice([{"name": "openinference.instrumentation.x"}, {"name": ""}, {}, None, {"name": "s"}])
            scopes.append({"scope": scope, "spans": spans})
        resource: Any = rng.choice([{"attributes": _attributes(rng)}, {}, None])
        resources.append({"resource": resource, "scope_spans" if snake else "scopeSpans": scopes})
    return {"resource_spans" if snake else "resourceSpans": resources}


def _broken(rng: random.Random, doc: Any) -> Any:
    """``doc`` with one part replaced by something of the wrong type (or left whole)."""
    spans = [sp for rs in doc.get("resourceSpans", doc.get("resource_spans", []))
             for ss in rs.get("scopeSpans", rs.get("scope_spans", [])) for sp in ss["spans"]]
    roll = rng.random()
    if spans and roll < 0.5:
        sp = rng.choice(spans)
        field = rng.choice(["events", "attributes", "traceId", "spanId", "startTimeUnixNano", "status"])
        sp[field] = rng.choice([5, "x", {"a": 1}, [1], True, [{"name": "e", "timeUnixNano": True}]])
    elif roll < 0.6:
        doc[next(iter(doc))].append(rng.choice([1, "x", None]))
    return doc


def _record_fields(rec: Any) -> tuple[Any, ...]:
    return (rec.trace_id, rec.span_id, rec.parent_span_id, rec.name, rec.kind, rec.attributes, rec.events,
            rec.status_code, rec.status_message, rec.start_time_unix_nano, rec.end_time_unix_nano, rec.scope_name,
            dict(rec.resource_attributes))


def _outcome(read: Any, doc: Any) -> tuple[str, Any]:
    try:
        return "ok", [_record_fields(r) for r in read(doc)]
    except (OtlpJsonError, ValueError, TypeError, AttributeError) as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("seed", range(6))
def test_json_views_carry_what_the_records_carry(seed: int) -> None:
    rng = random.Random(seed)
    outcomes: dict[str, int] = {}
    for _ in range(500):
        doc = _document(rng)
        if rng.random() < 0.4:
            doc = _broken(rng, doc)
        want = _outcome(span_records_from_json, copy.deepcopy(doc))
        got = _outcome(lambda d: (view.record() for view in list(span_views_from_json(d))), copy.deepcopy(doc))
        assert got == want, doc
        outcomes[want[0]] = outcomes.get(want[0], 0) + 1
    assert outcomes.get("ok", 0) > 100 and outcomes.get("OtlpJsonError", 0) > 20, outcomes  # both ways taken


def test_json_views_read_the_corpus_as_the_records_do() -> None:
    import orjson

    from tests.extract.test_fast_lane import FILES

    spans = 0
    for path in FILES:
        for line in path.read_bytes().splitlines():
            if line.strip():
                doc = orjson.loads(line)
                want = [_record_fields(r) for r in span_records_from_json(doc)]
                assert [_record_fields(v.record()) for v in span_views_from_json(doc)] == want, path
                spans += len(want)
    assert spans > 1000


# -- keyed parsers on a decoded span's key table -------------------------------------------------------
def _decoded(pairs: list[tuple[str, Any]]) -> OtlpAttributes:
    raw = Span(attributes=[KeyValue(key=k, value=_any_value(v)) for k, v in pairs]).SerializeToString()
    return OtlpAttributes(LEAN_SPAN.FromString(raw).attributes, raw)


def _index(rng: random.Random, n: int, odd: bool) -> str:
    if odd and rng.random() < 0.3:
        return rng.choice([f"0{n}", f"{n}".translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")), f"{n}"])
    return str(n)


def _oi_pairs(rng: random.Random, odd: bool) -> list[tuple[str, Any]]:
    pairs: list[tuple[str, Any]] = [("openinference.span.kind", "LLM"), ("llm.model_name", "m")]
    for i in range(rng.randrange(5)):
        base = f"llm.input_messages.{_index(rng, i, odd)}.message."
        role = rng.choice(["user", "assistant", "tool", "system", "human"])
        pairs.append((base + "role", role))
        if rng.random() < 0.7:
            pairs.append((base + "content", rng.choice(["what is the weather?", "", "ok", "{\"a\": 1}"])))
        if role == "assistant":
            for j in range(rng.randrange(3)):
                cbase = f"{base}tool_calls.{_index(rng, j, odd)}.tool_call."
                pairs.append((cbase + "id", f"call_{rng.randrange(4)}"))
                pairs.append((cbase + "function.name", rng.choice(["get_weather", "search"])))
                pairs.append((cbase + "function.arguments", "{\"city\": \"Paris\"}"))
        if role == "tool":
            pairs.append((base + "tool_call_id", f"call_{rng.randrange(4)}"))
        if rng.random() < 0.2:
            pairs.append((base + f"contents.{_index(rng, 0, odd)}.message_content.text", "part"))
        if odd and rng.random() < 0.1:
            pairs.append((base + "role\n", "user"))
    for k in range(rng.randrange(2)):  # legacy indexed prompts
        pairs.append((f"gen_ai.prompt.{_index(rng, k, odd)}.role", "user"))
        pairs.append((f"gen_ai.prompt.{_index(rng, k, odd)}.content", "hello"))
        pairs.append((f"gen_ai.completion.{_index(rng, k, odd)}.tool_calls.0.name", "get_weather"))
        pairs.append((f"llm.request.functions.{_index(rng, k, odd)}.name", "get_weather"))
    rng.shuffle(pairs)
    return pairs


def _facts() -> SpanFacts:
    return SpanFacts.new("t" * 32, "s" * 16, None, "llm", "chat", 1, 2)


def _filled(parser: Any, attrs: Any, opts: ExtractOptions) -> dict[str, Any]:
    f = _facts()
    try:
        parser(f, attrs, opts)
    except Exception as exc:  # the general code's failures are held too: the same failure
        return {"failed": f"{type(exc).__name__}: {exc}"}
    fields = {field.name: getattr(f, field.name) for field in dataclasses.fields(f)}
    fields["requested"] = [(r.name, r.call_id, r.arguments, r.kind) for r in f.requested]
    fields["history_calls"] = [(c.name, c.call_id, c.arguments) for c in f.history_calls]
    fields["tools"] = [(t.name, t.description, t.parameters) for t in f.tools]
    return fields


@pytest.mark.parametrize("parser", [content.openinference_inputs, content.traceloop_indexed], ids=lambda p: p.__name__)
def test_keyed_parsers_read_a_key_table_as_its_plain_copy(parser: Any) -> None:
    assert parser in KEYED_PARSERS
    rng = random.Random(parser.__name__)
    odd_seen = canonical_seen = 0
    for n in range(1500):
        odd = n % 3 == 0
        pairs = _oi_pairs(rng, odd)
        attrs = _decoded(pairs)
        general = plain(attrs)  # what the parser was given before: every value, the span's order
        assert list(general) == list(dict.fromkeys(k for k, _ in pairs))
        for opts in (ExtractOptions(), ExtractOptions(max_calls_per_run=2)):
            assert _filled(parser, attrs, opts) == _filled(parser, general, opts), pairs
        if any(content._NON_CANONICAL_INDEX.search(k) for k, _ in pairs if k.startswith("llm.input_messages.")):
            odd_seen += 1
        else:
            canonical_seen += 1
    assert odd_seen > 100 and canonical_seen > 100  # both ways taken


def test_the_corpus_reads_the_same_with_keyed_parsers_given_plain_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: every corpus file, as OTLP/JSON and as protobuf (decoded views, attributes a key
    table), gives the runs it gives when the keyed parsers are handed a plain copy of every attribute."""
    import json

    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from otel_toolscore.service._decode import _hex_ids_to_base64
    from tests.extract.test_fast_lane import FILES

    def protobuf(path: Any) -> bytes:
        return b"".join(
            json_format.ParseDict(_hex_ids_to_base64(json.loads(line)), ExportTraceServiceRequest(),
                                  ignore_unknown_fields=True).SerializeToString()
            for line in path.read_text().splitlines() if line.strip()
        )

    sources: list[Any] = [*FILES, *(protobuf(p) for p in FILES)]
    fast = [[r.model_dump() for r in extract_runs(s)] for s in sources]
    monkeypatch.setattr(
        "otel_toolscore.extract._facts.KEYED_PARSERS",
        KEYED_PARSERS - {content.openinference_inputs, content.traceloop_indexed},
    )
    assert [[r.model_dump() for r in extract_runs(s)] for s in sources] == fast
    assert sum(map(len, fast)) > 300


# -- decoded protobuf values ---------------------------------------------------------------------------
def _random_any(rng: random.Random, depth: int = 0) -> AnyValue:
    roll = rng.randrange(9 if depth < 2 else 6)
    if roll == 0:
        return AnyValue(string_value=rng.choice(["", "x", "ünï", "0"]))
    if roll == 1:
        return AnyValue(int_value=rng.choice([0, 1, -5, 2**62]))
    if roll == 2:
        return AnyValue(bool_value=rng.random() < 0.5)
    if roll == 3:
        return AnyValue(double_value=rng.choice([0.0, 1.5, -2.0]))
    if roll == 4:
        return AnyValue(bytes_value=rng.choice([b"", b"\x00", b"raw"]))
    if roll == 5:
        return AnyValue()  # nothing set
    if roll == 6:
        out = AnyValue()
        out.array_value.values.extend(_random_any(rng, depth + 1) for _ in range(rng.randrange(3)))
        return out
    out = AnyValue()
    out.kvlist_value.values.extend(
        KeyValue(key=f"k{i}", value=_random_any(rng, depth + 1)) for i in range(rng.randrange(3))
    )
    return out


def test_decoded_values_read_as_any_value_reads_them() -> None:
    """A string read without asking which field is set (the span's table, events, the resource)
    gives what ``any_value`` gives for every kind of value, the empty and zero ones included."""
    from otel_toolscore.extract._otlp_views import _values_of
    from otel_toolscore.extract._records import any_value

    rng = random.Random(7)
    for _ in range(2000):
        kvs = [KeyValue(key=rng.choice("abcde"), value=_random_any(rng)) for _ in range(rng.randrange(6))]
        raw = Span(attributes=kvs).SerializeToString()
        table = OtlpAttributes(LEAN_SPAN.FromString(raw).attributes, raw)
        want = {kv.key: any_value(kv.value) for kv in kvs}
        assert _values_of(kvs) == want
        assert {k: table.get(k) for k in want} == want and dict(table.items()) == want
        assert list(table.keys()) == list(want)


def test_span_views_decode_each_span_ids() -> None:
    """Spans of several traces, in a row and interleaved: each view names its own trace (its id is
    decoded once for the spans of a trace in a row)."""
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

    from otel_toolscore.extract._otlp_views import span_views
    from otel_toolscore.extract._records import _hex
    from otel_toolscore.extract._streams import LEAN_RESOURCE_SPANS

    rng = random.Random(3)
    traces = [b"", b"\x00" * 16, *(bytes(rng.randrange(256) for _ in range(16)) for _ in range(3)), b"\x01" * 8]
    for _ in range(200):
        spans = [Span(trace_id=rng.choice(traces), span_id=bytes(rng.randrange(256) for _ in range(8)), name="s")
                 for _ in range(rng.randrange(1, 12))]
        rs = LEAN_RESOURCE_SPANS.FromString(ResourceSpans(scope_spans=[ScopeSpans(spans=spans)]).SerializeToString())
        groups = [(rs, ss, [(raw, LEAN_SPAN.FromString(raw)) for raw in ss.spans]) for ss in rs.scope_spans]
        got = [(v.trace_hex, v.span_hex) for v in span_views(groups)]
        assert got == [(_hex(sp.trace_id, 32) or "0" * 32, _hex(sp.span_id, 16) or "0" * 16) for sp in spans]
