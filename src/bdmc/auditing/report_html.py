"""The audit's HTML page: one self-contained file (figures as base64 PNG data URIs, CSS inline, no network).

Layout: a header naming what was audited and the overall verdict; a verdict table (one row per check, linking
to its section); one section per check (figures, numbers, what it means, what to try when it fails); the
settings; a footer with bdmc's version and the time taken. Every text is escaped. A tiny inline script records
for tests whether the page loaded cleanly: ``data-errors`` (script errors and resources that failed to load)
and ``data-figures`` (images that decoded) on ``<body>``.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import OptionTypeError
from ..files import to_jsonable
from ..version import __version__
from .result import AuditResult, CheckOutcome, Figure

# Text label and symbol beside each colour, so a verdict never rests on colour alone.
VERDICT_LABEL = {"pass": ("\u2713", "pass"), "fail": ("\u2717", "FAIL"), "error": ("!", "ERROR"),
                 "incomplete": ("\u2026", "incomplete"), "inconclusive": ("?", "inconclusive"),
                 "informative": ("i", "informative"), "not run": ("\u2013", "not run")}


# Colours meet WCAG AA contrast (>= 4.5:1) as text on their backgrounds, and keep their meaning in greyscale
# through the symbol and the word.
CSS = """
:root { --ink: #1f2328; --muted: #59636e; --rule: #d1d9e0; --paper: #ffffff; --band: #f6f8fa;
  --pass-fg: #116329; --pass-bg: #dafbe1; --fail-fg: #a0111f; --fail-bg: #ffebe9;
  --inc-fg: #6c4400; --inc-bg: #fff1c2; --nr-fg: #424a53; --nr-bg: #e6eaef; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0 auto; max-width: 1120px; padding: 1.5rem 2rem 3rem; color: var(--ink); background: var(--paper);
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans",
  "Liberation Sans", sans-serif; }
h1 { font-size: 1.75rem; margin: 0 0 .5rem; line-height: 1.25; }
h2 { font-size: 1.35rem; margin: 0; line-height: 1.3; }
h3 { font-size: 1.05rem; margin: 1.25rem 0 .35rem; }
p { margin: .35rem 0 .75rem; }
a { color: #0550ae; }
code, .num { font-variant-numeric: tabular-nums; }
header.audit { border-bottom: 2px solid var(--rule); padding-bottom: 1rem; margin-bottom: 1.25rem; }
dl.what { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .5rem 0 .75rem; }
dl.what dt { color: var(--muted); }
dl.what dd { margin: 0; overflow-wrap: anywhere; }
.overall { display: flex; align-items: center; gap: .75rem; flex-wrap: wrap; padding: .6rem .9rem;
  border-radius: 6px; border: 1px solid var(--rule); }
.overall p { margin: 0; }
.badge { display: inline-block; white-space: nowrap; padding: .1rem .55rem; border-radius: 999px;
  font-weight: 600; font-size: .9rem; border: 1px solid currentColor; }
.badge.big { font-size: 1.05rem; padding: .2rem .8rem; }
.v-pass { color: var(--pass-fg); background: var(--pass-bg); }
.v-fail { color: var(--fail-fg); background: var(--fail-bg); }
.v-inconclusive { color: var(--inc-fg); background: var(--inc-bg); }
.v-not-run, .v-informative { color: var(--nr-fg); background: var(--nr-bg); }
.v-error { color: var(--fail-fg); background: var(--inc-bg); }
.v-incomplete { color: var(--inc-fg); background: var(--nr-bg); }
.overall[class*="v-"] { color: var(--ink); }
.caveat { font-weight: 600; }
.scroll { overflow-x: auto; margin: .5rem 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { text-align: left; vertical-align: top; padding: .35rem .6rem; border-bottom: 1px solid var(--rule); }
thead th { background: var(--band); border-bottom: 2px solid var(--rule); white-space: nowrap; }
td.num, th.num { text-align: right; white-space: nowrap; }
table.verdicts th:nth-child(1) { width: 22%; }
table.verdicts th:nth-child(3) { width: 25%; }
table.verdicts th:nth-child(5) { width: 38%; }
table.verdicts td:nth-child(4) { white-space: normal; }
table.verdicts th:nth-child(4) { white-space: normal; }
table.numbers { width: auto; min-width: 50%; font-size: .86rem; }
table.numbers th, table.numbers td { padding: .3rem .5rem; }
table.numbers td { white-space: nowrap; }
table.numbers thead th { white-space: normal; vertical-align: bottom; }
table.kv { width: auto; }
table.kv th { font-weight: normal; color: var(--muted); white-space: nowrap; }
table.kv td { overflow-wrap: anywhere; }
section.check { border-top: 2px solid var(--rule); padding-top: 1.1rem; margin-top: 2rem; }
section.check.failed { border-left: 5px solid var(--fail-fg); padding-left: 1rem; }
.check-head { display: flex; align-items: baseline; justify-content: space-between; gap: 1rem; flex-wrap: wrap; }
.stat { color: var(--muted); margin-top: .2rem; }
.figures { display: flex; flex-wrap: wrap; gap: 1rem; margin: .75rem 0; align-items: flex-start; }
figure { margin: 0; padding: .5rem; border: 1px solid var(--rule); border-radius: 6px; background: #fff;
  max-width: 100%; break-inside: avoid; page-break-inside: avoid; }
figure img { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { color: var(--muted); font-size: .9rem; margin-top: .35rem; }
.note { color: var(--muted); font-size: .9rem; }
.top { font-size: .9rem; }
footer { margin-top: 2.5rem; padding-top: .75rem; border-top: 2px solid var(--rule); color: var(--muted);
  font-size: .9rem; }
@media (max-width: 700px) { body { padding: 1rem; } }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  a { color: inherit; text-decoration: none; }
  .top { display: none; }
  section.check { break-before: auto; }
  h2, h3, .check-head { break-after: avoid; page-break-after: avoid; }
  tr { break-inside: avoid; }
  .scroll { overflow: visible; }
  table.numbers { font-size: 8.5pt; }
  .figures { grid-template-columns: 1fr 1fr; }
}
"""

# Records load status for tests (and for anyone who opens the page's inspector); nothing else.
SCRIPT = """
(function () {
  var errors = [];
  function record(text) {
    errors.push(String(text));
    if (document.body) document.body.dataset.errors = JSON.stringify(errors);
  }
  window.addEventListener("error", function (e) {
    var t = e.target;
    if (t && t !== window && t.tagName) {
      record("failed to load <" + t.tagName.toLowerCase() + "> " + (t.alt || t.src || t.href || ""));
    } else {
      record(e.message || "script error");
    }
  }, true);
  window.addEventListener("load", function () {
    var imgs = document.images, ok = 0;
    for (var i = 0; i < imgs.length; i++) if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
    document.body.dataset.figures = String(ok);
    document.body.dataset.images = String(imgs.length);
    document.body.dataset.errors = JSON.stringify(errors);
    document.body.dataset.loaded = "true";
  });
})();
"""


def esc(value: Any) -> str:
    """Escape any value as HTML text (quotes included, so it is safe in attributes too)."""
    return html.escape(str(value), quote=True)


def slug(name: str) -> str:
    """The section id of a check: ``check-`` and its name in lower case, runs of other characters as ``-``."""
    return "check-" + (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unnamed")


def section_ids(result: AuditResult) -> list[str]:
    """One distinct id per check, in order (a numeric suffix where two names share a slug)."""
    ids, seen = [], {}
    for check in result.checks:
        base = slug(check.name)
        seen[base] = seen.get(base, 0) + 1
        ids.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return ids


def fmt_number(value: Any) -> str:
    """A compact, readable number: 4 significant digits for floats, integers as they are."""
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "\u2014"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "\u2212\u221e" if value < 0 else "+\u221e"
        return f"{value:.4g}".replace("-", "\u2212")
    return str(value)


def fmt_cell(value: Any) -> tuple[str, bool]:
    """(escaped text, is numeric) for a table cell."""
    value = to_jsonable(value)
    if isinstance(value, (int, float)) or value is None:
        return esc(fmt_number(value)), True
    if isinstance(value, (list, tuple, dict)):
        text = json.dumps(value, default=str)
        return esc(text if len(text) <= 120 else text[:117] + "..."), False
    return esc(value), False


def fmt_level(check: CheckOutcome) -> str:
    if check.verdict in ("not run", "error"):
        return "\u2014"
    return "none (informative)" if check.level is None else f"{check.level:.3g}"


def fmt_statistic(check: CheckOutcome) -> str:
    text = check.statistic.strip()
    return "\u2014" if text in ("", "-", "\u2014") else text


def overall_sentence(result: AuditResult) -> str:
    """One sentence under the overall verdict: how many checks ran, which failed or could not decide."""
    n = len(result.checks)
    by = {v: [c.title or c.name for c in result.checks if c.verdict == v] for v in VERDICT_LABEL}
    ran = n - len(by["not run"])
    parts = []
    if by["fail"]:
        parts.append(f"{len(by['fail'])} of {ran} checks that ran failed: {'; '.join(by['fail'])}.")
    if by["error"]:
        parts.append(f"{len(by['error'])} raised an error instead of deciding: {'; '.join(by['error'])}.")
    if by["inconclusive"]:
        parts.append(f"{len(by['inconclusive'])} could not decide: {'; '.join(by['inconclusive'])}.")
    if by["pass"]:
        parts.append(f"{len(by['pass'])} passed" + (", each at its stated false-alarm level." if not by["fail"]
                                                     and not by["inconclusive"] else "."))
    if by["informative"]:
        parts.append(f"{len(by['informative'])} informative (no test: {'; '.join(by['informative'])}).")
    if by["not run"]:
        parts.append(f"{len(by['not run'])} not run (see {'its' if len(by['not run']) == 1 else 'their'} "
                     "section for why).")
    if result.pending:
        parts.append(f"Not finished: {', '.join(result.pending)} (the audit is running, or was interrupted).")
    return " ".join(parts) if parts else "The audit holds no check."


# What was run, in the header's order: provenance key -> label.
PROVENANCE_LABELS = {"command": "Command", "program": "Program file", "function": "Function", "simulator": "Simulator",
                     "observed": "Observed", "data_file": "Data file", "budget": "Budget", "seed": "Seed",
                     "date": "Date", "bdmc_version": "bdmc version"}


def provenance_rows(provenance: Mapping[str, Any]) -> dict[str, str]:
    """The header rows naming what was run (only those the provenance holds)."""
    rows = {}
    for key, label in PROVENANCE_LABELS.items():
        value = provenance.get(key)
        if value is None or value == "" or value == []:
            continue
        rows[label] = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return rows


def fmt_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes} min {secs} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def badge(verdict: str, *, big: bool = False) -> str:
    symbol, label = VERDICT_LABEL[verdict]
    cls = "badge big" if big else "badge"
    return f'<span class="{cls} v-{verdict.replace(" ", "-")}">{symbol} {esc(label)}</span>'


def data_uri(figure: Figure) -> str:
    return "data:image/png;base64," + base64.b64encode(figure.png).decode("ascii")


def columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Union of the rows' keys, in order of first appearance."""
    return list(dict.fromkeys(k for row in rows for k in row))


def rows_table(rows: list[Mapping[str, Any]], *, css: str, max_rows: int) -> str:
    cols = columns(rows)
    shown = rows[:max_rows]
    cells = [[fmt_cell(row.get(c)) for c in cols] for row in shown]
    numeric = [all(cell[i][1] for cell in cells) for i in range(len(cols))]
    # Long snake_case headers may break after an underscore, so a wide table still fits the page.
    head = "".join(f'<th scope="col"{" class=num" if numeric[i] else ""}>{esc(c).replace("_", "_<wbr>")}</th>'
                   for i, c in enumerate(cols))
    body = "".join("<tr>" + "".join(f'<td{" class=num" if numeric[i] else ""}>{text}</td>'
                                    for i, (text, _) in enumerate(row)) + "</tr>" for row in cells)
    note = ""
    if len(rows) > len(shown):
        note = (f'<p class="note">Showing {len(shown)} of {len(rows)} rows; every row is in '
                "<code>results_tables.csv</code>.</p>")
    return (f'<div class="scroll"><table class="{css}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>{note}")


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as dotted keys (``alarm.fired``), so a details table stays two columns of short cells."""
    out = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def fmt_detail(value: Any) -> str:
    """A details cell: a list of records (a table kept in the details) is named, not dumped."""
    value = to_jsonable(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Mapping) for v in value):
        return esc(f"{len(value)} records (in results.json)")
    return fmt_cell(value)[0]


def kv_table(mapping: Mapping[str, Any], *, caption: str | None = None) -> str:
    mapping = flatten(mapping)
    rows = "".join(f'<tr><th scope="row">{esc(k)}</th><td>{fmt_detail(v)}</td></tr>' for k, v in mapping.items())
    cap = f"<caption class=note>{esc(caption)}</caption>" if caption else ""
    return f'<div class="scroll"><table class="kv">{cap}<tbody>{rows}</tbody></table></div>'


def verdict_table(result: AuditResult, ids: list[str]) -> str:
    rows = []
    for check, sid in zip(result.checks, ids, strict=False):
        rows.append(f'<tr><td><a href="#{sid}">{esc(check.title or check.name)}</a></td>'
                    f"<td>{badge(check.verdict)}</td><td>{esc(fmt_statistic(check))}</td>"
                    f'<td class="num">{esc(fmt_level(check))}</td><td>{esc(check.summary)}</td></tr>')
    head = ('<tr><th scope="col">Check</th><th scope="col">Verdict</th><th scope="col">Statistic</th>'
            '<th scope="col" class="num">False-alarm level</th><th scope="col">Summary</th></tr>')
    return (f'<div class="scroll"><table class="verdicts"><thead>{head}</thead><tbody>{"".join(rows)}</tbody>'
            "</table></div>")


def check_section(check: CheckOutcome, sid: str, *, max_rows: int) -> str:
    failed = " failed" if check.verdict in ("fail", "error") else ""  # a bar down the side, seen while scrolling
    parts = [f'<section class="check{failed}" id="{sid}" aria-labelledby="{sid}-title">',
             f'<div class="check-head"><h2 id="{sid}-title">{esc(check.title or check.name)}</h2>'
             f"{badge(check.verdict)}</div>",
             f"<p>{esc(check.summary)}</p>"]
    if check.verdict not in ("not run", "error"):
        level = ("no false-alarm level (informative)" if check.level is None
                 else f"false-alarm level {fmt_level(check)}")
        parts.insert(2, f'<p class="stat">{esc(fmt_statistic(check))} &middot; {esc(level)}</p>')
    if check.figures:
        figs = []
        for i, fig in enumerate(check.figures):
            width, height = fig.size
            # Shown at its own pixel size (never enlarged), narrower on a narrow screen; the caption wraps to it.
            figs.append(f'<figure id="{sid}-fig{i + 1}" style="width: {width + 18}px">'
                        f'<img src="{data_uri(fig)}" alt="{esc(fig.caption)}" width="{width}" height="{height}">'
                        f"<figcaption>{esc(fig.caption)}</figcaption></figure>")
        parts.append(f'<div class="figures">{"".join(figs)}</div>')
    if check.table:
        parts.append("<h3>Numbers</h3>" + rows_table([dict(r) for r in check.table], css="numbers",
                                                      max_rows=max_rows))
    if check.meaning:
        parts.append(f"<h3>What it means</h3><p>{esc(check.meaning)}</p>")
    if check.remedy:
        parts.append(f"<h3>What to try when it fails</h3><p>{esc(check.remedy)}</p>")
    if check.details:
        parts.append("<h3>Details</h3>" + kv_table(dict(check.details)))
    parts.append('<p class="top"><a href="#verdicts">Back to the verdict table</a></p></section>')
    return "\n".join(parts)


def render_html(result: AuditResult, *, title: str | None = None, max_rows: int = 25) -> str:
    """The audit as one self-contained HTML page.

    Parameters
    ----------
    result : AuditResult
        The audit's outcomes; nothing is computed here.
    title : str, optional
        The page's heading; default ``"bdmc audit: <model>"`` (``"bdmc audit"`` when the model's name is long:
        the header names it anyway).
    max_rows : int, optional
        Rows of each check's ``table`` shown in its section (all rows go to ``results_tables.csv``).

    Returns
    -------
    str
        The page: figures as base64 PNG data URIs, CSS inline, no external reference.
    """
    if not isinstance(result, AuditResult):
        raise OptionTypeError(f"render_html needs an AuditResult, got {type(result).__name__}")
    if title is None:
        title = f"bdmc audit: {result.model}" if len(result.model) <= 48 else "bdmc audit"
    ids = section_ids(result)
    what = {"Model": result.model, "PPL": result.ppl, "Sampler": result.sampler, "Data": result.data,
            **provenance_rows(result.provenance)}
    caveat = f'<p class="caveat">{esc(result.caveat)}.</p>' if result.caveat else ""
    header = (
        f'<header class="audit"><h1>{esc(title)}</h1>'
        '<dl class="what">' + "".join(f"<dt>{k}</dt><dd>{esc(v)}</dd>" for k, v in what.items()) + "</dl>"
        f'<div class="overall v-{result.verdict.replace(" ", "-")}" id="overall">'
        f"<strong>Overall</strong>{badge(result.verdict, big=True)}"
        f"<p>{esc(overall_sentence(result))}</p>{caveat}</div></header>"
    )
    sections = "\n".join(check_section(c, sid, max_rows=max_rows) for c, sid in zip(result.checks, ids, strict=False))
    settings = (kv_table(dict(result.settings)) if result.settings
                else '<p class="note">No settings recorded.</p>')
    footer = (f'<footer id="footer">bdmc {esc(__version__)} &middot; the audit took '
              f"{esc(fmt_seconds(result.seconds))} &middot; figures and numbers are also in "
              "<code>results.json</code> and <code>results.csv</code> beside this file.</footer>")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n<script>{SCRIPT}</script>\n</head>\n<body>\n"
        f"{header}\n"
        f'<section id="verdicts" aria-labelledby="verdicts-title"><h2 id="verdicts-title">Verdicts</h2>'
        '<p class="note">A check says FAIL only when its test rejects at its false-alarm level: the probability '
        f"of a FAIL on a correct model and sampler.</p>{verdict_table(result, ids)}</section>\n"
        f"{sections}\n"
        f'<section id="settings" class="check" aria-labelledby="settings-title"><h2 id="settings-title">Settings'
        f"</h2>{settings}</section>\n{footer}\n</body>\n</html>\n"
    )
