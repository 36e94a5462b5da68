"""Step 7: JobVertices, chained names, operator-ID lists and job edges.

Membership of each chain comes from the connected components of step 6; the order Flink
gives to everything inside and between chains is procedural (``createChain``), and is
rebuilt per graph in :func:`udfs.graph_steps.build_job_graph` inside a grouped pandas
UDF, which also checks that its chains are exactly those components.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipeline.per_graph import RowsByKind, cogroup_per_graph
from udfs.graph_steps import build_job_graph, flink_rejection

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


@dataclass
class JobGraphParts:
    operators: DataFrame
    vertices: DataFrame
    job_edges: DataFrame
    errors: DataFrame


def _one_graph(nodes: pd.DataFrame, edges: pd.DataFrame) -> RowsByKind:
    graph = {
        "graph_id": nodes["graph_id"].iat[0],
        "flink_version": nodes["flink_version"].iat[0],
        "job_type": nodes["job_type"].iat[0],
        "source_id_order": nodes["source_id_order"].iat[0],
        "dynamic": nodes["dynamic"].iat[0],
        "auto_parallelism_enabled": nodes["auto_parallelism_enabled"].iat[0],
    }
    operators, vertices, job_edges = build_job_graph(nodes, edges, graph)
    rejection = flink_rejection(graph, vertices, job_edges)
    if rejection is not None:
        return {
            "error": pd.DataFrame(
                {"graph_id": [graph["graph_id"]], "error_code": ["FLINK_REJECTED"], "message": [rejection]}
            )
        }
    # build_job_graph emits operators in ascending node_id order
    order = np.argsort(nodes["node_id"].to_numpy(), kind="stable")
    operators["hash_source"] = nodes["hash_source"].to_numpy(object)[order]
    operators["hash_position"] = nodes["hash_position"].to_numpy()[order]
    operators["flink_version"] = graph["flink_version"]
    return {"operator": operators, "vertex": vertices, "job_edge": job_edges}


def build_job_graphs(graphs: DataFrame, nodes: DataFrame, edges: DataFrame, buckets: int = 8) -> JobGraphParts:
    """``nodes`` need operator_id and chain_component; ``edges`` the final chainable flags."""
    g = graphs.select(
        "graph_id", "flink_version", "job_type", "source_id_order", "dynamic", "auto_parallelism_enabled"
    )
    result = cogroup_per_graph(nodes.join(g, "graph_id"), edges, _one_graph, JOB_GRAPH_SCHEMA, buckets)
    result = result.localCheckpoint(eager=True)
    kind = F.col("kind")
    return JobGraphParts(
        operators=result.where(kind == "operator").select(*OPERATOR_COLUMNS),
        vertices=result.where(kind == "vertex").select(*VERTEX_COLUMNS),
        job_edges=result.where(kind == "job_edge").select(*JOB_EDGE_COLUMNS),
        errors=result.where(kind == "error").select("graph_id", "error_code", "message"),
    )
