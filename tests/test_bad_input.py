"""Bad input: each broken graph gets one graph_errors row with a specific code and a
message a person can act on; the good graphs of the same run are processed normally."""

from __future__ import annotations

import json

import pytest

from pipeline.run import Progress, compute

GOOD = {
    "graph_id": "good",
    "flink_version": "1.20",
    "nodes": [{"id": 1, "name": "Source: A", "parallelism": 2}, {"id": 2, "name": "Map", "parallelism": 2}],
    "edges": [{"source": 1, "target": 2, "partitioner": "REBALANCE"}],
}


def _variant(gid: str, **changes) -> dict:
    g = json.loads(json.dumps(GOOD))
    g["graph_id"] = gid
    g.update(changes)
    return g


BAD = {
    "DANGLING_EDGE": _variant("dangling", edges=[{"source": 1, "target": 9}]),
    "DUPLICATE_NODE_ID": _variant("dup-node", nodes=GOOD["nodes"] + [{"id": 2, "name": "Again", "parallelism": 2}]),
    "CYCLE": _variant(
        "cycle",
        nodes=GOOD["nodes"] + [{"id": 3, "name": "Loop", "parallelism": 2}],
        edges=[{"source": 1, "target": 2}, {"source": 2, "target": 3}, {"source": 3, "target": 2}],
    ),
    "BAD_UID_HASH": _variant("bad-uid-hash", nodes=[{**GOOD["nodes"][0], "uid_hash": "xyz"}, GOOD["nodes"][1]]),
    "DUPLICATE_UID": _variant(
        "dup-uid", nodes=[{**GOOD["nodes"][0], "uid": "same"}, {**GOOD["nodes"][1], "uid": "same"}]
    ),
    "BAD_PARALLELISM": _variant("zero-par", nodes=[GOOD["nodes"][0], {**GOOD["nodes"][1], "parallelism": 0}]),
    "NO_SOURCE": _variant(
        "no-source",
        nodes=[{**GOOD["nodes"][0], "is_source": False}, {**GOOD["nodes"][1], "is_source": False}],
    ),
    "UNKNOWN_ENUM": _variant("bad-enum", edges=[{"source": 1, "target": 2, "partitioner": "ROUND_ROBIN"}]),
    "UNSUPPORTED_VERSION": _variant("old-version", flink_version="1.3"),
    "MISSING_FIELD": _variant("no-name", nodes=[{"id": 1, "parallelism": 1}], edges=[]),
    "FLINK_REJECTED": _variant(
        "hybrid-streaming",
        edges=[{"source": 1, "target": 2, "partitioner": "REBALANCE", "exchange_mode": "HYBRID_FULL"}],
    ),
}


@pytest.fixture(scope="module")
def bad_run(spark, settings, tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    inp = root / "in"
    inp.mkdir()
    with open(inp / "mixed.jsonl", "w") as f:
        f.write(json.dumps(GOOD) + "\n")
        for g in BAD.values():
            f.write(json.dumps(g) + "\n")
        f.write('{"graph_id": "truncated", "nodes": [\n')
    (inp / "dup1.json").write_text(json.dumps(_variant("twice")))
    (inp / "dup2.json").write_text(json.dumps(_variant("twice")))
    out = str(root / "out")
    summary = compute(spark, str(inp), out, settings, Progress(enabled=False))
    errors = {r.graph_id: r for r in spark.read.format("delta").load(f"{out}/graph_errors").collect()}
    processed = {r.graph_id for r in spark.read.format("delta").load(f"{out}/job_vertices").collect()}
    return summary, errors, processed


@pytest.mark.parametrize("code", sorted(BAD))
def test_bad_graph_gets_its_error_code(bad_run, code):
    _, errors, processed = bad_run
    gid = BAD[code]["graph_id"]
    assert gid not in processed
    assert errors[gid].error_code == code
    assert len(errors[gid].message) > 15


def test_specific_messages(bad_run):
    _, errors, _ = bad_run
    assert "target 9" in errors["dangling"].message
    assert "cycle" in errors["cycle"].message
    assert 'Hash collision on user-specified ID "same"' in errors["dup-uid"].message
    assert "ROUND_ROBIN" in errors["bad-enum"].message
    assert "hybrid shuffle mode only supports batch job" in errors["hybrid-streaming"].message
    assert errors["truncated"].error_code == "INVALID_JSON"
    assert errors["twice"].error_code == "DUPLICATE_GRAPH_ID"
    assert "dup1.json" in errors["twice"].message and "dup2.json" in errors["twice"].message


def test_good_graph_processed_and_nothing_dropped(bad_run):
    summary, errors, processed = bad_run
    assert processed == {"good"}
    assert set(errors) == {g["graph_id"] for g in BAD.values()} | {"truncated", "twice"}
    assert summary.graphs_in == len(processed) + len(errors)
