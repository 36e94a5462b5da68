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
  tables at those versions never shows a run half-written across tables.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
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

RUNS_TABLE = "runs"
_KEY_WORDS = {"graph_id": "graphs", "check_id": "checks", "savepoint": "savepoints"}
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
RUN_TAG_PREFIX = "flink-jobgraph-run:"
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


def table_path(output: str, table: str) -> str:
    return f"{output.rstrip('/')}/{table}"


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
    its ``runs`` row. ``replace_where_max_keys``: settings ``tables.replace_where_max_keys``."""
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
        _publish(spark, output, commit, ids, counts)
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

    table = DeltaTable.forPath(spark, path)  # the MERGE's snapshot: taken before the version the compare reads
    read_version = _latest_version(spark, path)
    current = spark.read.format("delta").option("versionAsOf", read_version).load(path)
    columns = current.columns
    rows = rows.select(*columns)
    if compare:
        changed = _changed_graphs(rows, current, run_ids, key).localCheckpoint(eager=True)
    else:  # every key of the run is replaced: the rows of those that now have none deleted
        changed = run_ids.select(F.col(run_ids.columns[0]).alias(key)).distinct().localCheckpoint(eager=True)
    # one Spark job for a few keys (the nightly case), not a count and then a collect
    head = changed.limit(replace_where_max_keys + 1).collect()
    if not head:
        return read_version, 0  # this version already holds the run's rows for its keys
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
    if not DeltaTable.isDeltaTable(spark, path):
        return ()
    have = {f.name for f in spark.read.format("delta").load(path).schema.fields}
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
    """An existing table's newest version, from its log's listing (:func:`latest_commit`):
    ``history(1)`` would run a Spark job."""
    newest = latest_commit(spark, path)
    assert newest is not None, path  # the caller found the table
    return newest[0]


def _committed(spark: SparkSession, path: str, tag: str | None, keys: int) -> tuple[int, int]:
    """(the version of this run's commit, the keys it rewrote), from the commit files
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
) -> None:
    """Append the run's row to ``runs``: the run is finished in every table. A blind append,
    so concurrent runs' publishes do not conflict (only two first creations can)."""
    row = [
        (
            commit.run_id,
            None,
            len(graph_ids),
            graphs_digest(graph_ids),
            {t: c.version for t, c in commit.tables.items()},
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
            df.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
            return
        except COMMIT_CONFLICTS:
            if attempt == MAX_ATTEMPTS:
                raise
            time.sleep(0.2 * attempt * (0.5 + random.random()))


_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
_COMMITS: dict[tuple[str, int, int], list[tuple[int, str | None]]] = {}


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
            m = _COMMIT_FILE.match(entry.name)
            if m:
                found.append((int(m.group(1)), entry.stat().st_mtime_ns // 1_000_000))
    else:
        hpath = spark._jvm.org.apache.hadoop.fs.Path(log)
        fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
        if not fs.exists(hpath):
            return None
        for st in fs.listStatus(hpath):
            m = _COMMIT_FILE.match(st.getPath().getName())
            if m:
                found.append((int(m.group(1)), int(st.getModificationTime())))
    return max(found) if found else None


def table_commits(spark: SparkSession, path: str) -> list[tuple[int, str | None]]:
    """(version, run id) of every commit of the table, oldest first (none: no table there), read
    from its history once per newest commit: a table's history up to a commit never changes."""
    newest = latest_commit(spark, path)
    if newest is None:
        return []
    key = (path, *newest)
    if key in _COMMITS:
        return _COMMITS[key]
    if is_local_path(spark, path):
        commits = _local_commits(local_path(path))
    else:
        hist = DeltaTable.forPath(spark, path).history().select("version", "userMetadata").collect()
        commits = sorted((int(h["version"]), _run_of(h["userMetadata"])) for h in hist)
    if commits and commits[-1][0] == newest[0]:
        _COMMITS[key] = commits
    return commits


def _local_commits(path: str) -> list[tuple[int, str | None]]:
    """What ``history()`` says of each commit (version, its run), read from the commit files of
    a local table: history() runs a Spark job per table, which a fresh JVM pays for table by
    table (docs/performance.md)."""
    log = os.path.join(path, "_delta_log")
    commits = []
    for name in sorted(os.listdir(log)):
        m = _COMMIT_FILE.match(name)
        if not m:
            continue
        user_metadata = None
        with open(os.path.join(log, name), encoding="utf-8") as f:
            for line in f:
                if line.startswith('{"commitInfo"'):
                    user_metadata = json.loads(line)["commitInfo"].get("userMetadata")
                    break
        commits.append((int(m.group(1)), _run_of(user_metadata)))
    return commits


def _run_of(user_metadata: str | None) -> str | None:
    if user_metadata and user_metadata.startswith(RUN_TAG_PREFIX):
        return user_metadata[len(RUN_TAG_PREFIX) :]
    return None


def published_versions(spark: SparkSession, output: str, tables: Sequence[str] | None = None) -> dict[str, int | None]:
    """Per table, the version to read so that all tables hold the same set of finished runs
    (None: the table has no version in that set; read it as empty).

    A commit is *finished* when its run published, or when a published run over the same
    graph set read or committed that table at or after it (the re-run after a kill: it
    checked every graph of the set in every table, so the dead run's rows there are its own).
    Starting from the finished runs, a run is dropped while any table would have to include
    a commit of an unfinished run before one of its own: what is left is a cut in which every
    run is either complete in all tables or absent from all of them.
    """
    published = _published_runs(spark, output)
    if tables is None:
        tables = sorted({t for p in published.values() for t in p["versions"]})
    commits = {t: table_commits(spark, table_path(output, t)) for t in tables}

    by_run: dict[str, dict[str, int]] = {}
    for t, cs in commits.items():
        for v, run in cs:
            if run is not None:
                by_run.setdefault(run, {})[t] = max(v, by_run.get(run, {}).get(t, -1))
    # an unpublished run's commits are covered by a published run over the same graphs that
    # holds, in each of those tables, a version at or after them
    covers: dict[str, set[str]] = {}
    for run in by_run:
        if run in published:
            continue
        digest = _digest_of(run)
        covers[run] = {
            p
            for p, info in published.items()
            if digest is not None
            and info["digest"] == digest
            and all(info["versions"].get(t, -1) >= v for t, v in by_run[run].items())
        }
    keep = set(published) | {r for r, c in covers.items() if c}
    while True:
        cut = {t: _prefix_end(cs, keep) for t, cs in commits.items()}
        drop = {
            run
            for run in keep
            if any(v > (cut.get(t) if cut.get(t) is not None else -1) for t, v in by_run.get(run, {}).items())
        }
        drop |= {run for run in keep if run in covers and not (covers[run] & keep)}
        if not drop:
            return cut
        keep -= drop


_RUNS: dict[tuple[str, int, int], dict[str, dict]] = {}


def _published_runs(spark: SparkSession, output: str) -> dict[str, dict]:
    """run id -> its graph set's digest and table versions, from ``runs``, read once per newest
    commit of it: an incremental run asked twice before its graphs were read (a Spark job on
    the runs table each time)."""
    runs_path = table_path(output, RUNS_TABLE)
    newest = latest_commit(spark, runs_path)
    if newest is None:
        return {}
    key = (runs_path, *newest)
    if key not in _RUNS:
        _RUNS[key] = {
            r["run_id"]: {"digest": r["graphs_digest"], "versions": dict(r["versions"] or {})}
            for r in spark.read.format("delta").load(runs_path).select("run_id", "graphs_digest", "versions").collect()
        }
    return {run: {"digest": p["digest"], "versions": dict(p["versions"])} for run, p in _RUNS[key].items()}


def _digest_of(run_id: str) -> str | None:
    """An unpublished run's graph set is recorded nowhere but in its id (:func:`run_id_for`)."""
    return run_id.rsplit("~", 1)[1] if "~" in run_id else None


def run_id_for(graph_ids: Sequence[str]) -> str:
    """A run id that carries the digest of the run's graph set, so that a run killed before
    publishing is recognised as covered by a later published run over the same graphs."""
    return f"{new_run_id()}~{graphs_digest(graph_ids)}"


def _prefix_end(commits: list[tuple[int, str | None]], keep: set[str]) -> int | None:
    """The last version before the first commit of a run outside ``keep`` (untagged commits,
    e.g. maintenance, are neither)."""
    end = None
    for v, run in commits:
        if run is not None and run not in keep:
            break
        end = v
    return end


def read_published(spark: SparkSession, output: str, tables: Sequence[str] | None = None) -> dict[str, DataFrame]:
    """The tables at :func:`published_versions`: a consistent view across tables."""
    out = {}
    for t, v in published_versions(spark, output, tables).items():
        if not DeltaTable.isDeltaTable(spark, table_path(output, t)):
            continue  # no run has created it yet
        reader = spark.read.format("delta")
        out[t] = (
            reader.load(table_path(output, t)).limit(0)
            if v is None
            else reader.option("versionAsOf", v).load(table_path(output, t))
        )
    return out


def is_delta_folder(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` is a folder ``ingest`` wrote (its ``stream_nodes`` is a Delta table: its
    log holds a commit), asked of the file system (:func:`latest_commit`): the first Delta call
    of a process initialises Delta in the JVM, which a run from spec files (a one-job deploy
    gate, which reads and writes no table) would pay for nothing (docs/performance.md)."""
    try:
        return latest_commit(spark, table_path(path, "stream_nodes")) is not None
    except Exception:
        return False
