"""Faults with real processes: a `kill -9` of the driver during the Delta writes and two runs
at once on disjoint graphs (the short version of scripts/fault_trials.py).

NOT in CI, by decision (2026-11-23): it is at least eight pipeline runs (two clean, two killed
CLI runs with a cold JVM each, two re-runs, a concurrent pair and its reference), and one run
of these 8 sample graphs took 174 s in the script's warm session at load average 2-4 (write
phase 70 s), 284-299 s at load 30: far over the ~2 min a CI test may take. The trials run in
``scripts/fault_trials.py`` (20 kills, concurrent pairs; output under scripts/results/). Never
run as written; kept as the starting point should a faster write phase make it affordable."""

from __future__ import annotations

import random
import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pipeline.compute.run import compute
from pipeline.tables import delta_writer as delta_sink
from tests.conftest import ROOT
from tests.test_faults import QUIET, TABLES, ft


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    work = tmp_path_factory.mktemp("faults")
    return work, ft.prepare_inputs(work, [ROOT / "samples" / f for f in ft.SMALL_INPUT])


@pytest.fixture(scope="module")
def clean(spark, settings, inputs) -> dict[str, dict]:
    work, inp = inputs
    out = {}
    for name in ("X", "Y"):
        compute(spark, str(inp[name]), str(work / f"clean-{name}"), settings, QUIET)
        out[name] = {"tables": ft.latest(spark, work / f"clean-{name}")}
    assert out["X"]["tables"] != out["Y"]["tables"]
    return out


def test_kill_9_during_the_writes_then_rerun(spark, settings, inputs, clean, tmp_path):
    """Two kills at random points of the write phase (a real subprocess, SIGKILL to its process
    group): right after each, every table is wholly old or wholly new and the published view is
    old or new across all four tables; the re-run gives the clean run's tables, row for row."""
    work, inp = inputs
    out = tmp_path / "out"
    shutil.copytree(work / "clean-X", out)
    rng = random.Random(7)
    state = "X"
    killed = 0
    for target in ("Y", "X"):
        run = ft.run_cli(inp[target], out, kill_after=8.0, rng=rng)
        killed += run.killed
        now, view = ft.latest(spark, out), ft.published(spark, out)
        for t in TABLES:
            assert now[t] in (clean[state]["tables"][t], clean[target]["tables"][t]), t
        assert view in ({t: clean[state]["tables"][t] for t in TABLES}, {t: clean[target]["tables"][t] for t in TABLES})
        if run.killed:  # a run killed before it published is not in the published view
            assert view == {t: clean[state]["tables"][t] for t in TABLES}
        compute(spark, str(inp[target]), str(out), settings, QUIET)
        assert ft.diff(ft.latest(spark, out), clean[target]["tables"]) == (0, 0)
        assert ft.published(spark, out) == clean[target]["tables"]
        state = target
    assert killed >= 1  # the trial is about kills: at least one landed inside the write phase


def test_two_concurrent_runs_on_disjoint_graphs_both_land(spark, settings, inputs, tmp_path):
    """Two halves of the graphs, every graph changed, at once (two processes) into an output
    that holds them: both MERGE into the same tables, so Delta's conflict check fails one of
    them at least once per table and it retries; the tables equal the halves run in turn."""
    work, inp = inputs
    halves = {}
    for part in ("A", "B"):  # every graph of both halves differs from what the tables hold
        halves[part] = tmp_path / part
        shutil.copytree(inp[part], halves[part])
        for f in halves[part].glob("*.jsonl"):
            f.write_text(f.read_text().replace('"name": "', '"name": "c-'))
    ref, out = tmp_path / "ref", tmp_path / "out"
    shutil.copytree(work / "clean-X", ref)
    shutil.copytree(work / "clean-X", out)
    for part in ("A", "B"):
        compute(spark, str(halves[part]), str(ref), settings, QUIET)
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda p: ft.run_cli(halves[p], out), ("A", "B")))
    assert [r.returncode for r in runs] == [0, 0], [r.stderr_tail for r in runs]
    want = ft.latest(spark, ref)
    assert ft.diff(ft.latest(spark, out), want) == (0, 0)
    assert ft.published(spark, out) == want


# VERIFIED (2026-11-23, 19:00 UTC, code 55706e5): passes, 1 passed in 377.7 s at load average
# 10-12 (`python -m pytest -q tests/pending/pending_faults_processes.py -k concurrent_writers`).
# Earlier, under load 35, two runs hit a 15-minute timeout in the first MERGE round. Six minutes
# is a third of CI's budget, so it stays here; scripts/fault_trials.py's concurrent pairs cover
# the same retry through whole runs.


def test_concurrent_writers_of_one_table_all_land(spark, tmp_path):
    """Three writers at once (threads, one session) replace disjoint graphs of one table: first
    into an empty folder (all three create the table), then into the table they made (three
    MERGEs that read the whole table). Delta fails the commits that lose the race --
    ProtocolChangedException or ConcurrentAppendException, which delta-spark's Python API does
    not derive from DeltaConcurrentModificationException, so they went un-retried before and
    a run died (scripts/fault_trials.py) -- and each retries until it lands."""
    import threading

    out = str(tmp_path / "out")
    writers = {k: [f"w{k}-g{i}" for i in range(3)] for k in range(3)}
    attempts = []

    def write_all(tag: str) -> None:
        barrier = threading.Barrier(len(writers))
        errors = []

        def one(k: int) -> None:
            rows = spark.createDataFrame([(g, tag) for g in writers[k]], "graph_id string, v string")
            ids = spark.createDataFrame([(g,) for g in writers[k]], "graph_id string")
            rows.count(), ids.count()  # plan and run the small jobs before the race
            barrier.wait()
            try:
                attempts.append(delta_sink.replace_graphs(spark, out, "t", rows, ids).attempts)
            except Exception as e:  # noqa: BLE001 - reported below, with the others
                errors.append(e)

        threads = [threading.Thread(target=one, args=(k,)) for k in writers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        got = ft.rows(spark.read.format("delta").load(f"{out}/t"))
        assert got == Counter((g, tag) for gs in writers.values() for g in gs)

    write_all("created")
    for k in range(3):  # until Delta made at least one writer retry (it usually does at once)
        write_all(f"merged-{k}")
        if max(attempts) > 1:
            break
    assert max(attempts) > 1, attempts
