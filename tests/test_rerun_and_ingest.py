"""Re-runs give the same tables; new graphs merge in by graph_id; ingest + compute from
the ingested folder gives what compute from the spec gives."""

from __future__ import annotations

import json
import shutil

import pytest

from pipeline.compute.run import Progress, compute, ingest

from .conftest import ROOT

TABLES = ("operators", "job_vertices", "job_edges", "graph_errors", "graph_fingerprints")


def _snapshot(spark, out: str, tables: tuple[str, ...] = TABLES) -> dict[str, list]:
    snap = {}
    for t in tables:
        df = spark.read.format("delta").load(f"{out}/{t}")
        snap[t] = sorted(tuple(str(v) for v in r) for r in df.collect())
    return snap


@pytest.fixture(scope="module")
def sample_input(tmp_path_factory):
    inp = tmp_path_factory.mktemp("samples") / "in"
    shutil.copytree(ROOT / "samples", inp)
    return inp


def test_rerun_is_idempotent_and_merges_by_graph_id(spark, settings, sample_input, tmp_path):
    out = str(tmp_path / "out")
    quiet = Progress(enabled=False)
    compute(spark, str(sample_input), out, settings, quiet)
    first = _snapshot(spark, out)
    assert first["job_vertices"] and first["graph_errors"]
    # file statistics are kept for graph_id, the first column, only (delta_sink.replace_graphs)
    for t in TABLES:
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{out}/{t}`").first()
        assert detail["properties"].get("delta.dataSkippingNumIndexedCols") == "1", t
        assert spark.read.format("delta").load(f"{out}/{t}").columns[0] == "graph_id", t
    compute(spark, str(sample_input), out, settings, quiet)
    assert _snapshot(spark, out) == first

    # A second input: one new graph, one existing graph changed so it is now rejected.
    extra = tmp_path / "extra"
    extra.mkdir()
    wc = json.loads((sample_input / "wordcount.json").read_text())
    new = dict(wc, graph_id="wordcount-copy")
    broken = dict(wc, edges=wc["edges"] + [{"source": 5, "target": 99}])
    (extra / "more.jsonl").write_text(json.dumps(new) + "\n" + json.dumps(broken) + "\n")
    compute(spark, str(extra), out, settings, quiet)
    after = _snapshot(spark, out)
    vert_ids = {r[0] for r in after["job_vertices"]}
    err_ids = {r[0]: r[1] for r in after["graph_errors"]}
    assert "wordcount-copy" in vert_ids
    assert wc["graph_id"] not in vert_ids and err_ids[wc["graph_id"]] == "DANGLING_EDGE"
    # Graphs of the first run that the second did not touch are unchanged.
    untouched = [r for r in first["job_vertices"] if r[0] not in (wc["graph_id"],)]
    assert set(untouched) <= set(after["job_vertices"])


def test_ingest_then_compute_equals_compute(spark, settings, sample_input, tmp_path):
    quiet = Progress(enabled=False)
    direct = str(tmp_path / "direct")
    compute(spark, str(sample_input), direct, settings, quiet)
    staged = str(tmp_path / "staged")
    summary = ingest(spark, str(sample_input), staged, quiet)
    assert summary.graphs_rejected == 3 and summary.graphs_processed > 20
    nodes = spark.read.format("delta").load(f"{staged}/stream_nodes")
    edges = spark.read.format("delta").load(f"{staged}/stream_edges")
    assert nodes.count() == summary.stream_nodes
    assert edges.where("edge_idx IS NULL").count() == 0
    via = str(tmp_path / "via")
    compute(spark, staged, via, settings, quiet)
    assert _snapshot(spark, via, TABLES[:-1]) == _snapshot(spark, direct, TABLES[:-1])
    assert _snapshot(spark, via, TABLES[-1:]) == {"graph_fingerprints": []}  # none from ingested rows


def test_summary_and_runs_row_count_what_the_tables_hold(spark, settings, sample_input, tmp_path):
    """The run's counts come from one pass over the per-graph stage's rows (run.compute), not
    from the written tables: they must be the tables' own counts, and the runs row of a run
    that created the tables must name version 0 and the graphs each table holds."""
    inp = tmp_path / "in"
    shutil.copytree(sample_input, inp)
    wc = json.loads((inp / "wordcount.json").read_text())
    source = next(n for n in wc["nodes"] if n.get("is_source"))
    # a graph of one JobVertex: rows in operators and job_vertices, none in job_edges
    (inp / "lone.json").write_text(json.dumps(dict(wc, graph_id="lone-source", nodes=[source], edges=[])))
    out = str(tmp_path / "out")
    summary = compute(spark, str(inp), out, settings, Progress(enabled=False))
    tables = {t: spark.read.format("delta").load(f"{out}/{t}") for t in TABLES}
    assert summary.job_vertices == tables["job_vertices"].count() > 0
    assert summary.job_edges == tables["job_edges"].count() > 0
    assert summary.graphs_rejected == tables["graph_errors"].count() == 3
    assert summary.graphs_in == summary.graphs_processed + summary.graphs_rejected
    assert summary.graphs_processed == tables["job_vertices"].select("graph_id").distinct().count()
    by_code = {r["error_code"]: r["count"] for r in tables["graph_errors"].groupBy("error_code").count().collect()}
    assert summary.errors_by_code == by_code
    run = spark.read.format("delta").load(f"{out}/runs").collect()
    assert len(run) == 1
    assert run[0]["versions"] == {t: 0 for t in TABLES}
    graphs = {t: tables[t].select("graph_id").distinct().count() for t in TABLES}
    assert graphs["job_edges"] == graphs["job_vertices"] - 1  # the lone source's graph

    assert run[0]["rewritten_graphs"] == graphs


def test_tables_an_earlier_release_wrote_get_the_new_columns(spark, settings, sample_input, tmp_path):
    """A job_vertices table without vertex_order, and an ingested folder without the stream
    columns added since (as earlier releases wrote them): a re-run adds the columns, fills them
    for every graph it owns, and the tables equal a fresh run's."""
    quiet = Progress(enabled=False)
    fresh = str(tmp_path / "fresh")
    compute(spark, str(sample_input), fresh, settings, quiet)

    old = str(tmp_path / "old")
    compute(spark, str(sample_input), old, settings, quiet)
    vertices = spark.read.format("delta").load(f"{old}/job_vertices").drop("vertex_order")
    vertices.localCheckpoint(eager=True).write.format("delta").mode("overwrite").option(
        "overwriteSchema", "true"
    ).save(f"{old}/job_vertices")
    assert "vertex_order" not in spark.read.format("delta").load(f"{old}/job_vertices").columns
    compute(spark, str(sample_input), old, settings, quiet)
    assert _snapshot(spark, old) == _snapshot(spark, fresh)

    staged = str(tmp_path / "staged")
    ingest(spark, str(sample_input), staged, quiet, settings)
    for table, dropped in (("stream_nodes", "state_key_serializer_snapshot"), ("stream_graphs", "user_classes")):
        df = spark.read.format("delta").load(f"{staged}/{table}").drop(dropped).localCheckpoint(eager=True)
        df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(f"{staged}/{table}")
    from_staged = str(tmp_path / "from_staged")
    compute(spark, staged, from_staged, settings, quiet)
    assert _snapshot(spark, from_staged, TABLES[:-1]) == _snapshot(spark, fresh, TABLES[:-1])
