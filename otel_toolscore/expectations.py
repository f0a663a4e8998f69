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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .envconfig import alternatives, did_you_mean, lax_bool
from .scorers.code import ToolCallAccuracyCodeScorer

if TYPE_CHECKING:
    from .model import AgentRun
    from .scorers.code import MatchMode

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


class InvalidExpectation(ValueError):
    """An expectation that cannot be used: ``key`` is the field at fault (``None``: the whole rule)."""

    def __init__(self, key: str | None, reason: str) -> None:
        super().__init__(f"{key}: {reason}" if key and not reason.startswith(key) else reason)
        self.key = key
        self.reason = reason


_MATCH_MODES = ("ordered", "unordered", "subset", "superset")
_ARGS_MATCH = ("exact", "subset")
_SCALARS = (str, int, float, bool)


def _text(key: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InvalidExpectation(key, f"must be text, not {type(value).__name__}")


def _one_of(key: str, value: Any, allowed: tuple[str | None, ...]) -> Any:
    if value in allowed and (value is None or isinstance(value, str)):
        return value
    raise InvalidExpectation(key, f"must be one of {alternatives(allowed)}")


def _names(key: str, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InvalidExpectation(key, "must be a list of tool names")


def _mapping(key: str, value: Any, *, scalars: bool) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidExpectation(key, "must be a mapping with text keys")
    if scalars:
        for k, v in value.items():
            if not isinstance(v, _SCALARS):
                raise InvalidExpectation(f"{key}.{k}", "must be text, a number or a boolean")
    return dict(value)


class Expectation:
    """An expected tool or tool order, optionally restricted to the runs a rule matches.

    Matching fields (all optional; all given must match): ``agent_name`` (exact), ``query_regex``
    (searched in the user's request; never matches a run whose request was not captured),
    ``attributes`` (equality on the root span's attributes).

    Frozen, and checked when built: a value of the wrong type, a regex RE2 cannot run, or an
    expectation the code scorer cannot score raises ``ValueError`` naming the field. (A plain class,
    not a pydantic model: the span processor's import path, ``expect()`` and baggage build these.)
    """

    #: The fields, in order (what a rules file's rule may hold).
    FIELDS: tuple[str, ...] = (
        "name", "agent_name", "query_regex", "attributes", "expected_tool", "expected_tool_order", "strict_mode",
        "match", "expected_arguments", "args_match",
    )

    name: str | None
    agent_name: str | None
    query_regex: str | None
    attributes: dict[str, str | int | float | bool]
    expected_tool: str | None
    expected_tool_order: tuple[str, ...] | None
    strict_mode: bool
    match: MatchMode
    expected_arguments: dict[str, Any] | None
    args_match: Literal["exact", "subset"] | None
    #: the code scorer of this expectation (built once, when the expectation is)
    scorer: ToolCallAccuracyCodeScorer

    def __init__(
        self,
        *,
        name: str | None = None,
        agent_name: str | None = None,
        query_regex: str | None = None,
        attributes: Mapping[str, str | int | float | bool] | None = None,
        expected_tool: str | None = None,
        expected_tool_order: Sequence[str] | None = None,
        strict_mode: bool = False,
        match: MatchMode = "ordered",
        expected_arguments: Mapping[str, Any] | None = None,
        args_match: Literal["exact", "subset"] | None = None,
    ) -> None:
        query_regex = _text("query_regex", query_regex)
        try:
            strict = lax_bool(strict_mode)
        except ValueError as exc:
            raise InvalidExpectation("strict_mode", str(exc)) from None
        values: dict[str, Any] = {
            "name": _text("name", name),
            "agent_name": _text("agent_name", agent_name),
            "query_regex": query_regex,
            "attributes": _mapping("attributes", attributes, scalars=True) if attributes is not None else {},
            "expected_tool": _text("expected_tool", expected_tool),
            "expected_tool_order": _names("expected_tool_order", expected_tool_order),
            "strict_mode": strict,
            "match": _one_of("match", match, _MATCH_MODES),
            "expected_arguments": (
                _mapping("expected_arguments", expected_arguments, scalars=False)
                if expected_arguments is not None else None
            ),
            "args_match": _one_of("args_match", args_match, (*_ARGS_MATCH, None)),
        }
        try:
            values["_regex"] = _linear_regex(query_regex) if query_regex else None
        except ValueError as exc:
            raise InvalidExpectation("query_regex", str(exc)) from None
        self.__dict__.update(values)
        # The scorer is built now so an impossible expectation fails at load time, not per run.
        try:
            self.__dict__["scorer"] = self._build_scorer(include_framework_calls=False)
        except (ValueError, TypeError) as exc:
            raise InvalidExpectation(None, str(exc)) from None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Expectation:
        """An expectation from a rules file's rule (a mapping of field names to values)."""
        for key in data:
            if key not in cls.FIELDS:
                hint = did_you_mean(str(key), cls.FIELDS) or f" (known: {', '.join(cls.FIELDS)})"
                raise InvalidExpectation(str(key), f"unknown key{hint}")
        return cls(**data)

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Expectation:
        """A copy with ``update`` applied (e.g. a default renamed after where it came from); the new
        values are checked as the constructor's are."""
        return self.from_mapping({**{f: self.__dict__[f] for f in self.FIELDS}, **(update or {})})

    @property
    def scorer_with_framework_calls(self) -> ToolCallAccuracyCodeScorer:
        """The same scorer, also counting framework calls (handoffs, output tools)."""
        scorer: ToolCallAccuracyCodeScorer | None = self.__dict__.get("_scorer_with_framework_calls")
        if scorer is None:
            scorer = self.__dict__["_scorer_with_framework_calls"] = self._build_scorer(include_framework_calls=True)
        return scorer

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

    @property
    def has_criteria(self) -> bool:
        return bool(self.agent_name or self.query_regex or self.attributes)

    def matches(self, run: AgentRun) -> bool:
        if self.agent_name is not None and run.agent_name != self.agent_name:
            return False
        regex = self.__dict__["_regex"]
        if regex is not None and (run.user_query is None or not regex.search(run.user_query)):
            return False
        attributes = self.attributes
        return not attributes or all(run.attributes.get(k) == v for k, v in attributes.items())

    # -- a frozen value ------------------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Expectation is frozen: build a new one")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Expectation is frozen")

    def _values(self) -> tuple[Any, ...]:
        return tuple(self.__dict__[f] for f in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        # the fields that are hashable (the mappings are left out: equal expectations still hash alike)
        d = self.__dict__
        return hash((d["name"], d["agent_name"], d["query_regex"], d["expected_tool"], d["expected_tool_order"],
                     d["strict_mode"], d["match"], d["args_match"]))

    def __repr__(self) -> str:
        return "Expectation(" + ", ".join(f"{f}={self.__dict__[f]!r}" for f in self.FIELDS) + ")"


def _linear_regex(pattern: str) -> Any:
    """``pattern`` compiled by RE2, whose matching time is linear in the text: a rule's regex can
    never stall the pipeline (``(a+)+$`` takes microseconds). A pattern RE2 cannot run in linear time
    (backreferences, look-around) is refused here, when the rules are loaded, with the reason.

    RE2 loads with the first rule that has a regex, not with the span processor."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the error is reported once, naming the rule
    try:
        return re2.compile(pattern, options)
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
    except (ValueError, TypeError):
        return None  # malformed attributes must not raise here


# -- rules files -----------------------------------------------------------------------------------
def load_rules(path: str | Path) -> list[Expectation]:
    """Expectation rules from a YAML or TOML file: a list, or a mapping with a ``rules`` list.

    Raises :class:`RulesError` naming the file, the rule and the key on any problem.
    """
    from .files import read_config_text

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
            rules.append(Expectation.from_mapping(item))
        except InvalidExpectation as exc:
            raise RulesError(f"rules file {p}: {label}: {exc}") from None
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
