"""The version of the rules a graph's tables were computed with, and the fingerprints a run
finds in its output (``graph_fingerprints``).

The rules version is a digest of everything that computes the tables besides the spec and its
Flink line's profile (:mod:`udfs.spec.fingerprint` adds those): the code of the per-graph steps
and of the compute run (``udfs/spec``, ``udfs/flink``, ``udfs/compute``, ``udfs/errors.py``,
``pipeline/compute``, the tables' columns, the package version) and the settings that change
results (the input limits). Nothing is bumped by hand: any change to that code, a new release,
gives a new version, so its run recomputes every graph (and fills columns a release added).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.compute import read as read_spec
from pipeline.session import local_frame
from pipeline.settings import Settings
from pipeline.tables import delta_log
from pipeline.tables.catalog import COMMAND_TABLES
from pipeline.tables.columns import JOB_EDGE_COLUMNS, OPERATOR_COLUMNS, VERTEX_COLUMNS
from pipeline.tables.delta_writer import published_versions, table_path
from udfs.spec.contract import ERROR_COLUMNS
from udfs.spec.fingerprint import REJECTED_FROM

_COLUMNS = {
    "operators": OPERATOR_COLUMNS,
    "job_vertices": VERTEX_COLUMNS,
    "job_edges": JOB_EDGE_COLUMNS,
    "graph_errors": ERROR_COLUMNS,
}
TABLE = "graph_fingerprints"  # the last of catalog.COMMAND_TABLES["compute"]
# rejected_from: the file a rejected graph was read from (its graph_errors row's), null for an
# accepted one: what a run needs of graph_errors, kept here so that a nightly run reads one table
SCHEMA = (
    "graph_id string, fingerprint string, rules_version string, line_key string, stream_nodes int, "
    "rejected_from string"
)
_ROOT = Path(__file__).resolve().parents[2]
_CODE = ("udfs/spec", "udfs/flink", "udfs/compute", "udfs/errors.py", "pipeline/compute",
         "pipeline/tables/columns.py", "pipeline/version.py")  # fmt: skip


def rules_version(settings: Settings) -> str:
    h = hashlib.sha256()
    for entry in _CODE:
        path = _ROOT / entry
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(f.relative_to(_ROOT).as_posix().encode())
            h.update(f.read_bytes())
    limits = settings.limits
    h.update(json.dumps([limits.max_line_bytes, limits.max_graph_elements, settings.testing.raise_in_graph]).encode())
    return h.hexdigest()[:16]


@dataclass
class Known:
    """What the output holds for a run to skip (:func:`known_graphs`)."""

    graphs: dict[str, str] = field(default_factory=dict)  # graph_id -> fingerprint
    # line_key -> (graph_id, fingerprint, stream nodes) of the lines accepted graphs came from
    lines: dict[str, tuple[str, str, int | None]] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # graph_id -> line_key
    rejected: dict[str, str] = field(default_factory=dict)  # graph_id -> the file a rejected graph came from


def known_fingerprints(spark: SparkSession, output: str, say: Callable[[str], None] | None = None) -> dict[str, str]:
    """graph_id -> fingerprint of every graph the output holds (:func:`known_graphs`)."""
    return known_graphs(spark, output, say).graphs


def known_graphs(spark: SparkSession, output: str, say: Callable[[str], None] | None = None) -> Known:
    """What a run can skip: graph_id -> fingerprint of every graph the output holds; line_key
    -> (graph_id, fingerprint, stream nodes) of the lines its accepted graphs were computed
    from (a key salted with other rules matches no line of this run:
    pipeline.compute.read.KnownLines); graph_id -> the key its row holds.

    The fingerprints are the graphs' as published (a fingerprint
    computed under other rules or another profile differs, so it matches no graph of this run),
    less the graphs whose rows commits past the published view changed. A rejected graph's
    row names the file it came from (``rejected_from``, its ``graph_errors`` row's), so its
    known fingerprint is ``<fingerprint>`` + :data:`REJECTED_FROM` + ``<file>``: it is skipped
    only when read from that same file again (:class:`pipeline.compute.stage.Skip`).

    Those commits are a run's that was killed before it published (or one still running): the
    graphs it committed have rows no published fingerprint describes. Computed again, on the
    killed run's input they make this run's graph set the killed run's, so the re-run covers
    it and the published view moves past it (pipeline/tables/published.py).

    Read once, from the Delta logs and ``graph_fingerprints`` alone: the tables' columns and
    versions from their snapshots' metadata, the published view from the log
    (:func:`pipeline.tables.published.published_versions`), then one read of that table at its
    published version. ``graph_errors`` is read only for a table an earlier release wrote."""
    if delta_log.table_state(spark, table_path(output, TABLE)) is None:
        return Known()  # an output no run has written yet, or one an earlier release wrote
    if _written_by_an_earlier_release(spark, output, say):
        return Known()
    names = COMMAND_TABLES["compute"]
    cut = published_versions(spark, output, names)
    if cut.get(TABLE) is None:
        return Known()  # no published run wrote fingerprints yet
    touched = touched_keys(spark, output, names, "graph_id", cut)
    table = delta_log.read_at(spark, table_path(output, TABLE), cut[TABLE])
    earlier = [c for c in ("line_key", "stream_nodes", "rejected_from") if c not in table.columns]
    for column in earlier:  # a table an earlier release wrote
        table = table.withColumn(column, F.lit(None).cast("int" if column == "stream_nodes" else "string"))
    # One plain read, as Arrow: a join with graph_errors (and Row objects for 100k graphs) cost
    # a shuffle and its planning on every run.
    rows = table.select("graph_id", "fingerprint", "line_key", "stream_nodes", "rejected_from").toPandas()
    if "rejected_from" in earlier:
        rejected_from = _rejected_from_errors(spark, output, cut)
    else:
        rejected_from = {g: f for g, f in zip(rows["graph_id"], rows["rejected_from"], strict=True) if f is not None}
    skip_ids: set[str] = set()
    if touched is not None:
        skip_ids = {r[0] for r in touched.collect()}
        if say:
            say(f"the output holds commits of a run that did not publish (killed, or still running): "
                f"its {len(skip_ids)} graphs are computed again")  # fmt: skip
    return _known(rows, rejected_from, skip_ids)


def _rejected_from_errors(spark: SparkSession, output: str, cut: dict[str, int | None]) -> dict[str, str]:
    """graph_id -> source_file of the published ``graph_errors`` rows: where the rejected graphs
    of a ``graph_fingerprints`` an earlier release wrote (without ``rejected_from``) came from."""
    if cut.get("graph_errors") is None:
        return {}
    errors = delta_log.read_at(spark, table_path(output, "graph_errors"), cut["graph_errors"])
    frame = errors.select("graph_id", "source_file").toPandas()
    return dict(zip(frame["graph_id"], frame["source_file"], strict=True))


def _written_by_an_earlier_release(spark: SparkSession, output: str, say: Callable[[str], None] | None) -> bool:
    """A table an earlier release wrote lacks columns this one writes: every graph is computed
    again. The columns come from each table's Delta log (its snapshot's metadata): loading the
    table through Spark to ask made Delta reconstruct its state first."""
    for name, columns in _COLUMNS.items():
        state = delta_log.table_state(spark, table_path(output, name))
        missing = [c for c in columns if state is not None and c not in state.columns]
        if missing:
            if say:
                say(f"full run: {name} lacks the columns this release writes ({', '.join(missing)})")
            return True
    return False


def _known(rows: pd.DataFrame, rejected_from: dict[str, str], skip_ids: set[str]) -> Known:
    """The published fingerprint rows as :class:`Known`, less the graphs ``skip_ids`` names."""
    known = Known()
    nodes = read_spec.nulls_as_none(rows["stream_nodes"])
    for gid, fp, key, n in zip(rows["graph_id"], rows["fingerprint"], rows["line_key"], nodes, strict=True):
        if gid in skip_ids:
            continue
        if key is not None:
            known.keys[gid] = key
        source_file = rejected_from.get(gid)
        if source_file is not None:
            known.rejected[gid] = source_file
        if source_file is None:
            known.graphs[gid] = fp
            if key is not None:  # a rejected graph's line is read again, always
                known.lines[key] = (gid, fp, None if n is None else int(n))
        else:
            known.graphs[gid] = f"{fp}{REJECTED_FROM}{source_file}"
    return known


def touched_keys(
    spark: SparkSession, output: str, names: Sequence[str], key: str, cut: dict[str, int | None] | None = None
) -> DataFrame | None:
    """The ``key`` values (graph or check ids) whose rows, in any of the tables ``names``, differ
    between the latest version and the published view ``cut`` (:func:`published_versions`, read
    when not given): what commits of a run that did not publish (killed, or still running)
    wrote; None when there are none. Their published fingerprints describe rows the tables no
    longer hold. A table whose newest version is the published one is not read."""
    cut = published_versions(spark, output, names) if cut is None else cut
    touched = None
    for name in names:
        path = table_path(output, name)
        state = delta_log.table_state(spark, path)
        if state is None or (cut.get(name) is not None and state.version == cut[name]):
            continue
        now = delta_log.read_at(spark, path, state.version)
        then = now.limit(0) if cut.get(name) is None else delta_log.read_at(spark, path, cut[name])
        ids = now.exceptAll(then).unionByName(then.exceptAll(now)).select(key)
        touched = ids if touched is None else touched.unionByName(ids)
    return None if touched is None else touched.distinct().localCheckpoint(eager=True)


def rows(
    spark: SparkSession, fingerprint_rows: DataFrame, version: str, errors: DataFrame, held: Known | None = None
) -> DataFrame:
    """The ``graph_fingerprints`` rows of the graphs a run computed (the stage's ``fingerprint``
    rows less the skipped ones, whose rows the output holds already), and of those it skipped
    but read from other bytes than their row's key (``rekeyed``: :class:`pipeline.compute.stage.Skip`).
    ``rejected_from``: the file of the graph's row in this run's ``errors``; a rekeyed graph
    keeps its row's (``held``: what the output held)."""
    now = errors.select("graph_id", F.col("source_file").alias("now_from")).dropDuplicates(["graph_id"])
    kept = local_frame(spark, sorted((held.rejected if held else {}).items()), "graph_id string, held_from string")
    written = fingerprint_rows.where(~F.col("skipped") | F.col("rekeyed"))
    return (
        written.join(F.broadcast(now), "graph_id", "left")
        .join(F.broadcast(kept), "graph_id", "left")
        .select(
            "graph_id", "fingerprint", F.lit(version).alias("rules_version"), "line_key",
            F.col("node_count").alias("stream_nodes"),
            F.when(F.col("skipped"), F.col("held_from")).otherwise(F.col("now_from")).alias("rejected_from"),
        )
    )  # fmt: skip
