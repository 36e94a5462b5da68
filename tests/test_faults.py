"""Faults on the Delta writes, with real Delta and real processes: a `kill -9` of the driver
during the writes, two runs at once on disjoint graphs, a re-run with one graph changed, and a
run that dies between its tables. scripts/fault_trials.py runs the long version (20 kills)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from collections import Counter

import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from pipeline.compute.run import Progress, compute
from pipeline.tables import delta_writer as delta_sink

from .conftest import ROOT

_spec = importlib.util.spec_from_file_location("fault_trials", ROOT / "scripts" / "fault_trials.py")
ft = importlib.util.module_from_spec(_spec)
sys.modules["fault_trials"] = ft  # dataclasses look their module up there
_spec.loader.exec_module(ft)

TABLES = ft.TABLES
QUIET = Progress(enabled=False)


def _last_commit(spark, path: str):
    return DeltaTable.forPath(spark, path).history(1).first()


def test_rerun_with_one_graph_changed_rewrites_only_that_graph(spark, settings, tmp_path):
    inp = tmp_path / "in"
    shutil.copytree(ROOT / "samples", inp)
    out = str(tmp_path / "out")
    compute(spark, str(inp), out, settings, QUIET)
    before = {t: _last_commit(spark, f"{out}/{t}")["version"] for t in TABLES}
    compute(spark, str(inp), out, settings, QUIET)  # same input: no commit at all
    assert {t: _last_commit(spark, f"{out}/{t}")["version"] for t in TABLES} == before

    lines = (inp / "fleet-sample.jsonl").read_text().splitlines()
    g = json.loads(lines[0])
    g["nodes"][-1]["name"] += " (renamed)"
    (inp / "fleet-sample.jsonl").write_text("\n".join([json.dumps(g), *lines[1:]]) + "\n")
    compute(spark, str(inp), out, settings, QUIET)
    ops = spark.read.format("delta").load(f"{out}/operators")
    n_rows = ops.where(F.col("graph_id") == g["graph_id"]).count()
    commit = _last_commit(spark, f"{out}/operators")
    m = {k: int(v) for k, v in commit["operationMetrics"].items()}
    assert commit["version"] == before["operators"] + 1 and commit["operation"] == "MERGE"
    assert m["numTargetRowsDeleted"] == n_rows and m["numTargetRowsInserted"] == n_rows
    assert m["numTargetRowsCopied"] == 0 and m["numTargetFilesRemoved"] == 0  # deletion vectors
    # A renamed last node changes no job edge, yet the incremental run rewrote that graph's
    # job edges too (its per-operator tables skip the compare of rows): the same rows again.
    edges = _last_commit(spark, f"{out}/job_edges")
    assert edges["version"] == before["job_edges"] + 1
    m = {k: int(v) for k, v in edges["operationMetrics"].items()}
    assert m["numTargetRowsDeleted"] == m["numTargetRowsInserted"] > 0
    old_edges = spark.read.format("delta").option("versionAsOf", before["job_edges"]).load(f"{out}/job_edges")
    assert not spark.read.format("delta").load(f"{out}/job_edges").exceptAll(old_edges).count()
    runs = spark.read.format("delta").load(f"{out}/{delta_sink.RUNS_TABLE}").orderBy("finished_at").collect()
    assert len(runs) == 3 and runs[-1]["rewritten_graphs"]["operators"] == 1
    # a full run of the same input compares every graph's rows: equal everywhere, no commit
    after = {t: _last_commit(spark, f"{out}/{t}")["version"] for t in TABLES}
    compute(spark, str(inp), out, settings, QUIET, full=True)
    assert {t: _last_commit(spark, f"{out}/{t}")["version"] for t in TABLES} == after


def test_a_run_that_dies_between_tables_is_not_published(spark, tmp_path):
    """write_run with one table whose rows fail to compute: the other tables commit, the run
    is not published, the published view stays the old run; a re-run converges."""
    out = str(tmp_path / "out")
    ids = spark.createDataFrame([("g1",), ("g2",)], "graph_id string")

    def tables(tag: str, fail: bool):
        a = spark.createDataFrame([("g1", tag), ("g2", tag)], "graph_id string, v string")
        b = spark.createDataFrame([("g1", 1), ("g2", 2)], "graph_id string, n int")
        if fail:
            b = b.withColumn("n", F.when(F.col("graph_id") == "g2", F.raise_error("boom")).otherwise(F.col("n")))
        return [("a", a), ("b", b.withColumn("n", F.col("n") + F.length(F.lit(tag))))]

    delta_sink.write_run(spark, out, tables("old", False), ids)
    old = {t: ft.rows(df) for t, df in delta_sink.read_published(spark, out).items()}
    with pytest.raises(Exception, match="boom"):
        delta_sink.write_run(spark, out, tables("new!", True), ids)
    latest_a = ft.rows(spark.read.format("delta").load(f"{out}/a"))
    assert latest_a == Counter([("g1", "new!"), ("g2", "new!")])  # table a did commit
    assert {t: ft.rows(df) for t, df in delta_sink.read_published(spark, out).items()} == old
    delta_sink.write_run(spark, out, tables("new!", False), ids)
    view = {t: ft.rows(df) for t, df in delta_sink.read_published(spark, out).items()}
    assert view["a"] == latest_a and view["b"] == ft.rows(spark.read.format("delta").load(f"{out}/b"))
    assert view != old
