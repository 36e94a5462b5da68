"""An output's tables as their Delta logs tell them, read through Delta's own log reader
(``DeltaLog`` and its ``Snapshot``) in the driver's JVM: no Spark job.

Before it reads its first spec, a run needs to know little of an output: whether each table is
there and with which columns, the commits past the published view (a run killed before it
published, or one still running), and the published fingerprints. Asked through Spark (a table
loaded to read ``.columns``, the ``runs`` table's rows, ``history()``), each answer made Delta
reconstruct the table's state from its log in a Spark job first, and in a fresh JVM those jobs
were most of what a run paid before its first spec, compiling Delta's and Spark's code paths
(docs/performance.md, "An output's log, read once"). The log answers them itself:

- :func:`table_state`: a table's newest version, its id and its columns, from the Snapshot's
  protocol and metadata, which Delta reads from that version's checksum file (``.crc``) or,
  without one, from its log;
- :func:`commits`: each commit's version and ``commitInfo.userMetadata`` (the run that made
  it), from ``DeltaLog.getChanges``: the commit files as Delta lists and reads them, coordinated
  commits included;
- :func:`read_at`: a table's rows at a version, through Delta's own reader: over the files the
  version's checksum lists when Delta wrote them there (the table's state without the Spark job
  that reconstructs it), else as ``versionAsOf`` reads it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

__all__ = ["TableState", "commits", "delta_tables", "file_count", "read_at", "table_state"]


@dataclass(frozen=True)
class TableState:
    """A table as its newest snapshot says it: version, the table's id (a table deleted and
    created again at the same path has another), and its columns in order."""

    version: int
    table_id: str
    columns: tuple[str, ...]


def _delta_log(spark: SparkSession, path: str) -> Any:
    """Delta's DeltaLog of ``path`` (Delta caches one per path in the JVM)."""
    return spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)


def _none(spark: SparkSession) -> Any:
    return spark._jvm.scala.Option.empty()


def _latest(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """(DeltaLog, its newest Snapshot): ``update()`` lists the log once, as any read does."""
    log = _delta_log(spark, path)
    return log, log.update(False, _none(spark), _none(spark))


def table_state(spark: SparkSession, path: str) -> TableState | None:
    """The table at ``path`` as its newest snapshot says it; None when there is no table. The
    columns come from the snapshot's metadata (its checksum file): no Spark job, where
    ``spark.read.load(path).columns`` reconstructed the table's state in one."""
    _, snapshot = _latest(spark, path)
    version = int(snapshot.version())
    if version < 0:
        return None
    metadata = snapshot.metadata()
    fields = json.loads(metadata.schemaString())["fields"]
    return TableState(version, str(metadata.id()), tuple(f["name"] for f in fields))


def file_count(spark: SparkSession, path: str) -> int:
    """The number of files of the table's newest snapshot. Unlike the rest of this module it
    runs Spark jobs: Delta reconstructs the snapshot's state to count them, and keeps state and
    count with the snapshot in its per-path cache, where a later replace of the table finds them
    (``delta_writer.prepare_replaces``)."""
    _, snapshot = _latest(spark, path)
    return int(snapshot.numOfFiles())


def _user_metadata(actions: Any) -> str | None:
    """The ``commitInfo.userMetadata`` of one commit's actions (Delta writes commitInfo first)."""
    for i in range(actions.size()):
        action = actions.apply(i)
        if action.getClass().getSimpleName() == "CommitInfo":
            value = action.userMetadata()
            return str(value.get()) if value.isDefined() else None
    return None


# (path, table id) -> (the version the commits were read from, the commits read so far, oldest
# first): a commit never changes once written, so a later call reads only the newer ones
_COMMITS: dict[tuple[str, str], tuple[int, list[tuple[int, str | None]]]] = {}


def commits(
    spark: SparkSession, path: str, start: int = 0, state: TableState | None = None
) -> list[tuple[int, str | None]]:
    """(version, userMetadata) of every commit of the table from version ``start`` on that its
    log still holds (none: no table), oldest first, read with ``DeltaLog.getChanges``, up to
    ``state``'s version (its newest, when not given). The commits read before are kept per table
    (its id tells a table created again apart)."""
    state = state or table_state(spark, path)
    if state is None:
        return []
    key = (path.rstrip("/"), state.table_id)
    since, known = _COMMITS.get(key, (start, []))
    if since > start:  # read from a later version before: read again from this one
        since, known = start, []
    first_new = known[-1][0] + 1 if known else since
    if first_new <= state.version:
        changes = _delta_log(spark, path).getChanges(first_new, False)
        while changes.hasNext():
            pair = changes.next()
            version = int(pair._1())
            if version > state.version:  # committed since the snapshot: the next call reads it
                break
            known.append((version, _user_metadata(pair._2())))
    _COMMITS[key] = (since, known)
    return [c for c in known if start <= c[0] <= state.version]


def _snapshot_at(spark: SparkSession, path: str, version: int) -> tuple[Any, Any]:
    log, newest = _latest(spark, path)
    if int(newest.version()) == version:
        return log, newest
    return log, log.getSnapshotAt(version, _none(spark), _none(spark))


def _checksum_files(snapshot: Any) -> Any | None:
    """The files of ``snapshot`` as its version's checksum file lists them, when Delta wrote
    them there (``allFilesInCrc``: tables of at most ``allFilesInCrc.thresholdNumFiles`` files)
    and the list agrees with the checksum's own file count; else None."""
    checksum = snapshot.checksumOpt()
    if not checksum.isDefined():
        return None
    crc = checksum.get()
    files = crc.allFiles()
    if not files.isDefined() or files.get().size() != crc.numFiles():
        return None
    return files.get()


def read_at(spark: SparkSession, path: str, version: int) -> DataFrame:
    """The table at ``path`` as of ``version``, through Delta's own reader: ``DeltaLog.
    createDataFrame`` over the snapshot's files as its checksum lists them (deletion vectors
    and column mapping applied as in any Delta read), so the state is not reconstructed in a
    Spark job first; without such a list, ``versionAsOf`` as before."""
    log, snapshot = _snapshot_at(spark, path, version)
    files = _checksum_files(snapshot)
    if files is None:
        return spark.read.format("delta").option("versionAsOf", version).load(path)
    return DataFrame(log.createDataFrame(snapshot, files, False, _none(spark)), spark)


def delta_tables(spark: SparkSession, output: str) -> list[str]:
    """The names of the sub-folders of ``output`` that hold a Delta table, sorted."""
    jvm = spark._jvm
    folder = jvm.org.apache.hadoop.fs.Path(output)
    fs = folder.getFileSystem(spark._jsc.hadoopConfiguration())
    if not fs.exists(folder):
        return []
    names = sorted(
        str(st.getPath().getName())
        for st in fs.listStatus(folder)
        if st.isDirectory() and fs.exists(jvm.org.apache.hadoop.fs.Path(st.getPath(), "_delta_log"))
    )
    return [n for n in names if table_state(spark, f"{output.rstrip('/')}/{n}") is not None]
