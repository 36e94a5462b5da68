"""``flink-jobgraph inventory``: what a fleet's savepoints hold, without the jobs' graphs.

Every savepoint (or retained checkpoint) found under the given paths is read once, on the
executors: its ``_metadata`` whole, each state stream only as far as its serialization proxy
(:mod:`pipeline.restore.savepoints`). The tables, keyed by the savepoint's folder:
``savepoint_operators`` (SPEC section 5), ``savepoint_states`` (every saved state with its
types) and ``savepoint_errors`` (a savepoint that could not be read, with the reason; and each
damaged state file of a readable one: every file its handles name is checked for existence, for
the length the handles need and for a readable head, and every state stream's proxy must
decode), written as every table of the pipeline is (one commit each, the run published in ``runs``).

A given path is a savepoint folder, its ``_metadata`` file, or any folder above them: every
``_metadata`` below it is one savepoint (Flink's ``savepoint-*`` and ``chk-*`` layouts).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.options import Summary
from pipeline.progress import Progress
from pipeline.restore.savepoints import (
    SAVEPOINT_ERRORS_SCHEMA,
    read_savepoint_tables,
    savepoint_states,
    state_file_errors,
)
from pipeline.session import is_local_path, local_frame, local_path
from pipeline.tables import delta_writer
from pipeline.tables.columns import SAVEPOINT_OPERATORS_COLUMNS

TABLES = ("savepoint_operators", "savepoint_states", "savepoint_errors")


class NoSavepoints(ValueError):
    """No ``_metadata`` under any given path."""


@dataclass
class InventorySummary(Summary):
    savepoints: int = 0
    unreadable: int = 0  # savepoints whose _metadata cannot be read
    damaged_files: int = 0  # state files missing, truncated or with a head that does not read
    operators: int = 0
    states: int = 0
    kryo_states: int = 0
    bytes_read: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)


def find_savepoints(spark: SparkSession, paths: list[str]) -> list[str]:
    """The savepoints under ``paths``: a ``_metadata`` file or a folder holding one as given,
    any other folder searched for ``_metadata`` files (their folders, as URIs)."""
    found: list[str] = []
    for given in paths:
        if is_local_path(spark, given):
            found.extend(_find_local(given))
        else:
            found.extend(_find_hadoop(spark, given))
    return sorted(dict.fromkeys(found))


def newest_local_savepoint(path: str | list[str]) -> str | None:
    """The savepoint to check when ``path`` is on the local disk (a ``file:`` URI, or a path
    without a scheme that exists here: relative ones against the working directory, as a CI step
    gives them), resolved without Spark: itself when it is a savepoint, else the newest savepoint
    or retained checkpoint below it. Several paths (a deployment's savepoint and checkpoint
    directories): the newest below any of them, those that do not exist left out. None when a
    path is not local (object storage, HDFS): :func:`newest_savepoint` resolves it through Spark."""
    paths = [path] if isinstance(path, str) else path
    if any("://" in p and not p.startswith("file:") for p in paths):
        return None
    found: list[str] = []
    for given in paths:
        plain = os.path.abspath(local_path(given))
        if not os.path.exists(plain):
            if len(paths) == 1:  # the check names a path that does not exist
                return "file:" + plain if given.startswith("file:") else None
            continue
        if not os.path.isdir(plain) or os.path.isfile(os.path.join(plain, "_metadata")):
            if len(paths) == 1:
                return "file:" + plain
            found.append(os.path.join(plain, "_metadata") if os.path.isdir(plain) else plain)
            continue
        found += [os.path.join(d, "_metadata") for d, _, names in os.walk(plain) if "_metadata" in names]
    if not found:
        raise NoSavepoints(f"no Flink _metadata file under {', '.join(paths)}")
    newest = max(found, key=lambda f: (os.stat(f).st_mtime_ns, f))
    return "file:" + (os.path.dirname(newest) if os.path.basename(newest) == "_metadata" else newest)


def newest_savepoint(spark: SparkSession, path: str | list[str]) -> str:
    """``path`` itself when it is a savepoint (a folder with ``_metadata``, or the file), else
    the newest savepoint or retained checkpoint below it (by its ``_metadata``'s modification
    time, as the last one written is the one to restore from); several paths: the newest below
    any. Local paths resolve against the working directory (:func:`newest_local_savepoint`)."""
    local = newest_local_savepoint(path)
    if local is not None:
        return local
    paths = [path] if isinstance(path, str) else path
    found = find_savepoints(spark, paths)
    if len(found) == 1:
        return found[0]
    if not found:
        raise NoSavepoints(f"no Flink _metadata file under {', '.join(paths)}")
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()

    def mtime(folder: str) -> int:
        p = jvm.org.apache.hadoop.fs.Path(folder, "_metadata")
        try:
            return int(p.getFileSystem(conf).getFileStatus(p).getModificationTime())
        except Exception:  # noqa: BLE001 - a path that is not there: never the newest
            return -1

    return max(found, key=mtime)


def _find_local(given: str) -> list[str]:
    # Named as Hadoop's listing names them (file:/abs/path), so a table's savepoint keys do
    # not depend on which lister found them.
    path = local_path(given)
    if not os.path.exists(path) or os.path.isfile(path) or os.path.isfile(os.path.join(path, "_metadata")):
        return [given]  # a missing path: read_savepoint_tables reports it as an error row
    found = []
    for folder, dirs, names in os.walk(os.path.abspath(path)):
        dirs.sort()
        if "_metadata" in names:
            found.append("file:" + folder)
    return found


def _find_hadoop(spark: SparkSession, given: str) -> list[str]:
    """Below ``given`` through Hadoop's file system; a path Hadoop cannot open (an unknown
    scheme, a missing connector, no access) is returned as given: reading it then gives its
    error row with Hadoop's reason."""
    jvm = spark._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(given)
    try:
        fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
        exists = fs.exists(hpath)
    except Exception:  # noqa: BLE001 - Py4J's error of any JVM exception
        return [given]
    if not exists:
        return [given]
    if fs.getFileStatus(hpath).isFile() or fs.exists(jvm.org.apache.hadoop.fs.Path(hpath, "_metadata")):
        return [given]
    found = []
    files = fs.listFiles(hpath, True)
    while files.hasNext():
        f = files.next().getPath()
        if f.getName() == "_metadata":
            found.append(f.getParent().toString())
    return found


def inventory(
    spark: SparkSession,
    paths: list[str],
    output: str,
    progress: Progress | None = None,
    deletion_vectors: bool = True,
) -> InventorySummary:
    """Read every savepoint under ``paths``; write the three tables under ``output``."""
    progress = progress or Progress()
    summary = InventorySummary()
    savepoints = find_savepoints(spark, paths)
    if not savepoints:
        raise NoSavepoints(f"no Flink _metadata file under {', '.join(paths)}")
    progress.say(f"inventory: {len(savepoints)} savepoints")
    with progress.stage(spark, "read savepoints"):
        tables = read_savepoint_tables(spark, savepoints)
        operators = tables.operators.select(*SAVEPOINT_OPERATORS_COLUMNS)
        states = savepoint_states(spark, [(s, s) for s in savepoints], tables.heads).localCheckpoint(eager=True)
        unreadable = tables.errors.select(*SAVEPOINT_ERRORS_SCHEMA.fieldNames())
    with progress.stage(spark, "check state files"):
        damaged = state_file_errors(tables.files, tables.heads).localCheckpoint(eager=True)
        errors = unreadable.unionByName(damaged)
    ids = local_frame(spark, [(s,) for s in savepoints], "savepoint string")
    writes = [delta_writer.TableWrite(t, df, key="savepoint", ids=ids) for t, df in zip(
        TABLES, (operators, states, errors), strict=True)]  # fmt: skip
    delta_writer.write_run(spark, output, writes, ids, say=progress.say, deletion_vectors=deletion_vectors)
    summary.savepoints = len(savepoints)
    summary.unreadable = unreadable.count()
    summary.damaged_files = damaged.count()
    summary.operators = operators.count()
    summary.states = states.where(F.col("state_name").isNotNull()).count()
    summary.kryo_states = states.where(F.col("uses_kryo")).count()
    summary.bytes_read = _bytes_read(tables.heads, tables.savepoints)
    return summary


def _bytes_read(heads: DataFrame, savepoints: DataFrame) -> int:
    """The bytes fetched: every ``_metadata`` whole, every state stream's head (inline heads
    come with their ``_metadata``)."""
    meta = savepoints.agg(F.sum("metadata_bytes")).first()[0] or 0
    files = heads.where(F.col("source") != "inline").agg(F.sum(F.length("data"))).first()[0] or 0
    return int(meta) + int(files)
