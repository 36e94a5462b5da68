"""The nightly case as a scheduler runs it: every run a fresh process, alternated with the code
before a change.

    python bench/nightly_bench.py fleet-10k --before REV [--after REV] [--rounds 3] \\
        [--changes 0,1] [--launchers cli,spark-submit] [--retime-flink] [--in-process]

A scheduled nightly job (cron with ``spark-submit``, an Airflow task, a Databricks job cluster)
starts a new process every night: Python's imports, Spark's start and every first use of a cold
JVM are part of what it pays. So each run here is its own process (bench/fresh_run.py), started
as a user starts it: ``flink-jobgraph compute`` (``python -m pipeline.cli compute`` of the code
under test), and ``spark-submit jobs/compute_jobgraphs.py`` (``--master local[2]
--driver-memory 6g``, the CLI's session). For each launcher and round, with the two versions'
order alternated from round to round (A B, then B A, ...) so that the machine's drift hits
both alike:

1. the full run: the fleet into an empty output, per version (each version computes its own
   output: a version's rules are part of its fingerprints);
2. per share of changed graphs (``--changes``, percent): a copy of that version's full output,
   re-run on the fleet with that share of graphs changed as users change them: a uid added to
   an operator that had none (exactly round(share x graphs) graphs, the same ones for both
   versions). 0: the same files again, the unchanged night. The run's counts are checked
   (the changed graphs recomputed, every other one skipped).

The fleet's files stay at one path throughout (a rejected graph is skipped only when read from
the file its error row names): each run's input is linked into that folder before it starts.

The two versions are ``git archive`` snapshots of ``pipeline/``, ``udfs/``, ``conf/`` and ``jobs/``
at ``--after`` (default HEAD) and ``--before``, run with this checkout's venv, jars and JVM
class-data-sharing archive. Per run: wall seconds, the process tree's CPU seconds, when its
first progress line came and the CPU by then, its counts; with ``--event-log``, also the
Spark jobs and SQL executions before that line (Spark's event log, nightly runs only). The
event log is off by default: the CLI does not write one, and the full runs were always timed
without it, so a night timed with it paid for writing a JSON line per task and SQL event, on
the same two cores, that its full run did not (its cost alone was not measured apart from the
hour's drift: docs/benchmarks.md). Then, per launcher, version and kind, the
medians, each night's ratio to its version's full run and to Flink's ``createJobGraph`` time
for the same programs (bench/data/<fleet>.flink.json; ``--retime-flink`` times Flink again
right before the runs, with bench/make_fleet.py's timing, so both are of the same hour), and the
A/B ratios pair by pair.

``--in-process`` also runs the earlier form of this benchmark for version A: the first run and
each night in ONE warm Spark session inside one Python process. That figure leaves out what a
fresh process pays (Spark's start, the cold JVM's first reads), so it is kept beside the others,
labelled, never in their place.

Writes bench/results/<timestamp>-<fleet>-nightly-fresh.json and prints one line per run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fresh_run  # noqa: E402
from run_bench import RESULTS, ROOT, TMP, _resolve_fleet  # noqa: E402

CHANGES = ("uid added", "operator inserted", "parallelism changed")
CODE = ("pipeline", "udfs", "conf", "jobs")
FLINK_KEYS = ("flink_seconds", "flink_cpu_seconds", "timed_at", "loadavg_before", "programs", "stream_nodes")


# ---- the changes -------------------------------------------------------------------------


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


def _spec_files(src: Path) -> list[Path]:
    return sorted(f for f in src.iterdir() if f.name.endswith((".jsonl.gz", ".jsonl")))


def _count_lines(files: list[Path]) -> int:
    total = 0
    for f in files:
        with (gzip.open if f.name.endswith(".gz") else open)(f, "rt") as fh:
            total += sum(1 for line in fh if line.strip())
    return total


def _changed_fleet(
    src: Path, dest: Path, share: float, seed: int, kinds: tuple[str, ...] = CHANGES, exact: bool = False
) -> tuple[int, dict[str, int]]:
    """A copy of the fleet's files with ``share`` of its graphs changed; (graphs, changed per
    kind). ``exact``: exactly round(share x graphs) graphs, chosen with ``seed`` (else each graph
    with probability ``share``, as the in-process benchmark always did); the kinds in turn."""
    rng = random.Random(seed)
    dest.mkdir(parents=True)
    files = _spec_files(src)
    total = _count_lines(files) if exact else 0
    chosen = set(rng.sample(range(total), round(share * total))) if exact else set()
    index, kinds_done = 0, {k: 0 for k in kinds}
    for f in files:
        opener = gzip.open if f.name.endswith(".gz") else open
        with opener(f, "rt") as fh:
            lines = [line for line in fh.read().splitlines() if line.strip()]
        out, changed = [], False
        for line in lines:
            if (index in chosen) if exact else (rng.random() < share):
                kind = kinds[sum(kinds_done.values()) % len(kinds)]
                kinds_done[kind] += 1
                line = json.dumps(_change(json.loads(line), kind, rng))
                changed = True
            out.append(line)
            index += 1
        if not changed:  # the same bytes: the file itself (gzip at level 9 took minutes at 100k)
            os.link(f, dest / f.name) if _same_device(f, dest) else shutil.copyfile(f, dest / f.name)
            continue
        gz = f.name.endswith(".gz")
        with gzip.open(dest / f.name, "wt", compresslevel=6) if gz else open(dest / f.name, "w") as fh:
            fh.write("\n".join(out) + "\n")
    return index, kinds_done


def _same_device(a: Path, folder: Path) -> bool:
    return a.stat().st_dev == folder.stat().st_dev


def _link_input(variant: Path, inp: Path) -> None:
    """The night's files at the one input path (hard links: no bytes copied)."""
    shutil.rmtree(inp, ignore_errors=True)
    inp.mkdir(parents=True)
    for f in variant.iterdir():
        os.link(f, inp / f.name)


# ---- the versions --------------------------------------------------------------------------


def _snapshot(rev: str, dest: Path) -> str:
    """``CODE`` of git revision ``rev`` extracted to ``dest`` (with this checkout's ``.cache``:
    the jars and the JVM's class-data-sharing archive); the revision's full hash."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *CODE], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    (dest / ".cache").symlink_to(ROOT / ".cache")
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


# ---- one run ----------------------------------------------------------------------------------


def _one(
    code: Path, launcher: str, inp: Path, out: Path, summary: Path, event_log: bool, expect: dict[str, int]
) -> dict[str, Any]:
    args = ["--input", str(inp), "--output", str(out), "--summary-json", str(summary)]
    load = os.getloadavg()
    row = fresh_run.run(args if launcher == "spark-submit" else ["compute", *args], code,
                        launcher == "spark-submit", event_log)  # fmt: skip
    if row["exit"] != 0:
        tail = [line for _, _, line in row["lines"]][-5:]
        raise SystemExit(f"{launcher} run failed (exit {row['exit']}): {tail}")
    s = json.loads(summary.read_text())
    counts = {k: s.get(f"graphs_{k}") for k in ("skipped", "recomputed", "new", "rejected")}
    result = {
        "wall_s": row["wall_s"], "cpu_s": row["cpu_s"], "first_progress_s": row["first_progress_s"],
        "cpu_before_first_progress_s": row["cpu_before_first_progress_s"], "graphs_in": s.get("graphs_in"),
        **counts, "loadavg_before": [round(x, 2) for x in load],
    }  # fmt: skip
    if event_log:
        for k in ("spark_jobs", "jobs_before_first_progress", "sql_before_first_progress"):
            result[k] = row[k]
        result["jobs_before_first_progress_calls"] = [j[1] for j in row["jobs"] if j[0] < row["first_progress_s"]]
    result["progress"] = [[t, cpu, line] for t, cpu, line in row["lines"] if fresh_run.PROGRESS.match(line)]
    bad = {k: (counts[k], v) for k, v in expect.items() if counts[k] != v}
    if bad:
        result["unexpected"] = bad
    return result


class Bench:
    """The runs of one benchmark: its folders, the two versions, the inputs, the rows."""

    def __init__(self, args: argparse.Namespace, stamp: str, fleet: Path) -> None:
        self.args, self.work = args, TMP / f"nightly-{stamp}"
        self.inp = self.work / "in"  # the one input path
        self.codes = {"A": self.work / "code-A", "B": self.work / "code-B"}
        self.revs = {"A": _snapshot(args.after, self.codes["A"]), "B": _snapshot(args.before, self.codes["B"])}
        self.variants: dict[float, tuple[Path, int, dict[str, int]]] = {}
        for pct in [0.0, *(float(x) for x in args.changes.split(",") if float(x) > 0)]:
            folder = self.work / f"variant-{pct:g}"
            graphs, kinds = _changed_fleet(fleet, folder, pct / 100, args.seed, ("uid added",), exact=True)
            self.variants[pct] = (folder, graphs, kinds)
        self.rows: list[dict[str, Any]] = []

    def run(self, version: str, launcher: str, kind: str, rnd: int, pct: float | None) -> Path:
        """One run; the output it wrote (a full run's is the base of that version's nights)."""
        base = self.work / f"out-{launcher}-{version}-{rnd}"
        variant, graphs, kinds = self.variants[pct or 0.0]
        expect: dict[str, int] = {}
        if pct is None:
            shutil.rmtree(base, ignore_errors=True)
            out = base
        else:
            out = self.work / f"night-{launcher}-{version}"
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(base, out)
            changed = sum(kinds.values())
            expect = {"recomputed": changed, "skipped": graphs - changed}
        _link_input(variant, self.inp)
        summary = self.work / "summary.json"
        event_log = pct is not None and self.args.event_log
        row = _one(self.codes[version], launcher, self.inp, out, summary, event_log, expect)
        row = {"launcher": launcher, "version": version, "kind": kind, "round": rnd, **row}
        self.rows.append(row)
        shown = ("launcher", "version", "kind", "round", "wall_s", "cpu_s", "first_progress_s",
                 "jobs_before_first_progress", "skipped", "recomputed", "unexpected")  # fmt: skip
        print(json.dumps({k: row[k] for k in shown if row.get(k) is not None}), flush=True)
        if pct is not None:
            shutil.rmtree(out, ignore_errors=True)
        return out


def _schedule(bench: Bench, launchers: list[str], rounds: int) -> None:
    """Per launcher and round: the full runs, then each night, the versions alternated."""
    pcts = sorted(bench.variants)
    for launcher in launchers:
        for rnd in range(rounds):
            order = ["A", "B"] if rnd % 2 == 0 else ["B", "A"]
            for version in order:
                bench.run(version, launcher, "full", rnd, None)
            for pct in pcts:
                for version in order:
                    bench.run(version, launcher, f"{pct:g}% changed", rnd, pct)
            for version in order:
                shutil.rmtree(bench.work / f"out-{launcher}-{version}-{rnd}", ignore_errors=True)


# ---- Flink and the summary ---------------------------------------------------------------------


def _flink(name: str, retime: bool) -> dict | None:
    """Flink's createJobGraph time for the fleet's programs (bench/data/<fleet>.flink.json),
    timed again now with ``retime``."""
    if retime:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import make_fleet

        manifest = json.loads((make_fleet.DATA / f"{name}.json").read_text())
        ns = argparse.Namespace(seed=manifest["seed"], warmup=200, retime=True)
        make_fleet.time_flink([name], ns, make_fleet.harness_jar())
    f = ROOT / "bench" / "data" / f"{name}.flink.json"
    return json.loads(f.read_text()) if f.exists() else None


def _median(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(values), 2) if values else None


def _pick(rows: list[dict], launcher: str, kind: str, version: str) -> list[dict]:
    return [r for r in rows if (r["launcher"], r["kind"], r["version"]) == (launcher, kind, version)]


def _summary(rows: list[dict], launcher: str, kind: str, version: str, flink_s: float | None) -> dict:
    these, full = _pick(rows, launcher, kind, version), _pick(rows, launcher, "full", version)
    wall, full_wall = _median(these, "wall_s"), _median(full, "wall_s")
    cpu, full_cpu = _median(these, "cpu_s"), _median(full, "cpu_s")
    s = {"launcher": launcher, "kind": kind, "version": version, "runs": len(these),
         "wall_s": wall, "cpu_s": cpu, "walls": [r["wall_s"] for r in these], "cpus": [r["cpu_s"] for r in these],
         "of_full_wall": round(wall / full_wall, 3) if wall and full_wall else None,
         "of_full_cpu": round(cpu / full_cpu, 3) if cpu and full_cpu else None,
         "of_flink": round(wall / flink_s, 3) if wall and flink_s else None,
         "first_progress_s": _median(these, "first_progress_s"),
         "cpu_before_first_progress_s": _median(these, "cpu_before_first_progress_s"),
         "jobs_before_first_progress": _median(these, "jobs_before_first_progress")}  # fmt: skip
    if version == "A":  # paired by round with B's run of the same launcher and kind
        other = {r["round"]: r for r in _pick(rows, launcher, kind, "B")}
        pairs = [(r, other[r["round"]]) for r in these if r["round"] in other]
        s["A/B_wall"] = [round(a["wall_s"] / b["wall_s"], 3) for a, b in pairs]
        s["A/B_cpu"] = [round(a["cpu_s"] / b["cpu_s"], 3) for a, b in pairs]
    return s


def summarize(rows: list[dict], flink_s: float | None) -> list[dict]:
    """Per launcher, version and kind: medians, the ratio of the median wall to the same
    version's full run and to Flink's time, and the A/B ratios of the runs paired by round."""
    out = []
    for launcher in dict.fromkeys(r["launcher"] for r in rows):
        for kind in dict.fromkeys(r["kind"] for r in rows):
            for version in ("A", "B"):
                if _pick(rows, launcher, kind, version):
                    out.append(_summary(rows, launcher, kind, version, flink_s))
    return out


def _print_table(summary: list[dict]) -> None:
    print("\nlauncher      kind           ver  runs  wall s  CPU s  /full  /Flink  first line s  jobs before  A/B wall")
    for s in summary:
        ab = ",".join(f"{x:.2f}" for x in s.get("A/B_wall", [])) or "-"
        print(f"{s['launcher']:<13} {s['kind']:<14} {s['version']:<4} {s['runs']:>4}  {s['wall_s']!s:>6} "
              f"{s['cpu_s']!s:>6} {s['of_full_wall']!s:>6} {s['of_flink']!s:>7}  {s['first_progress_s']!s:>12} "
              f"{s['jobs_before_first_progress']!s:>11}  {ab}")  # fmt: skip


def _in_process(fleet: str, changes: str, seed: int) -> dict | None:
    """The earlier form of this benchmark (one warm session, version A = this checkout's
    committed code as run_bench snapshots it), its result file's rows."""
    proc = subprocess.run([sys.executable, str(Path(__file__)), fleet, "--in-process-only", "--changes", changes,
                           "--seed", str(seed)], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    found = [line for line in proc.stdout.splitlines() if line.startswith("-> ")]
    if proc.returncode or not found:
        return {"failed": proc.stderr[-2000:]}
    return json.loads((ROOT / found[-1][3:]).read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fleet", help="fleet name under bench/data (fleet-10k) or a spec folder")
    ap.add_argument("--before", help="git revision of the code before (version B)")
    ap.add_argument("--after", default="HEAD", help="git revision of the code under test (version A)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--changes", default="0,1", help="percentages of graphs changed, one night each")
    ap.add_argument("--launchers", default="cli,spark-submit")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--retime-flink", action="store_true", help="time Flink on the fleet right before the runs")
    ap.add_argument("--in-process", action="store_true", help="also the one-session figure, labelled as such")
    ap.add_argument("--in-process-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--keep", action="store_true", help="keep bench/tmp/nightly-<ts>")
    ap.add_argument(
        "--event-log",
        action="store_true",
        help="nightly runs write Spark's event log (the jobs before the first line); slows them",
    )
    args = ap.parse_args(argv)
    if args.in_process_only:
        return in_process_main(args)
    if not args.before:
        ap.error("--before REV: the code to alternate with")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name, input_path, manifest, _ = _resolve_fleet(args.fleet)
    flink = _flink(name, args.retime_flink)
    flink_s = (flink or {}).get("flink_seconds")
    started = {"at": time.strftime("%Y-%m-%dT%H:%M:%S"), "uptime": _uptime()}
    bench = Bench(args, stamp, input_path)
    try:
        _schedule(bench, [x for x in args.launchers.split(",") if x], args.rounds)
    finally:
        if not args.keep:
            shutil.rmtree(bench.work, ignore_errors=True)
    summary = summarize(bench.rows, flink_s)
    result = {
        "fleet": name, "fleet_sizes": (manifest or {}).get("sizes"), "versions": bench.revs,
        "command": " ".join(["python", "bench/nightly_bench.py", *(argv if argv is not None else sys.argv[1:])]),
        "started": started, "finished": {"at": time.strftime("%Y-%m-%dT%H:%M:%S"), "uptime": _uptime()},
        "flink": {k: (flink or {}).get(k) for k in FLINK_KEYS},
        "changes": {f"{p:g}%": {"graphs": g, "changed": k} for p, (_, g, k) in bench.variants.items()},
        "summary": summary, "runs": bench.rows,
    }  # fmt: skip
    if args.in_process:
        result["in_process_one_warm_session_not_a_nightly_process"] = _in_process(args.fleet, args.changes, args.seed)
    _print_table(summary)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{stamp}-{name}-nightly-fresh.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"-> {path.relative_to(ROOT)}")
    return 1 if any("unexpected" in r for r in bench.rows) else 0


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# ---- the earlier form: one process, one warm session -----------------------------------------


def in_process_main(args: argparse.Namespace) -> int:
    """The first run and each night in ONE Spark session (run_bench's code snapshot): what the
    benchmark measured before issue 42. Not what a scheduled run pays (module docstring)."""
    from run_bench import MemorySampler, _snapshot_code

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
    uptime = _uptime()
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
    result = {"fleet": name, "flink_seconds": flink_s, "runs": runs, "uptime_before": uptime,
              "peak_rss_mb": round(mem.peak_total / 2**20), "in_process": "one warm Spark session, one Python process",
              **code}  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{stamp}-{name}-nightly.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"-> {path.relative_to(ROOT)}")
    shutil.rmtree(work, ignore_errors=True)
    os.chdir(RESULTS.parent.parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
