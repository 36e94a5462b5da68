"""Benchmark: `flink-jobgraph inventory` over a fleet of N real savepoints, as one command.

The savepoints are the real ones of ../shared/vectors/statetypes (80 distinct: Flink 1.20.5 and
2.3.0, HashMap and RocksDB, native and canonical, inline and file state), each unpacked once and
copied under N folders (a fleet's layout: one folder per job). The whole command is timed from
outside, Spark start included, with the CPU seconds of its whole process tree; the bytes it
read (every _metadata whole, every state stream's head) against the bytes the savepoints hold.

    python bench/inventory_bench.py --savepoints 1000 [--tag TAG]

Writes bench/results/<time>-inventory-<N>.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.restore_bench import run_timed  # noqa: E402

STATETYPES = ROOT.parent / "shared" / "vectors" / "statetypes"


def _unpack_all(dest: Path) -> list[Path]:
    folders = []
    for cases in sorted(STATETYPES.glob("*.jsonl.gz")):
        with gzip.open(cases, "rt") as f:
            for line in f:
                case = json.loads(line)
                sp = case["savepoint"]
                target = dest / "src" / case["case_id"]
                with tarfile.open(cases.with_suffix("").with_suffix("") / sp["archive"]) as tar:
                    tar.extractall(target, filter="data")
                folders.append(target / sp["dir_name"])
    return folders


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--savepoints", type=int, default=1000)
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="inventory-bench-"))
    sources = _unpack_all(work)
    fleet = work / "fleet"
    total = 0
    for i in range(args.savepoints):
        src = sources[i % len(sources)]
        dst = fleet / f"job-{i:05d}" / src.name
        shutil.copytree(src, dst)
        total += sum(p.stat().st_size for p in dst.rglob("*") if p.is_file())
    out = work / "out"
    summary_json = work / "summary.json"
    cmd = [str(ROOT / ".venv" / "bin" / "flink-jobgraph"), "inventory", "--savepoints", str(fleet),
           "--output", str(out), "--summary-json", str(summary_json)]  # fmt: skip
    proc, wall, cpu, stderr = run_timed(cmd)
    summary = json.loads(summary_json.read_text()) if summary_json.exists() else None
    result = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(cmd[1:]),
        "savepoints": args.savepoints,
        "distinct_savepoints": len(sources),
        "exit_code": proc.returncode,
        "wall_seconds": round(wall, 1),
        "cpu_seconds_process_tree": round(cpu, 1),
        "bytes_in_savepoints": total,
        "bytes_read": summary["bytes_read"] if summary else None,
        "load_average_after": os.getloadavg(),
        "summary": summary,
        "stderr_tail": stderr[-2000:],
    }
    name = time.strftime("%Y%m%d-%H%M%S") + f"-inventory-{args.savepoints}" + (f"-{args.tag}" if args.tag else "")
    (ROOT / "bench" / "results" / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    keys = ("savepoints", "exit_code", "wall_seconds", "cpu_seconds_process_tree", "bytes_in_savepoints", "bytes_read")
    print(json.dumps({k: result[k] for k in keys}))
    print(f"-> bench/results/{name}.json")


if __name__ == "__main__":
    main()
