"""One benchmark run: a fleet through the pipeline on this machine, against Flink's own time.

    python bench/run_bench.py fleet-1k [--set chains.engine=dataframe] [--no-ingest]

``FLEET`` is a name under bench/data/ (made by bench/make_fleet.py) or any spec file/folder.
In ONE process (one SparkSession, ``conf/pipeline.json`` master, local[2] by default):

1. ``ingest``  spec -> Delta stream_graphs/stream_nodes/stream_edges (skipped with --no-ingest);
2. ``compute`` spec -> operators, job_vertices, job_edges, graph_errors (end to end: read +
   validate, chainability, hashing, chains, vertices+edges, Delta write), timed by stage
   from the RunSummary.

Both write into a fresh folder under bench/tmp/ (deleted afterwards unless --keep-output).
A thread samples /proc every 0.5 s for the process tree of this script (the Python driver,
the Spark driver JVM, the pandas-UDF Python workers) and keeps the largest RSS sum.

Flink's seconds come from bench/data/<fleet>.flink.json (make_fleet.py: the harness's
``time`` command, StreamingJobGraphGenerator.createJobGraph over the same programs, one JVM).
``ratio`` = pipeline compute seconds / Flink seconds (wall clock both).

Writes bench/results/<timestamp>-<fleet>.json and prints a one-screen summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

DATA = ROOT / "bench" / "data"
RESULTS = ROOT / "bench" / "results"
TMP = ROOT / "bench" / "tmp"
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------------------- memory


def _proc_table() -> dict[int, tuple[int, str, int, float]]:
    """pid -> (ppid, comm, rss bytes, cpu seconds) for every readable process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1 : s.rindex(")")]
        fields = s[s.rindex(")") + 2 :].split()
        # fields[0] = state (field 3); ppid = field 4, utime/stime/cutime/cstime 14-17, rss 24
        out[int(d)] = (int(fields[1]), comm, int(fields[21]) * PAGE, sum(int(x) for x in fields[11:15]) / TICK)
    return out


def _tree(table: dict[int, tuple[int, str, int, float]], root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in table.items():
        kids.setdefault(ppid, []).append(pid)
    todo, seen = [root], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo.extend(kids.get(p, []))
    return seen


class MemorySampler(threading.Thread):
    """Max over time of the RSS sum of this process tree, and of its JVM / Python parts."""

    def __init__(self, interval: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.stop_event = threading.Event()
        self.peak_total = 0
        self.peak_jvm = 0
        self.peak_python = 0
        self.peak_processes = 0
        self.cpu_seconds: dict[int, float] = {}  # last seen CPU time per pid of the tree
        self.samples = 0
        self.stage_peaks: dict[str, int] = {}
        self.stage = "start"
        self.window_peak = 0  # since the last pipeline stage ended (BenchProgress resets it)

    def sample(self) -> None:
        table = _proc_table()
        pids = [p for p in _tree(table, os.getpid()) if p in table]
        jvm = sum(table[p][2] for p in pids if table[p][1] == "java")
        total = sum(table[p][2] for p in pids)
        self.peak_total = max(self.peak_total, total)
        self.peak_jvm = max(self.peak_jvm, jvm)
        self.peak_python = max(self.peak_python, total - jvm)
        self.peak_processes = max(self.peak_processes, len(pids))
        self.stage_peaks[self.stage] = max(self.stage_peaks.get(self.stage, 0), total)
        self.window_peak = max(self.window_peak, total)
        for p in pids:
            self.cpu_seconds[p] = table[p][3]
        self.samples += 1

    def tree_cpu(self) -> float:
        """CPU seconds of the live process tree now (exited children via cutime/cstime)."""
        table = _proc_table()
        for p in _tree(table, os.getpid()):
            if p in table:
                self.cpu_seconds[p] = table[p][3]
        return sum(self.cpu_seconds.values())

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                self.sample()
            except Exception:  # a process vanished mid-read: next sample
                pass
            self.stop_event.wait(self.interval)

    def stop(self) -> None:
        self.stop_event.set()
        self.join()
        self.sample()


def _mb(b: int) -> float:
    return round(b / 2**20, 1)


# ----------------------------------------------------------------------------- helpers


def _bench_progress(base: type, mem: MemorySampler, quiet: bool) -> Any:
    """The pipeline's Progress, also noting the process tree's CPU seconds at every stage end."""

    class BenchProgress(base):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            super().__init__(enabled=not quiet)
            self.marks: list[tuple[str, float, float]] = []  # (message, wall, cpu)
            self.last_cpu = mem.tree_cpu()
            self.stage_cpu: dict[str, float] = {}
            self.stage_peak_mb: dict[str, float] = {}
            self.prefix = ""
            self.rows: Any = None  # the per-graph stage's rows of the last compute

        def start_phase(self, prefix: str) -> None:
            self.prefix = prefix
            self.last_cpu = mem.tree_cpu()
            mem.window_peak = 0

        def stage_done(self, name: str, seconds: float) -> None:
            cpu = mem.tree_cpu()
            self.stage_cpu[f"{self.prefix}{name}"] = round(cpu - self.last_cpu, 1)
            self.stage_peak_mb[f"{self.prefix}{name}"] = _mb(mem.window_peak)
            mem.window_peak = 0
            self.last_cpu = cpu
            super().stage_done(name, seconds)

        def per_graph_rows(self, rows: Any) -> None:
            self.rows = rows

        def say(self, msg: str) -> None:
            cpu = mem.tree_cpu()
            self.marks.append((msg, time.perf_counter(), cpu))
            super().say(msg + f"  [tree CPU {cpu:.0f}s]")

    return BenchProgress()


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except Exception:
        return ""


def _mem_total_gb() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    return 0.0


def _flink_of(name: str) -> dict | None:
    f = DATA / f"{name}.flink.json"
    return json.loads(f.read_text()) if f.exists() else None


def _resolve_fleet(arg: str) -> tuple[str, Path, dict | None, dict | None]:
    """(name, input path, fleet manifest, Flink timing) of a fleet name or a path."""
    p = DATA / arg
    if "/" not in arg and p.is_dir():  # a fleet name (a path names its own folder, whose name is used)
        manifest_f, flink_f = DATA / f"{arg}.json", DATA / f"{arg}.flink.json"
        manifest = json.loads(manifest_f.read_text()) if manifest_f.exists() else None
        flink = json.loads(flink_f.read_text()) if flink_f.exists() else None
        return arg, p, manifest, flink
    p = Path(arg).resolve()
    if not p.exists():
        sys.exit(f"no fleet {arg} (neither bench/data/{arg} nor a path)")
    name = p.name.split(".")[0]
    flink_f = p.with_name(name + ".flink.json")
    flink = json.loads(flink_f.read_text()) if flink_f.exists() else None
    return name, p, None, flink


def frontier_stats(rows: Any) -> dict[str, Any]:
    """Per BFS level of the hasher: queue entries summed over all graphs (a Spark-wide
    superstep's frontier), and the largest single-graph frontier, from the per-graph stage's
    rows that the run hands its observer."""
    from pyspark.sql import functions as F

    import pipeline.compute.stage as fu

    if rows is None:
        return {}
    stats = fu.kind_rows(rows, "stats")
    if "frontier_sizes" not in stats.columns:
        return {}
    per_level = (
        stats.select(F.posexplode("frontier_sizes").alias("level", "size"))
        .groupBy("level")
        .agg(F.sum("size").alias("total"), F.max("size").alias("max_graph"), F.count("*").alias("graphs"))
        .orderBy("level")
        .collect()
    )
    agg = stats.agg(
        F.max("bfs_levels").alias("bfs_max"),
        F.avg("bfs_levels").alias("bfs_mean"),
        F.max("hash_layers").alias("layers_max"),
        F.avg("hash_layers").alias("layers_mean"),
        F.percentile_approx("bfs_levels", 0.5).alias("bfs_median"),
        F.percentile_approx("hash_layers", 0.5).alias("layers_median"),
    ).first()
    return {
        "bfs_frontier_total_per_level": [int(r["total"]) for r in per_level],
        "bfs_frontier_graphs_per_level": [int(r["graphs"]) for r in per_level],
        "bfs_frontier_total_max": max((int(r["total"]) for r in per_level), default=0),
        "bfs_frontier_max_single_graph": max((int(r["max_graph"]) for r in per_level), default=0),
        "bfs_levels_mean": round(float(agg["bfs_mean"] or 0), 2),
        "bfs_levels_median": int(agg["bfs_median"] or 0),
        "hash_layers_mean": round(float(agg["layers_mean"] or 0), 2),
        "hash_layers_median": int(agg["layers_median"] or 0),
    }


def _snapshot_code(dest: Path) -> dict[str, Any]:
    """Copies pipeline/, udfs/ and conf/ to ``dest`` and runs from there (driver and workers).

    Others edit and commit the checkout while a run takes minutes: Python workers import the
    UDF modules when they start, so without a snapshot one run can mix two versions of the code.
    """
    import hashlib

    for d in ("pipeline", "udfs", "conf"):
        shutil.copytree(ROOT / d, dest / d, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    h = hashlib.sha256()
    for f in sorted(dest.rglob("*")):
        if f.is_file():
            h.update(str(f.relative_to(dest)).encode())
            h.update(f.read_bytes())
    sys.path.insert(0, str(dest))
    # pyspark.daemon runs with ``-m``, so the workers' sys.path starts with the working
    # directory, ahead of PYTHONPATH: work from the snapshot (inputs and outputs are absolute)
    os.chdir(dest)
    os.environ["PYTHONPATH"] = str(dest) + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ.setdefault("FLINK_JOBGRAPH_JARS", str(ROOT / ".cache" / "jars"))
    return {
        "code_snapshot": str(dest.relative_to(ROOT)),
        "code_sha256": h.hexdigest(),
        "git_status": _git("status", "--porcelain", "--untracked-files=no", "--", "pipeline", "udfs", "conf"),
    }


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fleet", help="fleet name under bench/data (fleet-1k) or a spec file/folder")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="conf override")
    ap.add_argument("--no-ingest", action="store_true", help="time compute only")
    ap.add_argument("--keep-output", action="store_true", help="keep the Delta output under bench/tmp/")
    ap.add_argument("--tag", default="", help="suffix for the result file name")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    stamp = time.strftime("%Y%m%d-%H%M%S")
    name, input_path, manifest, flink = _resolve_fleet(args.fleet)  # before the chdir below
    code = _snapshot_code(TMP / f"code-{stamp}")
    from pipeline.options import overrides as _overrides
    from pipeline.settings import load_settings

    overrides = _overrides(args.set)
    settings = load_settings(overrides)
    out_dir = TMP / f"out-{stamp}-{name}"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)

    mem = MemorySampler()
    mem.start()
    load_before = os.getloadavg()
    uptime_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    t_all = time.perf_counter()

    import pipeline.compute.run as run_mod
    from pipeline.session import get_spark

    mem.stage = "spark start"
    t0 = time.perf_counter()
    spark = get_spark(settings, app_name=f"bench-{name}")
    spark_start = time.perf_counter() - t0
    worker_udfs = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("udfs").__path__[0]).collect()[0]
    if not worker_udfs.startswith(str(TMP)):
        print(f"warning: Python workers import udfs from {worker_udfs}, not the snapshot")
    code["worker_udfs"] = worker_udfs

    result: dict[str, Any] = {}
    ingest_summary = None
    failure = None
    progress = _bench_progress(run_mod.Progress, mem, args.quiet)
    try:
        if not args.no_ingest:
            mem.stage = "ingest"
            progress.start_phase("ingest ")
            t0 = time.perf_counter()
            ingest_summary = run_mod.ingest(spark, str(input_path), str(out_dir / "ingest"), progress)
            ingest_seconds = time.perf_counter() - t0
            # the ingest's cached tables are not reused by compute: start it cold
            spark.catalog.clearCache()
            mem.stage = "between"
        mem.stage = "compute"
        progress.start_phase("")
        cpu0 = mem.tree_cpu()
        t0 = time.perf_counter()
        summary = run_mod.compute(spark, str(input_path), str(out_dir / "compute"), settings, progress)
        compute_seconds = time.perf_counter() - t0
        compute_cpu = mem.tree_cpu() - cpu0
    except BaseException as e:  # record how far it got (OOM, Py4J errors, ...)
        msg = str(e)
        failure = f"{type(e).__name__}: " + (msg if len(msg) < 4000 else msg[:1000] + " ... " + msg[-3000:])
        summary = None
        compute_seconds = None
        compute_cpu = None
    mem.stage = "after"
    frontier = {}
    if summary is not None:
        try:
            frontier = frontier_stats(progress.rows)
        except Exception as e:
            frontier = {"error": str(e)[:300]}
    mem.stop()

    cpu_tree = round(sum(mem.cpu_seconds.values()), 1)
    if flink is None:  # Flink's timing may have been written while this run went on
        flink = _resolve_fleet(str(input_path))[3] if input_path.is_file() else _flink_of(name)
    flink_s = flink["flink_seconds"] if flink else None
    flink_cpu = flink.get("flink_cpu_seconds") if flink else None
    stage_seconds = dict(summary.stage_seconds) if summary else {}
    if summary is None:
        # the Progress lines are the only record of stages reached
        pass
    result = {
        "fleet": name,
        "input": str(input_path.relative_to(ROOT)) if input_path.is_relative_to(ROOT) else str(input_path),
        "timestamp": stamp,
        "graphs": summary.graphs_in if summary else (manifest or {}).get("sizes", {}).get("graphs"),
        "graphs_processed": summary.graphs_processed if summary else None,
        "graphs_rejected": summary.graphs_rejected if summary else None,
        "errors_by_code": summary.errors_by_code if summary else None,
        "stream_nodes": summary.stream_nodes if summary else (manifest or {}).get("sizes", {}).get("stream_nodes"),
        "job_vertices": summary.job_vertices if summary else None,
        "job_edges": summary.job_edges if summary else None,
        "fleet_sizes": (manifest or {}).get("sizes"),
        "supersteps": {
            "bfs_levels_max": summary.bfs_levels_max if summary else None,
            "hash_layers_max": summary.hash_layers_max if summary else None,
            "chain_rounds": summary.chain_rounds if summary else None,
            **frontier,
        },
        "pipeline_seconds": round(compute_seconds, 2) if compute_seconds else None,
        "stage_seconds": stage_seconds,
        "worker_seconds": getattr(summary, "worker_seconds", None) if summary else None,
        "ingest_seconds": round(ingest_seconds, 2) if ingest_summary else None,
        "ingest_stage_seconds": dict(ingest_summary.stage_seconds) if ingest_summary else None,
        "spark_start_seconds": round(spark_start, 2),
        "total_seconds": round(time.perf_counter() - t_all, 2),
        "process_tree_cpu_seconds": cpu_tree,
        "pipeline_cpu_seconds": round(compute_cpu, 1) if compute_cpu else None,
        "stage_cpu_seconds": {k: v for k, v in progress.stage_cpu.items() if not k.startswith("ingest ")},
        "ingest_stage_cpu_seconds": {k[7:]: v for k, v in progress.stage_cpu.items() if k.startswith("ingest ")},
        "progress": [m[0] for m in progress.marks],
        "flink_seconds": round(flink_s, 3) if flink_s is not None else None,
        "flink_cpu_seconds": round(flink_cpu, 3) if flink_cpu is not None else None,
        "flink_programs": flink.get("programs") if flink else None,
        "flink_stream_nodes": flink.get("stream_nodes") if flink else None,
        "flink_loadavg": flink.get("loadavg_before") if flink else None,
        "flink_version": flink.get("flink_version") if flink else None,
        "ratio": round(compute_seconds / flink_s, 2) if compute_seconds and flink_s else None,
        "ratio_vs_flink_cpu": round(compute_seconds / flink_cpu, 1) if compute_seconds and flink_cpu else None,
        "ratio_cpu": round(compute_cpu / flink_cpu, 1) if compute_cpu and flink_cpu else None,
        "pipeline_us_per_node": round(compute_seconds * 1e6 / summary.stream_nodes, 1)
        if compute_seconds and summary and summary.stream_nodes
        else None,
        "flink_us_per_node": round(flink["per_node_us"], 1) if flink else None,
        "peak_memory_mb": _mb(mem.peak_total),
        "peak_memory_jvm_mb": _mb(mem.peak_jvm),
        "peak_memory_python_mb": _mb(mem.peak_python),
        "peak_memory_by_phase_mb": {k: _mb(v) for k, v in mem.stage_peaks.items()},
        "peak_memory_by_stage_mb": progress.stage_peak_mb,
        "peak_processes": mem.peak_processes,
        "memory_samples": mem.samples,
        "cores": os.cpu_count(),
        "memory_gb": _mem_total_gb(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "uptime_before": uptime_before,
        "uptime_after": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "settings": settings.as_dict(),
        "overrides": overrides,
        "driver_memory": spark.conf.get("spark.driver.memory", None),
        "spark_version": spark.version,
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        **code,
        "failure": failure,
    }

    RESULTS.mkdir(parents=True, exist_ok=True)
    tag = f"-{args.tag}" if args.tag else ""
    out = RESULTS / f"{stamp}-{name}{tag}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    if not args.keep_output:
        shutil.rmtree(out_dir, ignore_errors=True)
        shutil.rmtree(TMP / f"code-{stamp}", ignore_errors=True)

    print(f"\n{name}: {result['graphs']} graphs, {result['stream_nodes']} stream nodes  -> {out.relative_to(ROOT)}")
    if failure:
        print(f"FAILED: {failure[-1500:]}")
    print(
        f"  compute {result['pipeline_seconds']}s  (ingest {result['ingest_seconds']}s, "
        f"spark start {result['spark_start_seconds']}s)"
    )
    print(f"  pipeline CPU {result['pipeline_cpu_seconds']}s (process tree)")
    for k, v in stage_seconds.items():
        print(f"    {k:<16} {v:8.1f}s  CPU {progress.stage_cpu.get(k, float('nan')):7.1f}s")
    for k, v in (result.get("worker_seconds") or {}).items():
        print(f"      in workers: {k:<16} {v:8.1f}s")
    print(
        f"  supersteps: bfs {result['supersteps']['bfs_levels_max']}, "
        f"hash layers {result['supersteps']['hash_layers_max']}, chain rounds {result['supersteps']['chain_rounds']}"
    )
    if flink:
        print(
            f"  Flink createJobGraph {flink_s:.2f}s wall / {flink_cpu:.2f}s CPU -> ratio {result['ratio']}x "
            f"(CPU/CPU {result['ratio_cpu']}x)"
        )
    print(
        f"  peak memory {result['peak_memory_mb']} MB (JVM {result['peak_memory_jvm_mb']}, "
        f"Python {result['peak_memory_python_mb']}), load {load_before} -> {result['loadavg_after']}"
    )
    return 1 if failure else 0


if __name__ == "__main__":
    sys.exit(main())
