"""One fleet, two file layouts: does parallelism depend on how the input is cut into files?

    python bench/split_fleet.py --out /tmp/split-fleet [--graphs 10000] [--files 100]

Builds a fleet of ``--graphs`` graphs from the known-answer files in tests/golden/ (11 files
x 250 real Flink graphs), replicated with renamed graph_ids (``<id>#r<k>``), and writes the
same lines twice: ``one/fleet.jsonl.gz`` (one gzip file: not splittable, so a reader that
maps files to tasks reads and computes it on one core) and ``many/part-NNN.jsonl.gz``
(``--files`` files, lines dealt round-robin). Then time both with

    /usr/bin/time -v flink-jobgraph compute --input OUT/one  --output OUT/out-one  --quiet
    /usr/bin/time -v flink-jobgraph compute --input OUT/many --output OUT/out-many --quiet

(``--time`` runs ``python -m pipeline.cli compute`` of ``--code`` on each layout and prints
wall seconds, the CPU seconds of the whole process tree -- driver, JVM, Python workers --
and the run's own read+compute stage seconds.)
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh_run import tree_cpu  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"


def fleet_lines(graphs: int) -> list[str]:
    base = []
    for f in sorted(GOLDEN.glob("flink-*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            base.extend(json.loads(line) for line in fh if line.strip())
    out = []
    for k in range(graphs):
        g = dict(base[k % len(base)])
        g["graph_id"] = f"{g['graph_id']}#r{k // len(base)}"
        out.append(json.dumps(g, separators=(",", ":")))
    return out


def write(out: Path, lines: list[str], files: int) -> None:
    shutil.rmtree(out / "one", ignore_errors=True)
    shutil.rmtree(out / "many", ignore_errors=True)
    (out / "one").mkdir(parents=True)
    (out / "many").mkdir(parents=True)
    with gzip.open(out / "one" / "fleet.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in lines)
    for i in range(files):
        with gzip.open(out / "many" / f"part-{i:03d}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(line + "\n" for line in lines[i::files])


def time_compute(cmd: list[str]) -> dict:
    """Wall seconds and process-tree CPU seconds of one command (polled every 0.5 s)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: dict[int, float] = {}
    while p.poll() is None:
        tree_cpu(p.pid, seen, reaped_children=False)
        time.sleep(0.5)
    out, err = p.communicate()
    if p.returncode:
        raise RuntimeError(err[-2000:])
    return {"wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(sum(seen.values()), 1), "out": out.strip()}


def _time(out: Path, layout: str, code_dir: Path) -> dict:
    target = out / f"out-{layout}"
    shutil.rmtree(target, ignore_errors=True)
    summary = out / f"summary-{layout}.json"
    cmd = [sys.executable, "-m", "pipeline.cli", "compute", "--input", str(out / layout), "--output", str(target)]
    cwd = os.getcwd()
    os.chdir(code_dir)  # python -m runs the pipeline of code_dir (e.g. an older checkout, for a before/after)
    try:
        result = time_compute([*cmd, "--quiet", "--summary-json", str(summary)])
    finally:
        os.chdir(cwd)
    stages = json.loads(summary.read_text())["stage_seconds"]
    return {"layout": layout, **result, "read+compute_s": stages.get("read+compute")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--graphs", type=int, default=10000)
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--time", action="store_true", help="also time compute on both layouts")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose pipeline --time runs")
    ap.add_argument("--no-build", action="store_true", help="time the layouts already under --out")
    args = ap.parse_args()
    if not args.no_build:
        lines = fleet_lines(args.graphs)
        write(args.out, lines, args.files)
        print(f"{len(lines)} graphs -> {args.out}/one (1 file), {args.out}/many ({args.files} files)")
    if args.time:
        for layout in ("one", "many"):
            print(json.dumps(_time(args.out, layout, args.code.resolve())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
