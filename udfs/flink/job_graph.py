"""The per-graph steps after hashing: the createChain walk by the graph's Flink version (on one
graph's numpy arrays, :class:`GraphArrays`), a dynamic graph's vertex parallelism, and Flink's
own rejections of the built JobGraph.

:func:`udfs.compute.batch.compute_batch` walks every hashed graph of a batch;
:mod:`udfs.flink.job_graph_rows` turns the walks into rows for the whole batch at once and asks the
other two steps of the graphs they concern. None of them touches Spark.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from udfs.flink.chain_walk import ChainWalk, chained_source_targets, walk_chains
from udfs.flink.graph_arrays import Columns, GraphArrays
from udfs.flink.profiles import batch_rules, load_profile

HYBRID_EXCHANGE_MODES = ["HYBRID_FULL", "HYBRID_SELECTIVE"]


def walk_graph(g: GraphArrays, graph: dict) -> ChainWalk:
    """createChain order, chained names, operator lists and job edges for one graph, by the
    rules of its Flink version. ``g.nodes`` carries operator_id; ``g.edges`` the final
    ``chainable``/``chainable_input`` flags. (The chains walked here are checked against the
    connected components of the chainable edges on the Spark side,
    :func:`pipeline.compute.chains.walk_disagreements`.)"""
    profile = load_profile(graph["flink_version"])
    is_source = np.asarray(g.nodes["is_source"], dtype=bool)
    chained = chained_source_targets(
        g, is_source, np.asarray(g.edges["chainable_input"], dtype=bool), profile.chained_sources
    )
    return walk_chains(
        g,
        np.asarray(g.edges["chainable"], dtype=bool),
        is_source,
        chained,
        entry_order=profile.entry_order,
        head_chain_index=profile.head_chain_index,
        chained_source_names=profile.chained_source_names,
        source_id_order=_as_list(graph.get("source_id_order")),
    )


def is_dynamic(graph: dict) -> bool:
    """Whether createJobGraph sets this graph's vertex parallelism as a dynamic graph's
    (:func:`dynamic_vertex_parallelism`)."""
    rules = batch_rules(graph["flink_version"])
    return _as_bool(graph.get("dynamic")) and bool(rules.get("dynamic_vertex_parallelism"))


def job_edge_partitioners(partitioners: np.ndarray) -> np.ndarray:
    """The partitioner of each job edge (a stream edge that is not chained), as createJobGraph
    leaves it: ``tryConvertPartitionerForDynamicGraph`` turns a non-chained
    ForwardForUnspecifiedPartitioner into a RescalePartitioner and a non-chained
    ForwardForConsecutiveHashPartitioner into its hash partitioner: ``HASH``, or the table
    runtime's ``HASH[<key fields>]`` that the spec wrote as ``FORWARD_FOR_CONSECUTIVE_HASH[...]``."""
    out = partitioners.copy()
    out[partitioners == "FORWARD_FOR_UNSPECIFIED"] = "RESCALE"
    out[partitioners == "FORWARD_FOR_CONSECUTIVE_HASH"] = "HASH"
    prefix = "FORWARD_FOR_CONSECUTIVE_"
    for i in np.flatnonzero([p.startswith(prefix + "HASH[") for p in partitioners]):
        out[i] = partitioners[i][len(prefix) :]
    return out


def dynamic_vertex_parallelism(
    configured_nodes: np.ndarray,
    vertex_of: np.ndarray,
    heads: np.ndarray,
    parallelism: np.ndarray,
    max_parallelism: np.ndarray,
    src_v: np.ndarray,
    dst_v: np.ndarray,
    partitioners: np.ndarray,
    graph: dict,
) -> tuple[np.ndarray, np.ndarray]:
    """``setVertexParallelismsForDynamicGraphIfNecessary`` (1.17+) for a dynamic graph: the
    vertices' (parallelism, max parallelism), aligned with ``heads``.

    1. A vertex none of whose operators (chained sources included) has a configured
       parallelism gets -1 when automatic parallelism is enabled (the adaptive batch scheduler
       decides it at run time): :func:`unconfigured_vertices`.
    2. Vertices joined by non-chained FORWARD job edges form forward groups (connected
       components of more than one vertex, :func:`forward_groups`); each vertex of a group
       takes the group's parallelism (the one positive parallelism among its vertices, if any)
       and the smallest positive max parallelism among them (:func:`align_forward_groups`).

    A group whose smallest max parallelism is below its parallelism makes Flink throw;
    :func:`flink_rejection` reports that from the returned columns. ``configured_nodes`` is
    the graph's ``parallelism_configured`` column, aligned with ``vertex_of``; ``src_v`` and
    ``dst_v`` are the job edges' vertex heads, aligned with ``partitioners``.
    """
    position = {int(h): i for i, h in enumerate(heads.tolist())}
    par = parallelism.astype(np.int64)
    if _as_bool(graph.get("auto_parallelism_enabled", True)):
        par[unconfigured_vertices(configured_nodes, vertex_of, position, len(heads))] = -1
    forward = partitioners == "FORWARD"
    ends = [(position[a], position[b]) for a, b in zip(src_v[forward].tolist(), dst_v[forward].tolist(), strict=True)]
    return align_forward_groups(par, max_parallelism.astype(np.int64), forward_groups(len(heads), ends))


def unconfigured_vertices(
    configured_nodes: np.ndarray, vertex_of: np.ndarray, position: dict[int, int], count: int
) -> np.ndarray:
    """Per vertex (``position``: vertex head -> its position of ``count``), whether none of its
    operators has a configured parallelism. ``configured_nodes`` (the nodes'
    ``parallelism_configured``) and ``vertex_of`` (each node's vertex head, -1 for none) are
    per node, so a chained source counts for the vertex it runs in."""
    configured_nodes = [v is True or v is np.True_ for v in np.asarray(configured_nodes, dtype=object)]
    configured = np.zeros(count, dtype=bool)
    for node, head in enumerate(vertex_of.tolist()):
        if head >= 0 and configured_nodes[node]:
            configured[position[head]] = True
    return ~configured


def forward_groups(count: int, forward_edges: list[tuple[int, int]]) -> list[list[int]]:
    """The connected components of ``count`` vertices joined by ``forward_edges`` (pairs of
    vertex positions): each a list of positions, ascending, singletons included."""
    parent = list(range(count))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in forward_edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra
    groups: dict[int, list[int]] = {}
    for i in range(count):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def align_forward_groups(
    parallelism: np.ndarray, max_parallelism: np.ndarray, groups: list[list[int]]
) -> tuple[np.ndarray, np.ndarray]:
    """(parallelism, max parallelism) per vertex after each forward group of more than one
    vertex took the group's parallelism (its one positive parallelism, if it has exactly one)
    and its smallest positive max parallelism; vertices of no such group keep theirs."""
    par, maxp = parallelism.copy(), max_parallelism.copy()
    for members in groups:
        if len(members) < 2:
            continue
        decided = {int(par[i]) for i in members if par[i] > 0}
        maxes = [int(maxp[i]) for i in members if maxp[i] > 0]
        if len(decided) == 1:
            par[members] = decided.pop()
        if maxes:
            maxp[members] = min(maxes)
    return par, maxp


def _as_bool(value) -> bool:
    """A flag from a graph row (a Python bool, a numpy bool, or null for "not given")."""
    try:
        if value is None or pd.isna(value):
            return False
    except (TypeError, ValueError):
        pass
    return bool(value)


def _as_list(value) -> list[int] | None:
    if value is None:
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return [int(v) for v in value]


def flink_rejection(graph: dict, vertices: Columns | pd.DataFrame, job_edges: Columns | pd.DataFrame) -> str | None:
    """What ``createJobGraph`` throws for this graph after building it, if anything.

    Both checks look at the *job* edges only (a chained HYBRID edge is no result
    partition): 1.17+ rejects hybrid partitions outside BATCH jobs; 1.16+ rejects them
    when any vertex has a non-default slot sharing group (checked second).
    """
    profile = load_profile(graph["flink_version"])
    if is_dynamic(graph):
        problem = _forward_group_max_parallelism(vertices, job_edges)
        if problem is not None:
            return problem
    hybrid = np.isin(np.asarray(job_edges["exchange_mode"], dtype=object), HYBRID_EXCHANGE_MODES).any()
    if not hybrid:
        return None
    for check in profile.hybrid_checks:
        if check == "batch_only" and graph["job_type"] != "BATCH":
            return (
                "java.lang.IllegalStateException: hybrid shuffle mode only supports batch job, "
                "please set execution.runtime-mode to BATCH"
            )
        if (
            check == "default_slot_sharing_group"
            and (np.asarray(vertices["slot_sharing_group"], dtype=object) != "default").any()
        ):
            return (
                "java.lang.IllegalStateException: hybrid shuffle mode currently does not support "
                "setting non-default slot sharing group."
            )
    return None


def _forward_group_max_parallelism(vertices: Columns | pd.DataFrame, job_edges: Columns | pd.DataFrame) -> str | None:
    """JobVertexForwardGroup's check: a forward group's smallest max parallelism must not be
    below its parallelism. After :func:`dynamic_vertex_parallelism` every vertex of a group
    carries the group's values, so a vertex on a FORWARD job edge shows the breach."""
    forward = np.asarray(job_edges["ship_strategy"], dtype=object) == "FORWARD"
    if not forward.any():
        return None
    ids = set(np.asarray(job_edges["source_jobvertex_id"], dtype=object)[forward].tolist())
    ids |= set(np.asarray(job_edges["target_jobvertex_id"], dtype=object)[forward].tolist())
    vid = np.asarray(vertices["jobvertex_id"], dtype=object)
    par = np.asarray(vertices["parallelism"], dtype=np.int64)
    maxp = np.asarray(vertices["max_parallelism"], dtype=np.int64)
    in_group = np.isin(vid, list(ids))
    if (in_group & (par > 0) & (maxp > 0) & (maxp < par)).any():
        return (
            "java.lang.IllegalStateException: There is a job vertex in the forward group whose maximum "
            "parallelism is smaller than the group's parallelism"
        )
    return None


def default_max_parallelism(parallelism: int) -> int:
    """``KeyGroupRangeAssignment.computeDefaultMaxParallelism``: the max parallelism the scheduler
    gives a vertex whose max parallelism nobody configured,
    ``min(max(roundUpToPowerOfTwo(p + p / 2), 128), 32768)``."""
    p = parallelism + parallelism // 2
    rounded = 1 if p <= 1 else 1 << math.ceil(math.log2(p))
    return min(max(rounded, 128), 32768)


def effective_max_parallelism(parallelism: np.ndarray, max_parallelism: np.ndarray) -> np.ndarray:
    """Each vertex's max parallelism as Flink's web UI and REST API show it once the job runs:
    the configured one, else :func:`default_max_parallelism` of its parallelism; -1 where the
    parallelism itself is left to the scheduler (BATCH without a default parallelism)."""
    return np.fromiter(
        (m if m > 0 else (default_max_parallelism(p) if p >= 1 else -1)
         for p, m in zip(parallelism.tolist(), max_parallelism.tolist(), strict=True)),
        dtype=np.int64,
        count=len(parallelism),
    )  # fmt: skip
