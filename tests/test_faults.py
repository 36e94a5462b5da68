"""Faults on the Delta writes, with real Delta and real processes: a `kill -9` of the driver
during the writes, two runs at once on disjoint graphs, a re-run with one graph changed, and a
run that dies between its tables. scripts/fault_trials.py runs the long version (20 kills)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from collections import Counter
from pathlib import Path

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
    files = {t: _data_files(f"{out}/{t}") for t in TABLES}
    compute(spark, str(inp), out, settings, QUIET)
    ops = spark.read.format("delta").load(f"{out}/operators")
    n_rows = ops.where(F.col("graph_id") == g["graph_id"]).count()
    commit = _last_commit(spark, f"{out}/operators")
    m = {k: int(v) for k, v in commit["operationMetrics"].items()}
    # one graph: an overwrite with replaceWhere graph_id IN (...) (tables.replace_where_max_keys)
    assert commit["version"] == before["operators"] + 1 and commit["operation"] == "WRITE"
    assert commit["operationParameters"]["predicate"] == f"`graph_id` IN ('{g['graph_id']}')"
    assert m["numDeletedRows"] == n_rows and m["numRemovedFiles"] == 0  # deletion vectors
    # no data file rewritten: one new file, with the graph's rows
    assert _data_files(f"{out}/operators") - files["operators"] == 1
    # A renamed last node changes no job edge, yet the incremental run rewrote that graph's
    # job edges too (its per-operator tables skip the compare of rows): the same rows again.
    edges = _last_commit(spark, f"{out}/job_edges")
    assert edges["version"] == before["job_edges"] + 1
    m = {k: int(v) for k, v in edges["operationMetrics"].items()}
    assert m["numDeletedRows"] > 0 and _data_files(f"{out}/job_edges") - files["job_edges"] == 1
    old_edges = spark.read.format("delta").option("versionAsOf", before["job_edges"]).load(f"{out}/job_edges")
    assert not spark.read.format("delta").load(f"{out}/job_edges").exceptAll(old_edges).count()
    runs = spark.read.format("delta").load(f"{out}/{delta_sink.RUNS_TABLE}").orderBy("finished_at").collect()
    assert len(runs) == 3 and runs[-1]["rewritten_graphs"]["operators"] == 1
    # a full run of the same input compares every graph's rows: equal everywhere, no commit
    after = {t: _last_commit(spark, f"{out}/{t}")["version"] for t in TABLES}
    compute(spark, str(inp), out, settings, QUIET, full=True)
    assert {t: _last_commit(spark, f"{out}/{t}")["version"] for t in TABLES} == after


def _data_files(path: str) -> int:
    return len(list(Path(path).glob("*.parquet")))


@pytest.mark.parametrize("max_keys", [0, 200])
def test_a_replace_is_one_commit_that_leaves_the_same_rows_by_merge_or_by_replace_where(spark, tmp_path, max_keys):
    """The two ways a table's keys are replaced (a MERGE; for few keys an overwrite with
    replaceWhere key IN (...)): one commit each, the same rows after, keys quoted as Spark
    parses them (a quote, a backslash), a key whose rows are gone deleted, other keys kept."""
    out = str(tmp_path / "out")
    keys = ["plain", "it's", "back\\slash", "gone", "other"]
    first = spark.createDataFrame([(k, i) for i, k in enumerate(keys) for i in (i, i + 10)], "graph_id string, v int")
    delta_sink.write_run(spark, out, [("t", first)], first.select("graph_id").distinct())
    run_keys = ["plain", "it's", "back\\slash", "gone"]  # "other" is not this run's
    new = spark.createDataFrame([("plain", 7), ("it's", 8), ("back\\slash", 9), ("back\\slash", 19)],
                                "graph_id string, v int")  # fmt: skip
    ids = spark.createDataFrame([(k,) for k in run_keys], "graph_id string")
    commit = delta_sink.write_run(spark, out, [("t", new)], ids, replace_where_max_keys=max_keys)
    assert commit.tables["t"].rewritten_graphs == 4
    history = DeltaTable.forPath(spark, f"{out}/t").history().orderBy("version").collect()
    assert [h["operation"] for h in history] == ["WRITE", "MERGE" if max_keys == 0 else "WRITE"]
    got = sorted(tuple(r) for r in spark.read.format("delta").load(f"{out}/t").collect())
    assert got == sorted([("plain", 7), ("it's", 8), ("back\\slash", 9), ("back\\slash", 19), ("other", 4),
                          ("other", 14)])  # fmt: skip


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


@pytest.mark.parametrize("max_keys", [0, 200])
def test_a_replace_of_keys_without_rows_before_or_after_rewrites_none(spark, tmp_path, max_keys):
    """A run's keys that have no rows in a table and get none (a check with no state problem,
    before and after) are not counted as rewritten there, by MERGE or by replaceWhere: the
    ``runs`` row and the run summary say 0, at the version that holds the run's (no) rows."""
    out = str(tmp_path / "out")
    first = spark.createDataFrame([("a", 1), ("b", 2)], "check_id string, v int")
    delta_sink.write_run(spark, out, [delta_sink.TableWrite("t", first, key="check_id")],
                         first.select("check_id"))  # fmt: skip
    empty = spark.createDataFrame([], "check_id string, v int")
    ids = spark.createDataFrame([("c",), ("d",)], "check_id string")
    write = delta_sink.TableWrite("t", empty, key="check_id", compare=False)  # every key replaced, unless none
    commit = delta_sink.write_run(spark, out, [write], ids, replace_where_max_keys=max_keys)
    versions = [h["version"] for h in DeltaTable.forPath(spark, f"{out}/t").history().collect()]
    assert commit.tables["t"].version == max(versions)
    assert commit.tables["t"].rewritten_graphs == 0
    runs = spark.read.format("delta").load(f"{out}/{delta_sink.RUNS_TABLE}").orderBy("finished_at").collect()
    assert runs[-1]["rewritten_graphs"]["t"] == 0
    assert sorted(tuple(r) for r in spark.read.format("delta").load(f"{out}/t").collect()) == [("a", 1), ("b", 2)]
