"""Chains as connected components of the chainable edges, on real GraphFrames and on the
pointer-jumping engine, against hand-derived roots.

Each component is a tree (a chainable edge needs a target with one input), and its root,
the member without a chainable in-edge, is the chain head. The graphs reuse node ids
across graph_ids and use Java's int extremes, since GraphFrames sees (graph, node) packed
into one long.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pipeline.compute.chains import member_roots

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


def chain_components(nodes, edges, settings):
    """(graph_id, node_id, chain_component = root node id) for every node, and the rounds."""
    roots, rounds = member_roots(edges.where("chainable").select("graph_id", "source", "target"), settings)
    comps = nodes.select("graph_id", "node_id").join(roots, ["graph_id", "node_id"], "left")
    return comps.select("graph_id", "node_id", F.coalesce("root", "node_id").alias("chain_component")), rounds


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
    conf = settings.with_overrides(
        {
            "chains.engine": engine,
            **({"chains.graphframes_algorithm": algorithm} if algorithm else {}),
            "chains.graphframes_spark_conf": {"spark.sql.shuffle.partitions": 1, "spark.sql.adaptive.enabled": False},
        }
    )
    before = {k: spark.conf.get(k) for k, _ in conf.chains.graphframes_spark_conf}
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
    assert settings.chains.engine == "graphframes"
    assert settings.chains.graphframes_algorithm == "graphx"


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
    from pipeline.compute.chains import walk_disagreements

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


# --- long chains: GraphFrames on the chainable edges plus the walk's shortcuts ----------


def _chain_graph(length: int) -> dict:
    """source -> length-1 forward maps, all at parallelism 2: one chain of ``length`` operators."""
    nodes = [{"id": 1, "name": "Source: gen", "parallelism": 2, "is_source": True}]
    nodes += [{"id": i, "name": f"Map {i}", "parallelism": 2} for i in range(2, length + 1)]
    edges = [{"source": i, "target": i + 1, "partitioner": "FORWARD"} for i in range(1, length)]
    return {
        "graph_id": f"chain-{length}",
        "job_name": f"chain-{length}",
        "flink_version": "1.20",
        "chaining_enabled": True,
        "nodes": nodes,
        "edges": edges,
    }


def _walk_operators(spark, heads: dict[str, dict[int, int]]):
    """Operator rows as the fused walk emits them: graph -> {node: chain head}; the head has
    chain index 0, the other members 1, 2, ... from the highest node id down (so the
    members that matter below get index 2 or more, i.e. a shortcut to their head)."""
    rows = []
    for gid, placed in heads.items():
        index: dict[int, int] = {}
        for node in sorted(placed, key=lambda n: (placed[n] != n, -n)):
            head = placed[node]
            rows.append((gid, node, head, index.get(head, 0), node == head, True))
            index[head] = index.get(head, 0) + 1
    return spark.createDataFrame(
        rows,
        "graph_id string, node_id int, chain_head_node_id int, chain_index int, is_chain_head boolean, "
        "in_vertex_operator_ids boolean",
    )


def test_long_chains_take_a_log_bounded_number_of_graphframes_iterations(spark, settings):
    """The default engine on chains of 10, 1,000 and 20,000 operators, with the walk's heads:
    exact roots, and GraphFrames' iterations (counted from Spark's status tracker) stay
    within a log2 bound of the longest chain. Without the shortcuts graphx needs one
    iteration per link, which the 1,000 chain would show (and the 20,000 one not finish)."""
    import math

    from pipeline.compute.chains import member_roots, walk_shortcuts

    assert settings.chains.engine == "graphframes"
    for length in (10, 1000, 20000):
        edges = spark.createDataFrame(
            [("g", i, i + 1) for i in range(1, length)] + [("h", 5, 6)], "graph_id string, source int, target int"
        )
        heads = {"g": {i: 1 for i in range(1, length + 1)}, "h": {5: 5, 6: 5}}
        roots, iterations = member_roots(edges, settings, walk_shortcuts(_walk_operators(spark, heads)))
        got = {(r.graph_id, r.node_id): r.root for r in roots.collect()}
        assert got == {("g", i): 1 for i in range(1, length + 1)} | {("h", 5): 5, ("h", 6): 5}
        assert 1 <= iterations <= 2 * math.log2(length) + 2, (length, iterations)


def test_a_wrong_walk_head_cannot_hide_behind_its_shortcut(spark, settings):
    """The shortcuts come from the walk being checked, so each kind of wrong placement must
    still show as a disagreement: a member moved into another chain (its shortcut joins two
    components, which then hold two roots), a chain the walk cut in two (the chainable edge
    still joins them), a head that is not the root, and a walk-only member."""
    from pipeline.compute.chains import member_roots, walk_disagreements, walk_shortcuts

    # true chains: 1 -> 2 -> 3 -> 4 and 10 -> 11 -> 12 in every graph
    chained = [(1, 2), (2, 3), (3, 4), (10, 11), (11, 12)]
    right = {1: 1, 2: 1, 3: 1, 4: 1, 10: 10, 11: 10, 12: 10}
    walks = {
        "right": right,
        "moved": right | {4: 10},  # 4 placed in 10's chain
        "cut": right | {3: 3, 4: 3},  # the walk started a new chain at 3
        "wrong-head": right | {1: 2, 2: 2, 3: 2, 4: 2},  # 2 named head of 1's chain
        "extra": right | {20: 10},  # 20 is on no chainable edge
    }
    edges = spark.createDataFrame(
        [(g, s, t) for g in walks for s, t in chained], "graph_id string, source int, target int"
    )
    operators = _walk_operators(spark, walks)
    roots, _ = member_roots(edges, settings, walk_shortcuts(operators))
    flagged = {r.graph_id for r in walk_disagreements(operators, roots).collect()}
    assert flagged == {"moved", "cut", "wrong-head", "extra"}


def test_a_20000_operator_chain_through_the_default_pipeline(spark, settings, tmp_path):
    """A spec graph with a 20,000-operator chain beside known-answer graphs, one default
    compute: the chain is one JobVertex of 20,000 operators, the known answers stay exact,
    and GraphFrames ran a handful of iterations (the run summary's chain_rounds)."""
    import gzip
    import json
    import math

    from devtools.conformance import compare_tables, read_vector_file
    from pipeline.compute.run import Progress, compute

    from .conftest import GOLDEN

    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "chain.jsonl").write_text(json.dumps(_chain_graph(20000)) + "\n")
    known = []
    for name in ("flink-1.9.jsonl.gz", "flink-2.3.jsonl.gz"):
        graphs = list(read_vector_file(GOLDEN / name))[:40]
        known += graphs
        with gzip.open(inp / name, "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(g) + "\n" for g in graphs)
    out = str(tmp_path / "out")
    summary = compute(spark, str(inp), out, settings, Progress(enabled=False))
    assert summary.chains_engine == "graphframes"
    assert summary.graphs_rejected == 0
    assert 1 <= summary.chain_rounds <= 2 * math.log2(20000) + 2

    vertices = spark.read.format("delta").load(f"{out}/job_vertices").where("graph_id = 'chain-20000'").collect()
    assert len(vertices) == 1
    assert vertices[0].head_node_id == 1 and len(vertices[0].operator_ids) == 20000
    operators = spark.read.format("delta").load(f"{out}/operators").where("graph_id = 'chain-20000'")
    assert operators.where("chain_head_node_id = 1").count() == 20000

    report = compare_tables(spark, out, known)
    assert report.graphs == len(known) == 80
    assert report.ok(), report.table() + "\n" + "\n".join(report.mismatches)


def test_a_chain_of_40000_operators_is_one_vertex_named_by_the_whole_chain():
    """The per-graph Python of one 40,000-operator chain: one job vertex whose name is the
    whole chain's (Flink's createChainedName at the head). How its CPU time scales with the
    length (two steps were once quadratic) is measured by bench/chain_scaling.py, not here."""
    from udfs.compute.one_graph import compute_one

    length = 40000
    _, operators, vertices, _ = compute_one(_chain_graph(length))
    assert len(vertices) == 1 and len(operators) == length
    want = " -> ".join(["Source: gen", *(f"Map {i}" for i in range(2, length + 1))])
    assert vertices["name"].iloc[0] == want


def test_the_runs_one_pass_gives_the_walks_side_of_the_chain_check(spark):
    """pipeline.compute.run counts every kind of row in one pass, and that pass also reduces the
    walk's operators to the chain check's per-graph side: it must equal what
    walk_disagreements computes from the operator rows, and a wrong root must still be found
    through it. Real rows of the per-graph stage, from the bundled samples."""
    from pipeline.compute import read as read_spec
    from pipeline.compute import stage as fused
    from pipeline.compute.chains import walk_disagreements, walk_shortcuts
    from pipeline.compute.row_codec import FUSED_ROWS
    from pipeline.compute.run import chain_inputs, count_per_graph, walk_side

    from .conftest import ROOT

    rows = fused.rows_from_texts(read_spec.read_texts(spark, str(ROOT / "samples"))).localCheckpoint(eager=True)
    operators = FUSED_ROWS.rows(rows, "operator")
    one_pass = walk_side(count_per_graph(rows))
    members = operators.where("in_vertex_operator_ids AND NOT is_chain_head")
    assert one_pass.count() == members.select("graph_id").distinct().count() > 10
    # the components as the walk says, and once with one member moved to its own root
    roots = operators.where("in_vertex_operator_ids").select(
        "graph_id", "node_id", F.col("chain_head_node_id").alias("root")
    )
    victim = members.orderBy("graph_id", "node_id").first()
    wrong = roots.withColumn(
        "root",
        F.when(
            (F.col("graph_id") == victim.graph_id) & (F.col("node_id") == victim.node_id), F.col("node_id")
        ).otherwise(F.col("root")),
    )
    for walk in (None, one_pass):
        assert walk_disagreements(operators, roots, walk).count() == 0
        found = walk_disagreements(operators, wrong, walk).collect()
        assert [r.graph_id for r in found] == [victim.graph_id]
    # the chains step's input, also read in one pass: the chain_edge rows and the shortcuts
    # walk_shortcuts takes from the operator rows
    inputs = chain_inputs(rows)
    edges = FUSED_ROWS.rows(rows, "chain_edge").select("graph_id", "source_node_id", "target_node_id")
    assert sorted(inputs.where("NOT shortcut").drop("shortcut").collect()) == sorted(edges.collect())
    shortcuts = inputs.where("shortcut").drop("shortcut").collect()
    assert shortcuts and sorted(shortcuts) == sorted(walk_shortcuts(operators).collect())
