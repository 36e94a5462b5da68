"""The batch kernel of the fused executor against the per-graph steps it batches.
Pure pandas/numpy: no Spark needed."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest

from pipeline.fused import _batch_frames
from udfs import graph_batch
from udfs.chaining_rules import evaluate_edge_rules
from udfs.spec_contract import ContractError, parse_graph

from .conftest import vector_files
from .oracles.edge_rule_merges import edge_rule_rows

FLAGS = ["chainable_input", "chainable_local", "hasher_chainable_local", "yield_sensitive"]


def _parsed(path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        for line in f:
            if line.strip():
                try:
                    yield parse_graph(json.loads(line)), path.name
                except ContractError:
                    continue


@pytest.mark.parametrize("path", vector_files(), ids=lambda p: p.name)
def test_rule_flags_by_index_arithmetic_equal_the_merged_rows(path, monkeypatch):
    """compute_batch finds each edge's end nodes by binary search over the whole batch;
    the flags must be those of the pandas merges in edge_rule_rows, edge for edge."""
    graphs, nodes, edges = _batch_frames(list(_parsed(path)))
    want = edge_rule_rows(nodes, edges, graphs)
    want = pd.concat([want[["graph_id", "edge_idx"]], evaluate_edge_rules(want)], axis=1)

    seen = {}

    def keep(df):
        flags = evaluate_edge_rules(df)
        seen["flags"] = flags
        return flags

    monkeypatch.setattr(graph_batch, "evaluate_edge_rules", keep)
    shuffled = edges.sample(frac=1.0, random_state=3).reset_index(drop=True)  # any input order
    graph_batch.compute_batch(graphs, nodes.sample(frac=1.0, random_state=4), shuffled)
    order = np.lexsort(
        (shuffled["edge_idx"].to_numpy(), pd.Index(graphs["graph_id"]).get_indexer(shuffled["graph_id"]))
    )
    got = shuffled.iloc[order][["graph_id", "edge_idx"]].reset_index(drop=True)
    got = pd.concat([got, seen["flags"].reset_index(drop=True)], axis=1)
    merged = want.merge(got, on=["graph_id", "edge_idx"], suffixes=("_want", "_got"))
    assert len(merged) == len(want) == len(got) == len(edges) > 0
    for f in FLAGS:
        assert (merged[f"{f}_want"] == merged[f"{f}_got"]).all(), f
