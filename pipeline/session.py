"""The SparkSession: Delta Lake from pinned local jars, Arrow on, few shuffle partitions."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from pipeline.settings import ROOT


class SetupError(RuntimeError):
    """The machine lacks something the pipeline needs (jars not installed, ...)."""


def jar_paths(settings: dict[str, Any]) -> list[str]:
    jars_dir = Path(os.environ.get("FLINK_JOBGRAPH_JARS", ROOT / settings["jars_dir"]))
    jars = sorted(str(p) for p in jars_dir.glob("*.jar"))
    if not any("delta-spark" in j for j in jars):
        raise SetupError(
            f"Delta Lake jars not found in {jars_dir}; run `make install` (it resolves them from Maven Central)"
        )
    return jars


def get_spark(settings: dict[str, Any], app_name: str = "flink-jobgraph") -> SparkSession:
    """Reuse an active session (spark-submit, Databricks), else build a local one."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    spark_conf = settings["spark"]
    # Python workers must run this interpreter (the venv's), not whatever python3 is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName(app_name)
        .master(os.environ.get("FLINK_JOBGRAPH_MASTER", spark_conf["master"]))
        .config("spark.jars", ",".join(jar_paths(settings)))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.shuffle.partitions", str(spark_conf["shuffle_partitions"]))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(spark_conf["arrow_batch_rows"]))
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile={ROOT / 'conf' / 'log4j2.properties'}")
        .config("spark.driver.memory", os.environ.get("FLINK_JOBGRAPH_DRIVER_MEMORY", "6g"))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.databricks.delta.snapshotPartitions", "2")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
