"""Register the output folders as Delta tables in the session's catalog (``--database``).

The folders stay the source of truth: every table is an *external* (unmanaged) Delta
table whose LOCATION is the folder the run wrote, so

* the run's write path is the same with or without a catalog (``delta_sink`` replaces
  rows graph by graph in the folder; a catalog table over that folder sees each commit
  at once, because Delta reads the table's own ``_delta_log`` on every query);
* registering is idempotent and cheap: ``CREATE TABLE IF NOT EXISTS ... USING DELTA
  LOCATION`` takes the schema from the log, copies no data, and later runs only check
  that the name still points at the same folder;
* it works the same on a Hive metastore (Spark's own, Glue, a shared HMS) and on
  Databricks Unity Catalog, where the folder must lie under an external location the
  user may create external tables in (see docs/catalog.md for why not managed tables).

``check-restore`` and any other command that writes tables under ``--output`` call
:func:`register_tables` the same way, after their writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from pipeline.tables import delta_writer as delta_sink

R = TypeVar("R")

# What each command writes under --output; register_tables takes any list, these are the defaults.
COMMAND_TABLES: dict[str, tuple[str, ...]] = {
    "compute": ("operators", "job_vertices", "job_edges", "graph_errors", "graph_fingerprints"),
    "ingest": ("stream_graphs", "stream_nodes", "stream_edges", "graph_errors"),
    "inventory": ("savepoint_operators", "savepoint_states", "savepoint_errors"),
    "check-restore": (
        "operators",
        "job_vertices",
        "job_edges",
        "graph_errors",
        "graph_fingerprints",
        "savepoint_operators",
        "savepoint_states",
        "restore_checks",
        "restore_operator_matches",
        "restore_fixes",
        "restore_state_problems",
        "restore_warnings",
        "check_fingerprints",
    ),
}

# Unquoted identifiers as Hive, Unity Catalog and Spark all accept them. Anything else is
# refused rather than quoted: a name with dots or backticks means something different in
# each catalog, and a typo should fail before a long run, not after.
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CatalogError(ValueError):
    """The tables cannot be registered as asked (bad name, no persistent catalog, name taken)."""


def _check_ident(kind: str, name: str) -> str:
    if not _IDENT.match(name):
        raise CatalogError(f"--{kind} {name!r}: use letters, digits and underscores (not starting with a digit)")
    return name


def qualified(database: str, table: str | None = None, catalog: str | None = None) -> str:
    """``catalog.database.table`` (or shorter), each part back-quoted."""
    parts = ([_check_ident("catalog", catalog)] if catalog else []) + [_check_ident("database", database)]
    if table is not None:
        parts.append(table)
    return ".".join(f"`{p}`" for p in parts)


def check_catalog(spark: SparkSession, database: str, catalog: str | None = None) -> None:
    """Fail before the run, not after it, when the tables could not be registered.

    A session built without a metastore has Spark's in-memory catalog: a database made
    there vanishes with the session, so ``--database`` would silently register nothing.
    """
    qualified(database, catalog=catalog)
    impl = spark.conf.get("spark.sql.catalogImplementation", "in-memory")
    if impl != "hive" and not catalog:
        raise CatalogError(
            "--database needs a persistent catalog, but this Spark session's catalog is in-memory "
            "(spark.sql.catalogImplementation=in-memory): run on a cluster with a metastore (Databricks, "
            "a Hive metastore), or configure one, e.g. PYSPARK_SUBMIT_ARGS='--conf "
            "spark.sql.catalogImplementation=hive pyspark-shell' (see docs/catalog.md)"
        )
    if catalog:
        try:
            spark.sql(f"SHOW DATABASES IN `{catalog}`").limit(1).collect()
        except Exception as e:
            raise CatalogError(f"--catalog {catalog!r} is not usable in this session: {_first_line(e)}") from None


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]


def qualified_location(spark: SparkSession, path: str) -> str:
    """The folder as Delta itself resolves it (scheme and absolute path, e.g. ``file:/tmp/out/operators``).

    Qualified through Hadoop's FileSystem, as Delta's writer does, so a relative ``--output``
    means the same folder to the metastore as it did to the write, on any file system.
    """
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return str(fs.makeQualified(hpath).toString()).rstrip("/")


def _same_location(a: str, b: str) -> bool:
    # A metastore may hand back file:/x or file:///x for the same local folder.
    norm = lambda s: re.sub(r"^file:/+", "file:/", s.rstrip("/"))  # noqa: E731
    return norm(a) == norm(b)


@dataclass(frozen=True)
class Registration:
    """Which tables of an output folder to register, under which database (and catalog):
    checked before a run (:func:`check_names_free`) and registered after it
    (:func:`register_tables`)."""

    output: str
    tables: tuple[str, ...]
    database: str
    catalog: str | None = None


def register_tables(spark: SparkSession, reg: Registration) -> list[str]:
    """Create (if missing) the database and one external Delta table per folder; return the names.

    A table already registered at the same folder is left as is: the new rows are already
    visible through it. A table of that name over a *different* folder is an error, never
    re-pointed: another run's or another team's table must not silently change meaning.
    """
    output, database, catalog = reg.output, reg.database, reg.catalog
    check_catalog(spark, database, catalog)
    check_names_free(spark, reg)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {qualified(database, catalog=catalog)}")
    names = []
    for table in reg.tables:
        path = delta_sink.table_path(output, table)
        if not DeltaTable.isDeltaTable(spark, path):
            raise CatalogError(f"{path} is not a Delta table; nothing to register as {database}.{table}")
        name = qualified(database, table, catalog)
        location = qualified_location(spark, path)
        escaped = location.replace("\\", "\\\\").replace("'", "\\'")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING DELTA LOCATION '{escaped}'")
        names.append(name.replace("`", ""))
    return names


def check_names_free(spark: SparkSession, reg: Registration) -> None:
    """Every table name is either unused or already registered over this run's folder.

    Called before the run too, so that a name taken by another output folder fails in
    seconds instead of after the whole computation.
    """
    output, database, catalog = reg.output, reg.database, reg.catalog
    if not _database_exists(spark, database, catalog):
        return
    for table in reg.tables:
        name = qualified(database, table, catalog)
        if not spark.catalog.tableExists(name):
            continue
        location = qualified_location(spark, delta_sink.table_path(output, table))
        try:
            current = str(spark.sql(f"DESCRIBE DETAIL {name}").select("location").first()[0])
        except Exception as e:  # e.g. a non-Delta table or a view of that name
            raise CatalogError(f"{name} exists and is not a Delta table: {_first_line(e)}") from None
        if not _same_location(current, location):
            raise CatalogError(
                f"{name} already exists at {current}, not at {location}: use another --database, "
                "or DROP TABLE it first (an external table's drop leaves its data folder alone)"
            )


def _database_exists(spark: SparkSession, database: str, catalog: str | None) -> bool:
    # spark.catalog.databaseExists takes a (possibly qualified) name since Spark 3.4.
    return bool(spark.catalog.databaseExists(qualified(database, catalog=catalog)))


def with_registration(
    spark: SparkSession,
    command: str,
    output: str,
    database: str | None,
    catalog: str | None,
    run: Callable[[], R],
    say: Callable[[str], None] | None = None,
) -> R:
    """``run()`` a command that writes ``COMMAND_TABLES[command]`` under ``output``, and with
    ``--database`` register them: the names are checked before the run (a taken name fails in
    seconds, not after the whole computation) and registered after it."""
    if catalog and not database:
        raise CatalogError("--catalog needs --database")
    reg = Registration(output, COMMAND_TABLES[command], database, catalog) if database else None
    if reg is not None:
        check_catalog(spark, reg.database, reg.catalog)
        check_names_free(spark, reg)
    result = run()
    if reg is not None:
        names = register_tables(spark, reg)
        if say:
            say("catalog tables: " + ", ".join(names))
    return result
