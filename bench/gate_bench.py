"""One job's deploy gate, timed as a CI step runs it: a fresh process from command to verdict.

    python bench/gate_bench.py [--runs 5] [--case sp-2.3-s11-00057] [--jar-args '...']

The job: a real Flink 2.3 savepoint and its real edited job from
../shared/vectors/restore/savepoint-2.3-s11 (the case README's gate example uses), laid out as
a CI job has them (the savepoint folder, the new version's spec, the old one's). Each run is
``flink-jobgraph check-restore --savepoint DIR --graphs v2.jsonl --previous-graphs v1.json
--report R`` in a new process, as a pipeline step starts it; its wall seconds and the CPU
seconds of its whole process tree (the Python front end, Spark's JVM, the Python workers),
sampled from /proc, and the exit code (1: the case fails to restore). ``--jar-args`` times
the same from a jar instead (``--jar J --main-class C --flink L``: the export on the way).

Writes bench/results/<timestamp>-gate.json and prints one line per run and the median.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_bench import RESULTS, ROOT, MemorySampler  # noqa: E402

VECTORS = ROOT.parent / "shared" / "vectors" / "restore" / "savepoint-2.3-s11"


def _layout(case_id: str, folder: Path) -> list[str]:
    sys.path.insert(0, str(ROOT))
    from devtools import restore_cases as rc

    case = next(c for c in rc.read_cases(f"{VECTORS}.jsonl.gz") if c["case_id"] == case_id)
    metadata = rc.read_metadata_tar(f"{VECTORS}-metadata.tar.gz")
    sp = folder / "savepoints" / "savepoint-1"
    sp.mkdir(parents=True)
    (sp / "_metadata").write_bytes(metadata[case["savepoint_metadata"]])
    (folder / "v1.json").write_text(json.dumps(case["v1"]))
    (folder / "v2.jsonl").write_text(json.dumps(case["v2"]) + "\n")
    return ["--savepoint", str(folder / "savepoints"), "--graphs", str(folder / "v2.jsonl"),
            "--previous-graphs", str(folder / "v1.json")]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--case", default="sp-2.3-s11-00057")
    ap.add_argument("--jar-args", default="", help="time from a jar: '--jar J --main-class C --flink L --savepoint S'")
    args = ap.parse_args(argv)
    exe = str(ROOT / ".venv" / "bin" / "flink-jobgraph")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        check = shlex.split(args.jar_args) if args.jar_args else _layout(args.case, folder)
        for i in range(args.runs):
            mem = MemorySampler(interval=0.2)
            mem.start()
            t0 = time.perf_counter()
            cmd = [exe, "check-restore", "--quiet", *check, "--report", str(folder / f"report-{i}")]
            p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            wall = time.perf_counter() - t0
            mem.stop()
            row = {"wall_s": round(wall, 2), "cpu_s": round(mem.tree_cpu(), 1), "exit": p.returncode,
                   "verdict": (p.stdout.splitlines() or [""])[0][:100]}  # fmt: skip
            runs.append(row)
            print(json.dumps(row), flush=True)
    walls = [r["wall_s"] for r in runs]
    result = {
        "case": args.case if not args.jar_args else args.jar_args,
        "runs": runs,
        "wall_median_s": statistics.median(walls),
        "load_after": open("/proc/loadavg").read().split()[:3],
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{time.strftime('%Y%m%d-%H%M%S')}-gate.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"median wall {result['wall_median_s']} s over {len(walls)} runs -> {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
