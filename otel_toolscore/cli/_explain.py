"""Plain-word explanations of code scores: what an expectation asks, and why a run passed or failed.

Used by ``otel-toolscore demo`` (and usable by any report): the words follow the scorer's rules in
``docs/code-scorer.md`` — lenient order is a subsequence, strict order is the exact list, a run that
called no tool scores 0 in every mode.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..expectations import Expectation
from ..scorers.code import CodeScoreResult

__all__ = ["expectation_in_words", "expectation_source", "why_in_words"]


def _list(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", then ".join(names)


def expectation_in_words(exp: Expectation) -> str:
    """What ``exp`` asks of a run, in one sentence."""
    order = list(exp.expected_tool_order or ())
    expected = order or ([exp.expected_tool] if exp.expected_tool else [])
    names = ", ".join(expected)
    if exp.match == "unordered":
        return f"passes when exactly these calls are made, in any order: {names}"
    if exp.match == "subset":
        return f"passes when every call made is one of {names} (nothing beyond them; order does not matter)"
    if exp.match == "superset":
        return f"passes when {names} are all called, in any order; other tools may be called too"
    if order:
        if exp.strict_mode:
            return f"strict order: passes only when exactly {_list(order)} are called, in that order, and nothing else"
        return (f"lenient order: passes when {_list(order)} are called in that order; "
                "other tools may come before, between or after them")
    tool = exp.expected_tool or "?"
    if exp.strict_mode:
        return f"strict: passes only when {tool} is the one and only tool called"
    return f"lenient: passes when {tool} is among the tools called; other tools may be called too"


def expectation_source(exp: Expectation | None, rules: Sequence[Expectation], default: Expectation | None = None) -> str:
    """Where ``exp`` came from: a rule (and what it matches), the default, or the application's word."""
    if exp is None:
        return "no rule, expect() block or default applies to this run, so it is not scored"
    for rule in rules:
        if rule is exp:
            criteria = [f"agent_name = {rule.agent_name}"] if rule.agent_name else []
            if rule.query_regex:
                criteria.append(f"the request matches /{rule.query_regex}/")
            criteria += [f"{k} = {v}" for k, v in rule.attributes.items()]
            what = f" (matches runs where {' and '.join(criteria)})" if criteria else ""
            return f"rule {rule.name!r}{what}" if rule.name else f"a rule{what}"
    if default is not None and exp is default:
        return "the default expectation"
    if exp.name == "attributes":
        return "the toolscore.expect.* attributes (or baggage) of the run"
    return "the expect() block the application wrapped around this run (it wins over the rules)"


def why_in_words(result: CodeScoreResult) -> list[str]:
    """The facts behind the score, one sentence each (calls that matched are listed only on a pass)."""
    actual = result.preprocess_step_result.actual_tools
    if not actual:
        return ["no tool was called: a run that calls no tool scores 0 in every mode"]
    lines = []
    for m in result.explanation:
        if result.passed:
            lines.append(m.detail)
        elif m.outcome != "matched" and not m.detail.endswith("allowed in this mode"):
            lines.append(m.detail)  # on a failure, only what made it fail
    return lines or [result.summary()]
