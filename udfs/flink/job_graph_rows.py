"""The JobGraph's rows (operators, vertices, job edges, chain edges) of a whole batch of
walked graphs, built once over the batch's columns.

The ``createChain`` walk (:mod:`udfs.flink.chain_walk`) is per graph and per node in Python;
everything after it is index arithmetic: each graph's walk, in its own node and edge
positions, is shifted to the batch's (nodes sorted by (graph, node id), edges by (graph,
edge_idx), so a graph's positions are one offset away) and the rows of every graph are
gathered in one numpy pass per column. Built per graph, the same rows cost as much as the
walk itself: a few dozen small arrays per graph of a hundred nodes
(bench/results/20261125-*: vertices+edges was the walk plus as much again of per-graph set-up).

Flink's rejections after ``createJobGraph`` (:func:`udfs.flink.job_graph.flink_rejection`) are
asked only of the graphs they can concern: dynamic graphs and graphs with a HYBRID job edge.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np
import pandas as pd

from udfs.flink.chain_walk import ChainWalk, distribution_pattern
from udfs.flink.graph_arrays import Columns, ranges
from udfs.flink.job_graph import (
    HYBRID_EXCHANGE_MODES,
    dynamic_vertex_parallelism,
    flink_rejection,
    is_dynamic,
    job_edge_partitioners,
)


@dataclass
class WalkedGraph:
    code: int  # the graph's position in the batch
    walk: ChainWalk


@dataclass
class BatchLayout:
    """Where each graph of the batch sits in the batch's node and edge columns."""

    ncols: Columns  # the batch's nodes, with the hash columns
    ecols: Columns  # the batch's edges, with the final chainable flags
    up: np.ndarray  # node position of each edge's source
    down: np.ndarray  # node position of each edge's target
    node_start: np.ndarray  # per graph code
    node_end: np.ndarray
    edge_start: np.ndarray
    edge_end: np.ndarray


def _span(first: np.ndarray, counts: np.ndarray, k: int) -> slice:
    """The rows of the ``k``-th walked graph in a kind whose graphs have ``counts`` rows each,
    starting at ``first``."""
    return slice(int(first[k]), int(first[k] + counts[k]))


def _flat(lists: list[list], dtype: type, count: int) -> np.ndarray:
    return np.fromiter(chain.from_iterable(lists), dtype=dtype, count=count)


def _joined(ids: np.ndarray, sizes: np.ndarray) -> list[str]:
    """Consecutive runs of ``sizes`` ids, each comma-joined: a vertex's operator-ID lists
    travel as text (an id is hex; "" stands for a null user id) because Arrow converts a
    list column element by element in Python, which was a third of the cost of handing the
    rows to Spark. Spark splits them again (:mod:`pipeline.compute.row_codec`)."""
    items = ids.tolist()
    ends = np.cumsum(sizes).tolist()
    starts = [0, *ends[:-1]]
    return [",".join(items[s:e]) for s, e in zip(starts, ends, strict=True)]


def job_graph_rows(
    records: list[dict], layout: BatchLayout, walked: list[WalkedGraph]
) -> tuple[dict[str, Columns], dict[int, str]]:
    """The rows by kind (``operator``, ``vertex``, ``job_edge``, ``chain_edge``, each with
    graph_id) of the walked graphs Flink accepts, in batch order, and the rejection message
    of each graph code Flink rejects."""
    nc, ec = layout.ncols, layout.ecols
    codes = np.array([w.code for w in walked], dtype=np.int64)
    walks = [w.walk for w in walked]
    graph_ids = np.array([r["graph_id"] for r in records], dtype=object)
    versions = np.array([r["flink_version"] for r in records], dtype=object)
    first_node = layout.node_start[codes]
    first_edge = layout.edge_start[codes]

    # operators: every node of every walked graph
    n_k = layout.node_end[codes] - first_node
    nodes = ranges(first_node, n_k)
    total = len(nodes)
    vertex_of = _flat([w.vertex_of for w in walks], np.int64, total) + np.repeat(first_node, n_k)
    op_ids = np.asarray(nc["operator_id"], dtype=object)
    node_ids = np.asarray(nc["node_id"], dtype=np.int64)
    in_vertex = _flat([w.in_vertex_operator_ids for w in walks], bool, total)
    op_code = np.repeat(codes, n_k)
    operators = {
        "graph_id": graph_ids[op_code],
        "node_id": node_ids[nodes],
        "name": nc["name"][nodes],
        "uid": nc["uid"][nodes],
        "operator_id": op_ids[nodes],
        "user_operator_id": nc["uid_hash"][nodes],
        "jobvertex_id": op_ids[vertex_of],
        "chain_head_node_id": node_ids[vertex_of],
        "chain_index": _flat([w.chain_index for w in walks], np.int64, total),
        "is_chain_head": _flat([w.is_chain_head for w in walks], bool, total),
        "is_chain_end": _flat([w.is_chain_end for w in walks], bool, total),
        "in_vertex_operator_ids": in_vertex,
        "hash_source": nc["hash_source"][nodes],
        "hash_position": nc["hash_position"][nodes],
        "flink_version": versions[op_code],
    }

    # vertices, in each graph's JobGraph order
    v_k = np.array([len(w.vertex_heads) for w in walks], dtype=np.int64)
    heads = _flat([w.vertex_heads for w in walks], np.int64, int(v_k.sum())) + np.repeat(first_node, v_k)
    sizes = _flat([w.vertex_sizes for w in walks], np.int64, len(heads))
    m_k = np.array([len(w.vertex_members) for w in walks], dtype=np.int64)
    members = _flat([w.vertex_members for w in walks], np.int64, int(m_k.sum())) + np.repeat(first_node, m_k)
    user_ids = np.asarray(nc["uid_hash"], dtype=object)[members]
    user_ids[pd.isna(user_ids)] = ""  # a null user id is an empty item of the text
    v_first = np.cumsum(v_k) - v_k

    # job edges, in each graph's connection order
    e_k = np.array([len(w.job_edges) for w in walks], dtype=np.int64)
    e_first = np.cumsum(e_k) - e_k
    je = _flat([chain.from_iterable(w.job_edges) for w in walks], np.int64, 4 * int(e_k.sum())).reshape(-1, 4)
    edge_shift = np.repeat(first_node, e_k)  # a job edge's vertex heads, into batch positions
    src_v = je[:, 0] + edge_shift
    dst_v = je[:, 1] + edge_shift
    eidx = je[:, 2] + np.repeat(first_edge, e_k)
    partitioners = job_edge_partitioners(np.asarray(ec["partitioner"], dtype=object)[eidx])

    parallelism = np.asarray(nc["parallelism"], dtype=np.int64)[heads]
    max_parallelism = np.asarray(nc["max_parallelism"], dtype=np.int64)[heads]
    dynamic = [k for k, w in enumerate(walked) if is_dynamic(records[w.code])]
    if dynamic:
        configured = np.asarray(nc["parallelism_configured"], dtype=object)[nodes]
        o_first = np.cumsum(n_k) - n_k
        for k in dynamic:
            os_, vs, es = _span(o_first, n_k, k), _span(v_first, v_k, k), _span(e_first, e_k, k)
            a = first_node[k]  # the graph's own positions, as the walk gave them
            parallelism[vs], max_parallelism[vs] = dynamic_vertex_parallelism(
                configured[os_],
                vertex_of[os_] - a,
                heads[vs] - a,
                parallelism[vs],
                max_parallelism[vs],
                src_v[es] - a,
                dst_v[es] - a,
                partitioners[es],
                records[walked[k].code],
            )
    v_code = np.repeat(codes, v_k)
    vertices = {
        "graph_id": graph_ids[v_code],
        "vertex_order": ranges(np.zeros(len(v_k), dtype=np.int64), v_k),
        "jobvertex_id": op_ids[heads],
        "head_node_id": node_ids[heads],
        "name": np.array(list(chain.from_iterable(w.vertex_names for w in walks)), dtype=object),
        "parallelism": parallelism,
        "max_parallelism": max_parallelism,
        "slot_sharing_group": np.asarray(nc["slot_sharing_group"], dtype=object)[heads],
        "operator_ids_text": np.array(_joined(op_ids[members], sizes), dtype=object),
        "user_operator_ids_text": np.array(_joined(user_ids, sizes), dtype=object),
    }

    je_code = np.repeat(codes, e_k)
    job_edges = {
        "graph_id": graph_ids[je_code],
        "source_jobvertex_id": op_ids[src_v],
        "target_jobvertex_id": op_ids[dst_v],
        "source_node_id": node_ids[layout.up[eidx]],
        "target_node_id": node_ids[layout.down[eidx]],
        "ship_strategy": partitioners,
        "distribution_pattern": np.array([distribution_pattern(p) for p in partitioners.tolist()], dtype=object),
        "input_index": je[:, 3].copy(),
        "edge_idx": np.asarray(ec["edge_idx"], dtype=np.int64)[eidx],
        "exchange_mode": np.asarray(ec["exchange_mode"], dtype=object)[eidx],
    }

    # The chainable edges createChain follows: all but those out of a FLIP-27 source that
    # runs inside its HEAD_WITH_SOURCES target (Flink enters that chain at the target), so
    # each connected component is one chain with its head as the root.
    s_k = layout.edge_end[codes] - first_edge
    edges = ranges(first_edge, s_k)
    in_vertex_at = np.ones(len(node_ids), dtype=bool)
    in_vertex_at[nodes] = in_vertex
    follows = np.asarray(ec["chainable"], dtype=bool)[edges] & in_vertex_at[layout.up[edges]]
    followed = edges[follows]
    ce_code = np.repeat(codes, s_k)[follows]
    chain_edges = {
        "graph_id": graph_ids[ce_code],
        "source_node_id": node_ids[layout.up[followed]],
        "target_node_id": node_ids[layout.down[followed]],
    }

    rejected = _rejections(records, walked, dynamic, vertices, job_edges, v_first, v_k, e_first, e_k)
    rows = {"operator": operators, "vertex": vertices, "job_edge": job_edges, "chain_edge": chain_edges}
    if rejected:
        out = np.array(list(rejected), dtype=np.int64)
        row_codes = {"operator": op_code, "vertex": v_code, "job_edge": je_code, "chain_edge": ce_code}
        for kind, kind_codes in row_codes.items():
            keep = ~np.isin(kind_codes, out)
            rows[kind] = {c: v[keep] for c, v in rows[kind].items()}
    return rows, rejected


def _rejections(
    records: list[dict],
    walked: list[WalkedGraph],
    dynamic: list[int],
    vertices: Columns,
    job_edges: Columns,
    v_first: np.ndarray,
    v_k: np.ndarray,
    e_first: np.ndarray,
    e_k: np.ndarray,
) -> dict[int, str]:
    """What createJobGraph throws, by graph code, asked of the graphs it can concern: those
    with a HYBRID job edge and the ``dynamic`` ones (positions in ``walked``)."""
    hybrid = np.isin(np.asarray(job_edges["exchange_mode"], dtype=object), HYBRID_EXCHANGE_MODES)
    concerned = set(np.repeat(np.arange(len(walked)), e_k)[hybrid].tolist())
    concerned.update(dynamic)
    out: dict[int, str] = {}
    for k in sorted(concerned):
        vs, es = _span(v_first, v_k, k), _span(e_first, e_k, k)
        problem = flink_rejection(
            records[walked[k].code], {c: v[vs] for c, v in vertices.items()}, {c: v[es] for c, v in job_edges.items()}
        )
        if problem is not None:
            out[walked[k].code] = problem
    return out
