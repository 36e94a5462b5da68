"""Conformance with real Flink: every known-answer file, through the real pipeline.

Each file's ``expected`` is what Flink's own StreamingJobGraphGenerator produced
(seed vectors: Flink 1.9 logs, checked against 1.20.5 and 2.3.0; dev vectors and golden
sets: the harness). One Spark run computes them all (see conftest); each test compares
one file, aspect by aspect, and fails on any difference.
"""

from __future__ import annotations

import pytest

from devtools.conformance import read_vector_file

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
