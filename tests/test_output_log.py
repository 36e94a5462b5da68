"""What a run reads of an output's Delta logs instead of its tables (pipeline/tables/delta_log.py,
pipeline/tables/published.py): each table's version, columns and commits as Delta's own log
reader says them; a table's rows at a version read over the files its checksum lists, equal to
Delta's ``versionAsOf`` read, deletion vectors included; and the published view found in the
``runs`` log's records equal to the view worked out from every commit and the ``runs`` rows,
through a clean run, a run that died between its tables, the re-run that covers it, and a
table created again."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from pipeline.tables import delta_log, published
from pipeline.tables import delta_writer as delta_sink


def _rows(df) -> Counter:
    return Counter(tuple(r) for r in df.collect())


def _write(spark, out: str, tag: str, ids: list[str], fail: bool = False, max_keys: int = 200):
    """One run over ``ids`` into tables a and b (b's rows fail to compute when ``fail``)."""
    a = spark.createDataFrame([(g, tag) for g in ids], "graph_id string, v string")
    b = spark.createDataFrame([(g, len(tag)) for g in ids], "graph_id string, n int")
    if fail:
        b = b.withColumn("n", F.when(F.col("graph_id") == ids[-1], F.raise_error("boom")).otherwise(F.col("n")))
    run_ids = spark.createDataFrame([(g,) for g in ids], "graph_id string")
    return delta_sink.write_run(spark, out, [("a", a), ("b", b)], run_ids, replace_where_max_keys=max_keys)


def _full(spark, out: str, tables: list[str]) -> dict:
    return published._full_cut(spark, out, tables, published._published_runs(spark, out))[0]


def test_versions_columns_and_commits_are_those_delta_reports(spark, tmp_path):
    out = str(tmp_path / "out")
    _write(spark, out, "one", ["g1", "g2", "g3"])
    _write(spark, out, "two", ["g2"])
    for t in ("a", "b", "runs"):
        path = f"{out}/{t}"
        state = delta_log.table_state(spark, path)
        history = DeltaTable.forPath(spark, path).history().orderBy("version").collect()
        assert state.version == history[-1]["version"]
        assert state.columns == tuple(spark.read.format("delta").load(path).columns)
        assert delta_log.commits(spark, path) == [(h["version"], h["userMetadata"]) for h in history]
        assert delta_log.commits(spark, path, 1) == [(h["version"], h["userMetadata"]) for h in history[1:]]
    assert delta_log.table_state(spark, f"{out}/none") is None and delta_log.commits(spark, f"{out}/none") == []
    assert delta_log.delta_tables(spark, out) == ["a", "b", "runs"]


@pytest.mark.parametrize("max_keys", [0, 200])
def test_a_table_read_at_a_version_is_deltas_own_read(spark, tmp_path, max_keys):
    """Over the files the version's checksum lists (deletion vectors after a replace by
    replaceWhere or MERGE), the rows of every version are those ``versionAsOf`` reads."""
    out = str(tmp_path / "out")
    _write(spark, out, "one", ["g1", "g2", "g3"])
    _write(spark, out, "two", ["g2", "g3"], max_keys=max_keys)
    _write(spark, out, "three", ["g3"], max_keys=max_keys)
    path = f"{out}/a"
    newest = delta_log.table_state(spark, path).version
    assert newest == 2
    _, snapshot = delta_log._snapshot_at(spark, path, newest)
    assert delta_log._checksum_files(snapshot) is not None  # the checksum lists the files
    for v in range(newest + 1):
        expected = _rows(spark.read.format("delta").option("versionAsOf", v).load(path))
        assert _rows(delta_log.read_at(spark, path, v)) == expected
    assert _rows(delta_log.read_at(spark, path, newest)) == Counter([("g1", "one"), ("g2", "two"), ("g3", "three")])


def test_the_view_in_the_log_is_the_view_of_every_commit(spark, tmp_path):
    out = str(tmp_path / "out")
    tables = ["a", "b"]
    _write(spark, out, "one", ["g1", "g2"])
    _write(spark, out, "second", ["g2"])
    from_log = published._view_from_log(spark, out, tables, set())
    assert from_log == _full(spark, out, tables) == {"a": 1, "b": 1}
    assert published.published_versions(spark, out, tables) == from_log

    # a run that dies between its tables: a committed, not published; the log does not settle it
    with pytest.raises(Exception, match="boom"):
        _write(spark, out, "dies", ["g1", "g2"], fail=True)
    assert published._view_from_log(spark, out, tables, set()) is None
    assert published.published_versions(spark, out, tables) == _full(spark, out, tables) == {"a": 1, "b": 1}

    # its re-run over the same graphs covers it (a holds its rows already: no commit there), and
    # the log holds the view again
    _write(spark, out, "dies", ["g1", "g2"])
    assert published._view_from_log(spark, out, tables, set()) == _full(spark, out, tables) == {"a": 2, "b": 2}

    # another run: the view moves on in the log, as in full
    _write(spark, out, "four!", ["g1"])
    assert published._view_from_log(spark, out, tables, set()) == _full(spark, out, tables) == {"a": 3, "b": 3}
    view = published.read_published(spark, out, tables)
    assert _rows(view["a"]) == _rows(spark.read.format("delta").load(f"{out}/a"))

    # a table created again at its path: not the table the record saw
    shutil.rmtree(f"{tmp_path}/out/b")
    spark.createDataFrame([("g9", 9)], "graph_id string, n int").write.format("delta").save(f"{out}/b")
    assert published._view_from_log(spark, out, tables, set()) is None


def test_a_publish_over_commits_of_a_dead_run_records_no_view(spark, tmp_path):
    """A dead run over other graphs than the next run's is not covered: the next publish leaves
    no view in the log, and the view is worked out in full, held before the dead run's commit."""
    out = str(tmp_path / "out")
    _write(spark, out, "one", ["g1", "g2"])
    with pytest.raises(Exception, match="boom"):
        _write(spark, out, "dies", ["g1", "g2"], fail=True)
    _write(spark, out, "other", ["g2"])
    runs = delta_log.commits(spark, f"{out}/runs")
    assert published._record_of(runs[-1][1]) is None
    assert published.published_versions(spark, out, ["a", "b"]) == _full(spark, out, ["a", "b"]) == {"a": 0, "b": 0}
