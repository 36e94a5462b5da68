"""A JobGraph as Graphviz DOT, and the self-contained HTML page around the laid-out SVG.

Pure text building (no Spark, no I/O): ``pipeline/render/page.py`` reads the tables, runs
Graphviz ``dot`` and writes the file. The drawing follows Flink's web UI: one box per
JobVertex (its chained name and parallelism), left to right in data-flow order, edges
labelled with the ship strategy and the distribution pattern. Unlike the web UI, each box
also lists its chained operators with operator ID and uid, which is what a restore is
decided on, so a version-to-version comparison can point at the operators whose ID changed.
"""

from __future__ import annotations

import html
import json
import textwrap
from dataclasses import dataclass, field

from udfs.render import viewer

HIGHLIGHT = "#ffd7d5"  # an operator whose ID is not in the other version
HIGHLIGHT_BORDER = "#c62828"
FAILING = "#f28b82"  # an operator a restore check fails on (its saved state LOST, or the one Flink names)
FAILING_MARK = "\u2716 "  # before such an operator's name in its box
# Names in a box: a SQL job's chained vertex name runs to thousands of characters, which made
# boxes (and the page) many screens wide. Wrapped at these widths and cut after these many lines
# (the whole name is in the tooltip and in the page's search index).
NAME_WIDTH, NAME_LINES = 80, 3
OPERATOR_NAME_WIDTH, OPERATOR_NAME_LINES = 60, 2


@dataclass(frozen=True)
class Operator:
    node_id: int
    name: str
    operator_id: str
    uid: str | None
    chain_index: int


@dataclass(frozen=True)
class Vertex:
    jobvertex_id: str
    name: str
    parallelism: int
    max_parallelism: int | None
    slot_sharing_group: str | None
    vertex_order: int
    operators: tuple[Operator, ...]
    effective_max_parallelism: int | None = None  # as the web UI shows it (configured or Flink's default)


@dataclass(frozen=True)
class Edge:
    source_jobvertex_id: str
    target_jobvertex_id: str
    ship_strategy: str
    distribution_pattern: str
    input_index: int


@dataclass(frozen=True)
class JobGraph:
    graph_id: str
    flink_version: str | None
    vertices: tuple[Vertex, ...]
    edges: tuple[Edge, ...]


@dataclass
class Changes:
    """Per operator ID of one side: why it is highlighted (empty: not highlighted), and which of
    them a restore check fails on (``failing``: drawn darker and marked, listed first)."""

    reasons: dict[str, list[str]] = field(default_factory=dict)
    failing: set[str] = field(default_factory=set)

    def add(self, operator_id: str, reason: str) -> None:
        self.reasons.setdefault(operator_id, [])
        if reason not in self.reasons[operator_id]:
            self.reasons[operator_id].append(reason)

    def fail(self, operator_id: str, reason: str) -> None:
        """Mark an operator the restore fails on, with why."""
        self.add(operator_id, reason)
        self.failing.add(operator_id)


# What each status of restore_operator_matches means for the saved operator (udfs/restore/rules.py).
MATCH_STATUS_MEANING = {
    "SKIPPED": "its state is dropped (allowNonRestoredState)",
    "LOST": "the restore fails on it",
    "DROPPED_EMPTY": "no state: Flink skips it",
    "MATCHED_NOT_ASSIGNED": "matched, but its vertex took another ID's state",
    "NOT_REACHED": "not looked at: Flink failed before it",
}


def restore_match_reason(check_id: str, savepoint: str, status: str, has_state: bool | None) -> str:
    """One check's outcome for a saved operator, saying which check (and savepoint) it is from:
    one operator can be SKIPPED in a check with allowNonRestoredState and LOST in another."""
    state = "with state" if has_state else "no state"
    meaning = MATCH_STATUS_MEANING.get(status)
    return f"restore check {check_id} (savepoint {savepoint}): {status} ({state})" + (f": {meaning}" if meaning else "")


def restore_fix_reason(check_id: str, reasons: list[str] | None, fix_code: str | None) -> str:
    """One check's fix row for an operator, naming the check."""
    text = "; ".join(reasons or []) + (f" (fix: {fix_code})" if fix_code else "")
    return f"restore check {check_id}: {text}"


def _e(text: object) -> str:
    """Escape for Graphviz HTML-like labels (an XML subset)."""
    return html.escape(str(text), quote=True)


def compare_changes(
    left: JobGraph, right: JobGraph, restore_reasons: dict[str, list[str]] | None = None
) -> tuple[Changes, Changes]:
    """Highlights for both sides: every operator whose ID the other version does not have.

    The counterpart is named where it is unambiguous (same uid, else the same operator name
    once on each side), and restore-check reasons for that ID are attached where given.
    """
    restore_reasons = restore_reasons or {}
    sides = (left, right)
    ops = [[o for v in g.vertices for o in v.operators] for g in sides]
    ids = [{o.operator_id for o in side} for side in ops]
    out = (Changes(), Changes())
    for i in (0, 1):
        other = ops[1 - i]
        by_uid = {o.uid: o for o in other if o.uid}
        names = [o.name for o in other]
        by_name = {o.name: o for o in other if names.count(o.name) == 1}
        own_names = [o.name for o in ops[i]]
        for o in ops[i]:
            if o.operator_id in ids[1 - i]:
                continue
            twin = by_uid.get(o.uid) if o.uid else None
            if twin is None and own_names.count(o.name) == 1:
                twin = by_name.get(o.name)
            if twin is not None:
                out[i].add(
                    o.operator_id, f"ID changed: {sides[1 - i].graph_id} has {twin.name!r} as {twin.operator_id}"
                )
            else:
                out[i].add(o.operator_id, f"no operator with this ID in {sides[1 - i].graph_id}")
            for reason in restore_reasons.get(o.operator_id, []):
                out[i].add(o.operator_id, reason)
    return out


def to_dot(graph: JobGraph, changes: Changes | None = None, rankdir: str = "LR") -> str:
    """DOT for ``dot -Tsvg``: HTML-like labels, one table per vertex, ids kept for the SVG.

    Left to right like Flink's web UI; top to bottom (``rankdir="TB"``) when two versions
    have to fit side by side.
    """
    changes = changes or Changes()
    lines = [
        f"digraph {_quote(graph.graph_id)} {{",
        f"  rankdir={rankdir}; nodesep=0.5; ranksep=0.7; bgcolor=transparent;",
        '  node [shape=plain fontname="Helvetica" fontsize=11];',
        '  edge [fontname="Helvetica" fontsize=10 color="#5b6b82" fontcolor="#33425b" arrowsize=0.8];',
    ]
    for v in sorted(graph.vertices, key=lambda v: v.vertex_order):
        changed = any(o.operator_id in changes.reasons for o in v.operators)
        border = HIGHLIGHT_BORDER if changed else "#3a5a8c"
        rows = [
            f'<TR><TD COLSPAN="3" BGCOLOR="#dce6f5" ALIGN="LEFT" BALIGN="LEFT">'
            f"<B>{_wrapped(v.name, NAME_WIDTH, NAME_LINES)}</B></TD></TR>",
            f'<TR><TD COLSPAN="3" ALIGN="LEFT"><FONT POINT-SIZE="10">Parallelism: {v.parallelism}'
            + _max_parallelism_text(v)
            + (f" · slot sharing group {_e(v.slot_sharing_group)}" if v.slot_sharing_group else "")
            + f" · vertex {_e(v.jobvertex_id)}</FONT></TD></TR>",
        ]
        for o in sorted(v.operators, key=lambda o: (o.chain_index, o.node_id)):
            failing = o.operator_id in changes.failing
            bg = f' BGCOLOR="{FAILING if failing else HIGHLIGHT}"' if o.operator_id in changes.reasons else ""
            uid = f"uid {_e(o.uid)}" if o.uid else "<I>no uid</I>"
            mark = f"<B>{FAILING_MARK}</B>" if failing else ""
            rows.append(
                f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"{bg}>'
                f"{mark}{_wrapped(o.name, OPERATOR_NAME_WIDTH, OPERATOR_NAME_LINES)}</TD>"
                f'<TD ALIGN="LEFT"{bg}><FONT FACE="monospace" POINT-SIZE="10">{_e(o.operator_id)}</FONT></TD>'
                f'<TD ALIGN="LEFT"{bg}>{uid}</TD></TR>'
            )
        label = (
            f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="4" BGCOLOR="white" '
            f'COLOR="{border}">{"".join(rows)}</TABLE>>'
        )
        tooltip = f"{v.name} (parallelism {v.parallelism})"
        lines.append(
            f"  {_quote('v_' + v.jobvertex_id)} [id={_quote('vertex_' + v.jobvertex_id)} "
            f"tooltip={_quote(tooltip)} label={label}];"
        )
    for e in sorted(graph.edges, key=lambda e: (e.target_jobvertex_id, e.input_index)):
        lines.append(
            f"  {_quote('v_' + e.source_jobvertex_id)} -> {_quote('v_' + e.target_jobvertex_id)} "
            f"[label={_quote(e.ship_strategy + chr(10) + e.distribution_pattern)}];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def _max_parallelism_text(v: Vertex) -> str:
    """(max 128) as configured, or (max 128, Flink's default) when nobody configured it."""
    if v.max_parallelism and v.max_parallelism > 0:
        return f" (max {v.max_parallelism})"
    if v.effective_max_parallelism and v.effective_max_parallelism > 0:
        return f" (max {v.effective_max_parallelism}, Flink's default)"
    return ""


def _wrapped(text: str, width: int, max_lines: int) -> str:
    """``text`` as at most ``max_lines`` escaped lines of about ``width`` characters, left-aligned
    line breaks between them; '…' where it was cut. A name that fits is left exactly as it is."""
    if len(text) <= width:
        return _e(text)
    lines = textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1] + "…"
    return '<BR ALIGN="LEFT"/>'.join(_e(line) for line in lines)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def inline_svg(svg: str) -> str:
    """dot's SVG without its XML prolog and DOCTYPE, so it can sit inside HTML."""
    start = svg.find("<svg")
    if start < 0:
        raise ValueError("dot produced no <svg> element")
    return svg[start:]


CSS = (
    """
body { font-family: Helvetica, Arial, sans-serif; margin: 16px; color: #1d2733; background: #f6f8fb; }
h1 { font-size: 20px; margin: 0 0 4px 0; } .meta { color: #5b6b82; font-size: 13px; margin-bottom: 12px; }
.sides { display: flex; gap: 16px; align-items: flex-start; flex-wrap: wrap; }
.side { background: white; border: 1px solid #d5dde8; border-radius: 6px; padding: 10px; overflow: auto; }
.side h2 { font-size: 15px; margin: 0 0 8px 0; } .legend span { background: HIGHLIGHT; padding: 1px 6px; }
table.changes { border-collapse: collapse; font-size: 13px; margin-top: 16px; background: white; }
table.changes td, table.changes th { border: 1px solid #d5dde8; padding: 4px 8px; text-align: left; }
table.changes tr.failing td { background: FAILING_COLOR; } .legend span.failing { background: FAILING_COLOR; }
code { font-size: 12px; }
.sides > .side { flex: 1 1 560px; min-width: 0; }
""".replace("HIGHLIGHT", HIGHLIGHT).replace("FAILING_COLOR", FAILING)
    + viewer.CSS
)


def search_index(graph: JobGraph) -> str:
    """The panel's search index (JSON, safe inside a script element): per vertex its ID and the
    text a search matches: vertex ID and name (whole), every operator's ID, uid and name."""
    rows = []
    for v in sorted(graph.vertices, key=lambda v: v.vertex_order):
        parts = [v.jobvertex_id, v.name]
        for o in v.operators:
            parts += [o.operator_id, o.uid or "", o.name]
        rows.append({"id": v.jobvertex_id, "text": "\n".join(parts)})
    text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_TOOLS = (
    '<div class="tools"><input type="search" placeholder="find: operator ID, uid or name" '
    'aria-label="find a vertex by operator ID, uid or name"><span class="hits"></span>'
    '<button type="button" data-act="in" title="zoom in (+, mouse wheel)">+</button>'
    '<button type="button" data-act="out" title="zoom out (-, mouse wheel)">&#8722;</button>'
    '<button type="button" data-act="fit" title="the whole graph (0)">fit</button>'
    '<button type="button" data-act="one" title="100 %">100 %</button>'
    '<span class="hint">drag to pan</span></div>'
)


def diff_html(sides: list[tuple[JobGraph, str, Changes]]) -> str:
    """One panel per graph (its inline SVG, tools and search index), then, when two versions are
    compared, the highlighted operators in text (those a restore fails on first): the body of a
    ``render`` page, and of each job's section of a fleet report."""
    panels = []
    for graph, svg, _ in sides:
        version = f" · Flink {_e(graph.flink_version)}" if graph.flink_version else ""
        panels.append(
            f'<section class="side" data-graph-id="{_e(graph.graph_id)}"><h2>{_e(graph.graph_id)}'
            f'<span class="meta"> · {len(graph.vertices)} vertices{version}</span></h2>{_TOOLS}'
            f'<div class="view">{inline_svg(svg)}</div>'
            f'<script type="application/json" class="index">{search_index(graph)}</script></section>'
        )
    rows = []
    for graph, _, changes in sides:
        ops = {o.operator_id: (v, o) for v in graph.vertices for o in v.operators}
        for op_id, reasons in sorted(changes.reasons.items(), key=lambda kv: kv[0] not in changes.failing):
            v, o = ops[op_id]
            row_class = ' class="failing"' if op_id in changes.failing else ""
            rows.append(
                f"<tr{row_class}>"
                f"<td>{_e(graph.graph_id)}</td><td>{_e(o.name)}</td><td><code>{_e(op_id)}</code></td>"
                f"<td>{_e(o.uid) if o.uid else '<i>no uid</i>'}</td><td>{_e(v.name)}</td>"
                f"<td>{'<br>'.join(_e(r) for r in reasons)}</td></tr>"
            )
    changes_html = ""
    if len(sides) > 1:
        failing_legend = (
            f'<span class="failing">{FAILING_MARK}darker</span>: operator a restore check fails on. '
            if any(ch.failing for _, _, ch in sides)
            else ""
        )
        changes_html = (
            f'<p class="legend">{failing_legend}<span>highlighted</span>: operator whose ID the other version '
            "does not have (its state would not be restored by ID).</p>"
            + (
                '<table class="changes"><tr><th>graph</th><th>operator</th><th>operator ID</th><th>uid</th>'
                "<th>vertex</th><th>why</th></tr>" + "".join(rows) + "</table>"
                if rows
                else "<p>Every operator ID is in both versions.</p>"
            )
        )
    return f"<div class=\"sides\">{''.join(panels)}</div>{changes_html}"


def page(title: str, sides: list[tuple[JobGraph, str, Changes]], note: str = "") -> str:
    """The HTML page: one panel per graph (its inline SVG), then the highlighted operators in text."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f'<h1>{_e(title)}</h1><div class="meta">{_e(note)}</div>'
        f"{diff_html(sides)}<script>{viewer.SCRIPT}</script></body></html>\n"
    )
