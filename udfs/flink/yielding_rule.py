"""The one non-local chaining rule: yielding operators and legacy sources.

Flink (1.10+) refuses to chain a ``YieldingOperatorFactory`` (async I/O) behind a chain
whose head is a legacy ``SourceFunction`` source. It finds that head with
``getHeadOperator``: while the node has exactly one in-edge and that edge
``isChainable`` (this very rule included), step to the edge's source. So the veto on
one edge depends on the vetoes above it, and the walk goes up the chain.
"""

from __future__ import annotations

import numpy as np

from udfs.flink.graph_arrays import BatchGraph


def apply_yielding_rule(
    g: BatchGraph,
    chainable_local: np.ndarray,
    yield_sensitive: np.ndarray,
    source_kind: np.ndarray,
) -> np.ndarray:
    """Per-edge veto: True where the edge's target yields behind a legacy-source chain.

    Only the rare yield-sensitive edges are walked (in Python: the walk is sequential, each
    veto depending on those above it), over the batch's in-edge arrays."""
    veto = np.zeros(len(g.src), dtype=bool)
    if not yield_sensitive.any():
        return veto
    is_legacy = np.asarray(source_kind, dtype=object) == "LEGACY"
    head_legacy: dict[int, bool] = {}

    def legacy_head(node: int) -> bool:
        # Walk up to the first node whose in-edge does not chain, then fill the memo.
        path = []
        cur = node
        while cur not in head_legacy:
            lo, hi = g.in_ptr[cur], g.in_ptr[cur + 1]
            if hi - lo == 1 and chainable_local[g.in_eid[lo]]:
                e = int(g.in_eid[lo])
                up = int(g.src[e])
                if yield_sensitive[e]:
                    # The edge's own veto needs legacy_head(up); resolve that first.
                    up_legacy = legacy_head(up)
                    veto[e] = up_legacy
                    if up_legacy:
                        head_legacy[cur] = bool(is_legacy[cur])
                        break
                path.append(cur)
                cur = up
            else:
                head_legacy[cur] = bool(is_legacy[cur])
                break
        result = head_legacy[cur]
        for p in path:
            head_legacy[p] = result
        return head_legacy[node]

    for e in np.flatnonzero(yield_sensitive):
        veto[e] = legacy_head(int(g.src[e]))
    return veto
