"""What a model was given, carried as span events (GenAI <= 1.36 ``gen_ai.*.message`` events, the
``…operation.details`` event's ``gen_ai.input.messages``: Strands, OpenLLMetry), waits like input
attributes do when content is not kept: held as the span's event holds it, parsed only for a run that
needs it, and bounded by ``max_deferred_chars``. Parsed later, it leaves the same facts as parsed at
once (``extract/_facts.py``: ``SpanFacts._by_reference``, ``_event_chars``)."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolscore.extract import ExtractOptions, read_span, record_from_readable
from otel_toolscore.extract import _facts as facts_module
from otel_toolscore.extract import _readers as readers
from otel_toolscore.extract._content import log_event_body, log_event_input
from otel_toolscore.extract._facts import INPUT_PARSERS, SpanFacts
from tests.support.facts import facts_fields

NAMES_ONLY = ExtractOptions(capture_content=False)


def _text(rng: random.Random) -> str:
    return rng.choice(["what is the weather?", "", "Error: boom", "ValueError: bad", "ok", "x" * 300])


def _call(rng: random.Random, i: int) -> dict[str, Any]:
    return {"id": f"c{i}", "type": "function", "function": {"name": rng.choice(["get", "put", "find"]), "arguments": "{}"}}


def _history_event(rng: random.Random, i: int) -> tuple[str, dict[str, Any]]:
    """A history event: its body as the event's attributes (Strands) or under ``body`` / JSON."""
    name = rng.choice(["gen_ai.user.message", "gen_ai.system.message", "gen_ai.assistant.message", "gen_ai.tool.message"])
    if name == "gen_ai.tool.message":
        body: dict[str, Any] = {"content": rng.choice([_text(rng), json.dumps([{"text": _text(rng)}])]), "id": f"c{rng.randrange(4)}"}
    elif name == "gen_ai.assistant.message" and rng.random() < 0.6:
        body = {"content": "", "tool_calls": json.dumps([_call(rng, rng.randrange(4)) for _ in range(rng.randint(1, 2))])}
    else:
        body = {"content": rng.choice([_text(rng), json.dumps([{"text": _text(rng)}])])}
    if rng.random() < 0.3:
        return name, {"body": json.dumps(body)}
    return name, body


def _choice_event(rng: random.Random) -> tuple[str, dict[str, Any]]:
    calls = [_call(rng, rng.randrange(4)) for _ in range(rng.randint(0, 2))]
    message: Any = {"role": "assistant", "content": _text(rng), "tool_calls": calls}
    if rng.random() < 0.3:  # Strands: content blocks
        message = [{"toolUse": {"toolUseId": c["id"], "name": c["function"]["name"], "input": {}}} for c in calls] or [
            {"text": _text(rng)}]
    return "gen_ai.choice", {"message": json.dumps(message), "finish_reason": "tool_use" if calls else "end_turn"}


def _detail_event(rng: random.Random) -> tuple[str, dict[str, Any]]:
    inputs = [{"role": "user", "parts": [{"type": "text", "content": _text(rng)}]}]
    if rng.random() < 0.5:
        inputs.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{rng.randrange(4)}",
                                                  "response": _text(rng)}]})
    attrs = {"gen_ai.input.messages": json.dumps(inputs)}
    if rng.random() < 0.7:
        attrs["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": [
            {"type": "tool_call", "id": f"c{rng.randrange(4)}", "name": "get", "arguments": {}}]}])
    return "gen_ai.client.inference.operation.details", attrs


def _spans(seed: int, count: int) -> Iterator[ReadableSpan]:
    rng = random.Random(seed)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(rng.choice(["strands.telemetry.tracer", "opentelemetry.instrumentation.openai", "t"]))
    for _ in range(count):
        with tracer.start_as_current_span(rng.choice(["chat", "execute_event_loop_cycle", "invoke_agent a"]), attributes={
            "gen_ai.operation.name": rng.choice(["chat", "invoke_agent"]), "gen_ai.system": "strands-agents",
        }) as span:
            if rng.random() < 0.3:  # a parser that reads the history too (OpenLLMetry's indexed prompt): then
                # the events' input is read with the answers, in order, as before
                span.set_attributes({"gen_ai.prompt.0.role": "tool", "gen_ai.prompt.0.tool_call_id": "c0",
                                     "gen_ai.prompt.0.content": _text(rng)})
            for i in range(rng.randint(1, 6)):
                r = rng.random()
                name, attrs = _history_event(rng, i) if r < 0.6 else _choice_event(rng) if r < 0.85 else _detail_event(rng)
                span.add_event(name, attrs)
    yield from exporter.get_finished_spans()


def _dump(f: SpanFacts) -> dict[str, Any]:
    """What the facts say (how they were read and what is left to read aside)."""
    return facts_fields(f, ("deferred", "holder", "materialized", "plain"))


def _at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """How event-borne input was read before it could wait: every ``gen_ai.*.message`` and
    ``gen_ai.choice`` event by one parser, with the answers, in order; a detail event's input at once."""
    monkeypatch.setattr(readers, "log_event_input", log_event_body)
    monkeypatch.setattr(readers, "log_event_output", log_event_body)
    monkeypatch.setattr(facts_module, "_event_chars", lambda value: None)


@pytest.mark.parametrize("seed", range(4))
def test_event_input_left_for_later_gives_the_facts_parsed_at_once(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    waited = in_order = 0
    for span in _spans(seed, 150):
        later = read_span(record_from_readable(span), NAMES_ONLY)
        assert later is not None
        inputs = [p for p, _ in later.deferred]
        waited += len(inputs)
        in_order += "gen_ai.prompt.0.content" in (span.attributes or {}) and any(e.name != "gen_ai.choice" for e in span.events)
        assert all(p in INPUT_PARSERS for p in inputs)  # only what the model was given waits
        later.materialize_inputs(NAMES_ONLY)
        with monkeypatch.context() as m:
            _at_once(m)
            now = read_span(record_from_readable(span), NAMES_ONLY)
            assert now is not None and not now.deferred
        assert _dump(later) == _dump(now), span.name
    assert waited > 100 and in_order > 10, (waited, in_order)


def test_event_input_past_max_deferred_chars_is_parsed_at_once() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("strands.telemetry.tracer").start_as_current_span(
        "chat", attributes={"gen_ai.operation.name": "chat"}
    ) as span:
        span.add_event("gen_ai.user.message", {"content": json.dumps([{"text": "q" * 3000}])})
        span.add_event("gen_ai.tool.message", {"content": "ValueError: bad", "id": "c1"})
        span.add_event("gen_ai.choice", {"message": json.dumps([{"toolUse": {"toolUseId": "c2", "name": "get", "input": {}}}])})
    [ended] = exporter.get_finished_spans()
    small = dataclasses.replace(NAMES_ONLY, max_deferred_chars=2000)
    held = read_span(record_from_readable(ended), NAMES_ONLY)
    assert held is not None and [p for p, _ in held.deferred] == [log_event_input, log_event_input]
    assert held.held_chars() > 3000  # the event's attributes counted, not only its name
    bounded = read_span(record_from_readable(ended), small)
    assert bounded is not None and not bounded.deferred  # over the bound: parsed now
    held.materialize_inputs(NAMES_ONLY)
    assert _dump(held) == _dump(bounded)
    assert held.results and held.results["c1"][1] == "ValueError"  # the history's failed result, read


def test_an_event_body_of_unknown_size_is_parsed_at_once() -> None:
    assert facts_module._event_chars(("gen_ai.user.message", {"content": "abc", "n": 3, "t": ("x", "yz")})) == 25
    assert facts_module._event_chars(("gen_ai.user.message", '{"content": "abc"}')) == 37
    assert facts_module._event_chars(("gen_ai.user.message", {"content": {"nested": "x"}})) is None
    assert facts_module._event_chars(("gen_ai.user.message", {"parts": [{"text": "x"}]})) is None
    assert facts_module._event_chars(("gen_ai.user.message", 7)) is None
    assert facts_module._event_chars({"content": "abc"}) is None
    # held, an event body of unknown size counts as too large to hold (a decoded span's nested value)
    f = SpanFacts.new("t", "s", None, "llm", "chat", 1, 2)
    f.defer(log_event_input, ("gen_ai.user.message", {"content": {"nested": "x"}}))
    assert f.held_chars() > 2**40
    f.deferred = [(log_event_input, ("gen_ai.user.message", {"content": "abc"}))]
    assert f.held_chars() == 22
