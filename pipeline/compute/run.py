"""The whole job, as named phases: spec texts -> every per-graph step in one Spark stage
(:mod:`pipeline.compute.stage`) -> one counting pass -> chains (connected components, the
check of every chain) -> rejections across graphs -> Delta. Each phase materialises its output
(localCheckpoint), so the per-phase times printed as progress, and kept in
:class:`RunSummary`, are real. ``ingest`` runs the same stage for the stream tables alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TypeVar

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.compute import buckets as per_graph
from pipeline.compute import chains, fingerprints
from pipeline.compute import duplicates as validate
from pipeline.compute import read as read_spec
from pipeline.compute import stage as fused
from pipeline.compute.row_codec import FUSED_ROWS
from pipeline.options import Summary
from pipeline.progress import Progress  # also imported from here (restore_check, tests)
from pipeline.session import local_frame
from pipeline.settings import Settings, TableSettings, load_settings
from pipeline.tables import delta_writer as delta_sink
from pipeline.tables.catalog import COMMAND_TABLES
from pipeline.tables.columns import JOB_EDGE_COLUMNS, OPERATOR_COLUMNS, column_type
from pipeline.tables.stream_tables import StreamTables
from udfs.compute.batch import STEPS
from udfs.spec.contract import EDGE_COLUMNS, ERROR_COLUMNS, GRAPH_COLUMNS, NODE_COLUMNS
from udfs.spec.fingerprint import line_salt

T = TypeVar("T")

# The chains step's input rows per partition at most (chain_inputs: chainable edges and
# shortcuts); the 10k fleet's 1.3M rows keep all of the stage's partitions.
EDGES_PER_PARTITION = 100_000
# An incremental run over at most this share of the output's keys rewrites them without
# comparing their rows with the table's first (delta_writer.TableWrite.compare).
COMPARE_ABOVE_SHARE = 0.1
# The tables whose rows such a run replaces without that compare: the per-operator tables,
# whose compare scans every row, and graph_fingerprints, where a recomputed graph's row differs
# by what made the run recompute it (graph_errors keeps it: a graph rejected again is rejected
# alike, and its few rows cost little to compare).
UNCOMPARED_TABLES = ("operators", "job_vertices", "job_edges", fingerprints.TABLE)


def compares_rows(run_keys: int, known_keys: int) -> bool:
    """Whether a run over ``run_keys`` keys (graphs, checks) compares their rows with those of
    an output that holds ``known_keys`` before rewriting them. A nightly run's few keys changed
    (their fingerprints say so), and the compare scans every column of every row of the table;
    a run over most of the output (a first run, ``--full``, changed rules) compares, and
    rewrites only the keys whose rows differ."""
    return not known_keys or run_keys > COMPARE_ABOVE_SHARE * known_keys


@dataclass
class RunSummary(Summary):
    graphs_in: int = 0
    graphs_processed: int = 0
    graphs_rejected: int = 0
    graphs_skipped: int = 0  # unchanged since the output's last run (graph_fingerprints): not recomputed
    graphs_recomputed: int = 0  # in the output already, changed (spec, profile or rules): recomputed
    graphs_new: int = 0  # not in the output's graph_fingerprints: computed for the first time
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


def read_ingested(spark: SparkSession, folder: str) -> StreamTables:
    """The stream tables of a folder ``ingest`` wrote (its ``graph_errors`` may be absent). A
    folder an earlier release wrote lacks the optional columns added since: they read as null,
    which is what the spec fields they hold default to."""

    def read(table: str, columns: list[str]) -> DataFrame:
        df = spark.read.format("delta").load(delta_sink.table_path(folder, table))
        missing = [c for c in columns if c not in df.columns]
        return df.select(*df.columns, *[F.lit(None).cast(column_type(c)).alias(c) for c in missing])

    errors_path = delta_sink.table_path(folder, "graph_errors")
    if delta_sink.DeltaTable.isDeltaTable(spark, errors_path):
        errors = read("graph_errors", ERROR_COLUMNS)
    else:
        errors = local_frame(spark, [], "graph_id string, error_code string, message string, source_file string")
    return StreamTables(
        read("stream_graphs", GRAPH_COLUMNS), read("stream_nodes", NODE_COLUMNS), read("stream_edges", EDGE_COLUMNS),
        errors,
    )  # fmt: skip


def stream_tables_of(rows: DataFrame) -> StreamTables:
    """The stream tables from the per-graph stage's rows when it emitted them (``stream``):
    the graphs as the contract checks read them, and the error rows."""
    return StreamTables(
        graphs=FUSED_ROWS.rows(rows, "stream_graph").select(*GRAPH_COLUMNS),
        nodes=FUSED_ROWS.rows(rows, "stream_node").select(*NODE_COLUMNS),
        edges=FUSED_ROWS.rows(rows, "stream_edge").select(*EDGE_COLUMNS),
        errors=FUSED_ROWS.rows(rows, "error").select(*ERROR_COLUMNS),
    )


def ingest(
    spark: SparkSession,
    input_path: str,
    output: str,
    progress: Progress | None = None,
    settings: Settings | None = None,
) -> RunSummary:
    """Spec files -> the stream tables (``stream_graphs``, ``stream_nodes``, ``stream_edges``,
    ``graph_errors``), read and checked by the same stage as ``compute`` (no JobGraph step)."""
    progress = progress or Progress()
    summary = RunSummary()
    limits = read_spec.Limits.from_settings(settings)

    def read() -> StreamTables:
        texts = read_spec.read_texts(spark, input_path, limits)
        rows = fused.rows_from_texts(texts, limits, emit=frozenset({fused.STREAM}))
        return validate.reject_duplicate_graph_ids(stream_tables_of(rows.localCheckpoint(eager=True))).persist()

    tables = _timed(summary, progress, "read+validate", read, spark, count_graphs=True)
    run_ids = tables.graphs.select("graph_id").unionByName(tables.errors.select("graph_id")).distinct()
    written = (
        ("stream_graphs", tables.graphs),
        ("stream_nodes", tables.nodes),
        ("stream_edges", tables.edges),
        ("graph_errors", tables.errors),
    )
    ts = (settings or load_settings()).tables
    write = lambda: delta_sink.write_run(  # noqa: E731
        spark, output, written, run_ids, say=progress.say, deletion_vectors=ts.deletion_vectors,
        replace_where_max_keys=ts.replace_where_max_keys,
    )  # fmt: skip
    _timed(summary, progress, "delta write", write, spark)
    summary.graphs_processed = tables.graphs.count()
    summary.graphs_rejected = tables.errors.count()
    summary.graphs_in = summary.graphs_processed + summary.graphs_rejected
    summary.stream_nodes = tables.nodes.count()
    summary.errors_by_code = _errors_by_code(tables.errors)
    return summary


@dataclass
class ComputeRun:
    """What one ``compute`` run leaves besides its tables: the summary, and the graphs as the
    contract checks read them when the caller asked to keep them (``check-restore`` explains
    and proves its fixes with them, without reading the specs again)."""

    summary: RunSummary
    stream: StreamTables | None = None
    # the run's operators, job_vertices, job_edges, graph_errors (and graph_fingerprints from texts)
    tables: dict[str, DataFrame] = field(default_factory=dict)


def compute(
    spark: SparkSession,
    input_path: str,
    output: str,
    settings: Settings,
    progress: Progress | None = None,
    full: bool = False,
) -> RunSummary:
    """Every output table for the graphs under ``input_path``: read to JobGraph rows in one
    Spark stage (:mod:`pipeline.compute.stage`), then connected components over the chainable
    edges as the check of every chain, then Delta. Incremental unless ``full``
    (:func:`compute_run`)."""
    return compute_run(spark, input_path, output, settings, progress, full=full).summary


def compute_run(
    spark: SparkSession,
    input_path: str,
    output: str | None,
    settings: Settings,
    progress: Progress | None = None,
    keep_stream: bool = False,
    full: bool = False,
    known: dict[str, str] | None = None,
) -> ComputeRun:
    """:func:`compute`, keeping the stream tables of the run's graphs when ``keep_stream``.

    From spec texts the run is incremental: a graph whose fingerprint (its spec, its line's
    profile, the rules version: :mod:`udfs.spec.fingerprint`) the output's published
    ``graph_fingerprints`` hold is not recomputed, its rows stay; the fingerprints of the graphs
    computed are written with the tables, and every graph's are returned (check-restore keys
    its checks by them). ``full`` recomputes every graph. ``known`` (graph_id -> fingerprint)
    skips those graphs instead of the output's: check-restore's second pass, which computes only
    the graphs its changed checks need that the first pass skipped. ``keep_stream`` keeps the
    stream tables of the graphs computed. An ingested folder has no fingerprints (its graphs
    are rows already) and is computed whole.
    ``output`` None (one job's deploy gate without ``--output``): nothing is written; the run's
    tables are in the returned :class:`ComputeRun` as they are with an output."""
    progress = progress or Progress()
    summary = RunSummary()
    from_texts = not delta_sink.is_delta_folder(spark, input_path)
    ingested = None if from_texts else read_ingested(spark, input_path)
    emit = frozenset({fused.JOBGRAPH, fused.STREAM} if keep_stream else {fused.JOBGRAPH})
    skip, lines, held = None, None, None
    if from_texts:
        skip, lines, held = _incremental(spark, output, settings, progress, full, known)
        known = held.graphs
    # From spec texts the first shuffle holds one row per graph: the progress line counts graphs.
    stage = lambda: _stage_rows(spark, input_path, settings, ingested, emit, skip, lines)  # noqa: E731
    rows = _timed(summary, progress, "read+compute", stage, spark, count_graphs=from_texts)
    progress.per_graph_rows(rows)
    counts = _count(spark, rows, summary, progress)
    compare = _compares_or_prepares(spark, output, summary, known)
    roots = _timed(summary, progress, "chains", lambda: _chains(rows, counts, settings, summary), spark)
    chain_errors = _timed(summary, progress, "chain check", lambda: _chain_errors(spark, roots, counts), spark)
    rows, errors, rejected = _rejections(spark, rows, counts, chain_errors, summary)
    kept = {
        "operators": FUSED_ROWS.rows(rows, "operator").select(*OPERATOR_COLUMNS),
        "job_vertices": fused.vertex_rows(rows),
        "job_edges": FUSED_ROWS.rows(rows, "job_edge").select(*JOB_EDGE_COLUMNS),
        "graph_errors": errors,
    }
    # with rejected graphs the tables are the counted rows less theirs: counted again
    graphs = None if rejected else _counted_tables(summary, counts)
    run_ids = _run_ids(spark, counts, rejected)
    graph_fps = FUSED_ROWS.rows(rows, "fingerprint") if skip is not None else None
    tables, fingerprint_ids = _tables(spark, list(kept.values()), graph_fps, skip, counts, run_ids, held)
    _write_and_count(
        spark, output, summary, progress, tables, run_ids, graphs, settings.tables, compare, fingerprint_ids,
        skip.rules_version if skip is not None else None,
    )  # fmt: skip
    if graph_fps is not None:
        kept["graph_fingerprints"] = graph_fps.select("graph_id", "fingerprint", "skipped")
    return ComputeRun(summary, _stream(keep_stream, ingested, rows, errors), kept)


def _compares_or_prepares(
    spark: SparkSession, output: str | None, summary: RunSummary, known: dict[str, str] | None
) -> bool:
    """Whether the run compares its rows with the output's before rewriting them
    (:func:`compares_rows`). A night that does not, and rewrites some graph, has Delta's side of
    its replaces prepared while the chains step runs (``delta_writer.prepare_replaces``)."""
    compare = compares_rows(summary.graphs_in - summary.graphs_skipped, len(known or {}))
    if output is not None and not compare and summary.graphs_in > summary.graphs_skipped:
        delta_sink.prepare_replaces(spark, output, UNCOMPARED_TABLES)
    return compare


def _stream(keep: bool, ingested: StreamTables | None, rows: DataFrame, errors: DataFrame) -> StreamTables | None:
    """The stream tables of the run's graphs, when kept: an ingested folder's, else the rows'."""
    if not keep:
        return None
    if ingested is not None:
        return ingested
    stream = stream_tables_of(rows)
    stream.errors = errors
    return stream


def _incremental(
    spark: SparkSession,
    output: str | None,
    settings: Settings,
    progress: Progress,
    full: bool,
    known: dict[str, str] | None,
) -> tuple[fused.Skip, read_spec.KnownLines, fingerprints.Known]:
    """What a run from spec texts may skip: the graphs (and line keys) the output's fingerprints
    hold, or the ones check-restore's second pass names (``known``); none when ``full``."""
    version = fingerprints.rules_version(settings)
    held = fingerprints.Known(graphs=known or {})  # check-restore's second pass: the graphs it names
    if known is None and not full and output is not None:
        held = fingerprints.known_graphs(spark, output, progress.say)
        if held.graphs:
            progress.say(
                f"incremental: the output holds {len(held.graphs)} graphs' fingerprints, "
                f"{len(held.lines)} of them with the key of their line's bytes; rules version {version}"
            )
    bc = spark.sparkContext.broadcast
    lines = read_spec.KnownLines(line_salt(version), bc(held.lines) if held.lines else None)
    skip = fused.Skip(version, bc(held.graphs) if held.graphs else None, bc(held.keys) if held.keys else None)
    return skip, lines, held


def _counted_tables(summary: RunSummary, counts: _Counts) -> dict[str, int]:
    """The graphs with rows in each JobGraph table, as the one counting pass found them (and the
    summary's vertex and edge counts)."""
    summary.job_vertices, summary.job_edges = counts.rows.get("vertex", 0), counts.rows.get("job_edge", 0)
    return {
        "operators": counts.graphs.get("operator", 0),
        "job_vertices": counts.graphs.get("vertex", 0),
        "job_edges": counts.graphs.get("job_edge", 0),
    }


def _tables(
    spark: SparkSession,
    jobgraph: list[DataFrame],
    graph_fps: DataFrame | None,
    skip: fused.Skip | None,
    counts: _Counts,
    run_ids: DataFrame,
    held: fingerprints.Known | None = None,
) -> tuple[list[DataFrame], DataFrame | None]:
    """The tables the run writes, in COMMAND_TABLES' order (the JobGraph tables, graph_errors,
    graph_fingerprints), and the ids whose fingerprint rows it replaces (None: the run's).
    ``held``: what the output held (a rekeyed rejected graph keeps the file its row names)."""
    if graph_fps is None or skip is None:  # from an ingested folder: no texts to fingerprint, none kept
        return [*jobgraph, local_frame(spark, [], fingerprints.SCHEMA)], None
    fingerprint_ids = None
    if counts.rekeyed:  # graphs skipped but read from other bytes: their row gets the new key
        rekeyed = graph_fps.where(F.col("rekeyed")).select("graph_id")
        fingerprint_ids = run_ids.unionByName(rekeyed).distinct()
    return [*jobgraph, fingerprints.rows(spark, graph_fps, skip.rules_version, jobgraph[3], held)], fingerprint_ids


def _run_ids(spark: SparkSession, counts: _Counts, rejected: list[str]) -> DataFrame:
    """The graphs the run rewrites: every input graph but those skipped as unchanged (each of
    its copies), plus the rejected ones (a graph_id read twice is rejected even when its copies
    are unchanged: its rows go, its error row comes)."""
    if not rejected and counts.rows.get("graph", 0) == counts.skipped:  # every graph unchanged: none
        return local_frame(spark, [], "graph_id string")
    graph = counts.by_graph.where(F.col("kind") == "graph").select("graph_id")
    fp = counts.by_graph.where(F.col("kind") == "fingerprint")
    unchanged = fp.where(F.col("skipped") == F.col("n")).select("graph_id")
    ids = graph.join(unchanged, "graph_id", "left_anti")
    if rejected:
        ids = ids.unionByName(local_frame(spark, [(g,) for g in rejected], "graph_id string")).distinct()
    return ids


def _stage_rows(
    spark: SparkSession,
    input_path: str,
    settings: Settings,
    ingested: StreamTables | None,
    emit: frozenset[str],
    skip: fused.Skip | None = None,
    lines: read_spec.KnownLines | None = None,
) -> DataFrame:
    """The per-graph stage's rows of every input graph, checkpointed: from spec texts (one
    ``mapInArrow``; a line ``lines`` knows by its bytes reaches it without its text), or from
    an ingested folder's stream tables."""
    if ingested is not None:
        graphs = ingested.graphs.count() + ingested.errors.count()
        rows = fused.rows_from_tables(ingested, per_graph.bucket_count(graphs))
    else:
        limits = read_spec.Limits.from_settings(settings)
        texts = read_spec.read_texts(spark, input_path, limits, lines)
        rows = fused.rows_from_texts(texts, limits, settings.testing.raise_in_graph, emit, skip)
    return rows.localCheckpoint(eager=True)


@dataclass
class _Counts:
    by_graph: DataFrame  # count_per_graph, checkpointed
    rows: dict[str, int]  # kind -> rows
    graphs: dict[str, int]  # kind -> graphs with rows of it
    rekeyed: int = 0  # graphs skipped by their fingerprint, read from other bytes (fused.Skip)
    skipped: int = 0  # input graphs (copies) skipped as unchanged


def _count(spark: SparkSession, rows: DataFrame, summary: RunSummary, progress: Progress) -> _Counts:
    """ONE pass over the stage's rows for every count of the run, checkpointed per (kind,
    graph): the summary, the run's graph ids, the chains step's graph index, the walk's side
    of the chain check and the Delta commits' graph counts come from this small table instead
    of a scan of all rows each."""
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
                F.sum("skipped").alias("skipped"),
                F.sum("known").alias("known"),
                F.sum("rekeyed").alias("rekeyed"),
            )
            .collect()
        )
    counts = _Counts(by_graph, {}, {})
    for r in per_kind:
        if r["kind"] == "timing":
            summary.worker_seconds[r["step"]] = round(r["seconds"], 3)
            continue
        counts.rows[r["kind"]], counts.graphs[r["kind"]] = int(r["n"]), int(r["graphs"])
        if r["kind"] == "graph":  # one row per input graph (a repeated id is counted again, below)
            summary.graphs_in, summary.stream_nodes = int(r["n"]), int(r["nodes"] or 0)
        elif r["kind"] == "fingerprint":
            summary.graphs_skipped = int(r["skipped"] or 0)
            summary.graphs_recomputed = int(r["known"] or 0) - summary.graphs_skipped
            summary.graphs_new = int(r["n"]) - int(r["known"] or 0)
            counts.rekeyed = int(r["rekeyed"] or 0)
            counts.skipped = summary.graphs_skipped
        elif r["kind"] == "stats":
            summary.bfs_levels_max, summary.hash_layers_max = int(r["bfs"] or 0), int(r["layers"] or 0)
    order = {step: i for i, step in enumerate(STEPS)}  # the steps in the order they run
    summary.worker_seconds = dict(sorted(summary.worker_seconds.items(), key=lambda kv: order.get(kv[0], len(order))))
    progress.say(
        f"{summary.graphs_in} graphs, {summary.stream_nodes} stream nodes; worker seconds per step: "
        + ", ".join(f"{k} {v:.1f}" for k, v in summary.worker_seconds.items())
    )
    return counts


def _chains(rows: DataFrame, counts: _Counts, settings: Settings, summary: RunSummary) -> DataFrame:
    """Connected components of the chainable edges plus the walk's head shortcuts (GraphFrames)."""
    # One pass over all rows; partitions sized to the edges (GraphX runs a task per partition
    # per step of every iteration: 16 partitions of a one-job gate's 12 edges cost more than the
    # work); coalesce never adds partitions, so a big run keeps the rows' own.
    summary.chains_engine = settings.chains.engine
    if not counts.rows.get("chain_edge"):
        # No chainable edge in the run (a night whose graphs are all unchanged, or none chains):
        # no component to find, every node is its own chain. The check below still holds the
        # walk to that: a member it placed under a head is a disagreement.
        return local_frame(rows.sparkSession, [], "graph_id string, node_id int, root int")
    n_edges = counts.rows.get("chain_edge", 0) + counts.rows.get("operator", 0)
    edges = chain_inputs(rows).coalesce(max(1, -(-n_edges // EDGES_PER_PARTITION))).localCheckpoint(eager=True)
    shortcut = F.col("shortcut")
    roots, summary.chain_rounds = chains.member_roots(
        edges.where(~shortcut).select("graph_id", "source", "target"),
        settings,
        shortcuts=edges.where(shortcut).select(
            "graph_id", F.col("source").alias("head"), F.col("target").alias("node_id")
        ),
        graph_ids=counts.by_graph.where(F.col("kind") == "chain_edge").select("graph_id"),
    )
    return roots.localCheckpoint(eager=True)


def _chain_errors(spark: SparkSession, roots: DataFrame, counts: _Counts) -> DataFrame:
    """A CHAIN_CHECK_FAILED row for every graph whose walk's chains are not the components.
    A run without operators and chainable edges (a night whose graphs are all unchanged) has
    neither side to compare: no Spark job for it."""
    if not counts.rows.get("operator") and not counts.rows.get("chain_edge"):
        return local_frame(spark, [], ", ".join(f"{c} string" for c in ERROR_COLUMNS[:3]))
    disagree = chains.walk_disagreements(None, roots, walk_side(counts.by_graph)).localCheckpoint(eager=True)
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


def _rejections(
    spark: SparkSession, rows: DataFrame, counts: _Counts, chain_errors: DataFrame, summary: RunSummary
) -> tuple[DataFrame, DataFrame, list[str]]:
    """The rows less those of graphs rejected across the run (a graph_id read twice, a chain
    check that failed), the error rows with theirs, and their ids; the error rows are few and
    checkpointed, so the graph_errors commit and the counts by code do not read all rows."""
    graph_rows = FUSED_ROWS.rows(rows, "graph")
    repeated = counts.rows.get("graph", 0) > counts.graphs.get("graph", 0)  # a graph_id read twice
    if repeated:
        dupes = validate.duplicate_id_errors(graph_rows.select("graph_id", "source_file")).localCheckpoint(eager=True)
    else:
        dupes = local_frame(spark, [], ", ".join(f"{c} string" for c in ERROR_COLUMNS))
    if not repeated and not counts.rows.get("error") and not counts.rows.get("operator"):
        # nothing rejected, nothing to check (a night whose graphs are all unchanged): no job
        return rows, local_frame(spark, [], ", ".join(f"{c} string" for c in ERROR_COLUMNS)), []
    errors = FUSED_ROWS.rows(rows, "error").select(*ERROR_COLUMNS)
    rejected = [r["graph_id"] for r in chain_errors.select("graph_id").unionByName(dupes.select("graph_id")).collect()]
    if rejected:  # never, unless input ids repeat or the two chain computations disagree
        summary.graphs_in = counts.graphs["graph"]
        out = F.broadcast(local_frame(spark, [(g,) for g in rejected], "graph_id string"))
        rows = rows.join(out, "graph_id", "left_anti")
        chain_errors = chain_errors.join(graph_rows.select("graph_id", "source_file").distinct(), "graph_id", "left")
        errors = FUSED_ROWS.rows(rows, "error").select(*ERROR_COLUMNS).unionByName(dupes.select(*ERROR_COLUMNS))
        errors = errors.unionByName(
            chain_errors.join(dupes.select("graph_id"), "graph_id", "left_anti").select(*ERROR_COLUMNS)
        )
    return rows, errors.localCheckpoint(eager=True), rejected


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
        F.sum(only("fingerprint", "skipped").cast("int")).alias("skipped"),
        F.sum(only("fingerprint", "known").cast("int")).alias("known"),
        F.sum(only("fingerprint", "rekeyed").cast("int")).alias("rekeyed"),
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
    output: str | None,
    summary: RunSummary,
    progress: Progress,
    tables: list[DataFrame],
    run_ids: DataFrame,
    graph_counts: dict[str, int] | None = None,
    table_settings: TableSettings | None = None,
    compare: bool = True,
    fingerprint_ids: DataFrame | None = None,
    rules_version: str | None = None,
) -> None:
    """The last step: the tables to Delta (operators, job_vertices, job_edges, graph_errors,
    and graph_fingerprints when given), each replaced in one commit, then the run published in
    the output's ``runs`` table (delta_sink.write_run; what a kill or a concurrent run can leave
    is docs/faults.md), then the summary's counts. ``graph_counts``: the graphs with rows in a
    table, when known (no scan of its rows to count them); with them, the summary's
    job_vertices and job_edges are already set. ``output`` None: counted, not written."""
    written = [
        delta_sink.TableWrite(
            name, rows, key_count=(graph_counts or {}).get(name), compare=compare or name not in UNCOMPARED_TABLES,
            ids=fingerprint_ids if name == fingerprints.TABLE else None,
        )  # fmt: skip
        for name, rows in zip(COMMAND_TABLES["compute"], tables, strict=False)
    ]
    _count_outputs(summary, tables[1], tables[2], tables[3], count_tables=graph_counts is None)
    counts = {
        "rejected": summary.graphs_rejected,
        "skipped": summary.graphs_skipped,
        "recomputed": summary.graphs_recomputed,
        "new": summary.graphs_new,
    }

    ts = table_settings or TableSettings()

    def write() -> None:
        delta_sink.write_run(
            spark, output, written, run_ids, say=progress.say, deletion_vectors=ts.deletion_vectors, counts=counts,
            replace_where_max_keys=ts.replace_where_max_keys, rules_version=rules_version,
        )  # fmt: skip

    if output is not None:
        _timed(summary, progress, "delta write", write, spark)


def _count_outputs(
    summary: RunSummary, vertices: DataFrame, job_edges: DataFrame, errors: DataFrame, count_tables: bool = True
) -> None:
    summary.graphs_rejected = errors.count()  # the error rows are few and checkpointed
    summary.graphs_processed = summary.graphs_in - summary.graphs_rejected - summary.graphs_skipped
    if count_tables:
        summary.job_vertices = vertices.count()
        summary.job_edges = job_edges.count()
    summary.errors_by_code = _errors_by_code(errors) if summary.graphs_rejected else {}


def _errors_by_code(errors: DataFrame) -> dict[str, int]:
    return {r["error_code"]: r["n"] for r in errors.groupBy("error_code").agg(F.count("*").alias("n")).collect()}
