"""One stream graph as plain index arrays, the shape every per-graph step works on.

Flink's StreamGraph keeps, per node, an out-edge list and an in-edge list, both in
edge-creation order. The spec lists edges in that creation order (``edge_idx``), so a
stable sort by ``edge_idx`` rebuilds both lists exactly. Nodes are addressed by their
position in ``node_ids`` (sorted), never by the Flink id, so negative ids (1.x
iterations) need no special case.

Columns are kept as plain numpy arrays, not pandas frames: the steps run once per graph,
and for graphs of a hundred nodes pandas' per-call overhead was most of the cost
(``bench/results/profile-*``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

Columns = dict[str, np.ndarray]


@dataclass
class GraphArrays:
    node_ids: np.ndarray  # int64, sorted ascending
    nodes: Columns  # one entry per node, aligned with node_ids
    edges: Columns  # one entry per edge, in spec (creation) order
    src: np.ndarray  # node position of each edge's source
    dst: np.ndarray  # node position of each edge's target
    out_edges: list[list[int]]  # per node: edge positions, in creation order
    in_edges: list[list[int]]  # per node: edge positions, in creation order

    @property
    def n(self) -> int:
        return len(self.node_ids)

    @classmethod
    def build(cls, nodes: pd.DataFrame, edges: pd.DataFrame) -> GraphArrays:
        return cls.from_columns(
            {c: nodes[c].to_numpy() for c in nodes.columns}, {c: edges[c].to_numpy() for c in edges.columns}
        )

    @classmethod
    def from_columns(cls, nodes: Columns, edges: Columns) -> GraphArrays:
        node_ids = nodes["node_id"].astype(np.int64)
        if len(node_ids) > 1 and (np.diff(node_ids) <= 0).any():
            order = np.argsort(node_ids, kind="stable")
            nodes = {c: v[order] for c, v in nodes.items()}
            node_ids = node_ids[order]
        if "edge_idx" in edges:
            idx = edges["edge_idx"].astype(np.int64)
            if len(idx) > 1 and (np.diff(idx) <= 0).any():
                order = np.argsort(idx, kind="stable")
                edges = {c: v[order] for c, v in edges.items()}
        src = np.searchsorted(node_ids, edges["source"].astype(np.int64))
        dst = np.searchsorted(node_ids, edges["target"].astype(np.int64))
        out_edges: list[list[int]] = [[] for _ in range(len(node_ids))]
        in_edges: list[list[int]] = [[] for _ in range(len(node_ids))]
        for e, (s, t) in enumerate(zip(src.tolist(), dst.tolist(), strict=False)):
            out_edges[s].append(e)
            in_edges[t].append(e)
        return cls(node_ids, nodes, edges, src, dst, out_edges, in_edges)
