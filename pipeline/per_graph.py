"""Run a per-graph pandas function over many graphs with few Spark groups.

``cogroup(...).applyInPandas`` keyed by graph_id pays Spark's per-group cost (an Arrow
round trip, a pandas frame per side) once per graph, which for fleets of small graphs
costs more than the work itself (measured: bench/results). Graphs are instead hashed into
buckets of a few hundred; one UDF call gets a whole bucket and loops over its graphs.

A per-graph function returns its rows by kind (``{"node": frame, "edge": frame, ...}``,
each kind with its own columns); each kind is concatenated once per bucket and the kinds
are aligned to the output schema once. Concatenating differently shaped frames per graph
instead was a third of the job-graph UDF (bench/results/profile-20261122-003531-fleet-1k.json).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

GRAPHS_PER_BUCKET = 250
RowsByKind = dict[str, pd.DataFrame]
_BUCKET = "_graph_bucket"


def bucket_count(graphs: int) -> int:
    return max(4, -(-graphs // GRAPHS_PER_BUCKET))


def cogroup_buckets(
    left: DataFrame,
    right: DataFrame,
    fn: Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame],
    schema: T.StructType,
    buckets: int,
) -> DataFrame:
    """``fn(left_rows, right_rows)`` once per bucket of graphs, both sides of the same graphs."""

    def run_bucket(lpdf: pd.DataFrame, rpdf: pd.DataFrame) -> pd.DataFrame:
        lpdf = lpdf.drop(columns=[_BUCKET])
        rpdf = rpdf.drop(columns=[_BUCKET]) if _BUCKET in rpdf else rpdf
        if not len(lpdf):
            return pd.DataFrame({c: [] for c in schema.fieldNames()})
        return fn(lpdf, rpdf)

    key = F.pmod(F.xxhash64("graph_id"), F.lit(buckets))
    return (
        left.withColumn(_BUCKET, key)
        .groupBy(_BUCKET)
        .cogroup(right.withColumn(_BUCKET, key).groupBy(_BUCKET))
        .applyInPandas(run_bucket, schema)
    )


def cogroup_per_graph(
    left: DataFrame,
    right: DataFrame,
    fn: Callable[[pd.DataFrame, pd.DataFrame], RowsByKind],
    schema: T.StructType,
    buckets: int,
) -> DataFrame:
    """``fn(left_rows_of_one_graph, right_rows_of_one_graph)`` for every graph of ``left``;
    its rows by kind become rows of ``schema`` with a ``kind`` column."""
    columns = schema.fieldNames()
    right_columns = [c for c in right.columns]

    def run_graphs(lpdf: pd.DataFrame, rpdf: pd.DataFrame) -> pd.DataFrame:
        by_graph = {gid: part for gid, part in rpdf.groupby("graph_id", sort=False)}
        empty = pd.DataFrame({c: pd.Series(dtype=rpdf[c].dtype if c in rpdf else object) for c in right_columns})
        outs = [
            fn(part.reset_index(drop=True), by_graph.get(gid, empty).reset_index(drop=True))
            for gid, part in lpdf.groupby("graph_id", sort=False)
        ]
        return _align_kinds(outs, schema)[columns]

    return cogroup_buckets(left, right, run_graphs, schema, buckets)


def _align_kinds(outs: list[RowsByKind], schema: T.StructType) -> pd.DataFrame:
    frames: dict[str, list[pd.DataFrame]] = {}
    for out in outs:
        for kind, frame in out.items():
            frames.setdefault(kind, []).append(frame)
    by_kind = []
    for kind, parts in frames.items():
        frame = pd.concat(parts, ignore_index=True)
        frame.insert(0, "kind", kind)
        by_kind.append(frame)
    return align_to_schema(by_kind, schema)


def align_to_schema(parts: list[pd.DataFrame], schema: T.StructType) -> pd.DataFrame:
    """One frame of ``schema``'s columns from per-graph frames that each fill only some.

    Missing cells come back as NaN; integer columns become nullable Int64, and array
    columns get None instead of NaN (Arrow rejects a float where it expects a list).
    """
    out = pd.concat(parts, ignore_index=True).reindex(columns=schema.fieldNames())
    for f in schema.fields:
        if isinstance(f.dataType, T.IntegerType):
            out[f.name] = out[f.name].astype("Int64")
        elif isinstance(f.dataType, T.ArrayType):
            out[f.name] = out[f.name].astype(object).where(out[f.name].notna(), None)
    return out


def frame_for_schema(frame: pd.DataFrame, schema: T.StructType) -> pd.DataFrame:
    """``frame`` with exactly ``schema``'s columns: its own converted only where Arrow needs
    it, the missing ones as typed all-null columns. Per kind of row this is much cheaper than
    :func:`align_to_schema`, whose concat turns every partly-missing int column into objects."""
    n = len(frame)
    out = {}
    for f in schema.fields:
        col = frame[f.name] if f.name in frame else None
        if isinstance(f.dataType, T.IntegerType):
            if col is None:
                col = pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
            elif not pd.api.types.is_integer_dtype(col.dtype):
                col = col.astype("Int64")
        elif isinstance(f.dataType, T.DoubleType):
            col = np.full(n, np.nan) if col is None else col
        elif col is None:
            col = np.full(n, None, dtype=object)
        out[f.name] = col
    return pd.DataFrame(out, index=frame.index)
