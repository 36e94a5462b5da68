"""Fault trials: `kill -9` of the driver during the Delta writes, and concurrent runs.

Kill trials. One output folder lives through all trials; it starts as a clean run of input X.
Each trial starts ``flink-jobgraph compute`` on the other input (X <-> Y: three graphs
differ, one now rejected, one new) as a subprocess in its own process group, waits for its
"delta write: run ... starts" progress line and SIGKILLs the group (the Python driver and its
JVM): odd trials after a random part of the write phase's measured length, even trials right
after the run's 1st, 2nd, 3rd or 4th table commit (before it publishes the run). Right after the
kill it reads every table at its latest version (what any reader sees now) and checks that
each equals, row for row, the old or the new clean state of that table, never something
between; and that the published view (pipeline.tables.delta_writer.read_published) is the old or
the new state of ALL tables together. Then it re-runs the same input to completion (in its
own warm Spark session) and compares all four tables with a clean run's, row for row.

Concurrent trials. Two disjoint halves of an input run at the same time into the same
output (a fresh one, and one already holding the other input's graphs, so both runs MERGE
into existing tables and conflict); the tables must equal those of the two halves run one
after the other.

    .venv/bin/python scripts/fault_trials.py --kills 20 --concurrent 2 \\
        --results scripts/results/fault-trials-$(date -u +%Y%m%d).json

Prints the counts and writes them (and every trial) as JSON, after each trial.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TABLES = ("operators", "job_vertices", "job_edges", "graph_errors")
CLI = [str(ROOT / ".venv" / "bin" / "flink-jobgraph"), "compute"]
# The default input: four sample files, 8 graphs (3 rejected): a kill trial is two Spark runs,
# so a small input keeps 20 of them in reach; the write phase is the same code at any size.
SMALL_INPUT = ("wordcount.json", "stateful-with-uids.json", "orders-enricher.jsonl", "broken.jsonl")


# ---- inputs --------------------------------------------------------------------------------


def prepare_inputs(work: Path, source: Path | list[Path]) -> dict[str, Path]:
    """X: the spec files under ``source``; Y: X with two graphs renamed in one node, one
    broken (a dangling edge: it moves to graph_errors) and one new; A/B: X's graphs split
    into two disjoint halves (per graph, into separate files); AY/BY: the same for Y."""
    x_lines = _graph_lines(source)
    y_lines = dict(x_lines)
    # processed graphs first (the samples' broken-* graphs and unkeyed lines are rejected anyway)
    ids = sorted(x_lines, key=lambda k: (k.startswith(("broken", "~")), k))
    for gid in ids[:2]:
        g = json.loads(y_lines[gid])
        g["nodes"][-1]["name"] = g["nodes"][-1]["name"] + " v2"
        y_lines[gid] = json.dumps(g)
    g = json.loads(y_lines[ids[2]])
    g["edges"].append({"source": g["nodes"][0]["id"], "target": 987654})
    y_lines[ids[2]] = json.dumps(g)
    g = json.loads(y_lines[ids[3]])
    g["graph_id"] = "fault-trials-new-graph"
    y_lines[g["graph_id"]] = json.dumps(g)
    out = {}
    for name, lines in (("X", x_lines), ("Y", y_lines)):
        out[name] = _write(work / "in" / name, {f"{name.lower()}.jsonl": list(lines.values())})
        keys = sorted(lines)
        half = {"A": keys[0::2], "B": keys[1::2]}
        for part, ks in half.items():
            out[part + ("" if name == "X" else "Y")] = _write(
                work / "in" / f"{part}{name}", {f"{part.lower()}.jsonl": [lines[k] for k in ks]}
            )
    return out


def _graph_lines(source: Path | list[Path]) -> dict[str, str]:
    """graph_id -> one JSON line, for every graph object in the JSON/JSONL files under source
    (lines that are not a JSON object with a graph_id, i.e. the samples' deliberately broken
    lines, are kept under a synthetic key so the inputs still hold a rejected graph)."""
    out: dict[str, str] = {}
    paths = source if isinstance(source, list) else [source]
    files = sorted(f for p in paths for f in ([p] if p.is_file() else p.rglob("*")) if f.suffix in (".json", ".jsonl"))
    for f in files:
        text = f.read_text(encoding="utf-8")
        chunks = [text] if f.suffix == ".json" else [ln for ln in text.splitlines() if ln.strip()]
        for chunk in chunks:
            try:
                obj = json.loads(chunk)
                key = obj["graph_id"] if isinstance(obj, dict) and isinstance(obj.get("graph_id"), str) else None
            except json.JSONDecodeError:
                obj, key = None, None
            line = json.dumps(obj) if obj is not None else chunk.replace("\n", " ")
            out[key or f"~unkeyed-{len(out)}"] = line
    return out


def _write(folder: Path, files: dict[str, list[str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (folder / name).write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    return folder


# ---- the CLI as a subprocess ----------------------------------------------------------------


@dataclass
class Run:
    returncode: int | None
    seconds: float
    killed: bool = False
    kill_delay: float | None = None  # seconds after the write phase started
    write_seconds: float | None = None  # write phase, when it ran to the end
    run_id: str | None = None
    retries: int = 0
    stderr_tail: str = ""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("FLINK_JOBGRAPH_DRIVER_MEMORY", "2g")
    return env


def _log_files(out: Path) -> dict[str, set[str]]:
    """Each table's committed versions: ``NNN.json`` files (Delta writes a hidden temporary
    file and renames it, so a listed name is a finished commit)."""
    found: dict[str, set[str]] = {}
    for t in TABLES:
        try:
            found[t] = {n for n in os.listdir(out / t / "_delta_log") if n.endswith(".json") and n[:-5].isdigit()}
        except FileNotFoundError:
            found[t] = set()
    return found


def run_cli(
    inp: Path,
    out: Path,
    kill_after: float | None = None,
    rng: random.Random | None = None,
    kill_after_commits: int | None = None,
) -> Run:
    """Run compute; with ``kill_after`` (an upper bound in seconds), SIGKILL its process group
    at a uniform random delay within that bound after the write phase starts; with
    ``kill_after_commits`` k, right after the run reports its k-th table commit (the moment a
    reader could see a half-written run if the publishing step did not exist)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*CLI, "--input", str(inp), "--output", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        start_new_session=True,  # its own process group: the kill reaches the JVM too
    )
    lines: list[str] = []
    write_start = threading.Event()
    committed = threading.Event()
    marks: dict[str, float] = {}

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "delta write: run " in line and " starts" in line:
                marks["start"] = time.perf_counter()
                marks["run_id"] = line.split("delta write: run ", 1)[1].split()[0]  # type: ignore[assignment]
                write_start.set()
            if "delta write: run published" in line:
                marks["end"] = time.perf_counter()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    result = Run(None, 0.0)
    if kill_after_commits is not None:
        # The run prints its "at version" lines only after all of its table commits are in,
        # so the k-th commit is watched where it lands: a new NNN.json in a table's _delta_log.
        before = _log_files(out)
        while not committed.is_set():
            if proc.poll() is not None:
                break
            now = _log_files(out)
            if sum(bool(now[t] - before[t]) for t in TABLES) >= kill_after_commits:
                committed.set()
                break
            time.sleep(0.005)
        if committed.is_set() and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            result.killed = True
            result.kill_delay = round(time.perf_counter() - marks["start"], 2)
    elif kill_after is not None:
        while not write_start.wait(0.2):
            if proc.poll() is not None:
                break
        if write_start.is_set():
            delay = (rng or random).uniform(0.0, kill_after)
            time.sleep(max(0.0, marks["start"] + delay - time.perf_counter()))
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)  # the process group we started
                result.killed, result.kill_delay = True, round(delay, 2)
    proc.wait()
    reader.join(timeout=10)
    result.returncode = proc.returncode
    result.seconds = round(time.perf_counter() - t0, 1)
    if "start" in marks and "end" in marks:
        result.write_seconds = round(marks["end"] - marks["start"], 1)
    result.run_id = marks.get("run_id")  # type: ignore[assignment]
    result.retries = sum("concurrent commit" in ln for ln in lines)
    result.stderr_tail = "".join(ln for ln in lines if "WARN" not in ln)[-1500:]
    return result


# ---- reading the tables ---------------------------------------------------------------------


def run_here(spark, inp: Path, out: Path) -> Run:
    """The same compute in this process's warm session (clean runs, re-runs, references):
    only the runs that are killed or run concurrently need a process of their own."""
    from pipeline.compute.run import Progress, compute
    from pipeline.settings import load_settings

    t0 = time.perf_counter()
    summary = compute(spark, str(inp), str(out), load_settings({}), Progress(enabled=False))
    return Run(0, round(time.perf_counter() - t0, 1), write_seconds=summary.stage_seconds.get("delta write"))


def spark_session():
    from pipeline.session import get_spark
    from pipeline.settings import load_settings

    return get_spark(load_settings({}), "fault-trials")


def rows(df) -> Counter:
    return Counter(tuple(str(v) for v in r) for r in df.collect())


def latest(spark, out: Path) -> dict[str, Counter]:
    return {t: rows(spark.read.format("delta").load(str(out / t))) for t in TABLES}


def published(spark, out: Path) -> dict[str, Counter]:
    from pipeline.tables import delta_writer as delta_sink

    return {t: rows(df) for t, df in delta_sink.read_published(spark, str(out), TABLES).items()}


def diff(got: dict[str, Counter], want: dict[str, Counter]) -> tuple[int, int]:
    """(rows of ``want`` missing from ``got``, rows of ``got`` not in ``want``), all tables."""
    lost = sum(sum((want[t] - got[t]).values()) for t in TABLES)
    extra = sum(sum((got[t] - want[t]).values()) for t in TABLES)
    return lost, extra


def tables_committed_by(spark, out: Path, run_prefix: str | None) -> int:
    """How many tables hold a commit of the run (the kill's point in the write phase)."""
    if not run_prefix:
        return 0
    from delta.tables import DeltaTable

    n = 0
    for t in TABLES:
        hist = DeltaTable.forPath(spark, str(out / t)).history(50).select("userMetadata").collect()
        n += any((h[0] or "").startswith("flink-jobgraph-run:" + run_prefix) for h in hist)
    return n


# ---- trials ---------------------------------------------------------------------------------


@dataclass
class Counts:
    kill_trials: int = 0
    killed_in_write_phase: int = 0
    identical_tables_after_rerun: int = 0  # trials whose four tables equal the clean run's
    lost_rows: int = 0
    extra_rows: int = 0
    partial_table_states_seen: int = 0  # a table at its latest version neither old nor new
    mixed_published_views_seen: int = 0  # the published view not wholly old or wholly new
    tables_committed_at_kill: dict[str, int] = field(default_factory=dict)
    concurrent_trials: int = 0
    concurrent_both_succeeded: int = 0
    concurrent_identical: int = 0
    concurrent_lost_rows: int = 0
    concurrent_retries: int = 0


def kill_trials(
    spark, work: Path, inputs: dict[str, Path], clean: dict[str, dict], n: int, rng, log, trials: list[dict]
) -> list[dict]:
    out = work / "trial-out"
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(work / "clean-X0", out)
    state = "X0"
    write_len = [clean["X"]["write_seconds"] or 10.0, clean["Y"]["write_seconds"] or 10.0]
    for i in range(1, n + 1):
        target = "X" if state == "Y" else "Y"
        bound = sorted(write_len)[len(write_len) // 2]  # median write phase seen so far
        # Odd trials: a uniform random point of the write phase (mostly before any commit: the
        # tables' commits come at its end). Even ones: right after the run's 1st, 2nd, 3rd or
        # 4th table commit, before it publishes: the states a reader must never see as a run.
        after_commits = None if i % 2 else (i // 2 - 1) % len(TABLES) + 1
        k = run_cli(inputs[target], out, kill_after=bound, rng=rng, kill_after_commits=after_commits)
        now, view = latest(spark, out), published(spark, out)
        per_table = {}
        for t in TABLES:
            old, new = now[t] == clean[state]["tables"][t], now[t] == clean[target]["tables"][t]
            per_table[t] = "old" if old and not new else "new" if new and not old else "same" if old else "PARTIAL"
        v_old = all(view[t] == clean[state]["tables"][t] for t in TABLES)
        v_new = all(view[t] == clean[target]["tables"][t] for t in TABLES)
        committed = tables_committed_by(spark, out, k.run_id)
        r = run_here(spark, inputs[target], out)
        if r.write_seconds:
            write_len.append(r.write_seconds)
        after = latest(spark, out)
        lost, extra = diff(after, clean[target]["tables"])
        view_after = published(spark, out)
        trial = {
            "trial": i,
            "from": state,
            "to": target,
            "killed": k.killed,
            "kill_delay_s": k.kill_delay,
            "kill_mode": "uniform" if after_commits is None else f"after commit {after_commits}",
            "kill_bound_s": round(bound, 1) if after_commits is None else None,
            "tables_committed_at_kill": committed,
            "tables_seen_after_kill": per_table,
            "published_view_after_kill": "old" if v_old else "new" if v_new else "MIXED",
            "rerun_returncode": r.returncode,
            "rerun_seconds": r.seconds,
            "rerun_write_seconds": r.write_seconds,
            "identical_after_rerun": lost == 0 and extra == 0 and r.returncode == 0,
            "published_view_after_rerun_identical": all(view_after[t] == clean[target]["tables"][t] for t in TABLES),
            "lost_rows": lost,
            "extra_rows": extra,
        }
        if r.returncode != 0:
            trial["rerun_stderr"] = r.stderr_tail
        trials.append(trial)
        log(trial)
        state = target
    return trials


def concurrent_trials(spark, work: Path, inputs: dict[str, Path], n: int, log, trials: list[dict]) -> list[dict]:
    """Odd trials into a fresh output (both runs create the tables), even ones into an output
    holding clean X, with Y's halves (both runs MERGE into existing tables)."""
    refs: dict[str, dict[str, Counter]] = {}
    for j in range(1, n + 1):
        fresh = j % 2 == 1
        a, b = ("A", "B") if fresh else ("AY", "BY")
        if a not in refs:  # the same two halves, one after the other
            ref_out = work / f"ref-{a}{b}"
            shutil.rmtree(ref_out, ignore_errors=True)
            if not fresh:
                shutil.copytree(work / "clean-X0", ref_out)
            for part in (a, b):
                run_here(spark, inputs[part], ref_out)
            refs[a] = latest(spark, ref_out)
        out = work / f"concurrent-{j}"
        shutil.rmtree(out, ignore_errors=True)
        if not fresh:
            shutil.copytree(work / "clean-X0", out)
        with ThreadPoolExecutor(max_workers=2) as pool:  # both subprocesses at once
            futures = {p: pool.submit(run_cli, inputs[p], out) for p in (a, b)}
        results = {p: f.result() for p, f in futures.items()}
        got = latest(spark, out)
        lost, extra = diff(got, refs[a])
        view = published(spark, out)
        trial = {
            "trial": j,
            "output": "fresh" if fresh else "holding X",
            "returncodes": [results[a].returncode, results[b].returncode],
            "seconds": [results[a].seconds, results[b].seconds],
            "retries": [results[a].retries, results[b].retries],
            "identical": lost == 0 and extra == 0,
            "published_view_identical": all(view[t] == refs[a][t] for t in TABLES),
            "lost_rows": lost,
            "extra_rows": extra,
        }
        for p in (a, b):
            if results[p].returncode != 0:
                trial[f"stderr_{p}"] = results[p].stderr_tail
        trials.append(trial)
        log(trial)
    return trials


def summarize(kills: list[dict], conc: list[dict]) -> Counts:
    c = Counts()
    c.kill_trials = len(kills)
    c.killed_in_write_phase = sum(t["killed"] for t in kills)
    c.identical_tables_after_rerun = sum(t["identical_after_rerun"] for t in kills)
    c.lost_rows = sum(t["lost_rows"] for t in kills)
    c.extra_rows = sum(t["extra_rows"] for t in kills)
    c.partial_table_states_seen = sum(v == "PARTIAL" for t in kills for v in t["tables_seen_after_kill"].values())
    c.mixed_published_views_seen = sum(t["published_view_after_kill"] == "MIXED" for t in kills)
    c.tables_committed_at_kill = dict(sorted(Counter(str(t["tables_committed_at_kill"]) for t in kills).items()))
    c.concurrent_trials = len(conc)
    c.concurrent_both_succeeded = sum(t["returncodes"] == [0, 0] for t in conc)
    c.concurrent_identical = sum(t["identical"] for t in conc)
    c.concurrent_lost_rows = sum(t["lost_rows"] for t in conc)
    c.concurrent_retries = sum(sum(t["retries"]) for t in conc)
    return c


def code_state() -> dict:
    """The commit the trials run and any uncommitted change to the pipeline's code or conf:
    the clean runs and the re-runs must run the same code (an edit in between shows up as
    lost and extra rows that no fault caused)."""

    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return None

    head = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--", "pipeline", "udfs", "conf")
    return {"commit": head.strip() if head else None, "uncommitted": dirty.split("\n")[:-1] if dirty else []}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--concurrent", type=int, default=2)
    ap.add_argument("--input", nargs="+", default=[str(ROOT / "samples" / f) for f in SMALL_INPUT])
    ap.add_argument("--work", default="/tmp/flink-jobgraph-fault-trials")
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--results", help="write the counts and every trial here (JSON), after each trial")
    args = ap.parse_args(argv)

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rng = random.Random(args.seed)
    inputs = prepare_inputs(work, [Path(p) for p in args.input])
    spark = spark_session()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    code = code_state()
    kills: list[dict] = []
    conc: list[dict] = []
    clean: dict[str, dict] = {}

    def save() -> None:
        counts = summarize(kills, conc)
        if args.results:
            Path(args.results).parent.mkdir(parents=True, exist_ok=True)
            doc = {
                "command": "scripts/fault_trials.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                "started": started,
                "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "code": code,
                "input": args.input,
                "clean_runs": {k: {kk: vv for kk, vv in v.items() if kk != "tables"} for k, v in clean.items()},
                "counts": asdict(counts),
                "kill_trials": kills,
                "concurrent_trials": conc,
            }
            Path(args.results).write_text(json.dumps(doc, indent=1) + "\n")

    def log(trial: dict) -> None:
        print(json.dumps(trial), flush=True)
        save()

    # The states the kill trials pass through, each from an uninterrupted run: X0 = X into an
    # empty folder; Y = Y over X0; X = X over Y. A run owns only the graphs it read, so X over
    # Y keeps Y's new graph: X's state after the first trial is not X0. (Comparing with X0, as
    # the script did before 2026-11-23, counted that graph's rows as extra after X re-runs and
    # the tables as PARTIAL after the next kill.)
    for name, over in (("X0", None), ("Y", "X0"), ("X", "Y")):
        if over:
            shutil.copytree(work / f"clean-{over}", work / f"clean-{name}")
        r = run_here(spark, inputs[name[0]], work / f"clean-{name}")
        clean[name] = {
            "seconds": r.seconds,
            "write_seconds": r.write_seconds,
            "tables": latest(spark, work / f"clean-{name}"),
        }
        print(f"clean run {name}: {r.seconds} s (write phase {r.write_seconds} s)", flush=True)
    assert clean["X0"]["tables"] != clean["Y"]["tables"] != clean["X"]["tables"]

    # the lists fill trial by trial, so that save() after each trial writes them
    kill_trials(spark, work, inputs, clean, args.kills, rng, log, kills)
    concurrent_trials(spark, work, inputs, args.concurrent, log, conc)
    save()
    counts = summarize(kills, conc)
    for k, v in asdict(counts).items():
        print(f"{k}: {v}")
    ok = (
        counts.lost_rows == 0
        and counts.extra_rows == 0
        and counts.partial_table_states_seen == 0
        and counts.mixed_published_views_seen == 0
        and counts.identical_tables_after_rerun == counts.kill_trials
        and counts.concurrent_identical == counts.concurrent_trials
        and counts.concurrent_lost_rows == 0
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
