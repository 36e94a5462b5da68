"""What the command line says on stderr while it runs.

Two kinds of line:

- :meth:`Progress.say`: one line per finished step, ``[   37.2s] read+compute: 37.2s``;
- while a long step runs (:meth:`Progress.stage`), a line that moves. A daemon thread polls
  Spark's status tracker (the numbers of Spark's web UI, which the pipeline turns off) for
  the jobs the step started. In the step that reads and computes the graphs it counts
  graphs: the spec texts are spread round-robin over the compute stage's tasks
  (``read_spec.read_texts``), so the texts the read stage wrote are the total and the
  finished tasks' share of them is the number done; from those, the rate and the time
  left. Other steps show how long they have run and the running Spark stage's tasks.

When stderr is a terminal the moving line is a tqdm bar; otherwise (a log file, CI, a pipe)
a plain line after ``FLINK_JOBGRAPH_PROGRESS_INTERVAL`` seconds (default 5), then further
apart as the step goes on (a quarter of its time so far, at most 30 s): only a step that
runs longer than the interval gets one. ``Progress(enabled=False)`` (``--quiet``) says nothing.
Where the driver's SparkContext cannot be reached (Spark Connect), steps run without the
moving line.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

INTERVAL_ENV = "FLINK_JOBGRAPH_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 5.0
POLL_SECONDS = 0.5
MAX_GAP_SECONDS = 30.0


@dataclass
class Snapshot:
    """One poll of a step's Spark jobs."""

    graphs_total: int | None = None  # known once the read stage is complete
    graphs_done: int | None = None
    tasks_done: int = 0
    tasks_total: int = 0
    reading: bool = False  # the read stage of a graph-counting step is still running
    stage_name: str = ""  # the running Spark stage's id


class Progress:
    """The run's observer: the steps report to it (their lines, their moving progress, their
    end with its time, the per-graph stage's rows), and it tells the user. The benchmark
    subclasses it to record CPU and memory per step and the hasher's frontier sizes, so that
    neither patches pipeline internals."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None, interval: float | None = None) -> None:
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        if interval is None:
            interval = float(os.environ.get(INTERVAL_ENV) or DEFAULT_INTERVAL)
        self.interval = interval
        self._bar: Any = None  # the tqdm bar while one is shown

    @property
    def tty(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def _stamp(self) -> str:
        return f"[{time.perf_counter() - self.start:7.1f}s]"

    def say(self, msg: str) -> None:
        if not self.enabled:
            return
        line = f"{self._stamp()} {msg}"
        if self._bar is not None:
            from tqdm import tqdm

            tqdm.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def stage_done(self, name: str, seconds: float) -> None:
        """A step of the run ended after ``seconds`` (wall)."""
        self.say(f"{name}: {seconds:.1f}s")

    def per_graph_rows(self, rows: Any) -> None:
        """The per-graph stage's output (a checkpointed DataFrame of every row kind:
        ``pipeline.compute.row_codec.FUSED_ROWS.rows(rows, "stats")`` holds each graph's BFS frontier sizes),
        handed over once per compute. The CLI needs nothing from it."""

    @contextmanager
    def stage(self, spark: Any, name: str, count_graphs: bool = False) -> Iterator[None]:
        """Show a moving line for ``name`` while the block runs its Spark jobs.

        ``count_graphs``: the block's first shuffle carries one row per input graph spread
        round-robin over the next stage's tasks (``fused.rows_from_texts`` over
        ``read_spec.read_texts``), so graphs done and total can be told, not only tasks.
        """
        watch = _Watch.start(spark, count_graphs) if self.enabled else None
        if watch is None:
            yield
            return
        stop = threading.Event()
        thread = threading.Thread(target=self._run, args=(watch, name, stop), name=f"progress-{name}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=5)
            watch.close()
            if self._bar is not None:
                self._bar.close()
                self._bar = None

    def _size(self) -> dict[str, int]:
        """Nothing: tqdm follows the terminal's size. A terminal that reports none (a pty
        nobody sized) would get blank lines from tqdm: 100 x 24 then."""
        try:
            size = os.get_terminal_size(self.stream.fileno())
        except (AttributeError, OSError, ValueError):
            return {}
        return {} if size.columns > 0 and size.lines > 0 else {"ncols": 100, "nrows": 24}

    # -- the polling thread ------------------------------------------------------------

    def _run(self, watch: _Watch, name: str, stop: threading.Event) -> None:
        t0 = time.perf_counter()
        next_line = t0 + self.interval
        longest_gap = max(self.interval, MAX_GAP_SECONDS)
        rate = _Rate()
        while not stop.wait(POLL_SECONDS):
            try:
                snap = watch.poll()
            except Exception:  # noqa: BLE001 - the context stopped, py4j went away: the step decides
                return
            now = time.perf_counter()
            if snap.graphs_done is not None:
                rate.add(now, snap.graphs_done)
            if self.tty:
                self._draw(name, snap, rate)
            elif now >= next_line:
                # every interval at first, then further apart: a long stage in a log file
                # gets a line every 30 s, not hundreds
                next_line = now + min(max(self.interval, (now - t0) / 4), longest_gap)
                print(f"{self._stamp()} {name}: {plain_line(snap, rate, now - t0)}", file=self.stream, flush=True)

    def _draw(self, name: str, snap: Snapshot, rate: _Rate) -> None:
        from tqdm import tqdm

        graphs = snap.graphs_total is not None and snap.graphs_done is not None
        if self._bar is not None and graphs and self._bar.total != snap.graphs_total:
            self._bar.close()  # from the reading bar to the graphs bar
            self._bar = None
        if self._bar is None:
            if graphs:
                fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} graphs "
                fmt += "[{elapsed}<{remaining}, {rate_fmt}{postfix}]"
                # smoothing=0: the rate (and time left) over the whole stage, not between two
                # task completions, which come in waves
                self._bar = tqdm(
                    total=snap.graphs_total,
                    desc=name,
                    unit=" graphs",
                    file=self.stream,
                    bar_format=fmt,
                    leave=False,
                    smoothing=0,
                    **self._size(),
                )
            else:
                fmt = "{desc}: {elapsed}{postfix}"
                self._bar = tqdm(total=None, desc=name, file=self.stream, bar_format=fmt, leave=False, **self._size())
        if graphs:
            if snap.graphs_done > self._bar.n:
                self._bar.update(snap.graphs_done - self._bar.n)
            self._bar.set_postfix_str(f"tasks {snap.tasks_done}/{snap.tasks_total}")
        else:
            self._bar.set_postfix_str(_activity(snap))


def plain_line(snap: Snapshot, rate: _Rate, elapsed: float) -> str:
    """``4,000/10,000 graphs (40%), 105 graphs/s, about 57 s left`` (or what is known so far)."""
    if snap.graphs_total is not None and snap.graphs_done is not None:
        total, done = snap.graphs_total, snap.graphs_done
        pct = 100 * done / total if total else 100.0
        per_s = rate.per_second()
        left = f", about {_duration((total - done) / per_s)} left" if per_s else ""
        return f"{done:,}/{total:,} graphs ({pct:.0f}%), {_rate_text(per_s)}{left}"
    return f"running {_duration(elapsed)}; {_activity(snap)}"


def _activity(snap: Snapshot) -> str:
    if snap.reading:
        return f"reading the specs, tasks {snap.tasks_done}/{snap.tasks_total}"
    if snap.tasks_total:
        return f"Spark stage {snap.stage_name}: tasks {snap.tasks_done}/{snap.tasks_total}"
    return "no Spark task running (work on the driver)"


def _rate_text(per_s: float | None) -> str:
    if not per_s:
        return "rate: after the first tasks"
    return f"{per_s:,.0f} graphs/s" if per_s >= 10 else f"{per_s:.1f} graphs/s"


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 120:
        return f"{seconds} s"
    m, s = divmod(seconds, 60)
    if m < 120:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


class _Rate:
    """Graphs per second since the first graphs were done (finished tasks come in waves, so
    a short window would swing between zero and a burst)."""

    def __init__(self) -> None:
        self.first: tuple[float, int] | None = None  # (when the compute stage was first seen, done then)
        self.last: tuple[float, int] | None = None

    def add(self, now: float, done: int) -> None:
        if self.first is None:
            self.first = (now, done)
        self.last = (now, done)

    def per_second(self) -> float | None:
        if self.first is None or self.last is None or self.last[1] <= self.first[1]:
            return None
        return (self.last[1] - self.first[1]) / max(self.last[0] - self.first[0], 1e-6)


class _Watch:
    """What Spark runs inside one ``Progress.stage`` block, polled through SparkContext's
    status tracker and, for record counts, the driver's status store."""

    def __init__(self, sc: Any, count_graphs: bool) -> None:
        self.sc = sc
        self.tracker = sc.statusTracker()
        self.store = sc._jsc.sc().statusStore() if count_graphs else None
        self.group: str | None = None
        self.own_group = False
        self.baseline: set[int] = set()
        if count_graphs:
            # the block's jobs, told apart by a job group: ours, or the caller's when one is
            # set (a notebook's, a scheduler's), minus the jobs it already had
            self.group = sc.getLocalProperty("spark.jobGroup.id")
            if self.group is None:
                self.group, self.own_group = f"flink-jobgraph-{uuid.uuid4().hex[:8]}", True
                sc.setJobGroup(self.group, "flink-jobgraph: read+compute")
            self.baseline = set(self.tracker.getJobIdsForGroup(self.group))

    @classmethod
    def start(cls, spark: Any, count_graphs: bool) -> _Watch | None:
        try:
            return cls(spark.sparkContext, count_graphs)
        except Exception:  # noqa: BLE001 - no SparkContext here (Spark Connect): no moving line
            return None

    def close(self) -> None:
        if self.own_group and self.sc.getLocalProperty("spark.jobGroup.id") == self.group:
            self.sc.setLocalProperty("spark.jobGroup.id", None)
            self.sc.setLocalProperty("spark.job.description", None)

    def poll(self) -> Snapshot:
        snap = Snapshot()
        active = [i for i in (self.tracker.getStageInfo(s) for s in self.tracker.getActiveStageIds()) if i]
        if active:
            current = max(active, key=lambda i: i.stageId)
            snap.tasks_done, snap.tasks_total = current.numCompletedTasks, current.numTasks
            snap.stage_name = str(current.stageId)
        if self.store is not None:
            self._count_graphs(snap)
        return snap

    def _count_graphs(self, snap: Snapshot) -> None:
        """The block's first stage reads the specs into a shuffle, one row per graph text;
        once it is complete, the rows it wrote are the total. The compute stage after it
        (the latest one running or complete) takes them round-robin, so every task holds
        the same number of graphs, give or take one: its finished tasks' share of the total
        is the number done (exact once the stage is complete)."""
        ids: set[int] = set()
        for job_id in set(self.tracker.getJobIdsForGroup(self.group)) - self.baseline:
            job = self.tracker.getJobInfo(job_id)
            ids.update(job.stageIds if job else ())
        if not ids:
            return
        status = {}
        for sid in sorted(ids):
            try:
                status[sid] = self.store.lastStageAttempt(sid)
            except Exception:  # noqa: BLE001 - a stage not in the store (yet, or any more)
                continue
        # Over 32 input paths, Spark lists the files in a job of its own before the read
        # stage (parallel partition discovery): a complete stage that wrote no shuffle rows
        # before any other is that listing, not the read (which then showed "0/0 graphs").
        ordered = sorted(status)
        while ordered and _listing(status[ordered[0]]):
            ordered.pop(0)
        if not ordered:
            snap.reading = True
            return
        read_id = ordered[0]
        read = status[read_id]
        if str(read.status().toString()) != "COMPLETE":
            snap.reading = True
            snap.tasks_done, snap.tasks_total = read.numCompleteTasks(), read.numTasks()
            return
        snap.graphs_total = total = int(read.shuffleWriteRecords())
        snap.graphs_done = 0
        later = [s for s in status if s != read_id and str(status[s].status().toString()) in ("ACTIVE", "COMPLETE")]
        if later:
            stage = status[max(later)]
            snap.tasks_done, snap.tasks_total = stage.numCompleteTasks(), stage.numTasks()
            if str(stage.status().toString()) == "COMPLETE":
                snap.graphs_done = int(stage.shuffleReadRecords())
            else:
                snap.graphs_done = total * snap.tasks_done // max(snap.tasks_total, 1)


def _listing(stage: Any) -> bool:
    """A complete stage that wrote no shuffle rows: Spark's file listing job, never the read
    stage of a non-empty input."""
    return str(stage.status().toString()) == "COMPLETE" and int(stage.shuffleWriteRecords()) == 0
