"""One graph through the pipeline's own per-batch computation, without Spark.

:func:`compute_one` is :func:`udfs.compute.batch.compute_batch` on a batch of one graph --
the very code the Spark workers run -- with its rows turned back into frames. It serves unit
tests on hand-built graphs, the restore cases' what-if graphs and the fast development loop
of ``scripts/dev_check.py``, where starting Spark would cost more than the work.
:func:`compute_many` is the same for a list of graphs in one batch: the restore check proves a
partition's fixes so (one patched graph at a time cost 20 ms, the batch's share a few).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from udfs.compute.batch import EDGE_INPUT_COLUMNS, NODE_INPUT_COLUMNS, compute_batch, concat_columns
from udfs.errors import CodedError
from udfs.flink.hashing import HashingError
from udfs.spec.contract import GRAPH_COLUMNS, parse_graph


def compute_one(obj: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(nodes with operator_id, operators, vertices, job_edges) of one spec graph; raises
    :class:`udfs.spec.contract.ContractError` on a contract breach and
    :class:`udfs.flink.hashing.HashingError` (its code the error row's) when Flink would not
    build it."""
    pg = parse_graph(obj)
    graph = {c: pg.graph.get(c) for c in GRAPH_COLUMNS}
    nodes = pd.DataFrame(pg.nodes)
    rows = compute_batch(
        pd.DataFrame([graph]),
        nodes[list(NODE_INPUT_COLUMNS)],
        pd.DataFrame(pg.edges, columns=list(EDGE_INPUT_COLUMNS)),
        isolate=False,
    )
    if "error" in rows:
        error = concat_columns(rows["error"]).iloc[0]
        raise HashingError(error["error_code"], error["message"])
    operators, vertices, job_edges = (concat_columns(rows[k]) for k in ("operator", "vertex", "job_edge"))
    texts = zip(vertices.pop("operator_ids_text"), vertices.pop("user_operator_ids_text"), strict=True)
    ids = [_id_lists(o, u) for o, u in texts]
    vertices["operator_ids"] = [o for o, _ in ids]
    vertices["user_operator_ids"] = [u for _, u in ids]
    nodes = nodes.merge(operators[["node_id", "operator_id"]], on="node_id")
    return nodes, operators, vertices, job_edges


@dataclass
class GraphRecords:
    """One computed graph as dicts: its parsed spec nodes (SPEC defaults applied), its
    operators and its job vertices (``operator_ids`` and ``user_operator_ids`` as lists)."""

    nodes: list[dict[str, Any]]
    operators: list[dict[str, Any]]
    vertices: list[dict[str, Any]]


class InternalError(RuntimeError):
    """A graph's steps raised (a bug): its INTERNAL_ERROR row's traceback as the message."""


def compute_many(objs: list[dict[str, Any]]) -> list[GraphRecords | Exception]:
    """Each spec graph's records, computed in one :func:`compute_batch`, or the exception
    :func:`compute_one` would raise for it (the contract's or Flink's coded error; an
    :class:`InternalError` for a bug in one graph's steps). Graph ids may repeat: each graph is
    computed under its position, and its rows carry its own id again."""
    out: list[GraphRecords | Exception | None] = [None] * len(objs)
    graphs, nodes, edges, parsed = [], [], [], {}
    for i, obj in enumerate(objs):
        try:
            pg = parse_graph(obj)
        except CodedError as e:
            out[i] = e
            continue
        key = str(i)
        parsed[key] = (i, pg)
        graphs.append({**{c: pg.graph.get(c) for c in GRAPH_COLUMNS}, "graph_id": key})
        nodes += [{**n, "graph_id": key} for n in pg.nodes]
        edges += [{**e, "graph_id": key} for e in pg.edges]
    if graphs:
        rows = compute_batch(
            pd.DataFrame(graphs),
            pd.DataFrame(nodes, columns=list(NODE_INPUT_COLUMNS)),
            pd.DataFrame(edges, columns=list(EDGE_INPUT_COLUMNS)),
        )
        if "error" in rows:
            for e in concat_columns(rows["error"]).to_dict("records"):
                code, message = e["error_code"], e["message"]
                error = InternalError(message) if code == "INTERNAL_ERROR" else HashingError(code, message)
                out[parsed[e["graph_id"]][0]] = error
        done: dict[str, GraphRecords] = {}  # key -> the records of a graph computed without error
        for key, (i, pg) in parsed.items():
            if out[i] is None:
                done[key] = out[i] = GraphRecords(pg.nodes, [], [])
        for kind in ("operator", "vertex"):
            for r in concat_columns(rows[kind]).to_dict("records") if kind in rows else []:
                g = done.get(r["graph_id"])
                if g is None:
                    continue
                r["graph_id"] = g.nodes[0]["graph_id"]
                if kind == "operator":
                    g.operators.append(r)
                else:
                    r["operator_ids"], r["user_operator_ids"] = _id_lists(
                        r.pop("operator_ids_text"), r.pop("user_operator_ids_text")
                    )
                    g.vertices.append(r)
    return out  # type: ignore[return-value]  # every graph got its records or its error above


def _id_lists(operator_ids_text: str, user_operator_ids_text: str) -> tuple[list[str], list[str | None]]:
    """A job vertex's operator IDs and user-defined IDs as lists, from the comma-joined texts
    its rows carry (an empty user-defined ID is none)."""
    return operator_ids_text.split(","), [u or None for u in user_operator_ids_text.split(",")]
