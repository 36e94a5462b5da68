"""Fleets of real Flink programs for the benchmark, plus Flink's own JobGraph time for them.

    python bench/make_fleet.py --fleets 1000,2000,10000 [--seed 1] [--jobs 2]
    python bench/make_fleet.py --fleets "" --long-chain-fleets 10000 [--jobs 1]

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

5. ``--long-chain-fleets N``: the fleet ``fleet-Nk-longchain`` of N graphs, 95% the normal
   chunks 0..0.95N/100-1 (the same files as fleet-N, hard links, never regenerated) and 5%
   long-chain programs (``generate --long-chain --chain-min 50 --chain-max 500``: DataStream
   programs shaped like a compiled SQL job whose longest chain has 50-500 operators) in the
   chunks ``lcNNNN`` (``--start`` 1,000,000 + j*100, so their indexes and ids
   ``flink-2.3-longchain-s1-<index>`` never meet a normal chunk's). Its plan lists both kinds
   (``start count min max [generate options]``), so ``time`` rebuilds exactly these programs.

Every fleet's manifest also gives the distribution of each graph's longest chain (operators in
its largest job vertex, from ``expected`` in the raw chunks; cached in ``chunks/*.chains.json``).

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


# the long-chain fleets: this share of the graphs are long-chain programs, in chunks "lcNNNN"
LONG_CHAIN_SHARE = 0.05
LONG_CHAIN_START = 1_000_000  # --start of long-chain chunk 0: far above any normal chunk's indexes
LONG_CHAIN_RANGE = (50, 500)  # --chain-min / --chain-max


def chunk_args(k: int, chunk: int) -> dict[str, int]:
    lo, hi = SIZE_MIX[k % len(SIZE_MIX)]
    return {"start": k * chunk, "count": chunk, "min-size": lo, "max-size": hi}


def long_chain_args(j: int, chunk: int) -> dict[str, int]:
    """generate arguments of long-chain chunk j (min/max-size: generate's defaults, unused)."""
    return {"start": LONG_CHAIN_START + j * chunk, "count": chunk, "min-size": 2, "max-size": 560}


LONG_CHAIN_FLAGS = ["--long-chain", "--chain-min", str(LONG_CHAIN_RANGE[0]), "--chain-max", str(LONG_CHAIN_RANGE[1])]


def chunk_name(k: int, long_chain: bool = False) -> str:
    return f"lc{k:04d}" if long_chain else f"c{k:04d}"


def longest_chain(expected: dict) -> int:
    """Operators in the largest job vertex of Flink's answer (0 if Flink rejected the program)."""
    per: dict[str, int] = {}
    for op in (expected.get("operators") or {}).values():
        v = op["jobvertex_id"]
        per[v] = per.get(v, 0) + 1
    return max(per.values(), default=0)


def chunk_chains(name: str) -> list[int] | None:
    """Each graph's longest chain in chunk ``name`` (from its raw file's ``expected``; cached)."""
    cache = DATA / "chunks" / f"{name}.chains.json"
    if cache.exists():
        return json.loads(cache.read_text())
    raw = DATA / "raw" / f"{name}.jsonl.gz"
    if not raw.exists():
        return None
    with gzip.open(raw, "rt", encoding="utf-8") as f:
        chains = [longest_chain(json.loads(line)["expected"]) for line in f]
    cache.write_text(json.dumps(chains))
    return chains


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


def make_chunk(jar: str, seed: int, k: int, chunk: int, long_chain: bool = False) -> tuple[int, list[int], float]:
    """Generates chunk k (if missing; long-chain chunk k with ``long_chain``) and returns (k, node counts, seconds)."""
    t0 = time.perf_counter()
    name = chunk_name(k, long_chain)
    raw = DATA / "raw" / f"{name}.jsonl.gz"
    spec = DATA / "chunks" / f"{name}.jsonl.gz"
    sizes_file = DATA / "chunks" / f"{name}.sizes.json"
    if sizes_file.exists() and spec.exists():
        return k, json.loads(sizes_file.read_text()), 0.0
    if not raw.exists():
        part = raw.with_name(raw.name + ".part.gz")
        args = long_chain_args(k, chunk) if long_chain else chunk_args(k, chunk)
        cmd = ["java", "-jar", jar, "generate", "--seed", str(seed), "--out", str(part)]
        for key, v in args.items():
            cmd += [f"--{key}", str(v)]
        if long_chain:
            cmd += LONG_CHAIN_FLAGS
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


def chain_distribution(chains: list[int]) -> dict[str, float]:
    """Distribution of the graphs' longest chains; graphs Flink rejects (no chains) counted apart."""
    d = distribution([x for x in chains if x > 0])
    d["operators_in_longest_chains"] = d.pop("stream_nodes")
    d["flink_rejected"] = sum(1 for x in chains if x == 0)
    return d


def file_sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fleets", default="1000,2000,10000", help="fleet sizes (graphs), multiples of --chunk")
    ap.add_argument(
        "--long-chain-fleets",
        default="",
        help="sizes of fleet-Nk-longchain fleets (95%% normal chunks, 5%% long-chain programs), e.g. 10000",
    )
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

    fleets = sorted({int(x) for x in args.fleets.split(",") if x.strip()})
    lc_fleets = sorted({int(x) for x in args.long_chain_fleets.split(",") if x.strip()})
    if any(n % args.chunk for n in fleets):
        sys.exit(f"fleet sizes must be multiples of --chunk {args.chunk}")
    if any(round(n * LONG_CHAIN_SHARE) % args.chunk for n in lc_fleets):
        sys.exit(f"long-chain fleet sizes: {LONG_CHAIN_SHARE:.0%} of them must be a multiple of --chunk {args.chunk}")
    # fleet name -> (normal chunks, long-chain chunks)
    plans: dict[str, tuple[range, range]] = {}
    for n in fleets:
        plans[fleet_name(n)] = (range(n // args.chunk), range(0))
    for n in lc_fleets:
        n_lc = round(n * LONG_CHAIN_SHARE) // args.chunk
        plans[fleet_name(n) + "-longchain"] = (range(n // args.chunk - n_lc), range(n_lc))
    if not plans:
        sys.exit("no fleet: --fleets and/or --long-chain-fleets")
    for d in ("raw", "chunks"):
        (DATA / d).mkdir(parents=True, exist_ok=True)
    jar = harness_jar()
    n_chunks = max(len(ks) for ks, _ in plans.values())
    n_lc_chunks = max(len(js) for _, js in plans.values())

    t0 = time.perf_counter()
    sizes: dict[tuple[bool, int], list[int]] = {}
    if args.time_only:
        for name, (ks, js) in plans.items():
            write_plan(DATA / f"{name}.plan", args.seed, ks, args.chunk, js)
        time_flink(list(plans), args, jar)
        return 0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        todo = [(False, k) for k in range(n_chunks)] + [(True, j) for j in range(n_lc_chunks)]
        futs = [(lc, pool.submit(make_chunk, str(jar), args.seed, k, args.chunk, lc)) for lc, k in todo]
        for lc, f in futs:
            k, s, secs = f.result()
            sizes[(lc, k)] = s
            if secs:
                what = long_chain_args(k, args.chunk) if lc else chunk_args(k, args.chunk)
                print(
                    f"[{time.perf_counter() - t0:6.0f}s] chunk {chunk_name(k, lc)} {what}: "
                    f"{len(s)} graphs, {sum(s)} nodes, {secs:.0f}s",
                    flush=True,
                )

    for name, (ks, js) in plans.items():
        folder = DATA / name
        folder.mkdir(exist_ok=True)
        members = [(False, k) for k in ks] + [(True, j) for j in js]
        for lc, k in members:
            link = folder / f"{chunk_name(k, lc)}.jsonl.gz"
            if not link.exists():
                os.link(DATA / "chunks" / f"{chunk_name(k, lc)}.jsonl.gz", link)
        write_plan(DATA / f"{name}.plan", args.seed, ks, args.chunk, js)
        all_sizes = [x for m in members for x in sizes[m]]
        manifest = {
            "fleet": name,
            "folder": str(folder.relative_to(ROOT)),
            "seed": args.seed,
            "chunk": args.chunk,
            "size_mix": SIZE_MIX,
            "harness_jar_sha256": file_sha256(jar),
            "sizes": distribution(all_sizes),
        }
        chains = [chunk_chains(chunk_name(k, lc)) for lc, k in members]
        if all(c is not None for c in chains):
            manifest["longest_chain"] = chain_distribution([x for c in chains for x in c])
        if js:
            lc_chains = [chunk_chains(chunk_name(j, True)) for j in js]
            manifest["long_chain"] = {
                "share": LONG_CHAIN_SHARE,
                "chunks": [chunk_name(j, True) for j in js],
                "starts": [long_chain_args(j, args.chunk)["start"] for j in js],
                "flags": " ".join(LONG_CHAIN_FLAGS),
                "sizes": distribution([x for j in js for x in sizes[(True, j)]]),
                "longest_chain": chain_distribution([x for c in lc_chains if c for x in c]),
            }
        (DATA / f"{name}.json").write_text(json.dumps(manifest, indent=2))
        print(f"{name}: {json.dumps(manifest['sizes'])}", flush=True)
        if "longest_chain" in manifest:
            print(f"{name} longest chain per graph: {json.dumps(manifest['longest_chain'])}", flush=True)
        if js:
            print(f"{name} long-chain part: {json.dumps(manifest['long_chain'])}", flush=True)

    if not args.no_time:
        time_flink(list(plans), args, jar)
    return 0


def fleet_name(n: int) -> str:
    return f"fleet-{n // 1000}k" if n % 1000 == 0 else f"fleet-{n}"


def write_plan(plan: Path, seed: int, ks: range, chunk: int, js: range = range(0)) -> None:
    """One line per generate call: normal chunks ks, then long-chain chunks js (with their generate options)."""
    head = f"# start count min-size max-size (harness generate/time, --seed {seed})\n"
    if js:
        head += "# then the long-chain chunks: start count min-size max-size generate-options (min/max unused)\n"
    plan.write_text(
        head
        + "".join("{start} {count} {min-size} {max-size}\n".format(**chunk_args(k, chunk)) for k in ks)
        + "".join(
            "{start} {count} {min-size} {max-size} ".format(**long_chain_args(j, chunk))
            + " ".join(LONG_CHAIN_FLAGS)
            + "\n"
            for j in js
        )
    )


def time_flink(names: list[str], args: argparse.Namespace, jar: Path) -> None:
    for name in names:
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
