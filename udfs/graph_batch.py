"""Every per-graph step for a batch of graphs, with pandas at the batch level only.

The fused pipeline (:mod:`pipeline.fused`) hands one Arrow batch of graphs -- hundreds
of them -- to :func:`compute_batch`. Work that is the same for every edge (the local
chaining rules of :mod:`udfs.chaining_rules`) runs once over the whole batch, vectorised.
The rest is per graph and runs on plain numpy arrays (:class:`GraphArrays`): the
yielding rule, the hasher's traversal and layer-by-layer hashes
(:mod:`udfs.hash_layers`), and the ``createChain`` walk (:mod:`udfs.chain_builder`).
No pandas object is built per graph: for graphs of a hundred nodes its fixed cost per
call was most of the time (bench/results/profile-*).

The rows come back by kind (``operator``, ``vertex``, ``job_edge``, ``chain_edge``,
``stats``, ``graph``, ``error``, ``timing``), each a dict of columns; the caller turns
them into one frame of its output schema.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable
from itertools import chain

import numpy as np
import pandas as pd

from udfs.chaining_rules import NODE_RULE_ATTRS, evaluate_edge_rules
from udfs.graph_arrays import BatchGraph, Columns, GraphArrays
from udfs.graph_steps import flink_rejection, job_graph_arrays
from udfs.hash_layers import BatchHashes, hash_batch
from udfs.murmur3 import to_hex
from udfs.spec_contract import NODE_COLUMNS
from udfs.yielding_rule import apply_yielding_rule

NODE_INPUT_COLUMNS = tuple(NODE_COLUMNS)
EDGE_INPUT_COLUMNS = ("graph_id", "edge_idx", "source", "target", "partitioner", "exchange_mode", "type_number")

# Seconds per step of the batch inside the Python worker, reported as ``timing`` rows (the
# Spark stage that runs this is one stage, so its wall time alone would not say where the
# time goes). perf_counter, not process_time: the latter is a system call here, and at two
# calls per graph it cost more than some of the steps it timed. "rows out" is the batch's rows
# turned into frames of the output schema (pipeline/fused.py), the last step in the worker.
STEPS = ("parse+validate", "chainability", "hashing", "vertices+edges", "rows out")
BatchRows = dict[str, list[Columns]]


class StepClock:
    """Worker seconds spent per named step, summed over calls."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(STEPS, 0.0)

    def add(self, step: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[step] += now - since
        return now

    def rows(self) -> Columns:
        return {
            "step": np.array(list(self.seconds), dtype=object),
            "worker_seconds": np.array(list(self.seconds.values())),
        }


_ID_OFFSET = 2**31  # node ids are Java ints; shifted, they fit the low 32 bits of a key


def _keys(codes: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """(graph code, Java int id) -> one sortable int64 key."""
    return (codes.astype(np.int64) << 32) | (ids.astype(np.int64) + _ID_OFFSET)


def _code_ranges(codes: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of each graph code's run in an array sorted by code."""
    bounds = np.searchsorted(codes, np.arange(count + 1))
    return bounds[:-1], bounds[1:]


def edge_rule_frame(
    graphs: pd.DataFrame, ncols: Columns, ecols: Columns, up: np.ndarray, down: np.ndarray
) -> pd.DataFrame:
    """The input of :func:`udfs.chaining_rules.evaluate_edge_rules` -- each edge with its end
    nodes' and its graph's attributes -- by index arithmetic over the batch (the same columns
    as ``tests/oracles/edge_rule_merges.edge_rule_rows``, which gets them by pandas merges)."""
    codes = ecols["_code"]
    frame = {"partitioner": ecols["partitioner"], "exchange_mode": ecols["exchange_mode"]}
    frame["down_in_degree"] = np.bincount(down, minlength=len(ncols["node_id"]))[down]
    per_input = (down.astype(np.int64) << 32) | (ecols["type_number"].astype(np.int64) + _ID_OFFSET)
    _, inverse, counts = np.unique(per_input, return_inverse=True, return_counts=True)
    frame["same_type_in_edges"] = counts[inverse]
    for attr in NODE_RULE_ATTRS:
        frame[f"up_{attr}"] = ncols[attr][up]
        frame[f"down_{attr}"] = ncols[attr][down]
    for col, name in (
        ("chaining_enabled", "chaining_enabled"),
        ("chain_operators_with_different_max_parallelism", "chain_different_max_parallelism"),
        ("dynamic", "dynamic"),
        ("flink_version", "flink_version"),
    ):
        frame[name] = graphs[col].to_numpy()[codes]
    return pd.DataFrame(frame)


def compute_batch(
    graphs: pd.DataFrame,
    nodes: pd.DataFrame,
    edges: pd.DataFrame,
    clock: StepClock | None = None,
    raise_in_graph: str | None = None,
    isolate: bool = True,
) -> BatchRows:
    """All output rows of a batch of contract-checked graphs (``graphs`` one row each,
    with source_file; ``nodes``/``edges`` their stream-table rows, in any order).

    An exception inside one graph's steps (a bug) turns into that graph's INTERNAL_ERROR
    row with the traceback; the batch's other graphs are computed as usual. Graph ids must
    be unique in a batch (a node finds its graph by id): callers take repeated ids out
    first and report them as DUPLICATE_GRAPH_ID. ``raise_in_graph`` names a graph whose
    steps raise on purpose (a test hook, see :func:`pipeline.fused.rows_from_texts`);
    ``isolate=False`` lets such an exception propagate instead (one graph's callers)."""
    clock = clock or StepClock()
    t = time.perf_counter()
    graphs = graphs.reset_index(drop=True)
    index = pd.Index(graphs["graph_id"])
    if not index.is_unique:
        raise ValueError(f"graph ids repeat within one batch: {sorted(index[index.duplicated()].unique())[:5]}")
    # Nodes sorted by (graph, node id), edges by (graph, edge_idx): each graph is one slice
    # of both, and an edge finds its end nodes by binary search on the node keys.
    node_codes = index.get_indexer(nodes["graph_id"])
    node_keys = _keys(node_codes, nodes["node_id"].to_numpy())
    order = np.argsort(node_keys, kind="stable")
    ncols: Columns = {c: nodes[c].to_numpy()[order] for c in NODE_INPUT_COLUMNS}
    node_keys, node_codes = node_keys[order], node_codes[order]
    edge_codes = index.get_indexer(edges["graph_id"])
    eorder = np.lexsort((edges["edge_idx"].to_numpy(), edge_codes))
    ecols: Columns = {c: edges[c].to_numpy()[eorder] for c in EDGE_INPUT_COLUMNS}
    ecols["_code"] = edge_codes[eorder]
    up = np.searchsorted(node_keys, _keys(ecols["_code"], ecols["source"]))
    down = np.searchsorted(node_keys, _keys(ecols["_code"], ecols["target"]))
    flags = evaluate_edge_rules(edge_rule_frame(graphs, ncols, ecols, up, down))
    del ecols["_code"]
    node_start, node_end = _code_ranges(node_codes, len(graphs))
    edge_start, edge_end = _code_ranges(edge_codes[eorder], len(graphs))
    t = clock.add("chainability", t)

    hashed = _hash_step(BatchGraph.build(node_codes, len(graphs), up, down), ncols, ecols, flags)
    t = clock.add("hashing", t)

    out: BatchRows = {}
    for i, graph in enumerate(graphs.to_dict("records")):
        gid = graph["graph_id"]
        a, b, c, d = node_start[i], node_end[i], edge_start[i], edge_end[i]
        n = int(b - a)
        try:
            if gid == raise_in_graph:
                raise RuntimeError(f"testing.raise_in_graph names graph {gid!r}: raising inside its per-graph steps")
            error = hashed.errors.get(i)
            if error is not None:
                rows = {"graph": {"source_file": [graph.get("source_file")], "node_count": [n]}}
                rows["error"] = _error(error.code, str(error), graph.get("source_file"))
            else:
                g = GraphArrays.from_columns(
                    {k: v[a:b] for k, v in ncols.items()}, {k: v[c:d] for k, v in ecols.items()}
                )
                stats = {
                    "bfs_levels": [len(hashed.traversal.frontier_sizes[i])],
                    "hash_layers": [int(hashed.layers[i])],
                    "frontier_sizes": [hashed.traversal.frontier_sizes[i]],
                }
                rows = graph_rows(g, graph, stats)
        except Exception:
            if not isolate:
                raise
            rows = {"graph": {"source_file": [graph.get("source_file")], "node_count": [n]}}
            rows["error"] = _error("INTERNAL_ERROR", _traceback_message(), graph.get("source_file"))
        for kind, cols in rows.items():
            k = len(next(iter(cols.values())))
            cols["graph_id"] = np.full(k, gid, dtype=object)
            out.setdefault(kind, []).append(cols)
    clock.add("vertices+edges", t)
    return out


def _hash_step(bg: BatchGraph, ncols: Columns, ecols: Columns, flags: pd.DataFrame) -> BatchHashes:
    """The yielding rule's vetoes, then every hash of the batch (:mod:`udfs.hash_layers`);
    adds the hash columns to ``ncols`` and the final chainable flags to ``ecols``."""
    veto = apply_yielding_rule(
        bg, flags["chainable_local"].to_numpy(bool), flags["yield_sensitive"].to_numpy(bool), ncols["source_kind"]
    )
    hasher_chainable = flags["hasher_chainable_local"].to_numpy(bool) & ~veto
    ecols["chainable"] = flags["chainable_local"].to_numpy(bool) & ~veto
    ecols["chainable_input"] = flags["chainable_input"].to_numpy(bool) & ~veto
    is_source = np.asarray(ncols["is_source"], dtype=bool)
    hashed = hash_batch(bg, ncols["node_id"], np.asarray(ncols["uid"], dtype=object), is_source, hasher_chainable)
    position = hashed.traversal.position
    ncols["operator_id"] = np.array(to_hex(hashed.hashes), dtype=object)
    has_uid = pd.notna(ncols["uid"])
    ncols["hash_source"] = np.where(has_uid, "uid", "generated").astype(object)
    ncols["hash_position"] = position
    ncols["hash_level"] = hashed.traversal.level
    return hashed


def graph_rows(g: GraphArrays, graph: dict, stats_row: dict) -> dict[str, Columns]:
    """One hashed graph's rows by kind (without graph_id); a graph Flink rejects yields an
    error row."""
    source_file = graph.get("source_file")
    summary = {"source_file": [source_file], "node_count": [g.n]}
    operators, vertices, job_edges = job_graph_arrays(g, graph)
    rejection = flink_rejection(graph, vertices, job_edges)
    if rejection is not None:
        return {"graph": summary, "stats": stats_row, "error": _error("FLINK_REJECTED", rejection, source_file)}
    # Operator-ID lists travel as comma-joined text (an id is hex; "" stands for a null
    # user id): Arrow converts a list column element by element in Python, which was
    # a third of the cost of handing the rows to Spark. Spark splits them again.
    vertices["operator_ids_text"] = [",".join(ids) for ids in vertices.pop("operator_ids")]
    vertices["user_operator_ids_text"] = [",".join(i or "" for i in ids) for ids in vertices.pop("user_operator_ids")]
    operators["hash_source"] = g.nodes["hash_source"]
    operators["hash_position"] = g.nodes["hash_position"]
    operators["flink_version"] = np.full(g.n, graph["flink_version"], dtype=object)
    # The chainable edges createChain follows: all but those out of a FLIP-27 source that
    # runs inside its HEAD_WITH_SOURCES target (Flink enters that chain at the target), so
    # each connected component is one chain with its head as the root.
    chainable = np.asarray(g.edges["chainable"], dtype=bool) & operators["in_vertex_operator_ids"][g.src]
    chain_edges = {"source_node_id": g.node_ids[g.src[chainable]], "target_node_id": g.node_ids[g.dst[chainable]]}
    return {
        "graph": summary,
        "stats": stats_row,
        "operator": operators,
        "vertex": vertices,
        "job_edge": job_edges,
        "chain_edge": chain_edges,
    }


def _traceback_message(limit: int = 4000) -> str:
    """The current exception's traceback as an error message (its last ``limit`` chars)."""
    text = "internal error, please report it with this graph: " + traceback.format_exc()
    return text if len(text) <= limit else "..." + text[-limit:]


def _error(code: str, message: str, source_file: str | None) -> Columns:
    return {"error_code": [code], "message": [message], "source_file": [source_file]}


def concat_columns(parts: Iterable[Columns]) -> pd.DataFrame:
    """One frame from many column dicts of the same keys (numpy arrays or lists)."""
    parts = list(parts)
    if not parts:
        return pd.DataFrame()
    out = {}
    for key in parts[0]:
        values = [p[key] for p in parts]
        if all(isinstance(v, np.ndarray) for v in values):
            out[key] = np.concatenate(values)
        else:
            out[key] = list(chain.from_iterable(values))
    return pd.DataFrame(out)
