"""One stream graph as plain index arrays, the shape every per-graph step works on.

Flink's StreamGraph keeps, per node, an out-edge list and an in-edge list, both in
edge-creation order. The spec lists edges in that creation order (``edge_idx``), so a
stable sort by ``edge_idx`` rebuilds both lists exactly. Nodes are addressed by their
position in ``node_ids`` (sorted), never by the Flink id, so negative ids (1.x
iterations) need no special case.

Columns are plain numpy arrays, not pandas frames: the steps run once per graph, and on a
graph of a hundred nodes pandas' fixed cost per call would outweigh the work
(docs/performance.md).
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


@dataclass
class BatchGraph:
    """All graphs of a batch as one graph of disjoint parts: nodes sorted by (graph, node id),
    edges by (graph, edge_idx), so each graph is one contiguous slice of both; in- and
    out-edge lists as CSR arrays in creation order.

    This is the shape of the supersteps of :mod:`udfs.flink.hashing`: one step is a few numpy
    operations over the frontier of every graph of the batch at once, where a per-graph loop
    would pay Python's cost per node."""

    code: np.ndarray  # graph code of each node, non-decreasing
    graphs: int  # number of graph codes
    src: np.ndarray  # node index of each edge's source
    dst: np.ndarray  # node index of each edge's target
    in_ptr: np.ndarray  # in-edges of node v: in_eid[in_ptr[v]:in_ptr[v + 1]]
    in_eid: np.ndarray
    out_ptr: np.ndarray
    out_eid: np.ndarray

    @property
    def n(self) -> int:
        return len(self.code)

    @classmethod
    def build(cls, code: np.ndarray, graphs: int, src: np.ndarray, dst: np.ndarray) -> BatchGraph:
        n = len(code)
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        # a stable sort keeps each node's edges in creation (edge_idx) order
        in_eid = np.argsort(dst, kind="stable")
        out_eid = np.argsort(src, kind="stable")
        in_ptr = np.zeros(n + 1, dtype=np.int64)
        out_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(dst, minlength=n), out=in_ptr[1:])
        np.cumsum(np.bincount(src, minlength=n), out=out_ptr[1:])
        return cls(np.asarray(code, dtype=np.int64), graphs, src, dst, in_ptr, in_eid, out_ptr, out_eid)

    def in_edges_of(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """In-edges of ``nodes`` (each node's in creation order, nodes in the given order) and,
        for each, the position in ``nodes`` of the node it belongs to."""
        return _gather(self.in_ptr, self.in_eid, nodes)

    def out_edges_of(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _gather(self.out_ptr, self.out_eid, nodes)


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + k)`` for each start ``s`` and count ``k``: the
    positions of many runs at once (a batch's per-graph slices, a CSR row's entries)."""
    counts = np.asarray(counts, dtype=np.int64)
    first = np.cumsum(counts) - counts  # where each run starts in the output
    return np.repeat(np.asarray(starts, dtype=np.int64) - first, counts) + np.arange(int(counts.sum()))


def _gather(ptr: np.ndarray, eid: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = ptr[nodes]
    lens = ptr[nodes + 1] - starts
    owner = np.repeat(np.arange(len(nodes)), lens)
    return eid[ranges(starts, lens)], owner
