"""The ``otel_toolscore.scorers.llm`` package's face: every public name resolves from it, and the
factory takes exactly the scorer class's parameters (written once, on the class)."""

from __future__ import annotations

import inspect

import otel_toolscore.scorers.llm as llm


def test_every_public_name_resolves_from_the_package() -> None:
    for name in llm.__all__:
        assert getattr(llm, name) is not None, name
    for name in ("DEADLINE_TIMEOUTS", "DEFAULT_MAX_ARGUMENT_CHARS", "DEFAULT_MAX_TEXT_CHARS", "MAX_REPORTED_TOKENS", "ToolSpec"):
        assert hasattr(llm, name), name


def test_the_factory_has_the_classs_parameters() -> None:
    factory = inspect.signature(llm.create_tool_call_accuracy_scorer_llm)
    cls = inspect.signature(llm.ToolCallAccuracyLLMScorer)
    assert list(factory.parameters.values()) == list(cls.parameters.values())
    scorer = llm.create_tool_call_accuracy_scorer_llm("openai/m", ["a"], include_results=True, max_text_chars=500)
    assert isinstance(scorer, llm.ToolCallAccuracyLLMScorer)
    assert (scorer.model, scorer.include_results, scorer.max_text_chars) == ("m", True, 500)
