"""One builder for a core and its outputs, used by every adapter that drives one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..expectations import Expectation, load_rules
from ..extract import ExtractOptions
from ..settings import Settings
from ._engine import Core
from ._outputs import Outputs
from ._sources import SpanSource

if TYPE_CHECKING:
    from opentelemetry import _logs, metrics

    from ..judge import Judge
    from ..sinks._base import ScoreSink

__all__ = ["build_core", "core_expectations", "core_options"]


def core_expectations(
    settings: Settings, expectations: Sequence[Expectation] | str | Path | None
) -> tuple[list[Expectation], Expectation | None]:
    """The rules (given, or ``settings.rules``; a path is a rules file) and the default expectation
    (from ``settings.expected_tool`` / ``expected_tool_order``) a core scores with."""
    if expectations is None and settings.rules:
        expectations = settings.rules
    rules = load_rules(expectations) if isinstance(expectations, (str, Path)) else list(expectations or ())
    default: Expectation | None = None
    if settings.expected_tool or settings.expected_tool_order:
        default = Expectation(
            name="default",
            expected_tool=settings.expected_tool,
            expected_tool_order=settings.expected_tool_order,
            strict_mode=settings.strict_mode,
        )
    return rules, default


def core_options(settings: Settings, rules: Sequence[Expectation], judging: bool) -> ExtractOptions:
    """How a core reads spans. Content (prompts, answers, arguments) is kept only when something
    reads it: the setting, else a judge or a rule that looks at the query or the arguments."""
    keep = settings.capture_content if settings.capture_content is not None else (
        judging or any(r.query_regex or r.expected_arguments for r in rules)
    )
    return ExtractOptions(
        max_chars=settings.max_content_chars,
        capture_content=keep,
        max_calls_per_run=settings.max_calls_per_run,
        max_parse_chars=settings.max_parse_chars,
    )


def build_core(
    settings: Settings,
    *,
    source: SpanSource,
    expectations: Sequence[Expectation] | str | Path | None = None,
    judge: Judge | None = None,
    meter_provider: metrics.MeterProvider | None = None,
    logger_provider: _logs.LoggerProvider | None = None,
    on_scored: Any = None,
    sinks: Sequence[ScoreSink | str] | None = None,
) -> tuple[Core, Outputs]:
    """A core reading ``source``'s spans, and the outputs its releases go to."""
    rules, default = core_expectations(settings, expectations)
    outputs = Outputs(
        settings,
        rules=rules,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        judge=judge,
        on_scored=on_scored,
        sinks=sinks,
    )
    options = core_options(settings, rules, judging=judge is not None)
    core = Core(settings, rules=rules, default=default, options=options, source=source)
    outputs.emitter.observe_pending(core.table.__len__)  # toolscore.trace.pending, read at collection
    return core, outputs
