"""A fleet's restore checks as one self-contained HTML page (``flink-jobgraph report``).

Pure text building over rows already read (``pipeline/render/report.py`` reads the tables, draws
the diffs with Graphviz and writes the file):

- **the fleet**: checks per verdict, failing checks per failure kind and per Flink line;
- **the checks, worst first** (:func:`worst_first`): each with the operator, Flink's message, the
  fix lines and whether each is proven;
- **one section per job version pair** that fails (:func:`diff_section`): the JobGraph comparison
  ``render --compare`` draws (:func:`udfs.render.layout.diff_html`), with the operators the restore
  fails on marked. A section is kept in an inert ``<template>`` and put into the page when it is
  opened (a link from a check opens it), so a large fleet's page opens as fast as a small one's.

Every text from the tables is escaped; ``check_id`` and ``graph_id`` are any strings, so anchors
are numbered, never made from them.
"""

from __future__ import annotations

import html
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from udfs.render import layout, viewer

__all__ = [
    "DEFAULT_MAX_DIFFS",
    "DEFAULT_MAX_ROWS",
    "CheckLine",
    "DiffSection",
    "FixLine",
    "STATUS_ORDER",
    "diff_section",
    "pick_previous_version",
    "report_page",
    "status",
    "worst_first",
]

# Job sections drawn at most (the worst first): each holds two inline SVGs, so a page of a
# thousand failing jobs would run to hundreds of MB; the page lists the pairs left out.
DEFAULT_MAX_DIFFS = 50
# Checks listed at most (the worst first; the counts always cover all): about 1 kB of page each.
DEFAULT_MAX_ROWS = 5000
FAILS, ERROR, NOT_DECIDABLE, RESTORES = "FAILS", "ERROR", "NOT_DECIDABLE", "RESTORES"
# Worst first. NOT_DECIDABLE is a RESTORES row with decidable = false (restore_checks keeps three verdicts).
STATUS_ORDER = (FAILS, ERROR, NOT_DECIDABLE, RESTORES)
STATUS_MEANING = {
    FAILS: "would fail to restore",
    ERROR: "could not be checked (unreadable savepoint, unknown or rejected graph, bad manifest line)",
    NOT_DECIDABLE: "restores as far as can be known; part of the state cannot be decided (the reasons are listed)",
    RESTORES: "restores",
}


@dataclass(frozen=True)
class FixLine:
    """One ``restore_fixes`` row as a line: the code (or advice), what it is about, and whether
    the patched job was recomputed and restores (``proven``; None: advice no recomputation proves)."""

    text: str
    proven: bool | None
    note: str = ""


@dataclass
class CheckLine:
    """One ``restore_checks`` row with what the report adds to it."""

    check_id: str
    savepoint: str
    graph_id: str
    verdict: str
    failure: str | None = None
    operator_id: str | None = None
    operator_name: str | None = None
    message: str | None = None
    decidable: bool | None = True
    undecidable_reasons: Sequence[str] = ()
    flink_version: str | None = None  # the new graph's Flink line
    fixes: list[FixLine] = field(default_factory=list)
    problems: int = 0  # restore_fixes rows + failing state problems: what has to change
    lost_operators: int = 0  # saved operators the restore fails on (LOST)
    lost_state_bytes: int = 0  # their saved state
    losses: list[str] = field(default_factory=list)  # restore_warnings: saved values a restore would not carry over
    diff: str | None = None  # the anchor of its job's section
    diff_note: str = ""  # why it has none

    @property
    def status(self) -> str:
        return status(self.verdict, self.decidable)


def status(verdict: str, decidable: bool | None) -> str:
    """The report's status of a check: its verdict, and NOT_DECIDABLE for a RESTORES that is not decidable."""
    if verdict == RESTORES and decidable is False:
        return NOT_DECIDABLE
    return verdict


def _rank(s: str) -> int:
    return STATUS_ORDER.index(s) if s in STATUS_ORDER else len(STATUS_ORDER)


def worst_first(checks: Iterable[CheckLine]) -> list[CheckLine]:
    """FAILS, then ERROR, then NOT_DECIDABLE, then RESTORES; within each, the most problems first,
    then the most lost state (bytes), then the most lost operators, then by check_id."""
    return sorted(
        checks, key=lambda c: (_rank(c.status), -c.problems, -c.lost_state_bytes, -c.lost_operators, c.check_id)
    )


def pick_previous_version(
    new_graph_id: str, new_line: str | None, candidates: Iterable[tuple[str, str | None, int]]
) -> tuple[str, int] | None:
    """The job version that most likely took the savepoint, from ``(graph_id, flink_version,
    matched)`` candidates: graphs other than the new one holding ``matched`` of the savepoint's
    operator IDs. The most matched wins; ties go to the same Flink line as the new version, then
    to the graph_id sharing the longest prefix with the new one (``orders@v42`` for ``orders@v43``),
    then to the smallest graph_id. None when no other graph holds any of them."""
    best = None
    for gid, line, matched in candidates:
        if gid == new_graph_id or matched <= 0:
            continue
        key = (-matched, line != new_line, -len(os.path.commonprefix([gid, new_graph_id])), gid)
        if best is None or key < best[0]:
            best = (key, gid, matched)
    return None if best is None else (best[1], best[2])


@dataclass(frozen=True)
class DiffSection:
    """One job's drawn comparison (or the new version alone), for the checks that link to it."""

    anchor: str
    title: str
    body: str  # layout.diff_html(...)
    check_ids: tuple[str, ...]
    note: str = ""


def diff_section(anchor: str, title: str, sides: list, check_ids: Sequence[str], note: str = "") -> DiffSection:
    """A section holding ``render --compare``'s panels and table for ``sides`` ((graph, svg, changes)
    as :func:`udfs.render.layout.diff_html` takes them)."""
    return DiffSection(anchor, title, layout.diff_html(sides), tuple(check_ids), note)


def _e(text: object) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def _counts_table(rows: list[tuple[str, Counter]], statuses: list[str], head: str, css: str) -> str:
    cells = "".join(f"<th>{s}</th>" for s in statuses)
    body = "".join(
        f'<tr><td>{_e(name)}</td>{"".join(f"<td data-status={_q(s)}>{counts.get(s, 0)}</td>" for s in statuses)}'
        f"<td>{sum(counts.values())}</td></tr>"
        for name, counts in rows
    )
    return f'<table class="counts {css}"><tr><th>{head}</th>{cells}<th>all</th></tr>{body}</table>'


def _q(s: str) -> str:
    return f'"{_e(s)}"'


def _fleet(checks: list[CheckLine]) -> str:
    by_status = Counter(c.status for c in checks)
    statuses = [s for s in STATUS_ORDER if by_status.get(s)] + sorted(set(by_status) - set(STATUS_ORDER))
    tiles = "".join(
        f'<div class="tile {s.lower()}" data-status={_q(s)} title={_q(STATUS_MEANING.get(s, ""))}>'
        f'<span class="n">{by_status[s]}</span><span class="what">{_e(s)}</span></div>'
        for s in statuses
    )
    failing = [c for c in checks if c.status == FAILS]
    kinds = Counter(c.failure or "?" for c in failing)
    kinds_html = (
        '<table class="counts by-failure"><tr><th>failure</th><th>failing checks</th><th>jobs</th></tr>'
        + "".join(
            f"<tr data-failure={_q(k)}><td>{_e(k)}</td><td>{n}</td>"
            f"<td>{len({c.graph_id for c in failing if (c.failure or '?') == k})}</td></tr>"
            for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        + "</table>"
        if failing
        else "<p>No check fails.</p>"
    )
    by_line: dict[str, Counter] = {}
    for c in checks:
        by_line.setdefault(c.flink_version or "unknown", Counter())[c.status] += 1
    lines = sorted(by_line.items(), key=lambda kv: _line_key(kv[0]))
    jobs = len({c.graph_id for c in failing})
    losing = sum(1 for c in checks if c.losses and c.status != FAILS)
    losses = f" {losing} would restore but lose saved values (listed with each check)." if losing else ""
    return (
        f'<section id="fleet"><div class="tiles">{tiles}</div>'
        f'<p class="meta">{len(checks)} checks of {len({c.graph_id for c in checks})} job versions; '
        f"{jobs} job version{'s' if jobs != 1 else ''} would fail to restore.{losses}</p>"
        f'<div class="fleet-tables"><div><h3>Failing checks by failure kind</h3>{kinds_html}</div>'
        f"<div><h3>Checks by Flink line (the new version's)</h3>"
        f"{_counts_table(lines, statuses, 'Flink', 'by-line')}</div></div></section>"
    )


def _line_key(line: str) -> tuple:
    parts = line.split(".")
    return (0, *map(int, parts)) if all(p.isdigit() for p in parts) else (1, line)


def _fix_html(f: FixLine) -> str:
    if f.proven is True:
        proof = '<span class="proven">proven</span>: the patched job restores'
    elif f.proven is False:
        proof = f'<span class="unproven">not proven</span>{": " + _e(f.note) if f.note else ""}'
    else:
        proof = _e(f.note) or "advice"
    return f'<li><code>{_e(f.text)}</code> <span class="proof">[{proof}]</span></li>'


def _check_row(i: int, c: CheckLine) -> str:
    op = ""
    if c.operator_id:
        op = f"<code>{_e(c.operator_id)}</code>" + (f"<br>{_e(c.operator_name)}" if c.operator_name else "")
    fixes = f'<ul class="fixes">{"".join(_fix_html(f) for f in c.fixes)}</ul>' if c.fixes else ""
    reasons = ""
    if c.status == NOT_DECIDABLE and c.undecidable_reasons:
        shown = list(c.undecidable_reasons)[:3]
        more = len(c.undecidable_reasons) - len(shown)
        reasons = '<ul class="undecidable">' + "".join(f"<li>{_e(r)}</li>" for r in shown)
        reasons += (f"<li>and {more} more</li>" if more else "") + "</ul>"
    job = (
        f'<a class="to-diff" href="#{c.diff}">{_e(c.graph_id)}</a>'
        if c.diff
        else _e(c.graph_id) + (f'<div class="meta">{_e(c.diff_note)}</div>' if c.diff_note else "")
    )
    if c.losses:
        reasons += '<ul class="losses">' + "".join(f"<li>lost: {_e(w)}</li>" for w in c.losses) + "</ul>"
    lost = ""
    if c.lost_operators:
        lost = (
            f'<div class="meta">{c.lost_operators} saved operator(s) lost, '
            f"{c.lost_state_bytes:,} bytes of state</div>"
        )
    return (
        f'<tr class="check {c.status.lower()}" data-status={_q(c.status)} data-check-id={_q(c.check_id)}>'
        f'<td class="rank">{i}</td><td class="status">{_e(c.status)}</td>'
        f'<td class="check-id">{_e(c.check_id)}<div class="meta">savepoint {_e(c.savepoint)}</div></td>'
        f'<td class="job">{job}<div class="meta">Flink {_e(c.flink_version or "?")}</div></td>'
        f'<td class="failure">{_e(c.failure or "")}{lost}</td><td class="operator">{op}</td>'
        f'<td class="message">{_e(c.message or "")}{reasons}</td><td class="fix">{fixes}</td></tr>'
    )


def _sections(diffs: list[DiffSection]) -> str:
    out = []
    for d in diffs:
        checks = ", ".join(_e(c) for c in d.check_ids)
        out.append(
            f'<details class="diff" id="{d.anchor}"><summary>{_e(d.title)}'
            f'<span class="meta"> · checks: {checks}</span></summary>'
            + (f'<p class="meta">{_e(d.note)}</p>' if d.note else "")
            + f'<div class="diff-body"></div><template>{d.body}</template></details>'
        )
    return "".join(out)


_CSS = """
.tiles { display: flex; gap: 10px; margin: 8px 0; }
.tile { background: white; border: 1px solid #d5dde8; border-radius: 6px; padding: 8px 14px; min-width: 7em; }
.tile .n { display: block; font-size: 26px; font-weight: bold; } .tile .what { font-size: 12px; color: #5b6b82; }
.tile.fails { border-color: #c62828; } .tile.fails .n { color: #c62828; } .tile.error .n { color: #8e5b00; }
.tile.not_decidable .n { color: #5b6b82; } .tile.restores .n { color: #2e7d32; }
.fleet-tables { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; }
h2 { font-size: 17px; margin: 18px 0 6px 0; } h3 { font-size: 14px; margin: 6px 0; }
table.counts, table.checks { border-collapse: collapse; font-size: 13px; background: white; }
table.counts td, table.counts th, table.checks td, table.checks th {
  border: 1px solid #d5dde8; padding: 4px 8px; text-align: left; vertical-align: top; }
table.checks td { overflow-wrap: anywhere; } table.checks td.failure { min-width: 14em; max-width: 16em; }
table.checks td.status, table.counts th, table.counts td { white-space: nowrap; overflow-wrap: normal; }
table.checks td.message { min-width: 24em; max-width: 40em; }
table.checks td.check-id, table.checks td.job { min-width: 11em; max-width: 22em; }
tr.check.fails td.status { color: #c62828; font-weight: bold; } tr.check.error td.status { color: #8e5b00; }
tr.check.restores td.status { color: #2e7d32; }
ul.fixes, ul.undecidable, ul.losses { margin: 0; padding-left: 1.2em; } ul.losses { color: #8e5b00; }
.proven { color: #2e7d32; font-weight: bold; }
.unproven { color: #c62828; font-weight: bold; }
details.diff { background: white; border: 1px solid #d5dde8; border-radius: 6px; margin: 8px 0; padding: 6px 10px; }
details.diff > summary { cursor: pointer; font-weight: bold; } details.diff[open] { background: #f6f8fb; }
.left-out { background: #fff4e5; border: 1px solid #f0c36d; padding: 6px 10px; border-radius: 6px; }
.filter { margin: 6px 0; font-size: 13px; }
"""

# Opens a job's section when asked for (a link, the page's address), puts its template's panels
# into the page then (not before: a closed section costs no layout), and sets up their viewer.
_SCRIPT = r"""
(function () {
  "use strict";
  function fill(d) {
    const body = d.querySelector(".diff-body"), t = d.querySelector("template");
    if (!t || body.dataset.filled) return;
    body.dataset.filled = "1";
    body.appendChild(t.content.cloneNode(true));
    body.querySelectorAll("section.side").forEach((s) => window.flinkJobGraphViewer.setUp(s));
  }
  function openAnchor(hash) {
    const d = hash && document.getElementById(decodeURIComponent(hash.slice(1)));
    if (!d || d.tagName !== "DETAILS") return;
    d.open = true;
    fill(d);
    d.scrollIntoView();
  }
  document.querySelectorAll("details.diff").forEach((d) => d.addEventListener("toggle", () => {
    if (d.open) fill(d);
  }));
  document.querySelectorAll("a.to-diff").forEach((a) => a.addEventListener("click", (e) => {
    e.preventDefault(); history.replaceState(null, "", a.getAttribute("href")); openAnchor(a.getAttribute("href")); }));
  window.addEventListener("hashchange", () => openAnchor(location.hash));
  // the checks' filter: by status, or any text of the row (check, job, operator, message, fix)
  const input = document.querySelector(".filter input"), select = document.querySelector(".filter select");
  const shown = document.querySelector(".filter .shown");
  function filter() {
    const q = input.value.trim().toLowerCase(), s = select.value;
    let n = 0;
    document.querySelectorAll("tr.check").forEach((tr) => {
      const ok = (!s || tr.dataset.status === s) && (!q || tr.textContent.toLowerCase().indexOf(q) >= 0);
      tr.hidden = !ok; if (ok) n++;
    });
    shown.textContent = n + " shown";
  }
  if (input) { input.addEventListener("input", filter); select.addEventListener("change", filter); filter(); }
  openAnchor(location.hash);
})();
"""


def report_page(
    title: str,
    note: str,
    checks: list[CheckLine],
    diffs: list[DiffSection],
    left_out: Sequence[str] = (),
    max_rows: int = DEFAULT_MAX_ROWS,
) -> str:
    """The whole page: the fleet, the checks worst first (at most ``max_rows``, the page saying how
    many of which status it does not list), the job sections; ``left_out``: the job sections the
    page does not hold, and why (said above the sections)."""
    ordered = worst_first(checks)
    unlisted = Counter(c.status for c in ordered[max_rows:])
    unlisted_html = (
        f'<p class="left-out">Listed: the {max_rows} worst of {len(ordered)} checks. Not listed (counted above): '
        + ", ".join(f"{n} {_e(s)}" for s, n in sorted(unlisted.items(), key=lambda kv: _rank(kv[0])))
        + ".</p>"
        if unlisted
        else ""
    )
    statuses = [s for s in STATUS_ORDER if any(c.status == s for c in ordered)]
    options = '<option value="">all</option>' + "".join(f"<option>{s}</option>" for s in statuses)
    checks_html = (
        '<div class="filter"><input type="search" placeholder="filter: check, job, operator, message, fix" '
        f'aria-label="filter the checks"> <select aria-label="status">{options}</select> '
        '<span class="shown"></span></div>'
        '<table class="checks"><tr><th>#</th><th>status</th><th>check</th><th>job (its diff)</th><th>failure</th>'
        "<th>operator</th><th>Flink's message</th><th>fix</th></tr>"
        + "".join(_check_row(i, c) for i, c in enumerate(ordered[:max_rows], 1))
        + "</table>"
        + unlisted_html
    )
    left = "".join(f'<p class="left-out">{_e(t)}</p>' for t in left_out)
    sections = (
        '<p class="meta">Each job version pair a check fails on, as <code>render --compare</code> draws it: '
        "the version that took the savepoint beside the new one, the operators the restore fails on marked "
        f"{_e(layout.FAILING_MARK)}(darker), operators whose ID changed highlighted. Opens on a click.</p>"
        + _sections(diffs)
        if diffs
        else "<p>No job drawn.</p>"
        if any(c.status == FAILS for c in ordered)
        else "<p>No job to draw: no check fails.</p>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{layout.CSS}{_CSS}</style></head><body>"
        f'<h1>{_e(title)}</h1><div class="meta">{_e(note)}</div>'
        f"{_fleet(ordered)}<h2>Checks, worst first</h2>{checks_html}"
        f'<h2 id="diffs">Jobs that fail: their JobGraphs</h2>{left}{sections}'
        f"<script>{viewer.SCRIPT}</script><script>{_SCRIPT}</script></body></html>\n"
    )
