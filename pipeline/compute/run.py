"""The whole job: spec texts -> every per-graph step in one Spark stage (:mod:`pipeline.compute.stage`)
-> chains (connected components, the check of every chain) -> Delta. Each stage
materialises its output (localCheckpoint), so the per-stage times printed as progress, and
kept in :class:`RunSummary`, are real.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.compute import buckets as per_graph
from pipeline.compute import chains
from pipeline.compute import duplicates as validate
from pipeline.compute import read as read_spec
from pipeline.compute import stage as fused
from pipeline.compute.row_codec import FUSED_ROWS
from pipeline.progress import Progress  # also imported from here (restore_check, tests)
from pipeline.settings import Settings
from pipeline.tables import delta_writer as delta_sink
from pipeline.tables import stream_tables
from pipeline.tables.columns import JOB_EDGE_COLUMNS, OPERATOR_COLUMNS
from pipeline.tables.stream_tables import StreamTables
from udfs.compute.batch import STEPS
from udfs.spec.contract import ERROR_COLUMNS

T = TypeVar("T")


@dataclass
class RunSummary:
    graphs_in: int = 0
    graphs_processed: int = 0
    graphs_rejected: int = 0
    stream_nodes: int = 0
    job_vertices: int = 0
    job_edges: int = 0
    bfs_levels_max: int = 0
    hash_layers_max: int = 0
    chain_rounds: int = 0
    chains_engine: str = ""
    worker_seconds: dict[str, float] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    errors_by_code: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _timed(
    summary: RunSummary,
    progress: Progress,
    stage: str,
    fn: Callable[[], T],
    spark: SparkSession | None = None,
    count_graphs: bool = False,
) -> T:
    """Run one step, with a moving progress line while it runs (``spark`` given) and its
    time said and kept in the summary."""
    t0 = time.perf_counter()
    with progress.stage(spark, stage, count_graphs) if spark is not None else nullcontext():
        out = fn()
    summary.stage_seconds[stage] = round(time.perf_counter() - t0, 3)
    progress.stage_done(stage, summary.stage_seconds[stage])
    return out


def load_stream_tables(spark: SparkSession, input_path: str, settings: Settings | None = None) -> StreamTables:
    """From spec files, or from a folder that ``ingest`` wrote (``settings``: the limits;
    default conf/pipeline.json)."""
    if delta_sink.is_delta_folder(spark, input_path):
        read = lambda t: spark.read.format("delta").load(delta_sink.table_path(input_path, t))  # noqa: E731
        errors_path = delta_sink.table_path(input_path, "graph_errors")
        errors = read("graph_errors") if delta_sink.DeltaTable.isDeltaTable(spark, errors_path) else None
        if errors is None:
            errors = spark.createDataFrame([], "graph_id string, error_code string, message string, source_file string")
        return StreamTables(read("stream_graphs"), read("stream_nodes"), read("stream_edges"), errors)
    records = read_spec.read_records(spark, input_path, read_spec.Limits.from_settings(settings))
    return validate.reject_duplicate_graph_ids(stream_tables.split_records(records))


def ingest(spark: SparkSession, input_path: str, output: str, progress: Progress | None = None) -> RunSummary:
    progress = progress or Progress()
    summary = RunSummary()
    tables = _timed(summary, progress, "read+validate", lambda: load_stream_tables(spark, input_path).persist(), spark)
    run_ids = tables.graphs.select("graph_id").unionByName(tables.errors.select("graph_id")).distinct()
    written = (
        ("stream_graphs", tables.graphs),
        ("stream_nodes", tables.nodes),
        ("stream_edges", tables.edges),
        ("graph_errors", tables.errors),
    )
    write = lambda: delta_sink.write_run(spark, output, written, run_ids, say=progress.say)  # noqa: E731
    _timed(summary, progress, "delta write", write, spark)
    summary.graphs_processed = tables.graphs.count()
    summary.graphs_rejected = tables.errors.count()
    summary.graphs_in = summary.graphs_processed + summary.graphs_rejected
    summary.stream_nodes = tables.nodes.count()
    return summary


def compute(
    spark: SparkSession,
    input_path: str,
    output: str,
    settings: Settings,
    progress: Progress | None = None,
) -> RunSummary:
    """Every output table for the graphs under ``input_path``: read to JobGraph rows in one
    Spark stage (:mod:`pipeline.compute.stage`), then connected components over the chainable edges
    as the check of every chain, then Delta."""
    progress = progress or Progress()
    summary = RunSummary()

    # From spec texts the first shuffle holds one row per graph: the progress line counts graphs.
    from_texts = not delta_sink.is_delta_folder(spark, input_path)

    def all_rows() -> DataFrame:
        if not from_texts:
            tables = load_stream_tables(spark, input_path)
            graphs = tables.graphs.count() + tables.errors.count()
            rows = fused.rows_from_tables(tables, per_graph.bucket_count(graphs))
        else:
            limits = read_spec.Limits.from_settings(settings)
            texts = read_spec.read_texts(spark, input_path, limits)
            rows = fused.rows_from_texts(texts, limits, settings.testing.raise_in_graph)
        return rows.localCheckpoint(eager=True)

    rows = _timed(summary, progress, "read+compute", all_rows, spark, count_graphs=from_texts)
    progress.per_graph_rows(rows)
    kind = F.col("kind")
    graph_rows = FUSED_ROWS.rows(rows, "graph")

    # ONE pass over the stage's rows for every count of the run: rows and graphs per kind,
    # checkpointed per (kind, graph), so the summary, the run's graph ids, the chains step's
    # graph index, the walk's side of the chain check and the Delta commits' graph counts
    # come from this small table instead of a scan of all rows each. Besides the three table
    # writes, the run passes over all rows three times after computing them (this count, the
    # chains step's input, the error rows), sixteen times before: README, Benchmark,
    # 2026-11-26 morning.
    with progress.stage(spark, "summary counts"):
        by_graph = count_per_graph(rows).localCheckpoint(eager=True)
        per_kind = (
            by_graph.groupBy("kind", "step")
            .agg(
                F.count("*").alias("graphs"),
                F.sum("n").alias("n"),
                F.sum("nodes").alias("nodes"),
                F.max("bfs").alias("bfs"),
                F.max("layers").alias("layers"),
                F.sum("seconds").alias("seconds"),
            )
            .collect()
        )
    kind_rows: dict[str, int] = {}
    kind_graphs: dict[str, int] = {}
    for r in per_kind:
        if r["kind"] == "timing":
            summary.worker_seconds[r["step"]] = round(r["seconds"], 3)
            continue
        kind_rows[r["kind"]], kind_graphs[r["kind"]] = int(r["n"]), int(r["graphs"])
        if r["kind"] == "graph":  # one row per input graph (a repeated id is counted again, below)
            summary.graphs_in, summary.stream_nodes = int(r["n"]), int(r["nodes"] or 0)
        elif r["kind"] == "stats":
            summary.bfs_levels_max, summary.hash_layers_max = int(r["bfs"] or 0), int(r["layers"] or 0)
    order = {step: i for i, step in enumerate(STEPS)}  # the steps in the order they run
    summary.worker_seconds = dict(sorted(summary.worker_seconds.items(), key=lambda kv: order.get(kv[0], len(order))))
    progress.say(
        f"{summary.graphs_in} graphs, {summary.stream_nodes} stream nodes; worker seconds per step: "
        + ", ".join(f"{k} {v:.1f}" for k, v in summary.worker_seconds.items())
    )

    def components() -> DataFrame:
        edges = chain_inputs(rows).localCheckpoint(eager=True)  # one pass over all rows
        shortcut = F.col("shortcut")
        roots, summary.chain_rounds = chains.member_roots(
            edges.where(~shortcut).select("graph_id", "source", "target"),
            settings,
            shortcuts=edges.where(shortcut).select(
                "graph_id", F.col("source").alias("head"), F.col("target").alias("node_id")
            ),
            graph_ids=by_graph.where(kind == "chain_edge").select("graph_id"),
        )
        summary.chains_engine = settings.chains.engine
        return roots.localCheckpoint(eager=True)

    roots = _timed(summary, progress, "chains", components, spark)

    def check_chains() -> DataFrame:
        disagree = chains.walk_disagreements(None, roots, walk_side(by_graph)).localCheckpoint(eager=True)
        return disagree.select(
            "graph_id",
            F.lit("CHAIN_CHECK_FAILED").alias("error_code"),
            F.format_string(
                "internal error: the chains of the createChain walk (%d operators below a chain head) "
                "are not the connected components of the chainable edges (%d nodes below a root); "
                "please report this graph",
                "walk_members",
                "component_members",
            ).alias("message"),
        )

    chain_errors = _timed(summary, progress, "chain check", check_chains, spark)
    run_ids = by_graph.where(kind == "graph").select("graph_id")
    repeated = kind_rows.get("graph", 0) > kind_graphs.get("graph", 0)  # a graph_id read twice
    if repeated:
        dupes = validate.duplicate_id_errors(graph_rows.select("graph_id", "source_file")).localCheckpoint(eager=True)
    else:
        dupes = spark.createDataFrame([], ", ".join(f"{c} string" for c in ERROR_COLUMNS))
    errors = FUSED_ROWS.rows(rows, "error").select(*ERROR_COLUMNS)
    rejected = [r["graph_id"] for r in chain_errors.select("graph_id").unionByName(dupes.select("graph_id")).collect()]
    if rejected:  # never, unless input ids repeat or the two chain computations disagree
        summary.graphs_in = kind_graphs["graph"]
        out = F.broadcast(spark.createDataFrame([(g,) for g in rejected], "graph_id string"))
        rows = rows.join(out, "graph_id", "left_anti")
        chain_errors = chain_errors.join(graph_rows.select("graph_id", "source_file").distinct(), "graph_id", "left")
        errors = FUSED_ROWS.rows(rows, "error").select(*ERROR_COLUMNS).unionByName(dupes.select(*ERROR_COLUMNS))
        errors = errors.unionByName(
            chain_errors.join(dupes.select("graph_id"), "graph_id", "left_anti").select(*ERROR_COLUMNS)
        )
    # the error rows are few: checkpointed, the graph_errors commit and the counts by code
    # read them, not all rows again
    errors = errors.localCheckpoint(eager=True)

    operators = FUSED_ROWS.rows(rows, "operator").select(*OPERATOR_COLUMNS)
    vertices = fused.vertex_rows(rows)
    job_edges = FUSED_ROWS.rows(rows, "job_edge").select(*JOB_EDGE_COLUMNS)
    graphs = None  # with rejected graphs the tables are the counted rows less theirs: counted again
    if not rejected:
        summary.job_vertices, summary.job_edges = kind_rows.get("vertex", 0), kind_rows.get("job_edge", 0)
        graphs = {
            "operators": kind_graphs.get("operator", 0),
            "job_vertices": kind_graphs.get("vertex", 0),
            "job_edges": kind_graphs.get("job_edge", 0),
        }
    _write_and_count(spark, output, summary, progress, (operators, vertices, job_edges, errors), run_ids, graphs)
    return summary


def count_per_graph(rows: DataFrame) -> DataFrame:
    """Per (kind, graph_id, timing step) of the per-graph stage's rows: the rows, the graph's
    stream nodes, its BFS levels and hash layers, the worker seconds, and the walk's side of
    the chain check (:func:`chains.walk_fingerprint`): one pass over all rows for every count
    the run needs."""
    kind = F.col("kind")

    def only(k: str, name: str) -> Column:
        return F.when(kind == k, FUSED_ROWS.column(k, name))

    member = (kind == "operator") & chains.walk_member(
        FUSED_ROWS.column("operator", "in_vertex_operator_ids"), FUSED_ROWS.column("operator", "is_chain_head")
    )
    return rows.groupBy("kind", "graph_id", only("timing", "step").alias("step")).agg(
        F.count("*").alias("n"),
        F.sum(only("graph", "node_count")).alias("nodes"),
        F.max(only("stats", "bfs_levels")).alias("bfs"),
        F.max(only("stats", "hash_layers")).alias("layers"),
        F.sum(only("timing", "worker_seconds")).alias("seconds"),
        *chains.walk_fingerprint(only("operator", "node_id"), only("operator", "chain_head_node_id"), member),
    )


def chain_inputs(rows: DataFrame) -> DataFrame:
    """(graph_id, source, target, shortcut): the chainable edges (``chain_edge`` rows) and the
    walk's head -> member shortcuts (:func:`chains.shortcut_member` of the ``operator`` rows)
    that the chains step gets, in one pass over the per-graph stage's rows."""
    kind = F.col("kind")
    is_edge = kind == "chain_edge"
    op = lambda name: FUSED_ROWS.column("operator", name)  # noqa: E731
    member = chains.shortcut_member(op("in_vertex_operator_ids"), op("is_chain_head"), op("chain_index"))
    edge = lambda name: FUSED_ROWS.column("chain_edge", name)  # noqa: E731
    return rows.where(is_edge | ((kind == "operator") & member)).select(
        "graph_id",
        F.when(is_edge, edge("source_node_id")).otherwise(op("chain_head_node_id")).alias("source"),
        F.when(is_edge, edge("target_node_id")).otherwise(op("node_id")).alias("target"),
        (~is_edge).alias("shortcut"),
    )


def walk_side(per_graph: DataFrame) -> DataFrame:
    """The walk's side of :func:`chains.walk_disagreements` from :func:`count_per_graph`."""
    ops = per_graph.where((F.col("kind") == "operator") & (F.col("members") > 0))
    return ops.select("graph_id", "members", "h1", "h2")


def _write_and_count(
    spark: SparkSession,
    output: str,
    summary: RunSummary,
    progress: Progress,
    tables: tuple[DataFrame, DataFrame, DataFrame, DataFrame],
    run_ids: DataFrame,
    graph_counts: dict[str, int] | None = None,
) -> None:
    """The last step: the four tables to Delta, then the summary's counts. ``graph_counts``:
    the graphs with rows in a table, when known (no scan of its rows to count them); with
    them, the summary's job_vertices and job_edges are already set."""
    operators, vertices, job_edges, errors = tables
    _timed(
        summary,
        progress,
        "delta write",
        lambda: _write_tables(spark, output, operators, vertices, job_edges, errors, run_ids, progress, graph_counts),
        spark,
    )
    _count_outputs(summary, vertices, job_edges, errors, count_tables=graph_counts is None)


def _write_tables(
    spark, output, operators, vertices, job_edges, errors, run_ids, progress=None, graph_counts=None
) -> None:
    """The four tables, each replaced in one Delta commit, then the run published in the
    output's ``runs`` table (delta_sink.write_run; what a kill or a concurrent run can leave
    is docs/faults.md)."""
    tables = (
        ("operators", operators),
        ("job_vertices", vertices),
        ("job_edges", job_edges),
        ("graph_errors", errors),
    )
    say = progress.say if progress else None
    delta_sink.write_run(spark, output, tables, run_ids, say=say, graph_counts=graph_counts)


def _count_outputs(
    summary: RunSummary, vertices: DataFrame, job_edges: DataFrame, errors: DataFrame, count_tables: bool = True
) -> None:
    summary.graphs_rejected = errors.count()
    summary.graphs_processed = summary.graphs_in - summary.graphs_rejected
    if count_tables:
        summary.job_vertices = vertices.count()
        summary.job_edges = job_edges.count()
    summary.errors_by_code = {
        r["error_code"]: r["n"] for r in errors.groupBy("error_code").agg(F.count("*").alias("n")).collect()
    }
