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
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.compute import read as read_spec
from pipeline.settings import Settings
from pipeline.tables.catalog import COMMAND_TABLES
from pipeline.tables.columns import JOB_EDGE_COLUMNS, OPERATOR_COLUMNS, VERTEX_COLUMNS
from pipeline.tables.delta_writer import latest_commit, published_versions, read_published, table_path
from udfs.spec.contract import ERROR_COLUMNS
from udfs.spec.fingerprint import REJECTED_FROM

_COLUMNS = {
    "operators": OPERATOR_COLUMNS,
    "job_vertices": VERTEX_COLUMNS,
    "job_edges": JOB_EDGE_COLUMNS,
    "graph_errors": ERROR_COLUMNS,
}
TABLE = "graph_fingerprints"  # the last of catalog.COMMAND_TABLES["compute"]
SCHEMA = "graph_id string, fingerprint string, rules_version string, line_key string, stream_nodes int"
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
    ``graph_errors`` row names the file it came from, so its known fingerprint is
    ``<fingerprint>`` + :data:`REJECTED_FROM` + ``<file>``: it is skipped only when read from
    that same file again (:class:`pipeline.compute.stage.Skip`).

    Those commits are a run's that was killed before it published (or one still running): the
    graphs it committed have rows no published fingerprint describes. Computed again, on the
    killed run's input they make this run's graph set the killed run's, so the re-run covers
    it and the published view moves past it (pipeline/tables/delta_writer.published_versions)."""
    if not DeltaTable.isDeltaTable(spark, table_path(output, TABLE)):
        return Known()  # an output no run has written yet, or one an earlier release wrote
    if _written_by_an_earlier_release(spark, output, say):
        return Known()
    touched = touched_keys(spark, output, COMMAND_TABLES["compute"], "graph_id")
    tables = read_published(spark, output, [TABLE, "graph_errors"])
    table = tables[TABLE]
    for column, dtype in (("line_key", "string"), ("stream_nodes", "int")):  # a table an earlier release wrote
        if column not in table.columns:
            table = table.withColumn(column, F.lit(None).cast(dtype))
    # Two plain reads, as Arrow, merged here: a join of the two (and Row objects for 100k
    # graphs) cost a shuffle and its planning on every run.
    rows = table.select("graph_id", "fingerprint", "line_key", "stream_nodes").toPandas()
    rejected_from: dict[str, str] = {}
    if "graph_errors" in tables:  # a rejected graph matches only from the same file: see the docstring
        errors = tables["graph_errors"].select("graph_id", "source_file").toPandas()
        rejected_from = dict(zip(errors["graph_id"], errors["source_file"], strict=True))
    skip_ids: set[str] = set()
    if touched is not None:
        skip_ids = {r[0] for r in touched.collect()}
        if say:
            say(f"the output holds commits of a run that did not publish (killed, or still running): "
                f"its {len(skip_ids)} graphs are computed again")  # fmt: skip
    return _known(rows, rejected_from, skip_ids)


def _written_by_an_earlier_release(spark: SparkSession, output: str, say: Callable[[str], None] | None) -> bool:
    """A table an earlier release wrote lacks columns this one writes: every graph is computed again."""
    for name, columns in _COLUMNS.items():
        path = table_path(output, name)
        if DeltaTable.isDeltaTable(spark, path):
            missing = [c for c in columns if c not in spark.read.format("delta").load(path).columns]
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
        if source_file is None:
            known.graphs[gid] = fp
            if key is not None:  # a rejected graph's line is read again, always
                known.lines[key] = (gid, fp, None if n is None else int(n))
        else:
            known.graphs[gid] = f"{fp}{REJECTED_FROM}{source_file}"
    return known


def touched_keys(spark: SparkSession, output: str, names: Sequence[str], key: str) -> DataFrame | None:
    """The ``key`` values (graph or check ids) whose rows, in any of the tables ``names``, differ
    between the latest version and the published view (:func:`published_versions`): what
    commits of a run that did not publish (killed, or still running) wrote; None when there are
    none. Their published fingerprints describe rows the tables no longer hold."""
    cut = published_versions(spark, output, names)
    touched = None
    for name in names:
        path = table_path(output, name)
        newest = latest_commit(spark, path)
        if newest is None:  # no table there
            continue
        latest = newest[0]
        if cut.get(name) is not None and latest == cut[name]:
            continue
        now = spark.read.format("delta").load(path)
        then = (
            now.limit(0)
            if cut.get(name) is None
            else spark.read.format("delta").option("versionAsOf", cut[name]).load(path)
        )
        ids = now.exceptAll(then).unionByName(then.exceptAll(now)).select(key)
        touched = ids if touched is None else touched.unionByName(ids)
    return None if touched is None else touched.distinct().localCheckpoint(eager=True)


def rows(fingerprint_rows: DataFrame, version: str) -> DataFrame:
    """The ``graph_fingerprints`` rows of the graphs a run computed (the stage's ``fingerprint``
    rows less the skipped ones, whose rows the output holds already), and of those it skipped
    but read from other bytes than their row's key (``rekeyed``: :class:`pipeline.compute.stage.Skip`)."""
    return fingerprint_rows.where(~F.col("skipped") | F.col("rekeyed")).select(
        "graph_id", "fingerprint", F.lit(version).alias("rules_version"), "line_key",
        F.col("node_count").alias("stream_nodes"),
    )  # fmt: skip
