"""Savepoints -> ``savepoint_operators`` and ``savepoint_states`` rows, many savepoints at once.

A fleet's savepoints sit on object storage: one small ``_metadata`` file each, and state files
that may hold gigabytes. The driver only resolves each given path (a savepoint / retained
checkpoint folder, or its ``_metadata`` file) to one file, through Hadoop's FileSystem; the
reads happen on the executors, through the ``flink_jobgraph_read_head`` function (a small JVM
UDF of this project, ``jvm/``, that reads a byte range of a file with the session's Hadoop
configuration, so every scheme Spark reads works): each ``_metadata`` whole, each state stream
only as far as its serialization proxy goes (its first 64 KiB, more only for a stream whose
proxy is longer). The pure-Python readers parse them (:func:`udfs.savepoint.metadata.parse_metadata`,
:mod:`udfs.savepoint.state_streams`). Spark's own file sources cannot do either: they read whole
files, and never return one whose name starts with ``_`` (Flink's ``_metadata``).

A path that does not exist, a folder without ``_metadata``, a file that is not a Flink
``_metadata``, a truncated one or one with an unknown version or tag each give one row in the
errors table (with the byte offset where reading stopped), and a state file that cannot be read
gives its state rows an ``unreadable_reason``; the other savepoints go on.
"""

from __future__ import annotations

import json
import os
import posixpath
import stat
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import NamedTuple

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipeline.session import SetupError, is_local_path, local_frame, local_path
from pipeline.tables.columns import SAVEPOINT_STATES_COLUMNS, column_type, struct
from udfs.restore.state_value_reads import MAX_STREAM_BYTES
from udfs.savepoint.metadata import MetadataError, SavepointMetadata, parse_metadata
from udfs.savepoint.state_rows import state_rows
from udfs.savepoint.state_streams import FIRST_CHUNK, StreamHead, head_status, next_length, operator_states


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

_KIND = T.StructField("kind", T.StringType(), False)  # operator | savepoint | stream | file
# A state stream of an operator's subtask: where its head is (inline bytes, or a file to read).
STREAM_SCHEMA = T.StructType(
    [
        T.StructField("operator_index", T.IntegerType()),
        T.StructField("operator_id", T.StringType()),
        T.StructField("operator_name", T.StringType()),
        T.StructField("operator_uid", T.StringType()),
        T.StructField("subtask", T.IntegerType()),
        T.StructField("stream_kind", T.StringType()),  # managed_keyed | managed_operator
        T.StructField("handle", T.StringType()),
        T.StructField("source", T.StringType()),  # "inline", or the path as _metadata wrote it
        T.StructField("candidates", T.ArrayType(T.StringType())),  # URIs to read, in order
        T.StructField("stream_offset", T.LongType()),
        T.StructField("stream_size", T.LongType()),
        T.StructField("data", T.BinaryType()),  # the head read so far (inline: all of it)
        T.StructField("whole", T.BooleanType()),
        T.StructField("error", T.StringType()),
        # JSON: where the stream's values are (key-group offsets, operator state partitions)
        T.StructField("layout", T.StringType()),
    ]
)
# the stream heads as read, and the place each file was found ("read_from": null for inline bytes)
HEAD_COLUMNS = [
    "savepoint", "metadata_path", *[f.name for f in STREAM_SCHEMA.fields if f.name != "candidates"], "read_from",
]  # fmt: skip
# A file the handles name: the savepoint, the path as written, where to look, the end its
# handles need (stream_size), the first operator naming it, the handle type.
FILE_COLUMNS = ["savepoint", "metadata_path", "source", "candidates", "stream_size", "operator_id", "handle"]


def _combined_schema() -> T.StructType:
    fields = {f.name: f for f in SAVEPOINT_OPERATORS_SCHEMA.fields}
    for f in (*SAVEPOINTS_SCHEMA.fields, *STREAM_SCHEMA.fields):
        fields.setdefault(f.name, f)
    return T.StructType([_KIND] + [T.StructField(f.name, f.dataType, True) for f in fields.values()])


_COMBINED_SCHEMA = _combined_schema()
_COMBINED_COLUMNS = _COMBINED_SCHEMA.fieldNames()
_RAW_SCHEMA = T.StructType(
    [
        T.StructField("path", T.StringType(), False),
        T.StructField("content", T.BinaryType()),
        T.StructField("read_error", T.StringType()),
    ]
)

READ_HEAD = "flink_jobgraph_read_head"
READ_HEAD_CLASS = "org.flinkjobgraph.spark.ReadHead"
_READ_HEAD_TYPE = T.StructType(
    [
        T.StructField("data", T.BinaryType()),
        T.StructField("file_length", T.LongType()),
        T.StructField("error", T.StringType()),
    ]
)
MAX_METADATA_BYTES = 1 << 30  # no _metadata is near this; a bigger "file" is not one (and would not fit a row)
_NOT_FOUND = "file does not exist"


class SavepointTables(NamedTuple):
    """The views of one parse: operators, errors, one summary row per savepoint, and the head
    of every managed state stream (:data:`HEAD_COLUMNS`, for the state types)."""

    operators: DataFrame
    errors: DataFrame
    savepoints: DataFrame
    heads: DataFrame
    files: DataFrame  # every file the handles name (FILE_COLUMNS), for state_file_errors


def register_read_head(spark: SparkSession) -> None:
    """Register the JVM function that reads a byte range of a file on the executors."""
    try:
        spark.udf.registerJavaFunction(READ_HEAD, READ_HEAD_CLASS, _READ_HEAD_TYPE)
    except Exception as e:  # the class is not on the classpath
        raise SetupError(
            f"{READ_HEAD_CLASS} is not on Spark's classpath: run `make install` (it builds "
            f".cache/jars/flink-jobgraph-spark.jar), or pass that jar to spark-submit --jars"
        ) from e


def _read_head(path: Column, offset: Column | int, length: Column | int) -> Column:
    offset = offset if isinstance(offset, Column) else F.lit(offset).cast("long")
    length = length if isinstance(length, Column) else F.lit(length).cast("int")
    return F.call_function(READ_HEAD, path, offset.cast("long"), length.cast("int"))


def _spark_str(s: str | None) -> str | None:
    """Java strings may hold lone surrogates (Flink writes them as CESU-8); UTF-8 cannot: U+FFFD."""
    if s is None or s.isascii():
        return s
    return s.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")


def _candidates(source: str, location: str, metadata_path: str) -> list[str]:
    """Where to read a state file: a relative path against the ``_metadata``'s folder; an
    absolute one as written, then (a savepoint folder moved since Flink wrote it) by its path
    below the savepoint folder's own name, then by its file name in that folder."""
    folder = posixpath.dirname(metadata_path)
    if location == "relative":
        return [f"{folder}/{source}"]
    out = [source]
    name = posixpath.basename(folder)
    marker = f"/{name}/"
    if name and marker in source:
        out.append(folder + "/" + source.rsplit(marker, 1)[1])
    out.append(f"{folder}/{posixpath.basename(source)}")
    return list(dict.fromkeys(out))


def _stream_rows(base: dict, meta: SavepointMetadata, path: str) -> list[dict]:
    rows = []
    for i, op in enumerate(meta.operators):
        for s in op.state_streams:
            ref = s.ref
            inline = ref.location == "inline"
            rows.append(
                {
                    **base,
                    "kind": "stream",
                    "operator_index": i,
                    "operator_id": op.operator_id,
                    "operator_name": _spark_str(op.operator_name),
                    "operator_uid": _spark_str(op.operator_uid),
                    "subtask": s.subtask,
                    "stream_kind": s.kind,
                    "handle": _spark_str(s.handle),
                    "source": "inline" if inline else _spark_str(ref.path),
                    "candidates": None if inline else _candidates(ref.path or "", ref.location, path),
                    "stream_offset": ref.offset if ref.location == "segment" else 0,
                    "stream_size": ref.size,
                    "data": ref.data if inline else None,
                    "whole": True if inline else None,
                    "layout": json.dumps(s.layout) if s.layout else None,
                }
            )
    return rows


def _rows_for(savepoint: str, path: str | None, content: bytes | None, flink_line: str | None) -> list[dict]:
    """Combined rows (kind='savepoint' summary, kind='operator' and kind='stream' rows) for one
    given savepoint."""
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
    rows.extend(_stream_rows(common, meta, path or ""))
    rows.extend(_file_rows(common, meta, path or ""))
    return rows


def _file_rows(base: dict, meta: SavepointMetadata, path: str) -> list[dict]:
    """One row per file the ``_metadata``'s handles name (kind 'file'): where to find it, the end
    its handles need (``stream_size``: the largest offset + size), the first operator naming it
    and the handle types; what :func:`state_file_errors` checks."""
    files: dict[tuple[str, str], dict] = {}
    for f in meta.files:
        ref = f.ref
        key = (ref.location, ref.path or "")
        row = files.get(key)
        if row is None:
            row = files[key] = {**base, "kind": "file", "operator_id": f.operator_id, "source": _spark_str(ref.path),
                                "candidates": _candidates(ref.path or "", ref.location, path), "stream_size": 0,
                                "handle": f.handle}  # fmt: skip
        row["stream_size"] = max(row["stream_size"], ref.offset + ref.size)
    return list(files.values())


def _parse_files(
    targets: Mapping[str, list[tuple[str, str | None]]],
) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """mapInPandas body: (path, content) batches -> combined rows, for every savepoint naming that file."""

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            out: list[dict] = []
            for path, content, read_error in zip(batch["path"], batch["content"], batch["read_error"], strict=True):
                for savepoint, line in targets.get(path, [(path, None)]):
                    if read_error is not None:
                        out.append(_error(savepoint, path, f"cannot read the _metadata file: {read_error}"))
                    else:
                        out.extend(_rows_for(savepoint, path, content, line))
            yield pd.DataFrame(out, columns=_COMBINED_COLUMNS)

    return run


def resolve_metadata_files(
    spark: SparkSession, paths: Sequence[str], identity: dict[str, str] | None = None
) -> tuple[dict[str, list[str]], list[dict]]:
    """Given path -> its ``_metadata`` file URI, and error rows.

    A folder must hold ``_metadata`` directly (Flink's savepoint and ``chk-N`` layout); a file is
    read whatever its name (it may be a renamed copy of a ``_metadata``). ``identity``, when
    given, gets per resolved path the file as the filesystem lists it (URI, length,
    modification time): what an incremental check-restore compares (pipeline/restore/incremental.py).
    """
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    files: dict[str, list[str]] = {}
    errors: list[dict] = []
    for given in paths:
        if is_local_path(spark, given):
            found = _stat_local(given)
            if isinstance(found, str):
                errors.append(_error(given, None, found))
                continue
            uri, length, mtime = found
            files.setdefault(uri, []).append(given)
            if identity is not None:
                identity[given] = f"{uri} {length} {mtime}"
            continue
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
            if status.getLen() > MAX_METADATA_BYTES:
                errors.append(
                    _error(given, None, f"file of {status.getLen()} bytes is too large to be a Flink _metadata")
                )
                continue
            files.setdefault(status.getPath().toString(), []).append(given)
            if identity is not None:
                identity[given] = f"{status.getPath().toString()} {status.getLen()} {status.getModificationTime()}"
        except Exception as e:  # an unknown scheme or a bad URI: that savepoint only
            errors.append(_error(given, None, f"cannot open savepoint path: {_java_message(e)}"))
    return files, errors


def _stat_local(given: str) -> tuple[str, int, int] | str:
    """A local savepoint's ``_metadata`` as Hadoop's local file system would list it (URI,
    length, modification time in milliseconds), or the error; the same answers as the Hadoop
    branch of :func:`resolve_metadata_files` without a JVM round trip per call (docs/performance.md)."""
    path = os.path.abspath(local_path(given))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "savepoint path does not exist"
    except OSError as e:
        return f"cannot open savepoint path: {e.strerror}"
    if stat.S_ISDIR(st.st_mode):
        path = os.path.join(path, "_metadata")
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            return "no _metadata file in the savepoint folder"
    elif not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_size > MAX_METADATA_BYTES:
        return f"file of {st.st_size} bytes is too large to be a Flink _metadata"
    return "file:" + path, st.st_size, st.st_mtime_ns // 1_000_000


def _java_message(e: Exception) -> str:
    java = getattr(e, "java_exception", None)
    if java is not None:
        return str(java.toString())
    return (str(e).splitlines() or [type(e).__name__])[0]


def _error(savepoint: str, path: str | None, message: str) -> dict:
    row = {c: None for c in _COMBINED_COLUMNS}
    row.update(kind="savepoint", savepoint=savepoint, metadata_path=path, ok=False, error=message)
    return row


def read_savepoint_tables(
    spark: SparkSession, paths: Sequence[str], flink_lines: Mapping[str, str] | None = None, state_heads: bool = True
) -> SavepointTables:
    """Parse every savepoint of ``paths`` once; operators, errors, summaries and (``state_heads``)
    the heads of its state streams.

    ``flink_lines`` (given path -> Flink release line, e.g. '1.14') only matters for the two
    release-specific layouts of format 3 (see udfs/savepoint/metadata.py).
    """
    register_read_head(spark)
    flink_lines = flink_lines or {}
    files, error_rows = resolve_metadata_files(spark, list(dict.fromkeys(paths)))
    frames = []
    if files:
        targets = {uri: [(g, flink_lines.get(g)) for g in given] for uri, given in files.items()}
        uris = local_frame(spark, [(u,) for u in sorted(files)], "path string")
        slices = max(1, min(len(files), spark.sparkContext.defaultParallelism * 2))
        head = _read_head(F.col("path"), 0, MAX_METADATA_BYTES)
        raw = uris.repartition(slices).select(
            "path", head.getField("data").alias("content"), head.getField("error").alias("read_error")
        )
        frames.append(raw.mapInPandas(_parse_files(targets), _COMBINED_SCHEMA))
    if error_rows:
        frames.append(spark.createDataFrame(pd.DataFrame(error_rows, columns=_COMBINED_COLUMNS), _COMBINED_SCHEMA))
    if not frames:
        combined = local_frame(spark, [], _COMBINED_SCHEMA)
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
    streams = combined.where(F.col("kind") == "stream").select("savepoint", "metadata_path", *STREAM_SCHEMA.names)
    no_heads = streams.withColumn("read_from", F.lit(None).cast("string")).select(*HEAD_COLUMNS).limit(0)
    heads = _read_heads(streams) if state_heads else no_heads
    files = combined.where(F.col("kind") == "file").select(*FILE_COLUMNS)
    # Columns and types are those of the schema constants; every column is nullable here (one
    # combined parse), which Delta and the restore check do not mind.
    return SavepointTables(operators, errors, summaries, heads, files)


def _read_heads(streams: DataFrame, first: int = FIRST_CHUNK) -> DataFrame:
    """Every stream's head, as far as its proxy goes: rounds of ranged reads on the executors,
    each round only for the streams whose head fell short (a longer proxy: 4x more bytes) or
    whose file was not found where the ``_metadata`` says (the next candidate location)."""
    done = streams.where(F.col("source") == "inline").withColumn("read_from", F.lit(None).cast("string"))
    done = done.select(*HEAD_COLUMNS)
    todo = (
        streams.where(F.col("source") != "inline")
        .withColumn("_want", F.lit(first))
        .withColumn("_try", F.lit(0))
        .localCheckpoint(eager=True)
    )
    finished = [done]
    while todo.take(1):
        at = F.element_at("candidates", F.col("_try") + 1)
        head = _read_head(at, F.col("stream_offset"), F.col("_want"))
        read = (
            todo.withColumn("_h", head)
            .withColumn("read_from", at)
            .withColumn("data", F.col("_h.data"))
            .withColumn(
                "whole",
                F.col("_h.file_length").isNotNull()
                & (F.col("stream_offset") + F.length("data") >= F.col("_h.file_length")),
            )
            .withColumn("error", F.col("_h.error"))
            .drop("_h")
        )
        judged_schema = T.StructType([*read.schema.fields, T.StructField("_status", T.StringType())])
        judged = read.mapInPandas(_judge, judged_schema).localCheckpoint(eager=True)
        status = F.col("_status")
        more_places = F.size("candidates") > F.col("_try") + 1
        finished.append(judged.where((status == "ok") | ((status == "error") & ~(
            (F.col("error") == _NOT_FOUND) & more_places))).select(*HEAD_COLUMNS))  # fmt: skip
        retry_place = judged.where((status == "error") & (F.col("error") == _NOT_FOUND) & more_places).withColumn(
            "_try", F.col("_try") + 1
        )
        longer = judged.where(status == "need_more").withColumn("_want", F.col("_want") * 4)
        todo = retry_place.unionByName(longer).drop("_status").localCheckpoint(eager=True)
    out = finished[0]
    for f in finished[1:]:
        out = out.unionByName(f)
    return out.localCheckpoint(eager=True)


def read_value_streams(heads: DataFrame, wanted: DataFrame) -> DataFrame:
    """The bytes of the state streams a check's state half asked for (``wanted``: savepoint,
    operator_id, stream_kind: udfs/restore/state_value_reads.py), each stream from its start to
    its end or MAX_STREAM_BYTES (``truncated`` then), read on the executors where its head was
    found: (savepoint, operator_id, stream_kind, subtask, data, truncated)."""
    picked = heads.join(wanted, ["savepoint", "operator_id", "stream_kind"])
    size = F.col("stream_size")
    length = F.when(size > 0, F.least(size, F.lit(MAX_STREAM_BYTES))).otherwise(F.lit(MAX_STREAM_BYTES))
    read = _read_head(F.col("read_from"), F.col("stream_offset"), length)
    inline = F.col("source") == "inline"
    data = F.when(inline, F.col("data")).otherwise(read.getField("data"))
    # cut short: a stream longer than the bound, or one of unknown size that filled it
    cut = F.when(size > 0, size > MAX_STREAM_BYTES).otherwise(F.length(data) >= MAX_STREAM_BYTES)
    return picked.select(
        "savepoint", "operator_id", "stream_kind", "subtask", data.alias("data"),
        (~inline & F.coalesce(cut, F.lit(False))).alias("truncated"),
    )  # fmt: skip


def _judge(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """Per read head: ``ok`` (the proxy is whole, or unreadable for a reason more bytes would not
    change: then ``error`` says it), ``need_more`` (a longer proxy), ``error`` (no bytes)."""
    for batch in batches:
        statuses, errors = [], []
        for kind, data, whole, error, want in zip(
            batch["stream_kind"], batch["data"], batch["whole"], batch["error"], batch["_want"], strict=True
        ):
            if data is None:
                statuses.append("error")
                errors.append(error or "no bytes")
                continue
            status, _ = head_status(kind, bytes(data), bool(whole))
            if status == "need_more" and next_length(int(want)) is None:
                status = "ok"  # give up: the decode says where it stopped
            statuses.append("ok" if status == "error" else status)
            errors.append(error)
        batch = batch.assign(error=errors, _status=statuses)
        yield batch


def savepoint_states(spark: SparkSession, given: Sequence[tuple[str, str]], heads: DataFrame) -> DataFrame:
    """``savepoint_states``: one row per saved state of each savepoint, named as given
    (``given``: pairs of the name and the path it was read under), from the heads of its
    state streams.

    Each partition arrives sorted by savepoint and stream and is decoded savepoint after
    savepoint in one Python pass: a ``groupBy().applyInPandas`` paid a pandas frame per
    savepoint and, its shuffle coalesced by AQE, ran the whole fleet in one task
    (docs/performance.md)."""
    paths = local_frame(spark, given, "given string, savepoint_path string")
    named = heads.withColumnRenamed("savepoint", "savepoint_path").join(paths, "savepoint_path")
    schema = struct(SAVEPOINT_STATES_COLUMNS)
    columns = schema.fieldNames()

    def decoded(name: str, streams: list[dict]) -> list:
        return state_rows(name, operator_states(StreamHead.from_row(r) for r in streams))

    def rows(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        out: list = []
        name, streams = None, []
        for batch in batches:
            for record in batch.to_dict("records"):
                if record["given"] != name and streams:
                    out.extend(decoded(name, streams))
                    streams = []
                name = record["given"]
                streams.append(record)
            if len(out) >= _STATE_ROWS_PER_BATCH:
                yield pd.DataFrame(out, columns=columns)
                out = []
        if streams:
            out.extend(decoded(name, streams))
        if out:
            yield pd.DataFrame(out, columns=columns)

    # An explicit partition count: AQE does not coalesce it, so every core decodes.
    parts = max(1, spark.sparkContext.defaultParallelism)
    ordered = named.repartition(parts, "given").sortWithinPartitions(
        "given", "operator_index", "subtask", "stream_kind", "handle", "source"
    )
    return ordered.mapInPandas(rows, schema)


_STATE_ROWS_PER_BATCH = 5000


# The bytes read from the start of every state file: enough to show it opens and reads.
FILE_HEAD_BYTES = 64


def state_file_errors(files: DataFrame, heads: DataFrame) -> DataFrame:
    """``savepoint_errors`` rows (SAVEPOINT_ERRORS_SCHEMA) for every damaged state file: one the
    ``_metadata``'s handles name that is missing (at every place it may be: :func:`_candidates`),
    cannot be read, is shorter than the end its handles need (``error_offset``: its length), or
    whose head cannot be read; and every state stream whose serialization proxy does not decode
    (a damaged head) in a file that passed those checks, or inline in ``_metadata``."""
    picked = _file_reads(files)
    bad_files = picked.select(
        "savepoint", "metadata_path", "source", _file_error().alias("error"),
        F.when(F.col("r._length") < F.col("stream_size"), F.col("r._length")).alias("error_offset"),
    ).where(F.col("error").isNotNull())  # fmt: skip
    proxies = heads.mapInPandas(_proxy_errors, _PROXY_ERRORS_SCHEMA)
    whole = proxies.join(bad_files.select("savepoint", "source"), ["savepoint", "source"], "left_anti")
    return bad_files.unionByName(whole).select(*SAVEPOINT_ERRORS_SCHEMA.fieldNames())


def _file_reads(files: DataFrame) -> DataFrame:
    """Per file (its FILE_COLUMNS but the candidates), ``r``: the read of its first bytes at the
    first place it was found, else at the first place tried (whose error says why); read on the
    executors, as the stream heads are."""
    tried = files.select(*FILE_COLUMNS, F.posexplode("candidates").alias("_try", "_path"))
    head = _read_head(F.col("_path"), 0, F.least(F.col("stream_size"), F.lit(FILE_HEAD_BYTES)))
    read = tried.withColumn("_h", head).select(
        *FILE_COLUMNS, "_try", "_path", F.length("_h.data").alias("_got"),
        F.col("_h.file_length").alias("_length"), F.col("_h.error").alias("_error"),
    )  # fmt: skip
    rank = F.when(F.col("_length").isNotNull(), F.col("_try")).otherwise(F.col("_try") + 1000)
    return read.groupBy(*[c for c in FILE_COLUMNS if c != "candidates"]).agg(
        F.min_by(F.struct("_path", "_got", "_length", "_error"), rank).alias("r")
    )


def _file_error() -> Column:
    """A file's error (null when it is whole): missing or unreadable, shorter than its handles
    need, or its first bytes not read."""
    named = F.concat(
        F.lit("state file "), F.col("r._path"), F.lit(" ("), F.coalesce(F.col("handle"), F.lit("?")),
        F.lit(" of operator "), F.coalesce(F.col("operator_id"), F.lit("?")), F.lit(")"),
    )  # fmt: skip
    why = F.coalesce(F.col("r._error"), F.lit("not read"))
    short = F.concat(
        named, F.lit(" is "), F.col("r._length").cast("string"),
        F.lit(" bytes, but its state handles in _metadata take "), F.col("stream_size").cast("string"),
        F.lit(": the file is truncated"),
    )  # fmt: skip
    head_short = F.coalesce(F.col("r._got"), F.lit(0)) < F.least(F.col("stream_size"), F.lit(FILE_HEAD_BYTES))
    return (
        F.when(F.col("r._length").isNull(), F.concat(named, F.lit(": "), why))
        .when(F.col("r._length") < F.col("stream_size"), short)
        .when(head_short, F.concat(named, F.lit(": its first bytes cannot be read: "), why))
    )


_PROXY_ERRORS_SCHEMA = T.StructType([*SAVEPOINT_ERRORS_SCHEMA.fields, T.StructField("source", T.StringType())])


def _proxy_errors(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """The state streams whose head was read but whose proxy does not decode: an error row each,
    naming the stream (operator, subtask, kind) and its file."""
    columns = _PROXY_ERRORS_SCHEMA.fieldNames()
    for batch in batches:
        out = []
        for row in batch.to_dict("records"):
            if row["data"] is None:
                continue  # no bytes: the file check names the file
            status, why = head_status(row["stream_kind"], bytes(row["data"]), bool(row["whole"]))
            if status != "error":
                continue
            where = "inline in _metadata" if row["source"] == "inline" else f"in {row['source']}"
            out.append({
                "savepoint": row["savepoint"], "metadata_path": row["metadata_path"], "source": row["source"],
                "error": f"{row['stream_kind']} state stream of operator {row['operator_id']} subtask {row['subtask']} "
                         f"{where}: its serialization proxy does not decode: {why}",
                "error_offset": None,
            })  # fmt: skip
        yield pd.DataFrame(out, columns=columns)
