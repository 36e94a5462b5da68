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
    non_roots = chain_edges.select("graph_id", F.col("target").alias("node_id"))
    out = nodes.select("graph_id", "node_id").join(non_roots, ["graph_id", "node_id"], "left_anti")
    out = out.withColumn("root", F.col("node_id"))
    for r in resolved:
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
