"""The floor under issue 12's speed targets: how fast would the run be if the per-graph
Python work (parse and contract checks, chainability, hashing, the createChain walk, the
vertex and edge rows) took no time at all?

    python bench/python_floor.py fleet-10k [--rounds 2]

1. ``record``: one run of the pipeline whose per-graph stage also pickles the Arrow record
   batches it yields for every input batch to a cache folder, keyed by (Spark partition,
   batch number). The run's own time is not used.
2. ``rounds`` times, alternated: ``full``, the pipeline as it is, and ``floor``, the same
   pipeline whose per-graph stage yields the recorded batches of its (partition, batch)
   instead of computing them. Everything else is the product's own code, unchanged: the same
   read (the spec files' texts, decompressed and dealt round-robin to the same partitions),
   the same rows handed back through Arrow, the same chains step with GraphFrames, the same
   chain check, the same Delta commits. Each run is a fresh process, timed as a whole (wall
   and the CPU seconds of its process tree: driver, JVM, Python workers).

Round-robin ``repartition`` deals the same number of texts to each partition in every run,
so each (partition, batch) of the recording is replayed exactly once and the floor writes
the same tables (the script checks the row counts). Replaying is not free: the workers
unpickle the recorded batches, so the floor is a little above the true one.

This is an experiment, not the benchmark (bench/run_bench.py): it replaces one function of
:mod:`pipeline.compute.stage` in the child process on purpose, the one seam a zero-cost per-graph
stage can be measured through. Writes bench/results/<timestamp>-<fleet>-python-floor.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.split_fleet import time_compute  # noqa: E402

DATA = ROOT / "bench" / "data"
RESULTS = ROOT / "bench" / "results"
TMP = ROOT / "bench" / "tmp"


def _stage(mode: str, cache: str):
    """The per-graph stage's function for ``mode``: record (compute, and pickle what is
    yielded) or floor (yield what was recorded). Defined here, so Spark ships it to the
    workers by value."""
    from pipeline.compute import stage as fused

    def make(limits, raise_in_graph):
        def run(batches):
            import pickle

            from pyspark import TaskContext

            part = TaskContext.get().partitionId()
            for i, batch in enumerate(batches):
                path = os.path.join(cache, f"p{part:05d}-b{i:05d}.pkl")
                if mode == "floor":
                    with open(path, "rb") as fh:
                        yield from pickle.load(fh)
                    continue
                out = fused._batches(*fused._batch_rows(batch.to_pandas(), limits, raise_in_graph))
                with open(path, "wb") as fh:
                    pickle.dump(out, fh, protocol=5)
                yield from out

        return run

    return make


def child(mode: str, fleet: Path, cache: str, output: str, summary_path: str) -> None:
    """One run of ``compute`` in this process (``full``, ``record`` or ``floor``)."""
    from pipeline import session
    from pipeline.compute import run
    from pipeline.compute import stage as fused
    from pipeline.progress import Progress
    from pipeline.settings import load_settings

    settings = load_settings()
    t0 = time.perf_counter()
    spark = session.get_spark(settings, app_name=f"python-floor-{mode}")
    start = time.perf_counter() - t0
    if mode != "full":
        fused._from_texts = _stage(mode, cache)
    t = time.perf_counter()
    summary = run.compute(spark, str(fleet), output, settings, Progress(enabled=False))
    out = {
        "mode": mode,
        "spark_start_seconds": round(start, 2),
        "pipeline_seconds": round(time.perf_counter() - t, 2),
        "stage_seconds": summary.stage_seconds,
        "worker_seconds": summary.worker_seconds,
        "graphs_in": summary.graphs_in,
        "job_vertices": summary.job_vertices,
        "job_edges": summary.job_edges,
        "graphs_rejected": summary.graphs_rejected,
    }
    Path(summary_path).write_text(json.dumps(out))
    spark.stop()


def _one(mode: str, fleet: Path, cache: Path) -> dict:
    output, summary = TMP / f"floor-out-{mode}", TMP / f"floor-{mode}.json"
    shutil.rmtree(output, ignore_errors=True)
    cmd = [sys.executable, __file__, "--child", mode, "--cache", str(cache), "--output", str(output)]
    timed = time_compute([*cmd, "--summary", str(summary), str(fleet)])
    result = json.loads(summary.read_text())
    shutil.rmtree(output, ignore_errors=True)
    result.update(wall_seconds=timed["wall_s"], process_tree_cpu_seconds=timed["cpu_s"])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fleet", help="a name under bench/data/ or a spec folder")
    ap.add_argument("--rounds", type=int, default=2, help="full/floor pairs, alternated (default 2)")
    ap.add_argument("--cache", type=Path, default=None, help="where the recorded batches go (default bench/tmp/)")
    ap.add_argument("--child", choices=("full", "record", "floor"), help=argparse.SUPPRESS)
    ap.add_argument("--output", help=argparse.SUPPRESS)
    ap.add_argument("--summary", help=argparse.SUPPRESS)
    args = ap.parse_args()
    fleet = DATA / args.fleet if (DATA / args.fleet).is_dir() else Path(args.fleet).resolve()
    name = fleet.name.split(".")[0]
    cache = (args.cache or TMP / f"floor-cache-{name}").resolve()
    if args.child:
        child(args.child, fleet, str(cache), args.output, args.summary)
        return 0
    flink_f = DATA / f"{name}.flink.json"
    flink = json.loads(flink_f.read_text()) if flink_f.exists() else None
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    TMP.mkdir(exist_ok=True)
    print(f"recording the per-graph stage's output of {fleet} ...", flush=True)
    recorded = _one("record", fleet, cache)
    runs = []
    for r in range(args.rounds):
        for mode in ("full", "floor"):
            res = _one(mode, fleet, cache)
            for key in ("graphs_in", "job_vertices", "job_edges", "graphs_rejected"):
                if res[key] != recorded[key]:
                    raise SystemExit(f"{mode} run {r + 1}: {key} {res[key]} != {recorded[key]} of the recording")
            if flink:
                res["ratio"] = round(res["pipeline_seconds"] / flink["flink_seconds"], 2)
            runs.append(res)
            stages = ", ".join(f"{k} {v:.1f}" for k, v in res["stage_seconds"].items())
            print(
                f"  {mode:5s} round {r + 1}: pipeline {res['pipeline_seconds']:.1f} s"
                + (f" (ratio {res['ratio']:.2f})" if flink else "")
                + f", command {res['wall_seconds']:.1f} s, CPU {res['process_tree_cpu_seconds']:.1f} s; {stages}",
                flush=True,
            )
    shutil.rmtree(cache, ignore_errors=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = RESULTS / f"{stamp}-{name}-python-floor.json"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    body = {
        "fleet": name,
        "timestamp": stamp,
        "commit": commit.stdout.strip(),
        "flink_seconds": flink["flink_seconds"] if flink else None,
        "flink_timed_at": flink.get("timed_at") if flink else None,
        "load_before": os.getloadavg(),
        "record_run": recorded,
        "runs": runs,
    }
    out.write_text(json.dumps(body, indent=1))
    print(f"-> {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
