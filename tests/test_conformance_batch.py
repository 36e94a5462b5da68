"""Conformance with real Flink for BATCH programs (execution.runtime-mode=BATCH).

``tests/golden/batch/flink-<line>.jsonl.gz``: random DataStream programs the harness ran in
BATCH mode (``harness/regen_golden.sh`` with ``BATCH=1``), each with what Flink's own
``StreamingJobGraphGenerator.createJobGraph`` built from it. One pipeline run computes all
of them; each file is compared aspect by aspect and must match on every one.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from devtools.conformance import read_vector_file
from udfs.flink.profiles import batch_rules

from .conftest import assert_file_matches_flink, compute_files

BATCH_GOLDEN = Path(__file__).resolve().parent / "golden" / "batch"


def batch_files() -> list[Path]:
    return sorted(BATCH_GOLDEN.glob("flink-*.jsonl.gz"))


@pytest.fixture(scope="module")
def batch_run(spark, settings, tmp_path_factory):
    return compute_files(spark, settings, batch_files(), tmp_path_factory.mktemp("conformance-batch"))


# BATCH mode with the profiles: every line from 1.15
BATCH_LINES = ("1.15", "1.16", "1.17", "1.18", "1.19", "1.20", "2.0", "2.1", "2.2", "2.3")


def test_batch_golden_sets_exist():
    names = {p.name for p in batch_files()}
    assert {f"flink-{v}.jsonl.gz" for v in BATCH_LINES} <= names


@pytest.mark.parametrize("path", batch_files(), ids=lambda p: f"batch/{p.name}")
def test_batch_file_covers_batch_mode(path):
    """The set really holds what BATCH mode puts in a graph, so the match below means something."""
    seen: Counter[str] = Counter()
    for g in read_vector_file(path):
        assert g["job_type"] == "BATCH" and g["meta"]["runtime_mode"] == "BATCH"
        seen["dynamic" if g["dynamic"] else "static"] += 1
        seen.update(f"partitioner {e['partitioner']}" for e in g["edges"])
        seen["node parallelism -1"] += sum(n["parallelism"] == -1 for n in g["nodes"])
        if g["dynamic"] and g.get("auto_parallelism_enabled") is False:
            seen["auto parallelism off"] += 1
        exp = g["expected"]
        if "error" in exp:
            seen["Flink error"] += 1
            continue
        seen["vertex parallelism -1"] += sum(v["parallelism"] == -1 for v in exp["job_vertices"])
        heads = {n["id"]: n for n in g["nodes"]}
        # a vertex whose parallelism is not its head node's: the dynamic-graph reset / forward groups
        seen["vertex parallelism changed"] += sum(
            v["parallelism"] != heads[v["head_node_id"]]["parallelism"] for v in exp["job_vertices"]
        )
        seen.update(f"job edge {e['ship_strategy_name']}" for e in exp["job_edges"])
    expected = [
        "dynamic",
        "static",
        "partitioner FORWARD_FOR_UNSPECIFIED",
        "partitioner FORWARD",
        "node parallelism -1",
        "vertex parallelism -1",
        "job edge RESCALE",
        "job edge FORWARD",
    ]
    line = path.name.removeprefix("flink-").removesuffix(".jsonl.gz")
    if batch_rules(line).get("dynamic_vertex_parallelism"):
        # 1.17+: a dynamic graph's vertices get their parallelism reset (forward groups), and the
        # auto-parallelism option that switches it off exists; 1.15/1.16 have neither
        expected += ["auto parallelism off", "vertex parallelism changed"]
    for what in expected:
        assert seen[what] > 0, (what, seen)


@pytest.mark.parametrize("path", batch_files(), ids=lambda p: f"batch/{p.name}")
def test_batch_file_matches_flink(spark, batch_run, path):
    out, _ = batch_run
    assert_file_matches_flink(spark, out, path)
