"""The nightly case: a fleet computed once, then re-run with 0%, 1% and 10% of its graphs changed.

    python bench/nightly_bench.py fleet-10k [--changes 0,1,10] [--seed 7]

In ONE process (one SparkSession, as run_bench.py): the fleet computed into an empty output
(the first run), then, per share of changed graphs, a copy of that output re-run
incrementally (the default ``compute``) on a copy of the fleet in which that share of graphs
got a change of the kinds users make, in turn: a uid added to an operator that had none, an
operator inserted between two others (a forward map), the job's parallelism changed. Each
re-run is checked against the expected counts (the changed graphs recomputed, the others
skipped). Flink's time is bench/data/<fleet>.flink.json (make_fleet.py: createJobGraph over the
whole fleet in one JVM); the ratio is wall seconds of the run / Flink's seconds for the fleet.
Whole-tree CPU seconds (driver, JVM, Python workers) beside the wall time.

Writes bench/results/<timestamp>-<fleet>-nightly.json and prints one line per run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_bench import RESULTS, TMP, MemorySampler, _resolve_fleet, _snapshot_code  # noqa: E402

CHANGES = ("uid added", "operator inserted", "parallelism changed")


def _change(graph: dict, kind: str, rng: random.Random) -> dict:
    """One change of ``kind`` to a graph (a copy), keeping the spec one Flink accepts."""
    g = json.loads(json.dumps(graph))
    nodes = g["nodes"]
    if kind == "uid added":
        free = [n for n in nodes if not n.get("uid")] or nodes
        n = rng.choice(free)
        n["uid"] = f"nightly-uid-{n['id']}"
    elif kind == "operator inserted":
        # a .map() right behind an operator: a -> map forward (a's parallelism), map -> b as
        # the edge a -> b was (side outputs left alone: their tag is on a's output)
        edge = rng.choice([e for e in g["edges"] if not e.get("output_tag")] or g["edges"])
        up = next(n for n in nodes if n["id"] == edge["source"])
        new_id = max(n["id"] for n in nodes) + 1
        nodes.append({"id": new_id, "name": "Map (inserted)", "parallelism": up.get("parallelism", 1)})
        g["edges"].append(dict(edge, source=new_id))
        edge.update(target=new_id, partitioner="FORWARD")
    else:  # env.setParallelism(p): every operator at the job's most common parallelism moves
        common = max({n.get("parallelism", 1) for n in nodes}, key=[n.get("parallelism", 1) for n in nodes].count)
        p = rng.choice([q for q in (2, 3, 4, 6, 8) if q != common])
        for n in nodes:
            if n.get("parallelism", 1) == common:
                n["parallelism"] = p
    return g


def _changed_fleet(src: Path, dest: Path, share: float, seed: int) -> tuple[int, dict[str, int]]:
    """A copy of the fleet's files with ``share`` of its graphs changed; (graphs, changed per kind)."""
    rng = random.Random(seed)
    dest.mkdir(parents=True)
    total, kinds = 0, {k: 0 for k in CHANGES}
    files = sorted(f for f in src.iterdir() if f.name.endswith((".jsonl.gz", ".jsonl")))
    for f in files:
        opener = gzip.open if f.name.endswith(".gz") else open
        with opener(f, "rt") as fh:
            lines = fh.read().splitlines()
        out, changed = [], False
        for line in lines:
            if not line.strip():
                continue
            total += 1
            if rng.random() < share:
                kind = CHANGES[sum(kinds.values()) % len(CHANGES)]
                kinds[kind] += 1
                line = json.dumps(_change(json.loads(line), kind, rng))
                changed = True
            out.append(line)
        if not changed:  # the same lines: the file itself (gzip at level 9 took minutes at 100k)
            shutil.copyfile(f, dest / f.name)
            continue
        gz = f.name.endswith(".gz")
        with gzip.open(dest / f.name, "wt", compresslevel=6) if gz else open(dest / f.name, "w") as fh:
            fh.write("\n".join(out) + "\n")
    return total, kinds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fleet", help="fleet name under bench/data (fleet-10k) or a spec folder")
    ap.add_argument("--changes", default="0,1,10", help="percentages of graphs changed, one re-run each")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)

    stamp = time.strftime("%Y%m%d-%H%M%S")
    name, input_path, _manifest, flink = _resolve_fleet(args.fleet)
    flink_s = (flink or {}).get("seconds") or (flink or {}).get("flink_seconds")
    work = TMP / f"nightly-{stamp}-{name}"
    work.mkdir(parents=True)
    code = _snapshot_code(TMP / f"code-{stamp}")
    from pipeline.compute.run import Progress, compute
    from pipeline.session import get_spark
    from pipeline.settings import load_settings

    settings = load_settings()
    mem = MemorySampler()
    mem.start()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    spark = get_spark(settings, app_name=f"nightly-{name}")
    quiet = Progress(enabled=False)
    runs = []

    def timed(label: str, inp: Path, out: Path, **expect: int) -> None:
        cpu0, t0 = mem.tree_cpu(), time.perf_counter()
        s = compute(spark, str(inp), str(out), settings, quiet)
        wall, cpu = time.perf_counter() - t0, mem.tree_cpu() - cpu0
        got = {k: getattr(s, f"graphs_{k}") for k in ("skipped", "recomputed", "new", "rejected")}
        row = {"run": label, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), **got, "graphs_in": s.graphs_in}
        if flink_s:
            row["ratio"] = round(wall / flink_s, 3)
        bad = {k: (got[k], v) for k, v in expect.items() if got[k] != v}
        if bad:
            row["unexpected"] = bad
        runs.append(row)
        print(json.dumps(row), flush=True)

    # the fleet's files at one path, as a nightly export rewrites them in place (a rejected
    # graph is skipped only when read from the file its error row names)
    inp = work / "in"
    _changed_fleet(input_path, inp, 0.0, args.seed)
    base = work / "out-base"
    timed("first run", inp, base)
    for pct in (float(x) for x in args.changes.split(",")):
        shutil.rmtree(inp)
        total, kinds = _changed_fleet(input_path, inp, pct / 100, args.seed)
        out = work / f"out-{pct:g}"
        shutil.copytree(base, out)
        changed = sum(kinds.values())
        label = f"{pct:g}% changed ({changed}: {kinds})"
        timed(label, inp, out, recomputed=changed, skipped=total - changed)
        shutil.rmtree(out)
    mem.stop()
    spark.stop()
    result = {
        "fleet": name,
        "flink_seconds": flink_s,
        "runs": runs,
        "uptime_before": uptime,
        "peak_rss_mb": round(mem.peak_total / 2**20),
        **code,
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{stamp}-{name}-nightly.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"-> {path.relative_to(RESULTS.parent.parent)}")
    shutil.rmtree(work, ignore_errors=True)
    os.chdir(RESULTS.parent.parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
