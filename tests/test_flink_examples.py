"""Flink's own example programs (flink-examples-streaming / -table from Maven Central).

``scripts/flink_examples.py`` exported every main class of the published example jars through
``flink-jobgraph export --expected`` (as shipped and at ``-p 4``) and committed the specs with
Flink's answer to ``conformance/examples/``. The graphs themselves are compared with Flink on
every aspect in tests/test_conformance.py (they are part of the one conformance run); this file
checks the bookkeeping: every program has a row per variant, every captured graph is in the
spec file and nothing else is, and a program that gave no graph says why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools.conformance import read_vector_file

EXAMPLES = Path(__file__).resolve().parent.parent / "conformance" / "examples"
LINES = ("1.20", "2.3")


@pytest.mark.parametrize("line", LINES)
def test_every_example_program_is_accounted_for(line):
    status = json.loads((EXAMPLES / f"flink-{line}.status.json").read_text())
    graphs = list(read_vector_file(EXAMPLES / f"flink-{line}.jsonl.gz"))
    programs = {r["program"] for r in status}
    assert len(programs) >= 15
    assert sorted((r["program"], r["variant"]) for r in status) == sorted(
        (p, v) for p in programs for v in ("shipped", "p4")
    )
    listed = [gid for r in status for gid in r["graph_ids"]]
    assert len(set(listed)) == len(listed)
    assert sorted(listed) == sorted(g["graph_id"] for g in graphs)
    assert all(g.get("expected") and g["flink_version"] == line for g in graphs)
    for r in status:
        assert (r["status"] == "captured") == bool(r["graph_ids"]), r
        if r["status"] != "captured":
            assert r["message"], r
    captured = [r for r in status if r["status"] == "captured"]
    assert len(captured) >= 0.75 * len(status)


def test_named_hash_partitioner_is_hash_with_flinks_ship_strategy_name():
    """SQL jobs' keyed exchanges (BinaryHashPartitioner) arrive as ``HASH[<fields>]``: accepted,
    never chained, ALL_TO_ALL, and the job edge keeps the name Flink gives it."""
    from udfs.compute.one_graph import compute_one
    from udfs.spec.contract import ContractError, parse_graph

    def graph(partitioner: str) -> dict:
        return {"graph_id": "h", "nodes": [{"id": 1, "name": "Source: S", "parallelism": 2},
                                           {"id": 2, "name": "Agg", "parallelism": 2}],
                "edges": [{"source": 1, "target": 2, "partitioner": partitioner}]}

    _, _, vertices, edges = compute_one(graph("HASH[word,day]"))
    assert len(vertices) == 2
    assert edges[["ship_strategy", "distribution_pattern"]].values.tolist() == [["HASH[word,day]", "ALL_TO_ALL"]]
    with pytest.raises(ContractError, match="UNKNOWN_ENUM|expected one of") as e:
        parse_graph(graph("HASH[word"))
    assert e.value.code == "UNKNOWN_ENUM"
