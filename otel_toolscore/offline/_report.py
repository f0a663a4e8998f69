"""``score --report report.html``: one self-contained HTML file (inline CSS, no script, no network asset).

Built from the same records as the JSON, JSON Lines and CSV outputs (:mod:`._records`). What it
shows, in this order: totals and the gate (``--fail-under``) with its result; the rules and default
the runs were held to, with the runs each one scored; the runs by outcome; pass rate and score
distribution per agent and per expectation, ordered by runs scored; the most frequent failing tool
sequences; the failing runs, each linking to its file (and to its trace, given a trace URL
template); and, when the runs were judged, the judge's verdicts with the judge/code disagreements
first.

Bounded whatever the input: each table shows at most ``max_rows`` rows and sums up the rest in an
"others" row, and every text from the data is cut (names at :data:`MAX_NAME_CHARS`, reasons and
explanations at :data:`MAX_TEXT_CHARS`). Every value from the data is HTML-escaped and its control
and bidirectional characters shown as escapes (:func:`~._text.visible`): a name cannot forge markup
or reorder what is displayed.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..expectations import Expectation
from ._records import RecordBuilder, common_root
from ._results import FileRunScore, describe_expectation
from ._text import visible

__all__ = ["DEFAULT_MAX_ROWS", "MAX_NAME_CHARS", "MAX_TEXT_CHARS", "Gate", "render_report", "write_report"]

#: Rows per table by default; the rest are summed up in an "others" row.
DEFAULT_MAX_ROWS = 50
#: Longest name shown (agent, tool, expectation, file); longer ones are cut with "…".
MAX_NAME_CHARS = 120
#: Longest text shown (an explanation, a judge's reason).
MAX_TEXT_CHARS = 1000

#: Score bands of the distribution bars (code scores are 0 or 1; judge scores fall anywhere).
_BANDS: tuple[tuple[str, Callable[[float], bool]], ...] = (
    ("0", lambda s: s <= 0.0), ("0-0.5", lambda s: 0.0 < s < 0.5), ("0.5-1", lambda s: 0.5 <= s < 1.0),
    ("1", lambda s: s >= 1.0),
)
_BAND_CLASS = ("b0", "b1", "b2", "b3")
_OTHERS = "(others)"

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dde6;padding-bottom:4px}
.meta{color:#5b6475;margin-bottom:16px}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #d8dde6;border-radius:6px;padding:10px 14px;min-width:120px}
.card .v{font-size:22px;font-weight:600}.card .k{color:#5b6475;font-size:12px}
.card.gate-passed{border-color:#2f9e5b}.card.gate-failed{border-color:#c0392b;background:#fdf1f0}
table{border-collapse:collapse;margin:6px 0 10px;width:100%}th,td{border-bottom:1px solid #e6e9ef;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f4f6f9;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
td[data-key="pass-rate"]{white-space:nowrap}tr.others td{color:#5b6475;font-style:italic}
tr.disagree td{background:#fff8e6}
.rate{display:inline-block;width:120px;height:10px;background:#f1d4d4;border-radius:3px;vertical-align:middle;margin-right:6px}
.rate i{display:block;height:10px;background:#2f9e5b;border-radius:3px}
.dist{display:flex;width:220px;height:14px;border-radius:3px;overflow:hidden;background:#eef0f4}
.dist span{display:block;height:14px}.b0{background:#c0392b}.b1{background:#e67e22}.b2{background:#f1c40f}.b3{background:#2f9e5b}
.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;vertical-align:middle}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;background:#f4f6f9;padding:1px 4px;border-radius:3px;word-break:break-all}
a{color:#1f5fbf}
.pass{color:#1e7a45;font-weight:600}.fail{color:#b03a2e;font-weight:600}.muted{color:#5b6475}
"""


@dataclass(frozen=True)
class Gate:
    """``--fail-under``: the threshold, the mean it was held against and whether it was met."""

    fail_under: float
    mean: float | None
    passed: bool

    def words(self) -> str:
        if self.mean is None:
            return f"--fail-under {self.fail_under:g}: no run was scored, so the gate fails (exit status 1)"
        if self.passed:
            return f"--fail-under {self.fail_under:g}: mean score {self.mean:.3f} meets it (exit status 0)"
        return f"--fail-under {self.fail_under:g}: mean score {self.mean:.3f} is below it (exit status 1)"


@dataclass
class _Context:
    items: Sequence[FileRunScore]
    records: list[dict[str, Any]]
    judged: bool
    max_rows: int
    trace_url: str | None
    link_base: Path | None
    root: Path | None
    hidden: dict[str, int] = field(default_factory=dict)


def _cut(text: Any, limit: int = MAX_NAME_CHARS) -> str:
    value = "" if text is None else str(text)
    if len(value) > limit:
        value = value[: limit - 1] + f"… ({len(value):,} characters)"
    return value


def _t(text: Any, limit: int = MAX_NAME_CHARS) -> str:
    """Data as HTML text: cut, invisible characters shown, escaped."""
    return escape(visible(_cut(text, limit)))


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def _rate_bar(rate: float | None) -> str:
    if rate is None:
        return '<span class="muted">-</span>'
    return f'<span class="rate"><i style="width:{rate * 100:.1f}%"></i></span>{rate:.1%}'


def _distribution(scores: Sequence[float]) -> tuple[str, list[int]]:
    counts = [sum(1 for s in scores if test(s)) for _, test in _BANDS]
    total = sum(counts)
    if not total:
        return '<span class="muted">-</span>', counts
    spans = "".join(
        f'<span class="{cls}" style="width:{100 * c / total:.2f}%" title="{escape(name)}: {c}"></span>'
        for (name, _), cls, c in zip(_BANDS, _BAND_CLASS, counts) if c
    )
    return f'<div class="dist">{spans}</div>', counts


def _not_scored(members: Sequence[FileRunScore]) -> str:
    counts = Counter(m.outcome for m in members if m.result is None)
    return ", ".join(f"{n} {escape(k)}" for k, n in sorted(counts.items())) or "0"


def _group_row(name: str, members: Sequence[FileRunScore], judged: bool, *, css: str = "", label: str | None = None) -> str:
    scores = [m.result.score for m in members if m.result is not None]
    passed = sum(1 for s in scores if s >= 1.0)
    rate = passed / len(scores) if scores else None
    mean = sum(scores) / len(scores) if scores else None
    bar, counts = _distribution(scores)
    cells = (f'<td>{label if label is not None else _t(name)}</td><td class="n">{len(members)}</td>'
             f'<td class="n">{len(scores)}</td><td data-key="not-scored">{_not_scored(members)}</td>'
             f'<td data-key="pass-rate">{_rate_bar(rate)}</td><td class="n">{_fmt(mean)}</td>'
             f'<td data-counts="{" ".join(map(str, counts))}">{bar}</td>')
    if judged:
        jscores = [m.judgment.result.score for m in members if m.judgment is not None and m.judgment.result is not None]
        jbar, jcounts = _distribution(jscores)
        jmean = sum(jscores) / len(jscores) if jscores else None
        cells += (f'<td class="n">{len(jscores)}</td><td class="n">{_fmt(jmean)}</td>'
                  f'<td data-counts="{" ".join(map(str, jcounts))}">{jbar}</td>')
    cls = f' class="{css}"' if css else ""
    return f'<tr{cls} data-group="{escape(visible(_cut(name)), quote=True)}">{cells}</tr>'


def _group_table(ctx: _Context, key: Callable[[FileRunScore], str], title: str, anchor: str, what: str) -> str:
    """Per-``key`` figures, the groups with the most runs scored first (then most runs, then name,
    case-insensitively); past ``max_rows`` the rest in one "others" row."""
    groups: dict[str, list[FileRunScore]] = defaultdict(list)
    for item in ctx.items:
        groups[key(item)].append(item)

    def order(entry: tuple[str, list[FileRunScore]]) -> tuple[int, int, str, str]:
        name, members = entry
        return (-sum(1 for m in members if m.result is not None), -len(members), name.casefold(), name)

    ranked = sorted(groups.items(), key=order)
    head = (f"<tr><th>{escape(title)}</th><th>runs</th><th>scored</th><th>not scored, by outcome</th><th>pass rate</th>"
            "<th>mean</th><th>score distribution (0 · 0-0.5 · 0.5-1 · 1)</th>")
    head += "<th>judged</th><th>judge mean</th><th>judge distribution</th></tr>" if ctx.judged else "</tr>"
    rows = [_group_row(name, members, ctx.judged) for name, members in ranked[: ctx.max_rows]]
    rest = ranked[ctx.max_rows:]
    if rest:
        ctx.hidden[anchor] = len(rest)
        merged = [m for _, members in rest for m in members]
        rows.append(_group_row(_OTHERS, merged, ctx.judged, css="others",
                               label=f"{_OTHERS} {len(rest):,} more {what}"))
    return f'<table id="{anchor}">{head}{"".join(rows)}</table>'


def _failing_sequences(ctx: _Context) -> str:
    failing = [(i, r) for i, r in zip(ctx.items, ctx.records) if i.result is not None and not i.result.passed]
    if not failing:
        return '<p class="muted" id="failing-sequences">No run failed the code scorer.</p>'
    counts: Counter[tuple[str, tuple[str, ...]]] = Counter()
    example: dict[tuple[str, tuple[str, ...]], tuple[FileRunScore, dict[str, Any]]] = {}
    for item, rec in failing:
        k = (item.run.agent_name or "(unnamed)", tuple(item.tools_called))
        counts[k] += 1
        example.setdefault(k, (item, rec))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0].casefold(), kv[0]))
    rows = []
    for (agent, seq), n in ranked[: ctx.max_rows]:
        ex, rec = example[(agent, seq)]
        called = " → ".join(_cut(s) for s in seq) if seq else "(no tool)"
        rows.append(
            f'<tr><td class="n">{n}</td><td>{_t(agent)}</td><td><code>{escape(visible(_cut(called, MAX_TEXT_CHARS)))}</code></td>'
            f"<td>{_t(ex.expectation_name or '-')}</td>"
            f'<td>{_trace_cell(ctx, rec)}</td><td>{_file_cell(ctx, rec)}</td>'
            f"<td>{_t(ex.explanation, MAX_TEXT_CHARS)}</td></tr>"
        )
    rest = ranked[ctx.max_rows:]
    if rest:
        ctx.hidden["failing-sequences"] = len(rest)
        rows.append(f'<tr class="others"><td class="n">{sum(n for _, n in rest)}</td>'
                    f'<td colspan="6">{_OTHERS} {len(rest):,} more sequence(s)</td></tr>')
    return ('<table id="failing-sequences"><tr><th>runs</th><th>agent</th><th>tools called</th><th>expectation</th>'
            f'<th>example trace id</th><th>its file</th><th>why</th></tr>{"".join(rows)}</table>')


def _others(ctx: _Context, anchor: str, rest: int, colspan: int, what: str) -> str:
    """The row that stands for the ``rest`` rows of table ``anchor`` past ``max_rows``."""
    ctx.hidden[anchor] = rest
    return f'<tr class="others"><td colspan="{colspan}">{_OTHERS} {rest:,} more {what}</td></tr>'


def _file_href(ctx: _Context, file: str) -> str:
    path = (ctx.root / file) if ctx.root is not None else Path(file)
    if ctx.link_base is not None:
        try:
            return quote(Path(os.path.relpath(path, ctx.link_base)).as_posix())
        except ValueError:
            pass
    return Path(os.path.abspath(path)).as_uri()


def _file_cell(ctx: _Context, rec: Mapping[str, Any]) -> str:
    file = rec.get("file")
    if not file:
        return '<span class="muted">-</span>'
    return f'<a data-key="file" href="{escape(_file_href(ctx, file), quote=True)}">{_t(file)}</a>'


def _trace_cell(ctx: _Context, rec: Mapping[str, Any]) -> str:
    trace = str(rec.get("trace_id") or "-")
    code = f'<code data-key="trace">{_t(trace)}</code>'
    if ctx.trace_url and rec.get("trace_id"):
        href = ctx.trace_url.replace("{trace_id}", quote(trace, safe=""))
        return f'<a href="{escape(href, quote=True)}">{code}</a>'
    return code


def _failing_runs(ctx: _Context) -> str:
    failing = [(i, r) for i, r in zip(ctx.items, ctx.records) if i.result is not None and not i.result.passed]
    if not failing:
        return '<p class="muted" id="failing-runs">No run failed the code scorer.</p>'
    failing.sort(key=lambda ir: ((ir[0].run.agent_name or "").casefold(), ir[1].get("file") or "", ir[0].run.run_id))
    rows = []
    for item, rec in failing[: ctx.max_rows]:
        called = " → ".join(_cut(s) for s in item.tools_called) or "(no tool)"
        rows.append(
            f'<tr><td>{_file_cell(ctx, rec)}</td><td>{_trace_cell(ctx, rec)}</td><td>{_t(item.run.agent_name or "-")}</td>'
            f"<td>{_t(item.expectation_name or '-')}</td><td><code>{escape(visible(_cut(called, MAX_TEXT_CHARS)))}</code></td>"
            f"<td>{_t(item.explanation, MAX_TEXT_CHARS)}</td></tr>"
        )
    if len(failing) > ctx.max_rows:
        rows.append(_others(ctx, "failing-runs", len(failing) - ctx.max_rows, 6,
                            "failing run(s): every run is in the JSON, JSON Lines and CSV outputs"))
    return ('<table id="failing-runs"><tr><th>file</th><th>trace id</th><th>agent</th><th>expectation</th>'
            f'<th>tools called</th><th>why</th></tr>{"".join(rows)}</table>')


def _expectation_words(exp: Expectation) -> str:
    criteria = [f"agent_name = {_cut(exp.agent_name)}"] if exp.agent_name else []
    if exp.query_regex:
        criteria.append(f"the request matches /{_cut(exp.query_regex)}/")
    criteria += [f"{_cut(k)} = {_cut(v)}" for k, v in exp.attributes.items()]
    return " and ".join(criteria)


def _rules_section(ctx: _Context, rules: Sequence[Expectation], default: Expectation | None) -> str:
    used: dict[int, list[FileRunScore]] = defaultdict(list)
    for item in ctx.items:
        if item.expectation is not None:
            used[id(item.expectation)].append(item)
    rows = []
    listed = [(r, "rule") for r in rules] + ([(default, "default")] if default is not None else [])
    for exp, kind in listed[: ctx.max_rows]:
        members = used.get(id(exp), [])
        scores = [m.result.score for m in members if m.result is not None]
        rate = sum(1 for s in scores if s >= 1.0) / len(scores) if scores else None
        matches = _expectation_words(exp) if kind == "rule" else "every run no rule matches"
        rows.append(
            f'<tr data-rule="{escape(visible(_cut(exp.name or kind)), quote=True)}"><td>{_t(exp.name or "-")}</td>'
            f"<td>{escape(kind)}</td><td>{escape(visible(matches)) or 'every run'}</td>"
            f"<td>{_t(describe_expectation(exp))}</td><td class=\"n\">{len(members)}</td>"
            f'<td data-key="pass-rate">{_rate_bar(rate)}</td></tr>'
        )
    if len(listed) > ctx.max_rows:
        rows.append(_others(ctx, "rules", len(listed) - ctx.max_rows, 6, "rule(s)"))
    if not rows:
        return ('<p class="muted" id="rules">No rule and no default expectation: no run was code-scored '
                "(give --rules, --expected-tool or --expected-order).</p>")
    return ('<table id="rules"><tr><th>name</th><th>from</th><th>matches</th><th>expects</th><th>runs scored</th>'
            f'<th>pass rate</th></tr>{"".join(rows)}</table>'
            '<p class="muted">The first rule that matches a run applies; the default applies to the runs no rule '
            "matches.</p>")


def _outcomes(ctx: _Context, judge: Mapping[str, Any] | None) -> str:
    counts = Counter(i.outcome for i in ctx.items)
    meaning = {"scored": "held to an expectation and code-scored",
               "no_expectation": "no rule matched and there is no default expectation: not scored"}
    rows = "".join(
        f'<tr data-outcome="{escape(k)}"><td><code>{escape(k)}</code></td><td class="n">{n}</td>'
        f"<td>{escape(meaning.get(k, ''))}</td></tr>"
        for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    out = f'<table id="outcomes"><tr><th>outcome</th><th>runs</th><th>meaning</th></tr>{rows}</table>'
    if judge is not None:
        jcounts: Counter[str] = Counter(judge.get("outcomes", {}))
        jcounts.update(judge.get("not_judged", {}))
        jrows = "".join(
            f'<tr data-outcome="{escape(str(k))}"><td><code>{escape(str(k))}</code></td><td class="n">{n}</td></tr>'
            for k, n in sorted(jcounts.items(), key=lambda kv: (-kv[1], str(kv[0])))
        )
        out += f'<table id="judge-outcomes"><tr><th>judge outcome</th><th>runs</th></tr>{jrows}</table>'
    return out


def _judge_section(ctx: _Context, judge: Mapping[str, Any]) -> str:
    judged = [(i, r) for i, r in zip(ctx.items, ctx.records) if i.judgment is not None and i.judgment.result is not None]

    def disagrees(item: FileRunScore) -> bool:
        return item.result is not None and item.judgment is not None and item.judgment.label != item.label

    # The disagreements first (what a person should look at), then the lowest judge scores.
    judged.sort(key=lambda ir: (not disagrees(ir[0]), ir[0].judgment.result.score if ir[0].judgment and ir[0].judgment.result else 0.0,
                                (ir[0].run.agent_name or "").casefold(), ir[0].run.run_id))
    labels = Counter(i.judgment.label for i, _ in judged if i.judgment is not None)
    outcomes = ", ".join(f"{escape(str(k))} {v}" for k, v in sorted(judge.get("outcomes", {}).items())) or "none"
    skipped = ", ".join(f"{escape(str(k))} {v}" for k, v in sorted(judge.get("not_judged", {}).items())) or "none"
    agree = judge.get("agreement", {})
    n_disagree = sum(1 for i, _ in judged if disagrees(i))
    rows = []
    for item, rec in judged[: ctx.max_rows]:
        j = item.judgment
        assert j is not None and j.result is not None
        evals = "; ".join(
            f"{_t(e.tool_called)}: {'appropriate' if e.was_appropriate else 'not appropriate'}"
            for e in j.result.analyze_step_result.evaluations[: ctx.max_rows]
        ) or "no tool called"
        missing = ", ".join(_t(t) for t in j.result.analyze_step_result.missing_tools[: ctx.max_rows]) or "-"
        cls = "pass" if j.label == "pass" else "fail"
        code = "-" if item.result is None else f'<span class="{"pass" if item.result.passed else "fail"}">{item.label}</span>'
        agrees = "-" if item.result is None else ("no" if disagrees(item) else "yes")
        css = ' class="disagree"' if disagrees(item) else ""
        rows.append(
            f'<tr{css}><td>{_trace_cell(ctx, rec)}</td><td>{_file_cell(ctx, rec)}</td><td>{_t(item.run.agent_name or "-")}</td>'
            f'<td class="n">{j.result.score:.2f}</td><td><span class="{cls}">{escape(j.label or "")}</span></td>'
            f'<td>{code}</td><td data-key="agree">{agrees}</td>'
            f'<td data-key="judge-reason">{_t(j.result.reason, MAX_TEXT_CHARS)}</td><td>{evals}</td><td>{missing}</td></tr>'
        )
    if len(judged) > ctx.max_rows:
        rows.append(_others(ctx, "judged-runs", len(judged) - ctx.max_rows, 10,
                            "judged run(s): every judgment is in the JSON, JSON Lines and CSV outputs"))
    return (
        f'<section id="judge"><h2>Judge verdicts ({_t(judge.get("model", ""))})</h2>'
        f'<p>{len(judged)} run(s) judged: <span class="pass">{labels.get("pass", 0)} pass</span>, '
        f'<span class="fail">{labels.get("fail", 0)} fail</span>; outcomes: {outcomes}; not judged: {skipped}; '
        f'{judge.get("input_tokens", 0):,} input + {judge.get("output_tokens", 0):,} output tokens. '
        f'Judge and code scorer agree on {agree.get("agree", 0)} of {agree.get("compared", 0)} run(s) scored by both; '
        f'<span data-key="disagreements">{n_disagree}</span> disagreement(s), listed first.</p>'
        '<table id="judged-runs"><tr><th>trace id</th><th>file</th><th>agent</th><th>judge score</th><th>judge</th><th>code</th>'
        f'<th>agree</th><th>reason</th><th>per call</th><th>missing tools</th></tr>{"".join(rows)}</table></section>'
    )


def render_report(
    items: Sequence[FileRunScore],
    summary: Mapping[str, Any],
    *,
    files: Iterable[str],
    judge: Mapping[str, Any] | None = None,
    title: str = "Tool-call accuracy report",
    rules: Sequence[Expectation] = (),
    default: Expectation | None = None,
    gate: Gate | None = None,
    trace_url: str | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    link_base: str | Path | None = None,
    include_framework_calls: bool = False,
) -> str:
    """The report as one HTML document.

    ``files``: the input files (their common folder is the root of the ``file`` paths);
    ``trace_url``: a template with ``{trace_id}`` (e.g. ``http://localhost:16686/trace/{trace_id}``)
    that turns trace ids into links; ``link_base``: the folder the report will be written to
    (file links are made relative to it)."""
    file_list = list(files)
    root = common_root(file_list)
    builder = RecordBuilder(root, include_framework_calls=include_framework_calls)
    judged = judge is not None
    ctx = _Context(items=items, records=[builder.scored(i, judged=judged, full=False) for i in items], judged=judged,
                   max_rows=max(1, max_rows), trace_url=trace_url,
                   link_base=Path(os.path.abspath(link_base)) if link_base is not None else None, root=root)
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cards = [
        ("runs", str(summary["runs"]), ""),
        ("scored", str(summary["count"]), ""),
        ("pass rate", "-" if summary["pass_rate"] is None else f"{summary['pass_rate']:.1%}", ""),
        ("mean score", _fmt(summary["mean"], ".3f"), ""),
        ("not scored", str(summary["not_scored"]), ""),
    ]
    if judge is not None:
        cards.append(("judged", str(judge.get("judged", 0)), ""))
        cards.append(("judge mean", _fmt(judge.get("mean"), ".3f"), ""))
    if gate is not None:
        cards.append(("gate", "passed" if gate.passed else "failed", " gate-passed" if gate.passed else " gate-failed"))
    card_html = "".join(f'<div class="card{css}" data-key="{escape(k)}"><div class="v">{escape(v)}</div>'
                        f'<div class="k">{escape(k)}</div></div>' for k, v, css in cards)
    legend = "".join(f'<span class="{cls}"></span>{escape(name)}' for (name, _), cls in zip(_BANDS, _BAND_CLASS))
    gate_html = (f'<p id="gate" data-passed="{"true" if gate.passed else "false"}">{escape(gate.words())}</p>'
                 if gate is not None else '<p id="gate" class="muted">No gate: --fail-under was not given.</p>')
    shown = [_cut(f) for f in (builder.file(f) or f for f in file_list[:10])]
    sections = (
        f"<h2>Gate and rules</h2>{gate_html}{_rules_section(ctx, rules, default)}"
        f"<h2>Runs by outcome</h2>{_outcomes(ctx, judge)}"
        f'<h2>Per agent</h2><div class="legend muted">score bands:{legend}</div>'
        f"{_group_table(ctx, lambda i: i.run.agent_name or '(unnamed)', 'agent', 'per-agent', 'agent(s)')}"
        f"<h2>Per expectation</h2>"
        f"{_group_table(ctx, lambda i: i.expectation_name or '(no expectation)', 'expectation', 'per-expectation', 'expectation(s)')}"
        f"<h2>Most frequent failing tool sequences</h2>{_failing_sequences(ctx)}"
        f"<h2>Failing runs</h2>{_failing_runs(ctx)}"
        f"{_judge_section(ctx, judge) if judge is not None else ''}"
    )
    bounded = (f' · tables cut at {ctx.max_rows} rows (the rest in an "others" row: '
               f'{", ".join(f"{k} {n:,}" for k, n in ctx.hidden.items())})') if ctx.hidden else ""
    body = (
        f"<h1>{escape(title)}</h1>"
        f'<div class="meta">{len(file_list)} file(s) under <code>{_t(str(root) if root else "-", MAX_TEXT_CHARS)}</code>: '
        f'{escape(visible(", ".join(shown)))}{" …" if len(file_list) > 10 else ""} · generated {generated}{escape(bounded)}</div>'
        f'<div class="cards" id="totals">{card_html}</div>{sections}'
    )
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_CSS}</style></head>'
            f"<body>{body}</body></html>\n")


def write_report(path: str | Path, items: Sequence[FileRunScore], summary: Mapping[str, Any], *, files: Iterable[str],
                 **options: Any) -> None:
    """Write :func:`render_report`'s document to ``path`` (file links relative to its folder)."""
    target = Path(path)
    html = render_report(items, summary, files=files, link_base=target.parent, **options)
    target.write_text(html, encoding="utf-8")
