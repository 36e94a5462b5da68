"""StreamGraphHasherV2, split into the order it visits nodes and the hashes it computes.

Flink walks the graph breadth-first from the sources (sorted by id). A popped node with
no uid whose inputs are not all hashed yet is dropped (and un-visited), to be enqueued
again by a later parent. A generated hash feeds ``hashes.size()`` at the moment the node
is hashed -- its *position* in hashing order -- so the order is the whole difficulty.

The order depends only on the structure, never on hash values, so it is computed first
(:func:`traversal_positions`), breadth-first level by level: every queue generation is one
superstep, which is what the superstep count in the benchmark reports. The hash values
are then a Pregel-style propagation over topological layers (:func:`propagate_hashes`):
a node is computed once all its inputs are, all nodes of a layer at once.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from udfs.graph_arrays import GraphArrays
from udfs.murmur3 import HASH_BYTES, fold_inputs, generated_base_hashes, uid_hashes


class HashingError(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Traversal:
    position: np.ndarray  # hashes.size() when the node was hashed
    level: np.ndarray  # breadth-first generation in which it was hashed
    frontier_sizes: list[int]  # queue entries per generation (pops, incl. dropped ones)


def traversal_positions(g: GraphArrays, has_uid: np.ndarray, is_source: np.ndarray) -> Traversal:
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
    if hashed != n:
        missing = [int(g.node_ids[i]) for i in np.flatnonzero(position < 0)][:10]
        raise HashingError(
            "UNREACHABLE_NODE",
            f"nodes {missing} are never reached from the sources, so Flink's hasher cannot hash them",
        )
    return Traversal(position, level, frontier_sizes)


def topological_layers(g: GraphArrays, has_uid: np.ndarray) -> np.ndarray:
    """Layer of each node in the hash propagation: 0 for uid nodes and sources."""
    n = g.n
    layer = np.zeros(n, dtype=np.int64)
    indeg = np.array([0 if has_uid[v] else len(g.in_edges[v]) for v in range(n)])
    ready = deque(int(v) for v in np.flatnonzero(indeg == 0))
    seen = 0
    while ready:
        v = ready.popleft()
        seen += 1
        for e in g.out_edges[v]:
            c = int(g.dst[e])
            if has_uid[c]:
                continue
            layer[c] = max(layer[c], layer[v] + 1)
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    if seen != n:
        raise HashingError("CYCLE", "the graph has a cycle, so no hashing order exists")
    return layer


def propagate_hashes(
    g: GraphArrays,
    has_uid: np.ndarray,
    uids: list,
    position: np.ndarray,
    hasher_chainable_outs: np.ndarray,
) -> tuple[np.ndarray, int]:
    """All operator hashes, computed layer by layer; returns (hashes, layer count)."""
    n = g.n
    hashes = np.zeros((n, HASH_BYTES), dtype=np.uint8)
    uid_idx = np.flatnonzero(has_uid)
    if len(uid_idx):
        hashes[uid_idx] = uid_hashes([uids[i] for i in uid_idx])
    gen_idx = np.flatnonzero(~has_uid)
    base = np.zeros((n, HASH_BYTES), dtype=np.uint8)
    base[gen_idx] = generated_base_hashes(position[gen_idx], hasher_chainable_outs[gen_idx])
    layer = topological_layers(g, has_uid)
    layers = int(layer.max()) + 1 if n else 0
    # the generated nodes of each layer in ascending index order, grouped once (a scan of
    # all nodes per layer is quadratic in a long chain's length: one layer per link)
    order = np.argsort(layer, kind="stable")
    order = order[~has_uid[order]]
    bounds = np.searchsorted(layer[order], np.arange(layers + 1))
    for lv in range(layers):
        nodes = order[bounds[lv] : bounds[lv + 1]]
        if not len(nodes):
            continue
        degrees = np.array([len(g.in_edges[v]) for v in nodes])
        h = base[nodes]
        for j in range(int(degrees.max(initial=0))):
            sel = np.flatnonzero(degrees > j)
            inputs = hashes[[int(g.src[g.in_edges[nodes[i]][j]]) for i in sel]]
            h[sel] = fold_inputs(h[sel], [inputs])
        hashes[nodes] = h
    return hashes, layers


def check_uid_collisions(hashes: np.ndarray, has_uid: np.ndarray, position: np.ndarray, uids: list) -> None:
    """Flink throws when a uid hash equals any hash computed before it."""
    if not has_uid.any():
        return
    order = np.argsort(position, kind="stable")
    seen: dict[bytes, int] = {}
    for v in order.tolist():
        key = bytes(hashes[v])
        if has_uid[v] and key in seen:
            raise HashingError(
                "DUPLICATE_UID",
                f'Hash collision on user-specified ID "{uids[v]}". Most likely cause is a '
                "non-unique ID. Please check that all IDs are unique.",
            )
        seen.setdefault(key, v)
