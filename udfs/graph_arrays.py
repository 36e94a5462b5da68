"""One stream graph as plain index arrays, the shape every per-graph step works on.

Flink's StreamGraph keeps, per node, an out-edge list and an in-edge list, both in
edge-creation order. The spec lists edges in that creation order (``edge_idx``), so a
stable sort by ``edge_idx`` rebuilds both lists exactly. Nodes are addressed by their
position in ``node_ids`` (sorted), never by the Flink id, so negative ids (1.x
iterations) need no special case.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class GraphArrays:
    node_ids: np.ndarray  # int64, sorted ascending
    nodes: pd.DataFrame  # one row per node, aligned with node_ids
    edges: pd.DataFrame  # one row per edge, in spec (creation) order
    src: np.ndarray  # node position of each edge's source
    dst: np.ndarray  # node position of each edge's target
    out_edges: list[list[int]]  # per node: edge positions, in creation order
    in_edges: list[list[int]]  # per node: edge positions, in creation order

    @property
    def n(self) -> int:
        return len(self.node_ids)

    @classmethod
    def build(cls, nodes: pd.DataFrame, edges: pd.DataFrame) -> GraphArrays:
        nodes = nodes.sort_values("node_id", kind="stable").reset_index(drop=True)
        edges = edges.sort_values("edge_idx", kind="stable").reset_index(drop=True)
        node_ids = nodes["node_id"].to_numpy(dtype=np.int64)
        src = np.searchsorted(node_ids, edges["source"].to_numpy(dtype=np.int64))
        dst = np.searchsorted(node_ids, edges["target"].to_numpy(dtype=np.int64))
        out_edges: list[list[int]] = [[] for _ in range(len(node_ids))]
        in_edges: list[list[int]] = [[] for _ in range(len(node_ids))]
        for e, (s, t) in enumerate(zip(src.tolist(), dst.tolist(), strict=False)):
            out_edges[s].append(e)
            in_edges[t].append(e)
        return cls(node_ids, nodes, edges, src, dst, out_edges, in_edges)
