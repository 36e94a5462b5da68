"""Read Flink metric names: the operator and vertex IDs in them, back to job, operator name and uid.

Flink names operators in latency metrics only by ID (``LatencyStats``: groups ``source_id``
[``source_subtask_index``] ``operator_id`` ``operator_subtask_index``, histogram ``latency``;
FLINK-8592 and FLINK-9653 declined to add names), and its REST API and metric scopes name
vertices by JobVertexID (``/jobs/<job>/vertices/<id>``, the ``<task_id>`` scope variable,
Prometheus' ``task_id`` label) and operators by OperatorID (``operator_id``). Those are the
IDs of our tables: ``operators.operator_id`` and ``job_vertices.jobvertex_id`` (the head's
operator ID). This module is the one place that knows the metric name shapes:

* :data:`PATTERNS`: one regular expression per ID a metric name may carry, written for
  Spark SQL's ``regexp_extract`` (Java regex), so SQL users get the same parsing;
* :func:`ids_view_sql` / :func:`register_ids_view`: a view ``flink_ids`` with one row per
  (ID, graph) an ID can mean, to join on;
* :func:`explain_metric_names`: a DataFrame of metric names -> who they are about.

An ID can mean several rows: a uid'd operator keeps its ID across versions of a job (that
is what uids are for), and a chain head's operator ID is also its vertex's ID. The latency
join keeps the source and the operator in the same graph, which usually leaves one row per
deployed version; filter on ``graph_id`` for the version you run.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.tables import delta_writer as delta_sink

_HEX = "([0-9a-f]{32})"
# Separators: "." in dotted identifiers (JMX, Graphite, Slf4j, the web UI's metric list),
# '="' or "=" in Prometheus / InfluxDB labels, ": " in JSON, "_" never (Prometheus folds the group names
# into the metric name, but keeps the values as labels).
_SEP = '[.=": ]{1,3}'  # no single quote: the patterns go into SQL string literals as they are
PATTERNS: dict[str, str] = {
    "source_id": f"source_id{_SEP}{_HEX}",
    "source_subtask_index": f"source_subtask_index{_SEP}([0-9]+)",
    "operator_id": f"operator_id{_SEP}{_HEX}",
    "operator_subtask_index": f"operator_subtask_index{_SEP}([0-9]+)",
    # JobVertexID: the <task_id> scope variable / Prometheus label, or a REST path.
    "vertex_id": f"(?:task_id{_SEP}|/vertices/){_HEX}",
    # The histogram statistic a reporter appends (latency_p99, latency.mean, ...), if any.
    "statistic": "latency[._]?(p[0-9]+|mean|min|max|stddev|count)\\b",
}


def ids_view_sql(operators: str, job_vertices: str) -> str:
    """One row per meaning of an ID: an operator (by its OperatorID) or a JobVertex (by its ID).

    ``operators`` and ``job_vertices`` are table references, e.g. ``flink_jobgraph.operators``
    or ``delta.`/out/operators```.
    """
    return f"""
SELECT o.operator_id AS id, 'operator' AS kind, o.graph_id, o.name, o.uid, o.hash_source,
       o.jobvertex_id, v.name AS vertex_name
FROM {operators} AS o JOIN {job_vertices} AS v ON v.graph_id = o.graph_id AND v.jobvertex_id = o.jobvertex_id
UNION ALL
SELECT v.jobvertex_id AS id, 'vertex' AS kind, v.graph_id, v.name, h.uid, h.hash_source,
       v.jobvertex_id, v.name AS vertex_name
FROM {job_vertices} AS v JOIN {operators} AS h ON h.graph_id = v.graph_id AND h.node_id = v.head_node_id
"""


def register_ids_view(spark: SparkSession, output: str, name: str = "flink_ids") -> DataFrame:
    """The temp view ``name`` over the Delta folders under ``output``; returns it."""
    ops = f"delta.`{delta_sink.table_path(output, 'operators')}`"
    vertices = f"delta.`{delta_sink.table_path(output, 'job_vertices')}`"
    view = spark.sql(ids_view_sql(ops, vertices))
    view.createOrReplaceTempView(name)
    return view


def metric_parts(metric: Column) -> list[Column]:
    """The IDs and indexes in a metric name, as columns (empty strings become null)."""
    cols = []
    for part, pattern in PATTERNS.items():
        value = F.regexp_extract(metric, pattern, 1)
        value = F.when(value != "", value)
        if part.endswith("_index"):
            value = value.cast("int")
        cols.append(value.alias(part))
    return cols


def explain_metric_names(spark: SparkSession, metrics: DataFrame, column: str, output: str) -> DataFrame:
    """``metrics`` with, per metric name, the job (graph_id), operator and source names and uids,
    and the vertex a ``task_id`` or REST path names. One row per graph the IDs fit in
    (left join: a name whose IDs are in no table keeps one row with nulls).
    """
    ids = register_ids_view(spark, output, name="flink_ids")
    parsed = metrics.select("*", *metric_parts(F.col(column)))
    ops = ids.where("kind = 'operator'")
    op = ops.select(
        F.col("id").alias("_op_id"),
        F.col("graph_id").alias("_op_graph"),
        F.col("name").alias("operator_name"),
        F.col("uid").alias("operator_uid"),
        F.col("vertex_name").alias("operator_vertex_name"),
    )
    src = ops.select(
        F.col("id").alias("_src_id"),
        F.col("graph_id").alias("_src_graph"),
        F.col("name").alias("source_name"),
        F.col("uid").alias("source_uid"),
    )
    vertex = ids.where("kind = 'vertex'").select(
        F.col("id").alias("_v_id"), F.col("graph_id").alias("_v_graph"), F.col("name").alias("vertex_name")
    )
    out = parsed.join(op, F.col("operator_id") == F.col("_op_id"), "left")
    # The marker's source runs in the same job as the operator that measured it.
    out = out.join(
        src,
        (F.col("source_id") == F.col("_src_id"))
        & (F.col("_op_graph").isNull() | (F.col("_op_graph") == F.col("_src_graph"))),
        "left",
    )
    out = out.join(
        vertex,
        (F.col("vertex_id") == F.col("_v_id"))
        & F.coalesce(F.col("_op_graph"), F.col("_src_graph"), F.col("_v_graph")).eqNullSafe(F.col("_v_graph")),
        "left",
    )
    graph = F.coalesce(F.col("_op_graph"), F.col("_src_graph"), F.col("_v_graph")).alias("graph_id")
    keep = [c for c in out.columns if not c.startswith("_")]
    return out.select(*keep, graph)
