"""Benchmark: `flink-jobgraph check-restore` over N checks (the savepoints of N/2 jobs, each
checked against its new version with and without allowNonRestoredState) as the user runs it.

The checks are real: every case is a random stateful job that real Flink ran, savepointed and
tried to restore (conformance/restore/, tests/golden/restore/, ../shared/vectors/restore/).
The whole command is timed from outside, Spark start included, with the CPU seconds of its
whole process tree (the JVM and Python workers are not reaped by the CLI, so /usr/bin/time
would miss them: descendants are sampled from /proc while it runs).

    python bench/restore_bench.py --checks 1000 [--no-proof] [--rerun 0,1] [--tag TAG]

``--rerun P1,P2``: after the first run, re-run the same command on the same output once per
share, each with P% of the jobs' savepoints new first (another job's ``_metadata`` written in
place of theirs, as a new savepoint in a job's folder would be): the nightly case of an
incremental check-restore (0: the same input again).

Writes bench/results/<time>-restore-<N>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.fresh_run import tree_cpu  # noqa: E402
from devtools.restore_cases import read_cases, read_metadata_tar, write_case_fleet  # noqa: E402

CASE_SETS = [
    *sorted((ROOT / "conformance" / "restore").glob("savepoint-*.jsonl.gz")),
    *sorted((ROOT / "tests" / "golden" / "restore").glob("savepoint-*.jsonl.gz")),
    *sorted((ROOT.parent / "shared" / "vectors" / "restore").glob("savepoint-*.jsonl.gz")),
]


def _cases(n_cases: int) -> tuple[list[dict], dict[str, bytes]]:
    cases: list[dict] = []
    metadata: dict[str, bytes] = {}
    for path in CASE_SETS:
        metadata.update(read_metadata_tar(str(path).replace(".jsonl.gz", "-metadata.tar.gz")))
        cases.extend(read_cases(path))
        if len(cases) >= n_cases:
            break
    if len(cases) < n_cases:
        raise SystemExit(f"only {len(cases)} real cases available, {n_cases} needed")
    return cases[:n_cases], metadata


def run_timed(
    cmd: list[str], env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> tuple[subprocess.Popen, float, float, str]:
    """Run ``cmd`` as one benchmark step: (the finished process, wall seconds, CPU seconds of
    its process tree sampled from /proc every 0.5 s plus what this process reaped, stderr)."""
    seen: dict[int, float] = {}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    while True:  # wait() returns at the exit itself: the wall is not rounded up to a sample
        tree_cpu(proc.pid, seen, reaped_children=False)
        try:
            proc.wait(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            continue
    wall = time.perf_counter() - start
    stderr = proc.stderr.read() if proc.stderr else ""
    self_cpu = os.times()
    return proc, wall, sum(seen.values()) + self_cpu.children_user + self_cpu.children_system, stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checks", type=int, default=1000, help="number of checks (two per job)")
    ap.add_argument("--no-proof", action="store_true", help="pass --no-proof (fixes proposed, not recomputed)")
    ap.add_argument("--rerun", default="", help="re-runs after the first: percent of savepoints new, e.g. 0,1")
    ap.add_argument("--tag", default="")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for every run (flink-jobgraph --set), e.g. spark.night_java_options= for the "
                    "re-runs without the night's JVM")  # fmt: skip
    ap.add_argument("--keep", action="store_true", help="keep the fleet and its output (a temporary folder)")
    args = ap.parse_args()
    cases, metadata = _cases(args.checks // 2)
    work = Path(tempfile.mkdtemp(prefix="restore-bench-"))
    folder = write_case_fleet(cases, metadata, work / "fleet")
    out = work / "out"
    summary_json = work / "summary.json"
    cmd = [
        str(ROOT / ".venv" / "bin" / "flink-jobgraph"), "check-restore", "--graphs", str(folder / "graphs"),
        "--checks", str(folder / "checks.jsonl"), "--output", str(out), "--summary-json", str(summary_json),
    ]  # fmt: skip
    if args.no_proof:
        cmd.append("--no-proof")
    for setting in args.set:
        cmd += ["--set", setting]
    proc, wall, cpu, stderr = run_timed(cmd)
    result = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(cmd[1:]),
        "checks": args.checks,
        "jobs": len(cases),
        "case_sets": [p.name for p in CASE_SETS],
        "proof": not args.no_proof,
        "exit_code": proc.returncode,
        "wall_seconds": round(wall, 1),
        "cpu_seconds_process_tree": round(cpu, 1),
        "load_average_after": os.getloadavg(),
        "summary": json.loads(summary_json.read_text()) if summary_json.exists() else None,
        "stderr_tail": stderr[-2000:],
    }
    reruns = []
    for share in [float(x) for x in args.rerun.split(",") if x.strip()]:
        n_new = round(len(cases) * share / 100)
        for i in range(n_new):  # job i gets job i+1's savepoint: a new one, with other operators
            donor = cases[(i + 1) % len(cases)]
            (folder / "savepoints" / cases[i]["case_id"] / "_metadata").write_bytes(
                metadata[donor["savepoint_metadata"]]
            )
        proc, wall, cpu, stderr = run_timed(cmd)
        summary = json.loads(summary_json.read_text()) if summary_json.exists() else {}
        reruns.append({
            "savepoints_new_percent": share, "savepoints_new": n_new, "exit_code": proc.returncode,
            "wall_seconds": round(wall, 1), "cpu_seconds_process_tree": round(cpu, 1),
            "checks_decided": summary.get("checks"), "checks_unchanged": summary.get("checks_unchanged"),
            "stderr_tail": stderr[-2000:],
        })  # fmt: skip
        print(json.dumps({k: v for k, v in reruns[-1].items() if k != "stderr_tail"}))
    result["reruns"] = reruns
    name = time.strftime("%Y%m%d-%H%M%S") + f"-restore-{args.checks}" + (f"-{args.tag}" if args.tag else "") + ".json"
    (ROOT / "bench" / "results" / name).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("checks", "exit_code", "wall_seconds", "cpu_seconds_process_tree")}))
    print(f"-> bench/results/{name}")
    if args.keep:
        print(f"fleet and output kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
