"""Incremental compute runs (graph_fingerprints): after every kind of change, the tables of an
incremental run are those a full run (``--full``) writes from the same start, row for row, and
the run summary and the ``runs`` table say how many graphs were skipped, recomputed, new and
rejected.

Two outputs take the same inputs in the same order: ``inc`` by default (incremental), ``full``
with ``full=True``. The inputs: a first fleet; then one graph changed, one re-exported with its
keys in another order and other whitespace (same content), one removed from the input, one
made invalid, one new, one graph_id given twice with both copies unchanged; the same input
again; tables an earlier release wrote (no graph_fingerprints, a job_vertices column missing);
other rules (settings that change the rules version); a run killed before it published.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from pipeline.compute import fingerprints
from pipeline.compute import read as read_spec
from pipeline.compute.run import Progress, compute
from pipeline.runner import is_night
from pipeline.settings import Limits, load_settings
from pipeline.tables import delta_log, delta_writer
from pipeline.tables.published import published_rules_version
from udfs.spec import fingerprint as fp_module
from udfs.spec.fingerprint import line_key, line_salt, spec_fingerprint

from .conftest import ROOT

TABLES = ("operators", "job_vertices", "job_edges", "graph_errors", "graph_fingerprints")
QUIET = Progress(enabled=False)


def _graphs() -> list[dict]:
    out = [json.loads((ROOT / "samples" / f).read_text()) for f in ("wordcount.json", "stateful-with-uids.json")]
    for f in ("orders-enricher.jsonl", "broken.jsonl"):
        out += [json.loads(line) for line in (ROOT / "samples" / f).read_text().splitlines() if line.strip()]
    fleet = [json.loads(line) for line in (ROOT / "samples" / "fleet-sample.jsonl").read_text().splitlines()]
    # wordcount, stateful, orders@v1, orders@v2, a fleet graph, the three broken ones, 5 more
    return out[:4] + fleet[:1] + out[4:] + fleet[1:3] + fleet[12:15]


def _write(folder: Path, graphs: list[dict], texts: dict[str, str] | None = None) -> str:
    folder.mkdir(parents=True)
    lines = [(texts or {}).get(g["graph_id"]) or json.dumps(g) for g in graphs]
    (folder / "fleet.jsonl").write_text("\n".join(lines) + "\n")
    return str(folder)


def _snapshot(spark, out: str, tables: tuple[str, ...] = TABLES) -> dict[str, list]:
    """Every row of every table: graph_id, then the other columns in name order (a column a
    release added comes last in a table an earlier release created)."""
    snap = {}
    for t in tables:
        df = spark.read.format("delta").load(f"{out}/{t}")
        columns = ["graph_id", *sorted(c for c in df.columns if c != "graph_id")]
        snap[t] = sorted(tuple(str(r[c]) for c in columns) for r in df.collect())
    return snap


def _input_graphs(spark, out: str, tables: tuple[str, ...] = TABLES[:-1]) -> dict[str, list]:
    """:func:`_snapshot` less the rows of orders-enricher@v2, the graph the second input
    dropped: after the earlier-release test its job_vertices rows keep the column that test
    removed empty (no input holds the graph since, so no run recomputes it)."""
    return {t: [r for r in rows if r[0] != "orders-enricher@v2"] for t, rows in _snapshot(spark, out, tables).items()}


def _last_run_counts(spark, out: str) -> dict[str, int]:
    runs = spark.read.format("delta").load(f"{out}/runs").orderBy("finished_at", ascending=False)
    return dict(runs.first()["counts"])


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("incremental")
    return root, str(root / "inc"), str(root / "full")


def _both(spark, settings, inp: str, outputs) -> tuple:
    _, inc, full = outputs
    s_inc = compute(spark, inp, inc, settings, QUIET)
    s_full = compute(spark, inp, full, settings, QUIET, full=True)
    assert _snapshot(spark, inc) == _snapshot(spark, full)
    assert s_full.graphs_skipped == 0
    return s_inc, s_full


def test_incremental_runs_equal_full_runs(spark, settings, outputs):
    root, inc, full = outputs
    graphs = _graphs()
    n = len(graphs)
    s1 = compute(spark, _write(root / "in1", graphs), inc, settings, QUIET)  # into an empty output: all new
    shutil.copytree(inc, full)
    assert (s1.graphs_new, s1.graphs_skipped, s1.graphs_recomputed) == (n, 0, 0)
    assert s1.graphs_rejected == 3  # broken.jsonl's three graphs
    assert {g["graph_id"] for g in graphs} == {r[0] for r in _snapshot(spark, inc)["graph_fingerprints"]}

    # The second input: one changed, one re-exported (same content), one removed, one invalid,
    # one new, one graph_id twice (both copies unchanged).
    wc, stateful, orders, removed, invalid, *rest = graphs
    broken = ["broken-dangling-edge", "broken-duplicate-uid", "broken-unknown-partitioner"]
    assert [g["graph_id"] for g in rest[:3]] == broken
    changed = dict(wc, nodes=[dict(node, parallelism=3) for node in wc["nodes"]])
    made_invalid = dict(invalid, edges=invalid["edges"] + [{"source": invalid["nodes"][0]["id"], "target": 999}])
    new = dict(stateful, graph_id="stateful-copy")
    reexported = json.dumps(dict(reversed(list(orders.items()))), indent=None, separators=(" ,", " : "))
    second = [changed, stateful, orders, made_invalid, new, *rest, rest[-1]]
    s2, _ = _both(spark, settings, _write(root / "in2", second, {orders["graph_id"]: reexported}), outputs)
    # skipped: stateful, orders (re-exported) and the unchanged others, the doubled one's two
    # copies among them, but the three rejected ones: read from another file now (their error
    # rows name it), they are recomputed with the changed and the invalid one; new: the copy
    assert (s2.graphs_recomputed, s2.graphs_new) == (2 + 3, 1)
    assert s2.graphs_skipped == 2 + len(rest) + 1 - 3
    errors = {r[0]: r[1] for r in _snapshot(spark, inc)["graph_errors"]}
    assert errors[made_invalid["graph_id"]] == "DANGLING_EDGE" and errors[rest[-1]["graph_id"]] == "DUPLICATE_GRAPH_ID"
    # a run replaces its own graphs only: the one no longer in the input keeps its rows
    assert removed["graph_id"] in {r[0] for r in _snapshot(spark, inc)["job_vertices"]}
    counts = _last_run_counts(spark, inc)
    assert counts == {"skipped": s2.graphs_skipped, "recomputed": 5, "new": 1, "rejected": s2.graphs_rejected}

    # The same input again: nothing is computed or rewritten.
    before = {t: DeltaTable.forPath(spark, f"{inc}/{t}").history(1).first()["version"] for t in TABLES}
    s3 = compute(spark, str(root / "in2"), inc, settings, QUIET)
    # rejected graphs read from the same file again are skipped too; the doubled id's two
    # copies (no fingerprint kept for an id rejected as doubled) are checked again, and
    # rewrite nothing: their error row is as it was
    assert (s3.graphs_recomputed, s3.graphs_new, s3.graphs_skipped) == (0, 2, len(second) - 2)
    assert s3.graphs_rejected == 1
    after = {t: DeltaTable.forPath(spark, f"{inc}/{t}").history(1).first()["version"] for t in TABLES}
    assert after == before
    assert _snapshot(spark, inc) == _snapshot(spark, full)


def test_lines_read_before_reach_the_stage_without_their_text(spark, settings, outputs):
    """After the runs above, every accepted graph's ``graph_fingerprints`` row holds the key of
    its line's bytes in the last input (the re-exported one's too: the second run rekeyed it).
    Read again with the output's keys, exactly those lines come from the read step without
    their text, with the graph_id, fingerprint and node count the output holds; the rejected
    graphs' lines (the doubled id's two copies among them) come as text, keyed."""
    root, inc, _ = outputs
    salt = line_salt(fingerprints.rules_version(settings))
    known = fingerprints.known_graphs(spark, inc)
    raw = [line for line in (root / "in2" / "fleet.jsonl").read_bytes().split(b"\n") if line.strip()]
    by_id = {json.loads(line)["graph_id"]: line for line in raw}
    rejected = {r[0] for r in _snapshot(spark, inc, ("graph_errors",))["graph_errors"]}
    accepted = set(by_id) - rejected
    assert "orders-enricher@v1" in accepted and len(accepted) == len(raw) - 6  # 3 broken, 1 invalid, 2 copies
    assert {g: known.keys[g] for g in accepted} == {g: line_key(salt, by_id[g]) for g in accepted}
    texts = read_spec.read_texts(spark, str(root / "in2"), Limits.from_settings(settings),
                                 read_spec.KnownLines(salt, known.lines)).collect()  # fmt: skip
    keyed = {r["graph_id"]: r for r in texts if r["value"] is None}
    assert set(keyed) == accepted
    for gid, r in keyed.items():
        assert (r["fingerprint"], r["node_count"]) == (known.graphs[gid], len(json.loads(by_id[gid])["nodes"]))
        assert r["line_key"] == line_key(salt, by_id[gid])
    as_text = [r for r in texts if r["value"] is not None]
    assert len(as_text) == len(raw) - len(accepted)
    assert all(r["line_key"] == line_key(salt, r["value"].encode()) for r in as_text)
    # other rules (or another profile): no line is known
    other = read_spec.KnownLines(line_salt("other rules"), known.lines)
    assert all(r["value"] is not None for r in read_spec.read_texts(spark, str(root / "in2"), None, other).collect())


def test_tables_of_an_earlier_release_are_recomputed_and_evolved(spark, settings, outputs):
    """No graph_fingerprints, job_vertices without a column a later release added (as an
    earlier release wrote them): the run computes every graph and fills the column. ``full``
    holds what a full run over the same input writes (the last test's)."""
    root, inc, full = outputs
    v = spark.read.format("delta").load(f"{inc}/job_vertices")
    v.drop("effective_max_parallelism").write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(
        f"{inc}/job_vertices"
    )
    shutil.rmtree(f"{inc}/graph_fingerprints")
    s = compute(spark, str(root / "in2"), inc, settings, QUIET)
    copies = len((root / "in2" / "fleet.jsonl").read_text().splitlines())  # the doubled id counts twice
    assert (s.graphs_skipped, s.graphs_recomputed, s.graphs_new) == (0, 0, copies)  # nothing known
    assert _input_graphs(spark, inc) == _input_graphs(spark, full)
    dropped = spark.read.format("delta").load(f"{inc}/job_vertices").where("graph_id = 'orders-enricher@v2'")
    assert dropped.count() > 0 and dropped.where("effective_max_parallelism IS NOT NULL").count() == 0
    # the graphs of this input have their fingerprints again (not orders@v2, in no input since)
    fps = _snapshot(spark, full)["graph_fingerprints"]
    assert _snapshot(spark, inc)["graph_fingerprints"] == [r for r in fps if r[0] != "orders-enricher@v2"]


def test_a_killed_run_is_covered_by_the_next_run(spark, settings, outputs, tmp_path):
    """A run killed after its first commit: the graphs whose rows it changed are described by
    no published fingerprint, so the next run computes them again; on the killed run's input
    that is the killed run's graph set, so the re-run covers it and the published view moves on."""
    root, inc, full = outputs
    graphs = [json.loads(line) for line in (root / "in2" / "fleet.jsonl").read_text().splitlines()]
    target = next(g for g in graphs if g["graph_id"] == "seed003-stateful-with-uids")
    edited = [
        dict(g, nodes=[dict(n, name=n["name"] + " v2") for n in g["nodes"]]) if g is target else g for g in graphs
    ]
    inp = _write(root / "in3", edited)
    # the killed run: the same replace of operators a run makes, tagged with its id, never published
    known = fingerprints.known_fingerprints(spark, inc)
    assert known
    # its operators rows for the edited graph: the names as the edit makes them
    rows = (
        spark.read.format("delta").load(f"{inc}/operators")
        .where(F.col("graph_id") == target["graph_id"])
        .withColumn("name", F.concat("name", F.lit(" v2")))
    )  # fmt: skip
    ids = spark.createDataFrame([(target["graph_id"],)], "graph_id string")
    # its graph set: the changed graph and the rejected ones (checked in every run)
    run_ids = [target["graph_id"]] + [r[0] for r in _snapshot(spark, inc, ("graph_errors",))["graph_errors"]]
    spark.conf.set(delta_writer.USER_METADATA_CONF, delta_writer.RUN_TAG_PREFIX + delta_writer.run_id_for(run_ids))
    try:
        delta_writer.replace_graphs(spark, inc, "operators", rows, ids)
    finally:
        spark.conf.unset(delta_writer.USER_METADATA_CONF)
    said: list[str] = []
    known_now = fingerprints.known_fingerprints(spark, inc, said.append)
    assert set(known) - set(known_now) == {target["graph_id"]}
    assert said and "did not publish" in said[-1] and "its 1 graphs" in said[-1]
    # the re-run on the same input: that one graph, which covers the killed run
    s = compute(spark, inp, inc, settings, QUIET)
    # recomputed: the four rejected graphs, from another file now; new: that graph (no trusted
    # fingerprint) and the doubled id's two copies
    assert (s.graphs_recomputed, s.graphs_new) == (4, 3)
    compute(spark, inp, full, settings, QUIET, full=True)
    assert _input_graphs(spark, inc) == _input_graphs(spark, full)
    published = delta_writer.read_published(spark, inc, TABLES)
    assert {t: sorted(map(str, df.collect())) for t, df in published.items()} == {
        t: sorted(map(str, spark.read.format("delta").load(f"{inc}/{t}").collect())) for t in TABLES
    }
    assert target["graph_id"] in fingerprints.known_fingerprints(spark, inc)


def test_other_rules_recompute_every_graph(spark, settings, outputs):
    """Settings that can change results are part of the rules version: a run under other ones
    recomputes every graph (as a new release's code would), to the same tables here."""
    root, inc, full = outputs
    other = load_settings(
        {"spark.master": "local[2]", "spark.shuffle_partitions": 4, "limits.max_graph_elements": 2_000_000}
    )
    assert fingerprints.rules_version(other) != fingerprints.rules_version(settings)
    s = compute(spark, str(root / "in3"), inc, other, QUIET)
    assert s.graphs_skipped == 0 and s.graphs_recomputed > 0
    assert _input_graphs(spark, inc) == _input_graphs(spark, full)
    versions = {r["rules_version"] for r in spark.read.format("delta").load(f"{inc}/graph_fingerprints").collect()}
    assert fingerprints.rules_version(other) in versions
    # the publish recorded the rules it computed under: the next run's JVM is chosen by them
    assert published_rules_version(inc) == fingerprints.rules_version(other)
    assert is_night(inc, False, fingerprints.rules_version)(other)
    assert not is_night(inc, False, fingerprints.rules_version)(settings)  # other rules: every graph again
    assert not is_night(inc, True, fingerprints.rules_version)(other)
    compute(spark, str(root / "in3"), inc, settings, QUIET)  # back to the session's rules
    assert published_rules_version(inc) == fingerprints.rules_version(settings)
    assert published_rules_version(f"file://{inc}") == fingerprints.rules_version(settings)


def test_a_night_is_told_from_the_output_before_the_jvm_starts(tmp_path, settings):
    """Which JVM a compute run starts (``spark.night_java_options``: C1 only) is decided from
    the output's files before there is a JVM to ask Delta: only an output whose newest publish
    recorded this run's rules is a night; an empty, unknown, foreign or remote output is not."""
    night_jvm = "-XX:TieredStopAtLevel=1 -XX:InitialRAMPercentage=17 -XX:MetaspaceSize=256m"
    assert settings.spark.night_java_options == night_jvm  # conf/pipeline.json
    assert dict(settings.spark.night_spark_conf) == {"spark.sql.shuffle.partitions": 2}
    assert published_rules_version(str(tmp_path / "none")) is None
    assert published_rules_version("s3://bucket/out") is None
    assert not is_night("s3://bucket/out", False, fingerprints.rules_version)(settings)
    log = tmp_path / "out" / "runs" / "_delta_log"
    log.mkdir(parents=True)
    assert published_rules_version(str(tmp_path / "out")) is None
    record = {"runs_seen": 0, "view": {}, "rules_version": fingerprints.rules_version(settings)}
    info = {"commitInfo": {"userMetadata": f"{delta_writer.RUN_TAG_PREFIX}r1\n{json.dumps(record)}"}}
    (log / "00000000000000000000.json").write_text(json.dumps(info) + "\n")
    assert is_night(str(tmp_path / "out"), False, fingerprints.rules_version)(settings)
    # a newer commit that is no publish of compute's (another command's, or damaged): not a night
    (log / "00000000000000000001.json").write_text('{"commitInfo": {"userMetadata": "x"}}\n')
    assert published_rules_version(str(tmp_path / "out")) is None
    (log / "00000000000000000002.json").write_text("not json\n")
    assert not is_night(str(tmp_path / "out"), False, fingerprints.rules_version)(settings)


def test_fingerprint_follows_content_profile_and_rules(tmp_path, monkeypatch):
    spec = json.loads((ROOT / "samples" / "wordcount.json").read_text())
    base = spec_fingerprint(spec, "r1")
    assert spec_fingerprint(dict(reversed(list(spec.items()))), "r1") == base  # key order
    assert spec_fingerprint(dict(spec, graph_id="other"), "r1") != base
    assert spec_fingerprint(spec, "r2") != base
    assert spec_fingerprint("not an object", "r1") is None
    assert spec_fingerprint(dict(spec, flink_version="0.1"), "r1") is None  # no such line: always computed
    # a changed profile of the graph's line changes it; another line's does not
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    for p in fp_module.PROFILE_DIR.glob("*.json"):
        (profiles / p.name).write_bytes(p.read_bytes())
    monkeypatch.setattr(fp_module, "PROFILE_DIR", profiles)
    fp_module.profile_digest.cache_clear()
    try:
        assert spec_fingerprint(spec, "r1") == base
        line = spec["flink_version"]
        other = next(p for p in profiles.glob("*.json") if p.stem != line)
        other.write_bytes(other.read_bytes() + b" ")
        fp_module.profile_digest.cache_clear()
        assert spec_fingerprint(spec, "r1") == base
        (profiles / f"{line}.json").write_bytes((profiles / f"{line}.json").read_bytes() + b" ")
        fp_module.profile_digest.cache_clear()
        assert spec_fingerprint(spec, "r1") != base
    finally:
        fp_module.profile_digest.cache_clear()


def test_rules_version_follows_the_code(tmp_path, monkeypatch, settings):
    """Any change to the code that computes the tables is a new rules version."""
    for entry in fingerprints._CODE:
        src = ROOT / entry
        dst = tmp_path / entry
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            for f in src.rglob("*.py"):
                (dst / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
                (dst / f.relative_to(src)).write_bytes(f.read_bytes())
        else:
            dst.write_bytes(src.read_bytes())
    monkeypatch.setattr(fingerprints, "_ROOT", tmp_path)
    first = fingerprints.rules_version(settings)
    assert first == fingerprints.rules_version(settings)
    rule = tmp_path / "udfs" / "flink" / "chainability.py"
    assert rule.exists()
    rule.write_text(rule.read_text() + "\n# a changed rule\n")
    assert fingerprints.rules_version(settings) != first


def _jobs_of(spark, call) -> int:
    """The Spark jobs ``call()`` ran (the status tracker's jobs outside any job group)."""
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    call()
    return len(set(tracker.getJobIdsForGroup(None)) - before)


def test_a_night_prepares_its_replaces_while_chains_run(spark, settings, tmp_path, monkeypatch):
    fleet = [json.loads(line) for line in (ROOT / "samples" / "fleet-sample.jsonl").read_text().splitlines()]
    out, full = str(tmp_path / "out"), str(tmp_path / "full")
    prepared: list[tuple[str, tuple[str, ...]]] = []
    real = delta_writer.prepare_replaces

    def spy(spark_, output, tables):
        prepared.append((output, tuple(tables)))
        return real(spark_, output, tables)

    monkeypatch.setattr(delta_writer, "prepare_replaces", spy)
    compute(spark, _write(tmp_path / "in1", fleet), out, settings, QUIET)  # a first run: nothing to prepare
    assert prepared == []
    one_changed = [dict(fleet[0], nodes=[dict(n, parallelism=5) for n in fleet[0]["nodes"]]), *fleet[1:]]
    night = compute(spark, _write(tmp_path / "in2", one_changed), out, settings, QUIET)
    assert (night.graphs_recomputed, night.graphs_skipped) == (1, len(fleet) - 1)
    # the tables a night replaces without comparing their rows (run.UNCOMPARED_TABLES)
    assert prepared == [(out, ("operators", "job_vertices", "job_edges", "graph_fingerprints"))]
    compute(spark, str(tmp_path / "in2"), full, settings, QUIET, full=True)
    assert _snapshot(spark, out) == _snapshot(spark, full)
    compute(spark, str(tmp_path / "in2"), out, settings, QUIET)  # unchanged: nothing is written, nothing prepared
    assert len(prepared) == 1

    # What it spares the write: a table's files and their count, which Delta's DELETE reads
    # first, are in Delta's snapshot cache (a copy of the output: a path this session never read)
    shutil.copytree(out, tmp_path / "copy")

    def count_files(table: str) -> None:
        assert delta_log.file_count(spark, str(tmp_path / "copy" / table)) > 0

    real(spark, str(tmp_path / "copy"), ["operators", "no_such_table"]).join(timeout=120)
    assert _jobs_of(spark, lambda: count_files("operators")) == 0
    assert _jobs_of(spark, lambda: count_files("job_edges")) > 0
