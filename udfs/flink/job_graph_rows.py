"""The JobGraph's rows (operators, vertices, job edges, chain edges) of a whole batch of
walked graphs, built once over the batch's columns.

The ``createChain`` walk (:mod:`udfs.flink.chain_walk`) is per graph and per node in Python;
everything after it is index arithmetic: each graph's walk, in its own node and edge
positions, is shifted to the batch's (nodes sorted by (graph, node id), edges by (graph,
edge_idx), so a graph's positions are one offset away) and the rows of every graph are
gathered in one numpy pass per column. Built per graph, the same rows would cost as much
again as the walk: a few dozen small arrays per graph of a hundred nodes (docs/performance.md).

Flink's rejections after ``createJobGraph`` (:func:`udfs.flink.job_graph.flink_rejection`) are
asked only of the graphs they can concern: dynamic graphs and graphs with a HYBRID job edge.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np
import pandas as pd

from udfs.flink.chain_walk import ChainWalk, distribution_pattern
from udfs.flink.graph_arrays import Columns, GraphArrays, ranges
from udfs.flink.job_graph import (
    HYBRID_EXCHANGE_MODES,
    dynamic_vertex_parallelism,
    effective_max_parallelism,
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

    def graph(self, code: int) -> GraphArrays:
        """The graph of code ``code``, its slices of the batch's columns (views, not copies)."""
        a, b, c, d = self.node_start[code], self.node_end[code], self.edge_start[code], self.edge_end[code]
        return GraphArrays.from_columns(
            {k: v[a:b] for k, v in self.ncols.items()}, {k: v[c:d] for k, v in self.ecols.items()}
        )


def _span(first: np.ndarray, counts: np.ndarray, k: int) -> slice:
    """The rows of the ``k``-th walked graph in a kind whose graphs have ``counts`` rows each,
    starting at ``first``."""
    return slice(int(first[k]), int(first[k] + counts[k]))


def _flat(lists: list[list], dtype: type, count: int) -> np.ndarray:
    return np.fromiter(chain.from_iterable(lists), dtype=dtype, count=count)


def _joined(ids: np.ndarray, sizes: np.ndarray) -> list[str]:
    """Consecutive runs of ``sizes`` ids, each comma-joined: a vertex's operator-ID lists
    travel as text (an id is hex; "" stands for a null user id) because Arrow converts a
    list column element by element in Python, a large part of the cost of handing the rows
    to Spark (docs/performance.md). Spark splits them again (:mod:`pipeline.compute.row_codec`)."""
    items = ids.tolist()
    ends = np.cumsum(sizes).tolist()
    starts = [0, *ends[:-1]]
    return [",".join(items[s:e]) for s, e in zip(starts, ends, strict=True)]


@dataclass(frozen=True)
class WalkedBatch:
    """The walked graphs of a batch (the ``k``-th in ``walked`` order) and where their rows of
    each kind go: rows are laid out graph after graph, each graph's in its walk's order."""

    codes: np.ndarray  # the k-th walked graph's graph code
    walks: list[ChainWalk]
    dynamic: list[int]  # the k of each dynamic graph (:func:`udfs.flink.job_graph.is_dynamic`)
    graph_ids: np.ndarray  # per graph code
    versions: np.ndarray  # flink_version per graph code
    node_ids: np.ndarray  # per batch node position
    operator_ids: np.ndarray  # per batch node position
    first_node: np.ndarray  # the k-th walked graph's first batch node position
    first_edge: np.ndarray  # and first batch edge position
    n_k: np.ndarray  # operators (nodes) of the k-th walked graph
    v_k: np.ndarray  # its vertices
    e_k: np.ndarray  # its job edges

    @staticmethod
    def of(records: list[dict], layout: BatchLayout, walked: list[WalkedGraph]) -> WalkedBatch:
        codes = np.array([w.code for w in walked], dtype=np.int64)
        walks = [w.walk for w in walked]
        first_node = layout.node_start[codes]
        return WalkedBatch(
            codes=codes,
            walks=walks,
            dynamic=[k for k, w in enumerate(walked) if is_dynamic(records[w.code])],
            graph_ids=np.array([r["graph_id"] for r in records], dtype=object),
            versions=np.array([r["flink_version"] for r in records], dtype=object),
            node_ids=np.asarray(layout.ncols["node_id"], dtype=np.int64),
            operator_ids=np.asarray(layout.ncols["operator_id"], dtype=object),
            first_node=first_node,
            first_edge=layout.edge_start[codes],
            n_k=layout.node_end[codes] - first_node,
            v_k=np.array([len(w.vertex_heads) for w in walks], dtype=np.int64),
            e_k=np.array([len(w.job_edges) for w in walks], dtype=np.int64),
        )

    @property
    def v_first(self) -> np.ndarray:
        """The k-th walked graph's first vertex row."""
        return np.cumsum(self.v_k) - self.v_k

    @property
    def e_first(self) -> np.ndarray:
        """The k-th walked graph's first job-edge row."""
        return np.cumsum(self.e_k) - self.e_k


@dataclass(frozen=True)
class Operators:
    """Every node of every walked graph, graph after graph, as batch node positions."""

    nodes: np.ndarray
    vertex_of: np.ndarray  # the head of each one's vertex
    in_vertex: np.ndarray  # whether it is one of its vertex's operator IDs


@dataclass(frozen=True)
class Vertices:
    """Every JobVertex of every walked graph, in each graph's JobGraph order."""

    heads: np.ndarray  # batch node positions
    sizes: np.ndarray  # operators of each
    members: np.ndarray  # their operators (post-order), vertex after vertex


@dataclass(frozen=True)
class JobEdges:
    """Every job edge of every walked graph, in each graph's connection order."""

    src_v: np.ndarray  # the source vertex's head (batch node position)
    dst_v: np.ndarray  # the target vertex's head
    eidx: np.ndarray  # the stream edge (batch edge position)
    input_index: np.ndarray
    partitioners: np.ndarray  # as createJobGraph leaves them (:func:`job_edge_partitioners`)


def job_graph_rows(
    records: list[dict], layout: BatchLayout, walked: list[WalkedGraph]
) -> tuple[dict[str, Columns], dict[int, str]]:
    """The rows by kind (``operator``, ``vertex``, ``job_edge``, ``chain_edge``, each with
    graph_id) of the walked graphs Flink accepts, in batch order, and the rejection message
    of each graph code Flink rejects.

    The walks' node and edge positions are shifted to the batch's (:func:`batch_operators`,
    :func:`batch_vertices`, :func:`batch_job_edges`), the dynamic graphs' vertex parallelism is set
    (:func:`vertex_parallelism`), each kind's rows are gathered (:func:`operator_rows`,
    :func:`vertex_rows`, :func:`job_edge_rows`, :func:`chain_edge_rows`), then Flink's
    rejections are asked and the rejected graphs' rows dropped."""
    batch = WalkedBatch.of(records, layout, walked)
    ops, verts, edges = batch_operators(batch), batch_vertices(batch), batch_job_edges(batch, layout)
    parallelism = vertex_parallelism(records, batch, layout, ops, verts, edges)
    rows = {
        "operator": operator_rows(batch, layout, ops),
        "vertex": vertex_rows(batch, layout, verts, *parallelism),
        "job_edge": job_edge_rows(batch, layout, edges),
        "chain_edge": chain_edge_rows(batch, layout, ops),
    }
    rejected = _rejections(records, walked, batch, rows["vertex"][0], rows["job_edge"][0])
    return {kind: _without(cols, codes, rejected) for kind, (cols, codes) in rows.items()}, rejected


def batch_operators(batch: WalkedBatch) -> Operators:
    """The walks' per-node facts, shifted to batch positions."""
    total = int(batch.n_k.sum())
    walks = batch.walks
    vertex_of = _flat([w.vertex_of for w in walks], np.int64, total) + np.repeat(batch.first_node, batch.n_k)
    return Operators(
        nodes=ranges(batch.first_node, batch.n_k),
        vertex_of=vertex_of,
        in_vertex=_flat([w.in_vertex_operator_ids for w in walks], bool, total),
    )


def batch_vertices(batch: WalkedBatch) -> Vertices:
    """The walks' vertex heads and operator lists, shifted to batch positions."""
    walks, v_k = batch.walks, batch.v_k
    heads = _flat([w.vertex_heads for w in walks], np.int64, int(v_k.sum())) + np.repeat(batch.first_node, v_k)
    m_k = np.array([len(w.vertex_members) for w in walks], dtype=np.int64)
    members = _flat([w.vertex_members for w in walks], np.int64, int(m_k.sum())) + np.repeat(batch.first_node, m_k)
    return Vertices(heads=heads, sizes=_flat([w.vertex_sizes for w in walks], np.int64, len(heads)), members=members)


def batch_job_edges(batch: WalkedBatch, layout: BatchLayout) -> JobEdges:
    """The walks' job edges, shifted to batch positions, with createJobGraph's partitioners."""
    e_k = batch.e_k
    je = _flat([chain.from_iterable(w.job_edges) for w in batch.walks], np.int64, 4 * int(e_k.sum())).reshape(-1, 4)
    edge_shift = np.repeat(batch.first_node, e_k)  # a job edge's vertex heads, into batch positions
    eidx = je[:, 2] + np.repeat(batch.first_edge, e_k)
    return JobEdges(
        src_v=je[:, 0] + edge_shift,
        dst_v=je[:, 1] + edge_shift,
        eidx=eidx,
        input_index=je[:, 3],
        partitioners=job_edge_partitioners(np.asarray(layout.ecols["partitioner"], dtype=object)[eidx]),
    )


def vertex_parallelism(
    records: list[dict], batch: WalkedBatch, layout: BatchLayout, ops: Operators, verts: Vertices, edges: JobEdges
) -> tuple[np.ndarray, np.ndarray]:
    """(parallelism, max parallelism) of every vertex: its head's, and for a dynamic graph as
    :func:`udfs.flink.job_graph.dynamic_vertex_parallelism` sets them (asked graph by graph,
    in the graph's own node positions, as its walk gave them)."""
    nc, heads = layout.ncols, verts.heads
    parallelism = np.asarray(nc["parallelism"], dtype=np.int64)[heads]
    max_parallelism = np.asarray(nc["max_parallelism"], dtype=np.int64)[heads]
    if not batch.dynamic:
        return parallelism, max_parallelism
    configured = np.asarray(nc["parallelism_configured"], dtype=object)[ops.nodes]
    n_k, v_k, e_k = batch.n_k, batch.v_k, batch.e_k
    o_first, v_first, e_first = np.cumsum(n_k) - n_k, batch.v_first, batch.e_first
    for k in batch.dynamic:
        os_, vs, es = _span(o_first, n_k, k), _span(v_first, v_k, k), _span(e_first, e_k, k)
        a = batch.first_node[k]
        parallelism[vs], max_parallelism[vs] = dynamic_vertex_parallelism(
            configured[os_],
            ops.vertex_of[os_] - a,
            heads[vs] - a,
            parallelism[vs],
            max_parallelism[vs],
            edges.src_v[es] - a,
            edges.dst_v[es] - a,
            edges.partitioners[es],
            records[batch.codes[k]],
        )
    return parallelism, max_parallelism


def operator_rows(batch: WalkedBatch, layout: BatchLayout, ops: Operators) -> tuple[Columns, np.ndarray]:
    """``operator`` rows: every node of every walked graph; and the graph code of each row."""
    nc, nodes, walks, total = layout.ncols, ops.nodes, batch.walks, len(ops.nodes)
    node_ids, op_ids = batch.node_ids, batch.operator_ids
    code = np.repeat(batch.codes, batch.n_k)
    return {
        "graph_id": batch.graph_ids[code],
        "node_id": node_ids[nodes],
        "name": nc["name"][nodes],
        "uid": nc["uid"][nodes],
        "operator_id": op_ids[nodes],
        "user_operator_id": nc["uid_hash"][nodes],
        "jobvertex_id": op_ids[ops.vertex_of],
        "chain_head_node_id": node_ids[ops.vertex_of],
        "chain_index": _flat([w.chain_index for w in walks], np.int64, total),
        "is_chain_head": _flat([w.is_chain_head for w in walks], bool, total),
        "is_chain_end": _flat([w.is_chain_end for w in walks], bool, total),
        "in_vertex_operator_ids": ops.in_vertex,
        "hash_source": nc["hash_source"][nodes],
        "hash_position": nc["hash_position"][nodes],
        "flink_version": batch.versions[code],
    }, code


def vertex_rows(
    batch: WalkedBatch, layout: BatchLayout, verts: Vertices, parallelism: np.ndarray, max_parallelism: np.ndarray
) -> tuple[Columns, np.ndarray]:
    """``vertex`` rows, in each graph's JobGraph order; and the graph code of each row."""
    heads, op_ids = verts.heads, batch.operator_ids
    user_ids = np.asarray(layout.ncols["uid_hash"], dtype=object)[verts.members]
    user_ids[pd.isna(user_ids)] = ""  # a null user id is an empty item of the text
    code = np.repeat(batch.codes, batch.v_k)
    return {
        "graph_id": batch.graph_ids[code],
        "vertex_order": ranges(np.zeros(len(batch.v_k), dtype=np.int64), batch.v_k),
        "jobvertex_id": op_ids[heads],
        "head_node_id": batch.node_ids[heads],
        "name": np.array(list(chain.from_iterable(w.vertex_names for w in batch.walks)), dtype=object),
        "parallelism": parallelism,
        "max_parallelism": max_parallelism,
        "effective_max_parallelism": effective_max_parallelism(parallelism, max_parallelism),
        "slot_sharing_group": np.asarray(layout.ncols["slot_sharing_group"], dtype=object)[heads],
        "operator_ids_text": np.array(_joined(op_ids[verts.members], verts.sizes), dtype=object),
        "user_operator_ids_text": np.array(_joined(user_ids, verts.sizes), dtype=object),
    }, code


def job_edge_rows(batch: WalkedBatch, layout: BatchLayout, edges: JobEdges) -> tuple[Columns, np.ndarray]:
    """``job_edge`` rows, in each graph's connection order; and the graph code of each row."""
    ec, eidx, op_ids, node_ids = layout.ecols, edges.eidx, batch.operator_ids, batch.node_ids
    code = np.repeat(batch.codes, batch.e_k)
    return {
        "graph_id": batch.graph_ids[code],
        "source_jobvertex_id": op_ids[edges.src_v],
        "target_jobvertex_id": op_ids[edges.dst_v],
        "source_node_id": node_ids[layout.up[eidx]],
        "target_node_id": node_ids[layout.down[eidx]],
        "ship_strategy": edges.partitioners,
        "distribution_pattern": np.array([distribution_pattern(p) for p in edges.partitioners.tolist()], dtype=object),
        "input_index": edges.input_index.copy(),
        "edge_idx": np.asarray(ec["edge_idx"], dtype=np.int64)[eidx],
        "exchange_mode": np.asarray(ec["exchange_mode"], dtype=object)[eidx],
    }, code


def chain_edge_rows(batch: WalkedBatch, layout: BatchLayout, ops: Operators) -> tuple[Columns, np.ndarray]:
    """``chain_edge`` rows: the chainable edges createChain follows, all but those out of a
    FLIP-27 source that runs inside its HEAD_WITH_SOURCES target (Flink enters that chain at
    the target), so each connected component is one chain with its head as the root; and the
    graph code of each row."""
    s_k = layout.edge_end[batch.codes] - batch.first_edge
    edges = ranges(batch.first_edge, s_k)
    in_vertex_at = np.ones(len(batch.node_ids), dtype=bool)
    in_vertex_at[ops.nodes] = ops.in_vertex
    follows = np.asarray(layout.ecols["chainable"], dtype=bool)[edges] & in_vertex_at[layout.up[edges]]
    followed = edges[follows]
    code = np.repeat(batch.codes, s_k)[follows]
    return {
        "graph_id": batch.graph_ids[code],
        "source_node_id": batch.node_ids[layout.up[followed]],
        "target_node_id": batch.node_ids[layout.down[followed]],
    }, code


def _without(rows: Columns, codes: np.ndarray, rejected: dict[int, str]) -> Columns:
    """``rows`` (of graph ``codes``) less those of the ``rejected`` graph codes."""
    if not rejected:
        return rows
    keep = ~np.isin(codes, np.array(list(rejected), dtype=np.int64))
    return {c: v[keep] for c, v in rows.items()}


def _rejections(
    records: list[dict], walked: list[WalkedGraph], batch: WalkedBatch, vertices: Columns, job_edges: Columns
) -> dict[int, str]:
    """What createJobGraph throws, by graph code, asked of the graphs it can concern: those
    with a HYBRID job edge and the dynamic ones."""
    v_first, v_k, e_first, e_k = batch.v_first, batch.v_k, batch.e_first, batch.e_k
    hybrid = np.isin(np.asarray(job_edges["exchange_mode"], dtype=object), HYBRID_EXCHANGE_MODES)
    concerned = set(np.repeat(np.arange(len(walked)), e_k)[hybrid].tolist())
    concerned.update(batch.dynamic)
    out: dict[int, str] = {}
    for k in sorted(concerned):
        vs, es = _span(v_first, v_k, k), _span(e_first, e_k, k)
        problem = flink_rejection(
            records[walked[k].code], {c: v[vs] for c, v in vertices.items()}, {c: v[es] for c, v in job_edges.items()}
        )
        if problem is not None:
            out[walked[k].code] = problem
    return out
