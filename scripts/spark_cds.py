"""Dump the driver JVM's class-data-sharing archive (pipeline/session.py: ``cds_archive``).

    python scripts/spark_cds.py [--force]

`make install` runs it once: a `compute` of samples/ (Spark SQL, Arrow, GraphFrames' GraphX,
Delta's commits) and an `inventory` of a bundled savepoint (the project's ranged read), in one
process whose JVM writes at its exit every class it loaded to the archive. Later starts map
the archive instead of loading those classes from the jars: a cold start is what a one-job
deploy gate pays on every run (bench/gate_bench.py). Without an archive everything works,
only slower to start; ``FLINK_JOBGRAPH_CDS=off`` runs without one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.session import CDS_ENV, cds_archive  # noqa: E402
from pipeline.settings import load_settings  # noqa: E402

TRAINING = """
import sys
from pipeline.cli import main
out = sys.argv[1]
assert main(["compute", "--quiet", "--input", "samples", "--output", out + "/compute"]) == 0
assert main(["inventory", "--quiet", "--savepoints", "tests/savepoints/synthetic/v3-channel-flink-1.11-layout",
             "--output", out + "/inventory"]) == 0
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--force", action="store_true", help="dump it again even when it exists")
    args = ap.parse_args()
    archive = cds_archive(load_settings())
    if archive.is_file() and not args.force:
        print(f"class-data-sharing archive: {archive.relative_to(ROOT)} (exists)")
        return 0
    for stale in archive.parent.glob("spark-*.jsa"):  # another pyspark, jar set or JDK's: never mapped again
        stale.unlink()
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, **{CDS_ENV: "train"})
        proc = subprocess.run([sys.executable, "-c", TRAINING, out], cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not archive.is_file():
        # the pipeline runs without it: say so, do not fail the install
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"class-data-sharing archive not written ({tail}); Spark starts without it", file=sys.stderr)
        return 0
    print(f"class-data-sharing archive: {archive.relative_to(ROOT)} ({archive.stat().st_size // 2**20} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
