"""Step 5, second executor: StreamGraphHasherV2 as Spark-wide supersteps over all graphs.

Why a second executor: :mod:`pipeline.hashing` hashes each graph inside one grouped
pandas UDF, so a single huge graph is one Python task however big the cluster is. Here
every step is a DataFrame operation over *all* graphs at once, keyed by ``graph_id``:
one superstep per breadth-first level of Flink's hasher queue, then one superstep per
topological layer of the hash propagation, each touching only its frontier and cut from
its lineage (``localCheckpoint``). ``hash_graphs_supersteps`` returns the same
:class:`~pipeline.hashing.HashResult` (same columns, same values) as ``hash_graphs``,
so the two are interchangeable.

The queue as levels. Flink pops sources (sorted by id) first; a popped node is hashed
if it has a uid or all its inputs are hashed, and then enqueues its out-edge targets
(in out-edge order) that are not *visited* (queued or hashed); a node that fails is
un-visited, to be enqueued again by a later parent. Generation L of the queue (ordered,
position p) therefore behaves as follows, and this is what one superstep computes:

* x succeeds iff it has a uid, or every input is hashed in an earlier level or sits in
  level L at a smaller p and succeeds itself (an intra-level dependency: resolved by
  iterating to a fixpoint -- at most 3 rounds on the dev vectors);
* the successes take consecutive hash positions, in level order, after all earlier
  levels' successes (so position = rank of (level, p) among a graph's successes);
* level L+1: for each success n (by p) and each out-edge (by edge_idx) to c, c is
  appended unless it is hashed by the end of level L, or queued in level L after n,
  or already appended; c's place is that of its first appender, (p(n), edge_idx).

This agrees with :func:`udfs.hash_layers.traversal_positions` on every dev vector graph
and on random DAGs (see tests/test_hashing_supersteps.py).

The hash values. Base hashes are murmur3 in a pandas UDF over Arrow batches (uid nodes:
the UTF-8 uid; others: the position, once plus once per hasher-chainable out-edge).
Then a Pregel-style propagation: layer 0 is the uid nodes and the nodes without inputs;
a superstep takes the children of the previous layer, keeps those whose inputs are all
done, and folds the input hashes in in-edge order, ``h = (h * 37) ^ in`` byte by byte,
with Spark SQL higher-order functions on 16-int arrays.

The yielding rule (the one non-local chaining rule) stays per graph, as in the grouped
executor, but only for the few graphs that have a yield-sensitive edge.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipeline.hashing import HashResult
from udfs.graph_arrays import GraphArrays
from udfs.murmur3 import HASH_BYTES, generated_base_hashes, uid_hashes
from udfs.yielding_rule import apply_yielding_rule

KEY = ["graph_id", "node_id"]
_VETO_SCHEMA = "graph_id string, edge_idx int, veto boolean"
_UNREACHABLE = "are never reached from the sources, so Flink's hasher cannot hash them"


@dataclass
class SuperstepCounts:
    """How many Spark supersteps a run took (across all graphs, not per graph)."""

    bfs_levels: int = 0  # queue generations, one superstep each
    fixpoint_rounds: int = 0  # extra join rounds for intra-level dependencies (levels that have any)
    hash_layers: int = 0  # topological layers of the propagation, one superstep each
    per_level_fixpoint: list[int] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.bfs_levels + self.fixpoint_rounds + self.hash_layers


def _log(msg: str) -> None:
    if os.environ.get("SUPERSTEP_DEBUG"):
        print(f"{time.strftime('%X')} {msg}", file=sys.stderr, flush=True)


def _cut(df: DataFrame) -> DataFrame:
    """Materialise ``df`` and cut its lineage: ``localCheckpoint``, then a fresh relation.

    Why the second part: in Spark 3.5 a checkpointed relation keeps metadata of the plan
    it came from (statistics, constraints, partitioning/ordering). A superstep joins the
    previous frontier in twice (the frontier itself, and its successes), so that metadata
    doubles every superstep: optimising level 18 took ~30 s on 40 graphs. Re-wrapping
    the checkpointed rows as a plain relation keeps every superstep's plan constant.
    """
    out = df.localCheckpoint(eager=True)
    try:
        session = out.sparkSession
        fresh = session._jsparkSession.internalCreateDataFrame(
            out._jdf.queryExecution().toRdd(), out._jdf.schema(), False
        )
        return DataFrame(fresh, session)
    except Exception:  # pragma: no cover - not a classic JVM session (e.g. Spark Connect)
        return out


# --- yielding rule -------------------------------------------------------------------


def _veto_one_graph(nodes: pd.DataFrame, edges: pd.DataFrame) -> pd.DataFrame:
    """The yielding-rule vetoes of one graph (only the vetoed edges are returned)."""
    g = GraphArrays.build(nodes, edges)
    e = g.edges
    veto = apply_yielding_rule(
        g, np.asarray(e["chainable_local"], dtype=bool), np.asarray(e["yield_sensitive"], dtype=bool)
    )
    return pd.DataFrame({"graph_id": e["graph_id"][veto], "edge_idx": e["edge_idx"][veto], "veto": True})


def final_edge_flags(nodes: DataFrame, flagged_edges: DataFrame) -> DataFrame:
    """(graph_id, edge_idx, source, target, chainable, chainable_input, hasher_chainable)."""
    sensitive = flagged_edges.where("yield_sensitive").select("graph_id").distinct()
    veto = (
        nodes.join(sensitive, "graph_id", "left_semi")
        .select("graph_id", "node_id", "source_kind")
        .groupBy("graph_id")
        .cogroup(
            flagged_edges.join(sensitive, "graph_id", "left_semi")
            .select("graph_id", "edge_idx", "source", "target", "chainable_local", "yield_sensitive")
            .groupBy("graph_id")
        )
        .applyInPandas(_veto_one_graph, _VETO_SCHEMA)
    )
    ok = ~F.coalesce(F.col("veto"), F.lit(False))
    return flagged_edges.join(veto, ["graph_id", "edge_idx"], "left").select(
        "graph_id",
        "edge_idx",
        "source",
        "target",
        (F.col("chainable_local") & ok).alias("chainable"),
        (F.col("chainable_input") & ok).alias("chainable_input"),
        (F.col("hasher_chainable_local") & ok).alias("hasher_chainable"),
    )


# --- breadth-first levels ------------------------------------------------------------


def _blocked_in_level(frontier: DataFrame, in_edges: DataFrame, hashed: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Frontier nodes that fail on their own, and the intra-level dependencies of the rest.

    An input of x (no uid) is fine if hashed in an earlier level; if it sits in this
    level before x, x depends on it; otherwise (not hashed, and queued after x or not
    queued at all) x fails right away.
    """
    inputs = (
        frontier.where(~F.col("has_uid"))
        .select(*KEY, "p")
        .join(in_edges, KEY)
        .join(
            hashed.select("graph_id", F.col("node_id").alias("input"), F.lit(True).alias("done")),
            ["graph_id", "input"],
            "left",
        )
        .join(
            frontier.select("graph_id", F.col("node_id").alias("input"), F.col("p").alias("p_in")),
            ["graph_id", "input"],
            "left",
        )
        .where(F.col("done").isNull())
    )
    inputs = _cut(inputs)
    earlier = F.col("p_in") < F.col("p")
    blocked = inputs.where(F.col("p_in").isNull() | ~earlier).select(*KEY).distinct()
    deps = inputs.where(earlier).select(*KEY, "input")
    return blocked, deps


def _failed_fixpoint(blocked: DataFrame, deps: DataFrame, counts: SuperstepCounts) -> DataFrame:
    """Close the failures under 'depends on a failed node of the same level'."""
    failed = _cut(blocked)
    rounds = 0
    if deps.take(1):
        while True:
            newly = (
                deps.join(
                    failed.select("graph_id", F.col("node_id").alias("input")), ["graph_id", "input"], "left_semi"
                )
                .select(*KEY)
                .join(failed, KEY, "left_anti")
                .distinct()
            )
            newly = _cut(newly)
            rounds += 1
            if not newly.take(1):
                break
            failed = _cut(failed.unionByName(newly))
    counts.fixpoint_rounds += rounds
    counts.per_level_fixpoint.append(rounds)
    return failed


def _next_level(
    succ: DataFrame, frontier: DataFrame, out_edges: DataFrame, hashed: DataFrame, attrs: DataFrame
) -> DataFrame:
    """Targets the successes append to the queue, in Flink's order (first appender wins)."""
    appended = (
        succ.select(*KEY, F.col("p").alias("parent_p"))
        .join(out_edges, KEY)
        .select("graph_id", F.col("child").alias("node_id"), "parent_p", "edge_idx")
        .join(hashed.select(*KEY), KEY, "left_anti")
        .join(frontier.select(*KEY, F.col("p").alias("p_c")), KEY, "left")
        .where(F.col("p_c").isNull() | (F.col("p_c") < F.col("parent_p")))  # queued after n: still visited
        .groupBy(*KEY)
        .agg(F.min(F.struct("parent_p", "edge_idx")).alias("first"))
    )
    order = Window.partitionBy("graph_id").orderBy(F.col("first.parent_p"), F.col("first.edge_idx"))
    return appended.select(*KEY, (F.row_number().over(order) - 1).alias("p")).join(attrs.select(*KEY, "has_uid"), KEY)


@dataclass
class Traversal:
    hashed: DataFrame  # graph_id, node_id, hash_level, hash_position (reached nodes only)
    frontier_sizes: DataFrame  # graph_id, bfs_levels, frontier_sizes


def bfs_levels(attrs: DataFrame, edges: DataFrame, counts: SuperstepCounts) -> Traversal:
    """Flink's hasher queue, one superstep per generation, over all graphs at once."""
    in_edges = _cut(edges.select("graph_id", F.col("target").alias("node_id"), F.col("source").alias("input")))
    out_edges = _cut(
        edges.select("graph_id", F.col("source").alias("node_id"), F.col("target").alias("child"), "edge_idx")
    )
    by_id = Window.partitionBy("graph_id").orderBy("node_id")
    frontier = _cut(attrs.where("is_source").select(*KEY, (F.row_number().over(by_id) - 1).alias("p"), "has_uid"))
    hashed = _cut(attrs.select(*KEY, F.lit(0).alias("hash_level"), F.lit(0).alias("p")).limit(0))
    sizes: list[DataFrame] = []
    level = 0
    while frontier.take(1):
        counts.bfs_levels += 1
        sizes.append(frontier.groupBy("graph_id").agg(F.count("*").alias("size")).withColumn("level", F.lit(level)))
        blocked, deps = _blocked_in_level(frontier, in_edges, hashed)
        failed = _failed_fixpoint(blocked, deps, counts)
        succ = _cut(frontier.join(failed, KEY, "left_anti").select(*KEY, "p"))
        hashed = _cut(hashed.unionByName(succ.select(*KEY, F.lit(level).alias("hash_level"), "p")))
        frontier = _cut(_next_level(succ, frontier, out_edges, hashed, attrs))
        level += 1
        _log(f"bfs level {level} done")
    by_order = Window.partitionBy("graph_id").orderBy("hash_level", "p")
    hashed = hashed.select(*KEY, "hash_level", (F.row_number().over(by_order) - 1).alias("hash_position"))
    stats = (
        _union(sizes, "graph_id string, size long, level int")
        .groupBy("graph_id")
        .agg(
            F.count("*").alias("bfs_levels"),
            F.sort_array(F.collect_list(F.struct("level", "size"))).alias("s"),
        )
        .select("graph_id", "bfs_levels", F.transform("s", lambda x: x["size"].cast("int")).alias("frontier_sizes"))
    )
    return Traversal(_cut(hashed), _cut(stats))


def _union(frames: list[DataFrame], empty_schema: str) -> DataFrame:
    if not frames:
        from pyspark.sql import SparkSession

        return SparkSession.getActiveSession().createDataFrame([], empty_schema)
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


# --- hash values ---------------------------------------------------------------------


def _base_hashes(position: pd.Series, chainable_outs: pd.Series, uid: pd.Series) -> pd.Series:
    """murmur3 per node of one Arrow batch: of the uid, or of the position (1 + k times)."""
    out = np.zeros((len(position), HASH_BYTES), dtype=np.uint8)
    has_uid = uid.notna().to_numpy()
    if has_uid.any():
        out[has_uid] = uid_hashes(uid[has_uid].tolist())
    gen = ~has_uid
    if gen.any():
        out[gen] = generated_base_hashes(position.to_numpy(np.int64)[gen], chainable_outs.to_numpy(np.int64)[gen])
    return pd.Series(list(out.astype(np.int32)))


def _fold(base: Column, inputs: Column) -> Column:
    """Java's ``hash[j] = (byte) (hash[j] * 37 ^ in[j])`` over inputs in in-edge order."""
    return F.aggregate(
        inputs,
        base,
        lambda acc, x: F.zip_with(acc, x["h"], lambda a, b: (a * 37).bitwiseAND(255).bitwiseXOR(b)),
    )


def _hex(h: Column) -> Column:
    return F.array_join(F.transform(h, lambda b: F.lpad(F.lower(F.hex(b)), 2, "0")), "")


def propagate(nodes: DataFrame, edges: DataFrame, counts: SuperstepCounts) -> tuple[DataFrame, DataFrame]:
    """Pregel-style: returns (graph_id, node_id, h, layer) and per-graph hash_layers.

    ``nodes``: graph_id, node_id, has_uid, base (16 ints). A superstep looks only at the
    children of the last layer; a child is ready once all its inputs are done, which
    happens exactly when its last input is in that layer.
    """
    in_edges = edges.select("graph_id", F.col("target").alias("node_id"), F.col("source").alias("input"), "edge_idx")
    in_edges = _cut(in_edges)
    out_edges = _cut(edges.select("graph_id", F.col("source").alias("node_id"), F.col("target").alias("child")))
    has_inputs = in_edges.select(*KEY).distinct()
    layer0 = nodes.where("has_uid").unionByName(nodes.where(~F.col("has_uid")).join(has_inputs, KEY, "left_anti"))
    frontier = _cut(layer0.select(*KEY, F.col("base").alias("h"), F.lit(0).alias("layer")))
    done = frontier
    generated = nodes.where(~F.col("has_uid")).select(*KEY, "base")
    layer = 0
    while frontier.take(1):
        counts.hash_layers += 1
        layer += 1
        children = (
            frontier.select(*KEY)
            .join(out_edges, KEY)
            .select("graph_id", F.col("child").alias("node_id"))
            .distinct()
            .join(generated, KEY)  # uid nodes are in layer 0 already
        )
        inputs = (
            children.select(*KEY)
            .join(in_edges, KEY)
            .join(done.select("graph_id", F.col("node_id").alias("input"), "h"), ["graph_id", "input"], "left")
            .groupBy(*KEY)
            .agg(
                (F.count("h") == F.count("*")).alias("ready"),
                F.sort_array(F.collect_list(F.struct("edge_idx", "h"))).alias("inputs"),
            )
            .where("ready")
        )
        frontier = _cut(
            children.join(inputs, KEY).select(
                *KEY, _fold(F.col("base"), F.col("inputs")).alias("h"), F.lit(layer).alias("layer")
            )
        )
        done = _cut(done.unionByName(frontier))
        _log(f"hash layer {layer} done")
    layers = done.groupBy("graph_id").agg((F.max("layer") + 1).cast("int").alias("hash_layers"))
    return done, layers


# --- the executor ----------------------------------------------------------------------


def _error_rows(df: DataFrame, code: str, message: Column) -> DataFrame:
    return df.select("graph_id", F.lit(code).alias("error_code"), message.alias("message"))


def run_supersteps(nodes: DataFrame, flagged_edges: DataFrame) -> tuple[HashResult, SuperstepCounts]:
    """The executor, plus how many supersteps it took."""
    counts = SuperstepCounts()
    attrs = _cut(nodes.select(*KEY, "uid", "is_source", "source_kind", F.col("uid").isNotNull().alias("has_uid")))
    edges = _cut(final_edge_flags(attrs, flagged_edges))

    # 1. the queue order
    trav = bfs_levels(attrs, edges, counts)
    missing = attrs.join(trav.hashed, KEY, "left_anti")
    unreachable = _error_rows(
        missing.groupBy("graph_id").agg(F.slice(F.sort_array(F.collect_list("node_id")), 1, 10).alias("ids")),
        "UNREACHABLE_NODE",
        F.concat(F.lit("nodes ["), F.array_join("ids", ", "), F.lit(f"] {_UNREACHABLE}")),
    )
    unreachable = _cut(unreachable)

    # 2. base hashes, then the propagation (reachable graphs only)
    ok_edges = edges.join(unreachable, "graph_id", "left_anti")
    chainable_outs = ok_edges.where("hasher_chainable").groupBy("graph_id", F.col("source").alias("node_id")).count()
    base_udf = F.pandas_udf(_base_hashes, T.ArrayType(T.IntegerType()))
    with_base = _cut(
        attrs.join(unreachable, "graph_id", "left_anti")
        .join(trav.hashed, KEY)
        .join(chainable_outs, KEY, "left")
        .select(
            *KEY,
            "uid",
            "has_uid",
            "hash_level",
            "hash_position",
            base_udf("hash_position", F.coalesce("count", F.lit(0)), "uid").alias("base"),
        )
    )
    done, layers = propagate(with_base.select(*KEY, "has_uid", "base"), ok_edges, counts)
    hashed_nodes = _cut(
        with_base.join(done.select(*KEY, "h"), KEY).select(
            *KEY,
            "uid",
            "has_uid",
            _hex(F.col("h")).alias("operator_id"),
            "hash_position",
            "hash_level",
        )
    )

    # 3. Flink throws when a uid hash equals any hash computed before it
    earlier = hashed_nodes.select("graph_id", "operator_id", F.col("hash_position").alias("earlier_position"))
    collisions = (
        hashed_nodes.where("has_uid")
        .join(earlier, ["graph_id", "operator_id"])
        .where(F.col("earlier_position") < F.col("hash_position"))
        .groupBy("graph_id")
        .agg(F.min(F.struct("hash_position", "uid")).alias("first"))
    )
    duplicate = _error_rows(
        collisions,
        "DUPLICATE_UID",
        F.concat(
            F.lit('Hash collision on user-specified ID "'),
            F.col("first.uid"),
            F.lit('". Most likely cause is a non-unique ID. Please check that all IDs are unique.'),
        ),
    )
    errors = _cut(unreachable.unionByName(duplicate))

    def ok(df: DataFrame) -> DataFrame:
        return df.join(errors.select("graph_id"), "graph_id", "left_anti")

    result = HashResult(
        nodes=ok(hashed_nodes).select(
            "graph_id",
            F.col("node_id").cast("int"),
            "operator_id",
            F.when(F.col("has_uid"), "uid").otherwise("generated").alias("hash_source"),
            F.col("hash_position").cast("int"),
            F.col("hash_level").cast("int"),
        ),
        edges=ok(edges).select("graph_id", F.col("edge_idx").cast("int"), "chainable", "chainable_input"),
        stats=ok(trav.frontier_sizes.join(layers, "graph_id")).select(
            "graph_id",
            F.col("bfs_levels").cast("int"),
            "hash_layers",
            F.col("frontier_sizes").cast(T.ArrayType(T.IntegerType(), containsNull=True)),
        ),
        errors=errors,
    )
    result = HashResult(_cut(result.nodes), _cut(result.edges), _cut(result.stats), result.errors)
    return result, counts


def hash_graphs_supersteps(nodes: DataFrame, flagged_edges: DataFrame) -> HashResult:
    """Same contract as :func:`pipeline.hashing.hash_graphs`, run as Spark-wide supersteps."""
    return run_supersteps(nodes, flagged_edges)[0]
