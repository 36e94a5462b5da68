"""Step 1 for a whole batch: the contract checked over the batch's flattened columns.

:func:`udfs.spec.contract.parse_graph` checks one graph node by node and names the first
breach; per node, building and checking a row dict was most of the parse's cost. Here every
field of every node (and edge) of the batch is one column, the SPEC defaults are applied
column-wise, and each check is one pass over a column; graph-level checks (duplicate ids and
uids, dangling edges, sources, orphans, cycles) run over the whole batch at once.

This path only *accepts*: a graph with anything unusual -- a breach, or something it does
not handle itself (the adaptive-batch partitioners) -- goes to ``parse_graph``, which names
the breach or accepts the graph. So every error message is parse_graph's, and
tests/test_spec_batch.py checks that both paths accept the same graphs with the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from udfs.flink.graph_arrays import BatchGraph, ranges
from udfs.spec.contract import (
    _EXCHANGE_SET,
    _PARTITIONER_SET,
    _SOURCE_KIND_SET,
    _STRATEGY_SET,
    EDGE_COLUMNS,
    JAVA_INT_MAX,
    JAVA_INT_MIN,
    NODE_COLUMNS,
    PARALLELISM_DEFAULT,
    UID_HASH_RE,
    ContractError,
    ParsedGraph,
    base_partitioner,
    graph_fields,
    is_named_hash,
)

Lists = dict[str, list]
_NO_FIELDS: dict[str, Any] = {}
_DYNAMIC_ONLY = frozenset({"FORWARD_FOR_UNSPECIFIED", "FORWARD_FOR_CONSECUTIVE_HASH"})


@dataclass
class ParsedBatch:
    """The graphs the columnar checks accepted, as the stream tables' columns."""

    positions: list[int]  # each accepted graph's position in the input
    graphs: list[dict[str, Any]]  # as ParsedGraph.graph
    node_counts: list[int]
    edge_counts: list[int]
    nodes: Lists  # NODE_COLUMNS -> one value per node of the accepted graphs, graph by graph
    edges: Lists  # EDGE_COLUMNS -> likewise

    def select(self, keep: list[bool]) -> ParsedBatch:
        """The accepted graphs where ``keep`` (one flag per accepted graph) is true."""
        node_keep = list(chain.from_iterable([k] * n for k, n in zip(keep, self.node_counts, strict=True)))
        edge_keep = list(chain.from_iterable([k] * n for k, n in zip(keep, self.edge_counts, strict=True)))
        return ParsedBatch(
            [p for p, k in zip(self.positions, keep, strict=True) if k],
            [g for g, k in zip(self.graphs, keep, strict=True) if k],
            [n for n, k in zip(self.node_counts, keep, strict=True) if k],
            [n for n, k in zip(self.edge_counts, keep, strict=True) if k],
            {c: [v for v, k in zip(vals, node_keep, strict=True) if k] for c, vals in self.nodes.items()},
            {c: [v for v, k in zip(vals, edge_keep, strict=True) if k] for c, vals in self.edges.items()},
        )

    def parsed_graphs(self) -> list[ParsedGraph]:
        """One ParsedGraph per accepted graph (for code that works graph by graph)."""
        out, a, b = [], 0, 0
        for graph, n, m in zip(self.graphs, self.node_counts, self.edge_counts, strict=True):
            nodes = [{c: self.nodes[c][i] for c in NODE_COLUMNS} for i in range(a, a + n)]
            edges = [{c: self.edges[c][i] for c in EDGE_COLUMNS} for i in range(b, b + m)]
            out.append(ParsedGraph(graph, nodes, edges))
            a, b = a + n, b + m
        return out


_INT = frozenset({int})
_STR = frozenset({str})
_BOOL = frozenset({bool})
_STR_OR_NONE = frozenset({str, type(None)})


def _java_ints(values: list[Any]) -> tuple[np.ndarray, np.ndarray | bool]:
    """(int64 values, ok) where ok: an int (not a bool) in Java's int range; ok is True when
    every value is (the usual case, checked over the whole column at once)."""
    if set(map(type, values)) <= _INT:
        try:
            arr = np.array(values, dtype=np.int64)
        except OverflowError:
            arr = None
        if arr is not None and (not len(arr) or (arr.min() >= JAVA_INT_MIN and arr.max() <= JAVA_INT_MAX)):
            return arr, True
    ok = np.fromiter(
        (type(v) is int and JAVA_INT_MIN <= v <= JAVA_INT_MAX for v in values), dtype=bool, count=len(values)
    )
    picked = (v if o else 0 for v, o in zip(values, ok.tolist(), strict=True))
    return np.fromiter(picked, dtype=np.int64, count=len(values)), ok


def _valid(values: list[Any], types: frozenset[type], allowed: frozenset[str] | None = None) -> np.ndarray | bool:
    """Per value: of one of ``types`` and, unless None, one of ``allowed``. True when every
    value is (the usual case: one pass over the column's types and distinct values in C)."""
    if set(map(type, values)) <= types and (allowed is None or set(values) - {None} <= allowed):
        return True
    return np.fromiter(
        (type(v) in types and (allowed is None or v is None or v in allowed) for v in values),
        dtype=bool,
        count=len(values),
    )


def _flags(values: list[Any], test) -> np.ndarray:
    return np.fromiter((test(v) for v in values), dtype=bool, count=len(values))


def parse_batch(objs: list[Any]) -> tuple[ParsedBatch, list[int]]:
    """The graphs of ``objs`` (parsed JSON) the columnar checks accept, and the positions of
    the others, for :func:`udfs.spec.contract.parse_graph`."""
    heads = []
    rest = []
    for pos, obj in enumerate(objs):
        try:
            graph, raw_nodes, raw_edges = graph_fields(obj)
        except ContractError:
            rest.append(pos)
            continue
        heads.append((pos, graph, raw_nodes, raw_edges, obj.get("source_id_order")))
    count = len(heads)
    n_counts = np.array([len(h[2]) for h in heads], dtype=np.int64)
    e_counts = np.array([len(h[3]) for h in heads], dtype=np.int64)
    ncode = np.repeat(np.arange(count), n_counts)
    ecode = np.repeat(np.arange(count), e_counts)
    bad = np.zeros(count, dtype=bool)

    # nodes: ids, unique per graph
    raw_nodes = list(chain.from_iterable(h[2] for h in heads))
    nd = [n if type(n) is dict else _NO_FIELDS for n in raw_nodes]
    node_ok = np.ones(len(raw_nodes), dtype=bool) & _valid(raw_nodes, frozenset({dict}))
    ids = [d.get("id") for d in nd]
    id_arr, id_ok = _java_ints(ids)
    node_ok &= id_ok
    keys = (ncode << 32) | (id_arr + 2**31)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    repeated = np.zeros(len(keys), dtype=bool)
    repeated[1:] = sorted_keys[1:] == sorted_keys[:-1]
    bad[ncode[order][repeated]] = True

    # edges: both ends nodes of the graph, enums, ints, tags
    raw_edges = list(chain.from_iterable(h[3] for h in heads))
    ed = [e if type(e) is dict else _NO_FIELDS for e in raw_edges]
    edge_ok = np.ones(len(raw_edges), dtype=bool) & _valid(raw_edges, frozenset({dict}))
    sources = [d.get("source") for d in ed]
    targets = [d.get("target") for d in ed]
    src_arr, src_ok = _java_ints(sources)
    dst_arr, dst_ok = _java_ints(targets)
    edge_ok &= src_ok & dst_ok
    src_node = _find(sorted_keys, order, (ecode << 32) | (src_arr + 2**31), edge_ok)
    dst_node = _find(sorted_keys, order, (ecode << 32) | (dst_arr + 2**31), edge_ok)
    edge_ok &= (src_node >= 0) & (dst_node >= 0)
    partitioners = [d.get("partitioner", "FORWARD") for d in ed]
    # a known partitioner or a named hash, but not the adaptive-batch ones: parse_graph decides
    # those (Flink's rejections, or a dynamic graph)
    distinct = set(partitioners) if set(map(type, partitioners)) <= _STR else None
    if distinct is None or not all(
        (p in _PARTITIONER_SET or is_named_hash(p)) and base_partitioner(p) not in _DYNAMIC_ONLY for p in distinct
    ):
        edge_ok &= _flags(
            partitioners,
            lambda p: (
                type(p) is str
                and (p in _PARTITIONER_SET or is_named_hash(p))
                and base_partitioner(p) not in _DYNAMIC_ONLY
            ),
        )
    modes = [d.get("exchange_mode", "UNDEFINED") for d in ed]
    edge_ok &= _valid(modes, _STR, _EXCHANGE_SET)
    type_numbers = [d.get("type_number", 0) for d in ed]
    edge_ok &= _java_ints(type_numbers)[1]
    tags = [d.get("output_tag") for d in ed]
    edge_ok &= _valid(tags, _STR_OR_NONE)
    bad[ecode[~edge_ok]] = True
    in_degree = np.bincount(dst_node[edge_ok], minlength=len(nd))

    # node fields with the SPEC defaults (as udfs.spec.contract._node_row_raw)
    no_inputs = (in_degree == 0).tolist()
    is_source = [d.get("is_source", z) for d, z in zip(nd, no_inputs, strict=True)]
    has_operator = [d.get("has_operator", True) for d in nd]
    source_kind = [
        d["source_kind"] if "source_kind" in d else ("LEGACY" if s else None)
        for d, s in zip(nd, is_source, strict=True)
    ]
    strategy = [
        s if s is not None or not op else ("HEAD" if k == "LEGACY" else "ALWAYS")
        for s, op, k in zip((d.get("chaining_strategy") for d in nd), has_operator, source_kind, strict=True)
    ]
    max_par = [-1 if v is None else v for v in (d.get("max_parallelism") for d in nd)]
    names = [d.get("name") for d in nd]
    uids = [d.get("uid") for d in nd]
    uid_hashes = [d.get("uid_hash") for d in nd]
    parallelism = [d.get("parallelism") for d in nd]
    ssg = [d.get("slot_sharing_group", "default") for d in nd]
    yielding = [d.get("yielding", False) for d in nd]
    configured = [d.get("parallelism_configured", False) for d in nd]
    key_snapshots = [d.get("state_key_serializer_snapshot") for d in nd]
    node_ok &= _valid(names, _STR)
    par_arr, par_ok = _java_ints(parallelism)
    node_ok &= par_ok & ((par_arr >= 1) | (par_arr == PARALLELISM_DEFAULT))
    node_ok &= _java_ints(max_par)[1]
    for column in (is_source, has_operator, yielding, configured):
        node_ok &= _valid(column, _BOOL)
    node_ok &= _valid(source_kind, _STR_OR_NONE, _SOURCE_KIND_SET)
    node_ok &= _valid(strategy, _STR_OR_NONE, _STRATEGY_SET)
    node_ok &= _valid(uids, _STR_OR_NONE)
    node_ok &= _valid(ssg, _STR_OR_NONE)
    node_ok &= _valid(key_snapshots, _STR_OR_NONE)
    if any(v is not None for v in uid_hashes):
        node_ok &= _flags(uid_hashes, lambda v: v is None or (type(v) is str and UID_HASH_RE.fullmatch(v) is not None))
        uid_hashes = [v.lower() if type(v) is str else v for v in uid_hashes]
    bad[ncode[~node_ok]] = True

    # graph-level: uids unique, a source, no node without inputs that is not a source, no cycle
    seen: set[tuple[int, str]] = set()
    for j in (j for j, u in enumerate(uids) if type(u) is str):
        key = (int(ncode[j]), uids[j])
        if key in seen:
            bad[key[0]] = True
        seen.add(key)
    source_arr = np.array([v is True for v in is_source], dtype=bool)
    bad |= np.bincount(ncode[source_arr], minlength=count) == 0
    bad[ncode[(in_degree == 0) & ~source_arr]] = True
    bad[_cyclic(ncode, count, src_node[edge_ok], dst_node[edge_ok])] = True

    # source_id_order: exactly the source ids, in the exporter's order
    orders: list[list[int] | None] = []
    sources_of: dict[int, list[int]] = {}
    for j in np.flatnonzero(source_arr).tolist():
        sources_of.setdefault(int(ncode[j]), []).append(ids[j])
    for c, h in enumerate(heads):
        value = h[4]
        if value is None or bad[c]:
            orders.append(None)
            continue
        valid = type(value) is list and all(type(v) is int for v in value)
        if not valid or sorted(value) != sorted(sources_of.get(c, [])):
            bad[c] = True
        orders.append(list(value) if type(value) is list else None)

    good = ~bad
    rest.extend(h[0] for h, b in zip(heads, bad.tolist(), strict=True) if b)
    rest.sort()
    keep_node = good[ncode].tolist()
    keep_edge = good[ecode].tolist()
    gids = [h[1]["graph_id"] for h in heads]

    everything = bool(good.all())

    def kept(values: list, keep: list[bool]) -> list:
        return values if everything else [v for v, k in zip(values, keep, strict=True) if k]

    node_gids = list(chain.from_iterable([g] * n for g, n in zip(gids, n_counts.tolist(), strict=True)))
    edge_gids = list(chain.from_iterable([g] * n for g, n in zip(gids, e_counts.tolist(), strict=True)))
    edge_idx = ranges(np.zeros(len(e_counts), dtype=np.int64), e_counts).tolist()
    nodes = {
        "graph_id": node_gids,
        "node_id": ids,
        "name": names,
        "uid": uids,
        "uid_hash": uid_hashes,
        "parallelism": parallelism,
        "max_parallelism": max_par,
        "chaining_strategy": strategy,
        "slot_sharing_group": ssg,
        "is_source": is_source,
        "source_kind": source_kind,
        "yielding": yielding,
        "has_operator": has_operator,
        "parallelism_configured": configured,
        "state_key_serializer_snapshot": key_snapshots,
    }
    edges = {
        "graph_id": edge_gids,
        "edge_idx": edge_idx,
        "source": sources,
        "target": targets,
        "partitioner": partitioners,
        "exchange_mode": modes,
        "type_number": type_numbers,
        "output_tag": tags,
    }
    graphs = []
    for h, order_value, g in zip(heads, orders, good.tolist(), strict=True):
        if g:
            graphs.append({**h[1], "source_id_order": order_value})
    batch = ParsedBatch(
        [h[0] for h, g in zip(heads, good.tolist(), strict=True) if g],
        graphs,
        n_counts[good].tolist(),
        e_counts[good].tolist(),
        {c: kept(nodes[c], keep_node) for c in NODE_COLUMNS},
        {c: kept(edges[c], keep_edge) for c in EDGE_COLUMNS},
    )
    return batch, rest


def _find(sorted_keys: np.ndarray, order: np.ndarray, keys: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The node index of each key (-1: none, or not ``valid``)."""
    if not len(sorted_keys):
        return np.full(len(keys), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return np.where(valid & (sorted_keys[at] == keys), order[at], -1)


def _cyclic(code: np.ndarray, count: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Graph codes with a cycle: nodes Kahn's algorithm never frees, one round per layer."""
    bg = BatchGraph.build(code, count, src, dst)
    indeg = np.diff(bg.in_ptr)
    freed = np.zeros(bg.n, dtype=bool)
    ready = np.flatnonzero(indeg == 0)
    while len(ready):
        freed[ready] = True
        e, _ = bg.out_edges_of(ready)
        nodes, counts = np.unique(bg.dst[e], return_counts=True)
        indeg[nodes] -= counts
        ready = nodes[indeg[nodes] == 0]
    return np.unique(code[~freed])
