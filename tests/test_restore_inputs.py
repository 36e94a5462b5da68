"""``check-restore`` with the inputs a user hands it, each check ending as one row and no input
aborting the run:

- graphs as a ``.json`` file that holds JSON Lines (which ``compute`` accepts), and as a folder
  ``ingest`` wrote: the fixes are proven from the graphs the run read, never by reading the
  spec files again;
- manifest lines that cannot be checks (not JSON, a non-boolean ``allow_non_restored_state``, a
  ``check_id`` used twice, no ``check_id``): an ERROR row each, whose message names the line;
- the restore tables replaced by key in one Delta commit each and the run published in
  ``runs``, as ``compute`` does;
- the chains step leaves a caller's Spark job group in place (its jobs run under it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from delta.tables import DeltaTable

from devtools import restore_cases as rc
from pipeline.cli import main
from pipeline.compute.chains import _ITERATION_STAGES as ITERATION_STAGES
from pipeline.tables import delta_writer

VECTORS = Path(__file__).resolve().parent.parent.parent / "shared" / "vectors" / "restore"
# Real cases of Flink 2.3 that fail at job start and whose fixes the check proposes and proves.
CASES = ("sp-2.3-s11-00057", "sp-2.3-s11-00001")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    base = VECTORS / "savepoint-2.3-s11"
    cases = [c for c in rc.read_cases(f"{base}.jsonl.gz") if c["case_id"] in CASES]
    assert len(cases) == len(CASES)
    folder = rc.write_case_fleet(cases, rc.read_metadata_tar(f"{base}-metadata.tar.gz"), tmp_path_factory.mktemp("f"))
    # the graphs as ONE .json file holding JSON Lines
    (folder / "graphs" / "graphs.jsonl").rename(folder / "specs.json")
    (folder / "graphs").rmdir()
    return folder


def _table(spark, out: str, name: str) -> dict:
    return {r["check_id"]: r.asDict() for r in spark.read.format("delta").load(f"{out}/{name}").collect()}


def _run(*args: str) -> int:
    return main(["check-restore", "--quiet", *args])


def test_a_json_file_of_json_lines_and_an_ingested_folder_give_proven_fixes(spark, fleet, tmp_path, capsys):
    out = str(tmp_path / "out")
    code = _run("--graphs", str(fleet / "specs.json"), "--checks", str(fleet / "checks.jsonl"), "--output", out)
    assert code == 0, capsys.readouterr().err
    checks = _table(spark, out, "restore_checks")
    assert {r["verdict"] for r in checks.values()} == {"FAILS", "RESTORES"}
    fixes = spark.read.format("delta").load(f"{out}/restore_fixes").toPandas()
    failing = {c for c, r in checks.items() if r["verdict"] == "FAILS"}
    assert failing and failing <= set(fixes["check_id"])
    assert fixes.loc[fixes["check_id"].isin(failing), "verified"].all()

    staged = str(tmp_path / "staged")
    assert main(["ingest", "--quiet", "--input", str(fleet / "specs.json"), "--output", staged]) == 0
    out2 = str(tmp_path / "out2")
    assert _run("--graphs", staged, "--checks", str(fleet / "checks.jsonl"), "--output", out2) == 0
    assert _table(spark, out2, "restore_checks") == checks
    fixes2 = spark.read.format("delta").load(f"{out2}/restore_fixes").toPandas()
    key = ["check_id", "operator_id", "fix_code"]
    assert fixes2.sort_values(key)[[*key, "verified"]].values.tolist() == (
        fixes.sort_values(key)[[*key, "verified"]].values.tolist()
    )


def test_bad_manifest_lines_are_error_rows_that_name_the_line(spark, fleet, tmp_path, capsys):
    good = [json.loads(line) for line in (fleet / "checks.jsonl").read_text().splitlines()]
    first, second = good[0], good[2]
    lines = [
        json.dumps(first),
        "this is not json",
        json.dumps({**first, "check_id": "yes-is-no-bool", "allow_non_restored_state": "yes"}),
        json.dumps({**second, "check_id": "twice"}),
        json.dumps({**first, "check_id": "twice"}),
        json.dumps({"savepoint": first["savepoint"], "graph_id": first["graph_id"]}),
        "",
        json.dumps([1, 2]),
        json.dumps({**first, "check_id": "typo", "savepoint": "savepoints/savepiont-1"}),  # a mistyped path
    ]
    manifest = fleet / "bad-checks.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    out = str(tmp_path / "out")
    assert _run("--graphs", str(fleet / "specs.json"), "--checks", str(manifest), "--output", out) == 0
    rows = spark.read.format("delta").load(f"{out}/restore_checks").collect()
    by_id: dict[str, list[dict]] = {}
    for r in rows:
        by_id.setdefault(r["check_id"], []).append(r.asDict())
    assert len(rows) == 8  # every non-blank line is one row
    assert by_id[first["check_id"]][0]["verdict"] in ("FAILS", "RESTORES")
    errors = {r["message"] for r in rows if r["verdict"] == "ERROR"}
    assert all(r["failure"] == r["message"] for r in rows if r["verdict"] == "ERROR")
    assert "manifest line bad-checks.jsonl:2: not JSON (Expecting value at column 1)" in errors
    assert (
        "manifest line bad-checks.jsonl:3: allow_non_restored_state must be true or false, got 'yes'" in errors
    )
    for n in (4, 5):
        assert (
            f"manifest line bad-checks.jsonl:{n}: check_id 'twice' is used by 2 lines "
            "(bad-checks.jsonl:4, bad-checks.jsonl:5); a check_id must be unique within one manifest"
        ) in errors
    assert "manifest line bad-checks.jsonl:6: check_id must be a non-empty string, got null" in errors
    assert "manifest line bad-checks.jsonl:8: not a JSON object but list" in errors
    assert {"manifest-error:bad-checks.jsonl:2", "manifest-error:bad-checks.jsonl:6"} <= set(by_id)
    assert len(by_id["twice"]) == 2
    (typo,) = by_id["typo"]  # the path in the message, as the manifest's folder resolves it
    assert typo["verdict"] == "ERROR" and typo["message"] == typo["failure"]
    assert typo["savepoint"] == "savepoints/savepiont-1"  # as the manifest wrote it
    assert typo["message"] == f"unreadable savepoint file:{fleet}/savepoints/savepiont-1: savepoint path does not exist"


def test_restore_tables_are_replaced_in_one_commit_each_and_published(spark, fleet, tmp_path):
    out = str(tmp_path / "out")
    args = ("--graphs", str(fleet / "specs.json"), "--checks", str(fleet / "checks.jsonl"), "--output", out)
    assert _run(*args) == 0
    assert _run(*args) == 0  # the same input again: nothing to rewrite
    one = fleet / "one-check.jsonl"
    one.write_text((fleet / "checks.jsonl").read_text().splitlines()[0] + "\n")
    assert _run("--graphs", str(fleet / "specs.json"), "--checks", str(one), "--output", out) == 0
    runs = spark.read.format("delta").load(f"{out}/{delta_writer.RUNS_TABLE}").collect()
    restore_runs = [r for r in runs if "restore_checks" in r["versions"]]
    assert len(restore_runs) == 3
    for table in ("savepoint_operators", "restore_checks", "restore_operator_matches", "restore_fixes"):
        history = DeltaTable.forPath(spark, f"{out}/{table}").history().collect()
        tagged = [h for h in history if (h["userMetadata"] or "").startswith(delta_writer.RUN_TAG_PREFIX)]
        # every commit is one run's, and a run commits a table at most once
        assert len(tagged) == len(history)
        assert len({h["userMetadata"] for h in tagged}) == len(tagged)
        assert [h["operation"] for h in history if h["operation"] not in ("WRITE", "MERGE")] == []
    # the third run owned one check: the other checks' rows are still there
    assert len(_table(spark, out, "restore_checks")) == len((fleet / "checks.jsonl").read_text().splitlines())
    published = delta_writer.read_published(spark, out)
    assert set(published) >= {"restore_checks", "restore_fixes", "operators"}


def test_the_chains_step_keeps_the_callers_job_group(spark, settings, tmp_path):
    from pipeline.compute.run import Progress, compute

    sc = spark.sparkContext
    sc.setJobGroup("a-notebook-cell", "the caller's own job group")
    try:
        tracker = sc.statusTracker()
        before = set(tracker.getJobIdsForGroup("a-notebook-cell"))
        samples = Path(__file__).resolve().parent.parent / "samples"
        compute(spark, str(samples), str(tmp_path / "out"), settings, Progress(enabled=False))
        assert sc.getLocalProperty("spark.jobGroup.id") == "a-notebook-cell"
        ran = set(tracker.getJobIdsForGroup("a-notebook-cell")) - before
        stages = [tracker.getStageInfo(s) for j in ran for s in (tracker.getJobInfo(j).stageIds or ())]
        names = {s.name for s in stages if s is not None}
        assert any(n.startswith(ITERATION_STAGES) for n in names), sorted(names)[:20]  # GraphFrames' jobs
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
