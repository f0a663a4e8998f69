"""The offline reader leaves a span's answer unparsed until a run asks for it, like its inputs.

A chain span's ``output.value`` (every LangGraph node, every OpenInference CHAIN under an agent) is
the span's answer and nothing else: only a run's root, or its last model call, gives a run its
answer. Where a span's parsers are all input and answer parsers, ``materialize(defer_inputs=True)``
leaves the answer waiting beside the inputs; ``materialize_answer`` parses it alone, and whatever
order the calls come in, the facts end as parsing everything at once leaves them
(``extract/_facts.py``: ``ANSWER_PARSERS``, ``parsers_within``; ``extract/_assemble.py``:
``_first_answer``).
"""

from __future__ import annotations

import json
import random
from typing import Any

from otel_toolscore.extract import ExtractOptions
from otel_toolscore.extract._content import (
    adk_llm_request,
    genai_input_messages,
    genai_output_messages,
    io_value_input,
    io_value_output,
    tool_definitions,
)
from otel_toolscore.extract._facts import ANSWER_PARSERS, REQUEST_PARSERS, SpanFacts
from tests.support.facts import facts_fields

OPTIONS = ExtractOptions()


def _facts(parsers: list[tuple[Any, Any]], role: str = "other") -> SpanFacts:
    f = SpanFacts.new("t" * 32, "s" * 16, None, role, "LangGraph", 1, 5)
    for parser, value in parsers:
        f.defer(parser, value)
    return f


def test_a_chains_answer_waits_with_its_request_and_is_parsed_alone_when_asked() -> None:
    f = _facts([(io_value_input, json.dumps({"input": "weather in Paris?"})), (io_value_output, json.dumps({"output": "sunny"}))])
    f.materialize(OPTIONS, defer_inputs=True)
    assert f.final_output is None and f.user_query is None
    assert [p for p, _ in f.deferred] == [io_value_input, io_value_output]
    f.materialize_answer(OPTIONS)
    assert f.final_output == "sunny" and f.user_query is None
    assert [p for p, _ in f.deferred] == [io_value_input]
    f.materialize_inputs(OPTIONS)
    assert f.user_query == "weather in Paris?" and not f.deferred


def test_an_answer_beside_any_other_parser_is_parsed_on_arrival() -> None:
    """Another parser of the span may set the answer too: the first to run wins, so nothing waits
    out of its order (the model's own output messages here)."""
    out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "from messages"}]}])
    f = _facts([(io_value_input, "hi"), (genai_output_messages, out), (io_value_output, "from output.value")], role="llm")
    f.materialize(OPTIONS, defer_inputs=True)
    assert f.final_output == "from messages"
    assert [p for p, _ in f.deferred] == [io_value_input]


def test_the_parser_sets_are_what_the_assembler_relies_on() -> None:
    assert io_value_output in ANSWER_PARSERS and io_value_input in REQUEST_PARSERS
    assert not ANSWER_PARSERS & REQUEST_PARSERS


def test_waiting_then_asking_in_any_order_leaves_the_facts_parsing_at_once_leaves() -> None:
    rng = random.Random(43)
    texts: list[Any] = [
        "plain words", "", "  padded  ", json.dumps({"output": "x"}), json.dumps({"messages": [{"role": "assistant", "content": "a"}]}),
        json.dumps([{"role": "user", "content": "q"}]), '"quoted"', "{not json", "[REDACTED]", "y" * 9000,
    ]
    history = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "q"}]}])
    defs: list[Any] = [json.dumps([{"name": "a"}, {"name": "b"}]), json.dumps({"name": "c"}), '["d", "e"]', "{bad", ""]
    request = json.dumps({"config": {"tools": [{"function_declarations": [{"name": "r"}]}]}})
    values = {genai_input_messages: [history], tool_definitions: defs, adk_llm_request: [request]}
    pool: list[Any] = [io_value_input, io_value_output, genai_input_messages, tool_definitions, adk_llm_request]
    waited = 0
    for _ in range(3000):
        parsers = [(p, rng.choice(values.get(p, texts))) for p in rng.sample(pool, rng.randint(1, 3))]
        role = rng.choice(["other", "agent", "llm"])
        opts = rng.choice([OPTIONS, ExtractOptions(max_chars=5)])
        at_once = _facts(parsers, role).materialize(opts)
        later = _facts(parsers, role).materialize(opts, defer_inputs=True)
        waited += any(p is io_value_output for p, _ in later.deferred)
        steps = {"answer": later.materialize_answer, "inputs": later.materialize_inputs}
        for step in rng.sample(sorted(steps), 2):
            steps[step](opts)
        assert facts_fields(later) == facts_fields(at_once), (parsers, role)
    assert waited > 200, waited
