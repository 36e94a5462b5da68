"""A level-by-level reading of Flink's ``StreamGraphHasherV2`` breadth-first queue.

It was the formulation of the Spark-wide superstep hasher (one Spark step per BFS level),
which left the product in issue 12 (24x slower than hashing inside the per-graph stage).
It stays as an oracle: an independent, plain-Python statement of what
:func:`udfs.flink.hashing.traversal_positions` must compute, and the shape a batch-wide
(vectorised over many graphs) traversal takes.
"""

from __future__ import annotations

import numpy as np

from udfs.flink.graph_arrays import GraphArrays


def levelwise_positions(
    g: GraphArrays, has_uid: np.ndarray, is_source: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Flink's hasher queue read level by level: positions, levels and frontier sizes.

    A node of a level is hashed when it has a uid or all its inputs were hashed before it
    (in an earlier level, or earlier in this one); a node that depends on a failed node of
    its own level fails too and is retried later. Its successors not yet hashed (and not
    later in this level) make the next level, in order of first appearance."""
    ins = [[int(g.src[e]) for e in g.in_edges[v]] for v in range(g.n)]
    outs = [[int(g.dst[e]) for e in g.out_edges[v]] for v in range(g.n)]
    level_of = np.full(g.n, -1, dtype=np.int64)
    position = np.full(g.n, -1, dtype=np.int64)
    frontier = [int(s) for s in np.flatnonzero(is_source)]
    sizes: list[int] = []
    hashed = 0
    while frontier:
        p = {v: i for i, v in enumerate(frontier)}
        ok = {x for x in frontier if has_uid[x] or all(level_of[y] >= 0 or (y in p and p[y] < p[x]) for y in ins[x])}
        while True:  # fail nodes that depend on a failed node of the same level
            bad = {x for x in ok if not has_uid[x] and any(level_of[y] < 0 and y not in ok for y in ins[x])}
            if not bad:
                break
            ok -= bad
        succ = [x for x in frontier if x in ok]
        for x in succ:
            level_of[x] = len(sizes)
            position[x] = hashed
            hashed += 1
        nxt: list[int] = []
        for x in succ:
            for c in outs[x]:
                if level_of[c] < 0 and not (c in p and p[c] > p[x]) and c not in nxt:
                    nxt.append(c)
        sizes.append(len(frontier))
        frontier = nxt
    return position, level_of, sizes
