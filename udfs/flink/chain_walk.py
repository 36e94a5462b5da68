"""Flink's ``setChaining`` and its ``createChain`` walk for one graph, as steps over the graph's
arrays (:func:`walk_chains`).

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    """Flink's ``setChaining`` for one graph: the chain entry points (:func:`head_inputs`) in
    their start order (:func:`initial_entry_points`), the ``createChain`` walk from each
    (:func:`create_chains`), the chained sources placed (:func:`place_chained_sources`), and
    the job edges connected (:func:`connect`).

    ``chained_sources``: each FLIP-27 source that runs inside a HEAD_WITH_SOURCES operator, to
    that operator (:func:`chained_source_targets`). ``entry_order``: "sorted" (1.12.2+) or
    "source_hashset" (1.9: raw getSourceIDs order); ``head_chain_index``: 1 (1.12+) or 0
    (1.9); ``chained_source_names``: "own_inputs" (FLINK-32680 fixed) or "all_in_job" (the
    1.12-1.17.1 bug: every chain head lists every chained source of the job);
    ``source_id_order``: getSourceIDs' order (node ids) where the exporter observed it."""
    # Plain lists, not numpy arrays, in the walk: it visits every node once in Python, and a
    # numpy scalar read or write costs several times a list's.
    names = np.asarray(g.nodes["name"], dtype=object).tolist()
    entry_points = head_inputs(is_source, chained_sources)
    source_set: list[int] = []
    if entry_order != "sorted" or (chained_sources and chained_source_names == "all_in_job"):
        source_set = source_set_order(g, is_source, source_id_order)
    starts = initial_entry_points(entry_points, entry_order, source_set)
    naming = chained_sources_naming(g, names, chained_sources, chained_source_names, source_set)
    chains = create_chains(g, chainable, names, starts, entry_points, head_chain_index, naming)
    vertex_of, chain_index, in_vertex = place_chained_sources(chains, chained_sources)
    members: list[int] = []
    for head in chains.vertex_heads:
        members.extend(chains.vertex_operators[head])
    return ChainWalk(
        vertex_of=vertex_of,
        chain_index=chain_index,
        is_chain_head=chains.is_chain_head,
        is_chain_end=chains.is_chain_end,
        in_vertex_operator_ids=in_vertex,
        vertex_heads=chains.vertex_heads,
        vertex_names=chains.vertex_names,
        vertex_members=members,
        vertex_sizes=[len(chains.vertex_operators[h]) for h in chains.vertex_heads],
        job_edges=connect(chains.vertex_heads, chains.transitive_out_edges, vertex_of, g.dst.tolist()),
    )


def head_inputs(is_source: np.ndarray, chained_sources: dict[int, int]) -> set[int]:
    """The chain entry points ``buildChainedInputsAndGetHeadInputs`` returns: every source that
    does not run inside another operator's chain, and every operator chained sources run in."""
    entry_points = set(chained_sources.values())
    entry_points.update(s for s in np.flatnonzero(is_source).tolist() if s not in chained_sources)
    return entry_points


def source_set_order(g: GraphArrays, is_source: np.ndarray, source_id_order: list[int] | None) -> list[int]:
    """The graph's sources (node positions) in ``getSourceIDs()`` order, a HashSet's: as the
    exporter observed it when given (exact), else as if sources were added in ascending id
    order."""
    ids = g.node_ids
    by_id = {int(ids[i]): i for i in range(g.n)}
    if source_id_order is not None:
        return [by_id[int(k)] for k in source_id_order]
    return [by_id[k] for k in java_hash_order([int(ids[s]) for s in np.flatnonzero(is_source)])]


def initial_entry_points(entry_points: set[int], entry_order: str, source_set: list[int]) -> list[int]:
    """The order ``setChaining`` starts chains in: ascending node id ("sorted"), or the
    sources' ``getSourceIDs()`` order (``source_set``, :func:`source_set_order`)."""
    if entry_order == "sorted":
        return sorted(entry_points)
    return [s for s in source_set if s in entry_points]


def chained_sources_naming(
    g: GraphArrays, names: list[str], chained_sources: dict[int, int], chained_source_names: str, source_set: list[int]
) -> Callable[[int], str]:
    """An entry point's own name as ``createChainedName`` takes it (``nameWithChainedSourcesInfo``):
    the operator's name, then in brackets the chained sources it lists, if any. "own_inputs":
    the FLIP-27 sources chained into this operator, in input order; "all_in_job": every chained
    source of the job, in the order of a job-global HashMap filled in ``source_set`` order."""
    if not chained_sources:  # no FLIP-27 source chained into a head: its own name
        return names.__getitem__
    all_chained: list[int] = []
    if chained_source_names == "all_in_job":
        ids = g.node_ids
        by_id = {int(ids[i]): i for i in range(g.n)}
        all_chained = [by_id[k] for k in java_hash_order([int(ids[s]) for s in source_set if s in chained_sources])]

    def with_chained_sources(v: int) -> str:
        if chained_source_names == "all_in_job":
            chained = [names[s] for s in all_chained]
        else:
            inputs = [int(g.src[e]) for e in g.in_edges[v]]
            chained = [names[s] for s in inputs if chained_sources.get(s) == v]
        return f"{names[v]} [{', '.join(chained)}]" if chained else names[v]

    return with_chained_sources


@dataclass(frozen=True)
class Chains:
    """What the ``createChain`` walk leaves (node positions are the graph's own): per node, and
    per chain head in the order the heads' JobVertices were created (``createJobVertex``)."""

    vertex_of: list[int]  # node position -> the head of its chain (-1: not reached)
    chain_index: list[int]
    is_chain_head: list[bool]
    is_chain_end: list[bool]
    vertex_heads: list[int]  # createJobVertex order
    vertex_names: list[str]  # each head's chained name
    vertex_operators: dict[int, list[int]]  # head -> its chain's operators, post-order
    transitive_out_edges: dict[int, list[int]]  # head -> its chain's non-chained out edges, in order


def create_chains(
    g: GraphArrays,
    chainable: np.ndarray,
    names: list[str],
    starts: list[int],
    entry_points: set[int],
    head_chain_index: int,
    entry_point_name: Callable[[int], str],
) -> Chains:
    """Flink's recursive ``createChain`` from each of ``starts`` in turn, in the order the module
    docstring describes; a built chain is not walked again. An entry point's own name is
    ``entry_point_name``'s."""
    n, out_edges, dst = g.n, g.out_edges, g.dst.tolist()
    chainable_list = np.asarray(chainable, dtype=bool).tolist()
    entry_points = set(entry_points)  # the walk adds the targets of non-chainable edges
    vertex_of, chain_index, is_chain_head, is_chain_end = [-1] * n, [0] * n, [False] * n, [False] * n
    head_names: list[str] = []
    operators: dict[int, list[int]] = {}  # head -> its chain's operators, post-order
    transitive: dict[int, list[int]] = {}  # head -> transitive out edges, heads in createJobVertex order
    name_parts: dict[int, tuple[str, list[int]]] = {}  # own name, chained children: for chained_name

    def create_chain(v: int, index: int, start: int) -> list[int]:
        if start in transitive:  # built
            return []
        outs = out_edges[v]
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
        name_parts[v] = (entry_point_name(v) if v in entry_points else names[v], chain_children)
        members = operators.get(start)
        if members is None:
            members = operators[start] = []
        members.append(v)
        vertex_of[v], chain_index[v], is_chain_end[v] = start, index, not chain_children
        if v == start:  # createJobVertex: the JobGraph's next vertex
            is_chain_head[v] = True
            head_names.append(chained_name(v, name_parts))
            transitive[v] = trans
        return trans

    with _recursion_limit(4 * n + 1000):
        for start in starts:
            create_chain(start, head_chain_index, start)
    # unbound: its reference to itself no longer keeps the walk's lists for the GC (docs/performance.md)
    create_chain = None  # type: ignore[assignment]
    heads = list(transitive)
    return Chains(vertex_of, chain_index, is_chain_head, is_chain_end, heads, head_names, operators, transitive)


@contextmanager
def _recursion_limit(at_least: int) -> Iterator[None]:
    """Python's recursion limit raised to ``at_least`` (the walk recurses once per chain link)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, at_least))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def place_chained_sources(chains: Chains, chained_sources: dict[int, int]) -> tuple[list[int], list[int], list[bool]]:
    """(vertex_of, chain_index, in_vertex_operator_ids) per node, with each chained FLIP-27
    source in the vertex of the operator it runs inside, at chain index 0, and not among that
    vertex's operator IDs (``JobVertex.getOperatorIDs``). ``chains`` is not changed."""
    in_vertex = [True] * len(chains.vertex_of)
    if not chained_sources:
        return chains.vertex_of, chains.chain_index, in_vertex
    vertex_of, chain_index = list(chains.vertex_of), list(chains.chain_index)
    for s, t in chained_sources.items():
        vertex_of[s] = t
        chain_index[s] = 0
        in_vertex[s] = False
    return vertex_of, chain_index, in_vertex


def connect(
    vertex_heads: list[int], transitive_out_edges: dict[int, list[int]], vertex_of: list[int], dst: list[int]
) -> list[tuple[int, int, int, int]]:
    """Flink's ``connect`` of each chain's transitive out edges, vertex by vertex in JobVertex
    order: (source vertex head, target vertex head, edge position, input index), each
    connection appending the next input of its target vertex."""
    job_edges: list[tuple[int, int, int, int]] = []
    inputs_per_vertex: dict[int, int] = {}
    for head in vertex_heads:
        for e in transitive_out_edges[head]:
            target = vertex_of[dst[e]]
            idx = inputs_per_vertex.get(target, 0)
            inputs_per_vertex[target] = idx + 1
            job_edges.append((head, target, e, idx))
    return job_edges


def chained_name(head: int, name_parts: dict[int, tuple[str, list[int]]]) -> str:
    """Flink's chained name of a chain (``createChainedName``): ``own -> child`` for one
    chained output, ``own -> (child1, child2)`` for several, recursively.

    Rendered once per head, in one pass from each member's own name and children (linear in
    the result's length, no recursion): building every member's chained name, as Flink does,
    copies the chain's tail at each link, quadratic in the chain's length (docs/chains.md)."""
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
