"""Conformance with real Flink for Table/SQL programs.

``tests/golden/sql/flink-<line>.jsonl.gz``: random SQL programs (datagen tables, joins, interval
joins, group and window TVF aggregations, deduplication, top-N, OVER aggregations, UNION ALL,
statement sets with several INSERTs into blackhole/print tables, ``table.exec.uid.generation``
...) that the harness planned with Flink's own planner and captured at submission
(``SQL=1 [BATCH=1] harness/regen_golden.sh 2.3 2.2 1.20``, i.e. ``generate --sql``), each with what Flink's
``StreamingJobGraphGenerator.createJobGraph`` built from the StreamGraph. One pipeline run
computes all of them; each file is compared aspect by aspect and must match on every one.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from devtools.conformance import read_vector_file

from .conftest import assert_file_matches_flink, compute_files

SQL_GOLDEN = Path(__file__).resolve().parent / "golden" / "sql"


def sql_files() -> list[Path]:
    return sorted(SQL_GOLDEN.glob("flink-*.jsonl.gz")) + sorted((SQL_GOLDEN / "batch").glob("flink-*.jsonl.gz"))


def regression_files() -> list[Path]:
    """Programs a fresh run once got wrong, with Flink's answer (``generate --sql [--batch]
    --seed S --start I --count 1``; the file name says what they hold). Not held to the
    golden sets' coverage check."""
    return sorted((SQL_GOLDEN / "regressions").glob("flink-*.jsonl.gz"))


@pytest.fixture(scope="module")
def sql_run(spark, settings, tmp_path_factory):
    files = sql_files() + regression_files()
    return compute_files(spark, settings, files, tmp_path_factory.mktemp("conformance-sql"))


def test_sql_golden_sets_exist():
    lines = {"flink-2.3.jsonl.gz", "flink-2.2.jsonl.gz", "flink-1.20.jsonl.gz"}
    assert lines <= {p.name for p in SQL_GOLDEN.glob("flink-*.jsonl.gz")}
    assert lines <= {p.name for p in (SQL_GOLDEN / "batch").glob("flink-*.jsonl.gz")}


def test_batch_golden_sets_hold_multiple_input_operators():
    """BATCH multi-way joins with join hints (``generate --sql --batch``, Flink 1.16+): the planner
    fuses them into ``MultipleInput`` operators (HEAD_WITH_SOURCES) fed by hash, broadcast and
    forward inputs, so the match below covers them."""
    seen: Counter[str] = Counter()
    for path in sorted((SQL_GOLDEN / "batch").glob("flink-*.jsonl.gz")):
        for g in read_vector_file(path):
            multi = {n["id"] for n in g["nodes"] if n["name"].startswith("MultipleInput")}
            seen["MultipleInput"] += len(multi)
            ins = Counter(e["target"] for e in g["edges"] if e["target"] in multi)
            seen["three or more inputs"] += sum(n >= 3 for n in ins.values())
            seen.update(f"input {e['partitioner'].split('[')[0]}" for e in g["edges"] if e["target"] in multi)
    for what in ("MultipleInput", "three or more inputs", "input HASH", "input BROADCAST"):
        assert seen[what] > 0, (what, seen)


def _operator(name: str) -> str:
    """'GroupAggregate[4]' -> 'GroupAggregate', 'Source: t1[1]' -> 'Source', 'sink2[7]: Writer' -> 'Writer'."""
    if name.startswith("Source:"):
        return "Source"
    if name.endswith(": Writer") or name.startswith("Sink:"):
        return "Sink"
    return re.sub(r"\[\d+\].*$", "", name).split("(")[0]


@pytest.mark.parametrize("path", sql_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sql_file_covers_the_planner(path):
    """The set really holds what the SQL planner puts in a graph, so the match below means something."""
    seen: Counter[str] = Counter()
    batch = path.parent.name == "batch"
    for g in read_vector_file(path):
        assert g["meta"]["kind"] == "SQL"
        assert g["job_type"] == ("BATCH" if batch else "STREAMING")
        seen.update(_operator(n["name"]) for n in g["nodes"])
        seen.update(f"partitioner {e['partitioner'].split('[')[0]}" for e in g["edges"])
        seen["node with uid"] += sum(bool(n["uid"]) for n in g["nodes"])
        seen["node without uid"] += sum(not n["uid"] for n in g["nodes"])
        program = " ".join(g["meta"]["program"])
        seen["several INSERTs"] += program.count("addInsertSql") > 1
        exp = g["expected"]
        if "error" not in exp:
            seen["several job vertices"] += len(exp["job_vertices"]) > 1
            seen["chained operators"] += len(exp["job_vertices"]) < len(g["nodes"])
    must = [
        "Source",
        "Sink",
        "Calc",
        "partitioner FORWARD",
        "partitioner HASH",
        "node without uid",
        "several INSERTs",
        "several job vertices",
        "chained operators",
    ]
    if batch:
        must += ["HashAggregate", "Sort", "partitioner FORWARD_FOR_UNSPECIFIED"]
    else:
        must += [
            "GroupAggregate",
            "Join",
            "IntervalJoin",
            "Deduplicate",
            "Rank",
            "OverAggregate",
            "WatermarkAssigner",
            "node with uid",
        ]
    for what in must:
        assert seen[what] > 0, (what, seen)
    if not batch:
        assert seen["WindowAggregate"] + seen["GlobalWindowAggregate"] > 0, seen


@pytest.mark.parametrize("path", sql_files() + regression_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sql_file_matches_flink(spark, sql_run, path):
    out, _ = sql_run
    assert_file_matches_flink(spark, out, path)


def test_consecutive_hash_job_edges_show_the_hash_partitioner_flink_shows():
    """Programs 555 and 959 of ``generate --sql --batch --seed 9001`` (Flink 2.3): a
    FORWARD_FOR_CONSECUTIVE_HASH edge that is not chained becomes a job edge whose ship
    strategy is the wrapped table hash partitioner's name (``HASH[k, s]``), not ``HASH``
    (both were the only mismatches of that 2,000-program run)."""
    (path,) = [p for p in regression_files() if "consecutive-hash" in p.name]
    graphs = list(read_vector_file(path))
    written = {e["partitioner"] for g in graphs for e in g["edges"]}
    assert {"FORWARD_FOR_CONSECUTIVE_HASH[k, s]", "FORWARD_FOR_CONSECUTIVE_HASH[s]"} <= written
    shown = {e["ship_strategy_name"] for g in graphs for e in g["expected"]["job_edges"]}
    assert {"HASH[k, s]", "HASH[s]"} <= shown
