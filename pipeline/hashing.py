"""Step 5: StreamGraphHasherV2 for all graphs -- the breadth-first order, then the
layer-by-layer hash propagation (see :mod:`udfs.hash_layers`).

Execution (``conf/pipeline.json`` ``hashing.executor``): ``grouped`` runs the layer
steps of each graph inside one grouped pandas UDF (murmur3 via mmh3 over the layer's
nodes at once). It also resolves the yielding rule, whose outcome both the hasher
(chainable output counts) and the chains need.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipeline.per_graph import RowsByKind, cogroup_per_graph
from udfs.graph_steps import hash_graph
from udfs.hash_layers import HashingError

HASH_RESULT_SCHEMA = T.StructType(
    [
        T.StructField("kind", T.StringType(), False),  # node | edge | stats | error
        T.StructField("graph_id", T.StringType(), False),
        T.StructField("node_id", T.IntegerType(), True),
        T.StructField("operator_id", T.StringType(), True),
        T.StructField("hash_source", T.StringType(), True),
        T.StructField("hash_position", T.IntegerType(), True),
        T.StructField("hash_level", T.IntegerType(), True),
        T.StructField("edge_idx", T.IntegerType(), True),
        T.StructField("chainable", T.BooleanType(), True),
        T.StructField("chainable_input", T.BooleanType(), True),
        T.StructField("bfs_levels", T.IntegerType(), True),
        T.StructField("hash_layers", T.IntegerType(), True),
        T.StructField("frontier_sizes", T.ArrayType(T.IntegerType()), True),
        T.StructField("error_code", T.StringType(), True),
        T.StructField("message", T.StringType(), True),
    ]
)


@dataclass
class HashResult:
    nodes: DataFrame  # graph_id, node_id, operator_id, hash_source, hash_position, hash_level
    edges: DataFrame  # graph_id, edge_idx, chainable, chainable_input
    stats: DataFrame  # graph_id, bfs_levels, hash_layers, frontier_sizes
    errors: DataFrame  # graph_id, error_code, message


def _hash_one_graph(nodes: pd.DataFrame, edges: pd.DataFrame) -> RowsByKind:
    graph_id = nodes["graph_id"].iat[0]
    try:
        node_out, edge_out, stats = hash_graph(nodes, edges)
    except HashingError as e:
        return {"error": pd.DataFrame({"graph_id": [graph_id], "error_code": [e.code], "message": [str(e)]})}
    stat_row = pd.DataFrame(
        [
            {
                "graph_id": graph_id,
                "bfs_levels": stats["bfs_levels"],
                "hash_layers": stats["hash_layers"],
                "frontier_sizes": stats["frontier_sizes"],
            }
        ]
    )
    return {"node": node_out, "edge": edge_out, "stats": stat_row}


def hash_graphs(nodes: DataFrame, flagged_edges: DataFrame, buckets: int = 8) -> HashResult:
    result = cogroup_per_graph(nodes, flagged_edges, _hash_one_graph, HASH_RESULT_SCHEMA, buckets)
    result = result.localCheckpoint(eager=True)
    kind = F.col("kind")
    return HashResult(
        nodes=result.where(kind == "node").select(
            "graph_id", "node_id", "operator_id", "hash_source", "hash_position", "hash_level"
        ),
        edges=result.where(kind == "edge").select("graph_id", "edge_idx", "chainable", "chainable_input"),
        stats=result.where(kind == "stats").select("graph_id", "bfs_levels", "hash_layers", "frontier_sizes"),
        errors=result.where(kind == "error").select("graph_id", "error_code", "message"),
    )
