"""A fleet's restore checks as one HTML page (``flink-jobgraph report``), from what ``check-restore``
wrote into ``--output``.

The phases:

1. **checks**: ``restore_checks`` with, per check, its fixes (``restore_fixes``), its lost
   operators and their state (``restore_operator_matches``), its failing state problems
   (``restore_state_problems``), its silent losses (``restore_warnings``), the new version's Flink
   line and the operator's name (``operators``; else the savepoint's own, 2.x formats);
2. **versions**: for each failing check, the job version that took the savepoint: the
   manifest's ``savepoint_graph_id`` as ``restore_checks`` records it; where it is not given (or
   the tables come from a release that did not record it), the other graph holding the most of
   the savepoint's operator IDs (:func:`udfs.render.report.pick_previous_version`), as the page says;
3. **diffs**: each (previous, new) pair drawn as ``render --compare`` draws it (the same
   :func:`pipeline.render.page.load_graphs`, :func:`~pipeline.render.page.restore_notes`,
   :func:`udfs.render.layout.compare_changes`, Graphviz), the operators the restore fails on
   marked; the worst ``max_diffs`` pairs, the page saying what it left out;
4. **page**: :func:`udfs.render.report.report_page`, one file.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from pipeline.options import Summary
from pipeline.progress import Progress
from pipeline.render.page import RenderError, dot_svg, load_graphs, restore_notes
from pipeline.tables import delta_writer as delta_sink
from udfs.render.layout import Changes, JobGraph, compare_changes, to_dot
from udfs.render.report import (
    DEFAULT_MAX_DIFFS,
    DEFAULT_MAX_ROWS,
    FAILS,
    CheckLine,
    DiffSection,
    FixLine,
    diff_section,
    pick_previous_version,
    report_page,
    worst_first,
)


@dataclass
class ReportSummary(Summary):
    checks: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    diffs: int = 0
    diffs_left_out: int = 0
    path: str = ""


class _Tables:
    """The output's tables, each looked up once (None: not there)."""

    def __init__(self, spark: SparkSession, output: str) -> None:
        self.spark, self.output, self._seen = spark, output, {}

    def get(self, name: str) -> DataFrame | None:
        if name not in self._seen:
            path = delta_sink.table_path(self.output, name)
            found = DeltaTable.isDeltaTable(self.spark, path)
            self._seen[name] = self.spark.read.format("delta").load(path) if found else None
        return self._seen[name]


def report(
    spark: SparkSession,
    output: str,
    to: str,
    max_diffs: int = DEFAULT_MAX_DIFFS,
    progress: Progress | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> ReportSummary:
    """Write the fleet report of the checks in ``output`` to ``to``: every check counted, the
    ``max_rows`` worst listed, the ``max_diffs`` worst failing job version pairs drawn."""
    progress = progress or Progress(enabled=False)
    tables = _Tables(spark, output)
    if tables.get("restore_checks") is None:
        raise RenderError(
            f"no restore_checks table in {output}: run `flink-jobgraph check-restore --output {output}` first"
        )
    checks, lost = _check_lines(tables)
    progress.say(f"report: {len(checks)} checks read")
    failing = worst_first(c for c in checks if c.status == FAILS)
    previous = _previous_versions(tables, {c.graph_id: c.flink_version for c in checks})
    diffs, left_out = _diffs(spark, output, failing, previous, lost, max_diffs)
    progress.say(f"report: {len(diffs)} job diffs drawn" + (f", {len(left_out)} left out" if left_out else ""))
    summary = ReportSummary(checks=len(checks), diffs=len(diffs), diffs_left_out=len(left_out))
    for c in checks:
        summary.statuses[c.status] = summary.statuses.get(c.status, 0) + 1
    notes = []
    if left_out:
        notes.append(
            f"{len(left_out)} failing job version pair(s) are not drawn (more than --max-diffs {max_diffs}; "
            f"the worst are drawn): {', '.join(left_out[:20])}{' ...' if len(left_out) > 20 else ''}"
        )
    page = report_page(
        f"Restore checks: {output}", f"from {output} (flink-jobgraph report)", checks, diffs, notes, max_rows
    )
    path = Path(to)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    summary.path = str(path)
    return summary


def _check_lines(tables: _Tables) -> tuple[list[CheckLine], dict[str, dict[str, str]]]:
    """Every check with its fixes, lost operators, problem count, Flink line and operator name (one
    Spark job, and one for the fix rows); and per check its LOST operators with the line saying so."""
    rows = _joined_checks(tables)
    fixes: dict[str, list] = defaultdict(list)
    fix_df = tables.get("restore_fixes")
    if fix_df is not None:
        for r in fix_df.orderBy("check_id", "proof_round", "operator_id", "fix_code").collect():
            fixes[r.check_id].append(r)

    losses = _losses(tables)
    out, lost = [], {}
    for r in rows.collect():
        d = r.asDict()
        check_fixes = fixes.get(r.check_id, [])
        name = d.get("new_name") or d.get("saved_name")
        name = name or next((f.old_name for f in check_fixes if f.operator_id == r.operator_id and f.old_name), None)
        lost_rows = sorted(d.get("lost") or [], key=lambda m: m.operator_id)
        lost[r.check_id] = {
            m.operator_id: f"restore check {r.check_id}: LOST "
            f"({f'{m.state_size:,} bytes of state' if m.has_state else 'no state'}): the restore fails on it"
            for m in lost_rows
        }
        out.append(
            CheckLine(
                check_id=r.check_id,
                savepoint=r.savepoint,
                graph_id=r.graph_id,
                verdict=r.verdict,
                failure=r.failure,
                operator_id=r.operator_id,
                operator_name=name,
                message=r.message,
                decidable=r.decidable,
                undecidable_reasons=tuple(r.undecidable_reasons or ()),
                flink_version=d.get("flink_version"),
                fixes=[_fix_line(f) for f in check_fixes],
                problems=len(check_fixes) + int(d.get("n_state") or 0),
                lost_operators=len(lost_rows),
                lost_state_bytes=sum(m.state_size or 0 for m in lost_rows),
                losses=losses.get(r.check_id, []),
            )
        )
    return out, lost


def _losses(tables: _Tables) -> dict[str, list[str]]:
    """Per check, its ``restore_warnings`` as lines (an output of a release before the table: none)."""
    warnings = tables.get("restore_warnings")
    out: dict[str, list[str]] = defaultdict(list)
    if warnings is not None:
        for w in warnings.orderBy("check_id", "operator_id", "state_name", "field_path").collect():
            out[w.check_id].append(f"state '{w.state_name}' of operator {w.operator_id}: {w.detail}")
    return out


def _joined_checks(tables: _Tables) -> DataFrame:
    """``restore_checks`` with what the page shows of each check from the other tables: the Flink
    line and the operator's name (new, else saved), the failing state problems, the LOST operators."""
    ops, sp_ops = tables.get("operators"), tables.get("savepoint_operators")
    matches, problems = tables.get("restore_operator_matches"), tables.get("restore_state_problems")
    rows = tables.get("restore_checks")
    if ops is not None:
        rows = rows.join(ops.select("graph_id", "flink_version").distinct(), "graph_id", "left")
        by_id = ops.select("graph_id", "operator_id", "name").unionByName(
            ops.select("graph_id", F.col("user_operator_id").alias("operator_id"), "name")
        )
        names = by_id.groupBy("graph_id", "operator_id").agg(F.min("name").alias("new_name"))
        rows = rows.join(names, ["graph_id", "operator_id"], "left")
    if sp_ops is not None:
        saved = sp_ops.where(F.col("operator_name").isNotNull()).groupBy("savepoint", "operator_id")
        rows = rows.join(saved.agg(F.min("operator_name").alias("saved_name")), ["savepoint", "operator_id"], "left")
    if problems is not None:
        failing = problems.where(F.col("verdict") == FAILS).groupBy("check_id").agg(F.count("*").alias("n_state"))
        rows = rows.join(failing, "check_id", "left")
    if matches is not None:
        lost_ops = (
            matches.where(F.col("status") == "LOST")
            .groupBy("check_id")
            .agg(F.collect_list(F.struct("operator_id", "has_state", "state_size")).alias("lost"))
        )
        rows = rows.join(lost_ops, "check_id", "left")
    return rows


def _fix_line(f: Row) -> FixLine:
    """A fix row as the report lists it: the code on the operator it goes on, and its proof."""
    on = f.counterpart_name or f.old_name
    about = f" on {on!r}" if on and f.advice_code is None else ""
    if f.advice_code is not None:  # state advice: what it rests on, no recomputation proves it
        basis = f.advice_basis or "no basis recorded"
        need = "; needs a real restore to be sure" if f.needs_real_restore else ""
        return FixLine(f.fix_code or f.advice_code, None, f"state advice ({basis}{need})")
    if f.fix_code is None:
        return FixLine("no fix: " + ", ".join(f.reasons or []), None, "the state's origin cannot be named")
    if f.verified:
        return FixLine(f.fix_code + about, True)
    why = " ".join(v for v in (f.verified_verdict, f.verified_failure) if v)
    return FixLine(f.fix_code + about, False, f"the patched job still {why}" if why else "")


def _previous_versions(tables: _Tables, lines: dict[str, str | None]) -> dict[str, tuple[str, int, int, bool]]:
    """Per failing check: (the graph that took its savepoint, its operator IDs among the
    savepoint's, the savepoint's operator count, whether the manifest said so rather than the
    operator IDs suggest it). ``lines``: each new graph's Flink line."""
    checks, sp_ops, ops = (tables.get(t) for t in ("restore_checks", "savepoint_operators", "operators"))
    if sp_ops is None or ops is None:
        return {}
    failing = checks.where(F.col("verdict") == FAILS)
    recorded = (
        failing.where(F.col("savepoint_graph_id").isNotNull()).select("check_id", "savepoint_graph_id")
        if "savepoint_graph_id" in checks.columns
        else None
    )
    failing = failing.select("check_id", "savepoint", "graph_id")
    saved = sp_ops.select("savepoint", "operator_id").distinct()
    ids = (
        ops.select(F.col("graph_id").alias("candidate"), "operator_id", "flink_version")
        .unionByName(
            ops.where(F.col("user_operator_id").isNotNull()).select(
                F.col("graph_id").alias("candidate"), F.col("user_operator_id").alias("operator_id"), "flink_version"
            )
        )
        .distinct()
    )
    counted = (
        failing.join(saved, "savepoint")
        .join(ids, "operator_id")
        .where(F.col("candidate") != F.col("graph_id"))
        .groupBy("check_id", "savepoint", "graph_id", "candidate", "flink_version")
        .agg(F.countDistinct("operator_id").alias("matched"))
        .join(saved.groupBy("savepoint").agg(F.count("*").alias("total")), "savepoint")
        .collect()
    )
    candidates: dict[tuple[str, str], list] = defaultdict(list)
    totals = {}
    for r in counted:
        candidates[(r.check_id, r.graph_id)].append((r.candidate, r.flink_version, r.matched))
        totals[r.check_id] = int(r.total)
    # the manifest's savepoint_graph_id, where the check recorded one and its graph is in the output
    given = {r.check_id: r.savepoint_graph_id for r in recorded.collect()} if recorded is not None else {}
    present = {r[0] for r in ops.where(F.col("graph_id").isin(list(set(given.values())))).select("graph_id")
               .distinct().collect()} if given else set()  # fmt: skip
    given = {c: g for c, g in given.items() if g in present}
    out: dict[str, tuple[str, int, int, bool]] = {}
    for (check_id, graph_id), cands in candidates.items():
        picked = pick_previous_version(graph_id, lines.get(graph_id), cands)
        if picked:
            out[check_id] = (picked[0], picked[1], totals[check_id], False)
    for check_id, old in given.items():
        matched = next((m for (c, _), cands in candidates.items() if c == check_id for g, _, m in cands if g == old), 0)
        out[check_id] = (old, matched, totals.get(check_id, 0), True)
    return out


def _diffs(
    spark: SparkSession,
    output: str,
    failing: list[CheckLine],
    previous: dict[str, tuple[str, int, int, bool]],
    lost: dict[str, dict[str, str]],
    max_diffs: int,
) -> tuple[list[DiffSection], list[str]]:
    """One section per (previous, new) pair of the failing checks, worst first, at most
    ``max_diffs``; the checks get their section's anchor. Returns the sections and the pairs left out."""
    pairs: dict[tuple[str | None, str], list[CheckLine]] = {}
    for c in failing:  # worst first, so the pairs are too
        prev = previous.get(c.check_id)
        pairs.setdefault((prev[0] if prev else None, c.graph_id), []).append(c)
    drawn = list(pairs.items())[:max_diffs]
    left_out = [f"{old or '?'} -> {new}" for (old, new), _ in list(pairs.items())[max_diffs:]]
    for (_, _), cs in list(pairs.items())[max_diffs:]:
        for c in cs:
            c.diff_note = "not drawn: beyond --max-diffs"
    ids = sorted({g for (old, new), _ in drawn for g in (old, new) if g})
    if not ids:
        return [], left_out
    graphs = load_graphs(spark, output, ids)
    notes = restore_notes(spark, output, ids)
    sections = []
    for i, ((old, new), cs) in enumerate(drawn, 1):
        anchor = f"diff-{i}"
        for c in cs:
            c.diff = anchor
        failing_ops = {op: why for c in cs for op, why in lost.get(c.check_id, {}).items()}
        for c in cs:
            if c.operator_id:
                failing_ops.setdefault(c.operator_id, f"restore check {c.check_id}: {c.failure}: Flink names it")
        pair_notes = notes.for_graphs([g for g in (old, new) if g])
        if old is None:
            sides = [(graphs[new], _mark_failing(graphs[new], Changes(), failing_ops, pair_notes))]
            title = f"{new} (the version that took the savepoint is not among the graphs)"
            note = (
                "No graph in this output holds the savepoint's operator IDs, so the new version is drawn alone; "
                "the operators the restore fails on: " + ", ".join(sorted(failing_ops))
            )
        else:
            left, right = compare_changes(graphs[old], graphs[new], pair_notes)
            sides = [
                (graphs[old], _mark_failing(graphs[old], left, failing_ops, pair_notes)),
                (graphs[new], _mark_failing(graphs[new], right, failing_ops, pair_notes)),
            ]
            title = f"{old} vs {new}"
            _, matched, total, recorded = previous[cs[0].check_id]
            note = (
                f"{old}: the version that took the savepoint, as the manifest's savepoint_graph_id says "
                f"({matched} of the savepoint's {total} operator IDs in it)."
                if recorded
                else f"{old}: the graph holding the most of the savepoint's operator IDs ({matched} of {total}), "
                "taken as the version that took it (the manifest did not say)."
            )
        drawn_sides = [(g, dot_svg(to_dot(g, ch, rankdir="TB" if len(sides) > 1 else "LR")), ch) for g, ch in sides]
        sections.append(diff_section(anchor, title, drawn_sides, [c.check_id for c in cs], note))
    return sections, left_out


def _mark_failing(graph: JobGraph, changes: Changes, failing: dict[str, str], notes: dict[str, list[str]]) -> Changes:
    """Mark the operators of ``graph`` the restore fails on; one compare_changes did not list (its
    ID is in both versions, e.g. a changed max parallelism) gets check-restore's notes about it."""
    held = {o.operator_id for v in graph.vertices for o in v.operators}
    for op, why in failing.items():
        if op not in held:
            continue
        if op in changes.reasons:
            changes.failing.add(op)
        else:
            for text in notes.get(op, [why]):
                changes.fail(op, text)
    return changes
