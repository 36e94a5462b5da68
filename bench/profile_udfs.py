"""Where the pipeline's time goes: cProfile (CPU time) inside the Python workers.

    python bench/profile_udfs.py fleet-1k [--top 25]

Runs ``compute`` once on the fleet (local[2], like run_bench.py, code snapshot included) with
the per-graph stage's work per Arrow batch, ``pipeline.compute.stage._batch_rows`` (parse, contract
checks, chainability, hashing, the createChain walk), wrapped in a per-worker cProfile that
uses CPU time (``time.process_time``). Each worker dumps its profile to
bench/tmp/prof-<stamp>/<pid>-<stage>.pstats after every call (cumulative).

Prints, per stage: wall seconds, CPU seconds of the process tree (the same figures as
run_bench.py), CPU seconds inside the UDF (sum over workers), the UDF's share of the stage's
CPU (the rest is Spark: JVM planning, shuffles, Arrow transfer, localCheckpoint, Delta), and
the top functions of each UDF by cumulative CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import run_bench  # noqa: E402  (bench/run_bench.py: snapshot, sampler, fleet lookup)

# (stage of the run summary, module, function, is it an iterator UDF)
TARGETS = [
    ("read+compute", "pipeline.compute.stage", "_batch_rows", False),
]


def _wrap(fn, stage: str, out_dir: str, iterator: bool):
    """A wrapper (pickled by value, from __main__) that profiles ``fn`` in the worker."""

    def _prof():
        import cProfile as _cp
        import os as _os
        import time as _t

        # one profile per worker process and UDF, kept on the cProfile module (the wrapper
        # itself is unpickled afresh for every task)
        profs = _cp.__dict__.setdefault("_bench_profs", {})
        prof = profs.get(stage)
        if prof is None:
            prof = profs[stage] = _cp.Profile(_t.process_time)
        return prof, f"{out_dir}/{_os.getpid()}-{stage.replace('+', '_')}.pstats"

    def profiled_iter(batches):
        prof, path = _prof()
        it = iter(fn(batches))
        while True:
            prof.enable()
            try:
                batch = next(it)
            except StopIteration:
                prof.disable()
                prof.dump_stats(path)
                return
            prof.disable()
            yield batch

    def profiled_call(*args):
        prof, path = _prof()
        prof.enable()
        try:
            return fn(*args)
        finally:
            prof.disable()
            prof.dump_stats(path)

    return profiled_iter if iterator else profiled_call


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fleet")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()

    stamp = time.strftime("%Y%m%d-%H%M%S")
    name, input_path, _, _ = run_bench._resolve_fleet(args.fleet)  # before the snapshot's chdir
    run_bench._snapshot_code(run_bench.TMP / f"code-prof-{stamp}")
    from pipeline.cli import _overrides
    from pipeline.settings import load_settings

    settings = load_settings(_overrides(args.set))
    prof_dir = run_bench.TMP / f"prof-{stamp}"
    prof_dir.mkdir(parents=True)
    import importlib

    for stage, mod_name, fn_name, iterator in TARGETS:
        mod = importlib.import_module(mod_name)
        setattr(mod, fn_name, _wrap(getattr(mod, fn_name), stage, str(prof_dir), iterator))

    import pipeline.compute.run as run_mod
    from pipeline.session import get_spark

    mem = run_bench.MemorySampler()
    mem.start()
    spark = get_spark(settings, app_name=f"profile-{name}")
    progress = run_bench._bench_progress(run_mod.Progress, mem, quiet=False)
    progress.start_phase("")
    t0 = time.perf_counter()
    summary = run_mod.compute(spark, str(input_path), str(run_bench.TMP / f"out-prof-{stamp}"), settings, progress)
    wall = time.perf_counter() - t0
    mem.stop()

    print(f"\n{name}: {summary.graphs_in} graphs, {summary.stream_nodes} nodes, compute {wall:.1f}s wall")
    print(f"{'stage':<16} {'wall s':>8} {'tree CPU s':>10} {'UDF CPU s':>10} {'UDF share':>9}")
    report = {"fleet": name, "compute_seconds": round(wall, 2), "stages": {}}
    for stage in summary.stage_seconds:
        files = sorted(prof_dir.glob(f"*-{stage.replace('+', '_')}.pstats"))
        udf_cpu = None
        stats = None
        if files:
            stats = pstats.Stats(*[str(f) for f in files])
            udf_cpu = stats.total_tt
        cpu = progress.stage_cpu.get(stage)
        share = f"{udf_cpu / cpu:8.0%}" if udf_cpu and cpu else ""
        udf_s = f"{udf_cpu:10.1f}" if udf_cpu is not None else f"{'-':>10}"
        print(f"{stage:<16} {summary.stage_seconds[stage]:8.1f} {cpu or 0:10.1f} {udf_s} {share}")
        report["stages"][stage] = {
            "wall": summary.stage_seconds[stage],
            "tree_cpu": cpu,
            "udf_cpu": round(udf_cpu, 2) if udf_cpu is not None else None,
        }
    for stage, *_ in TARGETS:
        files = sorted(prof_dir.glob(f"*-{stage.replace('+', '_')}.pstats"))
        if not files:
            continue
        print(f"\n--- {stage}: top {args.top} by cumulative CPU time ---")
        st = pstats.Stats(*[str(f) for f in files])
        st.strip_dirs().sort_stats("cumulative").print_stats(args.top)
    out = run_bench.RESULTS / f"profile-{stamp}-{name}.json"
    run_bench.RESULTS.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"profiles: {prof_dir.relative_to(run_bench.ROOT)}  summary: {out.relative_to(run_bench.ROOT)}")
    os._exit(0)  # skip the JVM shutdown wait


if __name__ == "__main__":
    sys.exit(main())
