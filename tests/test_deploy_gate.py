"""The deploy gate: one job's restore check as a CI step (``check-restore --savepoint ...``),
on real savepoints of Flink 2.3 and their real edited jobs (../shared/vectors/restore): the
printed lines name the operator, Flink's message and the fix, the exit code stops the pipeline
when the deploy would fail, and the JUnit report says the same."""

from __future__ import annotations

import json
import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from devtools import restore_cases as rc
from pipeline.cli import main

VECTORS = Path(__file__).resolve().parent.parent.parent / "shared" / "vectors" / "restore" / "savepoint-2.3-s11"


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate")
    cases = {c["case_id"]: c for c in rc.read_cases(f"{VECTORS}.jsonl.gz")}
    metadata = rc.read_metadata_tar(f"{VECTORS}-metadata.tar.gz")
    out = {}
    for cid in ("sp-2.3-s11-00057", "sp-2.3-s11-00000"):
        c = cases[cid]
        folder = root / cid
        (folder / "savepoints" / "savepoint-1").mkdir(parents=True)
        (folder / "savepoints" / "savepoint-1" / "_metadata").write_bytes(metadata[c["savepoint_metadata"]])
        (folder / "v1.json").write_text(json.dumps(c["v1"], indent=2))
        (folder / "v2.jsonl").write_text(json.dumps(c["v2"]) + "\n")
        out[cid] = (folder, c)
    return out


def test_a_failing_deploy_exits_1_and_says_why_and_how_to_fix_it(jobs, tmp_path, capsys):
    folder, case = jobs["sp-2.3-s11-00057"]
    flink = rc.flink_answer(case, False)
    assert flink.verdict == "FAILS"
    code = main(["check-restore", "--quiet", "--savepoint", str(folder / "savepoints" / "savepoint-1"),
                 "--graphs", str(folder / "v2.jsonl"), "--previous-graphs", str(folder / "v1.json"),
                 "--report", str(tmp_path / "report")])  # fmt: skip
    printed = capsys.readouterr().out.splitlines()
    assert code == 1, printed
    head = f"check-restore: FAILS ({flink.failure}, at job start): {case['v2']['graph_id']} from "
    assert printed[0].startswith(head)
    assert printed[1] == f"  operator {flink.operator_id}"
    assert printed[2].startswith("  Flink: Failed to rollback to checkpoint/savepoint ")
    assert f"Cannot map checkpoint/savepoint state for operator {flink.operator_id}" in printed[2]
    assert '  fix on "Elastic: Committer": .setUidHash("c05490c66c5430e8899ba457291f89df") '\
           "[proven: the patched job restores]" in printed  # fmt: skip
    suite = ET.parse(tmp_path / "report.xml").getroot()
    assert (suite.tag, suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("testsuite", "1", "1", "0")
    failure = suite.find("testcase/failure")
    assert failure is not None and failure.get("type") == flink.failure and flink.operator_id in failure.get("message")
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["exit_code"] == 1 and report["check"]["verdict"] == "FAILS" and report["fixes"]


def test_a_restoring_deploy_exits_0_and_the_newest_savepoint_is_taken(jobs, tmp_path, capsys):
    folder, case = jobs["sp-2.3-s11-00000"]
    assert rc.flink_answer(case, False).verdict == "RESTORES"
    # a folder of several: an older, broken one and the real one, newest
    old = folder / "savepoints" / "savepoint-0"
    old.mkdir(exist_ok=True)
    (old / "_metadata").write_bytes(b"not a savepoint")
    past = time.time() - 3600
    os.utime(old / "_metadata", (past, past))
    code = main(["check-restore", "--quiet", "--savepoint", str(folder / "savepoints"),
                 "--graphs", str(folder / "v2.jsonl"), "--report", str(tmp_path / "ok")])  # fmt: skip
    printed = capsys.readouterr().out.splitlines()
    assert code == 0, printed
    assert printed[0].startswith(f"check-restore: RESTORES: {case['v2']['graph_id']} from ")
    assert printed[0].endswith("savepoint-1")
    # the vectors keep only _metadata: the state files are missing, and the gate says so
    assert any(line.startswith("  not decidable here: STATE_UNREADABLE: state stream ") for line in printed)
    suite = ET.parse(tmp_path / "ok.xml").getroot()
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0")


def test_an_unreadable_savepoint_exits_3_naming_it_and_bad_arguments_exit_2(jobs, tmp_path, capsys):
    folder, _ = jobs["sp-2.3-s11-00000"]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "_metadata").write_bytes(b"\x00" * 64)
    code = main(["check-restore", "--quiet", "--savepoint", str(bad), "--graphs", str(folder / "v2.jsonl")])
    printed = capsys.readouterr().out.splitlines()
    assert code == 3, printed
    assert printed[1].startswith(f"  why: unreadable savepoint {bad}") or str(bad) in printed[1], printed
    assert main(["check-restore", "--savepoint", str(bad)]) == 2
    assert "needs the new version as --graphs SPEC or as --jar JAR" in capsys.readouterr().err


def _ci_command(ci_file: str) -> str:
    """The check-restore command of a CI example, as written there."""
    import yaml

    doc = yaml.safe_load((Path(__file__).resolve().parent.parent / "docs" / "ci" / ci_file).read_text())
    if "jobs" in doc:  # GitHub Actions
        steps = doc["jobs"]["restore-gate"]["steps"]
        return next(s["run"] for s in steps if "check-restore" in s.get("run", ""))
    return next(line for line in doc["restore-gate"]["script"] if "check-restore" in line)


@pytest.mark.parametrize(("ci_file", "case", "code"), [
    ("github-actions.yml", "sp-2.3-s11-00057", 1),
    ("gitlab-ci.yml", "sp-2.3-s11-00000", 0),
])  # fmt: skip
def test_the_ci_examples_run_as_written(jobs, tmp_path, ci_file, case, code):
    import subprocess
    import sys

    folder, _ = jobs[case]
    cli = str(Path(sys.executable).parent / "flink-jobgraph")
    command = _ci_command(ci_file).replace("../flink-jobgraph/.venv/bin/flink-jobgraph", cli)
    env = dict(os.environ, SAVEPOINTS=str(folder / "savepoints" / "savepoint-1"), NEW_SPEC=str(folder / "v2.jsonl"),
               SPARK_LOCAL_IP="127.0.0.1")  # fmt: skip
    proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == code, proc.stdout[-2000:] + proc.stderr[-2000:]
    suite = ET.parse(tmp_path / "restore-report.xml").getroot()
    assert suite.get("failures") == str(int(code == 1))
    assert json.loads((tmp_path / "restore-report.json").read_text())["exit_code"] == code
