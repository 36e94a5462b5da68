"""Step 8: the Delta tables, replaced graph by graph.

A run owns the graph_ids it read: in every table, rows of those graphs are deleted and
the run's rows appended, so re-running on the same input leaves the same content, a
graph that now fails leaves job_vertices for graph_errors (and back), and graphs of
other runs are left alone.
"""

from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession


def table_path(output: str, table: str) -> str:
    return f"{output.rstrip('/')}/{table}"


def replace_graphs(spark: SparkSession, output: str, table: str, rows: DataFrame, run_ids: DataFrame) -> None:
    path = table_path(output, table)
    # One file per core, not one per input partition: the fused executor's rows keep the
    # input's partitioning (a task per spec file), and a hundred small files per table cost
    # Delta more than the rows (measured on the 10k fleet: see bench/README.md).
    rows = rows.coalesce(spark.sparkContext.defaultParallelism)  # never adds partitions
    if DeltaTable.isDeltaTable(spark, path):
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(run_ids.alias("r"), "t.graph_id = r.graph_id")
            .whenMatchedDelete()
            .execute()
        )
        rows.write.format("delta").mode("append").save(path)
    else:
        # File statistics only for graph_id, the first column of every table: it is what runs
        # (the merge above) and queries filter on. The other columns are mostly random hash
        # IDs, whose min/max per file skip nothing, and collecting them cost ~0.6 s per
        # million rows on this machine (a new table gets the property; see bench/README.md).
        rows.write.format("delta").option("delta.dataSkippingNumIndexedCols", "1").mode("overwrite").save(path)


def is_delta_folder(spark: SparkSession, path: str) -> bool:
    try:
        return DeltaTable.isDeltaTable(spark, table_path(path, "stream_nodes"))
    except Exception:
        return False
