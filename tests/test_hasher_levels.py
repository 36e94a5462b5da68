"""The hasher's batch traversal (:func:`udfs.flink.hashing.traverse`, one superstep per queue
generation over every graph of a batch) against Flink's queue popped node by node
(:mod:`tests.oracles.flink_queue`) and a level-by-level reading of it
(:mod:`tests.oracles.levelwise_bfs`), on every known-answer graph and on random DAGs, each
set hashed as ONE batch; plain Python, no Spark.

(The hashes themselves are checked against Flink's by the golden sets,
tests/test_conformance.py.)
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from udfs.flink.graph_arrays import BatchGraph, GraphArrays
from udfs.flink.hashing import traverse
from udfs.spec.contract import ContractError, parse_graph

from .conftest import vector_files
from .oracles.flink_queue import queue_positions
from .oracles.levelwise_bfs import levelwise_positions


def _check_batch(graphs: list[GraphArrays]) -> int:
    """Traverse all graphs as one batch; each graph's positions, generations and frontier
    sizes must be the oracles'. Returns how many graphs some node of which is never hashed."""
    offsets = np.cumsum([0] + [g.n for g in graphs])
    code = np.repeat(np.arange(len(graphs)), [g.n for g in graphs])
    src = np.concatenate([g.src + o for g, o in zip(graphs, offsets, strict=False)])
    dst = np.concatenate([g.dst + o for g, o in zip(graphs, offsets, strict=False)])
    bg = BatchGraph.build(code, len(graphs), src, dst)
    has_uid = np.concatenate([pd.notna(g.nodes["uid"]) for g in graphs]).astype(bool)
    is_source = np.concatenate([np.asarray(g.nodes["is_source"], dtype=bool) for g in graphs])
    got = traverse(bg, has_uid, is_source)
    unreached = 0
    for i, g in enumerate(graphs):
        a, b = offsets[i], offsets[i + 1]
        position, level, sizes = queue_positions(g, has_uid[a:b], is_source[a:b])
        assert got.position[a:b].tolist() == position.tolist(), i
        assert got.level[a:b].tolist() == level.tolist(), i
        assert got.frontier_sizes[i] == sizes, i
        lw_position, lw_level, lw_sizes = levelwise_positions(g, has_uid[a:b], is_source[a:b])
        assert (lw_position.tolist(), lw_level.tolist(), lw_sizes) == (position.tolist(), level.tolist(), sizes)
        unreached += bool((position < 0).any())
    return unreached


def _read_graphs(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.mark.parametrize("path", vector_files(), ids=lambda p: p.name)
def test_batch_traversal_matches_flink_queue_on_vectors(path: Path) -> None:
    graphs = []
    for obj in _read_graphs(path):
        try:
            pg = parse_graph(obj)
        except ContractError:
            continue
        graphs.append(GraphArrays.build(pd.DataFrame(pg.nodes), pd.DataFrame(pg.edges)))
    assert graphs
    _check_batch(graphs)


def _random_dag(rng: random.Random) -> GraphArrays:
    n = rng.randint(1, 12)
    ids = rng.sample(range(-5, 40), n)  # a random topological order, unrelated to id order
    edges = []
    for _ in range(rng.randint(0, 3 * n)):
        a, b = sorted(rng.sample(range(n), 2)) if n > 1 else (0, 0)
        if a != b:
            edges.append((ids[a], ids[b]))
    rng.shuffle(edges)
    targets = {t for _, t in edges}
    nodes = pd.DataFrame(
        {
            "graph_id": "g",
            "node_id": ids,
            "uid": [f"u{i}" if rng.random() < 0.15 else None for i in ids],
            # now and then a node without inputs that is no source: never reached, nor what needs it
            "is_source": [(i not in targets and rng.random() < 0.97) or rng.random() < 0.05 for i in ids],
        }
    )
    e = pd.DataFrame(
        {
            "graph_id": "g",
            "edge_idx": range(len(edges)),
            "source": [s for s, _ in edges],
            "target": [t for _, t in edges],
        },
        columns=["graph_id", "edge_idx", "source", "target"],
    )
    return GraphArrays.build(nodes, e)


def test_batch_traversal_matches_flink_queue_on_random_dags() -> None:
    rng = random.Random(7)
    graphs = [_random_dag(rng) for _ in range(3000)]
    unreached = _check_batch(graphs)
    # the batch holds graphs the hasher cannot finish, beside the others
    assert 0 < unreached < len(graphs)


def test_a_long_chain_takes_one_superstep_per_link() -> None:
    n = 2000
    nodes = pd.DataFrame({"graph_id": "g", "node_id": range(n), "uid": None, "is_source": [True] + [False] * (n - 1)})
    edges = pd.DataFrame({"graph_id": "g", "edge_idx": range(n - 1), "source": range(n - 1), "target": range(1, n)})
    g = GraphArrays.build(nodes, edges)
    assert _check_batch([g, g]) == 0
