"""The Delta tables, replaced by key (graph by graph), one commit per table, published per run.

A run owns the graph_ids it read: in every table, rows of those graphs are replaced by the
run's rows, so re-running on the same input leaves the same content, a graph that now fails
leaves job_vertices for graph_errors (and back), and graphs of other runs are left alone.

What a kill or a concurrent run can do to that, and why the writes below are shaped this
way, is docs/faults.md. In short:

- each table's replace is ONE Delta commit (a MERGE whose source is the new rows plus one
  delete marker per graph; for a few graphs an overwrite with ``replaceWhere graph_id IN
  (...)``, which costs about half), so a reader of a table sees it wholly before or wholly
  after the run, never with a graph's old rows deleted and its new ones missing;
- only graphs whose rows differ from the table's are in that MERGE (a per-graph
  fingerprint), and tables have deletion vectors on: a re-run with one graph changed
  rewrites that graph's rows, not the files around them (an incremental run's per-operator
  tables skip that compare: :attr:`TableWrite.compare`);
- Delta's optimistic concurrency makes a MERGE of one run fail if another run committed to
  the same table meanwhile (the tables are not partitioned, so every MERGE reads the whole
  table); the MERGE is idempotent, so it is recomputed and retried, a bounded number of times;
- Delta has no transaction over several tables. Each commit is tagged with the run's id
  (commitInfo.userMetadata), and after its four commits a run appends one row to the
  ``runs`` table (the publish). :func:`published_versions` gives, per table, the latest
  version at which every table holds exactly the same set of finished runs: reading the
  tables at those versions never shows a run half-written across tables. It lives in
  :mod:`pipeline.tables.published`, with the record of that view each publish leaves in the
  ``runs`` table's log, from which the next run reads it without reading a table.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from delta.exceptions import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    ConcurrentWriteException,
    DeltaConcurrentModificationException,
    MetadataChangedException,
    ProtocolChangedException,
)
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.utils import AnalysisException

from pipeline.session import is_local_path, local_frame, local_path
from pipeline.settings import TableSettings
from pipeline.tables import delta_log
from pipeline.tables.published import (  # noqa: F401 - also this module's names, as callers know them
    COMMIT_FILE,
    RUN_TAG_PREFIX,
    RUNS_TABLE,
    PublishingRun,
    published_versions,
    read_published,
    table_commits,
    table_path,
    view_record,
)

_KEY_WORDS = {"graph_id": "graphs", "check_id": "checks", "savepoint": "savepoints"}
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
MAX_ATTEMPTS = 12  # per table; two or three concurrent runs need a few, see scripts/fault_trials.py
REPLACE_WHERE_MAX_KEYS = TableSettings.replace_where_max_keys
_OP = "__flink_jobgraph_op"  # MERGE source column: 'I' a row to insert, 'D' a graph's delete marker

# Delta's commit conflicts. In delta-spark's Python API (3.3) the specific ones are NOT
# subclasses of DeltaConcurrentModificationException (each derives from CapturedException),
# so catching the base class alone retried none of them: two runs creating the same table
# at once failed one run with ProtocolChangedException (scripts/fault_trials.py, docs/faults.md).
COMMIT_CONFLICTS: tuple[type[Exception], ...] = (
    DeltaConcurrentModificationException,
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    ConcurrentWriteException,
    MetadataChangedException,
    ProtocolChangedException,
)


RUNS_SCHEMA = (
    "run_id string, finished_at timestamp, graphs long, graphs_digest string, "
    "versions map<string,long>, rewritten_graphs map<string,long>, attempts map<string,long>, "
    "counts map<string,long>"
)


@dataclass
class TableCommit:
    """What one table's replace did: the table version that holds the run's rows (its own
    commit, or the version it found already equal), graphs rewritten, tries it took."""

    version: int
    rewritten_graphs: int
    attempts: int
    added_columns: tuple[str, ...] = ()  # columns this release added to a table an earlier one wrote


@dataclass
class RunCommit:
    run_id: str
    tables: dict[str, TableCommit] = field(default_factory=dict)


@dataclass(frozen=True)
class TableWrite:
    """One table of a run: its rows, the key column a run replaces rows by (``graph_id`` for
    the graph tables, ``check_id`` / ``savepoint`` for the restore tables), and the key values
    the run owns in it (None: the run's ids). Rows of an owned key that the run no longer has
    are deleted, as a graph that now fails leaves ``job_vertices``."""

    name: str
    rows: DataFrame
    key: str = "graph_id"
    ids: DataFrame | None = None
    key_count: int | None = None  # keys with rows, when the caller knows it (no scan to count them)
    # Whether each key's rows are compared with the table's first, so that only keys whose rows
    # differ are rewritten (a full re-run of the same input commits nothing). An incremental
    # run's few graphs (their spec changed) skip it in its per-operator tables: the compare
    # scans every column of every row of the table to spare rewriting those of them whose rows
    # happen to be equal.
    compare: bool = True


def new_run_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:12]}"


def write_run(
    spark: SparkSession,
    output: str,
    tables: Sequence[TableWrite | tuple[str, DataFrame]],
    run_ids: DataFrame,
    run_id: str | None = None,
    say: Callable[[str], None] | None = None,
    graph_counts: Mapping[str, int] | None = None,
    deletion_vectors: bool = True,
    counts: Mapping[str, int] | None = None,
    replace_where_max_keys: int = REPLACE_WHERE_MAX_KEYS,
    rules_version: str | None = None,
) -> RunCommit:
    """Replace the run's keys in every table (from threads: each write has driver-side
    phases during which the others keep the cores busy), then publish the run.

    ``run_ids``: one column, the ids the run is about (its graph ids; a restore check's check
    ids), recorded in ``runs``; a table given as ``(name, rows)`` is keyed by ``graph_id`` and
    owns them. ``graph_counts``: per table, the number of keys its rows hold, when the caller
    knows it (the pipeline counts every kind of row in one pass): a table created by this run
    then records it without a scan of its rows to count them. ``deletion_vectors``: whether a
    table this run creates has them (settings ``tables.deletion_vectors``). ``counts``: what the
    run did, by name (compute: graphs skipped as unchanged, recomputed, new, rejected), kept in
    its ``runs`` row. ``replace_where_max_keys``: settings ``tables.replace_where_max_keys``.
    ``rules_version``: the rules the run computed under, kept in its publish's record
    (:func:`pipeline.tables.published.published_rules_version`)."""
    writes = [
        w if isinstance(w, TableWrite) else TableWrite(w[0], w[1], key_count=(graph_counts or {}).get(w[0]))
        for w in tables
    ]
    ids = sorted(r[0] for r in run_ids.collect())
    run_id = run_id or run_id_for(ids)
    tag = RUN_TAG_PREFIX + run_id
    previous = spark.conf.get(USER_METADATA_CONF, None)
    spark.conf.set(USER_METADATA_CONF, tag)
    commit = RunCommit(run_id)
    if say:
        say(f"delta write: run {run_id.split('~')[0]} starts, {len(ids)} graphs")
    try:
        with ThreadPoolExecutor(max_workers=len(writes)) as pool:
            options = (run_ids, bool(ids), tag, say, deletion_vectors, replace_where_max_keys)
            futures = {w.name: pool.submit(_write_table, spark, output, w, *options) for w in writes}
            for w in writes:
                commit.tables[w.name] = futures[w.name].result()  # re-raises the first failure; nothing is published
                _say_table(say, w, commit.tables[w.name])
        _publish(spark, output, commit, ids, counts, rules_version)
        if say:
            say("delta write: run published")
    finally:
        if previous is None:
            spark.conf.unset(USER_METADATA_CONF)
        else:
            spark.conf.set(USER_METADATA_CONF, previous)
    return commit


def _say_table(say: Callable[[str], None] | None, w: TableWrite, c: TableCommit) -> None:
    if not say:
        return
    if c.added_columns:
        say(f"delta write: {w.name}: columns added by this release: {', '.join(c.added_columns)}")
    say(f"delta write: {w.name} at version {c.version}, {c.rewritten_graphs} {_KEY_WORDS.get(w.key, 'keys')} rewritten")


def _write_table(
    spark: SparkSession,
    output: str,
    w: TableWrite,
    run_ids: DataFrame,
    run_has_ids: bool,
    tag: str,
    say: Callable[[str], None] | None,
    deletion_vectors: bool,
    replace_where_max_keys: int,
) -> TableCommit:
    """One table of a run. A run about no keys (an incremental run that found every graph
    unchanged) leaves an existing table as it is: its latest version holds the run's (no) rows."""
    path = table_path(output, w.name)
    if not run_has_ids and w.ids is None and DeltaTable.isDeltaTable(spark, path):
        return TableCommit(_latest_version(spark, path), 0, 1)
    return _replace_with_retry(
        spark, output, w.name, w.rows, w.ids if w.ids is not None else run_ids, tag, say, w.key_count, w.key,
        deletion_vectors, w.compare, replace_where_max_keys,
    )  # fmt: skip


def prepare_replaces(spark: SparkSession, output: str, tables: Sequence[str]) -> threading.Thread:
    """Delta's snapshot of each of ``tables`` and its counts, computed now in a thread, for
    the replaces that come later in the run.

    A ``replaceWhere`` on a table with deletion vectors runs Delta's DELETE, which first
    reconstructs the snapshot's files and then counts them (``DeleteCommand`` reads
    ``numOfFiles``): two Spark queries per table, and on the run's first Delta write its classes
    and their generated code, all while a night's writes, in their threads, keep both cores busy.
    Started before the chains step, whose many small jobs leave part of a core idle, the writes
    find them done (a 1% night on fleet-10k: the write 5.9-6.8 s -> 3.9-4.4 s, the chains step
    1.7-1.9 s -> 2.7-3.2 s, the run about 1 s shorter on five alternated pairs; docs/performance.md).

    Nothing of the writes depends on it. The snapshot stays in Delta's own ``DeltaLog`` cache;
    every commit's transaction still asks the log for a newer version first, and recomputes on
    a newer one (another run's commit); a table missing or unreadable here is left to the
    write to report. Its jobs inherit the caller's job group (``InheritableThread``)."""
    from pyspark import InheritableThread

    def run() -> None:
        for name in tables:
            try:
                delta_log.file_count(spark, table_path(output, name))
            except Exception:  # noqa: BLE001, S112 - only spares the write work; it reports its own errors
                continue

    thread = InheritableThread(target=run, name="flink-jobgraph-delta-snapshots", daemon=True)
    thread.start()
    return thread


def replace_graphs(
    spark: SparkSession, output: str, table: str, rows: DataFrame, run_ids: DataFrame, key: str = "graph_id"
) -> TableCommit:
    """One table's replace by ``key``, unpublished, tagged as the session's user metadata says
    (for callers that write a single table)."""
    return _replace_with_retry(spark, output, table, rows, run_ids, None, None, key=key)


def _replace_with_retry(
    spark: SparkSession,
    output: str,
    table: str,
    rows: DataFrame,
    run_ids: DataFrame,
    tag: str | None,
    say: Callable[[str], None] | None,
    graph_count: int | None = None,
    key: str = "graph_id",
    deletion_vectors: bool = True,
    compare: bool = True,
    replace_where_max_keys: int = REPLACE_WHERE_MAX_KEYS,
) -> TableCommit:
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            added = _add_new_columns(spark, table_path(output, table), rows)
            version, rewritten = _replace_once(
                spark, table_path(output, table), rows, run_ids, tag, graph_count, key, deletion_vectors, compare,
                replace_where_max_keys,
            )  # fmt: skip
            return TableCommit(version, rewritten, attempt, added)
        except COMMIT_CONFLICTS as e:
            if attempt == MAX_ATTEMPTS:
                raise
            # Another run committed to this table between our read and our commit. The MERGE is
            # recomputed against the new version; jitter keeps two retrying runs from colliding again.
            if say:
                say(f"{table}: concurrent commit ({type(e).__name__}), retry {attempt}/{MAX_ATTEMPTS - 1}")
            time.sleep(min(8.0, 0.25 * 2 ** (attempt - 1)) * (0.5 + random.random()))
    raise AssertionError("unreachable")


def _replace_once(
    spark: SparkSession,
    path: str,
    rows: DataFrame,
    run_ids: DataFrame,
    tag: str | None,
    graph_count: int | None = None,
    key: str = "graph_id",
    deletion_vectors: bool = True,
    compare: bool = True,
    replace_where_max_keys: int = REPLACE_WHERE_MAX_KEYS,
) -> tuple[int, int]:
    # One file per core, not one per input partition: the per-graph stage's rows keep the
    # input's partitioning (a task per spec file), and a hundred small files per table cost
    # Delta more than the rows.
    rows = rows.coalesce(spark.sparkContext.defaultParallelism)  # never adds partitions
    if not DeltaTable.isDeltaTable(spark, path):
        _create(rows, path, deletion_vectors)
        # The write created the table: its commit is version 0 (a concurrent creation fails
        # it), whatever other runs committed since.
        return 0, graph_count if graph_count is not None else rows.select(key).distinct().count()

    if not compare:
        # every key of the run is replaced: the rows of those that now have none deleted. The
        # columns come from the log; neither the table nor a DeltaTable is loaded (each costs
        # a snapshot's reconstruction, a Spark job on a cold JVM), as the overwrite below and
        # _merge's own DeltaTable see the table's newest version anyway.
        columns = list(delta_log.table_state(spark, path).columns)
        rows = rows.select(*columns)
        changed = run_ids.select(F.col(run_ids.columns[0]).alias(key)).distinct().localCheckpoint(eager=True)
        return _replace_keys(spark, path, rows, changed, columns, key, tag, replace_where_max_keys, None)
    table = DeltaTable.forPath(spark, path)  # the MERGE's snapshot: taken before the version the compare reads
    read_version = _latest_version(spark, path)
    current = delta_log.read_at(spark, path, read_version)  # over the files its checksum lists
    columns = current.columns
    rows = rows.select(*columns)
    changed = _changed_graphs(rows, current, run_ids, key).localCheckpoint(eager=True)
    compared = (table, current, read_version)
    return _replace_keys(spark, path, rows, changed, columns, key, tag, replace_where_max_keys, compared)


def _replace_keys(
    spark: SparkSession,
    path: str,
    rows: DataFrame,
    changed: DataFrame,
    columns: list[str],
    key: str,
    tag: str | None,
    replace_where_max_keys: int,
    compared: tuple[DeltaTable, DataFrame, int] | None,
) -> tuple[int, int]:
    """The ``changed`` keys' rows replaced in one commit: an overwrite with ``replaceWhere`` for
    a few, else a MERGE. ``compared``: the DeltaTable, table and version the compare read (the
    MERGE keeps that snapshot, so that a commit after the compare's read conflicts with it)."""
    # one Spark job for a few keys (the nightly case), not a count and then a collect
    head = changed.limit(replace_where_max_keys + 1).collect()
    if not head:
        # the version the compare read already holds the run's rows for its keys (without a
        # compare, the run has no keys)
        return (compared[2] if compared else _latest_version(spark, path)), 0
    if len(head) <= replace_where_max_keys:
        keys = sorted(r[0] for r in head)
        (
            rows.join(changed, key, "left_semi")
            .select(*columns)
            .coalesce(1)
            .write.format("delta")
            .mode("overwrite")
            .option("replaceWhere", f"`{key}` IN ({', '.join(sql_string(k) for k in keys)})")
            .save(path)
        )
        return _committed(spark, path, tag, len(keys))
    n_changed = changed.count()
    if compared is None:
        current = spark.read.format("delta").load(path)
        compared = (DeltaTable.forPath(spark, path), current, -1)
    table, current, _ = compared
    _merge(table, rows, changed, dict(current.dtypes), columns, key)
    return _committed(spark, path, tag, n_changed)


def _create(rows: DataFrame, path: str, deletion_vectors: bool) -> None:
    """The first run creates the table with its rows in commit 0. "errorifexists" makes a
    creation race fail as a concurrent modification (and retry as a MERGE) instead of appending
    over a table another run just created. File statistics only for graph_id, the first column:
    it is what runs and queries filter on; the other columns are mostly random hash IDs whose
    min/max skip nothing (see bench/README.md). Deletion vectors: a later MERGE marks a replaced
    graph's rows deleted instead of rewriting their files."""
    try:
        (
            rows.write.format("delta")
            .option("delta.dataSkippingNumIndexedCols", "1")
            .option("delta.enableDeletionVectors", str(deletion_vectors).lower())
            .mode("errorifexists")
            .save(path)
        )
    except AnalysisException as e:
        if "already exist" not in str(e):  # Delta: "Cannot write to already existent path"
            raise
        raise _CreatedConcurrently(str(e)) from e


def _merge(
    table: DeltaTable, rows: DataFrame, changed: DataFrame, types: dict[str, str], columns: list[str], key: str
) -> None:
    """One MERGE replacing the changed keys' rows: a delete marker per key, then its new rows."""
    markers = changed.select(
        *[F.col(c) if c == key else F.lit(None).cast(types[c]).alias(c) for c in columns],
        F.lit("D").alias(_OP),
    )
    source = rows.join(changed, key, "left_semi").select(*columns, F.lit("I").alias(_OP))
    (
        table.alias("t")
        .merge(source.unionByName(markers).alias("s"), f"t.`{key}` = s.`{key}` AND s.{_OP} = 'D'")
        .whenMatchedDelete()
        .whenNotMatchedInsert(condition=f"s.{_OP} = 'I'", values={c: f"s.`{c}`" for c in columns})
        .execute()
    )


def sql_string(value: str) -> str:
    """``value`` as a Spark SQL string literal (backslash escapes, as Spark parses them)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _add_new_columns(spark: SparkSession, path: str, rows: DataFrame) -> tuple[str, ...]:
    """A table an earlier release wrote lacks the columns added since: they are added (nullable,
    a metadata-only commit), and the MERGE then rewrites every key whose rows now differ, so the
    new columns are filled. Columns are only ever added, never dropped or retyped (SPEC)."""
    state = delta_log.table_state(spark, path)
    if state is None:
        return ()
    have = set(state.columns)  # from the log: loading the table would reconstruct its state first
    new = [f for f in rows.schema.fields if f.name not in have]
    if new:
        added = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in new)
        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS ({added})")
    return tuple(f.name for f in new)


class _CreatedConcurrently(DeltaConcurrentModificationException):
    """Another run created the table between our check and our write: retry as a MERGE."""

    def __init__(self, desc: str) -> None:
        Exception.__init__(self, desc)
        self.desc, self.stackTrace, self.cause = desc, None, None

    def __str__(self) -> str:
        return self.desc


def _fingerprints(df: DataFrame, key: str = "graph_id") -> DataFrame:
    """Per key: row count and two sums of row hashes over a JSON rendering of the whole row
    (JSON keeps null positions apart, which a hash over the columns alone would not)."""
    text = F.to_json(F.struct(*[F.col(c) for c in df.columns]))
    return df.groupBy(key).agg(
        F.count(F.lit(1)).alias("n"),
        F.sum(F.xxhash64(text).cast("decimal(38,0)")).alias("h1"),
        F.sum(F.hash(text).cast("decimal(38,0)")).alias("h2"),
    )


def _changed_graphs(rows: DataFrame, current: DataFrame, run_ids: DataFrame, key: str = "graph_id") -> DataFrame:
    """The run's keys (graph ids) whose rows in the table are not exactly the run's rows."""
    ids = F.broadcast(run_ids.select(F.col(run_ids.columns[0]).alias(key)).distinct())
    new = _fingerprints(rows, key).alias("a")
    old = _fingerprints(current.join(ids, key, "left_semi"), key).alias("b")
    same = (
        F.col("a.n").eqNullSafe(F.col("b.n"))
        & F.col("a.h1").eqNullSafe(F.col("b.h1"))
        & F.col("a.h2").eqNullSafe(F.col("b.h2"))
    )
    joined = new.join(old, F.col(f"a.{key}") == F.col(f"b.{key}"), "full_outer")
    return joined.where(~same).select(F.coalesce(F.col(f"a.{key}"), F.col(f"b.{key}")).alias(key))


def _latest_version(spark: SparkSession, path: str) -> int:
    """An existing table's newest version, from its Delta log (:func:`delta_log.table_state`):
    ``history(1)`` would run a Spark job."""
    state = delta_log.table_state(spark, path)
    assert state is not None, path  # the caller found the table
    return state.version


def _committed(spark: SparkSession, path: str, tag: str | None, keys: int) -> tuple[int, int]:
    """(the version of this run's commit, the keys it rewrote), from the table's Delta log
    (:func:`table_commits`), not a Spark job over ``history()``; other runs may have committed
    after it. Delta commits nothing for a replace whose keys had no rows and get none (a
    check without state problems before and after): the table's latest version then holds the
    run's rows, and no key was rewritten. Untagged (a single table's replace): its latest version."""
    commits = table_commits(spark, path)
    latest = max(v for v, _ in commits)
    if tag is None:
        return latest, keys
    mine = [v for v, run in commits if run is not None and RUN_TAG_PREFIX + run == tag]
    return (max(mine), keys) if mine else (latest, 0)


def graphs_digest(graph_ids: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sorted(graph_ids)).encode("utf-8")).hexdigest()


def _publish(
    spark: SparkSession,
    output: str,
    commit: RunCommit,
    graph_ids: Sequence[str],
    counts: Mapping[str, int] | None = None,
    rules_version: str | None = None,
) -> None:
    """Append the run's row to ``runs``: the run is finished in every table. A blind append,
    so concurrent runs' publishes do not conflict (only two first creations can). Its commit's
    userMetadata is the run's tag and the published view it leaves (published.view_record),
    so that the next run reads that view from the log instead of this table's rows."""
    versions = {t: c.version for t, c in commit.tables.items()}
    publishing = PublishingRun(commit.run_id, graphs_digest(graph_ids), versions, rules_version)
    row = [
        (
            commit.run_id,
            None,
            len(graph_ids),
            publishing.digest,
            versions,
            {t: c.rewritten_graphs for t, c in commit.tables.items()},
            {t: c.attempts for t, c in commit.tables.items()},
            dict(counts) if counts else None,
        )
    ]
    df = local_frame(spark, row, RUNS_SCHEMA).withColumn("finished_at", F.current_timestamp())
    path = table_path(output, RUNS_TABLE)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            # mergeSchema: a runs table an earlier release wrote gains the columns added since
            writer = df.write.format("delta").mode("append").option("mergeSchema", "true")
            writer.option("userMetadata", _publish_metadata(spark, output, publishing)).save(path)
            return
        except COMMIT_CONFLICTS:
            if attempt == MAX_ATTEMPTS:
                raise
            time.sleep(0.2 * attempt * (0.5 + random.random()))


def _publish_metadata(spark: SparkSession, output: str, run: PublishingRun) -> str:
    """The publish commit's userMetadata: the run's tag and the view it leaves. Should working
    out that view fail, the run still publishes with its tag alone: the next run then finds no
    view in the log and reads the ``runs`` table's rows, as it always could."""
    try:
        return view_record(spark, output, run)
    except Exception:  # noqa: BLE001 - the record only spares the next run a read
        return RUN_TAG_PREFIX + run.run_id


def latest_commit(spark: SparkSession, path: str) -> tuple[int, int] | None:
    """The table's newest commit (version, its file's modification time) from a listing of
    ``_delta_log``, without a Spark job (``history(1)`` runs one: a second each, cold, and a
    re-run asked it about every table several times)."""
    log = path.rstrip("/") + "/_delta_log"
    found: list[tuple[int, int]] = []
    if is_local_path(spark, log):
        folder = local_path(log)
        if not os.path.isdir(folder):
            return None
        for entry in os.scandir(folder):
            m = COMMIT_FILE.match(entry.name)
            if m:
                found.append((int(m.group(1)), entry.stat().st_mtime_ns // 1_000_000))
    else:
        hpath = spark._jvm.org.apache.hadoop.fs.Path(log)
        fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
        if not fs.exists(hpath):
            return None
        for st in fs.listStatus(hpath):
            m = COMMIT_FILE.match(st.getPath().getName())
            if m:
                found.append((int(m.group(1)), int(st.getModificationTime())))
    return max(found) if found else None


def run_id_for(graph_ids: Sequence[str]) -> str:
    """A run id that carries the digest of the run's graph set, so that a run killed before
    publishing is recognised as covered by a later published run over the same graphs."""
    return f"{new_run_id()}~{graphs_digest(graph_ids)}"


def is_delta_folder(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` is a folder ``ingest`` wrote (its ``stream_nodes`` is a Delta table: its
    log holds a commit), asked of the file system (:func:`latest_commit`): the first Delta call
    of a process initialises Delta in the JVM, which a run from spec files (a one-job deploy
    gate, which reads and writes no table) would pay for nothing (docs/performance.md)."""
    try:
        return latest_commit(spark, table_path(path, "stream_nodes")) is not None
    except Exception:
        return False
