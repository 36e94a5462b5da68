"""Fleets of real Flink programs for the benchmark, plus Flink's own JobGraph time for them.

    python bench/make_fleet.py --fleets 1000,2000,10000 [--seed 1] [--jobs 2]

What it does (everything under bench/data/, gitignored; re-running resumes):

1. Snapshots the harness build (harness/target/flink-2.3: jar + lib/) into bench/data/harness/
   once, so ``generate`` and ``time`` below run the very same Generator even if the checkout's
   harness changes later (delete the folder to take a new build).
2. Generates chunks of ``--chunk`` (100) programs with ``generate --seed S --start k*100
   --count 100 --min-size A --max-size B``, where (A, B) cycles through SIZE_MIX (10 chunks =
   1,000 graphs per cycle), ``--jobs`` at a time. A chunk file is written to ``.part`` and
   renamed when complete, so an interrupted run resumes. ``raw/cNNNN.jsonl.gz`` is the harness
   output (spec + ``expected`` + ``meta``, for conformance checks); ``chunks/cNNNN.jsonl.gz`` is
   the same graphs as plain spec lines (``expected``/``meta`` dropped): the pipeline input,
   what a user's export would be.
3. A fleet of N graphs is the folder ``fleet-N/`` holding hard links to chunks 0..N/100-1
   (a folder of gzip files, so Spark reads it with one task per file), with
   ``fleet-N.json`` (seed, chunk plan, size distribution) and ``fleet-N.plan``.
4. Flink's time: ``time --seed S --plan fleet-N.plan`` (the same generate arguments, all
   chunks in one JVM, one warm-up over the first 200 programs) -> ``fleet-N.flink.json``.

Why the size mix: the harness's own size distribution is "mostly 2-40 nodes, 10% 100-560";
a fleet of production jobs is bigger. ``--min-size`` clamps the target size from below, so
chunks with different minimums give a fleet of mostly 10-200-node graphs with a median of
about 115 nodes and 1% of several hundred (the (100, 600) chunks).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"
HARNESS_BUILD = ROOT / "harness" / "target" / "flink-2.3"
JAR_NAME = "flink-jobgraph-harness.jar"

# (min-size, max-size) of chunk k is SIZE_MIX[k % 10]
SIZE_MIX = [
    (10, 200),
    (40, 200),
    (70, 200),
    (90, 200),
    (100, 200),
    (100, 200),
    (110, 200),
    (120, 250),
    (140, 300),
    (100, 600),
]


def harness_jar() -> Path:
    snap = DATA / "harness"
    if not (snap / JAR_NAME).exists():
        if not (HARNESS_BUILD / JAR_NAME).exists():
            sys.exit(f"no harness build at {HARNESS_BUILD}: mvn -q -o -f harness/pom.xml -Pflink-2.3 package")
        tmp = DATA / "harness.part"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(HARNESS_BUILD, tmp, ignore=shutil.ignore_patterns("classes", "generated-sources", "maven-*"))
        tmp.rename(snap)
    return snap / JAR_NAME


def chunk_args(k: int, chunk: int) -> dict[str, int]:
    lo, hi = SIZE_MIX[k % len(SIZE_MIX)]
    return {"start": k * chunk, "count": chunk, "min-size": lo, "max-size": hi}


def _strip(raw: Path, out: Path) -> tuple[int, list[int]]:
    sizes = []
    part = out.with_name(out.name + ".part")
    with gzip.open(raw, "rt", encoding="utf-8") as src, gzip.open(part, "wt", encoding="utf-8", compresslevel=6) as dst:
        for line in src:
            rec = json.loads(line)
            rec.pop("expected", None)
            rec.pop("meta", None)
            sizes.append(len(rec["nodes"]))
            dst.write(json.dumps(rec, separators=(",", ":")))
            dst.write("\n")
    part.rename(out)
    return len(sizes), sizes


def make_chunk(jar: str, seed: int, k: int, chunk: int) -> tuple[int, list[int], float]:
    """Generates chunk k (if missing) and returns (k, node counts, seconds)."""
    t0 = time.perf_counter()
    raw = DATA / "raw" / f"c{k:04d}.jsonl.gz"
    spec = DATA / "chunks" / f"c{k:04d}.jsonl.gz"
    sizes_file = DATA / "chunks" / f"c{k:04d}.sizes.json"
    if sizes_file.exists() and spec.exists():
        return k, json.loads(sizes_file.read_text()), 0.0
    if not raw.exists():
        part = raw.with_name(raw.name + ".part.gz")
        args = chunk_args(k, chunk)
        cmd = ["java", "-jar", jar, "generate", "--seed", str(seed), "--out", str(part)]
        for key, v in args.items():
            cmd += [f"--{key}", str(v)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        part.rename(raw)
    _, sizes = _strip(raw, spec)
    sizes_file.write_text(json.dumps(sizes))
    return k, sizes, time.perf_counter() - t0


def distribution(sizes: list[int]) -> dict[str, float]:
    s = sorted(sizes)

    def q(p: float) -> int:
        return s[min(len(s) - 1, round(p * (len(s) - 1)))]

    return {
        "graphs": len(s),
        "stream_nodes": sum(s),
        "mean": round(statistics.fmean(s), 1),
        "min": s[0],
        "p10": q(0.10),
        "p25": q(0.25),
        "median": q(0.50),
        "p75": q(0.75),
        "p90": q(0.90),
        "p99": q(0.99),
        "max": s[-1],
        "over_200": sum(1 for x in s if x > 200),
        "over_300": sum(1 for x in s if x > 300),
    }


def file_sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fleets", default="1000,2000,10000", help="fleet sizes (graphs), multiples of --chunk")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2, help="generate processes at once")
    ap.add_argument("--no-time", action="store_true", help="skip Flink's timing (fleet-N.flink.json)")
    ap.add_argument("--retime", action="store_true", help="time Flink again even if fleet-N.flink.json exists")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument(
        "--time-only",
        action="store_true",
        help="only Flink's timing (it regenerates the programs itself, so it needs no chunk files)",
    )
    args = ap.parse_args()

    fleets = sorted({int(x) for x in args.fleets.split(",")})
    if any(n % args.chunk for n in fleets):
        sys.exit(f"fleet sizes must be multiples of --chunk {args.chunk}")
    for d in ("raw", "chunks"):
        (DATA / d).mkdir(parents=True, exist_ok=True)
    jar = harness_jar()
    n_chunks = max(fleets) // args.chunk

    t0 = time.perf_counter()
    sizes: dict[int, list[int]] = {}
    if args.time_only:
        for n in fleets:
            name = fleet_name(n)
            write_plan(DATA / f"{name}.plan", args.seed, range(n // args.chunk), args.chunk)
        time_flink(fleets, args, jar)
        return 0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futs = [pool.submit(make_chunk, str(jar), args.seed, k, args.chunk) for k in range(n_chunks)]
        for f in futs:
            k, s, secs = f.result()
            sizes[k] = s
            if secs:
                print(
                    f"[{time.perf_counter() - t0:6.0f}s] chunk {k} {chunk_args(k, args.chunk)}: "
                    f"{len(s)} graphs, {sum(s)} nodes, {secs:.0f}s",
                    flush=True,
                )

    for n in fleets:
        name = fleet_name(n)
        folder = DATA / name
        folder.mkdir(exist_ok=True)
        ks = range(n // args.chunk)
        for k in ks:
            link = folder / f"c{k:04d}.jsonl.gz"
            if not link.exists():
                os.link(DATA / "chunks" / f"c{k:04d}.jsonl.gz", link)
        write_plan(DATA / f"{name}.plan", args.seed, ks, args.chunk)
        all_sizes = [x for k in ks for x in sizes[k]]
        manifest = {
            "fleet": name,
            "folder": str(folder.relative_to(ROOT)),
            "seed": args.seed,
            "chunk": args.chunk,
            "size_mix": SIZE_MIX,
            "harness_jar_sha256": file_sha256(jar),
            "sizes": distribution(all_sizes),
        }
        (DATA / f"{name}.json").write_text(json.dumps(manifest, indent=2))
        print(f"{name}: {json.dumps(manifest['sizes'])}", flush=True)

    if not args.no_time:
        time_flink(fleets, args, jar)
    return 0


def fleet_name(n: int) -> str:
    return f"fleet-{n // 1000}k" if n % 1000 == 0 else f"fleet-{n}"


def write_plan(plan: Path, seed: int, ks: range, chunk: int) -> None:
    plan.write_text(
        f"# start count min-size max-size (harness generate/time, --seed {seed})\n"
        + "".join("{start} {count} {min-size} {max-size}\n".format(**chunk_args(k, chunk)) for k in ks)
    )


def time_flink(fleets: list[int], args: argparse.Namespace, jar: Path) -> None:
    for n in fleets:
        name = fleet_name(n)
        out = DATA / f"{name}.flink.json"
        if out.exists() and not args.retime:
            print(f"{name}: Flink time already in {out.relative_to(ROOT)}")
            continue
        cmd = [
            "java", "-jar", str(jar), "time", "--seed", str(args.seed),
            "--plan", str(DATA / f"{name}.plan"), "--warmup", str(args.warmup),
        ]  # fmt: skip
        load_before = os.getloadavg()
        res = subprocess.run(cmd, check=True, capture_output=True, text=True)
        timing = json.loads(res.stdout.strip().splitlines()[-1])
        timing["command"] = " ".join(cmd).replace(str(ROOT) + "/", "")
        timing["loadavg_before"] = load_before
        timing["loadavg_after"] = os.getloadavg()
        timing["timed_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        mf = DATA / f"{name}.json"  # absent with --time-only before generation: run_bench checks then
        manifest = json.loads(mf.read_text()) if mf.exists() else None
        if manifest and timing["stream_nodes"] != manifest["sizes"]["stream_nodes"]:
            sys.exit(
                f"{name}: time saw {timing['stream_nodes']} nodes, the fleet has {manifest['sizes']['stream_nodes']}"
            )
        out.write_text(json.dumps(timing, indent=2))
        print(
            f"{name}: Flink createJobGraph {timing['flink_seconds']:.1f}s wall, {timing['flink_cpu_seconds']:.1f}s CPU "
            f"({timing['per_node_us']:.0f} us/node) for {timing['programs']} programs, {timing['stream_nodes']} nodes",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
