"""Incremental check-restore (check_fingerprints): a check whose manifest line, savepoint
``_metadata`` and graphs are unchanged since the output's published run is not decided again,
and after every kind of change the tables are a full run's on the same input, row for row.

Real savepoints of Flink 2.3 and their real edited jobs (../shared/vectors/restore), laid out as
a user has them. One output is re-run through the changes; a full run on a fresh output of the
final input is the reference. The changes: a new savepoint in place of one (another job's, so
its verdict changes), the same savepoint written again (a new modification time), one check's
allowNonRestoredState flipped, one new job version; then a run killed before it published.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from devtools import restore_cases as rc
from pipeline.compute.run import Progress
from pipeline.restore import incremental
from pipeline.restore.check import check_restore
from pipeline.runner import is_night
from pipeline.tables import delta_writer
from pipeline.tables.published import published_rules_version

VECTORS = Path(__file__).resolve().parent.parent.parent / "shared" / "vectors" / "restore" / "savepoint-2.3-s11"
TABLES = ("restore_checks", "restore_operator_matches", "restore_fixes", "restore_state_problems",
          "savepoint_operators", "savepoint_states", incremental.TABLE)  # fmt: skip
QUIET = Progress(enabled=False)


def _snapshot(spark, out: str) -> dict[str, list]:
    snap = {}
    for t in TABLES:
        df = spark.read.format("delta").load(f"{out}/{t}")
        columns = sorted(df.columns)
        snap[t] = sorted(tuple(str(r[c]) for c in columns) for r in df.collect())
    return snap


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    cases = {c["case_id"]: c for c in rc.read_cases(f"{VECTORS}.jsonl.gz")}
    metadata = rc.read_metadata_tar(f"{VECTORS}-metadata.tar.gz")
    chosen = [cases[i] for i in ("sp-2.3-s11-00057", "sp-2.3-s11-00000", "sp-2.3-s11-00001", "sp-2.3-s11-00002")]
    folder = rc.write_case_fleet(chosen, metadata, tmp_path_factory.mktemp("fleet"))
    return folder, chosen, metadata


def test_unchanged_checks_are_not_decided_again_and_the_tables_are_a_full_runs(spark, settings, fleet, tmp_path):
    folder, cases, metadata = fleet
    graphs, checks = str(folder / "graphs"), str(folder / "checks.jsonl")
    out = str(tmp_path / "inc")
    first = check_restore(spark, graphs, checks, out, settings, QUIET)
    assert (first.checks, first.checks_unchanged) == (8, 0)
    before = _snapshot(spark, out)
    # its publish (the newest, after compute's of the graphs) names the restore rules it decided
    # under: the next check-restore process is a night (its JVM: spark.night_java_options)
    rules = lambda s: incremental.restore_rules_version(s, True)  # noqa: E731 - the default, proofs on
    assert published_rules_version(out) == rules(settings)
    assert is_night(out, False, rules)(settings)
    assert not is_night(out, False, lambda s: incremental.restore_rules_version(s, False))(settings)

    # the same input again: nothing decided, nothing rewritten
    again = check_restore(spark, graphs, checks, out, settings, QUIET)
    assert (again.checks, again.checks_unchanged) == (0, 8)
    assert again.graphs["skipped"] == again.graphs["in"] == 8  # no graph computed again either
    assert _snapshot(spark, out) == before

    # changes: a new savepoint (job 0001's in place of job 0000's), the same savepoint written
    # again (0001's: a new modification time), a flipped allowNonRestoredState (0002/strict),
    # a new version of job 0057 (a renamed operator: its spec changes, its IDs do not)
    sp = lambda c: folder / "savepoints" / c["case_id"] / "_metadata"  # noqa: E731
    sp(cases[1]).write_bytes(metadata[cases[2]["savepoint_metadata"]])
    later = time.time() + 5
    os.utime(sp(cases[2]), (later, later))
    lines = [json.loads(x) for x in Path(checks).read_text().splitlines()]
    for line in lines:
        if line["check_id"] == "sp-2.3-s11-00002/strict":
            line["allow_non_restored_state"] = True
    Path(checks).write_text("".join(json.dumps(x) + "\n" for x in lines))
    specs = [json.loads(x) for x in (folder / "graphs" / "graphs.jsonl").read_text().splitlines()]
    renamed = next(g for g in specs if g["graph_id"] == cases[0]["v2"]["graph_id"])
    renamed["nodes"][-1]["name"] += " (v2)"
    (folder / "graphs" / "graphs.jsonl").write_text("".join(json.dumps(g) + "\n" for g in specs))
    changed = check_restore(spark, graphs, checks, out, settings, QUIET)
    # job 0000's two checks (new savepoint), 0001's two (rewritten savepoint), 0002/strict, 0057's two
    assert (changed.checks, changed.checks_unchanged) == (7, 1)
    # only job 0057's new version was computed in the first pass; the unchanged graphs of the
    # checks decided again were computed in a second pass (and the tables are a full run's)
    assert changed.graphs["skipped"] == changed.graphs["in"] - 1
    reference = str(tmp_path / "full")
    full = check_restore(spark, graphs, checks, reference, settings, QUIET, full=True)
    assert full.checks == 8
    assert _snapshot(spark, out) == _snapshot(spark, reference)
    # the new savepoint was read, not the old rows kept: job 0000's strict check now answers
    # for job 0001's savepoint, whose operators are not job 0000's
    assert before != _snapshot(spark, out)

    # a run killed before it published: its commit to restore_checks changed one check's row
    victim = "sp-2.3-s11-00002/allow"
    rows = (
        spark.read.format("delta").load(f"{out}/restore_checks")
        .where(F.col("check_id") == victim)
        .withColumn("message", F.lit("written by a run that was killed"))
    )  # fmt: skip
    ids = spark.createDataFrame([(victim,)], "check_id string")
    spark.conf.set(delta_writer.USER_METADATA_CONF, delta_writer.RUN_TAG_PREFIX + delta_writer.run_id_for([victim]))
    try:
        delta_writer.replace_graphs(spark, out, "restore_checks", rows, ids, key="check_id")
    finally:
        spark.conf.unset(delta_writer.USER_METADATA_CONF)
    said: list[str] = []
    assert victim not in incremental.known_checks(spark, out, said.append)
    assert said and "its 1 checks are decided again" in said[-1]
    rerun = check_restore(spark, graphs, checks, out, settings, QUIET)
    assert (rerun.checks, rerun.checks_unchanged) == (1, 7)
    assert _snapshot(spark, out) == _snapshot(spark, reference)
