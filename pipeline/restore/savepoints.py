"""Savepoints -> ``savepoint_operators`` rows (SPEC section 5), many ``_metadata`` files at once.

A fleet's savepoints sit on object storage, one small ``_metadata`` file each; the restore
check needs what Flink reads from every one of them. The driver only resolves each given
path (a savepoint / retained-checkpoint folder, or its ``_metadata`` file; any URI Hadoop's
FileSystem knows) to one file, through Hadoop's FileSystem so every scheme Spark reads works;
the bytes are read by Spark's ``binaryFile`` source and parsed by the pure-Python
:func:`udfs.savepoint.metadata.parse_metadata` inside a ``mapInPandas``, in parallel. A path
that does not exist, a folder without ``_metadata``, a file that is not a Flink ``_metadata``,
a truncated one or one with an unknown version or tag each give one row in the errors table
(with the byte offset where reading stopped) and the other savepoints go on.

Spark's file sources (``binaryFile`` included) never return a file whose name starts with
``_`` or ``.`` (``PartitioningAwareFileIndex.isDataPath``, no option turns it off), and
Hadoop's input formats hide the same names; so files named ``_metadata`` -- Flink's name for
every one of them -- are fetched on the driver through Hadoop's FileSystem, on a thread pool
(they are small: kilobytes to a few megabytes), and only the parse is spread over the
executors. Files given under any other name (copies such as ``<case>.metadata``) are read by
``binaryFile`` on the executors.

The parse happens once: :func:`read_savepoint_tables` checkpoints the combined rows, and the
operators, errors and per-savepoint summary are filters of them.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipeline.tables.columns import column_type
from udfs.savepoint.metadata import MetadataError, SavepointMetadata, parse_metadata


def _schema(*fields: tuple[str, bool]) -> T.StructType:
    """(column, nullable) pairs, each column of its one type (pipeline/tables/columns.py)."""
    return T.StructType([T.StructField(name, column_type(name), nullable) for name, nullable in fields])


SAVEPOINT_OPERATORS_SCHEMA = _schema(
    ("savepoint", False),  # as given
    ("metadata_path", False),  # the _metadata file read (URI)
    ("format_version", False),
    ("checkpoint_id", False),
    ("operator_index", False),  # file order, the order Flink walks
    ("operator_id", False),  # 32 lowercase hex, as Flink prints it
    ("parallelism", False),
    ("max_parallelism", False),
    ("has_state", False),  # coordinator state or any subtask handle
    ("state_size", False),  # OperatorState.getStateSize()
    ("operator_name", True),  # format 5+ only
    ("operator_uid", True),  # format 5+ only
    ("subtask_count", False),
    ("fully_finished", False),
    ("finished_subtasks", False),
    ("has_coordinator_state", False),
    ("has_subtask_state", False),
    ("handle_types", False),
)
SAVEPOINT_ERRORS_SCHEMA = _schema(
    ("savepoint", False),  # as given
    ("metadata_path", True),  # null when no file could be found
    ("error", False),  # message, with "(at byte N)" for parse errors
    ("error_offset", True),  # byte offset where reading stopped
)
SAVEPOINTS_SCHEMA = _schema(
    ("savepoint", False),
    ("metadata_path", True),
    ("ok", False),
    ("format_version", True),
    ("checkpoint_id", True),
    ("operator_count", True),
    ("master_state_count", True),
    ("metadata_bytes", True),
    ("trailer_bytes", True),  # V4+: serialized CheckpointProperties
    ("unparsed_bytes", True),  # after body (V2/V3) or trailer (V4+)
    ("snapshot_type", True),  # 'Savepoint', 'Checkpoint', ... (V4+)
    ("savepoint_format", True),  # CANONICAL / NATIVE (V4+ savepoints)
    ("error", True),
    ("error_offset", True),
)

_KIND = T.StructField("kind", T.StringType(), False)  # operator | savepoint


def _combined_schema() -> T.StructType:
    fields = {f.name: f for f in SAVEPOINT_OPERATORS_SCHEMA.fields}
    for f in SAVEPOINTS_SCHEMA.fields:
        fields.setdefault(f.name, f)
    return T.StructType([_KIND] + [T.StructField(f.name, f.dataType, True) for f in fields.values()])


_COMBINED_SCHEMA = _combined_schema()
_RAW_SCHEMA = T.StructType([T.StructField("path", T.StringType(), False), T.StructField("content", T.BinaryType())])
_COMBINED_COLUMNS = _COMBINED_SCHEMA.fieldNames()


class SavepointTables(NamedTuple):
    """The three views of one parse: operators, errors, and one summary row per savepoint."""

    operators: DataFrame
    errors: DataFrame
    savepoints: DataFrame


def _spark_str(s: str | None) -> str | None:
    """Java strings may hold lone surrogates (Flink writes them as CESU-8); UTF-8 cannot: U+FFFD."""
    if s is None or s.isascii():
        return s
    return s.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")


def _rows_for(savepoint: str, path: str | None, content: bytes | None, flink_line: str | None) -> list[dict]:
    """Combined rows (kind='savepoint' summary + kind='operator' rows) for one given savepoint."""
    base = {c: None for c in _COMBINED_COLUMNS}
    base.update(savepoint=savepoint, metadata_path=path)
    if content is None:
        return [{**base, "kind": "savepoint", "ok": False, "error": "no content"}]
    try:
        meta: SavepointMetadata = parse_metadata(content, flink_line)
    except MetadataError as e:
        return [{**base, "kind": "savepoint", "ok": False, "error": str(e), "error_offset": e.offset,
                 "metadata_bytes": len(content)}]  # fmt: skip
    except Exception as e:  # a reader bug must not kill the other savepoints; say it is one
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        return [{**base, "kind": "savepoint", "ok": False, "metadata_bytes": len(content),
                 "error": f"internal error of the _metadata reader (please report): {last}"}]  # fmt: skip
    common = dict(base, format_version=meta.format_version, checkpoint_id=meta.checkpoint_id)
    rows = [
        {
            **common,
            "kind": "savepoint",
            "ok": True,
            "operator_count": len(meta.operators),
            "master_state_count": meta.master_state_count,
            "metadata_bytes": meta.total_bytes,
            "trailer_bytes": meta.trailer_bytes,
            "unparsed_bytes": meta.unparsed_bytes,
            "snapshot_type": meta.snapshot_type,
            "savepoint_format": meta.savepoint_format,
        }
    ]
    for i, op in enumerate(meta.operators):
        rows.append(
            {
                **common,
                "kind": "operator",
                "operator_index": i,
                "operator_id": op.operator_id,
                "parallelism": op.parallelism,
                "max_parallelism": op.max_parallelism,
                "has_state": op.has_state,
                "state_size": op.state_size,
                "operator_name": _spark_str(op.operator_name),
                "operator_uid": _spark_str(op.operator_uid),
                "subtask_count": op.subtask_count,
                "fully_finished": op.fully_finished,
                "finished_subtasks": op.finished_subtasks,
                "has_coordinator_state": op.has_coordinator_state,
                "has_subtask_state": op.has_subtask_state,
                "handle_types": [_spark_str(t) for t in op.handle_types],
            }
        )
    return rows


def _parse_files(
    targets: Mapping[str, list[tuple[str, str | None]]],
) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """mapInPandas body: (path, content) batches -> combined rows, for every savepoint naming that file."""

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            out: list[dict] = []
            for path, content in zip(batch["path"], batch["content"], strict=True):
                for savepoint, line in targets.get(path, [(path, None)]):
                    out.extend(_rows_for(savepoint, path, content, line))
            yield pd.DataFrame(out, columns=_COMBINED_COLUMNS)

    return run


def resolve_metadata_files(spark: SparkSession, paths: Sequence[str]) -> tuple[dict[str, list[str]], list[dict]]:
    """Given path -> its ``_metadata`` file URI (as ``binaryFile`` will name it), and error rows.

    A folder must hold ``_metadata`` directly (Flink's savepoint and ``chk-N`` layout); a file is
    read whatever its name (it may be a renamed copy of a ``_metadata``).
    """
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    files: dict[str, list[str]] = {}
    errors: list[dict] = []
    for given in paths:
        try:
            hpath = jvm.org.apache.hadoop.fs.Path(given)
            fs = hpath.getFileSystem(conf)
            if not fs.exists(hpath):
                errors.append(_error(given, None, "savepoint path does not exist"))
                continue
            status = fs.getFileStatus(hpath)
            if status.isDirectory():
                meta = jvm.org.apache.hadoop.fs.Path(hpath, "_metadata")
                if not fs.exists(meta) or not fs.getFileStatus(meta).isFile():
                    errors.append(_error(given, None, "no _metadata file in the savepoint folder"))
                    continue
                status = fs.getFileStatus(meta)
            elif not status.isFile():
                errors.append(_error(given, None, "not a regular file"))
                continue
            files.setdefault(status.getPath().toString(), []).append(given)
        except Exception as e:  # an unknown scheme or a bad URI: that savepoint only
            errors.append(_error(given, None, f"cannot open savepoint path: {_java_message(e)}"))
    return files, errors


def _java_message(e: Exception) -> str:
    java = getattr(e, "java_exception", None)
    if java is not None:
        return str(java.toString())
    return (str(e).splitlines() or [type(e).__name__])[0]


MAX_METADATA_BYTES = 1 << 30  # no _metadata is near this; a bigger "file" is not one (and would not fit a row)
_FETCH_THREADS = 16


def _hidden_name(uri: str) -> bool:
    return uri.rstrip("/").rsplit("/", 1)[-1].startswith(("_", "."))


def _fetch_on_driver(spark: SparkSession, uris: Sequence[str]) -> tuple[list[tuple[str, bytes]], dict[str, str]]:
    """(uri, bytes) of files Spark's sources would hide, read through Hadoop's FileSystem; errors by uri."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()

    def fetch(uri: str) -> tuple[str, bytes | None, str | None]:
        try:
            hpath = jvm.org.apache.hadoop.fs.Path(uri)
            fs = hpath.getFileSystem(conf)
            length = fs.getFileStatus(hpath).getLen()
            if length > MAX_METADATA_BYTES:
                return uri, None, f"file of {length} bytes is too large to be a Flink _metadata"
            stream = fs.open(hpath)
            try:
                data = bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
            finally:
                stream.close()
            return uri, data, None
        except Exception as e:
            return uri, None, f"cannot read the _metadata file: {_java_message(e)}"

    with ThreadPoolExecutor(max_workers=max(1, min(_FETCH_THREADS, len(uris)))) as pool:
        results = list(pool.map(fetch, uris))
    return [(u, d) for u, d, err in results if d is not None], {u: err for u, d, err in results if err}


def _error(savepoint: str, path: str | None, message: str) -> dict:
    row = {c: None for c in _COMBINED_COLUMNS}
    row.update(kind="savepoint", savepoint=savepoint, metadata_path=path, ok=False, error=message)
    return row


def read_savepoint_tables(
    spark: SparkSession, paths: Sequence[str], flink_lines: Mapping[str, str] | None = None
) -> SavepointTables:
    """Parse every savepoint of ``paths`` once; operators, errors and summaries of that parse.

    ``flink_lines`` (given path -> Flink release line, e.g. '1.14') only matters for the two
    release-specific layouts of format 3 (see udfs/savepoint/metadata.py).
    """
    flink_lines = flink_lines or {}
    files, error_rows = resolve_metadata_files(spark, list(dict.fromkeys(paths)))
    frames = []
    if files:
        targets = {uri: [(g, flink_lines.get(g)) for g in given] for uri, given in files.items()}
        hidden = sorted(u for u in files if _hidden_name(u))
        visible = sorted(u for u in files if not _hidden_name(u))
        raws = []
        if visible:
            raws.append(spark.read.format("binaryFile").load(visible).select("path", "content"))
        if hidden:
            fetched, fetch_errors = _fetch_on_driver(spark, hidden)
            for uri, message in fetch_errors.items():
                error_rows.extend(_error(g, uri, message) for g in files[uri])
            if fetched:
                raws.append(spark.createDataFrame(fetched, _RAW_SCHEMA))
        # No repartition: binaryFile already spreads small files over the cores (maxSplitBytes
        # shrinks to total/defaultParallelism), and createDataFrame slices the fetched list.
        for raw in raws:
            frames.append(raw.mapInPandas(_parse_files(targets), _COMBINED_SCHEMA))
    if error_rows:
        frames.append(spark.createDataFrame(pd.DataFrame(error_rows, columns=_COMBINED_COLUMNS), _COMBINED_SCHEMA))
    if not frames:
        combined = spark.createDataFrame([], _COMBINED_SCHEMA)
    else:
        combined = frames[0]
        for frame in frames[1:]:
            combined = combined.unionByName(frame)
    combined = combined.localCheckpoint(eager=True)
    operators = combined.where(F.col("kind") == "operator").select(
        *[F.col(f.name).cast(f.dataType) for f in SAVEPOINT_OPERATORS_SCHEMA.fields]
    )
    summaries = combined.where(F.col("kind") == "savepoint").select(
        *[F.col(f.name).cast(f.dataType) for f in SAVEPOINTS_SCHEMA.fields]
    )
    errors = summaries.where(~F.col("ok")).select(*SAVEPOINT_ERRORS_SCHEMA.fieldNames())
    # Columns and types are those of the schema constants; every column is nullable here (one
    # combined parse), which Delta and the restore check do not mind.
    return SavepointTables(operators, errors, summaries)


def read_savepoints(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """``savepoint_operators`` rows (:data:`SAVEPOINT_OPERATORS_SCHEMA`) of every readable savepoint.

    The errors of the same parse are in :func:`read_savepoint_tables` (``.errors``).
    """
    return read_savepoint_tables(spark, paths).operators
