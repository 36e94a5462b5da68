"""One job's deploy gate, timed as a CI step runs it: a fresh process from command to verdict.

    python bench/gate_bench.py [--runs 5] [--rev REV] [--vs REV] [--case sp-2.3-s11-00057] [--jar-args '...']

The job: a real Flink 2.3 savepoint and its real edited job from
../shared/vectors/restore/savepoint-2.3-s11 (the case README's gate example uses), laid out as
a CI job has them (the savepoint folder, the new version's spec, the old one's). Each run is
``flink-jobgraph check-restore --savepoint DIR --graphs v2.jsonl --previous-graphs v1.json
--report R`` in a new process, as a pipeline step starts it; its wall seconds and the CPU
seconds of its whole process tree (the Python front end, Spark's JVM, the Python workers),
sampled from /proc, the exit code (1: the case fails to restore), and the stage times the run
prints (read+compute, chains, ...; "outside the check" is the wall less the last progress
line's time: Python's imports, Spark's start, the savepoint's lookup and the exit).
``--jar-args`` times the same from a jar instead (``--jar J --main-class C --flink L``: the
export on the way).

``--vs REV`` alternates each run with the code of git revision REV (A B A B ...: the machine's
drift hits both alike) and prints the ratio A/B pair by pair. Both run from snapshots of
pipeline/, udfs/ and conf/ under bench/tmp/, so edits during the runs change neither. ``--rev REV``
takes A from a git revision too (default: the working tree, which may hold others' unfinished edits).

A gate on an existing ``--output`` (a re-run: the output's fingerprints and checks read first):
``--jar-args '... --output DIR/{variant}'`` gives each version its own output (``{variant}`` is
A or B), and ``--prime`` runs each version once, untimed, before the timed runs, so that every
timed run finds its version's output from the run before.

Writes bench/results/<timestamp>-gate.json and prints one line per run and the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from restore_bench import run_timed  # noqa: E402
from run_bench import RESULTS, ROOT, TMP  # noqa: E402

VECTORS = ROOT.parent / "shared" / "vectors" / "restore" / "savepoint-2.3-s11"
_STAGE = re.compile(r"^\[\s*([\d.]+)s\] ([a-z+ ]+): ([\d.]+)s$")
CODE = ("pipeline", "udfs", "conf")


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


def _snapshot(rev: str | None, dest: Path) -> str:
    """pipeline/, udfs/ and conf/ of ``rev`` (None: the working tree) copied to ``dest``; the
    revision's short hash (or 'working tree')."""
    if rev is None:
        for d in CODE:
            shutil.copytree(ROOT / d, dest / d, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        return "working tree"
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *CODE], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def _one(code: Path, check: list[str], report: Path) -> dict:
    # pyspark.daemon runs with -m: the workers' sys.path starts with the working directory
    # the snapshot holds no harness/: a --jar run exports with this checkout's (built) harness
    env = dict(os.environ, PYTHONPATH=str(code), FLINK_JOBGRAPH_JARS=str(ROOT / ".cache" / "jars"),
               FLINK_JOBGRAPH_HARNESS=str(ROOT / "harness"))  # fmt: skip
    # --report before the check's own arguments: a jar's end with "-- ARGS" for its main()
    cmd = [sys.executable, "-m", "pipeline.cli", "check-restore", "--report", str(report), *check]
    proc, wall, cpu, stderr = run_timed(cmd, env=env, cwd=code)
    stages: dict[str, float] = {}
    last_at = None
    for line in stderr.splitlines():
        m = _STAGE.match(line.strip())
        if m:
            name, secs = m[2].strip(), float(m[3])
            stages[name] = stages.get(name, 0.0) + secs
        at_match = re.match(r"^\[\s*([\d.]+)s\]", line.strip())
        if at_match:
            last_at = float(at_match[1])
    if proc.returncode == 2:  # the check could not run: a timing of nothing
        raise SystemExit(f"the check could not run (exit 2): {stderr.strip().splitlines()[-1:]}")
    verdict = json.loads(report.with_suffix(".json").read_text())["check"]["verdict"] if report.with_suffix(
        ".json").exists() else None  # fmt: skip
    row = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 1), "exit": proc.returncode, "verdict": verdict,
           "stages_s": {k: round(v, 2) for k, v in stages.items()}}  # fmt: skip
    if last_at is not None:  # progress lines count from the check's start, after Spark's
        row["stages_s"]["outside the check (start, Spark, exit)"] = round(wall - last_at, 2)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rev", metavar="REV", help="A from this git revision (default: the working tree)")
    ap.add_argument("--vs", metavar="REV", help="alternate with the code of this git revision")
    ap.add_argument("--case", default="sp-2.3-s11-00057")
    ap.add_argument("--jar-args", default="", help="time from a jar: '--jar J --main-class C --flink L --savepoint S'")
    ap.add_argument("--prime", action="store_true", help="one untimed run per version first (a re-run's output)")
    args = ap.parse_args(argv)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    variants = {"A": args.rev} | ({"B": args.vs} if args.vs else {})
    codes, labels = {}, {}
    for name, rev in variants.items():
        codes[name] = TMP / f"gate-{stamp}-{name}"
        labels[name] = _snapshot(rev, codes[name])
    runs: dict[str, list[dict]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        check = shlex.split(args.jar_args) if args.jar_args else _layout(args.case, folder)
        checks = {name: [a.replace("{variant}", name) for a in check] for name in variants}
        if args.prime:
            for name in variants:
                primed = _one(codes[name], checks[name], folder / f"report-{name}-prime")
                print(json.dumps({"variant": name, "prime (untimed)": primed["wall_s"]}), flush=True)
        for i in range(args.runs):
            for name in variants:
                row = _one(codes[name], checks[name], folder / f"report-{name}-{i}")
                runs[name].append(row)
                print(json.dumps({"variant": name, **row}), flush=True)
    for code in codes.values():
        shutil.rmtree(code, ignore_errors=True)
    result: dict = {"case": args.case if not args.jar_args else args.jar_args, "variants": labels, "runs": runs}
    for name in variants:
        walls = [r["wall_s"] for r in runs[name]]
        result[f"{name}_wall_median_s"] = statistics.median(walls)
        result[f"{name}_cpu_median_s"] = statistics.median(r["cpu_s"] for r in runs[name])
    if args.vs:
        ratios = [a["wall_s"] / b["wall_s"] for a, b in zip(runs["A"], runs["B"], strict=True)]
        result["A/B_wall_ratios"] = [round(r, 3) for r in ratios]
        result["A/B_wall_ratio_median"] = round(statistics.median(ratios), 3)
    result["load_after"] = open("/proc/loadavg").read().split()[:3]
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{stamp}-gate.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    summary = ", ".join(f"{n} ({labels[n]}) wall {result[f'{n}_wall_median_s']} s, cpu {result[f'{n}_cpu_median_s']} s"
                        for n in variants)  # fmt: skip
    if args.vs:
        summary += f"; A/B wall median {result['A/B_wall_ratio_median']}"
    print(f"medians over {args.runs} runs: {summary} -> {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
