"""Conformance with real Flink: every known-answer file, through the real pipeline.

Each file's ``expected`` is what Flink's own StreamingJobGraphGenerator produced
(seed vectors: Flink 1.9 logs, checked against 1.20.5 and 2.3.0; dev vectors and golden
sets: the harness). One Spark run computes them all (see conftest); each test compares
one file, aspect by aspect, and fails on any difference.
"""

from __future__ import annotations

import pytest

from pipeline.conformance import read_vector_file

from .conftest import assert_file_matches_flink, vector_files


@pytest.mark.parametrize("path", vector_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_vector_file_matches_flink(spark, conformance_run, path):
    out, _ = conformance_run
    assert_file_matches_flink(spark, out, path)


def test_every_input_graph_lands_in_exactly_one_output(spark, conformance_run):
    out, summary = conformance_run
    processed = {
        r[0] for r in spark.read.format("delta").load(f"{out}/job_vertices").select("graph_id").distinct().collect()
    }
    rejected = {r[0] for r in spark.read.format("delta").load(f"{out}/graph_errors").select("graph_id").collect()}
    expected_ids = {g["graph_id"] for p in vector_files() for g in read_vector_file(p)}
    assert processed.isdisjoint(rejected)
    assert processed | rejected == expected_ids
    assert summary.graphs_in == len(expected_ids)


def test_staged_executor_gives_the_same_tables(spark, settings, conformance_run, tmp_path):
    """The staged executor (one Spark stage per step) on three known-answer files -- 1.9's
    quirks, 1.20 and 2.3 -- gives, row for row, the tables the fused default gave."""
    import shutil

    from pipeline.run import Progress, compute

    out, _ = conformance_run
    names = ("flink-1.9.jsonl.gz", "flink-1.20-dev-s1.jsonl.gz", "seed_vectors.jsonl")
    files = [p for p in vector_files() if p.name in names]
    assert len(files) == len(names)
    inp = tmp_path / "in"
    inp.mkdir()
    for f in files:
        shutil.copy(f, inp / f.name)
    staged = str(tmp_path / "staged")
    staged_settings = {**settings, "pipeline": {**settings.get("pipeline", {}), "executor": "staged"}}
    summary = compute(spark, str(inp), staged, staged_settings, Progress(enabled=False))
    assert summary.executor == "staged"
    ids = spark.createDataFrame([(g["graph_id"],) for f in files for g in read_vector_file(f)], "graph_id string")
    for table in ("operators", "job_vertices", "job_edges", "graph_errors"):
        got = spark.read.format("delta").load(f"{staged}/{table}")
        got = got.drop("source_file")  # the two runs read copies of the files under other names
        want = spark.read.format("delta").load(f"{out}/{table}").join(ids, "graph_id", "left_semi").select(*got.columns)
        assert got.count() == want.count() > 0 or table == "graph_errors", table
        assert got.exceptAll(want).count() == 0 and want.exceptAll(got).count() == 0, table
