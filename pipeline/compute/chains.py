"""Chains as connected components of the chainable edges (GraphFrames), and their check.

Flink chains an edge only into a node with exactly one input, so the chainable edges
form a forest whose roots are the chain heads; its connected components are the chains.
``graphframes`` (the default) runs GraphFrames' ``connectedComponents`` on them;
``dataframe`` finds the same components by pointer jumping on plain Spark DataFrames --
every node points at its chainable parent, and each round replaces the pointer by the
parent's pointer, so a chain of length L needs log2(L) rounds, each one join over the
nodes that have not reached their root yet (the frontier). Both give the same tables
(``tests/test_chains.py``); ``docs/chains.md`` says what each costs.

Long chains. GraphX's components (the default algorithm) run one Pregel iteration per
link of the longest chain: a 300-operator chain cost minutes, a 20,000-operator one never
finished. The createChain walk of the per-graph stage has already placed every operator under its chain
head, so GraphFrames gets the chainable edges PLUS one shortcut edge head -> member for
every member at chain index 3 or more. If the walk is right, each shortcut lies inside a
chain: the components are unchanged and every member is at most two edges from its head,
so GraphX converges in a few iterations whatever the chains' length
(``chain_rounds`` in the run summary counts them).

Why this is still a check of the walk, not an echo of it. Shortcuts only ever ADD edges,
so every component of the input is a union of true chains (components of the chainable
edges alone); roots are taken from the chainable edges alone (a member without a chainable
in-edge), never from the shortcuts. Then, for each way the walk can be wrong:

- a member placed under the head of ANOTHER chain: its shortcut merges two true chains
  into one component with two roots; each member then gets two root rows, and
  :func:`walk_disagreements` sees more component members than walk members;
  (a member without a shortcut keeps its true root, which differs from the walk's head);
- a chain the walk CUT in two (a chainable edge between two of its chains): the edge is in
  the input, so the component holds both parts under one root, and the second part's
  head disagrees with it;
- a head that is not the chain's root, or a member on no chainable edge at all: the root
  is computed from the chainable edges and differs, or the node has no root row, or it
  adds a second root to the component it joins;
- a shortcut the walk failed to emit costs iterations, never correctness.

What it does not catch, as before the shortcuts: a wrong chainable flag on an edge (the
walk and the chain_edge rows come from the same rules; the known-answer tests check
those), and the fingerprint's ~2^-62 chance of a collision. A wrong walk can make the
input's diameter long again (missing shortcuts), which slows the step but still ends in
a disagreement row. Without the walk's shortcuts (``shortcuts=None``, as tests/test_chains.py
calls it), GraphFrames runs on the chainable edges alone, one GraphX iteration per link.
"""

from __future__ import annotations

import re
import uuid
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipeline.session import SetupError, import_graphframes, local_frame
from pipeline.settings import Settings


class ChainEngineError(SetupError):
    """The chains engine cannot run (unknown name, GraphFrames missing): the CLI says so in one line."""


def _pointer_jumping(chain_edges: DataFrame) -> tuple[DataFrame, int]:
    # Frontier: nodes whose root is not known yet, with their current pointer.
    frontier = chain_edges.select("graph_id", F.col("target").alias("node_id"), F.col("source").alias("ptr"))
    frontier = frontier.localCheckpoint(eager=True)
    resolved: list[DataFrame] = []
    rounds = 0
    while frontier.take(1):
        rounds += 1
        lookup = frontier.select(
            "graph_id", F.col("node_id").alias("ptr"), F.col("ptr").alias("next"), F.lit(False).alias("done")
        )
        for r in resolved:
            lookup = lookup.unionByName(
                r.select(
                    "graph_id", F.col("node_id").alias("ptr"), F.col("root").alias("next"), F.lit(True).alias("done")
                )
            )
        # No lookup row: the pointer is a root (it never had a chainable parent).
        step = frontier.join(lookup, ["graph_id", "ptr"], "left").localCheckpoint(eager=True)
        settled = step.where(F.col("next").isNull() | F.col("done")).select(
            "graph_id", "node_id", F.coalesce(F.when(F.col("done"), F.col("next")), F.col("ptr")).alias("root")
        )
        resolved.append(settled)
        frontier = step.where(F.col("next").isNotNull() & ~F.col("done")).select(
            "graph_id", "node_id", F.col("next").alias("ptr")
        )
    out = local_frame(chain_edges.sparkSession, [], "graph_id string, node_id int, root int")
    for r in resolved:
        out = out.unionByName(r)
    return out, rounds


@contextmanager
def _session_conf(spark: SparkSession, conf: Mapping[str, Any]) -> Iterator[None]:
    """Spark SQL confs set for the block, the session's own restored after it."""
    previous = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, str(v))
    try:
        yield
    finally:
        for k, v in previous.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


# A GraphFrames vertex id packs (graph, node) into one long: the graph's index in the high
# 32 bits and the node id (a Java int, shifted to be non-negative) in the low 32 bits.
# Long ids let connectedComponents skip its own id-indexing pass over string ids.
_NODE_OFFSET = 2**31


def shortcut_member(in_vertex: Column, is_chain_head: Column, chain_index: Column) -> Column:
    """Whether an operator gets a shortcut edge from its head: a member the walk placed at
    chain index 3 or more.

    A member's chain index is its depth below the head plus the head's own index (1, or 0
    before Flink 1.12), so members at index <= 2 are at most two chainable edges from their
    head already: every member ends up within two edges of its head (the chain's diameter
    is at most 4), with one extra edge per member deeper than that -- 13,800 extra edges on
    the 2,750 golden graphs' 41,800 members instead of 38,800 with index >= 2."""
    return in_vertex & ~is_chain_head & (chain_index > 2)


def walk_shortcuts(operators: DataFrame) -> DataFrame:
    """(graph_id, head, node_id) for every operator of the walk's rows that gets a shortcut
    (:func:`shortcut_member`)."""
    member = shortcut_member(F.col("in_vertex_operator_ids"), F.col("is_chain_head"), F.col("chain_index"))
    return operators.where(member).select("graph_id", F.col("chain_head_node_id").alias("head"), "node_id")


# Warnings GraphFrames 0.8.2's Python wrapper raises from PySpark 3.4+ on every call (it
# builds DataFrames from an SQLContext): not ours to fix, and nothing a user can act on.
_WRAPPER_WARNINGS = ("DataFrame.sql_ctx is an internal property", "DataFrame constructor is internal")

# The Spark job that ends each iteration of GraphFrames' connected components, by the call
# site Spark names its stage after: GraphX's Pregel tests for messages (``isEmpty``) once
# per iteration, GraphFrames' own algorithm sums the min neighbours (``first``) once per
# iteration and once before the first.
_ITERATION_STAGES = ("isEmpty at Pregel.scala", "first at ConnectedComponents.scala")


def _iterations(spark: SparkSession, group: str, before: set[int] | None = None) -> int:
    """The iterations GraphFrames ran under job group ``group`` (jobs not in ``before``), from
    Spark's status tracker."""
    tracker = spark.sparkContext.statusTracker()
    names = set()
    for job_id in set(tracker.getJobIdsForGroup(group)) - (before or set()):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds if job else ():
            stage = tracker.getStageInfo(stage_id)
            if stage is not None and stage.name.startswith(_ITERATION_STAGES):
                names.add(job_id)
    return len(names)


def _connected_components(
    graphframes: Any, ids: DataFrame, edges: DataFrame, settings: Settings
) -> tuple[DataFrame, int]:
    """GraphFrames' connected components and the iterations it ran. They run eagerly inside
    connectedComponents(), several small Spark jobs each, counted by their job group: the
    caller's when one is set (a notebook's or a scheduler's, whose cancelJobGroup must reach
    these jobs too), else one of our own that is taken off again afterwards.
    ``graphframes_spark_conf`` applies to those jobs only."""
    spark = ids.sparkSession
    conf = settings.chains
    sc = spark.sparkContext
    caller = sc.getLocalProperty("spark.jobGroup.id")
    group = caller or f"flink-jobgraph-chains-{uuid.uuid4().hex[:8]}"
    before = set(sc.statusTracker().getJobIdsForGroup(group)) if caller else set()
    with _session_conf(spark, dict(conf.graphframes_spark_conf)), warnings.catch_warnings():
        for message in _WRAPPER_WARNINGS:
            warnings.filterwarnings("ignore", message=re.escape(message), category=UserWarning)
        if caller is None:
            sc.setJobGroup(group, "chains: GraphFrames connected components")
        try:
            cc = graphframes.GraphFrame(ids, edges).connectedComponents(
                algorithm=conf.graphframes_algorithm,
                checkpointInterval=conf.graphframes_checkpoint_interval,
                broadcastThreshold=conf.graphframes_broadcast_threshold,
            )
        finally:
            if caller is None:
                sc.setLocalProperty("spark.jobGroup.id", None)
                sc.setLocalProperty("spark.job.description", None)
    return cc, _iterations(spark, group, before)


def _graphframes(
    chain_edges: DataFrame, settings: Settings, shortcuts: DataFrame | None, graph_ids: DataFrame | None
) -> tuple[DataFrame, int]:
    spark = chain_edges.sparkSession
    graphframes = import_graphframes(spark, settings)
    graph_index = (
        (graph_ids if graph_ids is not None else chain_edges.select("graph_id").distinct())
        .withColumn("gidx", F.row_number().over(Window.orderBy("graph_id")).cast("long"))
        .localCheckpoint(eager=True)
    )
    by_graph = F.broadcast(graph_index)

    def vid(graph_col: str, node_col: str):
        return F.col(graph_col) * F.lit(2**32) + F.col(node_col).cast("long") + F.lit(_NODE_OFFSET)

    e = (
        chain_edges.join(by_graph, "graph_id")
        .select(vid("gidx", "source").alias("src"), vid("gidx", "target").alias("dst"))
        .localCheckpoint(eager=True)
    )
    gf_edges = e
    if shortcuts is not None:
        # A graph the walk placed operators in but with no chainable edge has no gidx: its
        # members then have no root here, and walk_disagreements reports the graph.
        indexed = shortcuts.join(by_graph, "graph_id")
        gf_edges = e.unionByName(
            indexed.select(vid("gidx", "head").alias("src"), vid("gidx", "node_id").alias("dst"))
        ).localCheckpoint(eager=True)
    # Only nodes on a chainable edge: every other node is a chain of its own (its own root).
    # The vertices are bare ids; graph and node come back from an id by arithmetic.
    ids = gf_edges.select(F.col("src").alias("id")).union(gf_edges.select(F.col("dst").alias("id"))).distinct()
    cc, iterations = _connected_components(graphframes, ids, gf_edges, settings)

    def node_of(col: str):
        return (F.col(col) % F.lit(2**32) - F.lit(_NODE_OFFSET)).cast("int")

    # The component is named by its smallest vertex id; Flink names a chain by its head,
    # the one member without a chainable in-edge (in-degree <= 1 makes each component a
    # tree). Roots come from the chainable edges alone, never from the walk's shortcuts: a
    # component holding two roots (a shortcut joined two chains) gives each member two rows.
    roots = cc.join(e.select(F.col("dst").alias("id")), "id", "left_anti").select(
        "component", node_of("id").alias("root")
    )
    by_index = F.broadcast(graph_index.withColumnRenamed("gidx", "_gidx"))
    named = cc.join(roots, "component").join(by_index, F.col("_gidx") == F.shiftright(F.col("id"), 32))
    return named.select("graph_id", node_of("id").alias("node_id"), "root"), iterations


def member_roots(
    chain_edges: DataFrame,
    settings: Settings,
    shortcuts: DataFrame | None = None,
    graph_ids: DataFrame | None = None,
) -> tuple[DataFrame, int]:
    """(graph_id, node_id, root) for at least every node with a chainable in-edge (every
    other node is its own root), from ``chain_edges`` (graph_id, source, target); and the
    rounds (pointer-jumping rounds, or GraphFrames' iterations).

    ``shortcuts`` (graph_id, head, node_id: :func:`walk_shortcuts` of the walk's operator
    rows) let GraphFrames run on the chainable edges plus the walk's head-to-member
    shortcuts (module docstring): the same components when the walk is right, in a constant
    number of iterations whatever the chains' length. ``graph_ids``: the distinct graph_ids
    of ``chain_edges``, when known (no pass over the edges to find them).
    """
    engine = settings.chains.engine
    if engine == "dataframe":
        return _pointer_jumping(chain_edges)
    if engine == "graphframes":
        return _graphframes(chain_edges, settings, shortcuts, graph_ids)
    raise ChainEngineError(f"unknown chains.engine {engine!r}; use dataframe or graphframes")


def _pair_terms(node: Column, head: Column) -> tuple[Column, Column]:
    """Two independent 31-bit hashes of a (node, head) pair: their sums over a graph cannot
    overflow a long (which ANSI mode would reject)."""
    return (
        F.pmod(F.xxhash64(node, head), F.lit(2**31)),
        F.pmod(F.xxhash64(F.lit("chains"), node, head), F.lit(2**31)),
    )


def walk_member(in_vertex: Column, is_chain_head: Column) -> Column:
    """An operator the walk placed below a chain head inside a JobVertex."""
    return in_vertex & ~is_chain_head


def walk_fingerprint(node: Column, head: Column, member: Column) -> list[Column]:
    """Aggregates over one graph's operator rows: its walk members (``member``), and the two
    hash sums of their (node, chain head) pairs (``members``, ``h1``, ``h2``), so that a
    caller's own pass over the rows can compute the walk's side of :func:`walk_disagreements`.
    A graph without members must be left out (members 0)."""
    t1, t2 = _pair_terms(node, head)
    return [
        F.count(F.when(member, F.lit(1))).alias("members"),
        F.sum(F.when(member, t1)).alias("h1"),
        F.sum(F.when(member, t2)).alias("h2"),
    ]


def walk_disagreements(operators: DataFrame | None, roots: DataFrame, walk: DataFrame | None = None) -> DataFrame:
    """Graphs whose chains, as the createChain walk built them, are not exactly the connected
    components of the chainable edges the walk follows (``chain_head_node_id`` of each
    operator inside a JobVertex vs the root of its component).

    Both sides are reduced to one row per graph before they meet: the number of non-head
    members and two independent sums of 31-bit hashes of their (node, head) pairs. A graph
    differs iff the sets of pairs differ (up to a ~2^-62 chance of both sums agreeing), and
    the aggregation shuffles one row per graph and partition instead of a row per node.
    ``walk``: the walk's side already reduced (graph_id, members, h1, h2; graphs with
    members only, from :func:`walk_fingerprint`), instead of ``operators``.
    """
    if walk is None:
        member = walk_member(F.col("in_vertex_operator_ids"), F.col("is_chain_head"))
        walk = (
            operators.groupBy("graph_id")
            .agg(*walk_fingerprint(F.col("node_id"), F.col("chain_head_node_id"), member))
            .where(F.col("members") > 0)
        )
    found = (
        roots.where(F.col("root") != F.col("node_id"))
        .groupBy("graph_id")
        .agg(*walk_fingerprint(F.col("node_id"), F.col("root"), F.lit(True)))
    )
    joined = walk.alias("w").join(found.alias("c"), "graph_id", "full_outer")
    differs = ~(
        (F.col("w.members") == F.col("c.members")) & (F.col("w.h1") == F.col("c.h1")) & (F.col("w.h2") == F.col("c.h2"))
    )
    return joined.where(differs.isNull() | differs).select(
        "graph_id",
        F.coalesce(F.col("w.members"), F.lit(0)).alias("walk_members"),
        F.coalesce(F.col("c.members"), F.lit(0)).alias("component_members"),
    )
