"""What the code scorer expects of a run, and where that comes from.

First match wins: the application's own word for this run (``expect(...)``, or the same keys as
span attributes or baggage), then rules from configuration (agent name, root-span attributes, a
regex over the user's request when it was captured), then the constructor/environment default. A
run with no expectation is not code-scored; the processor counts it as ``no_expectation``.
"""

from __future__ import annotations

import contextvars
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import re2
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..model import AgentRun
from ..scorers.code import MatchMode, ToolCallAccuracyCodeScorer

__all__ = [
    "ATTR_EXPECT_STRICT",
    "ATTR_EXPECT_TOOL",
    "ATTR_EXPECT_TOOL_ORDER",
    "EXPECTATION_CONTEXT",
    "Expectation",
    "RulesError",
    "current_expectation",
    "expect",
    "expectation_from_attributes",
    "load_rules",
    "resolve",
]

# Keys an application sets on the run's root span or in baggage (canary jobs, golden queries).
ATTR_EXPECT_TOOL = "toolscore.expect.tool"
ATTR_EXPECT_TOOL_ORDER = "toolscore.expect.tool_order"
ATTR_EXPECT_STRICT = "toolscore.expect.strict"


class RulesError(ValueError):
    """A rules file cannot be read or has an invalid rule; the message names the file and the key."""


class Expectation(BaseModel):
    """An expected tool or tool order, optionally restricted to the runs a rule matches.

    Matching fields (all optional; all given must match): ``agent_name`` (exact), ``query_regex``
    (searched in the user's request; never matches a run whose request was not captured),
    ``attributes`` (equality on the root span's attributes).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    agent_name: str | None = None
    query_regex: str | None = None
    attributes: dict[str, str | int | float | bool] = Field(default_factory=dict)

    expected_tool: str | None = None
    expected_tool_order: tuple[str, ...] | None = None
    strict_mode: bool = False
    match: MatchMode = "ordered"
    expected_arguments: dict[str, Any] | None = None
    args_match: Literal["exact", "subset"] | None = None

    @field_validator("query_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            _linear_regex(value)
        return value

    @model_validator(mode="after")
    def _has_expectation(self) -> Expectation:
        # Builds the scorer once so an impossible expectation fails at load time, not per run.
        _ = self.scorer
        return self

    @cached_property
    def scorer(self) -> ToolCallAccuracyCodeScorer:
        return self._build_scorer(include_framework_calls=False)

    @cached_property
    def scorer_with_framework_calls(self) -> ToolCallAccuracyCodeScorer:
        """The same scorer, also counting framework calls (handoffs, output tools)."""
        return self._build_scorer(include_framework_calls=True)

    def _build_scorer(self, include_framework_calls: bool) -> ToolCallAccuracyCodeScorer:
        return ToolCallAccuracyCodeScorer(
            self.expected_tool,
            self.strict_mode,
            self.expected_tool_order,
            match=self.match,
            expected_arguments=self.expected_arguments,
            args_match=self.args_match,
            include_framework_calls=include_framework_calls,
        )

    @cached_property
    def _regex(self) -> Any:
        return _linear_regex(self.query_regex) if self.query_regex else None

    @property
    def has_criteria(self) -> bool:
        return bool(self.agent_name or self.query_regex or self.attributes)

    def matches(self, run: AgentRun) -> bool:
        if self.agent_name is not None and run.agent_name != self.agent_name:
            return False
        if self._regex is not None and (run.user_query is None or not self._regex.search(run.user_query)):
            return False
        return all(run.attributes.get(k) == v for k, v in self.attributes.items())


def _linear_regex(pattern: str) -> Any:
    """``pattern`` compiled by RE2, whose matching time is linear in the text: a rule's regex can
    never stall the pipeline (``(a+)+$`` takes microseconds). A pattern RE2 cannot run in linear time
    (backreferences, look-around) is refused here, when the rules are loaded, with the reason."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        try:
            re.compile(pattern)
        except re.error as py_exc:
            raise ValueError(f"query_regex does not compile: {py_exc}") from None
        raise ValueError(
            f"query_regex {pattern!r} cannot be matched in linear time ({reason}); backreferences and "
            "look-around are not supported"
        ) from None


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # the error is reported once, naming the rule


# -- per-request expectations (context) ------------------------------------------------------------
_CURRENT: contextvars.ContextVar[Expectation | None] = contextvars.ContextVar("toolscore_expectation", default=None)


#: The context variable behind :func:`expect` (the processor reads it on the span's thread: one
#: ``ContextVar.get``, no function call in between).
EXPECTATION_CONTEXT = _CURRENT


def current_expectation() -> Expectation | None:
    return _CURRENT.get()


@contextmanager
def expect(
    expected_tool: str | None = None,
    expected_tool_order: Sequence[str] | None = None,
    strict_mode: bool = False,
    **options: Any,
) -> Iterator[Expectation]:
    """Set the expectation for the agent runs started inside the block (top-level runs only).

    Works as a context manager or a decorator, across ``await`` and in asyncio tasks started inside
    (it is a context variable, like the OpenTelemetry context). Nested agent runs are scored by rules.
    """
    exp = Expectation(
        expected_tool=expected_tool,
        expected_tool_order=tuple(expected_tool_order) if expected_tool_order is not None else None,
        strict_mode=strict_mode,
        **options,
    )
    token = _CURRENT.set(exp)
    try:
        yield exp
    finally:
        _CURRENT.reset(token)


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def expectation_from_attributes(attrs: Mapping[str, Any] | None) -> Expectation | None:
    """An expectation from ``toolscore.expect.*`` span attributes or baggage entries, if any.

    Values of the wrong type (a number where a tool name belongs) are ignored, never fatal: the run is
    then scored by the rules, as if the attributes were absent.
    """
    if not attrs:
        return None
    tool = attrs.get(ATTR_EXPECT_TOOL)
    order = attrs.get(ATTR_EXPECT_TOOL_ORDER)
    if not isinstance(tool, str) or not tool:
        tool = None
    if isinstance(order, str):
        order = tuple(p.strip() for p in order.split(",") if p.strip())
    elif isinstance(order, (list, tuple)) and all(isinstance(p, str) for p in order):
        order = tuple(order)
    else:
        order = None
    if tool is None and not order:
        return None
    try:
        return Expectation(
            name="attributes",
            expected_tool=tool,
            expected_tool_order=order or None,
            strict_mode=_as_bool(attrs.get(ATTR_EXPECT_STRICT, False)),
        )
    except (ValidationError, ValueError, TypeError):
        return None  # malformed attributes must not raise here


# -- rules files -----------------------------------------------------------------------------------
def load_rules(path: str | Path) -> list[Expectation]:
    """Expectation rules from a YAML or TOML file: a list, or a mapping with a ``rules`` list.

    Raises :class:`RulesError` naming the file, the rule and the key on any problem.
    """
    from ..files import read_config_text

    p = Path(path)
    text = read_config_text(p, "rules file", error=RulesError)
    try:
        if p.suffix.lower() == ".toml":
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # pragma: no cover - Python 3.10
                import tomli as tomllib
            data: Any = tomllib.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:
        raise RulesError(f"rules file {p} is not valid {'TOML' if p.suffix == '.toml' else 'YAML'}: {exc}") from None
    if isinstance(data, Mapping):
        extra = set(data) - {"rules"}
        if extra:
            raise RulesError(f"rules file {p}: unknown top-level key {sorted(extra)[0]!r} (expected 'rules')")
        data = data.get("rules")
    if data is None:
        return []
    if not isinstance(data, list):
        raise RulesError(f"rules file {p}: 'rules' must be a list of rules")
    rules: list[Expectation] = []
    for i, item in enumerate(data):
        label = f"rule #{i + 1}"
        if isinstance(item, Mapping) and item.get("name"):
            label += f" ({item['name']})"
        if not isinstance(item, Mapping):
            raise RulesError(f"rules file {p}: {label} must be a mapping")
        item = dict(item)
        if isinstance(item.get("expected_tool_order"), str):
            item["expected_tool_order"] = [s.strip() for s in item["expected_tool_order"].split(",") if s.strip()]
        try:
            rules.append(Expectation.model_validate(item))
        except ValidationError as exc:
            from ..envconfig import validation_message

            err = exc.errors()[0]
            key = ".".join(str(x) for x in err["loc"]) or "rule"
            raise RulesError(f"rules file {p}: {label}: {key}: {validation_message(err, Expectation.model_fields)}") from None
    return rules


def resolve(
    run: AgentRun,
    rules: Sequence[Expectation],
    *,
    explicit: Expectation | None = None,
    default: Expectation | None = None,
) -> Expectation | None:
    """The expectation for ``run``: explicit (context/attributes/baggage), first matching rule, default."""
    if explicit is not None:
        return explicit
    for rule in rules:
        if rule.matches(run):
            return rule
    return default
