"""The input of the chaining rules by pandas merges: each edge joined with both end nodes and
its graph. It was the staged executor's formulation; :func:`udfs.compute.batch.edge_rule_frame`
gets the same columns by index arithmetic over the batch, and tests/test_graph_batch.py
checks the two agree edge for edge."""

from __future__ import annotations

import pandas as pd

from udfs.flink.chainability import NODE_RULE_ATTRS


def edge_rule_rows(nodes: pd.DataFrame, edges: pd.DataFrame, graphs: pd.DataFrame) -> pd.DataFrame:
    """Edges joined with both end nodes and their graph: the input of the rule UDF."""
    node_cols = ["graph_id", "node_id", *NODE_RULE_ATTRS]
    nd = nodes[node_cols]
    up = nd.add_prefix("up_").rename(columns={"up_graph_id": "graph_id", "up_node_id": "source"})
    down = nd.add_prefix("down_").rename(columns={"down_graph_id": "graph_id", "down_node_id": "target"})
    df = edges.merge(up, on=["graph_id", "source"]).merge(down, on=["graph_id", "target"])
    df["down_in_degree"] = df.groupby(["graph_id", "target"])["edge_idx"].transform("size")
    df["same_type_in_edges"] = df.groupby(["graph_id", "target", "type_number"])["edge_idx"].transform("size")
    g = graphs[
        ["graph_id", "flink_version", "chaining_enabled", "chain_operators_with_different_max_parallelism", "dynamic"]
    ]
    g = g.rename(columns={"chain_operators_with_different_max_parallelism": "chain_different_max_parallelism"})
    return df.merge(g, on="graph_id").sort_values(["graph_id", "edge_idx"]).reset_index(drop=True)
