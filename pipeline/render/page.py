"""One job's JobGraph (or two versions side by side) as an HTML page (``flink-jobgraph render``).

Reads ``operators``, ``job_vertices`` and ``job_edges`` for the graph(s) from ``--output``,
lays each graph out with Graphviz ``dot`` (Debian ``graphviz``; the Makefile installs it) and
writes one self-contained HTML file (inline SVG, inline CSS, no script, nothing fetched), so
it opens from disk or as a CI artifact. With ``--compare``, operators whose ID the other
version lacks are highlighted, with the restore check's reasons from
``restore_operator_matches`` / ``restore_fixes`` when ``check-restore`` wrote them there.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.tables import delta_writer as delta_sink
from udfs.render.layout import (
    Changes,
    Edge,
    JobGraph,
    Operator,
    Vertex,
    compare_changes,
    page,
    restore_fix_reason,
    restore_match_reason,
    to_dot,
)


class RenderError(ValueError):
    """The page cannot be drawn (unknown graph, no Graphviz)."""


def _read(spark: SparkSession, output: str, table: str, graph_ids: list[str]):
    path = delta_sink.table_path(output, table)
    if not DeltaTable.isDeltaTable(spark, path):
        raise RenderError(f"{path} is not a Delta table: run `flink-jobgraph compute --output {output}` first")
    return spark.read.format("delta").load(path).where(F.col("graph_id").isin(graph_ids))


def load_graphs(spark: SparkSession, output: str, graph_ids: list[str]) -> dict[str, JobGraph]:
    """The graphs' vertices, operators and edges, collected (one job is small)."""
    ops = _read(spark, output, "operators", graph_ids).collect()
    vertices = _read(spark, output, "job_vertices", graph_ids).collect()
    edges = _read(spark, output, "job_edges", graph_ids).collect()
    out = {}
    for gid in graph_ids:
        g_vertices = [v for v in vertices if v.graph_id == gid]
        if not g_vertices:
            raise RenderError(_missing(spark, output, gid))
        by_vertex: dict[str, list[Operator]] = {}
        versions = set()
        for o in ops:
            if o.graph_id == gid:
                versions.add(o.flink_version)
                by_vertex.setdefault(o.jobvertex_id, []).append(
                    Operator(o.node_id, o.name, o.operator_id, o.uid, o.chain_index if o.chain_index is not None else 0)
                )
        out[gid] = JobGraph(
            graph_id=gid,
            flink_version=next(iter(versions)) if len(versions) == 1 else None,
            vertices=tuple(
                Vertex(
                    v.jobvertex_id,
                    v.name,
                    v.parallelism,
                    v.max_parallelism,
                    v.slot_sharing_group,
                    v.vertex_order,
                    tuple(by_vertex.get(v.jobvertex_id, [])),
                    v.asDict().get("effective_max_parallelism"),
                )
                for v in g_vertices
            ),
            edges=tuple(
                Edge(
                    e.source_jobvertex_id, e.target_jobvertex_id, e.ship_strategy, e.distribution_pattern, e.input_index
                )
                for e in edges
                if e.graph_id == gid
            ),
        )
    return out


def _missing(spark: SparkSession, output: str, graph_id: str) -> str:
    errors_path = delta_sink.table_path(output, "graph_errors")
    if DeltaTable.isDeltaTable(spark, errors_path):
        err = spark.read.format("delta").load(errors_path).where(F.col("graph_id") == graph_id).first()
        if err is not None:
            return f"graph {graph_id!r} was rejected ({err.error_code}): {err.message}"
    return f"no graph {graph_id!r} in {output}/job_vertices"


@dataclass(frozen=True)
class RestoreNotes:
    """What ``check-restore`` said about operators, for checks against some graphs: one
    ``(graph_id, operator_id, text)`` per note, in the order a page lists them (the checks'
    operator outcomes by check, operator and status; then their fixes)."""

    notes: tuple[tuple[str, str, str], ...] = ()

    def for_graphs(self, graph_ids: list[str]) -> dict[str, list[str]]:
        """Per operator ID, the notes of the checks against ``graph_ids``."""
        wanted = set(graph_ids)
        reasons: dict[str, list[str]] = {}
        for gid, op_id, text in self.notes:
            if gid in wanted:
                reasons.setdefault(op_id, []).append(text)
        return reasons


def restore_notes(spark: SparkSession, output: str, graph_ids: list[str]) -> RestoreNotes:
    """The notes for checks against these graphs, read once (a fleet report reads them for all
    its jobs, then takes each job's share with :meth:`RestoreNotes.for_graphs`).

    Empty when no restore check ran into this output (the page then just highlights).
    """
    matched: list[tuple[str, str, str]] = []
    fixed: list[tuple[str, str, str]] = []
    matches = delta_sink.table_path(output, "restore_operator_matches")
    if DeltaTable.isDeltaTable(spark, matches):
        rows = (
            spark.read.format("delta")
            .load(matches)
            .where(F.col("graph_id").isin(graph_ids) & (F.col("status") != "MATCHED"))
            .select("check_id", "savepoint", "graph_id", "operator_id", "status", "has_state")
            .distinct()
            .orderBy("check_id", "operator_id", "status")
            .collect()
        )
        for r in rows:
            matched.append(
                (r.graph_id, r.operator_id, restore_match_reason(r.check_id, r.savepoint, r.status, r.has_state))
            )
    fixes = delta_sink.table_path(output, "restore_fixes")
    if DeltaTable.isDeltaTable(spark, fixes):
        rows = (
            spark.read.format("delta")
            .load(fixes)
            .where(F.col("graph_id").isin(graph_ids))
            .select("check_id", "graph_id", "operator_id", "counterpart_operator_id", "reasons", "fix_code")
            .orderBy("check_id", "operator_id", "fix_code")
            .collect()
        )
        for r in rows:
            text = restore_fix_reason(r.check_id, r.reasons, r.fix_code)
            for op_id in sorted({r.operator_id, r.counterpart_operator_id} - {None}):
                fixed.append((r.graph_id, op_id, text))
    return RestoreNotes(tuple(matched + fixed))


def restore_reasons(spark: SparkSession, output: str, graph_ids: list[str]) -> dict[str, list[str]]:
    """Per operator ID, what ``check-restore`` said about it for checks against these graphs,
    each line naming its check and savepoint (one operator can be SKIPPED in one check and LOST
    in another)."""
    return restore_notes(spark, output, graph_ids).for_graphs(graph_ids)


def dot_svg(dot_source: str) -> str:
    """Graphviz lays the graph out; its SVG is inlined as is."""
    exe = shutil.which("dot")
    if exe is None:
        raise RenderError("Graphviz `dot` not found: `apt-get install graphviz` (make install does)")
    proc = subprocess.run([exe, "-Tsvg"], input=dot_source, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RenderError(f"dot failed: {proc.stderr.strip()[:500]}")
    return proc.stdout


def render(spark: SparkSession, output: str, graph_id: str, to: str, compare: str | None = None) -> Path:
    """Write the page for ``graph_id`` (and ``compare`` beside it) to ``to``; return its path."""
    ids = [graph_id] + ([compare] if compare else [])
    graphs = load_graphs(spark, output, ids)
    if compare:
        left, right = compare_changes(graphs[graph_id], graphs[compare], restore_reasons(spark, output, ids))
        sides = [(graphs[graph_id], left), (graphs[compare], right)]
        title = f"{graph_id} vs {compare}"
    else:
        sides = [(graphs[graph_id], Changes())]
        title = graph_id
    html_text = page(
        title,
        [(g, dot_svg(to_dot(g, ch, rankdir="TB" if compare else "LR")), ch) for g, ch in sides],
        note=f"JobGraph as Flink builds it, from {output} (flink-jobgraph render)",
    )
    path = Path(to)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_text, encoding="utf-8")
    return path
