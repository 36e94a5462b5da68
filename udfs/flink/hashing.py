"""StreamGraphHasherV2 as supersteps over every graph of a batch at once.

Flink walks each graph breadth-first from its sources (sorted by id). A popped node with no
uid whose inputs are not all hashed yet is dropped (and un-visited), to be enqueued again by
a later parent. A generated hash feeds ``hashes.size()`` at the moment the node is hashed --
its *position* in hashing order -- so the order is the whole difficulty.

The order depends only on the structure, never on hash values, so it is computed first
(:func:`traverse`): one superstep per queue generation, for all graphs of the batch
together (a graph whose queue is empty just has no nodes in the frontier). The hash values
are then a Pregel-style propagation over topological layers (:func:`propagate_hashes`): a
node is computed once all its inputs are, all nodes of a layer -- of every graph -- at once.
Each superstep is a handful of numpy operations over the whole frontier; nothing loops per
graph or per node in Python (docs/performance.md). A per-graph simulation of Flink's queue,
``tests/oracles/flink_queue.py``, checks the traversal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from udfs.errors import CodedError
from udfs.flink.graph_arrays import BatchGraph
from udfs.flink.murmur3 import HASH_BYTES, fold_inputs, generated_base_hashes, uid_hashes


class HashingError(CodedError):
    """A graph Flink's hasher cannot hash (the code names why)."""


@dataclass
class Traversal:
    position: np.ndarray  # hashes.size() when the node was hashed (-1: never hashed)
    level: np.ndarray  # breadth-first generation in which it was hashed
    frontier_sizes: list[list[int]]  # per graph: queue entries per generation (pops, incl. dropped ones)


@dataclass
class BatchHashes:
    hashes: np.ndarray  # (n, 16) uint8, per node
    traversal: Traversal
    layers: np.ndarray  # per graph: number of topological layers of the propagation
    errors: dict[int, HashingError]  # graph code -> why it cannot be hashed


def traverse(bg: BatchGraph, has_uid: np.ndarray, is_source: np.ndarray) -> Traversal:
    """Flink's hasher queue, one generation of every graph's queue per superstep.

    Within a generation a node is hashed when it has a uid or each input was hashed in an
    earlier generation or earlier in this one (a fixpoint: dependencies inside a generation
    only point backwards in queue order). The next generation is the hashed nodes'
    successors in queue and out-edge order, first appearance only, without those hashed and
    those still waiting in this generation's queue behind their parent (Flink's ``visited``
    set: a dropped node leaves it, a queued one is in it)."""
    n = bg.n
    position = np.full(n, -1, dtype=np.int64)
    level = np.full(n, -1, dtype=np.int64)
    hashed = np.zeros(n, dtype=bool)
    count = np.zeros(bg.graphs, dtype=np.int64)  # nodes hashed so far, per graph
    qpos = np.full(n, -1, dtype=np.int64)  # index in this generation's queue, -1 if not in it
    sizes: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    # node indices are sorted by (graph, id): the sources of each graph, sorted by id
    q = np.flatnonzero(is_source)
    gen = 0
    while len(q):
        codes = bg.code[q]  # non-decreasing: every queue is grouped by graph
        qpos[q] = np.arange(len(q))
        e, owner = bg.in_edges_of(q)
        p = bg.src[e]
        before = hashed[p]
        earlier = ~before & (qpos[p] >= 0) & (qpos[p] < owner)
        uid_q = has_uid[q]
        ok = uid_q | (np.bincount(owner[~before], minlength=len(q)) == 0)
        if earlier.any():
            while True:
                satisfied = before | (earlier & ok[qpos[p]])
                again = uid_q | (np.bincount(owner[~satisfied], minlength=len(q)) == 0)
                if np.array_equal(again, ok):
                    break
                ok = again
        done = q[ok]
        dcodes = codes[ok]
        rank = np.arange(len(done)) - np.searchsorted(dcodes, dcodes, side="left")
        position[done] = count[dcodes] + rank
        level[done] = gen
        hashed[done] = True
        np.add.at(count, dcodes, 1)
        e, owner = bg.out_edges_of(done)
        child = bg.dst[e]
        parent_q = np.flatnonzero(ok)[owner]
        keep = ~hashed[child] & ((qpos[child] < 0) | (qpos[child] < parent_q))
        child = child[keep]
        _, first = np.unique(child, return_index=True)
        qpos[q] = -1
        uniq, counts = np.unique(codes, return_counts=True)
        sizes.append((np.full(len(uniq), gen), uniq, counts))
        q = child[np.sort(first)]
        gen += 1
    return Traversal(position, level, _per_graph_lists(sizes, bg.graphs))


def _per_graph_lists(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], graphs: int) -> list[list[int]]:
    """(generation, graph, value) triples -> each graph's values in generation order."""
    if not parts:
        return [[] for _ in range(graphs)]
    codes = np.concatenate([c for _, c, _ in parts])
    values = np.concatenate([v for _, _, v in parts])
    order = np.argsort(codes, kind="stable")  # parts come in generation order
    bounds = np.searchsorted(codes[order], np.arange(graphs + 1))
    values = values[order].tolist()
    return [values[bounds[i] : bounds[i + 1]] for i in range(graphs)]


def topological_layers(bg: BatchGraph, has_uid: np.ndarray) -> np.ndarray:
    """Layer of each node in the hash propagation (Kahn's algorithm, one round per layer):
    0 for uid nodes and sources, else one more than its latest input; -1 on a cycle."""
    indeg = np.diff(bg.in_ptr)
    indeg[has_uid] = 0  # a uid hash needs no input
    layer = np.full(bg.n, -1, dtype=np.int64)
    ready = np.flatnonzero(indeg == 0)
    r = 0
    while len(ready):
        layer[ready] = r
        e, _ = bg.out_edges_of(ready)
        child = bg.dst[e]
        child = child[~has_uid[child]]
        nodes, counts = np.unique(child, return_counts=True)
        indeg[nodes] -= counts
        ready = nodes[indeg[nodes] == 0]
        r += 1
    return layer


def propagate_hashes(
    bg: BatchGraph,
    has_uid: np.ndarray,
    uids: np.ndarray,
    position: np.ndarray,
    hasher_chainable_outs: np.ndarray,
    layer: np.ndarray,
) -> np.ndarray:
    """All operator hashes, layer by layer over the whole batch."""
    hashes = np.zeros((bg.n, HASH_BYTES), dtype=np.uint8)
    uid_idx = np.flatnonzero(has_uid)
    if len(uid_idx):
        hashes[uid_idx] = uid_hashes(uids[uid_idx].tolist())
    gen = np.flatnonzero(~has_uid & (layer >= 0) & (position >= 0))
    base = np.zeros((bg.n, HASH_BYTES), dtype=np.uint8)
    base[gen] = generated_base_hashes(position[gen], hasher_chainable_outs[gen])
    order = gen[np.argsort(layer[gen], kind="stable")]
    layers = int(layer.max()) + 1 if bg.n else 0
    bounds = np.searchsorted(layer[order], np.arange(layers + 1))
    for lv in range(layers):
        nodes = order[bounds[lv] : bounds[lv + 1]]
        if not len(nodes):
            continue
        first = bg.in_ptr[nodes]
        degrees = bg.in_ptr[nodes + 1] - first
        h = base[nodes]
        for j in range(int(degrees.max(initial=0))):
            sel = np.flatnonzero(degrees > j)
            inputs = hashes[bg.src[bg.in_eid[first[sel] + j]]]
            h[sel] = fold_inputs(h[sel], [inputs])
        hashes[nodes] = h
    return hashes


def uid_collisions(
    bg: BatchGraph, hashes: np.ndarray, has_uid: np.ndarray, position: np.ndarray, uids: np.ndarray, skip: np.ndarray
) -> dict[int, HashingError]:
    """Flink throws when a uid hash equals any hash computed before it in the same graph
    (``skip``: graphs not to check, per graph code)."""
    graphs = np.unique(bg.code[has_uid])
    graphs = graphs[~skip[graphs]]
    if not len(graphs):
        return {}
    nodes = np.flatnonzero(np.isin(bg.code, graphs))
    words = np.ascontiguousarray(hashes[nodes]).view(np.uint64)  # (k, 2)
    order = np.lexsort((position[nodes], words[:, 1], words[:, 0], bg.code[nodes]))
    nodes, words = nodes[order], words[order]
    same = np.zeros(len(nodes), dtype=bool)
    same[1:] = (bg.code[nodes[1:]] == bg.code[nodes[:-1]]) & (words[1:] == words[:-1]).all(axis=1)
    bad = nodes[same & has_uid[nodes]]
    out: dict[int, HashingError] = {}
    for v in bad[np.argsort(position[bad], kind="stable")].tolist():
        out.setdefault(
            int(bg.code[v]),
            HashingError(
                "DUPLICATE_UID",
                f'Hash collision on user-specified ID "{uids[v]}". Most likely cause is a '
                "non-unique ID. Please check that all IDs are unique.",
            ),
        )
    return out


def hash_batch(
    bg: BatchGraph,
    node_ids: np.ndarray,
    uids: np.ndarray,
    is_source: np.ndarray,
    hasher_chainable: np.ndarray,
) -> BatchHashes:
    """Every operator hash of the batch, and why a graph cannot be hashed, per graph code:
    a node the traversal never reaches, a cycle, or a uid hash collision (in that order,
    as Flink meets them)."""
    has_uid = np.array([u is not None and u == u for u in uids.tolist()], dtype=bool)
    trav = traverse(bg, has_uid, is_source)
    errors: dict[int, HashingError] = {}
    for c in np.unique(bg.code[trav.position < 0]).tolist():
        missing = node_ids[(bg.code == c) & (trav.position < 0)][:10].tolist()
        errors[c] = HashingError(
            "UNREACHABLE_NODE",
            f"nodes {missing} are never reached from the sources, so Flink's hasher cannot hash them",
        )
    layer = topological_layers(bg, has_uid)
    for c in np.unique(bg.code[layer < 0]).tolist():
        errors.setdefault(c, HashingError("CYCLE", "the graph has a cycle, so no hashing order exists"))
    chainable_outs = np.bincount(bg.src[hasher_chainable], minlength=bg.n)
    hashes = propagate_hashes(bg, has_uid, uids, trav.position, chainable_outs, layer)
    failed = np.zeros(bg.graphs, dtype=bool)
    failed[list(errors)] = True
    for c, err in uid_collisions(bg, hashes, has_uid, trav.position, uids, failed).items():
        errors.setdefault(c, err)
    layers = np.zeros(bg.graphs, dtype=np.int64)
    np.maximum.at(layers, bg.code, layer + 1)
    return BatchHashes(hashes, trav, layers, errors)
