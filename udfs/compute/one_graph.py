"""One graph through the pipeline's own per-batch computation, without Spark.

:func:`compute_one` is :func:`udfs.compute.batch.compute_batch` on a batch of one graph --
the very code the Spark workers run -- with its rows turned back into frames. It serves unit
tests on hand-built graphs, the restore cases' what-if graphs and the fast development loop
of ``scripts/dev_check.py``, where starting Spark would cost more than the work.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from udfs.compute.batch import EDGE_INPUT_COLUMNS, NODE_INPUT_COLUMNS, compute_batch, concat_columns
from udfs.flink.hashing import HashingError
from udfs.spec.contract import GRAPH_COLUMNS, parse_graph


def compute_one(obj: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(nodes with operator_id, operators, vertices, job_edges) of one spec graph; raises
    :class:`udfs.spec.contract.ContractError` on a contract breach and
    :class:`udfs.flink.hashing.HashingError` (its code the error row's) when Flink would not
    build it."""
    pg = parse_graph(obj)
    graph = {c: pg.graph.get(c) for c in GRAPH_COLUMNS}
    nodes = pd.DataFrame(pg.nodes)
    rows = compute_batch(
        pd.DataFrame([graph]),
        nodes[list(NODE_INPUT_COLUMNS)],
        pd.DataFrame(pg.edges, columns=list(EDGE_INPUT_COLUMNS)),
        isolate=False,
    )
    if "error" in rows:
        error = concat_columns(rows["error"]).iloc[0]
        raise HashingError(error["error_code"], error["message"])
    operators, vertices, job_edges = (concat_columns(rows[k]) for k in ("operator", "vertex", "job_edge"))
    vertices["operator_ids"] = vertices.pop("operator_ids_text").str.split(",")
    vertices["user_operator_ids"] = [
        [i or None for i in text.split(",")] for text in vertices.pop("user_operator_ids_text")
    ]
    nodes = nodes.merge(operators[["node_id", "operator_id"]], on="node_id")
    return nodes, operators, vertices, job_edges
