"""The output tables ``operators``, ``job_vertices`` and ``job_edges``: their columns and
Spark types.

Their rows are built per graph by :func:`udfs.graph_steps.job_graph_arrays` (Flink's
``createChain`` order: chain index, names, operator-ID order, vertex order, job-edge input
order) inside the one per-graph stage (:mod:`pipeline.fused`); the chains it walks are
checked against the connected components of the chainable edges (:mod:`pipeline.chains`).
"""

from __future__ import annotations

from pyspark.sql import types as T

JOB_GRAPH_SCHEMA = T.StructType(
    [
        T.StructField("kind", T.StringType(), False),  # operator | vertex | job_edge | error
        T.StructField("graph_id", T.StringType(), False),
        # operator (its name goes in "name", shared with vertex rows)
        T.StructField("node_id", T.IntegerType(), True),
        T.StructField("uid", T.StringType(), True),
        T.StructField("operator_id", T.StringType(), True),
        T.StructField("user_operator_id", T.StringType(), True),
        T.StructField("hash_source", T.StringType(), True),
        T.StructField("hash_position", T.IntegerType(), True),
        T.StructField("flink_version", T.StringType(), True),
        T.StructField("jobvertex_id", T.StringType(), True),
        T.StructField("chain_head_node_id", T.IntegerType(), True),
        T.StructField("chain_index", T.IntegerType(), True),
        T.StructField("is_chain_head", T.BooleanType(), True),
        T.StructField("is_chain_end", T.BooleanType(), True),
        T.StructField("in_vertex_operator_ids", T.BooleanType(), True),
        # vertex
        T.StructField("vertex_order", T.IntegerType(), True),
        T.StructField("head_node_id", T.IntegerType(), True),
        T.StructField("name", T.StringType(), True),
        T.StructField("parallelism", T.IntegerType(), True),
        T.StructField("max_parallelism", T.IntegerType(), True),
        T.StructField("slot_sharing_group", T.StringType(), True),
        T.StructField("operator_ids", T.ArrayType(T.StringType()), True),
        T.StructField("user_operator_ids", T.ArrayType(T.StringType()), True),
        # job edge
        T.StructField("source_jobvertex_id", T.StringType(), True),
        T.StructField("target_jobvertex_id", T.StringType(), True),
        T.StructField("source_node_id", T.IntegerType(), True),
        T.StructField("target_node_id", T.IntegerType(), True),
        T.StructField("ship_strategy", T.StringType(), True),
        T.StructField("distribution_pattern", T.StringType(), True),
        T.StructField("input_index", T.IntegerType(), True),
        T.StructField("edge_idx", T.IntegerType(), True),
        T.StructField("exchange_mode", T.StringType(), True),
        # error
        T.StructField("error_code", T.StringType(), True),
        T.StructField("message", T.StringType(), True),
    ]
)

OPERATOR_COLUMNS = [
    "graph_id",
    "node_id",
    "name",
    "uid",
    "operator_id",
    "user_operator_id",
    "hash_source",
    "jobvertex_id",
    "chain_head_node_id",
    "chain_index",
    "is_chain_head",
    "is_chain_end",
    "in_vertex_operator_ids",
    "hash_position",
    "flink_version",
]

VERTEX_COLUMNS = [
    "graph_id",
    "jobvertex_id",
    "head_node_id",
    "name",
    "parallelism",
    "max_parallelism",
    "slot_sharing_group",
    "operator_ids",
    "user_operator_ids",
    "vertex_order",
]
JOB_EDGE_COLUMNS = [
    "graph_id",
    "source_jobvertex_id",
    "target_jobvertex_id",
    "source_node_id",
    "target_node_id",
    "ship_strategy",
    "distribution_pattern",
    "input_index",
    "edge_idx",
    "exchange_mode",
]
