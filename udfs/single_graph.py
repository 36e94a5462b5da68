"""The per-graph steps composed for ONE graph in plain pandas, without Spark.

The pipeline never runs this (its stages run the same steps over DataFrames); it is for
unit tests on hand-built graphs and for the fast development loop of
``scripts/dev_check.py``, where starting Spark would cost more than the work.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from udfs.chaining_rules import evaluate_edge_rules
from udfs.graph_steps import build_job_graph, edge_rule_rows, flink_rejection, hash_graph
from udfs.hash_layers import HashingError
from udfs.spec_contract import parse_graph

EDGE_FRAME_COLUMNS = [
    "graph_id",
    "edge_idx",
    "source",
    "target",
    "partitioner",
    "exchange_mode",
    "type_number",
    "output_tag",
]


def compute_one(obj: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(nodes with operator_id, operators, vertices, job_edges); raises on a rejected graph."""
    pg = parse_graph(obj)
    nodes = pd.DataFrame(pg.nodes)
    edges = pd.DataFrame(pg.edges, columns=EDGE_FRAME_COLUMNS)
    rows = edge_rule_rows(nodes, edges, pd.DataFrame([pg.graph]))
    edges = pd.concat([rows[EDGE_FRAME_COLUMNS], evaluate_edge_rules(rows)], axis=1)
    node_out, edge_out, _ = hash_graph(nodes, edges)
    nodes = nodes.merge(node_out[["node_id", "operator_id"]], on="node_id")
    edges = edges.drop(columns=["chainable_input"]).merge(
        edge_out[["edge_idx", "chainable", "chainable_input"]], on="edge_idx"
    )
    operators, vertices, job_edges = build_job_graph(nodes, edges, pg.graph)
    rejection = flink_rejection(pg.graph, vertices, job_edges)
    if rejection is not None:
        raise HashingError("FLINK_REJECTED", rejection)
    return nodes, operators, vertices, job_edges
