"""``score --report report.html``: one self-contained HTML file (inline CSS, no script, no network asset).

What it shows: totals; pass rate and score distribution per agent and per expectation; the most
frequent failing tool sequences with an example trace id each; and, when the runs were judged, the
judge's verdicts and reasons. Every value from the data is HTML-escaped (agent names, tool names
and judge reasons are untrusted text).
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from html import escape
from pathlib import Path
from typing import Any

from .results import FileRunScore

__all__ = ["render_report", "write_report"]

#: Score bands of the distribution bars (code scores are 0 or 1; judge scores fall anywhere).
_BANDS: tuple[tuple[str, Callable[[float], bool]], ...] = (("0", lambda s: s <= 0.0), ("0-0.5", lambda s: 0.0 < s < 0.5), ("0.5-1", lambda s: 0.5 <= s < 1.0),
          ("1", lambda s: s >= 1.0))
_BAND_CLASS = ("b0", "b1", "b2", "b3")
_TOP_SEQUENCES = 15
_MAX_JUDGED_ROWS = 500

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dde6;padding-bottom:4px}
.meta{color:#5b6475;margin-bottom:16px}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #d8dde6;border-radius:6px;padding:10px 14px;min-width:120px}
.card .v{font-size:22px;font-weight:600}.card .k{color:#5b6475;font-size:12px}
table{border-collapse:collapse;margin:6px 0 10px;width:100%}th,td{border-bottom:1px solid #e6e9ef;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f4f6f9;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
td[data-key="pass-rate"]{white-space:nowrap}
.rate{display:inline-block;width:120px;height:10px;background:#f1d4d4;border-radius:3px;vertical-align:middle;margin-right:6px}
.rate i{display:block;height:10px;background:#2f9e5b;border-radius:3px}
.dist{display:flex;width:220px;height:14px;border-radius:3px;overflow:hidden;background:#eef0f4}
.dist span{display:block;height:14px}.b0{background:#c0392b}.b1{background:#e67e22}.b2{background:#f1c40f}.b3{background:#2f9e5b}
.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;vertical-align:middle}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;background:#f4f6f9;padding:1px 4px;border-radius:3px}
.pass{color:#1e7a45;font-weight:600}.fail{color:#b03a2e;font-weight:600}.muted{color:#5b6475}
"""


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


def _group_table(items: Sequence[FileRunScore], key: Callable[[FileRunScore], str], title: str, anchor: str,
                 judged: bool) -> str:
    groups: dict[str, list[FileRunScore]] = defaultdict(list)
    for item in items:
        groups[key(item)].append(item)
    head = (f"<tr><th>{escape(title)}</th><th>runs</th><th>scored</th><th>pass rate</th><th>mean</th>"
            "<th>score distribution (0 · 0-0.5 · 0.5-1 · 1)</th>")
    head += "<th>judged</th><th>judge mean</th><th>judge distribution</th></tr>" if judged else "</tr>"
    rows = []
    for name, members in sorted(groups.items()):
        scores = [m.result.score for m in members if m.result is not None]
        passed = sum(1 for s in scores if s >= 1.0)
        rate = passed / len(scores) if scores else None
        mean = sum(scores) / len(scores) if scores else None
        bar, counts = _distribution(scores)
        cells = (f'<td>{escape(name)}</td><td class="n">{len(members)}</td><td class="n">{len(scores)}</td>'
                 f'<td data-key="pass-rate">{_rate_bar(rate)}</td><td class="n">{_fmt(mean)}</td>'
                 f'<td data-counts="{" ".join(map(str, counts))}">{bar}</td>')
        if judged:
            jscores = [m.judgment.result.score for m in members if m.judgment is not None and m.judgment.result is not None]
            jbar, jcounts = _distribution(jscores)
            jmean = sum(jscores) / len(jscores) if jscores else None
            cells += (f'<td class="n">{len(jscores)}</td><td class="n">{_fmt(jmean)}</td>'
                      f'<td data-counts="{" ".join(map(str, jcounts))}">{jbar}</td>')
        rows.append(f'<tr data-group="{escape(name)}">{cells}</tr>')
    return f'<table id="{anchor}">{head}{"".join(rows)}</table>'


def _failing_sequences(items: Sequence[FileRunScore]) -> str:
    failing = [i for i in items if i.result is not None and not i.result.passed]
    if not failing:
        return '<p class="muted" id="failing-sequences">No run failed the code scorer.</p>'
    counts: Counter[tuple[str, tuple[str, ...]]] = Counter()
    example: dict[tuple[str, tuple[str, ...]], FileRunScore] = {}
    for item in failing:
        k = (item.run.agent_name or "(unnamed)", tuple(item.tools_called))
        counts[k] += 1
        example.setdefault(k, item)
    rows = []
    for (agent, seq), n in counts.most_common(_TOP_SEQUENCES):
        ex = example[(agent, seq)]
        called = " → ".join(seq) if seq else "(no tool)"
        rows.append(
            f'<tr><td class="n">{n}</td><td>{escape(agent)}</td><td><code>{escape(called)}</code></td>'
            f"<td>{escape(ex.expectation_name or '-')}</td>"
            f'<td><code data-key="example-trace">{escape(ex.run.trace_id or "-")}</code></td>'
            f"<td>{escape(ex.explanation)}</td></tr>"
        )
    more = len(counts) - _TOP_SEQUENCES
    note = f'<p class="muted">{more} more sequence(s) not shown.</p>' if more > 0 else ""
    return ('<table id="failing-sequences"><tr><th>runs</th><th>agent</th><th>tools called</th><th>expectation</th>'
            f'<th>example trace id</th><th>why</th></tr>{"".join(rows)}</table>{note}')


def _judge_section(items: Sequence[FileRunScore], judge: dict[str, Any]) -> str:
    judged = [i for i in items if i.judgment is not None and i.judgment.result is not None]
    labels = Counter(i.judgment.label for i in judged if i.judgment is not None)
    outcomes = ", ".join(f"{escape(str(k))} {v}" for k, v in sorted(judge.get("outcomes", {}).items())) or "none"
    skipped = ", ".join(f"{escape(str(k))} {v}" for k, v in sorted(judge.get("not_judged", {}).items())) or "none"
    agree = judge.get("agreement", {})
    rows = []
    for item in sorted(judged, key=lambda i: (i.judgment.result.score if i.judgment and i.judgment.result else 0.0))[:_MAX_JUDGED_ROWS]:
        j = item.judgment
        assert j is not None and j.result is not None
        evals = "; ".join(
            f"{escape(e.tool_called)}: {'appropriate' if e.was_appropriate else 'not appropriate'}"
            for e in j.result.analyze_step_result.evaluations
        ) or "no tool called"
        missing = ", ".join(escape(t) for t in j.result.analyze_step_result.missing_tools) or "-"
        cls = "pass" if j.label == "pass" else "fail"
        code = "-" if item.result is None else f'<span class="{"pass" if item.result.passed else "fail"}">{item.label}</span>'
        rows.append(
            f'<tr><td><code>{escape(item.run.trace_id or "-")}</code></td><td>{escape(item.run.agent_name or "-")}</td>'
            f'<td class="n">{j.result.score:.2f}</td><td><span class="{cls}">{escape(j.label or "")}</span></td>'
            f'<td>{code}</td><td data-key="judge-reason">{escape(j.result.reason)}</td><td>{evals}</td><td>{missing}</td></tr>'
        )
    return (
        f'<section id="judge"><h2>Judge verdicts ({escape(str(judge.get("model", "")))})</h2>'
        f'<p>{len(judged)} run(s) judged: <span class="pass">{labels.get("pass", 0)} pass</span>, '
        f'<span class="fail">{labels.get("fail", 0)} fail</span>; outcomes: {outcomes}; not judged: {skipped}; '
        f'{judge.get("input_tokens", 0):,} input + {judge.get("output_tokens", 0):,} output tokens. '
        f'Judge and code scorer agree on {agree.get("agree", 0)} of {agree.get("compared", 0)} run(s) scored by both.</p>'
        '<table id="judged-runs"><tr><th>trace id</th><th>agent</th><th>judge score</th><th>judge</th><th>code</th>'
        f'<th>reason</th><th>per call</th><th>missing tools</th></tr>{"".join(rows)}</table></section>'
    )


def render_report(items: Sequence[FileRunScore], summary: dict[str, Any], *, files: Iterable[str],
                  judge: dict[str, Any] | None = None, title: str = "Tool-call accuracy report") -> str:
    """The report as one HTML document."""
    file_list = [Path(f).name for f in files]
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    judged = judge is not None
    cards = [
        ("runs", str(summary["runs"])),
        ("scored", str(summary["count"])),
        ("pass rate", "-" if summary["pass_rate"] is None else f"{summary['pass_rate']:.1%}"),
        ("mean score", _fmt(summary["mean"], ".3f")),
        ("not scored", str(summary["not_scored"])),
    ]
    if judge is not None:
        cards.append(("judged", str(judge.get("judged", 0))))
        cards.append(("judge mean", _fmt(judge.get("mean"), ".3f")))
    card_html = "".join(f'<div class="card" data-key="{escape(k)}"><div class="v">{escape(v)}</div>'
                        f'<div class="k">{escape(k)}</div></div>' for k, v in cards)
    legend = "".join(f'<span class="{cls}"></span>{escape(name)}' for (name, _), cls in zip(_BANDS, _BAND_CLASS))
    body = (
        f"<h1>{escape(title)}</h1>"
        f'<div class="meta">{len(file_list)} file(s): {escape(", ".join(file_list[:10]))}'
        f'{" …" if len(file_list) > 10 else ""} · generated {generated}</div>'
        f'<div class="cards" id="totals">{card_html}</div>'
        f'<h2>Per agent</h2><div class="legend muted">score bands:{legend}</div>'
        f"{_group_table(items, lambda i: i.run.agent_name or '(unnamed)', 'agent', 'per-agent', judged)}"
        f"<h2>Per expectation</h2>"
        f"{_group_table(items, lambda i: i.expectation_name or '(no expectation)', 'expectation', 'per-expectation', judged)}"
        f"<h2>Most frequent failing tool sequences</h2>{_failing_sequences(items)}"
        f"{_judge_section(items, judge) if judge is not None else ''}"
    )
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_CSS}</style></head>'
            f"<body>{body}</body></html>\n")


def write_report(path: str | Path, items: Sequence[FileRunScore], summary: dict[str, Any], *, files: Iterable[str],
                 judge: dict[str, Any] | None = None) -> None:
    Path(path).write_text(render_report(items, summary, files=files, judge=judge), encoding="utf-8")
