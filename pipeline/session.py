"""The SparkSession: Delta Lake from pinned local jars, Arrow on, few shuffle partitions."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pandas as pd
from pyspark import RDD, SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from pipeline.settings import CONF_DIR, ROOT, Settings


class SetupError(RuntimeError):
    """The machine lacks something the pipeline needs (jars not installed, ...)."""


def jars_dir(settings: Settings) -> Path:
    return Path(os.environ.get("FLINK_JOBGRAPH_JARS", ROOT / settings.jars_dir))


def jar_paths(settings: Settings) -> list[str]:
    folder = jars_dir(settings)
    jars = sorted(str(p) for p in folder.glob("*.jar"))
    if not any("delta-spark" in Path(j).name for j in jars):
        raise SetupError(
            f"Delta Lake jars not found in {folder}; run `make install` (it resolves them from Maven Central)"
        )
    if not any(Path(j).name.startswith("graphframes-") for j in jars):
        raise SetupError(f"GraphFrames jar not found in {folder}; run `make install`")
    return jars


def import_graphframes(spark: SparkSession, settings: Settings):
    """GraphFrames' Python API, from the same jar as its JVM core.

    A cluster that already provides GraphFrames (Databricks ML runtimes) keeps its own;
    otherwise the jar from the jars folder is put on ``sys.path``: GraphFrames releases
    carry their Python package inside the jar, so wrapper and core always match.
    """
    from py4j.java_gateway import JavaClass

    # py4j resolves through Spark's context class loader (where spark.jars are); an unknown
    # class comes back as a JavaPackage instead of raising.
    if not isinstance(spark._jvm.org.graphframes.GraphFramePythonAPI, JavaClass):
        raise SetupError(
            "the GraphFrames JVM core (org.graphframes) is not on Spark's classpath: run `make install`, "
            f"or pass {jars_dir(settings)}/graphframes-*.jar to spark-submit --jars"
        )
    try:
        import graphframes
    except ImportError:
        jars = sorted(jars_dir(settings).glob("graphframes-*.jar"))
        if not jars:
            raise SetupError(f"GraphFrames jar not found in {jars_dir(settings)}; run `make install`") from None
        sys.path.insert(0, str(jars[-1]))
        import graphframes
    if not spark.sparkContext.getCheckpointDir():
        # GraphFrames' connected components checkpoints every few iterations to cut lineage.
        folder = tempfile.mkdtemp(prefix="flink-jobgraph-checkpoints-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)  # a run's checkpoints die with it
        spark.sparkContext.setCheckpointDir(folder)
    return graphframes


# The driver JVM's class-data-sharing archive: the classes a run loads (Spark, Delta,
# GraphFrames: ~19,000), dumped once by `make install` (scripts/spark_cds.py) and mapped by
# every later start instead of being read from the jars and verified again. It is named by
# the JDK and the jars (name, size, time), so another pyspark, jar set or a rebuilt jar uses
# (or makes) another archive; the JVM starts without one, silently, when it does not match.
CDS_ENV = "FLINK_JOBGRAPH_CDS"  # "off": no archive; "train": dump one at the JVM's exit


def cds_archive(settings: Settings) -> Path:
    import hashlib

    import pyspark

    h = hashlib.sha256(pyspark.__version__.encode())
    # the JVM Spark starts (JAVA_HOME's, else java on PATH): its libjvm changes with every JDK update
    java_home = os.environ.get("JAVA_HOME")
    java = Path(java_home, "bin", "java") if java_home else Path(shutil.which("java") or "java")
    libjvm = java.resolve().parent.parent / "lib" / "server" / "libjvm.so"
    if libjvm.is_file():
        st = libjvm.stat()
        h.update(f"{libjvm} {st.st_size} {st.st_mtime_ns}".encode())
    # the JVM maps an archive only over class path entries of the size and time it was dumped
    # with: a jar rebuilt with the same size (the project's own, by `make install`) names another
    for jar in [*sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar")), *map(Path, jar_paths(settings))]:
        st = jar.stat()
        h.update(f"{jar.name} {st.st_size} {st.st_mtime_ns}".encode())
    return ROOT / ".cache" / "jvm" / f"spark-{pyspark.__version__}-{h.hexdigest()[:12]}.jsa"


def cds_options(settings: Settings) -> str:
    """The driver's JVM options for the archive: use it when there is one, dump it when asked."""
    mode = os.environ.get(CDS_ENV, "")
    if mode == "off":
        return ""
    archive = cds_archive(settings)
    if mode == "train":
        archive.parent.mkdir(parents=True, exist_ok=True)
        return f"-XX:ArchiveClassesAtExit={archive}"
    if archive.is_file():
        return f"-XX:SharedArchiveFile={archive} -Xlog:cds=off -Xlog:cds+dynamic=off"
    return ""


# On a local master the input's files are listed on the driver: Spark lists more than a few
# dozen paths (a fleet's spec files) in a Spark job of its own, which a nightly run's start
# paid for what a stat call per file answers (docs/performance.md).
DRIVER_LISTING = ("spark.sql.sources.parallelPartitionDiscovery.threshold", "100000")
# Delta rebuilds a table's snapshot (its files, for a replace) in this many tasks; its default
# of 50 is a cluster's. On a local master each is a task on the same few cores: a fresh
# spark-submit run's 1% night ran its writes' snapshots in 50-task stages (docs/performance.md).
LOCAL_SNAPSHOT_PARTITIONS = ("spark.databricks.delta.snapshotPartitions", "2")


def launched_by_spark_submit() -> bool:
    """True when this Python process is the driver of a ``spark-submit`` (its JVM started
    first and handed this process a gateway), whose ``--master``, ``--jars``, ``--conf`` and
    driver settings are the user's and must win over the pipeline's local defaults."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def get_spark_adding(settings: Settings, java_options: str) -> SparkSession:
    """:func:`get_spark` with ``java_options`` added after ``spark.driver_java_options``: a run
    of seconds (one job's gate, a night) that starts its own JVM starts it without what only a
    long run wins back; an active or spark-submit session keeps its own JVM."""
    both = f"{settings.spark.driver_java_options} {java_options}".strip()
    return get_spark(settings.with_overrides({"spark.driver_java_options": both}))


def set_session_confs(spark: SparkSession, setting: str, confs: tuple[tuple[str, Any], ...]) -> None:
    """``confs`` (the setting ``setting``'s: ``spark.night_spark_conf``, ...) set on a running
    session. Only runtime settings can be: a static one (``spark.eventLog.enabled``, the
    driver's memory) is a mistake in the setting, said as such, not a traceback from Spark."""
    from pyspark.errors import AnalysisException

    for key, value in confs:
        try:
            spark.conf.set(key, str(value))
        except AnalysisException as e:
            raise SetupError(
                f"setting {setting}: {key} cannot be set on a running session ({str(e).splitlines()[0]}); "
                "it holds runtime SQL settings only, a static one goes to spark-submit --conf"
            ) from None


def get_spark(settings: Settings, app_name: str = "flink-jobgraph") -> SparkSession:
    """Reuse an active session (a notebook, Databricks), else build one: under ``spark-submit``
    with spark-submit's master, jars and configuration (the pipeline adds only what the job
    itself needs: Delta's extension, its own jars, the SQL settings); elsewhere a local session
    with the configured master (``FLINK_JOBGRAPH_MASTER`` wins)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if launched_by_spark_submit():
        return _submitted_session(settings, app_name)
    spark_conf = settings.spark
    # Python workers must run this interpreter (the venv's), not whatever python3 is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    master = os.environ.get("FLINK_JOBGRAPH_MASTER", spark_conf.master)
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.jars", ",".join(jar_paths(settings)))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.shuffle.partitions", str(spark_conf.shuffle_partitions))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(spark_conf.arrow_batch_rows))
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.ui.enabled", "false")
        # GraphX's Pregel (chains.graphframes_algorithm=graphx) runs one iteration per link of
        # the longest chain; checkpointing every 10 keeps its lineage short on deep chains.
        .config("spark.graphx.pregel.checkpointInterval", "10")
        .config("spark.ui.showConsoleProgress", "false")
        .config(
            "spark.driver.extraJavaOptions",
            f"-Dlog4j.configurationFile={CONF_DIR / 'log4j2.properties'} {spark_conf.driver_java_options} "
            f"{cds_options(settings)}".strip(),
        )
        .config("spark.driver.memory", os.environ.get("FLINK_JOBGRAPH_DRIVER_MEMORY", "6g"))
        .config("spark.sql.session.timeZone", "UTC")
        .config(*LOCAL_SNAPSHOT_PARTITIONS)
    )
    if master.startswith("local"):
        builder = builder.config("spark.python.daemon.module", "pipeline.worker_daemon")
        builder = builder.config(*DRIVER_LISTING)
    try:
        spark = builder.getOrCreate()
    except PySparkRuntimeError as e:  # the JVM's own reason is on the console above
        if e.getErrorClass() != "JAVA_GATEWAY_EXITED":
            raise
        raise SetupError(
            "the driver JVM did not start (its reason, if it gave one, is just above on the console); "
            f"its options: {spark_conf.driver_java_options!r} (spark.driver_java_options, with a night's or one "
            "job's options added)"
        ) from None
    spark.sparkContext.setLogLevel("ERROR")
    if master.startswith("local"):
        start_python_workers(spark)
    return spark


def held_value(held: Any) -> dict:
    """What a task was handed as a Broadcast (a fleet's) or as the value itself (a test's),
    read on the worker; None: an empty dict."""
    value = held.value if hasattr(held, "value") else held
    return value or {}


def in_sql_worker_environment(sc: SparkContext, func: Callable[[int], Any]) -> RDD:
    """An RDD of one element mapped by ``func`` whose task runs in the worker environment of
    SQL's Python execs (:func:`start_python_workers`). Its function is built here, in the
    calling thread, with the variable added to the context's environment for that moment only."""
    before = dict(sc.environment)
    sc.environment["SPARK_SIMPLIFIED_TRACEBACK"] = "1"
    try:
        rdd = sc.parallelize([0], 1).map(func)
        rdd._jrdd  # noqa: B018 - builds the function, with its environment, now
    finally:
        sc.environment.clear()
        sc.environment.update(before)
    return rdd


def start_python_workers(spark: SparkSession) -> None:
    """Start Spark's Python worker daemon now, in the background, with one task of one element.

    The first Python task of a run otherwise pays for the daemon's start and its imports,
    after the session's SQL state is built, which the first DataFrame waits for (both are
    seconds in a cold JVM: docs/performance.md). This task is an RDD's:
    it needs no SQL state, so the daemon starts while that is built, and its worker stays in
    Spark's pool (``spark.python.worker.reuse``) for the first real task. Spark keeps one daemon
    per worker environment, and SQL's Python execs add ``SPARK_SIMPLIFIED_TRACEBACK`` to it:
    the task's function carries it too, so it warms the very daemon the SQL stages use
    (:func:`pipeline.worker_daemon.serves_sql_workers`). A failure here is left to the real
    stage to report; on another Spark version that keys daemons differently, this starts a
    daemon no stage uses, in the background."""
    rdd = in_sql_worker_environment(spark.sparkContext, lambda x: x)

    def run() -> None:
        try:
            rdd.collect()
        except Exception:  # noqa: BLE001, S110 - the real stage says what is wrong
            pass

    threading.Thread(target=run, name="flink-jobgraph-python-workers", daemon=True).start()


def _submitted_session(settings: Settings, app_name: str) -> SparkSession:
    """The session of a ``spark-submit`` run: its master and launcher settings as given; the
    pipeline's jars added to ``--jars`` (not replacing them) when they are not there yet."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connect to spark-submit's JVM before reading its conf
    conf = SparkConf()  # what spark-submit put in the JVM's system properties
    given = [j for j in (conf.get("spark.jars", "") or "").split(",") if j]
    names = {Path(j).name for j in given}
    try:
        ours = [j for j in jar_paths(settings) if Path(j).name not in names]
    except SetupError:
        ours = []  # the cluster brings Delta and GraphFrames itself (checked when they are used)
    spark_conf = settings.spark
    local = (conf.get("spark.master", "") or "").startswith("local")
    builder = SparkSession.builder.appName(conf.get("spark.app.name", app_name))
    for key, value in (
        ("spark.jars", ",".join(given + ours)),
        ("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension"),
        ("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"),
        ("spark.sql.shuffle.partitions", str(spark_conf.shuffle_partitions)),
        ("spark.sql.execution.arrow.pyspark.enabled", "true"),
        ("spark.sql.execution.arrow.maxRecordsPerBatch", str(spark_conf.arrow_batch_rows)),
        ("spark.sql.session.timeZone", "UTC"),
        *([DRIVER_LISTING, LOCAL_SNAPSHOT_PARTITIONS] if local else []),
    ):
        if key == "spark.jars" or not conf.contains(key):  # a --conf of the user's wins
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def is_local_path(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` is on the local file system, where listings go through ``os``: Hadoop's
    local ``listFiles`` forks ``ls`` per file for its permissions (docs/performance.md)."""
    scheme = urlparse(path).scheme
    if scheme == "file":
        return True
    if scheme:
        return False
    default_fs = spark._jsc.hadoopConfiguration().get("fs.defaultFS") or "file:///"
    return default_fs.startswith("file:")


def local_path(path: str) -> str:
    """The file system path of a local ``path`` given as a ``file:`` URI or as a plain path."""
    return urlparse(path).path if path.startswith("file:") else path


def local_frame(spark: SparkSession, rows: Iterable[Sequence[Any]], schema: str | T.StructType) -> DataFrame:
    """A DataFrame of rows the driver holds (tuples in the schema's column order), handed to
    the JVM as Arrow. ``createDataFrame`` of a Python list instead pickles them through a
    Python task, in a worker pool of its own, whose start a run pays (docs/performance.md)."""
    struct = schema if isinstance(schema, T.StructType) else T._parse_datatype_string(schema)
    rows = list(rows)
    if not rows:  # pandas' Arrow path takes no empty frame; an empty RDD runs no task at all
        return spark.createDataFrame(spark.sparkContext.emptyRDD(), struct)
    return spark.createDataFrame(pd.DataFrame(rows, columns=struct.fieldNames(), dtype=object), struct)
