"""Graphs in buckets of a few hundred, for the per-graph stage's path from ingested tables.

``cogroup(...).applyInPandas`` keyed by graph_id pays Spark's per-group cost (an Arrow
round trip, a pandas frame per side) once per graph, which for fleets of small graphs
costs more than the work itself. Graphs read back from an
ingested folder are instead hashed into buckets of a few hundred; one UDF call gets a whole
bucket (:func:`cogroup_buckets`, used by :func:`pipeline.compute.stage.rows_from_tables`). The rows
it returns are laid out by :mod:`pipeline.compute.row_codec`.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

GRAPHS_PER_BUCKET = 250
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
