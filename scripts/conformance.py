"""Differential conformance run: N fresh random Flink programs vs. the real pipeline.

    python scripts/conformance.py --version 2.3 --count 2000 [--seed 7001] [--batch] [--sql]

Builds the harness for that Flink line if needed (Maven), lets it generate N random
DataStream (or, with --sql, Table/SQL) programs with Flink's own JobGraph answers, runs them through the real
pipeline (Spark, Delta) and prints the match rate per aspect and the first mismatches.
The result is also saved as JSON under ``conformance/results/`` (README quotes it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from devtools.conformance import compare_tables, read_vector_file  # noqa: E402
from pipeline.compute.run import Progress, compute  # noqa: E402
from pipeline.session import get_spark  # noqa: E402
from pipeline.settings import load_settings  # noqa: E402


def harness_jar(version: str) -> Path:
    jar = ROOT / "harness" / "target" / f"flink-{version}" / "flink-jobgraph-harness.jar"
    if not jar.exists():
        print(f"building the harness for Flink {version} ...", file=sys.stderr)
        pom = str(ROOT / "harness" / "pom.xml")
        subprocess.run(["mvn", "-q", "-f", pom, f"-Pflink-{version}", "package"], check=True)
    return jar


def _setting(settings, section: str, key: str):
    """One setting for the result record, from the settings object or a plain dict (None if absent)."""
    sec = settings.get(section) if isinstance(settings, dict) else getattr(settings, section, None)
    if sec is None:
        return None
    return sec.get(key) if isinstance(sec, dict) else getattr(sec, key, None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", required=True, help="Flink line, e.g. 2.3")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7001, help="harness seed (golden sets use 42)")
    ap.add_argument(
        "--start", type=int, default=0, help="first program index (a run in parts: --start 1000 --count 1000 ...)"
    )
    ap.add_argument("--input", help="use this vector file instead of generating one")
    ap.add_argument("--jar", help="generate with this harness jar (e.g. a copy, so a rebuild cannot change it mid-run)")
    ap.add_argument("--show", type=int, default=10, help="mismatches to print")
    ap.add_argument(
        "--batch", action="store_true", help="BATCH programs (execution.runtime-mode=BATCH; harness generate --batch)"
    )
    ap.add_argument(
        "--sql",
        action="store_true",
        help="random Table/SQL programs (harness generate --sql; with --batch in BATCH mode; Flink 1.15+)",
    )
    args = ap.parse_args()
    kind = ("sql-" if args.sql else "") + ("batch-" if args.batch else "")

    with tempfile.TemporaryDirectory(prefix="fj-conformance-") as tmp:
        t0 = time.perf_counter()
        if args.input:
            vectors = Path(args.input)
        else:
            vectors = Path(tmp) / f"flink-{args.version}-{kind}s{args.seed}.jsonl.gz"
            cmd = [
                "java",
                "-jar",
                args.jar or str(harness_jar(args.version)),
                "generate",
                "--seed",
                str(args.seed),
                "--count",
                str(args.count),
                "--start",
                str(args.start),
                "--out",
                str(vectors),
            ]
            if args.batch:
                cmd.append("--batch")
            if args.sql:
                cmd.append("--sql")
            subprocess.run(cmd, check=True)
        gen_s = time.perf_counter() - t0
        graphs = list(read_vector_file(vectors))
        settings = load_settings()
        spark = get_spark(settings)
        t1 = time.perf_counter()
        out = str(Path(tmp) / "out")
        summary = compute(spark, str(vectors), out, settings, Progress(enabled=True))
        run_s = time.perf_counter() - t1
        report = compare_tables(spark, out, graphs, max_mismatches=args.show)

    nodes = sum(len(g["nodes"]) for g in graphs)
    # programs where the SQL planner fused operators into a MultipleInput operator (BATCH)
    multiple_input = sum(any(n["name"].startswith("MultipleInput") for n in g["nodes"]) for g in graphs)
    mode = "BATCH" if args.batch else "STREAMING"
    program_kind = "SQL" if args.sql else "DataStream"
    head = f"Flink {args.version} {program_kind} {mode}: {report.graphs} programs ({nodes} stream nodes)"
    part = f", programs {args.start}-{args.start + args.count - 1}" if args.start else ""
    print(f"\n{head}, seed {args.seed}{part}")
    print(report.table())
    for m in report.mismatches:
        print("  MISMATCH", m)
    all_ok = report.ok()
    print("ALL ASPECTS 100%" if all_ok else "MISMATCHES FOUND")
    results = ROOT / "conformance" / "results"
    results.mkdir(parents=True, exist_ok=True)
    source = args.input or "harness"
    record = {
        "flink_version": args.version,
        "flink_release": graphs[0]["expected"].get("flink_version_full") if graphs else None,
        "programs": report.graphs,
        "stream_nodes": nodes,
        "programs_with_multiple_input": multiple_input,
        "seed": None if args.input else args.seed,
        "start": None if args.input else args.start,
        "runtime_mode": mode,
        "program_kind": program_kind,
        "source": source,
        "rates": report.rates(),
        "matched": report.matched,
        "checked": report.checked,
        "all_match": all_ok,
        "generate_seconds": round(gen_s, 1),
        "pipeline_seconds": round(run_s, 1),
        "chains_engine": summary.chains_engine,
        "hashing_executor": _setting(settings, "hashing", "executor"),
        "executor": getattr(summary, "executor", None),
        "chains_algorithm": _setting(settings, "chains", "graphframes_algorithm"),
        "git_commit": subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "command": " ".join(sys.argv),
    }
    name = f"flink-{args.version}-" + kind
    name += Path(args.input).stem if args.input else f"s{args.seed}-n{args.count}"
    if args.start and not args.input:
        name += f"-from{args.start}"
    (results / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
