"""The per-graph stage: spec text -> every per-graph step -> rows of all output tables, in
ONE Spark stage.

Every step but the chains is per graph, and a graph is small: run as Spark stages of their
own (one per step, each a shuffle and a materialised table, the former "staged executor")
they mostly paid Spark's fixed costs, 139.1 s against 71.0 s at 10k graphs
(bench/results/20261122-030700-fleet-10k-staged.json, 20261122-025104-fleet-10k-fused.json).
Here one ``mapInPandas`` over the input lines parses and checks each graph
(:mod:`udfs.spec_contract`) and runs the rest on the batch
(:func:`udfs.graph_batch.compute_batch`): no shuffle until the connected components, which
need all graphs' chainable edges at once.

Output: one frame of :data:`FUSED_SCHEMA`, ``kind`` telling the row's table:
``operator``/``vertex``/``job_edge`` (the output tables), ``chain_edge`` (the input of
connected components), ``graph`` (one per input graph text: id, file, node count),
``stats`` (traversal statistics), ``error`` and ``timing`` (worker seconds per step and batch).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import chain

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipeline.per_graph import cogroup_buckets, kind_frames
from pipeline.read_spec import Limits, internal_message, parse_text
from pipeline.stream_tables import StreamTables
from pipeline.table_columns import JOB_EDGE_COLUMNS, OPERATOR_COLUMNS, VERTEX_COLUMNS, column_type
from udfs.graph_batch import EDGE_INPUT_COLUMNS, NODE_INPUT_COLUMNS, BatchRows, StepClock, compute_batch, concat_columns
from udfs.spec_contract import ERROR_COLUMNS, GRAPH_COLUMNS, NODE_COLUMNS

# The columns of each kind of row (besides ``kind`` and ``graph_id``); their types are the
# tables' (pipeline/table_columns.py), plus these columns of the per-graph stage's own.
_STAGE_INT_COLUMNS = ("node_count", "bfs_levels", "hash_layers")
KIND_COLUMNS: dict[str, list[str]] = {
    "operator": [c for c in OPERATOR_COLUMNS if c != "graph_id"],
    "vertex": [c for c in VERTEX_COLUMNS if c not in ("graph_id", "operator_ids", "user_operator_ids")]
    + ["operator_ids_text", "user_operator_ids_text"],
    "job_edge": [c for c in JOB_EDGE_COLUMNS if c != "graph_id"],
    "chain_edge": ["source_node_id", "target_node_id"],
    "graph": ["source_file", "node_count"],
    "stats": ["bfs_levels", "hash_layers", "frontier_sizes"],
    "error": [c for c in ERROR_COLUMNS if c != "graph_id"],
    "timing": ["step", "worker_seconds"],
}
# Columns with a type of their own keep their name; the others share typed slots (i0, s0,
# b0, ...), each kind filling them in its column order. The rows are 17 columns wide
# instead of the union of every kind's columns (45, nearly all null in any one row). On the
# 10k fleet this took read+compute from 33.6 s to 28.6 s and peak memory from 9.9 to 7.7 GB
# (bench/results/20261122-041649-fleet-10k-narrow.json): fewer columns to build in pandas,
# to convert to and from Arrow, and to hold in the checkpoint.
_OWN = {"frontier_sizes": T.ArrayType(T.IntegerType()), "worker_seconds": T.DoubleType()}
_SLOT_PREFIX = {T.IntegerType(): "i", T.StringType(): "s", T.BooleanType(): "b"}


def _layout() -> dict[str, dict[str, str]]:
    layout = {}
    for kind, columns in KIND_COLUMNS.items():
        used: dict[str, int] = {}
        slots = {}
        for c in columns:
            if c in _OWN:
                slots[c] = c
                continue
            prefix = _SLOT_PREFIX[T.IntegerType() if c in _STAGE_INT_COLUMNS else column_type(c)]
            slots[c] = f"{prefix}{used.get(prefix, 0)}"
            used[prefix] = used.get(prefix, 0) + 1
        layout[kind] = slots
    return layout


LAYOUT = _layout()
_SLOTS = sorted(
    {v for slots in LAYOUT.values() for v in slots.values() if v not in _OWN}, key=lambda v: (v[0], int(v[1:]))
)
_SLOT_TYPES = {v: t for t, p in _SLOT_PREFIX.items() for v in _SLOTS if v[0] == p}
FUSED_SCHEMA = T.StructType(
    [
        T.StructField("kind", T.StringType(), False),
        T.StructField("graph_id", T.StringType(), False),
        *[T.StructField(v, _SLOT_TYPES[v], True) for v in _SLOTS],
        *[T.StructField(c, t, True) for c, t in _OWN.items()],
    ]
)


def column(kind: str, name: str) -> Column:
    """Column ``name`` of the rows of ``kind``, wherever the layout put it."""
    return F.col(LAYOUT[kind][name])


def kind_rows(rows: DataFrame, kind: str) -> DataFrame:
    """The rows of ``kind``, with their own column names (``graph_id`` first)."""
    return rows.where(F.col("kind") == kind).select("graph_id", *[column(kind, c).alias(c) for c in KIND_COLUMNS[kind]])


def _frames(rows: BatchRows, clock: StepClock) -> list[pd.DataFrame]:
    """One frame per kind of row, each in the full output schema."""
    by_kind = {kind: concat_columns(cols) for kind, cols in rows.items()}
    by_kind["timing"] = pd.DataFrame({"graph_id": "", **clock.rows()})
    return kind_frames({kind: frame.rename(columns=LAYOUT[kind]) for kind, frame in by_kind.items()}, FUSED_SCHEMA)


def _batch_frames(parsed: list) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Stream-table frames of a batch of parsed graphs, built column by column (a frame
    from a list of row dicts costs several times more)."""
    graphs = pd.DataFrame([{**pg.graph, "source_file": source_file} for pg, source_file in parsed])
    node_rows = list(chain.from_iterable(pg.nodes for pg, _ in parsed))
    edge_rows = list(chain.from_iterable(pg.edges for pg, _ in parsed))
    nodes = pd.DataFrame({c: [n[c] for n in node_rows] for c in NODE_INPUT_COLUMNS})
    edges = pd.DataFrame({c: [e[c] for e in edge_rows] for c in EDGE_INPUT_COLUMNS})
    return graphs, nodes, edges


def _from_texts(limits: Limits, raise_in_graph: str | None) -> Callable[[Iterator[pd.DataFrame]], Iterator]:
    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            yield from _frames(*_batch_rows(batch, limits, raise_in_graph))

    return run


def _batch_rows(batch: pd.DataFrame, limits: Limits, raise_in_graph: str | None) -> tuple[BatchRows, StepClock]:
    """Every row of one Arrow batch of texts. A graph_id seen twice in the batch is not
    computed: each copy gets only its ``graph`` row, and the driver's duplicate check
    (:func:`pipeline.validate.duplicate_id_errors`, over all batches) rejects the id, as
    it does for copies in different batches or files."""
    clock = StepClock()
    t = time.perf_counter()
    parsed, errors = [], []
    for value, source_file, gid, code, message in zip(
        batch["value"], batch["source_file"], batch["graph_id"], batch["error_code"], batch["message"], strict=True
    ):
        if code is not None:  # a file or line that could not be read (read_spec._file_texts)
            errors.append({"graph_id": gid, "error_code": code, "message": message, "source_file": source_file})
            continue
        result = parse_text(value, source_file, limits)
        if isinstance(result, dict):
            errors.append(result)
        else:
            parsed.append((result, source_file))
    counts = Counter(pg.graph["graph_id"] for pg, _ in parsed)
    repeated = [(pg, f) for pg, f in parsed if counts[pg.graph["graph_id"]] > 1]
    parsed = [(pg, f) for pg, f in parsed if counts[pg.graph["graph_id"]] == 1]
    clock.add("parse+validate", t)
    rows = _compute_isolated(parsed, clock, raise_in_graph) if parsed else {}
    for err in errors:
        rows.setdefault("error", []).append({k: [err[k]] for k in ERROR_COLUMNS})
        rows.setdefault("graph", []).append(
            {"source_file": [err["source_file"]], "node_count": [None], "graph_id": [err["graph_id"]]}
        )
    for pg, source_file in repeated:
        rows.setdefault("graph", []).append(
            {"source_file": [source_file], "node_count": [len(pg.nodes)], "graph_id": [pg.graph["graph_id"]]}
        )
    return rows, clock


def _compute_isolated(parsed: list, clock: StepClock, raise_in_graph: str | None) -> BatchRows:
    """:func:`compute_batch` over the batch; should its batch-wide part raise (a bug), each
    graph again on its own, so the one that raises gets an INTERNAL_ERROR row with its
    traceback and the others of the batch are still written. (compute_batch itself turns
    an exception inside one graph's steps into that graph's INTERNAL_ERROR row.)"""
    try:
        return compute_batch(*_batch_frames(parsed), clock, raise_in_graph=raise_in_graph)
    except Exception:
        pass
    out: BatchRows = {}
    for pg, source_file in parsed:
        try:
            rows = compute_batch(*_batch_frames([(pg, source_file)]), clock, raise_in_graph=raise_in_graph)
        except Exception:
            gid = pg.graph["graph_id"]
            rows = {
                "graph": [{"source_file": [source_file], "node_count": [len(pg.nodes)], "graph_id": [gid]}],
                "error": [
                    {
                        "graph_id": [gid],
                        "error_code": ["INTERNAL_ERROR"],
                        "message": [internal_message()],
                        "source_file": [source_file],
                    }
                ],
            }
        for kind, parts in rows.items():
            out.setdefault(kind, []).extend(parts)
    return out


def rows_from_texts(texts: DataFrame, limits: Limits | None = None, raise_in_graph: str | None = None) -> DataFrame:
    """All rows from :data:`read_spec.TEXT_SCHEMA` rows (:func:`read_spec.read_texts`).

    ``raise_in_graph`` is a test hook (setting ``testing.raise_in_graph``, never in
    conf/pipeline.json): the per-graph code raises a RuntimeError for the graph of that id,
    to show that an unexpected exception costs that graph only (tests/test_bad_input.py)."""
    return texts.mapInPandas(_from_texts(limits or Limits.from_settings(), raise_in_graph), FUSED_SCHEMA)


def rows_from_tables(tables: StreamTables, buckets: int) -> DataFrame:
    """All rows from ingested stream tables: graphs are grouped into buckets, each bucket one
    :func:`compute_batch` call. Errors recorded at ingest are passed through."""
    graph_cols = [c for c in GRAPH_COLUMNS if c != "graph_id"]
    left = tables.nodes.join(tables.graphs, "graph_id")
    node_cols = list(NODE_COLUMNS)

    def run(nodes: pd.DataFrame, edges: pd.DataFrame) -> pd.DataFrame:
        clock = StepClock()
        graphs = nodes[["graph_id", *graph_cols]].drop_duplicates("graph_id").reset_index(drop=True)
        rows = compute_batch(graphs, nodes[node_cols], edges, clock) if len(graphs) else {}
        return pd.concat(_frames(rows, clock), ignore_index=True)

    computed = cogroup_buckets(left, tables.edges, run, FUSED_SCHEMA, buckets)

    def passed(kind: str, columns: list[str]) -> DataFrame:
        return tables.errors.select(
            F.lit(kind).alias("kind"), "graph_id", *[F.col(c).alias(LAYOUT[kind][c]) for c in columns]
        )

    return computed.unionByName(
        passed("error", KIND_COLUMNS["error"]).unionByName(passed("graph", ["source_file"]), allowMissingColumns=True),
        allowMissingColumns=True,
    )


def vertex_rows(rows: DataFrame) -> DataFrame:
    """The ``job_vertices`` table from the rows of kind ``vertex``."""
    split = F.split(F.col("operator_ids_text"), ",")
    user_split = F.split(F.col("user_operator_ids_text"), ",")
    return (
        kind_rows(rows, "vertex")
        .withColumn("operator_ids", split)
        .withColumn("user_operator_ids", F.transform(user_split, lambda x: F.when(x != "", x)))
        .select(*VERTEX_COLUMNS)
    )
