"""The batch kernel of the fused executor against the per-graph steps it batches.
Pure pandas/numpy: no Spark needed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.compute.stage import _batch_frames
from udfs.compute import batch as graph_batch
from udfs.flink.chainability import evaluate_edge_rules
from udfs.spec.contract import ContractError, parse_graph

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


def _rows(rows: dict) -> dict[str, pd.DataFrame]:
    return {kind: graph_batch.concat_columns(parts) for kind, parts in rows.items()}


BATCH_GOLDEN = sorted((Path(__file__).resolve().parent / "golden" / "batch").glob("flink-*.jsonl.gz"))


@pytest.mark.parametrize("path", vector_files() + BATCH_GOLDEN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_batchs_job_graph_rows_equal_each_graph_computed_alone(path):
    """The rows after the createChain walk are built once over the whole batch, each graph's
    walk shifted by its offset in the batch's columns: every kind of row must be the one each
    graph gets alone (a batch of one), row for row and in order, Flink's rejections and
    dynamic graphs' parallelism included."""
    parsed = list(_parsed(path))[:300]
    batch = _rows(graph_batch.compute_batch(*_batch_frames(parsed)))
    alone: dict[str, list[pd.DataFrame]] = {}
    for pg in parsed:
        for kind, frame in _rows(graph_batch.compute_batch(*_batch_frames([pg]))).items():
            alone.setdefault(kind, []).append(frame)
    assert set(batch) == set(alone)
    assert len(batch["operator"]) > 0 and len(batch["vertex"]) > 0 and len(batch["job_edge"]) > 0
    for kind, frames in alone.items():
        want = pd.concat(frames, ignore_index=True)
        got = batch[kind][list(want.columns)]
        assert len(got) == len(want), kind
        for column in want.columns:
            assert got[column].astype(str).tolist() == want[column].astype(str).tolist(), (kind, column)
