"""A real Spark cluster, not one JVM: a standalone master and two workers on localhost (started
with the pinned pyspark's own ``spark-class``), and ``spark-submit --master spark://...`` of
``jobs/compute_jobgraphs.py`` and ``jobs/check_restore.py``.

What a ``local[2]`` session hides shows here: the application must register with the master
and run its tasks on the workers' executors (spark-submit's ``--master`` wins over the
configured local master), the jars must reach the executors, and the tables must equal a local
run's, row for row.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from devtools import restore_cases as rc

ROOT = Path(__file__).resolve().parent.parent
PYSPARK = Path(__import__("pyspark").__file__).parent
SPARK_CLASS = PYSPARK / "bin" / "spark-class"
SPARK_SUBMIT = PYSPARK / "bin" / "spark-submit"
RESTORE_SET = ROOT.parent / "shared" / "vectors" / "restore" / "savepoint-2.3-s11"
TABLES = ("operators", "job_vertices", "job_edges", "graph_errors")
RESTORE_TABLES = ("restore_checks", "restore_operator_matches", "restore_fixes", "savepoint_operators")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, seconds: float = 90) -> dict:
    deadline = time.time() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.loads(r.read())
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(1)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cluster")
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(tmp / "logs"), SPARK_NO_DAEMONIZE="1")
    port, ui = _free_port(), _free_port()
    procs = [
        subprocess.Popen(
            [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(ui)],
            env=env, stdout=open(tmp / "master.log", "w"), stderr=subprocess.STDOUT,
        )  # fmt: skip
    ]
    url = f"spark://127.0.0.1:{port}"
    try:
        _wait_for(f"http://127.0.0.1:{ui}/json")
        for i in range(2):
            procs.append(
                subprocess.Popen(
                    [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", "--cores", "1", "--memory", "1500m",
                     "--work-dir", str(tmp / f"work{i}"), "--webui-port", str(_free_port()), url],
                    env=env, stdout=open(tmp / f"worker{i}.log", "w"), stderr=subprocess.STDOUT,
                )  # fmt: skip
            )
        deadline = time.time() + 90
        while len([w for w in _wait_for(f"http://127.0.0.1:{ui}/json")["workers"] if w["state"] == "ALIVE"]) < 2:
            assert time.time() < deadline, (tmp / "master.log").read_text()[-3000:]
            time.sleep(1)
        yield url, f"http://127.0.0.1:{ui}/json", tmp
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def _submit(cluster, job: str, *args: str) -> subprocess.CompletedProcess:
    url, _, tmp = cluster
    jars = ",".join(str(p) for p in sorted((ROOT / ".cache" / "jars").glob("*.jar")))
    python = sys.executable
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYSPARK_GATEWAY_SECRET", None)
    cmd = [str(SPARK_SUBMIT), "--master", url, "--jars", jars, "--driver-memory", "1g",
           "--conf", "spark.executor.memory=1g", "--conf", "spark.executor.cores=1",
           "--conf", f"spark.pyspark.python={sys.executable}", str(ROOT / "jobs" / job), *args, "--quiet"]  # fmt: skip
    return subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=1200)


def _rows(spark, out: str, table: str) -> list:
    df = spark.read.format("delta").load(f"{out}/{table}")
    return sorted(tuple(str(v) for v in r) for r in df.select(*sorted(df.columns)).collect())


def test_compute_and_check_restore_run_on_the_cluster_and_equal_a_local_run(spark, settings, cluster, tmp_path):
    from pipeline.compute.run import Progress, compute
    from pipeline.restore.check import check_restore

    url, api, _ = cluster
    out = str(tmp_path / "cluster-out")
    proc = _submit(cluster, "compute_jobgraphs.py", "--input", str(ROOT / "samples"), "--output", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    local = str(tmp_path / "local-out")
    compute(spark, str(ROOT / "samples"), local, settings, Progress(enabled=False))
    for t in TABLES:
        assert _rows(spark, out, t) == _rows(spark, local, t), t

    cases = rc.read_cases(f"{RESTORE_SET}.jsonl.gz")[:2]
    fleet = rc.write_case_fleet(cases, rc.read_metadata_tar(f"{RESTORE_SET}-metadata.tar.gz"), tmp_path / "fleet")
    rout = str(tmp_path / "cluster-restore")
    args = ("--graphs", str(fleet / "graphs"), "--checks", str(fleet / "checks.jsonl"), "--output", rout)
    proc = _submit(cluster, "check_restore.py", *args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rlocal = str(tmp_path / "local-restore")
    check_restore(spark, str(fleet / "graphs"), str(fleet / "checks.jsonl"), rlocal, settings, Progress(enabled=False))
    for t in RESTORE_TABLES:
        assert _rows(spark, rout, t) == _rows(spark, rlocal, t), t

    # both applications registered with the master and ran on its workers' executors
    state = _wait_for(api)
    apps = state["completedapps"] + state["activeapps"]
    assert len(apps) >= 2, apps
    assert all(a["cores"] >= 1 for a in apps)
    logs = "".join(p.read_text() for p in Path(cluster[2]).glob("work*/**/stderr"))
    assert "Executor" in logs and "Finished task" in logs
    shutil.rmtree(out, ignore_errors=True)
