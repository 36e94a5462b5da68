"""Flink's ``createChain`` walk, as one pure function over a graph's arrays.

Which nodes share a chain is settled upstream (connected components over the chainable
edges). What this walk adds is *order*, which Flink defines only procedurally:

- entry points are the non-chained sources and the HEAD_WITH_SOURCES operators that
  FLIP-27 sources chain into, visited by ascending node id;
- from a node, chainable outputs are followed first, then non-chainable ones start new
  chains (``transitiveOutEdges`` collects the non-chainable edges in that order);
- a node is added to its chain's operator list, and a head creates its JobVertex, only
  after its outputs were walked: operator-ID lists and the JobGraph's vertex order are
  post-order;
- job edges are connected vertex by vertex in that order, each vertex's transitive out
  edges in order, and each connection appends one input to its target vertex.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from udfs.flink.graph_arrays import GraphArrays

POINTWISE_PARTITIONERS = frozenset({"FORWARD", "RESCALE", "FORWARD_FOR_CONSECUTIVE_HASH"})


@dataclass
class ChainWalk:
    """One graph's walk as plain lists (node positions are the graph's own): the batch's
    JobGraph rows are built from many graphs' lists at once (:mod:`udfs.flink.job_graph_rows`)."""

    vertex_of: list[int]  # node position -> head node position of its JobVertex
    chain_index: list[int]
    is_chain_head: list[bool]
    is_chain_end: list[bool]
    in_vertex_operator_ids: list[bool]
    vertex_heads: list[int] = field(default_factory=list)  # JobGraph order
    vertex_names: list[str] = field(default_factory=list)  # aligned with vertex_heads
    # every vertex's operators (post-order), vertex after vertex in JobGraph order
    vertex_members: list[int] = field(default_factory=list)
    vertex_sizes: list[int] = field(default_factory=list)  # aligned with vertex_heads
    # (source vertex head, target vertex head, edge position, input index)
    job_edges: list[tuple[int, int, int, int]] = field(default_factory=list)


def chained_source_targets(
    g: GraphArrays, is_source: np.ndarray, chainable_input: np.ndarray, enabled: bool
) -> dict[int, int]:
    """FLIP-27 sources that run as chain-index-0 inputs of a HEAD_WITH_SOURCES operator."""
    if not enabled:
        return {}
    kinds = np.asarray(g.nodes["source_kind"], dtype=object)
    strategies = np.asarray(g.nodes["chaining_strategy"], dtype=object)
    out: dict[int, int] = {}
    for s in np.flatnonzero(is_source).tolist():
        if kinds[s] != "FLIP27" or len(g.out_edges[s]) != 1:
            continue
        e = g.out_edges[s][0]
        t = int(g.dst[e])
        if strategies[t] == "HEAD_WITH_SOURCES" and chainable_input[e]:
            out[s] = t
    return out


def java_hash_order(keys_in_insertion_order: list[int]) -> list[int]:
    """Iteration order of a ``java.util.HashSet<Integer>``/``HashMap`` filled in this order.

    Flink 1.9 starts chains in ``getSourceIDs()`` order, and 1.12-1.17.1 name chained
    sources in the order of a job-global HashMap; both are Java hash orders: buckets
    ascending (``(k ^ (k >>> 16)) & (capacity - 1)``, capacity 16 doubling past a 0.75 load),
    insertion order inside a bucket.
    """
    capacity = 16
    while len(keys_in_insertion_order) > 0.75 * capacity:
        capacity *= 2

    def bucket(k: int) -> int:
        h = k & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return [k for _, _, k in sorted((bucket(k), i, k) for i, k in enumerate(keys_in_insertion_order))]


def walk_chains(
    g: GraphArrays,
    chainable: np.ndarray,
    is_source: np.ndarray,
    chained_sources: dict[int, int],
    entry_order: str = "sorted",
    head_chain_index: int = 1,
    chained_source_names: str = "own_inputs",
    source_id_order: list[int] | None = None,
) -> ChainWalk:
    """``entry_order``: "sorted" (1.12.2+) or "source_hashset" (1.9: raw getSourceIDs order);
    ``head_chain_index``: 1 (1.12+) or 0 (1.9); ``chained_source_names``: "own_inputs"
    (FLINK-32680 fixed) or "all_in_job" (the 1.12-1.17.1 bug: every chain head lists every
    chained source of the job)."""
    n = g.n
    # Plain lists, not numpy arrays, inside the walk: it visits every node once in Python,
    # and a numpy scalar read or write costs several times a list's.
    names = np.asarray(g.nodes["name"], dtype=object).tolist()
    dst = g.dst.tolist()
    chainable_list = np.asarray(chainable, dtype=bool).tolist()
    vertex_of = [-1] * n
    chain_index = [0] * n
    is_chain_head = [False] * n
    is_chain_end = [False] * n
    in_vertex = [True] * n
    vertex_heads: list[int] = []
    vertex_names: dict[int, str] = {}
    vertex_operators: dict[int, list[int]] = {}
    # a node's own name and its chained children: the chained name of a head (Flink's
    # createChainedName) is rendered once from these, because building every member's
    # chained name as a string (as Flink does) copies the chain's tail at each link:
    # quadratic in the chain's length (12 of 28 CPU s for a 40,000-operator chain)
    name_parts: dict[int, tuple[str, list[int]]] = {}
    entry_points = {t for t in chained_sources.values()}
    entry_points.update(s for s in np.flatnonzero(is_source).tolist() if s not in chained_sources)
    built: set[int] = set()
    transitive: dict[int, list[int]] = {}

    source_set_order: list[int] = []
    all_chained: list[int] = []
    if entry_order != "sorted" or (chained_sources and chained_source_names == "all_in_job"):
        ids = g.node_ids
        by_id = {int(ids[i]): i for i in range(n)}
        if source_id_order is not None:  # observed by the exporter: exact
            source_set_order = [by_id[int(k)] for k in source_id_order]
        else:  # assume sources were added in ascending id order
            source_set_order = [by_id[k] for k in java_hash_order([int(ids[s]) for s in np.flatnonzero(is_source)])]
        chained_ids = [int(ids[s]) for s in source_set_order if s in chained_sources]
        all_chained = [by_id[k] for k in java_hash_order(chained_ids)]

    def operator_name(v: int) -> str:
        if not chained_sources:  # no FLIP-27 source chained into a head: its own name
            return names[v]
        if chained_source_names == "all_in_job":
            chained = [names[s] for s in all_chained]
        else:
            inputs = [int(g.src[e]) for e in g.in_edges[v]]
            chained = [names[s] for s in inputs if chained_sources.get(s) == v]
        return f"{names[v]} [{', '.join(chained)}]" if chained else names[v]

    def create_chain(v: int, index: int, start: int) -> list[int]:
        if start in built:
            return []
        outs = g.out_edges[v]
        chain_children = [dst[e] for e in outs if chainable_list[e]]
        trans: list[int] = []
        for child in chain_children:
            trans.extend(create_chain(child, index + 1, start))
        for e in outs:
            if not chainable_list[e]:
                trans.append(e)
                t = dst[e]
                entry_points.add(t)
                create_chain(t, head_chain_index, t)
        name_parts[v] = (operator_name(v) if v in entry_points else names[v], chain_children)
        members = vertex_operators.get(start)
        if members is None:
            members = vertex_operators[start] = []
        members.append(v)
        vertex_of[v] = start
        chain_index[v] = index
        is_chain_end[v] = not chain_children
        if v == start:
            is_chain_head[v] = True
            built.add(start)
            vertex_heads.append(start)
            vertex_names[start] = chained_name(v, name_parts)
            transitive[start] = trans
        return trans

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * n + 1000))
    try:
        if entry_order == "sorted":
            starts = sorted(entry_points)
        else:
            starts = [s for s in source_set_order if s in entry_points]
        for start in starts:
            create_chain(start, head_chain_index, start)
    finally:
        sys.setrecursionlimit(limit)

    for s, t in chained_sources.items():
        vertex_of[s] = t
        chain_index[s] = 0
        in_vertex[s] = False

    walk = ChainWalk(
        vertex_of=vertex_of,
        chain_index=chain_index,
        is_chain_head=is_chain_head,
        is_chain_end=is_chain_end,
        in_vertex_operator_ids=in_vertex,
        vertex_heads=vertex_heads,
        vertex_names=[vertex_names[h] for h in vertex_heads],
        vertex_sizes=[len(vertex_operators[h]) for h in vertex_heads],
    )
    for head in vertex_heads:
        walk.vertex_members.extend(vertex_operators[head])
    inputs_per_vertex: dict[int, int] = {}
    for head in vertex_heads:
        for e in transitive[head]:
            target = vertex_of[dst[e]]
            idx = inputs_per_vertex.get(target, 0)
            inputs_per_vertex[target] = idx + 1
            walk.job_edges.append((head, target, e, idx))
    return walk


def chained_name(head: int, name_parts: dict[int, tuple[str, list[int]]]) -> str:
    """Flink's chained name of a chain: ``own -> child`` for one chained output,
    ``own -> (child1, child2)`` for several, recursively; rendered in one pass (linear in
    the result's length, no recursion)."""
    own, children = name_parts[head]
    if not children:  # a chain of one operator
        return own
    out: list[str] = []
    stack: list[int | str] = [head]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        own, children = name_parts[item]
        out.append(own)
        if len(children) == 1:
            out.append(" -> ")
            stack.append(children[0])
        elif children:
            out.append(" -> (")
            stack.append(")")
            for k in range(len(children) - 1, -1, -1):
                stack.append(children[k])
                if k:
                    stack.append(", ")
    return "".join(out)


@cache  # asked per job edge, of a handful of distinct partitioners
def distribution_pattern(partitioner: str) -> str:
    return "POINTWISE" if partitioner.split("[", 1)[0] in POINTWISE_PARTITIONERS else "ALL_TO_ALL"
