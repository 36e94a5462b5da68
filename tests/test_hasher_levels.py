"""The hasher's breadth-first traversal against a level-by-level reading of Flink's queue
(:mod:`tests.oracles.levelwise_bfs`), on every known-answer graph and on random DAGs; plain
Python, no Spark.

(Until issue 12 this file also ran the Spark-wide superstep hasher against the staged
executor's grouped one on Spark; both left the product, and the hashes of the one path
are checked against Flink's by the golden sets, tests/test_conformance.py.)
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from udfs.graph_arrays import GraphArrays
from udfs.hash_layers import HashingError, traversal_positions
from udfs.spec_contract import ContractError, parse_graph

from .conftest import vector_files
from .oracles.levelwise_bfs import levelwise_positions


def _check_levelwise(g: GraphArrays) -> None:
    has_uid = pd.notna(g.nodes["uid"])
    is_source = np.asarray(g.nodes["is_source"], dtype=bool)
    position, level, sizes = levelwise_positions(g, has_uid, is_source)
    try:
        ref = traversal_positions(g, has_uid, is_source)
    except HashingError:
        assert (position < 0).any()
        return
    assert position.tolist() == ref.position.tolist()
    assert level.tolist() == ref.level.tolist()
    assert sizes == ref.frontier_sizes


def _read_graphs(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.mark.parametrize("path", vector_files(), ids=lambda p: p.name)
def test_level_formulation_matches_flink_queue_on_vectors(path: Path) -> None:
    for obj in _read_graphs(path):
        try:
            pg = parse_graph(obj)
        except ContractError:
            continue
        _check_levelwise(GraphArrays.build(pd.DataFrame(pg.nodes), pd.DataFrame(pg.edges)))


def test_level_formulation_matches_flink_queue_on_random_dags() -> None:
    rng = random.Random(7)
    for _ in range(3000):
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
                "is_source": [i not in targets or rng.random() < 0.05 for i in ids],
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
        _check_levelwise(GraphArrays.build(nodes, e))
