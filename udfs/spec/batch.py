"""Step 1 for a whole batch: the contract checked over the batch's flattened columns.

:func:`udfs.spec.contract.parse_graph` checks one graph node by node and names the first
breach; building and checking a row dict per node is most of its cost (docs/performance.md).
Here every field of every node (and edge) of the batch is one column, the SPEC defaults are
applied column-wise, and each check is one pass over a column; graph-level checks (duplicate
ids and uids, dangling edges, sources, orphans, cycles) run over the whole batch at once.

This path only *accepts*: a graph with anything unusual -- a breach, or something it does
not handle itself (the adaptive-batch partitioners) -- goes to ``parse_graph``, which names
the breach or accepts the graph. So every error message is parse_graph's;
tests/test_spec_contract.py checks that both paths accept the same graphs with the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Any, NamedTuple

import numpy as np

from udfs.flink.graph_arrays import BatchGraph, ranges
from udfs.spec.contract import (
    _EXCHANGE_SET,
    _PARTITIONER_SET,
    _SOURCE_KIND_SET,
    _STRATEGY_SET,
    EDGE_COLUMNS,
    EDGE_DEFAULTS,
    JAVA_INT_MAX,
    JAVA_INT_MIN,
    NODE_COLUMNS,
    NODE_DEFAULTS,
    PARALLELISM_DEFAULT,
    UID_HASH_RE,
    ContractError,
    ParsedGraph,
    base_partitioner,
    declared_states_text,
    default_chaining_strategy,
    default_max_parallelism,
    default_source_kind,
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


class _Head(NamedTuple):
    """A graph whose own fields pass :func:`udfs.spec.contract.graph_fields`."""

    position: int  # in the input
    graph: dict[str, Any]
    nodes: list[Any]  # as given
    edges: list[Any]
    source_id_order: Any


@dataclass(frozen=True)
class _Flat:
    """The heads' nodes and edges flattened, graph after graph (a graph's code: its position
    in ``heads``); a node or edge that is no JSON object has no fields."""

    heads: list[_Head]
    n_counts: np.ndarray
    e_counts: np.ndarray
    ncode: np.ndarray  # graph code of each node
    ecode: np.ndarray
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    node_is_object: np.ndarray
    edge_is_object: np.ndarray

    @staticmethod
    def of(heads: list[_Head]) -> _Flat:
        n_counts = np.array([len(h.nodes) for h in heads], dtype=np.int64)
        e_counts = np.array([len(h.edges) for h in heads], dtype=np.int64)
        raw_nodes = list(chain.from_iterable(h.nodes for h in heads))
        raw_edges = list(chain.from_iterable(h.edges for h in heads))
        return _Flat(
            heads=heads,
            n_counts=n_counts,
            e_counts=e_counts,
            ncode=np.repeat(np.arange(len(heads)), n_counts),
            ecode=np.repeat(np.arange(len(heads)), e_counts),
            nodes=[n if type(n) is dict else _NO_FIELDS for n in raw_nodes],
            edges=[e if type(e) is dict else _NO_FIELDS for e in raw_edges],
            node_is_object=np.ones(len(raw_nodes), dtype=bool) & _valid(raw_nodes, frozenset({dict})),
            edge_is_object=np.ones(len(raw_edges), dtype=bool) & _valid(raw_edges, frozenset({dict})),
        )


@dataclass(frozen=True)
class _NodeIds:
    """The nodes' ids, checked, and the (graph, id) keys edges find their end nodes by."""

    ids: list[Any]  # as given
    ok: np.ndarray | bool  # a Java int
    sorted_keys: np.ndarray
    order: np.ndarray  # the node of each sorted key
    repeated_in: np.ndarray  # codes of graphs with an id twice


@dataclass(frozen=True)
class _Edges:
    """The edges' fields with the SPEC defaults, checked, and their end nodes."""

    columns: Lists  # source, target, partitioner, exchange_mode, type_number, output_tag
    ok: np.ndarray
    src_node: np.ndarray  # node index of each edge's source (-1: none)
    dst_node: np.ndarray


def parse_batch(objs: list[Any]) -> tuple[ParsedBatch, list[int]]:
    """The graphs of ``objs`` (parsed JSON) the columnar checks accept, and the positions of
    the others, for :func:`udfs.spec.contract.parse_graph`.

    The checks, each over the whole batch: the graphs' own fields (:func:`_graph_heads`),
    node ids unique per graph (:func:`_node_ids`), edges (:func:`_edge_columns`), node fields
    with the SPEC defaults (:func:`_node_columns`), the graph-level rules
    (:func:`_graph_breaches`) and source_id_order (:func:`_source_id_orders`). A graph with
    any breach is one of the others."""
    heads, rest = _graph_heads(objs)
    flat = _Flat.of(heads)
    ids = _node_ids(flat)
    edges = _edge_columns(flat, ids)
    in_degree = np.bincount(edges.dst_node[edges.ok], minlength=len(flat.nodes))
    nodes, fields_ok = _node_columns(flat.nodes, in_degree)
    is_source = np.array([v is True for v in nodes["is_source"]], dtype=bool)
    bad = _graph_breaches(flat, nodes["uid"], is_source, in_degree, edges)
    bad[ids.repeated_in] = True
    bad[flat.ecode[~edges.ok]] = True
    bad[flat.ncode[~(flat.node_is_object & ids.ok & fields_ok)]] = True
    orders, wrong_order = _source_id_orders(flat, ids.ids, is_source, bad)
    bad |= wrong_order
    rest.extend(h.position for h, b in zip(heads, bad.tolist(), strict=True) if b)
    rest.sort()
    return _accepted(flat, ids.ids, nodes, edges, orders, ~bad), rest


def _graph_heads(objs: list[Any]) -> tuple[list[_Head], list[int]]:
    """The graphs whose own fields pass, and the positions of those that do not."""
    heads: list[_Head] = []
    rest: list[int] = []
    for pos, obj in enumerate(objs):
        try:
            graph, raw_nodes, raw_edges = graph_fields(obj)
        except ContractError:
            rest.append(pos)
            continue
        heads.append(_Head(pos, graph, raw_nodes, raw_edges, obj.get("source_id_order")))
    return heads, rest


def _node_ids(flat: _Flat) -> _NodeIds:
    """Each node's id (a Java int), the sorted (graph, id) keys, and the graphs that repeat an id."""
    ids = [d.get("id") for d in flat.nodes]
    id_arr, id_ok = _java_ints(ids)
    keys = _node_keys(flat.ncode, id_arr)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    repeated = np.zeros(len(keys), dtype=bool)
    repeated[1:] = sorted_keys[1:] == sorted_keys[:-1]
    return _NodeIds(ids, id_ok, sorted_keys, order, flat.ncode[order][repeated])


def _edge_columns(flat: _Flat, ids: _NodeIds) -> _Edges:
    """The edges' fields with the SPEC defaults; an edge is valid when both ends are nodes of
    its graph and its enums, ints and tag are."""
    ed = flat.edges
    sources = [d.get("source") for d in ed]
    targets = [d.get("target") for d in ed]
    src_arr, src_ok = _java_ints(sources)
    dst_arr, dst_ok = _java_ints(targets)
    ok = flat.edge_is_object & src_ok & dst_ok
    src_node = _find(ids.sorted_keys, ids.order, _node_keys(flat.ecode, src_arr), ok)
    dst_node = _find(ids.sorted_keys, ids.order, _node_keys(flat.ecode, dst_arr), ok)
    ok &= (src_node >= 0) & (dst_node >= 0)
    partitioners = [d.get("partitioner", EDGE_DEFAULTS["partitioner"]) for d in ed]
    ok &= _accepted_partitioners(partitioners)
    modes = [d.get("exchange_mode", EDGE_DEFAULTS["exchange_mode"]) for d in ed]
    ok &= _valid(modes, _STR, _EXCHANGE_SET)
    type_numbers = [d.get("type_number", EDGE_DEFAULTS["type_number"]) for d in ed]
    ok &= _java_ints(type_numbers)[1]
    tags = [d.get("output_tag", EDGE_DEFAULTS["output_tag"]) for d in ed]
    ok &= _valid(tags, _STR_OR_NONE)
    columns = {
        "source": sources,
        "target": targets,
        "partitioner": partitioners,
        "exchange_mode": modes,
        "type_number": type_numbers,
        "output_tag": tags,
    }
    return _Edges(columns, ok, src_node, dst_node)


def _accepted_partitioners(partitioners: list[Any]) -> np.ndarray | bool:
    """Per edge: a known partitioner or a named hash, but not the adaptive-batch ones (those
    are parse_graph's to decide: Flink's rejections, or a dynamic graph). True when every
    edge's is (the usual case: checked over the distinct values)."""
    if set(map(type, partitioners)) <= _STR and all(_accepted_partitioner(p) for p in set(partitioners)):
        return True
    return _flags(partitioners, _accepted_partitioner)


def _accepted_partitioner(p: Any) -> bool:
    return type(p) is str and (p in _PARTITIONER_SET or is_named_hash(p)) and base_partitioner(p) not in _DYNAMIC_ONLY


def _node_columns(nd: list[dict[str, Any]], in_degree: np.ndarray) -> tuple[Lists, np.ndarray]:
    """The nodes' fields with the SPEC defaults (as udfs.spec.contract._node_row_raw; a node
    without inputs is a source unless it says otherwise), by NODE_COLUMNS name, and whether
    each node's are valid."""
    no_inputs = (in_degree == 0).tolist()
    is_source = [d.get("is_source", z) for d, z in zip(nd, no_inputs, strict=True)]
    has_operator = [d.get("has_operator", NODE_DEFAULTS["has_operator"]) for d in nd]
    source_kind = [
        d["source_kind"] if "source_kind" in d else default_source_kind(s) for d, s in zip(nd, is_source, strict=True)
    ]
    strategy = [
        default_chaining_strategy(s, op, k)
        for s, op, k in zip((d.get("chaining_strategy") for d in nd), has_operator, source_kind, strict=True)
    ]
    cols: Lists = {
        **{k: [d.get(k, v) for d in nd] for k, v in NODE_DEFAULTS.items()},
        "name": [d.get("name") for d in nd],
        "parallelism": [d.get("parallelism") for d in nd],
        "max_parallelism": [default_max_parallelism(d.get("max_parallelism")) for d in nd],
        "chaining_strategy": strategy,
        "is_source": is_source,
        "source_kind": source_kind,
        "has_operator": has_operator,
    }
    ok = np.ones(len(nd), dtype=bool) & _valid(cols["name"], _STR)
    par_arr, par_ok = _java_ints(cols["parallelism"])
    ok &= par_ok & ((par_arr >= 1) | (par_arr == PARALLELISM_DEFAULT))
    ok &= _java_ints(cols["max_parallelism"])[1]
    for flag in ("is_source", "has_operator", "yielding", "parallelism_configured"):
        ok &= _valid(cols[flag], _BOOL)
    ok &= _valid(source_kind, _STR_OR_NONE, _SOURCE_KIND_SET)
    ok &= _valid(strategy, _STR_OR_NONE, _STRATEGY_SET)
    ok &= _valid(cols["uid"], _STR_OR_NONE)
    ok &= _valid(cols["slot_sharing_group"], _STR_OR_NONE)
    ok &= _valid(cols["state_key_serializer_snapshot"], _STR_OR_NONE)
    if any(v is not None for v in cols["declared_states"]):
        texts, declared_ok = _declared_states(cols["declared_states"])
        cols["declared_states"] = texts
        ok &= declared_ok
    if any(v is not None for v in cols["uid_hash"]):
        ok &= _flags(cols["uid_hash"], lambda v: v is None or (type(v) is str and UID_HASH_RE.fullmatch(v) is not None))
        cols["uid_hash"] = [v.lower() if type(v) is str else v for v in cols["uid_hash"]]
    return cols, ok


def _declared_states(values: list[Any]) -> tuple[list[str | None], np.ndarray]:
    """Node field ``declared_states`` as the checked path keeps it (canonical JSON text), and
    whether each node's is valid (a node whose is not goes to ``parse_graph``, which names why)."""
    texts: list[str | None] = []
    ok = np.ones(len(values), dtype=bool)
    for i, v in enumerate(values):
        try:
            texts.append(declared_states_text(v, ""))
        except ContractError:
            texts.append(None)
            ok[i] = False
    return texts, ok


def _graph_breaches(
    flat: _Flat, uids: list[Any], is_source: np.ndarray, in_degree: np.ndarray, edges: _Edges
) -> np.ndarray:
    """Per graph code: a uid twice, no source, a node without inputs that is no source, or a
    cycle (over the valid edges)."""
    ncode, count = flat.ncode, len(flat.heads)
    bad = np.zeros(count, dtype=bool)
    seen: set[tuple[int, str]] = set()
    for j in (j for j, u in enumerate(uids) if type(u) is str):
        key = (int(ncode[j]), uids[j])
        if key in seen:
            bad[key[0]] = True
        seen.add(key)
    bad |= np.bincount(ncode[is_source], minlength=count) == 0
    bad[ncode[(in_degree == 0) & ~is_source]] = True
    bad[_cyclic(ncode, count, edges.src_node[edges.ok], edges.dst_node[edges.ok])] = True
    return bad


def _source_id_orders(
    flat: _Flat, ids: list[Any], is_source: np.ndarray, bad: np.ndarray
) -> tuple[list[list[int] | None], np.ndarray]:
    """Each graph's source_id_order (None: not given, or the graph is ``bad`` already), and per
    graph code whether it is wrong: it must list exactly the source ids (in the exporter's
    order)."""
    orders: list[list[int] | None] = []
    wrong = np.zeros(len(flat.heads), dtype=bool)
    sources_of: dict[int, list[int]] = {}
    for j in np.flatnonzero(is_source).tolist():
        sources_of.setdefault(int(flat.ncode[j]), []).append(ids[j])
    for c, h in enumerate(flat.heads):
        value = h.source_id_order
        if value is None or bad[c]:
            orders.append(None)
            continue
        valid = type(value) is list and all(type(v) is int for v in value)
        if not valid or sorted(value) != sorted(sources_of.get(c, [])):
            wrong[c] = True
        orders.append(list(value) if type(value) is list else None)
    return orders, wrong


def _accepted(
    flat: _Flat, ids: list[Any], nodes: Lists, edges: _Edges, orders: list[list[int] | None], good: np.ndarray
) -> ParsedBatch:
    """The ``good`` graphs (per graph code) as the stream tables' columns."""
    everything = bool(good.all())
    keep_node = good[flat.ncode].tolist()
    keep_edge = good[flat.ecode].tolist()

    def kept(values: list, keep: list[bool]) -> list:
        return values if everything else [v for v, k in zip(values, keep, strict=True) if k]

    gids = [h.graph["graph_id"] for h in flat.heads]
    node_columns = {
        "graph_id": list(chain.from_iterable([g] * n for g, n in zip(gids, flat.n_counts.tolist(), strict=True))),
        "node_id": ids,
        **nodes,
    }
    edge_columns = {
        "graph_id": list(chain.from_iterable([g] * n for g, n in zip(gids, flat.e_counts.tolist(), strict=True))),
        "edge_idx": ranges(np.zeros(len(flat.e_counts), dtype=np.int64), flat.e_counts).tolist(),
        **edges.columns,
    }
    goods = good.tolist()
    return ParsedBatch(
        [h.position for h, g in zip(flat.heads, goods, strict=True) if g],
        [{**h.graph, "source_id_order": o} for h, o, g in zip(flat.heads, orders, goods, strict=True) if g],
        flat.n_counts[good].tolist(),
        flat.e_counts[good].tolist(),
        {c: kept(node_columns[c], keep_node) for c in NODE_COLUMNS},
        {c: kept(edge_columns[c], keep_edge) for c in EDGE_COLUMNS},
    )


def _node_keys(codes: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """(graph code, Java int id) -> one sortable int64 key."""
    return (codes << 32) | (ids + 2**31)


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
