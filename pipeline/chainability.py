"""Step 4: which edges may chain, per Flink-version profile, for all graphs at once.

The edge rows are joined with both end nodes and their graph, then the rules of
:mod:`udfs.chaining_rules` run vectorised in a ``mapInPandas`` (each row's graph picks
its profile by ``flink_version``). The yielding-after-legacy-source rule is not local;
``yield_sensitive`` marks the edges it may veto, and the hashing step resolves it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from udfs.chaining_rules import EDGE_RULE_INPUT_COLUMNS, NODE_RULE_ATTRS, evaluate_edge_rules
from udfs.spec_contract import EDGE_COLUMNS

FLAG_COLUMNS = ["chainable_input", "chainable_local", "hasher_chainable_local", "yield_sensitive"]
FLAGGED_EDGE_SCHEMA = T.StructType(
    [
        T.StructField("graph_id", T.StringType(), False),
        T.StructField("edge_idx", T.IntegerType(), False),
        *[T.StructField(c, T.BooleanType(), False) for c in FLAG_COLUMNS],
    ]
)


def _rules(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    for batch in batches:
        flags = evaluate_edge_rules(batch)
        yield pd.concat([batch[["graph_id", "edge_idx"]], flags], axis=1)


def edge_rule_input(graphs: DataFrame, nodes: DataFrame, edges: DataFrame) -> DataFrame:
    up = nodes.select(
        "graph_id", F.col("node_id").alias("source"), *[F.col(c).alias(f"up_{c}") for c in NODE_RULE_ATTRS]
    )
    down = nodes.select(
        "graph_id", F.col("node_id").alias("target"), *[F.col(c).alias(f"down_{c}") for c in NODE_RULE_ATTRS]
    )
    g = graphs.select(
        "graph_id",
        "flink_version",
        "chaining_enabled",
        F.col("chain_operators_with_different_max_parallelism").alias("chain_different_max_parallelism"),
        "dynamic",
    )
    by_target = Window.partitionBy("graph_id", "target")
    by_input = Window.partitionBy("graph_id", "target", "type_number")
    return (
        edges.join(up, ["graph_id", "source"])
        .join(down, ["graph_id", "target"])
        .join(g, "graph_id")
        .withColumn("down_in_degree", F.count("*").over(by_target))
        .withColumn("same_type_in_edges", F.count("*").over(by_input))
        .select("graph_id", "edge_idx", *EDGE_RULE_INPUT_COLUMNS)
    )


def flag_edges(graphs: DataFrame, nodes: DataFrame, edges: DataFrame) -> DataFrame:
    """Stream edges with the local rule flags of their graph's Flink version."""
    flags = edge_rule_input(graphs, nodes, edges).mapInPandas(_rules, FLAGGED_EDGE_SCHEMA)
    return edges.select(*EDGE_COLUMNS).join(flags, ["graph_id", "edge_idx"])
