"""Flink's ``StreamGraphHasherV2`` queue, popped one node at a time as Flink does.

It was the pipeline's per-graph traversal until issue 12 moved hashing onto supersteps over
a whole batch (:func:`udfs.flink.hashing.traverse`); it stays as the literal statement of the
queue that the batch traversal must reproduce, node for node.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from udfs.flink.graph_arrays import GraphArrays


def queue_positions(
    g: GraphArrays, has_uid: np.ndarray, is_source: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Positions (-1: never hashed), generations and pops per generation of one graph."""
    n = g.n
    position = np.full(n, -1, dtype=np.int64)
    level = np.full(n, -1, dtype=np.int64)
    in_srcs = [[int(g.src[e]) for e in g.in_edges[v]] for v in range(n)]
    out_dsts = [[int(g.dst[e]) for e in g.out_edges[v]] for v in range(n)]
    # node_ids are sorted, so source positions in index order are sources sorted by id.
    queue: deque[tuple[int, int]] = deque((int(s), 0) for s in np.flatnonzero(is_source))
    visited = set(int(s) for s in np.flatnonzero(is_source))
    frontier_sizes: list[int] = []
    hashed = 0
    while queue:
        v, gen = queue.popleft()
        if gen == len(frontier_sizes):
            frontier_sizes.append(0)
        frontier_sizes[gen] += 1
        if has_uid[v] or all(position[p] >= 0 for p in in_srcs[v]):
            position[v] = hashed
            level[v] = gen
            hashed += 1
            for c in out_dsts[v]:
                if c not in visited:
                    visited.add(c)
                    queue.append((c, gen + 1))
        else:
            visited.discard(v)
    return position, level, frontier_sizes
