"""What a run prints: on stderr only our own lines (no Python warning, no Spark/log4j line),
a progress line that moves while the graphs are computed, nothing but the summary with
--quiet (pipeline/progress.py, conf/log4j2.properties)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

from pipeline.compute import read as read_spec
from pipeline.compute import stage as fused
from pipeline.progress import Progress, Snapshot, _Rate, _Watch, plain_line

from .conftest import ROOT

SAMPLES = ROOT / "samples"
OURS = re.compile(r"^\[\s*\d+\.\d+s\] \S")  # "[   12.3s] read+compute: ..."
SUMMARY = re.compile(
    r"^compute: (\d+) graphs \((\d+) processed, (\d+) rejected\), \d+ stream nodes, \d+ job vertices, "
    r"\d+ job edges -> .+$"
)


def _cli(*args: str, interval: str = "0.5") -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("flink-jobgraph")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "pipeline.cli"]
    env = {**os.environ, "FLINK_JOBGRAPH_PROGRESS_INTERVAL": interval}
    env.pop("PYTHONWARNINGS", None)  # a normal run: Python's default warning filters
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=900, stdin=subprocess.DEVNULL
    )


def test_a_run_prints_only_our_lines_and_a_moving_progress_line(tmp_path):
    proc = _cli("compute", "--input", str(SAMPLES), "--output", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.splitlines()
    # every stderr line is one of ours: no Spark banner, no log4j WARN/INFO, no Python warning
    assert err and [ln for ln in err if not OURS.match(ln)] == [], proc.stderr
    for noise in ("Warning", "WARN", "INFO", "Setting default log level", "NativeCodeLoader", "log4j"):
        assert noise not in proc.stderr, noise
    # the steps' own lines, as README quotes them
    steps = [m.group(1) for ln in err if (m := re.match(r"^\[\s*[\d.]+s\] ([a-z+ ]+): [\d.]+s$", ln))]
    assert steps[:4] == ["read+compute", "chains", "chain check", "delta write"], err
    # while read+compute ran, lines that moved: the specs being read, then graphs of the total (on a
    # fast run the tasks may all end between two polls, so either kind of line counts)
    moving = [
        ln.split("] ", 1)[1]
        for ln in err
        if re.search(r"\] read\+compute: (running [^;]+; reading the specs|\d+/\d+ graphs)", ln)
    ]
    assert moving, proc.stderr
    counted = [re.search(r"(\d+)/(\d+) graphs \((\d+)%\)", ln) for ln in moving]
    for m in filter(None, counted):
        assert int(m.group(2)) == 31 and 0 <= int(m.group(1)) <= 31  # samples/ holds 31 graph texts
    lines = proc.stdout.splitlines()
    assert SUMMARY.match(lines[0]) and lines[0].startswith("compute: 31 graphs (28 processed, 3 rejected)"), lines


def test_quiet_prints_the_summary_only(tmp_path):
    proc = _cli("compute", "--input", str(SAMPLES / "wordcount.json"), "--output", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert len(proc.stdout.splitlines()) == 1 and SUMMARY.match(proc.stdout.strip()), proc.stdout


def test_the_watch_counts_the_graphs_of_the_read_and_compute_stages(spark, settings):
    """The numbers behind the moving line, from Spark's status store after a real run of the
    read+compute step: every graph text counted once, all of them done, every task finished."""
    limits = read_spec.Limits.from_settings(settings)
    watch = _Watch(spark.sparkContext, count_graphs=True)
    try:
        texts = read_spec.read_texts(spark, str(SAMPLES), limits)
        rows = fused.rows_from_texts(texts, limits, None).localCheckpoint(eager=True)
    finally:
        watch.close()
    snap = watch.poll()
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None  # the step's group is gone
    n_texts = read_spec.read_texts(spark, str(SAMPLES), limits).count()
    assert n_texts == 31 == rows.where("kind = 'graph'").count()
    assert (snap.graphs_total, snap.graphs_done) == (n_texts, n_texts)
    size = read_spec.list_spec_files(spark, str(SAMPLES))[2]
    parts = read_spec.text_partitions(size, int(spark.conf.get("spark.sql.shuffle.partitions")))
    assert snap.tasks_total == parts == snap.tasks_done
    assert not snap.reading


def test_the_watch_counts_graphs_when_spark_lists_the_input_in_a_job_of_its_own(spark, settings, tmp_path):
    """Over 32 input files on a cluster Spark lists them in a job of its own (parallel
    partition discovery; a local session lists on the driver, so the test sets Spark's
    default threshold back), the block's first stage: the read stage is the one after it
    (before, the moving line said "0/0 graphs")."""
    import json

    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    before = spark.conf.get(key)
    spark.conf.set(key, "32")

    wc = json.loads((SAMPLES / "wordcount.json").read_text())
    for i in range(40):
        (tmp_path / f"g{i:02d}.json").write_text(json.dumps(dict(wc, graph_id=f"wc-{i}")))
    limits = read_spec.Limits.from_settings(settings)
    watch = _Watch(spark.sparkContext, count_graphs=True)
    try:
        texts = read_spec.read_texts(spark, str(tmp_path), limits)
        fused.rows_from_texts(texts, limits, None).localCheckpoint(eager=True)
        group_jobs = set(spark.sparkContext.statusTracker().getJobIdsForGroup(watch.group)) - watch.baseline
    finally:
        watch.close()
        spark.conf.set(key, before)
    snap = watch.poll()
    assert len(group_jobs) >= 3  # the listing, the read, the compute
    assert (snap.graphs_total, snap.graphs_done) == (40, 40)
    assert not snap.reading


def test_spark_logs_errors_only(spark):
    root = spark._jvm.org.apache.logging.log4j.LogManager.getRootLogger()
    assert str(root.getLevel().toString()) == "ERROR"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_tqdm_bar_and_plain_lines_otherwise():
    tty = Progress(stream=_Terminal())
    rate = _Rate()
    tty._draw("read+compute", Snapshot(reading=True, tasks_done=0, tasks_total=2), rate)
    for t, done in ((0.0, 0), (10.0, 2500), (20.0, 5000)):
        rate.add(t, done)
        tty._draw("read+compute", Snapshot(10000, done, done // 1250, 8), rate)
    tty._bar.close()
    screen = tty.stream.getvalue()
    assert "reading the specs, tasks 0/2" in screen
    assert re.search(r"read\+compute:  50%\|[^|]+\| 5000/10000 graphs \[", screen), screen
    assert "tasks 4/8" in screen
    assert tty.tty and not Progress(stream=io.StringIO()).tty

    half = "5,000/10,000 graphs (50%), 250 graphs/s, about 20 s left"
    assert plain_line(Snapshot(10000, 5000, 4, 8), rate, 25.0) == half
    assert plain_line(Snapshot(10000, 0, 0, 8), _Rate(), 3.0) == "0/10,000 graphs (0%), rate: after the first tasks"
    assert plain_line(Snapshot(tasks_done=1, tasks_total=2, stage_name="57"), rate, 125.0) == (
        "running 2 min 05 s; Spark stage 57: tasks 1/2"
    )


def test_quiet_progress_says_nothing(spark):
    out = io.StringIO()
    quiet = Progress(enabled=False, stream=out, interval=0.01)
    with quiet.stage(spark, "read+compute", count_graphs=True):
        spark.range(10).count()
    quiet.say("chains: 1.0s")
    assert out.getvalue() == ""
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None


def test_the_observer_sees_every_step_and_the_per_graph_rows(spark, settings, tmp_path):
    """The run reports to its Progress (the observer the benchmark subclasses too): each
    step's end with its time, in order, and the per-graph stage's rows, whose stats rows hold
    one BFS frontier list per computed graph."""
    from pipeline.compute.run import compute

    class Recorder(Progress):
        def __init__(self) -> None:
            super().__init__(enabled=False)
            self.done: list[tuple[str, float]] = []
            self.rows = None

        def stage_done(self, name: str, seconds: float) -> None:
            self.done.append((name, seconds))
            super().stage_done(name, seconds)

        def per_graph_rows(self, rows) -> None:
            self.rows = rows

    seen = Recorder()
    summary = compute(spark, str(SAMPLES), str(tmp_path / "out"), settings, seen)
    assert [n for n, _ in seen.done] == ["read+compute", "chains", "chain check", "delta write"]
    assert dict(seen.done) == summary.stage_seconds
    stats = fused.kind_rows(seen.rows, "stats").collect()
    assert len(stats) == summary.graphs_processed
    assert max(len(r["frontier_sizes"]) for r in stats) == summary.bfs_levels_max


def test_a_night_runs_on_the_nights_jvm(tmp_path, settings):
    """A second run on an output computed under the same rules is a night: its JVM runs
    without C2 and its session with the night's Spark confs (spark.night_java_options,
    spark.night_spark_conf), as the running JVM itself reports them; the first run is not."""
    args = ("compute", "--input", str(SAMPLES / "wordcount.json"), "--output", str(tmp_path / "out"))
    first = _cli(*args)
    assert first.returncode == 0, first.stderr
    assert "night:" not in first.stderr
    again = _cli(*args)
    assert again.returncode == 0, again.stderr
    night = [ln for ln in again.stderr.splitlines() if "] night: " in ln]
    assert len(night) == 1, again.stderr
    assert night[0].endswith(f"JVM {settings.spark.night_java_options}; spark.sql.shuffle.partitions=2"), night
    assert "1 unchanged and kept" in again.stdout, again.stdout
    full = _cli(*args, "--full")  # every graph again: the first run's JVM
    assert full.returncode == 0 and "night:" not in full.stderr, full.stderr
    # a static Spark conf in the night's (which a running session cannot take): one line, exit 2
    static = _cli(*args, "--set", 'spark.night_spark_conf={"spark.eventLog.enabled": true}')
    assert static.returncode == 2, static.stderr
    assert "Traceback" not in static.stderr, static.stderr
    assert "setting spark.night_spark_conf: spark.eventLog.enabled cannot be set on a running session" in (
        static.stderr
    ), static.stderr


def test_a_driver_jvm_that_does_not_start_is_said_in_one_line(tmp_path):
    """JVM options the JVM cannot start with (an initial heap above the driver's memory; Spark
    adds -XX:+IgnoreUnrecognizedVMOptions, so a misspelt -XX flag is ignored, not refused): the
    JVM's own reason, then one line of ours naming the options, exit 2; no Python traceback."""
    bad = "-Xms64g"
    run = _cli("compute", "--input", str(SAMPLES / "wordcount.json"), "--output", str(tmp_path / "out"),
               "--set", f"spark.driver_java_options={bad}")  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    # the JVM says why on its standard output (HotSpot's error stream), ours goes to stderr
    assert "Initial heap size set to a larger value than the maximum heap size" in run.stdout + run.stderr
    said = "the driver JVM did not start (its reason, if it gave one, is just above on the console); its options:"
    assert f"{said} '{bad}'" in run.stderr, run.stderr
    assert not (tmp_path / "out").exists()
