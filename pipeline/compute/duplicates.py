"""The checks that need more than one graph at a time: a graph_id seen twice.

Per-graph contract checks run while reading (:mod:`udfs.spec.contract`). What is
left is the input as a whole: a graph_id must be unique within one input, or its rows
could not be told apart. Every copy of a duplicated id is rejected with one error row,
so each input graph still ends in exactly one output.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipeline.tables.stream_tables import StreamTables
from udfs.spec.contract import ERROR_COLUMNS


def duplicate_id_errors(ids: DataFrame) -> DataFrame:
    """One DUPLICATE_GRAPH_ID error row per graph_id that occurs more than once in ``ids``
    (graph_id, source_file: one row per input graph)."""
    dupes = (
        ids.groupBy("graph_id")
        .agg(F.count("*").alias("copies"), F.array_sort(F.collect_set("source_file")).alias("files"))
        .where(F.col("copies") > 1)
    )
    return dupes.select(
        "graph_id",
        F.lit("DUPLICATE_GRAPH_ID").alias("error_code"),
        F.format_string(
            "graph_id occurs %d times in this input (%s); ids must be unique within one input",
            F.col("copies"),
            F.array_join(F.col("files"), ", "),
        ).alias("message"),
        F.element_at(F.col("files"), 1).alias("source_file"),
    )


def reject_duplicate_graph_ids(tables: StreamTables) -> StreamTables:
    ids = tables.graphs.select("graph_id", "source_file").unionByName(tables.errors.select("graph_id", "source_file"))
    dupe_errors = duplicate_id_errors(ids).localCheckpoint(eager=True)
    if not dupe_errors.take(1):  # the common case: nothing to take out, no extra joins
        return tables
    keep = dupe_errors.select("graph_id")
    return StreamTables(
        graphs=tables.graphs.join(keep, "graph_id", "left_anti"),
        nodes=tables.nodes.join(keep, "graph_id", "left_anti"),
        edges=tables.edges.join(keep, "graph_id", "left_anti"),
        errors=tables.errors.join(keep, "graph_id", "left_anti").unionByName(dupe_errors).select(*ERROR_COLUMNS),
    )
