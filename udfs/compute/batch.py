"""Every per-graph step for a batch of graphs, with pandas at the batch level only.

The per-graph stage (:mod:`pipeline.compute.stage`) hands one Arrow batch of graphs -- hundreds
of them -- to :func:`compute_batch`. Work that is the same for every edge (the local
chaining rules of :mod:`udfs.flink.chainability`) runs once over the whole batch, vectorised.
So do the yielding rule and the hasher's supersteps (:mod:`udfs.flink.hashing`), over the
batch as one graph of disjoint parts. Only the ``createChain`` walk (:mod:`udfs.flink.chain_walk`)
runs per graph, on plain numpy arrays (:class:`udfs.flink.graph_arrays.GraphArrays`); the
rows it leads to are built for the whole batch at once (:mod:`udfs.flink.job_graph_rows`).
No pandas object is built per graph: on a graph of a hundred nodes its fixed cost per call
outweighs the work (docs/performance.md).

The rows come back by kind (``operator``, ``vertex``, ``job_edge``, ``chain_edge``,
``stats``, ``graph``, ``error``, ``timing``), each a dict of columns; the caller turns
them into one frame of its output schema.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from itertools import chain

import numpy as np
import pandas as pd

from udfs.errors import internal_error_message
from udfs.flink.chainability import NODE_RULE_ATTRS, evaluate_edge_rules
from udfs.flink.graph_arrays import BatchGraph, Columns
from udfs.flink.hashing import BatchHashes, HashingError, hash_batch
from udfs.flink.job_graph import walk_graph
from udfs.flink.job_graph_rows import BatchLayout, WalkedGraph, job_graph_rows
from udfs.flink.murmur3 import to_hex
from udfs.flink.yielding_rule import apply_yielding_rule
from udfs.spec.contract import NODE_COLUMNS

NODE_INPUT_COLUMNS = tuple(NODE_COLUMNS)
EDGE_INPUT_COLUMNS = ("graph_id", "edge_idx", "source", "target", "partitioner", "exchange_mode", "type_number")

# Seconds per step of the batch inside the Python worker, reported as ``timing`` rows (the
# Spark stage that runs this is one stage, so its wall time alone would not say where the
# time goes). Wall seconds by perf_counter: process_time is a system call here, dear enough
# to distort the steps it times (docs/performance.md). "rows out" is the batch's rows turned
# into frames of the output schema (pipeline/compute/stage.py), the last step in the worker.
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


def sort_batch(index: pd.Index, nodes: pd.DataFrame, edges: pd.DataFrame) -> tuple[BatchLayout, np.ndarray, np.ndarray]:
    """The batch's stream rows as columns, nodes sorted by (graph, node id) and edges by (graph,
    edge_idx), so each graph is one slice of both and an edge finds its end nodes by binary
    search on the node keys; with the graph code of each node and of each edge (``index``:
    graph id -> code)."""
    node_codes = index.get_indexer(nodes["graph_id"])
    node_keys = _keys(node_codes, nodes["node_id"].to_numpy())
    order = np.argsort(node_keys, kind="stable")
    ncols: Columns = {c: nodes[c].to_numpy()[order] for c in NODE_INPUT_COLUMNS}
    node_keys, node_codes = node_keys[order], node_codes[order]
    edge_codes = index.get_indexer(edges["graph_id"])
    eorder = np.lexsort((edges["edge_idx"].to_numpy(), edge_codes))
    ecols: Columns = {c: edges[c].to_numpy()[eorder] for c in EDGE_INPUT_COLUMNS}
    edge_codes = edge_codes[eorder]
    up = np.searchsorted(node_keys, _keys(edge_codes, ecols["source"]))
    down = np.searchsorted(node_keys, _keys(edge_codes, ecols["target"]))
    node_start, node_end = _code_ranges(node_codes, len(index))
    edge_start, edge_end = _code_ranges(edge_codes, len(index))
    return BatchLayout(ncols, ecols, up, down, node_start, node_end, edge_start, edge_end), node_codes, edge_codes


def edge_rule_frame(graphs: pd.DataFrame, layout: BatchLayout, edge_codes: np.ndarray) -> pd.DataFrame:
    """The input of :func:`udfs.flink.chainability.evaluate_edge_rules` -- each edge with its end
    nodes' and its graph's attributes -- by index arithmetic over the batch (the same columns
    as ``tests/oracles/edge_rule_merges.edge_rule_rows``, which gets them by pandas merges)."""
    ncols, ecols, up, down = layout.ncols, layout.ecols, layout.up, layout.down
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
        frame[name] = graphs[col].to_numpy()[edge_codes]
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

    The steps: the rows sorted into per-graph slices (:func:`sort_batch`), the local chaining
    rules (:func:`edge_rule_frame`), the yielding rule and the hashes (:func:`hash_step`), all
    over the whole batch; the createChain walk graph by graph (:func:`walk_graphs`); then the
    JobGraph's rows over the whole batch (:func:`udfs.flink.job_graph_rows.job_graph_rows`).

    An exception inside one graph's steps (a bug) turns into that graph's INTERNAL_ERROR
    row with the traceback; the batch's other graphs are computed as usual. Graph ids must
    be unique in a batch (a node finds its graph by id): callers take repeated ids out
    first and report them as DUPLICATE_GRAPH_ID. ``raise_in_graph`` names a graph whose
    steps raise on purpose (a test hook, see :func:`pipeline.compute.stage.rows_from_texts`);
    ``isolate=False`` lets such an exception propagate instead (one graph's callers)."""
    clock = clock or StepClock()
    t = time.perf_counter()
    graphs = graphs.reset_index(drop=True)
    layout, node_codes, edge_codes = sort_batch(_graph_index(graphs), nodes, edges)
    flags = evaluate_edge_rules(edge_rule_frame(graphs, layout, edge_codes))
    t = clock.add("chainability", t)

    hashed, hash_columns, chainable_columns = hash_step(
        BatchGraph.build(node_codes, len(graphs), layout.up, layout.down), layout.ncols, flags
    )  # the batch graph only for the hashing: not held through the walk
    layout.ncols.update(hash_columns)
    layout.ecols.update(chainable_columns)
    t = clock.add("hashing", t)

    records = graphs.to_dict("records")
    walked, failed = walk_graphs(records, layout, hashed.errors, raise_in_graph, isolate)
    rows, rejected = job_graph_rows(records, layout, walked)
    failed.update((i, ("FLINK_REJECTED", message)) for i, message in rejected.items())
    out: BatchRows = {"graph": [_graph_rows(graphs, layout.node_end - layout.node_start)]}
    if walked:
        out["stats"] = [_stats_rows(graphs, hashed, [w.code for w in walked])]
        for kind, cols in rows.items():
            out[kind] = [cols]
    if failed:
        out["error"] = [_error_rows(graphs, failed)]
    clock.add("vertices+edges", t)
    return out


def _graph_index(graphs: pd.DataFrame) -> pd.Index:
    """Graph id -> graph code (the row's position); the ids must not repeat."""
    index = pd.Index(graphs["graph_id"])
    if not index.is_unique:
        raise ValueError(f"graph ids repeat within one batch: {sorted(index[index.duplicated()].unique())[:5]}")
    return index


def hash_step(bg: BatchGraph, ncols: Columns, flags: pd.DataFrame) -> tuple[BatchHashes, Columns, Columns]:
    """The yielding rule's vetoes, then every hash of the batch (:mod:`udfs.flink.hashing`):
    the hashes, the nodes' hash columns (operator_id, hash_source, hash_position, hash_level)
    and the edges' final chainable flags (chainable, chainable_input)."""
    veto = apply_yielding_rule(
        bg, flags["chainable_local"].to_numpy(bool), flags["yield_sensitive"].to_numpy(bool), ncols["source_kind"]
    )
    hasher_chainable = flags["hasher_chainable_local"].to_numpy(bool) & ~veto
    chainable_columns = {
        "chainable": flags["chainable_local"].to_numpy(bool) & ~veto,
        "chainable_input": flags["chainable_input"].to_numpy(bool) & ~veto,
    }
    is_source = np.asarray(ncols["is_source"], dtype=bool)
    hashed = hash_batch(bg, ncols["node_id"], np.asarray(ncols["uid"], dtype=object), is_source, hasher_chainable)
    hash_columns = {
        "operator_id": np.array(to_hex(hashed.hashes), dtype=object),
        "hash_source": np.where(pd.notna(ncols["uid"]), "uid", "generated").astype(object),
        "hash_position": hashed.traversal.position,
        "hash_level": hashed.traversal.level,
    }
    return hashed, hash_columns, chainable_columns


def walk_graphs(
    records: list[dict],
    layout: BatchLayout,
    errors: dict[int, HashingError],
    raise_in_graph: str | None = None,
    isolate: bool = True,
) -> tuple[list[WalkedGraph], dict[int, tuple[str, str]]]:
    """The createChain walk (:func:`udfs.flink.job_graph.walk_graph`) of each graph the hasher
    did not refuse (``errors``, by graph code), on its slice of the batch: the walked graphs,
    and the error code and message of each graph code that has none (the hasher's refusal,
    or INTERNAL_ERROR with the traceback unless ``isolate`` is false)."""
    walked: list[WalkedGraph] = []
    failed: dict[int, tuple[str, str]] = {}
    for i, graph in enumerate(records):
        try:
            if graph["graph_id"] == raise_in_graph:
                raise RuntimeError(
                    f"testing.raise_in_graph names graph {graph['graph_id']!r}: raising inside its per-graph steps"
                )
            error = errors.get(i)
            if error is not None:
                failed[i] = (error.code, str(error))
                continue
            walked.append(WalkedGraph(i, walk_graph(layout.graph(i), graph)))
        except Exception:
            if not isolate:
                raise
            failed[i] = ("INTERNAL_ERROR", internal_error_message())
    return walked, failed


def _graph_rows(graphs: pd.DataFrame, node_counts: np.ndarray) -> Columns:
    return {
        "graph_id": graphs["graph_id"].to_numpy(dtype=object),
        "source_file": _source_files(graphs),
        "node_count": np.asarray(node_counts, dtype=np.int64),
    }


def _stats_rows(graphs: pd.DataFrame, hashed: BatchHashes, codes: list[int]) -> Columns:
    frontiers = [hashed.traversal.frontier_sizes[i] for i in codes]
    return {
        "graph_id": graphs["graph_id"].to_numpy(dtype=object)[codes],
        "bfs_levels": np.array([len(f) for f in frontiers], dtype=np.int64),
        "hash_layers": np.asarray(hashed.layers, dtype=np.int64)[codes],
        "frontier_sizes": frontiers,
    }


def _error_rows(graphs: pd.DataFrame, failed: dict[int, tuple[str, str]]) -> Columns:
    codes = sorted(failed)
    return {
        "graph_id": graphs["graph_id"].to_numpy(dtype=object)[codes],
        "error_code": [failed[i][0] for i in codes],
        "message": [failed[i][1] for i in codes],
        "source_file": _source_files(graphs)[codes],
    }


def _source_files(graphs: pd.DataFrame) -> np.ndarray:
    if "source_file" in graphs:
        return graphs["source_file"].to_numpy(dtype=object)
    return np.full(len(graphs), None, dtype=object)


def concat_parts(parts: Iterable[Columns]) -> Columns:
    """One column dict from many of the same keys (numpy arrays, or lists)."""
    parts = list(parts)
    out: Columns = {}
    for key in parts[0] if parts else ():
        values = [p[key] for p in parts]
        if all(isinstance(v, np.ndarray) for v in values):
            out[key] = np.concatenate(values)
        else:
            out[key] = list(chain.from_iterable(values))
    return out


def concat_columns(parts: Iterable[Columns]) -> pd.DataFrame:
    """:func:`concat_parts` as a frame."""
    return pd.DataFrame(concat_parts(parts))
