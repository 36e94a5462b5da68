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


def test_an_unreadable_savepoint_exits_3_naming_it_and_bad_arguments_exit_2(spark, jobs, tmp_path, capsys):
    folder, _ = jobs["sp-2.3-s11-00000"]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "_metadata").write_bytes(b"\x00" * 64)
    code = main(["check-restore", "--quiet", "--savepoint", str(bad), "--graphs", str(folder / "v2.jsonl")])
    printed = capsys.readouterr().out.splitlines()
    assert code == 3, printed
    assert printed[1].startswith(f"  why: unreadable savepoint {bad}") or str(bad) in printed[1], printed
    # a mistyped path: ERROR, exit 3, the path named in the printed line and in the report
    typo = folder / "savepoints" / "savepiont-1"
    report = tmp_path / "typo"
    out = tmp_path / "tables"
    code = main(["check-restore", "--quiet", "--savepoint", str(typo), "--graphs", str(folder / "v2.jsonl"),
                 "--report", str(report), "--output", str(out)])  # fmt: skip
    printed = capsys.readouterr().out.splitlines()
    assert code == 3, printed
    assert printed[1] == f"  why: unreadable savepoint {typo}: savepoint path does not exist", printed
    check = json.loads(report.with_suffix(".json").read_text())["check"]
    assert check["verdict"] == "ERROR" and check["message"] == printed[1].removeprefix("  why: ")
    # --output: the tables hold what was printed (without it, nothing is written)
    rows = spark.read.format("delta").load(str(out / "restore_checks")).collect()
    assert [(r["check_id"], r["verdict"], r["message"]) for r in rows] == [
        (check["check_id"], "ERROR", check["message"])
    ]
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


def _two_savepoints(folder: Path) -> Path:
    """The job's savepoint folder with an older, broken savepoint beside the real one."""
    old = folder / "savepoints" / "savepoint-0"
    old.mkdir(exist_ok=True)
    (old / "_metadata").write_bytes(b"not a savepoint")
    past = time.time() - 3600
    os.utime(old / "_metadata", (past, past))
    return folder / "savepoints"


@pytest.mark.parametrize(("ci_file", "case", "code"), [
    ("github-actions.yml", "sp-2.3-s11-00057", 1),
    ("gitlab-ci.yml", "sp-2.3-s11-00000", 0),
])  # fmt: skip
def test_the_ci_examples_run_as_written(jobs, tmp_path, ci_file, case, code):
    """Each CI example's check command as written, its variables set to a real savepoint folder
    (the newest of two savepoints is taken) and a real edited job: a failing deploy exits 1 and
    names the operator, Flink's message and the proven fix; a restoring one exits 0; the JUnit
    and JSON reports say the same."""
    import subprocess
    import sys

    folder, c = jobs[case]
    flink = rc.flink_answer(c, False)
    assert flink.verdict == ("FAILS" if code else "RESTORES")
    cli = str(Path(sys.executable).parent / "flink-jobgraph")
    command = _ci_command(ci_file).replace("../flink-jobgraph/.venv/bin/flink-jobgraph", cli)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = dict(os.environ, SAVEPOINTS=str(_two_savepoints(folder)), NEW_SPEC=str(folder / "v2.jsonl"),
               SPARK_LOCAL_IP="127.0.0.1", TMPDIR=str(temp))  # fmt: skip
    proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == code, proc.stdout[-2000:] + proc.stderr[-2000:]
    # a CI step leaves nothing behind: the gate's manifest, exported specs and checkpoints are gone
    assert sorted(p.name for p in temp.glob("flink-jobgraph-*")) == []
    printed = proc.stdout.splitlines()
    pointer = f"file:{folder}/savepoints/savepoint-1"
    suite = ET.parse(tmp_path / "restore-report.xml").getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", str(int(code == 1)), "0")
    report = json.loads((tmp_path / "restore-report.json").read_text())
    assert report["exit_code"] == code
    if code == 0:
        assert printed[0] == f"check-restore: RESTORES: {c['v2']['graph_id']} from {pointer}"
        # the vectors keep only _metadata: the state files are missing, and the gate says so
        assert any(line.startswith("  not decidable here: STATE_UNREADABLE: state stream ") for line in printed)
        return
    assert printed[0] == f"check-restore: FAILS ({flink.failure}, at job start): {c['v2']['graph_id']} from {pointer}"
    assert printed[1] == f"  operator {flink.operator_id}"
    assert printed[2] == "  Flink: " + flink.message.replace(rc.PLACEHOLDER, pointer)
    assert '  fix on "Elastic: Committer": .setUidHash("c05490c66c5430e8899ba457291f89df") '\
           "[proven: the patched job restores]" in printed  # fmt: skip
    failure = suite.find("testcase/failure")
    assert failure is not None and failure.get("type") == flink.failure and flink.operator_id in failure.get("message")
    assert report["check"]["verdict"] == "FAILS" and report["fixes"]


def test_the_gate_from_a_thin_jar_says_what_it_says_from_that_jars_spec(jobs, tmp_path):
    """``--jar`` exports the new version on the way (a thin jar: its connector comes with
    ``--classpath``, as export takes it): the check prints the same lines, exits with the same
    code and writes the same report as the check of the spec ``export`` writes from that jar;
    nothing runs (the job's sink folder stays empty) and nothing is left in the temp folder."""
    import subprocess
    import sys

    from .conftest import build_testjobs_jar

    b = build_testjobs_jar(tmp_path, "2.3")
    folder, _c = jobs["sp-2.3-s11-00057"]
    temp, sink = tmp_path / "tmp", tmp_path / "sink"
    temp.mkdir()
    sink.mkdir()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", TMPDIR=str(temp))
    cli = [sys.executable, "-m", "pipeline.cli"]
    job = ["--main-class", "org.flinkjobgraph.testjobs.SocketToFileJob", "--flink", "2.3",
           "--classpath", str(b["connector"])]  # fmt: skip
    program = ["--", "9", str(sink)]  # main(port, folder)
    spec = tmp_path / "new.jsonl"
    export = [*cli, "export", "--jar", str(b["jar"]), *job, "--out", str(spec), "--first", *program]
    subprocess.run(export, env=env, check=True, capture_output=True, timeout=300)
    runs = {}
    for how, new in (("spec", ["--graphs", str(spec)]), ("jar", ["--jar", str(b["jar"]), *job])):
        (tmp_path / how).mkdir()
        cmd = [*cli, "check-restore", "--savepoint", str(folder / "savepoints"), *new,
               "--report", "report", "--quiet"]  # fmt: skip
        if how == "jar":
            cmd += program
        runs[how] = subprocess.run(cmd, env=env, cwd=tmp_path / how, capture_output=True, text=True, timeout=900)
    by_spec, by_jar = runs["spec"], runs["jar"]
    assert by_spec.returncode == 1, by_spec.stdout + by_spec.stderr[-2000:]
    assert by_jar.returncode == 1, by_jar.stdout + by_jar.stderr[-2000:]
    assert by_jar.stdout.startswith("check-restore: FAILS (UNMAPPED_STATE, at job start): ")
    # the jar is exported at the parallelism the savepoint's job ran at (1), as the spec was, and says so
    taken = "  note: exported at parallelism 1, the savepoint's (most of its operators ran at 1); "
    jar_lines = by_jar.stdout.splitlines()
    assert [ln for ln in jar_lines if ln.startswith(taken)] == [jar_lines[-2]], jar_lines
    assert [ln for ln in jar_lines if not ln.startswith(taken)] == by_spec.stdout.splitlines()
    reports = [json.loads((tmp_path / how / "report.json").read_text()) for how in ("spec", "jar")]
    assert [n[:40] for n in reports[1].pop("notes")] == [taken[8:48]] and reports[0].pop("notes") == []
    assert reports[0] == reports[1] and reports[0]["exit_code"] == 1
    assert list(sink.iterdir()) == []
    # a main() that exits before submitting: exit 2 with the export's word on it
    exits = [*cli, "check-restore", "--savepoint", str(folder / "savepoints"), "--jar", str(b["jar"]), "--quiet",
             "--main-class", "org.flinkjobgraph.testjobs.ExitsBeforeSubmitJob", "--flink", "2.3"]  # fmt: skip
    proc = subprocess.run(exits, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert (f"export of {b['jar']} failed: error: org.flinkjobgraph.testjobs.ExitsBeforeSubmitJob.main() exited "
            "with code 3 (System.exit) without submitting a job") in proc.stderr  # fmt: skip
    # a clean exit 2 after Spark started: the one-line reason, no log lines of Spark's under it
    assert [ln for ln in proc.stderr.splitlines() if " ERROR " in ln or ln.startswith("\tat ")] == [], proc.stderr
    assert sorted(p.name for p in temp.glob("flink-jobgraph-*")) == []


GATE_JOB = "org.flinkjobgraph.gatejob.GateJob"


@pytest.fixture(scope="module")
def gate_job(tmp_path_factory):
    """tests/gatejob/GateJob.java built as two jars of the same job name (v1, and v2 with a uid
    added to its keyed function), and a real Flink 1.20 savepoint of v1 run on a MiniCluster at
    parallelism 2 (its non-parallel legacy source then does not chain with the map after it)."""
    import subprocess
    import zipfile

    from pipeline.export import harness as export_cmd

    root = tmp_path_factory.mktemp("gatejob")
    build = export_cmd.ensure_harness(export_cmd.harness_dir(), "1.20", quiet=True).parent
    cp = os.pathsep.join([str(build / "lib" / "*"), str(build / "test-run-lib" / "*")])
    classes = root / "classes"
    source = Path(__file__).resolve().parent / "gatejob" / "GateJob.java"
    subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", str(classes), str(source)], check=True, capture_output=True)
    for version in ("v1", "v2"):
        with zipfile.ZipFile(root / f"gate-{version}.jar", "w") as z:
            for f in sorted(classes.rglob("*.class")):
                z.write(f, f.relative_to(classes).as_posix())
            z.writestr("gate-version.txt", version)
    opens = [a for o in export_cmd.ADD_OPENS for a in ("--add-opens", f"{o}=ALL-UNNAMED")]
    r = subprocess.run(["java", *opens, "-cp", f"{cp}{os.pathsep}{root / 'gate-v1.jar'}", GATE_JOB,
                        f"run:{root / 'savepoints'}:2"], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0 and "SAVEPOINT " in r.stdout, (r.stdout + r.stderr)[-3000:]
    return root


def test_the_gate_as_a_ci_step_from_both_jars_of_a_job_that_keeps_its_name(gate_job):
    """The gate as a CI step runs it (relative paths, in the job's folder): the new and the
    previous jar of one job (same job name, so the same exported graph id), no -p: both are
    exported at the parallelism the savepoint says the job runs at (2), where the stateless
    operators keep their IDs; the uid added to the keyed function fails the restore at job start,
    and the fix (its old ID, proven on the patched spec as export writes it: user_classes,
    state_backend, serializer_modules, declared_states) is printed once; nothing on stderr."""
    import subprocess
    import sys

    cli = str(Path(sys.executable).parent / "flink-jobgraph")
    cmd = [cli, "check-restore", "--quiet", "--savepoint", "savepoints", "--jar", "gate-v2.jar", "--previous-jar",
           "gate-v1.jar", "--main-class", GATE_JOB, "--flink", "1.20", "--report", "ci/restore"]  # fmt: skip
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.run(cmd, cwd=gate_job, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    assert proc.stderr == ""
    printed = proc.stdout.splitlines()
    (savepoint,) = (gate_job / "savepoints").iterdir()
    report = json.loads((gate_job / "ci" / "restore.json").read_text())
    saved = report["check"]["operator_id"]
    assert printed[0] == f"check-restore: FAILS (UNMAPPED_STATE, at job start): Gate Job from file:{savepoint}"
    assert printed[1] == f"  operator {saved}"
    assert printed[3:] == [
        f'  fix on "Alerts": .setUidHash("{saved}") [proven: the patched job restores]',
        "  note: exported at parallelism 2, the savepoint's (most of its operators ran at 2); -p sets the "
        "parallelism the job is deployed at",
        "reports: ci/restore.xml, ci/restore.json",
    ]
    assert report["check"]["savepoint_graph_id"] == "Gate Job@previous"
    assert [(f["old_name"], f["reasons"], f["verified"]) for f in report["fixes"]] == [("Alerts", ["UID_ADDED"], True)]


def test_a_job_exported_at_another_parallelism_gets_told_p_and_no_dropped_state(spark, gate_job, tmp_path, capsys):
    """The same new version exported at -p 1 (its source and map then chain, and their generated
    IDs change): the stateless operators of the savepoint are said to have nothing to restore
    (never "state dropped (allowNonRestoredState)": the flag is not set), a note tells -p 2, and
    without the previous version the missing fix says what would name it."""
    import subprocess
    import sys

    spec = tmp_path / "v2-p1.jsonl"
    export = [sys.executable, "-m", "pipeline.cli", "export", "--jar", str(gate_job / "gate-v2.jar"),
              "--main-class", GATE_JOB, "--flink", "1.20", "-p", "1", "--out", str(spec)]  # fmt: skip
    subprocess.run(export, check=True, capture_output=True, timeout=300)
    (graph,) = [json.loads(x) for x in spec.read_text().splitlines()]
    # the spec as export writes it: the state fields the fix proof carries over
    assert graph["state_backend"] == "hashmap" and "org.flinkjobgraph.gatejob.GateJob$Ride" in graph["user_classes"]
    assert isinstance(graph["serializer_modules"], dict) and all("declared_states" in n for n in graph["nodes"])
    code = main(["check-restore", "--quiet", "--savepoint", str(gate_job / "savepoints"), "--graphs", str(spec)])
    printed = capsys.readouterr().out.splitlines()
    assert code == 1, printed
    assert not [ln for ln in printed if "allowNonRestoredState)" in ln], printed
    assert [ln.split(":")[0] for ln in printed[3:]] == [
        "  no fix for operator " + printed[1].split()[-1],
        "  stateless in the savepoint, not in the new version (nothing to restore)",
        "  note",
    ]
    assert "(--previous-jar or --previous-graphs)" in printed[3]
    assert printed[-1].endswith("if the job is deployed at 2, export it with -p 2")
    assert len(printed[4].split(": ")[1].split(", ")) == 2  # the source and the map


DEPLOYMENT = """\
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: gate-job
  namespace: streaming
spec:
  image: registry.example.com/gate-job:1
  flinkVersion: v1_20
  flinkConfiguration:
    taskmanager.numberOfTaskSlots: 2
    pipeline.max-parallelism: {max_parallelism}
    state:
      savepoints.dir: file:///flink-data/savepoints
      checkpoints.dir: file:///flink-data/checkpoints
    high-availability:
      type: kubernetes
      storageDir: file:///flink-data/ha
  serviceAccount: flink
  jobManager:
    resources:
      requests:
        memory: "2048m"
        cpu: "1"
  taskManager:
    resources:
      requests:
        memory: "2048m"
        cpu: "1"
  job:
    jarURI: local:///opt/flink/usrlib/gate-v1.jar
    entryClass: org.flinkjobgraph.gatejob.GateJob
    parallelism: 2
    upgradeMode: savepoint
    state: running
---
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: stateless-job
spec:
  image: registry.example.com/stateless:1
  flinkVersion: v1_20
  job:
    jarURI: local:///opt/flink/usrlib/gate-v1.jar
    parallelism: 2
    upgradeMode: stateless
"""


def test_the_gate_takes_a_flink_deployment(gate_job, tmp_path, capsys):
    """A FlinkDeployment (the Flink Kubernetes Operator's resource) instead of the flags: its jar
    inside the image and its savepoint directory in the pods mapped with --map, its entry class,
    parallelism and Flink version used, its flinkConfiguration's pipeline.max-parallelism applied
    to the export: v1 itself, at 256 where the savepoint's operators have 128, fails as Flink fails
    it (at 128, the GitOps test below, only v2's added uid fails); the report lists every field's fate.
    A stateless one restores nothing."""
    maps = ["--map", f"local:///opt/flink/usrlib={gate_job}", "--map", f"file:///flink-data={gate_job}"]
    resource = tmp_path / "gate.yaml"
    resource.write_text(DEPLOYMENT.format(max_parallelism=256))
    code = main(["check-restore", "--quiet", "--resource", str(resource), "--resource-name", "gate-job", *maps,
                 "--report", str(tmp_path / "report")])  # fmt: skip
    printed = capsys.readouterr().out.splitlines()
    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 1 and report["check"]["failure"] == "MAX_PARALLELISM_MISMATCH", printed
    fields = report["resource"]
    assert fields["resource"] == "FlinkDeployment streaming/gate-job"
    assert {"spec.job.jarURI", "spec.job.entryClass", "spec.job.parallelism", "spec.flinkVersion",
            "flinkConfiguration.pipeline.max-parallelism", "flinkConfiguration.state.savepoints.dir"} <= set(
        fields["used"])  # fmt: skip
    assert {"spec.image", "spec.podTemplate"} & set(fields["no_effect"]) == {"spec.image"}
    assert not any(n.startswith("exported at parallelism") for n in report["notes"])  # the resource said 2
    code = main(["check-restore", "--resource", str(resource), "--resource-name", "stateless-job", *maps])
    out = capsys.readouterr().out.splitlines()
    assert code == 0 and out[0] == (
        "check-restore: NOTHING TO RESTORE: FlinkDeployment stateless-job: upgradeMode stateless: the operator "
        "upgrades the job without its state"
    ), out


def test_the_gitops_pull_request_check_runs_as_written(gate_job, tmp_path):
    """docs/ci/gitops-pull-request.yml's check step as written, in a repository holding the job's
    FlinkDeployment (v2: a uid added) and its variables set to the built jars and the pods'
    savepoint volume on this runner: the deploy would not restore, exit 1, the reports say so."""
    import subprocess
    import sys

    repo = tmp_path / "repo"
    (repo / "deploy" / "flink").mkdir(parents=True)
    deployment = DEPLOYMENT.format(max_parallelism=128).split("---")[0].replace("gate-v1.jar", "gate-v2.jar")
    (repo / "deploy" / "flink" / "orders.yaml").write_text(deployment)
    cli = str(Path(sys.executable).parent / "flink-jobgraph")
    command = _ci_command("gitops-pull-request.yml").replace("../flink-jobgraph/.venv/bin/flink-jobgraph", cli)
    env = dict(os.environ, RESOURCE="deploy/flink/orders.yaml", JARS=str(gate_job), FLINK_DATA=str(gate_job),
               SPARK_LOCAL_IP="127.0.0.1")  # fmt: skip
    proc = subprocess.run(["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    assert proc.stderr == ""
    report = json.loads((repo / "restore-report.json").read_text())
    assert (report["check"]["failure"], report["resource"]["resource"]) == (
        "UNMAPPED_STATE", "FlinkDeployment streaming/gate-job",
    )  # fmt: skip
    assert "  note: resource: FlinkDeployment streaming/gate-job (deploy/flink/orders.yaml#1)" in proc.stdout


def test_the_printed_lines_say_each_thing_once_and_what_flink_does():
    """gate.render on rows as the check writes them: an advice repeated over two rows is one line;
    a saved operator dropped under --allowNonRestoredState (SKIPPED) and a stateless one Flink skips
    whatever the flag (DROPPED_EMPTY) are said apart; a problem without a fix says why; a fix the
    patched job does not prove says what that job still gives."""
    from pipeline.restore import gate

    advice = {"operator_id": "a" * 32, "state_name": "counts", "fix_code": "Rewrite the state ...", "verified": None}
    result = gate.GateResult(
        check={"verdict": "FAILS", "failure": "UNMAPPED_STATE", "failure_stage": "job_init", "graph_id": "g",
               "operator_id": "b" * 32, "message": "Failed ...", "savepoint_graph_id": None},
        fixes=[advice, dict(advice),
               {"operator_id": "b" * 32, "fix_code": None, "reasons": ["UNKNOWN_ORIGIN"]},
               {"operator_id": "c" * 32, "counterpart_name": "Map", "fix_code": '.setUidHash("c")', "verified": False,
                "verified_verdict": "FAILS", "verified_failure": "MAX_PARALLELISM_MISMATCH"}],
        matches=[{"operator_index": 0, "operator_id": "d" * 32, "status": "DROPPED_EMPTY"},
                 {"operator_index": 1, "operator_id": "e" * 32, "status": "SKIPPED"},
                 {"operator_index": 2, "operator_id": "b" * 32, "status": "LOST"}],
        savepoint="file:/sp",
    )  # fmt: skip
    assert gate.render(result)[3:] == [
        "  fix for state 'counts': Rewrite the state ...",
        f"  no fix for operator {'b' * 32}: the savepoint does not say which operator it was: give the version that "
        "took it (--previous-jar or --previous-graphs) to name it and the line that fixes it",
        '  fix on "Map": .setUidHash("c") [not proven: the patched job still gives FAILS MAX_PARALLELISM_MISMATCH]',
        f"  state dropped (allowNonRestoredState): {'e' * 32}",
        f"  stateless in the savepoint, not in the new version (nothing to restore): {'d' * 32}",
    ]
