"""The fused executor: spec text -> every per-graph step -> rows of all output tables, in
ONE Spark stage.

The staged executor (``pipeline.executor=staged``) runs each step of the data flow as its
own Spark stage: read, chainability, hashing, vertices+edges, each a shuffle and a
materialised table. Every step but one is per graph, and a graph is small, so those
stages mostly paid Spark's fixed costs (bench/results/). Here one ``mapInPandas`` over
the input lines parses and checks each graph (:mod:`pipeline.spec_contract`) and runs the
rest on the batch (:func:`udfs.graph_batch.compute_batch`): no shuffle until the
connected components, which need all graphs' chainable edges at once.

Output: one frame of :data:`FUSED_SCHEMA`, ``kind`` telling the row's table:
``operator``/``vertex``/``job_edge`` (the output tables), ``chain_edge`` (the input of
connected components), ``graph`` (one per input graph text: id, file, node count),
``stats`` (traversal statistics), ``error`` and ``timing`` (worker seconds per step and batch).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from itertools import chain

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipeline.job_graph import JOB_GRAPH_SCHEMA, VERTEX_COLUMNS
from pipeline.per_graph import cogroup_buckets, kind_frames
from pipeline.read_spec import parse_text, texts_of
from pipeline.stream_tables import GRAPH_COLUMNS, NODE_COLUMNS, StreamTables
from udfs.graph_batch import EDGE_INPUT_COLUMNS, NODE_INPUT_COLUMNS, BatchRows, StepClock, compute_batch, concat_columns

FUSED_SCHEMA = T.StructType(
    [
        *JOB_GRAPH_SCHEMA.fields,
        T.StructField("operator_ids_text", T.StringType(), True),
        T.StructField("user_operator_ids_text", T.StringType(), True),
        T.StructField("source_file", T.StringType(), True),
        T.StructField("node_count", T.IntegerType(), True),
        T.StructField("bfs_levels", T.IntegerType(), True),
        T.StructField("hash_layers", T.IntegerType(), True),
        T.StructField("frontier_sizes", T.ArrayType(T.IntegerType()), True),
        T.StructField("step", T.StringType(), True),
        T.StructField("worker_seconds", T.DoubleType(), True),
    ]
)
_ERROR_KEYS = ("graph_id", "error_code", "message", "source_file")


def _frames(rows: BatchRows, clock: StepClock) -> list[pd.DataFrame]:
    """One frame per kind of row, each in the full output schema."""
    by_kind = {kind: concat_columns(cols) for kind, cols in rows.items()}
    by_kind["timing"] = pd.DataFrame({"graph_id": "", **clock.rows()})
    return kind_frames(by_kind, FUSED_SCHEMA)


def _batch_frames(parsed: list) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Stream-table frames of a batch of parsed graphs, built column by column (a frame
    from a list of row dicts costs several times more)."""
    graphs = pd.DataFrame([{**pg.graph, "source_file": source_file} for pg, source_file in parsed])
    node_rows = list(chain.from_iterable(pg.nodes for pg, _ in parsed))
    edge_rows = list(chain.from_iterable(pg.edges for pg, _ in parsed))
    nodes = pd.DataFrame({c: [n[c] for n in node_rows] for c in NODE_INPUT_COLUMNS})
    edges = pd.DataFrame({c: [e[c] for e in edge_rows] for c in EDGE_INPUT_COLUMNS})
    return graphs, nodes, edges


def _from_texts(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    for batch in batches:
        clock = StepClock()
        t = time.perf_counter()
        parsed, errors = [], []
        for value, source_file, whole in zip(batch["value"], batch["source_file"], batch["whole_file"], strict=True):
            for text in texts_of(value, bool(whole)):
                result = parse_text(text, source_file)
                if isinstance(result, dict):
                    errors.append(result)
                else:
                    parsed.append((result, source_file))
        graphs, nodes, edges = _batch_frames(parsed) if parsed else (None, None, None)
        clock.add("parse+validate", t)
        rows = compute_batch(graphs, nodes, edges, clock) if parsed else {}
        for err in errors:
            rows.setdefault("error", []).append({k: [err[k]] for k in _ERROR_KEYS})
            rows.setdefault("graph", []).append(
                {"source_file": [err["source_file"]], "node_count": [None], "graph_id": [err["graph_id"]]}
            )
        yield from _frames(rows, clock)


def rows_from_texts(texts: DataFrame) -> DataFrame:
    """All rows from (value, source_file, whole_file) text rows (:func:`read_spec.read_texts`)."""
    return texts.mapInPandas(_from_texts, FUSED_SCHEMA)


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
    passed = tables.errors.select(
        F.lit("error").alias("kind"), "graph_id", "error_code", "message", "source_file"
    ).unionByName(
        tables.errors.select(F.lit("graph").alias("kind"), "graph_id", "source_file"), allowMissingColumns=True
    )
    return computed.unionByName(passed, allowMissingColumns=True)


def vertex_rows(rows: DataFrame) -> DataFrame:
    """The ``job_vertices`` table from the rows of kind ``vertex``."""
    split = F.split(F.col("operator_ids_text"), ",")
    user_split = F.split(F.col("user_operator_ids_text"), ",")
    return (
        rows.where(F.col("kind") == "vertex")
        .withColumn("operator_ids", split)
        .withColumn("user_operator_ids", F.transform(user_split, lambda x: F.when(x != "", x)))
        .select(*VERTEX_COLUMNS)
    )
