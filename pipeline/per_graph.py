"""Graphs in buckets of a few hundred, and a batch's rows by kind as frames of one schema.

``cogroup(...).applyInPandas`` keyed by graph_id pays Spark's per-group cost (an Arrow
round trip, a pandas frame per side) once per graph, which for fleets of small graphs
costs more than the work itself (measured: bench/results). Graphs read back from an
ingested folder are instead hashed into buckets of a few hundred; one UDF call gets a whole
bucket (:func:`cogroup_buckets`, used by :func:`pipeline.fused.rows_from_tables`).

Rows come back by kind, each kind with its own columns; each kind is aligned to the output
schema on its own (:func:`kind_frames`). Concatenating differently shaped frames first
was a third of the job-graph UDF (bench/results/profile-20261122-003531-fleet-1k.json).
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


def kind_frames(by_kind: RowsByKind, schema: T.StructType) -> list[pd.DataFrame]:
    """One frame per kind of row, each with its ``kind`` column and exactly ``schema``'s
    columns (:func:`frame_for_schema`), ready for Arrow as they are or concatenated."""
    out = []
    for kind, frame in by_kind.items():
        frame.insert(0, "kind", kind)
        out.append(frame_for_schema(frame, schema))
    return out


def frame_for_schema(frame: pd.DataFrame, schema: T.StructType) -> pd.DataFrame:
    """``frame`` with exactly ``schema``'s columns: its own converted only where Arrow needs
    it, the missing ones as typed all-null columns. Done per kind of row, before any concat:
    concatenating differently shaped kinds first turns every partly-missing int column into
    objects, which then cost a slow conversion."""
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
