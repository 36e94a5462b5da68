"""One command as a scheduler runs it: a fresh process, timed from outside, with what its Spark
driver did before the run's first progress line.

    python bench/fresh_run.py [--code DIR] -- compute --input SPECS --output OUT
    python bench/fresh_run.py --spark-submit -- --input SPECS --output OUT

A nightly job (cron, Airflow, a Databricks job cluster) starts a new process every night: it
pays the Python imports, Spark's start and every first use of a cold JVM (Delta's classes, the
first snapshot of each table), which a benchmark inside one warm session never sees. This
runs one command in a new process and records:

- ``wall_s``: from the start of the process to its exit;
- ``cpu_s``: CPU seconds of its whole process tree (the Python driver, Spark's JVM, the Python
  workers), sampled from /proc every 0.2 s plus what this process reaped: the figure that load
  from other processes distorts least;
- ``lines``: every line of its stderr (and the progress lines on its stdout: spark-submit's
  Python runner merges the driver's stderr into it) with the second it arrived and, for a
  progress line (``[ t s] ...``), the tree's CPU seconds by then; ``first_progress_s`` and
  ``cpu_before_first_progress_s``: when the first progress line arrived, and the CPU by then;
- with ``event_log`` (Spark's own event log, written to a temporary folder and read after):
  the Spark jobs and SQL executions the driver ran, each with its start second and the call
  that started it; ``jobs_before_first_progress`` / ``sql_before_first_progress`` and their
  descriptions, which say what a run read before its first line without depending on load.

``--code DIR`` runs the pipeline of another checkout (``python -m pipeline.cli`` with DIR as
the working directory and PYTHONPATH, so the Python workers import it too), e.g. a git worktree
of the commit before a change; the jars and the JVM's class-data-sharing archive are this
checkout's either way (``.cache``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")
PROGRESS = re.compile(r"^\[\s*([\d.]+)s\] ")
DRIVER_MEMORY = "6g"  # what the CLI's local session gets (pipeline/session.py): spark-submit's default is 1g


def _stats() -> dict[int, list[str]]:
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                out[int(entry)] = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
    return out


def tree_cpu(root: int, seen: dict[int, float], reaped_children: bool = True) -> None:
    """The CPU seconds (user + system, with reaped children's unless ``reaped_children`` is
    False) of ``root`` and every descendant, the last value seen per pid: the JVM and its Python
    workers are not reaped by the driver before its exit, so rusage alone would miss them."""
    fields = slice(11, 15) if reaped_children else slice(11, 13)
    stats = _stats()
    children: dict[int, list[int]] = {}
    for pid, st in stats.items():
        children.setdefault(int(st[1]), []).append(pid)
    stack = [root]
    while stack:
        pid = stack.pop()
        if pid in stats:
            st = stats[pid]
            seen[pid] = sum(int(x) for x in st[fields]) / TICK
        stack.extend(children.get(pid, []))


def code_env(code: Path | None, event_dir: Path | None, spark_submit: bool) -> dict[str, str]:
    """The environment of a run of ``code``'s pipeline (None: this checkout's)."""
    env = dict(os.environ, FLINK_JOBGRAPH_JARS=str(ROOT / ".cache" / "jars"), SPARK_LOCAL_IP="127.0.0.1")
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    if spark_submit:  # spark-submit finds its Spark through SPARK_HOME (else python3 on PATH must have pyspark)
        import pyspark

        env.setdefault("SPARK_HOME", str(Path(pyspark.__file__).parent))
        env.setdefault("PYSPARK_PYTHON", sys.executable)
    if event_dir is not None and not spark_submit:
        # the CLI's local session is launched by pyspark, which passes these to spark-submit
        env["PYSPARK_SUBMIT_ARGS"] = " ".join([*_event_conf(event_dir), "pyspark-shell"])
    return env


def _event_conf(event_dir: Path) -> list[str]:
    return ["--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir=file://{event_dir}",
            "--conf", "spark.eventLog.compress=false"]  # fmt: skip


def command(args: list[str], code: Path | None, spark_submit: bool, event_dir: Path | None) -> list[str]:
    """The command line: ``flink-jobgraph ARGS`` as ``python -m pipeline.cli`` (so that ``code``
    is the pipeline run), or ``spark-submit ... jobs/compute_jobgraphs.py ARGS``."""
    if not spark_submit:
        return [sys.executable, "-m", "pipeline.cli", *args]
    jars = ",".join(sorted(str(p) for p in (ROOT / ".cache" / "jars").glob("*.jar")))
    submit = str(Path(sys.executable).parent / "spark-submit")
    job = str((code or ROOT) / "jobs" / "compute_jobgraphs.py")
    conf = _event_conf(event_dir) if event_dir is not None else []
    python = [f"spark.pyspark.{k}={sys.executable}" for k in ("python", "driver.python")]
    launch = ["--master", "local[2]", "--driver-memory", DRIVER_MEMORY, "--jars", jars]
    return [submit, *launch, "--conf", python[0], "--conf", python[1], *conf, job, *args]


def run(
    args: list[str], code: Path | None = None, spark_submit: bool = False, event_log: bool = True
) -> dict[str, Any]:
    """One fresh process of ``flink-jobgraph ARGS`` (or its spark-submit job): see the module."""
    event_dir = Path(tempfile.mkdtemp(prefix="fresh-run-events-")) if event_log else None
    cmd = command(args, code, spark_submit, event_dir)
    env = code_env(code, event_dir, spark_submit)
    seen: dict[int, float] = {}
    lock = threading.Lock()  # the sampling loop and the stderr reader both update ``seen``

    def sample() -> float:
        with lock:
            tree_cpu(proc.pid, seen)
            return sum(seen.values())

    lines: list[tuple[float, float, str]] = []
    before = os.times()
    start_epoch, start = time.time(), time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=str(code or ROOT))  # fmt: skip

    out: list[str] = []

    def read(stream: Any, keep: list[str] | None) -> None:
        # spark-submit's Python runner merges the driver's stderr into its stdout: progress
        # lines are looked for on both; the tree's CPU seconds so far at each of them
        for line in stream:
            at = time.perf_counter() - start
            if keep is not None and not PROGRESS.match(line):
                keep.append(line)
                continue
            lines.append((at, sample() if PROGRESS.match(line) else 0.0, line.rstrip("\n")))

    readers = [threading.Thread(target=read, args=(proc.stderr, None), daemon=True),
               threading.Thread(target=read, args=(proc.stdout, out), daemon=True)]  # fmt: skip
    for reader in readers:
        reader.start()
    while True:  # wait() returns at the exit itself: the wall is not rounded up to a sample
        sample()
        try:
            proc.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            continue
    wall = time.perf_counter() - start
    for reader in readers:
        reader.join(timeout=5)
    stdout = "".join(out)
    lines.sort(key=lambda x: x[0])
    after = os.times()
    # the driver's own CPU from its rusage (it reaps neither the JVM nor the workers: those are
    # the samples), so nothing is counted twice and the driver's last moments are not lost
    reaped = after.children_user + after.children_system - before.children_user - before.children_system
    others = sum(v for pid, v in seen.items() if pid != proc.pid)
    first = next(((t, cpu) for t, cpu, line in lines if PROGRESS.match(line)), None)
    row: dict[str, Any] = {
        "command": " ".join(cmd),
        "exit": proc.returncode,
        "wall_s": round(wall, 2),
        "cpu_s": round(others + max(reaped, seen.get(proc.pid, 0.0)), 1),
        "first_progress_s": None if first is None else round(first[0], 2),
        "cpu_before_first_progress_s": None if first is None else round(first[1], 1),
        "stdout": stdout.strip(),
        "lines": [[round(t, 2), round(cpu, 1), line] for t, cpu, line in lines],
    }
    if event_dir is not None:
        row.update(spark_events(event_dir, start_epoch, None if first is None else first[0]))
        shutil.rmtree(event_dir, ignore_errors=True)
    return row


def spark_events(event_dir: Path, start_epoch: float, first_progress: float | None) -> dict[str, Any]:
    """What Spark's event log says the driver ran: its jobs and SQL executions (second since the
    process started, the call site or description), and how many came before the first
    progress line."""
    jobs: list[list[Any]] = []
    sql: list[list[Any]] = []
    app_start = None
    for f in sorted(event_dir.iterdir()):
        with open(f, encoding="utf-8") as fh:
            for raw in fh:
                ev = json.loads(raw)
                kind = ev.get("Event", "")
                if kind == "SparkListenerApplicationStart":
                    app_start = ev["Timestamp"] / 1000 - start_epoch
                elif kind == "SparkListenerJobStart":
                    props = ev.get("Properties") or {}
                    what = props.get("spark.job.description") or props.get("callSite.short") or ""
                    jobs.append([round(ev["Submission Time"] / 1000 - start_epoch, 2), what])
                elif kind.endswith("SparkListenerSQLExecutionStart"):
                    sql.append([round(ev["time"] / 1000 - start_epoch, 2), ev.get("description", "")[:200]])
    cut = first_progress if first_progress is not None else float("inf")
    return {
        "spark_context_s": None if app_start is None else round(app_start, 2),
        "spark_jobs": len(jobs),
        "jobs_before_first_progress": sum(1 for t, _ in jobs if t < cut),
        "sql_before_first_progress": sum(1 for t, _ in sql if t < cut),
        "jobs": jobs,
        "sql": sql,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--code", type=Path, help="another checkout's pipeline (a git worktree)")
    ap.add_argument("--spark-submit", action="store_true", help="spark-submit jobs/compute_jobgraphs.py ARGS")
    ap.add_argument("--no-event-log", action="store_true")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="after --: the command's arguments")
    a = ap.parse_args(argv)
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    row = run(args, a.code.resolve() if a.code else None, a.spark_submit, not a.no_event_log)
    print(json.dumps(row, indent=1))
    return int(row["exit"] != 0)


if __name__ == "__main__":
    sys.exit(main())
