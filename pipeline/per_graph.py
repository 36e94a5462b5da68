"""Run a per-graph pandas function over many graphs with few Spark groups.

``cogroup(...).applyInPandas`` keyed by graph_id pays Spark's per-group cost (an Arrow
round trip, a pandas frame per side) once per graph, which for fleets of small graphs
costs more than the work itself (measured: bench/results). Graphs are instead hashed into
buckets of a few hundred; one UDF call gets a whole bucket and loops over its graphs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

GRAPHS_PER_BUCKET = 250
Out = TypeVar("Out")
_BUCKET = "_graph_bucket"


def bucket_count(graphs: int) -> int:
    return max(4, -(-graphs // GRAPHS_PER_BUCKET))


def cogroup_per_graph(
    left: DataFrame,
    right: DataFrame,
    fn: Callable[[pd.DataFrame, pd.DataFrame], Out],
    schema: T.StructType,
    buckets: int,
    finish: Callable[[list[Out]], pd.DataFrame],
) -> DataFrame:
    """``fn(left_rows_of_one_graph, right_rows_of_one_graph)`` for every graph of ``left``;
    ``finish`` turns all the bucket's per-graph outputs into one frame of ``schema`` (done
    once per bucket: per graph, the column alignment cost more than the work)."""
    columns = schema.fieldNames()
    right_columns = [c for c in right.columns]

    def run_bucket(lpdf: pd.DataFrame, rpdf: pd.DataFrame) -> pd.DataFrame:
        lpdf = lpdf.drop(columns=[_BUCKET])
        rpdf = rpdf.drop(columns=[_BUCKET]) if _BUCKET in rpdf else rpdf
        by_graph = {gid: part for gid, part in rpdf.groupby("graph_id", sort=False)}
        empty = pd.DataFrame({c: pd.Series(dtype=rpdf[c].dtype if c in rpdf else object) for c in right_columns})
        outs = [
            fn(part.reset_index(drop=True), by_graph.get(gid, empty).reset_index(drop=True))
            for gid, part in lpdf.groupby("graph_id", sort=False)
        ]
        if not outs:
            return pd.DataFrame({c: [] for c in columns})
        return finish(outs)[columns]

    key = F.pmod(F.xxhash64("graph_id"), F.lit(buckets))
    return (
        left.withColumn(_BUCKET, key)
        .groupBy(_BUCKET)
        .cogroup(right.withColumn(_BUCKET, key).groupBy(_BUCKET))
        .applyInPandas(run_bucket, schema)
    )


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
