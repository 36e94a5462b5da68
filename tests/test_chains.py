"""Chains as connected components of the chainable edges, on real GraphFrames and on the
pointer-jumping engine, against hand-derived roots.

Each component is a tree (a chainable edge needs a target with one input), and its root,
the member without a chainable in-edge, is the chain head. The graphs reuse node ids
across graph_ids and use Java's int extremes, since GraphFrames sees (graph, node) packed
into one long.
"""

from __future__ import annotations

import copy

import pytest

from pipeline.chains import chain_components

INT_MIN, INT_MAX = -(2**31), 2**31 - 1

# graph_id -> (node ids, chainable edges, non-chainable edges, expected root of every node)
CASES = {
    # 1 -> 2 -> ... -> 40: one long chain (pointer jumping needs log2(40) rounds)
    "long-chain": (list(range(1, 41)), [(i, i + 1) for i in range(1, 40)], [], {i: 1 for i in range(1, 41)}),
    # a fan-out tree under 5, a second chain 9 -> 3 cut from it by a non-chainable edge, a loner 7
    "tree": (
        [5, 6, 8, 4, 9, 3, 7],
        [(5, 6), (5, 8), (8, 4), (9, 3)],
        [(4, 9), (6, 7)],
        {5: 5, 6: 5, 8: 5, 4: 5, 9: 9, 3: 9, 7: 7},
    ),
    # same ids as "tree", other shape: only the graph_id tells them apart
    "tree-same-ids": ([5, 6, 8, 4, 9, 3, 7], [(3, 4)], [(5, 3)], {5: 5, 6: 6, 8: 8, 4: 3, 9: 9, 3: 3, 7: 7}),
    # Java int extremes and negative ids
    "extremes": (
        [INT_MIN, -1, 0, INT_MAX],
        [(INT_MAX, INT_MIN), (INT_MIN, -1)],
        [(-1, 0)],
        {INT_MAX: INT_MAX, INT_MIN: INT_MAX, -1: INT_MAX, 0: 0},
    ),
    # nothing chains
    "no-chains": ([1, 2], [], [(1, 2)], {1: 1, 2: 2}),
}


def _frames(spark):
    nodes, edges = [], []
    for gid, (ids, chained, other, _) in CASES.items():
        nodes += [(gid, n) for n in ids]
        edges += [(gid, s, t, True) for s, t in chained] + [(gid, s, t, False) for s, t in other]
    return (
        spark.createDataFrame(nodes, "graph_id string, node_id int"),
        spark.createDataFrame(edges, "graph_id string, source int, target int, chainable boolean"),
    )


@pytest.mark.parametrize(
    "engine, algorithm", [("graphframes", "graphx"), ("graphframes", "graphframes"), ("dataframe", None)]
)
def test_chain_roots(spark, settings, engine, algorithm):
    nodes, edges = _frames(spark)
    conf = copy.deepcopy(settings)
    conf["chains"]["engine"] = engine
    conf["chains"]["graphframes_algorithm"] = algorithm
    conf["chains"]["graphframes_spark_conf"] = {"spark.sql.shuffle.partitions": 1, "spark.sql.adaptive.enabled": False}
    before = {k: spark.conf.get(k) for k in conf["chains"]["graphframes_spark_conf"]}
    comps, rounds = chain_components(nodes, edges, conf)
    # the confs GraphFrames ran with are the session's own again
    assert {k: spark.conf.get(k) for k in before} == before
    got = {(r.graph_id, r.node_id): r.chain_component for r in comps.collect()}
    expected = {(gid, n): root for gid, case in CASES.items() for n, root in case[3].items()}
    assert got == expected
    assert comps.count() == len(expected)  # one row per node, no duplicates
    if engine == "dataframe":
        assert rounds == 6  # ceil(log2(39)) + 1 rounds for the 40-node chain


def test_graphframes_is_the_default_engine(settings):
    assert settings["chains"]["engine"] == "graphframes"
    assert settings["chains"]["graphframes_algorithm"] == "graphx"


def test_unknown_engine_is_a_one_line_cli_error(spark, tmp_path, capsys):
    from pipeline.cli import main

    from .conftest import ROOT

    code = main(
        [
            "compute",
            "--input",
            str(ROOT / "samples" / "wordcount.json"),
            "--output",
            str(tmp_path / "o"),
            "--quiet",
            "--set",
            "chains.engine=bogus",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1] == "flink-jobgraph: unknown chains.engine 'bogus'; use dataframe or graphframes"


def test_walk_disagreements_finds_exactly_the_graphs_whose_chains_differ(spark):
    """The fused executor's chain check: operators as the walk placed them vs component roots."""
    from pipeline.chains import walk_disagreements

    # (graph, node, chain head, is head, inside a vertex); roots: (graph, node, root)
    ops = [
        ("same", 1, 1, True, True), ("same", 2, 1, False, True), ("same", 3, 1, False, True),
        ("same", 4, 4, True, True),
        ("chained-src", 10, 11, False, False), ("chained-src", 11, 11, True, True),
        ("chained-src", 12, 11, False, True),
        ("moved", 1, 1, True, True), ("moved", 2, 1, False, True), ("moved", 3, 3, True, True),
        ("split", 1, 1, True, True), ("split", 2, 1, False, True), ("split", 3, 1, False, True),
        ("walk-only", 1, 1, True, True), ("walk-only", 2, 1, False, True),
        ("cc-only", 1, 1, True, True), ("cc-only", 2, 2, True, True),
    ]  # fmt: skip
    roots = [
        ("same", 1, 1), ("same", 2, 1), ("same", 3, 1),
        ("chained-src", 11, 11), ("chained-src", 12, 11),
        ("moved", 1, 1), ("moved", 2, 1), ("moved", 3, 1),  # the walk put 3 in a chain of its own
        ("split", 1, 1), ("split", 2, 1), ("split", 3, 2),  # 3's root differs
        ("cc-only", 1, 1), ("cc-only", 2, 1),  # components chain 1 -> 2, the walk did not
    ]  # fmt: skip
    operators = spark.createDataFrame(
        ops,
        "graph_id string, node_id int, chain_head_node_id int, is_chain_head boolean, in_vertex_operator_ids boolean",
    )
    found = walk_disagreements(operators, spark.createDataFrame(roots, "graph_id string, node_id int, root int"))
    got = {r["graph_id"]: (r["walk_members"], r["component_members"]) for r in found.collect()}
    assert got == {"moved": (1, 2), "split": (2, 2), "walk-only": (1, 0), "cc-only": (0, 1)}
