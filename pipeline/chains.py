"""Step 6: chains as connected components of the chainable edges.

Flink chains an edge only into a node with exactly one input, so the chainable edges
form a forest whose roots are the chain heads. Connected components of that forest are
the chains. ``dataframe`` (the default engine) finds them by pointer jumping on Spark
DataFrames -- every node points at its chainable parent, and each round replaces the
pointer by the parent's pointer, so a chain of length L needs log2(L) rounds, each one
join over the nodes that have not reached their root yet (the frontier). ``graphframes``
runs GraphFrames' ``connectedComponents`` on the same edges instead; it needs the
GraphFrames JVM core on Spark's classpath.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


class ChainEngineError(RuntimeError):
    pass


def _pointer_jumping(nodes: DataFrame, chain_edges: DataFrame) -> tuple[DataFrame, int]:
    parent = (
        nodes.select("graph_id", "node_id")
        .join(
            chain_edges.select("graph_id", F.col("target").alias("node_id"), F.col("source").alias("parent")),
            ["graph_id", "node_id"],
            "left",
        )
        .withColumn("parent", F.coalesce("parent", "node_id"))
        .localCheckpoint(eager=True)
    )
    done = parent.where(F.col("parent") == F.col("node_id")).select(
        "graph_id", "node_id", F.col("parent").alias("root")
    )
    frontier = parent.where(F.col("parent") != F.col("node_id")).localCheckpoint(eager=True)
    roots = [done]
    rounds = 0
    while frontier.take(1):
        rounds += 1
        lookup = parent.select("graph_id", F.col("node_id").alias("parent"), F.col("parent").alias("grand"))
        step = frontier.join(lookup, ["graph_id", "parent"]).select(
            "graph_id", "node_id", F.col("grand").alias("parent")
        )
        step = step.localCheckpoint(eager=True)
        # A node whose pointer stops moving has reached its root.
        settled = step.join(lookup.where(F.col("grand") == F.col("parent")), ["graph_id", "parent"], "left_semi")
        roots.append(settled.select("graph_id", "node_id", F.col("parent").alias("root")))
        frontier = step.join(settled, ["graph_id", "node_id"], "left_anti").localCheckpoint(eager=True)
        parent = (
            parent.join(step.withColumnRenamed("parent", "p2"), ["graph_id", "node_id"], "left")
            .select("graph_id", "node_id", F.coalesce("p2", "parent").alias("parent"))
            .localCheckpoint(eager=True)
        )
    out = roots[0]
    for r in roots[1:]:
        out = out.unionByName(r)
    return out, rounds


def _graphframes(nodes: DataFrame, chain_edges: DataFrame) -> tuple[DataFrame, int]:
    try:
        from graphframes import GraphFrame
    except ImportError as e:  # pragma: no cover - the package is a pinned dependency
        raise ChainEngineError(f"graphframes Python package missing: {e}") from e
    spark = nodes.sparkSession
    try:
        spark._jvm.org.graphframes.GraphFramePythonAPI  # noqa: B018 - probes the classpath
        spark._jvm.java.lang.Class.forName("org.graphframes.GraphFramePythonAPI")
    except Exception as e:
        raise ChainEngineError(
            "chains.engine=graphframes needs the GraphFrames JVM core (io.graphframes:graphframes-spark3_2.12) "
            "on Spark's classpath; put the jar in the jars folder, or use chains.engine=dataframe"
        ) from e
    key = F.concat_ws("\u0000", "graph_id", F.col("node_id").cast("string"))
    v = nodes.select(key.alias("id"), "graph_id", "node_id")
    e = chain_edges.select(
        F.concat_ws("\u0000", "graph_id", F.col("source").cast("string")).alias("src"),
        F.concat_ws("\u0000", "graph_id", F.col("target").cast("string")).alias("dst"),
    )
    cc = GraphFrame(v, e).connectedComponents()
    # The component's smallest member id is arbitrary; name it by the forest root instead.
    has_parent = chain_edges.select("graph_id", F.col("target").alias("node_id"))
    roots = cc.join(has_parent, ["graph_id", "node_id"], "left_anti").select(
        "component", F.col("node_id").alias("root")
    )
    return cc.join(roots, "component").select("graph_id", "node_id", "root"), 0


def chain_components(nodes: DataFrame, hashed_edges: DataFrame, engine: str) -> tuple[DataFrame, int]:
    """(graph_id, node_id, chain_component = root node id) for every node, and the rounds."""
    chain_edges = hashed_edges.where("chainable").select("graph_id", "source", "target")
    if engine == "dataframe":
        comps, rounds = _pointer_jumping(nodes, chain_edges)
    elif engine == "graphframes":
        comps, rounds = _graphframes(nodes, chain_edges)
    else:
        raise ChainEngineError(f"unknown chains.engine {engine!r}; use dataframe or graphframes")
    return comps.withColumnRenamed("root", "chain_component"), rounds
