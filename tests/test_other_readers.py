"""The output tables read without Spark, by delta-rs (the ``deltalake`` package; Polars reads
through it too). Tables created with ``tables.deletion_vectors=false`` carry no table feature a
reader might lack: delta-rs reads every one, row for row as Spark does, after a re-run that
replaced a graph. With the default (deletion vectors on) the pinned delta-rs refuses the tables,
naming the feature: the setting exists for such readers (README, docs/settings.md)."""

from __future__ import annotations

import json
import shutil

import pytest
from deltalake import DeltaTable as RsTable

from pipeline.compute.run import Progress, compute

from .conftest import ROOT

TABLES = ("operators", "job_vertices", "job_edges", "graph_errors", "runs")


def _rows(df) -> list:  # noqa: ANN001
    return sorted(tuple(str(v) for v in r) for r in df)


@pytest.mark.parametrize("deletion_vectors", [False, True])
def test_delta_rs_reads_every_table_as_spark_does(spark, settings, tmp_path, deletion_vectors):
    inp = tmp_path / "in"
    shutil.copytree(ROOT / "samples", inp)
    out = str(tmp_path / "out")
    conf = settings.with_overrides({"tables.deletion_vectors": deletion_vectors})
    quiet = Progress(enabled=False)
    compute(spark, str(inp), out, conf, quiet)
    wc = json.loads((inp / "wordcount.json").read_text())
    wc["nodes"][0]["name"] = "Source: renamed"
    (inp / "wordcount.json").write_text(json.dumps(wc))
    compute(spark, str(inp), out, conf, quiet)  # a MERGE that replaces one graph's rows
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{out}/operators`").first()
    assert ("deletionVectors" in (detail["tableFeatures"] or [])) == deletion_vectors
    for t in TABLES:
        spark_df = spark.read.format("delta").load(f"{out}/{t}")
        features = spark.sql(f"DESCRIBE DETAIL delta.`{out}/{t}`").first()["tableFeatures"] or []
        assert ("deletionVectors" in features) == (deletion_vectors and t != "runs"), t  # runs: appends only
        if "deletionVectors" in features:
            with pytest.raises(Exception, match="deletionVectors"):
                RsTable(f"{out}/{t}").to_pyarrow_table()
            continue
        rs = RsTable(f"{out}/{t}").to_pyarrow_table()
        columns = spark_df.columns
        assert rs.column_names == columns, t
        if t == "runs":
            assert rs.num_rows == spark_df.count() == 2
            continue
        assert _rows(tuple(r[c] for c in columns) for r in rs.to_pylist()) == _rows(spark_df.collect()), t
