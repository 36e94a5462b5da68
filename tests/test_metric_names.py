"""Flink metric names -> job, operator name and uid, on the orders-enricher sample (v1, v2).

The IDs below are the sample's operator IDs as the pipeline computes them (README's example
queries show the same ones); the metric names are shaped as Flink's reporters print them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.queries import example_queries
from pipeline.compute.run import Progress, compute
from pipeline.tables.metric_names import PATTERNS, explain_metric_names, register_ids_view

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "c22cf63a4da6caf9dc3f39526c6a3188"  # Source: Orders, uid orders-src: same ID in v1 and v2
SINK_V2 = "3445ba224980e9fc3baa88a69d32fea5"  # Sink: Kafka of v2 (no uid)
PARSE_V1 = "741e3e71242943519c49946b0a7bc5f7"  # Parse of v1 (no uid)
WINDOW = "64d13d9aa16aa0e7527f2a20c03a2a05"  # Window Agg, uid order-totals: same ID in v1 and v2


@pytest.fixture(scope="module")
def out(spark, settings, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("metrics") / "out")
    compute(spark, str(ROOT / "samples" / "orders-enricher.jsonl"), out, settings, Progress(enabled=False))
    return out


METRICS = [
    # subtask granularity, dotted (JMX / Graphite / the web UI), with the reporter's statistic
    f"host.taskmanager.tm1.orders.latency.source_id.{SOURCE}.source_subtask_index.0"
    f".operator_id.{SINK_V2}.operator_subtask_index.3.latency_p99",
    # operator granularity (Flink's default): no source_subtask_index
    f"latency.source_id.{SOURCE}.operator_id.{PARSE_V1}.operator_subtask_index.1.latency",
    # Prometheus: the values are labels
    "flink_taskmanager_job_latency_source_id_operator_id_operator_subtask_index_latency"
    f'{{job_name="orders",source_id="{SOURCE}",operator_id="{WINDOW}",operator_subtask_index="0",quantile="0.99"}}',
    # a REST answer's vertex: the window chain's JobVertexID is its head's operator ID
    f"/jobs/0123456789abcdef0123456789abcdef/vertices/{WINDOW}/subtasks/metrics",
    # an ID no table has
    "latency.source_id.ffffffffffffffffffffffffffffffff.operator_id.eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
    ".operator_subtask_index.0.latency",
]


def test_metric_names_resolve_to_job_operator_and_uid(spark, out) -> None:
    metrics = spark.createDataFrame([(m,) for m in METRICS], "metric string")
    rows = explain_metric_names(spark, metrics, "metric", out).collect()
    got = sorted(
        (
            METRICS.index(r.metric),
            r.graph_id,
            r.source_name,
            r.source_uid,
            r.operator_name,
            r.operator_uid,
            r.operator_subtask_index,
            r.source_subtask_index,
            r.statistic,
            r.vertex_name,
        )
        for r in rows
    )
    assert got == sorted(
        [
            (0, "orders-enricher@v2", "Source: Orders", "orders-src", "Sink: Kafka", None, 3, 0, "p99", None),
            (1, "orders-enricher@v1", "Source: Orders", "orders-src", "Parse", None, 1, None, None, None),
            # a uid'd operator keeps its ID across versions: one row per version that has it
            (
                2,
                "orders-enricher@v1",
                "Source: Orders",
                "orders-src",
                "Window Agg",
                "order-totals",
                0,
                None,
                None,
                None,
            ),
            (
                2,
                "orders-enricher@v2",
                "Source: Orders",
                "orders-src",
                "Window Agg",
                "order-totals",
                0,
                None,
                None,
                None,
            ),
            (3, "orders-enricher@v1", None, None, None, None, None, None, None, "Window Agg -> Enrich -> Sink: Kafka"),
            (3, "orders-enricher@v2", None, None, None, None, None, None, None, "Window Agg -> Enrich -> Sink: Kafka"),
            (4, None, None, None, None, None, 0, None, None, None),
        ]
    )


def test_ids_view_has_every_operator_and_vertex(spark, out) -> None:
    view = register_ids_view(spark, out)
    counts = {r.kind: r.n for r in spark.sql("SELECT kind, count(*) AS n FROM flink_ids GROUP BY kind").collect()}
    assert counts == {"operator": 11, "vertex": 4}
    assert view.where(f"id = '{WINDOW}' AND kind = 'vertex'").count() == 2
    head = spark.sql(f"SELECT name, uid FROM flink_ids WHERE kind = 'vertex' AND id = '{WINDOW}' LIMIT 1").first()
    assert (head.name, head.uid) == ("Window Agg -> Enrich -> Sink: Kafka", "order-totals")


def test_example_query_names_the_latency_metric(spark, out) -> None:
    [(title, sql)] = [(t, s) for t, s in example_queries(out) if "latency" in t.lower()]
    rows = spark.sql(sql).collect()
    assert [tuple(r) for r in rows] == [("orders-enricher@v2", "Source: Orders", "orders-src", "Sink: Kafka", None, 3)]


def test_patterns_are_spark_sql_regexes(spark) -> None:
    # The same expressions work in SQL's regexp_extract (Java regex), as docs/metrics.md shows.
    name = f"latency.source_id.{SOURCE}.source_subtask_index.2.operator_id.{SINK_V2}.operator_subtask_index.3.latency"
    row = spark.sql(
        "SELECT "
        + ", ".join(
            f"regexp_extract('{name}', '{p.replace(chr(92), chr(92) * 2)}', 1) AS {k}" for k, p in PATTERNS.items()
        )
    ).first()
    assert (row.source_id, row.source_subtask_index, row.operator_id, row.operator_subtask_index) == (
        SOURCE,
        "2",
        SINK_V2,
        "3",
    )
