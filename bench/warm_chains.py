"""The chain step, cold and warm: how much of a fresh run's chain step is the JVM's warm-up.

Computes a fleet's per-graph stage once, then runs the chain step (GraphFrames' connected
components over the chainable edges and the walk's shortcuts) and its check several times in
the same Spark session, printing each call's wall seconds. The first call pays GraphX's class
loading and JIT compilation; the later ones show the step's own cost. Flink's
``createJobGraph`` timing (bench/make_fleet.py) warms its JVM on 200 programs first.

    python bench/warm_chains.py fleet-10k-longchain --reps 3
    python bench/warm_chains.py fleet-10k-longchain --edges-per-partition 400000

Nothing is written; numbers go to stdout (docs/benchmarks.md, sixth round of 2026-11-27).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_bench import _resolve_fleet  # noqa: E402

from pipeline.compute import run  # noqa: E402
from pipeline.compute import stage as fused  # noqa: E402
from pipeline.progress import Progress  # noqa: E402
from pipeline.session import get_spark  # noqa: E402
from pipeline.settings import load_settings  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fleet", help="fleet name under bench/data (fleet-10k-longchain) or a spec file/folder")
    ap.add_argument("--reps", type=int, default=3, help="chain step calls in the session (default 3)")
    ap.add_argument("--edges-per-partition", type=int, default=None,
                    help=f"the chain step's input rows per partition (default {run.EDGES_PER_PARTITION})")  # fmt: skip
    args = ap.parse_args(argv)
    _name, path, _manifest, _flink = _resolve_fleet(args.fleet)
    if args.edges_per_partition:
        run.EDGES_PER_PARTITION = args.edges_per_partition
    settings = load_settings()
    spark = get_spark(settings)
    t = time.perf_counter()
    rows = run._stage_rows(spark, str(path), settings, None, frozenset({fused.JOBGRAPH}))
    summary = run.RunSummary()
    counts = run._count(spark, rows, summary, Progress(enabled=False))
    print(f"{args.fleet}: per-graph stage and counts {time.perf_counter() - t:.2f} s", flush=True)
    for rep in range(args.reps):
        t = time.perf_counter()
        roots = run._chains(rows, counts, settings, summary)
        t1 = time.perf_counter()
        disagreements = run._chain_errors(roots, counts).count()
        print(
            f"call {rep + 1}: chains {t1 - t:.2f} s, check {time.perf_counter() - t1:.2f} s, "
            f"GraphFrames rounds {summary.chain_rounds}, graphs whose chains disagree {disagreements}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
