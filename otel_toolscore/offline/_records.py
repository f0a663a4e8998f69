"""The one record schema of the offline outputs: one record per agent run, the same field names in
the same order in JSON, JSON Lines and CSV, for ``extract`` and for ``score`` (the HTML report is
built from the same records).

Every command writes the fields of the groups it has, always in the order of :data:`FIELDS`:
``extract`` the ``run`` fields; ``score`` adds the ``score`` fields; ``score --judge`` adds the
``judge`` fields. The field list and what each means are documented in ``docs/offline.md`` (a test
holds the two together).

``file`` is the path of the file the run's trace was read from, relative to the deepest folder that
holds every input file (:func:`common_root`): two files with the same name in different folders stay
apart, and the records do not depend on where the command was run from.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model import AgentRun
from ._results import FileRunScore

__all__ = ["FIELDS", "RENAMED", "Field", "RecordBuilder", "common_root", "field_names"]


@dataclass(frozen=True)
class Field:
    name: str
    group: str  # run | score | judge
    meaning: str


FIELDS: tuple[Field, ...] = (
    Field("file", "run", "the file the run's trace was read from, relative to the folder that holds every input file "
          "(`root` in `score`'s JSON document)"),
    Field("trace_id", "run", "the trace id (32 hex digits)"),
    Field("run_id", "run", "the span id of the run's root (16 hex digits)"),
    Field("parent_run_id", "run", "the run this one was called from (a sub-agent or handoff), else empty"),
    Field("agent", "run", "the agent's name (what rules match on), else empty"),
    Field("conversation_id", "run", "`gen_ai.conversation.id` or the framework's session id, else empty"),
    Field("conventions", "run", "the conventions and frameworks the run was read from"),
    Field("expectation", "score", "the rule, default or `expect()` the run was held to (its name, else what it "
          "expects); empty when none applied"),
    Field("score", "score", "the code score, 0 or 1; empty when not scored"),
    Field("label", "score", "`pass`, `fail` or `not_scored`"),
    Field("outcome", "score", "`scored` or `no_expectation`"),
    Field("explanation", "score", "one line: what was expected, what was called, why it passed or failed"),
    Field("judge_outcome", "judge", "`ok`, or why there is no judgment: a failure (`error`, `timeout`, "
          "`invalid_answer`, `rate_limited`, `circuit_open`) or a skip (`not_sampled`, `no_content`, `budget`, "
          "`max_judgments`)"),
    Field("judge_sampled_by", "judge", "why the run was sent to the judge (`ratio`, `flag`, `code_fail`, "
          "`new_sequence`, `rule`), else empty"),
    Field("judge_score", "judge", "the judge's score, 0..1; empty without a judgment"),
    Field("judge_label", "judge", "`pass` or `fail` at the judge's pass threshold; empty without a judgment"),
    Field("judge_reason", "judge", "the judge's reason, or the failure's or the skip's explanation"),
    Field("tools_called", "run", "the names of the calls the code scorer counts, in the order they were made "
          "(framework calls such as handoffs only with `--include-framework-calls`)"),
    Field("user_query", "run", "the user's request (empty with `--no-content` or when not captured)"),
    Field("final_output", "run", "the agent's final answer (empty with `--no-content` or when not captured)"),
    Field("available_tools", "run", "the names of the tools the model was offered"),
    Field("tool_calls", "run", "every call in full: `name`, `call_id`, `arguments`, `result`, `status`, "
          "`error_type`, `kind` (`tool` or `framework`), `source`"),
    Field("result", "score", "the code scorer's full result, in Mastra's shape (`score`, `preprocessStepResult`, ...)"),
    Field("judge_result", "judge", "the judge's full result, in Mastra's shape, when there is one"),
)

#: Field names of earlier releases -> the schema's name (see CHANGELOG.md).
RENAMED: Mapping[str, str] = {
    "agent_name": "agent",
    "judge.outcome": "judge_outcome",
    "judge.sampled_by": "judge_sampled_by",
    "judge.score": "judge_score",
    "judge.label": "judge_label",
    "judge.reason": "judge_reason",
    "judge.result": "judge_result",
}


@functools.cache
def field_names(*, score: bool = False, judge: bool = False) -> tuple[str, ...]:
    """The fields a command writes, in schema order: ``run`` always, ``score`` and ``judge`` when asked."""
    groups = {"run"} | ({"score"} if score else set()) | ({"judge"} if judge else set())
    return tuple(f.name for f in FIELDS if f.group in groups)


def common_root(files: Iterable[str | os.PathLike[str]]) -> Path | None:
    """The deepest folder holding every file of ``files`` (absolute), or ``None`` without files."""
    folders = {os.path.dirname(os.path.abspath(f)) for f in files}
    if not folders:
        return None
    try:
        return Path(os.path.commonpath(sorted(folders)))
    except ValueError:  # paths on different drives (Windows)
        return None


class RecordBuilder:
    """Records of runs read from files under ``root`` (see :func:`common_root`)."""

    def __init__(self, root: Path | None, *, include_framework_calls: bool = False) -> None:
        self.root = root
        self.include_framework_calls = include_framework_calls
        self._files: dict[str, str] = {}  # a file holds many runs: each path is worked out once

    def file(self, path: str | None) -> str | None:
        """``path`` relative to the root (``/``-separated), or as it is when it is not under it."""
        if not path:
            return None
        known = self._files.get(path)
        if known is None:
            known = self._files[path] = self._relative(path)
        return known

    def _relative(self, path: str) -> str:
        if self.root is None:
            return Path(path).as_posix()
        try:
            return Path(os.path.relpath(os.path.abspath(path), self.root)).as_posix()
        except ValueError:
            return Path(path).as_posix()

    def tools_called(self, run: AgentRun) -> list[str]:
        return [c.name for c in run.tool_calls if c.kind == "tool" or self.include_framework_calls]

    def run(self, run: AgentRun, file: str | None) -> dict[str, Any]:
        """The ``run`` fields of one run, in schema order."""
        return self._ordered(self._run_values(run, file), field_names())

    def scored(self, item: FileRunScore, *, judged: bool = False, full: bool = True) -> dict[str, Any]:
        """Every field of a scored run (with the judge's when ``judged``), in schema order.

        ``full=False`` leaves the bulky fields empty (``tool_calls``, ``result``, ``judge_result``):
        what the HTML report reads, for any number of runs."""
        values = self._run_values(item.run, item.file, full=full)
        res = item.result
        values.update(
            expectation=item.expectation_name,
            score=res.score if res is not None else None,
            label=item.label,
            outcome=item.outcome,
            explanation=item.explanation,
            result=res.model_dump(mode="json", by_alias=True) if res is not None and full else None,
        )
        if judged:
            j = item.judgment
            jres = j.result if j is not None else None
            values.update(
                judge_outcome=j.outcome if j is not None else None,
                judge_sampled_by=j.sampled_by if j is not None else None,
                judge_score=jres.score if jres is not None else None,
                judge_label=j.label if j is not None else None,
                judge_reason=(jres.reason if jres is not None else j.message) if j is not None else None,
                judge_result=jres.model_dump(mode="json", by_alias=True) if jres is not None and full else None,
            )
        return self._ordered(values, field_names(score=True, judge=judged))

    def _run_values(self, run: AgentRun, file: str | None, *, full: bool = True) -> dict[str, Any]:
        return {
            "file": self.file(file),
            "trace_id": run.trace_id,
            "run_id": run.run_id,
            "parent_run_id": run.parent_run_id,
            "agent": run.agent_name,
            "conversation_id": run.conversation_id,
            "conventions": list(run.conventions),
            "tools_called": self.tools_called(run),
            "user_query": run.user_query,
            "final_output": run.final_output,
            "available_tools": [t.name for t in run.available_tools],
            "tool_calls": [
                c.model_dump(mode="json", exclude_none=True, exclude={"start_time_unix_nano", "end_time_unix_nano"})
                for c in run.tool_calls
            ] if full else None,
        }

    @staticmethod
    def _ordered(values: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
        return {name: values.get(name) for name in names}
