"""OpenInference annotations on a scored span: the first index the span does not use, its fields."""

from __future__ import annotations

import json

import pytest

from otel_toolscore.telemetry import openinference_annotation


@pytest.mark.parametrize("used", [0, 1, 7, 8, 12])
def test_an_annotation_takes_the_first_free_index(used: int) -> None:
    existing = {f"annotations.{i}.annotation.name": f"other-{i}" for i in range(used)}
    attrs = openinference_annotation(
        existing, name="tool_call_accuracy", score=1, label="pass", explanation="why", annotator_kind="CODE",
        identifier="id-1", metadata={"b": 2, "a": 1},
    )
    prefix = f"annotations.{used}.annotation."
    assert attrs == {
        prefix + "name": "tool_call_accuracy",
        prefix + "annotator_kind": "CODE",
        prefix + "score": 1.0,
        prefix + "label": "pass",
        prefix + "explanation": "why",
        prefix + "identifier": "id-1",
        prefix + "metadata": json.dumps({"a": 1, "b": 2}),
    }


def test_absent_fields_are_left_out() -> None:
    attrs = openinference_annotation({}, name="n", score=None, label=None, explanation=None, annotator_kind="LLM")
    assert attrs == {"annotations.0.annotation.name": "n", "annotations.0.annotation.annotator_kind": "LLM"}
