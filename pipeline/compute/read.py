"""Spec files -> one row per graph text, spread over the cores; and one graph's text loaded.

Files are listed on the driver (:func:`list_spec_files`) and read as bytes
(``binaryFile``); decompressing and decoding happen in Python (:func:`_file_texts`), so a
file that cannot be read -- not UTF-8, a truncated or corrupt gzip stream, an entry that
is not a regular file -- becomes one file-level ``graph_errors`` row and the other files
go on. (Spark's text reader passed undecodable bytes on to Arrow, which killed the Python
worker, and read a truncated ``.gz`` silently as far as it went.) The lines are then dealt
round-robin over ``spark.sql.shuffle.partitions`` partitions before the per-graph work, so
one big gzip file (not splittable: one task) is computed on every core, like the same
graphs in many small files.

The texts are parsed and checked against SPEC section 1 in the per-graph stage
(:mod:`pipeline.compute.stage`), by the columnar checks over a whole batch and, for a graph
they do not accept, by :func:`parse_loaded` (the one-graph checks that name the breach): the
rows of a bad graph never leave that stage, only its one error row does.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import orjson
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from pipeline.session import held_value, is_local_path, local_path
from pipeline.settings import Limits
from udfs.errors import internal_error_message
from udfs.spec.contract import (
    ContractError,
    ParsedGraph,
    parse_graph,
)
from udfs.spec.fingerprint import line_key

_GRAPH_ID_RE = re.compile(r'"graph_id"\s*:\s*"((?:[^"\\]|\\.)*)"')
SPEC_SUFFIXES = (".json", ".jsonl", ".json.gz", ".jsonl.gz")
# The rows :func:`read_texts` hands to the per-graph step: one JSON text (a graph) each, or
# an error already known from reading (then ``value`` is null and ``graph_id`` is set).
# With :class:`KnownLines`, every text row also has its ``line_key``, and a line the output
# computed already comes without its text: ``value`` null, ``graph_id``, ``fingerprint`` and
# ``node_count`` from the output's ``graph_fingerprints``.
TEXT_SCHEMA = T.StructType(
    [T.StructField(c, T.StringType(), True) for c in ("value", "source_file", "graph_id", "error_code", "message")]
    + [T.StructField("line_key", T.StringType(), True), T.StructField("fingerprint", T.StringType(), True),
       T.StructField("node_count", T.IntegerType(), True)]
)  # fmt: skip
_TEXT_COLUMNS = TEXT_SCHEMA.fieldNames()


def _text_row(**fields: Any) -> dict:
    return {c: fields.get(c) for c in _TEXT_COLUMNS}


@dataclass(frozen=True)
class KnownLines:
    """The spec lines an output's graphs were computed from, by their bytes: a nightly re-export
    repeats most lines byte for byte, and such a line is not sent on to the per-graph stage at
    all (neither its text through Spark's shuffle, nor its parse and canonical fingerprint
    there): the read step hands on its graph_id, fingerprint and node count instead, and the
    stage counts the graph as unchanged (:class:`pipeline.compute.stage.Skip`).

    ``salt``: :func:`udfs.spec.fingerprint.line_salt` of the run's rules version, so a key
    matches only lines read under the same rules and profiles; ``known``: line_key ->
    (graph_id, fingerprint, node_count), a broadcast for a fleet. A line whose bytes differ
    (other whitespace, keys in another order) still reaches the stage, which matches its
    canonical fingerprint as before."""

    salt: bytes
    known: Any = None

    def table(self) -> dict[str, tuple[str, str, int | None]]:
        return held_value(self.known)


def nulls_as_none(column: pd.Series) -> pd.Series:
    """An int column with nulls, as objects whose nulls are None (pandas reads them NaN)."""
    return column.astype(object).where(column.notna(), None)
_BATCH_CHARS = 64 << 20  # text handed to Arrow per output frame of the read step


class InputError(RuntimeError):
    """The run cannot start: the input path is missing or holds no spec files."""


def _unparseable_id(text: str, source_file: str) -> str:
    m = _GRAPH_ID_RE.search(text, 0, 1 << 20)
    if m:
        return m.group(1)
    digest = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:12]
    return f"unparseable:{source_file.rsplit('/', 1)[-1]}:{digest}"


# A \uD800-\uDFFF escape: JSON allows a lone surrogate, which Python keeps in its str but
# Arrow (and UTF-8, so Delta) cannot hold; one in a name killed the Python worker.
_LONE_SURROGATE_RE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _java_strings(value: Any) -> Any:
    """Every string with its unpaired surrogates replaced by '?', as Java's
    ``String.getBytes(UTF_8)`` does -- the bytes Flink hashes a uid from
    (``putString(uid, UTF_8)``), so the hash of the replaced uid is Flink's. Paired
    surrogates (an escaped emoji) were already joined into one character by the parser."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_java_strings(v) for v in value]
    if isinstance(value, dict):
        return {_java_strings(k): _java_strings(v) for k, v in value.items()}
    return value


def file_error_id(source_file: str) -> str:
    """The graph_id of a file-level error row: ``file-error:<name>:<sha1 of the path>``.

    SPEC gives every table a graph_id, and a re-run replaces rows by graph_id; an id
    derived from the file's path alone (not from its bytes, which could not be read) is
    the same on every run over the same file, so re-running replaces the row instead of
    adding a second one, and two broken files never share an id. The ``file-error:``
    prefix cannot clash with a real graph's id by accident and is easy to filter on.
    """
    digest = hashlib.sha1(source_file.encode("utf-8", "replace")).hexdigest()[:12]
    return f"file-error:{source_file.rsplit('/', 1)[-1]}:{digest}"


def _error(graph_id: str, source_file: str, code: str, message: str) -> dict:
    return {"kind": "error", "graph_id": graph_id, "source_file": source_file, "error_code": code, "message": message}


def load_text(text: str, source_file: str, limits: Limits | None = None, fast: bool = False) -> tuple[Any, dict | None]:
    """One graph's JSON text loaded: (the JSON value, None), or (None, its error row) for text
    that is no JSON or a graph over ``limits.max_graph_elements``.

    ``fast``: parse with orjson (about twice json's speed on fleet specs) and leave to
    json only what orjson refuses (lone surrogate escapes, NaN, text that is no JSON, whose
    error json words). orjson also reads an integer past 64 bits as a float, which no field of
    the contract accepts: the columnar checks refuse such a graph, and the caller re-loads
    what they refuse without ``fast`` before the checked path names the breach, so every
    contract error is worded from json's values. (One difference stays: valid JSON nested
    1,000-1,024 deep in a field the contract ignores loads, where json hit its recursion
    limit and called it INVALID_JSON.)"""
    limits = limits or Limits()
    obj = None
    if fast:
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    try:
        if obj is None:
            obj = json.loads(text)
    except json.JSONDecodeError as e:
        msg = f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})"
        return None, _error(_unparseable_id(text, source_file), source_file, "INVALID_JSON", msg)
    except RecursionError:
        msg = "not valid JSON here: nested deeper than the JSON parser's recursion limit"
        return None, _error(_unparseable_id(text, source_file), source_file, "INVALID_JSON", msg)
    if _LONE_SURROGATE_RE.search(text):
        obj = _java_strings(obj)
    if isinstance(obj, dict):
        size = sum(len(obj[k]) for k in ("nodes", "edges") if isinstance(obj.get(k), list))
        if size > limits.max_graph_elements:
            msg = (
                f"the graph has {size} nodes+edges, more than limits.max_graph_elements={limits.max_graph_elements}; "
                "raise it in conf/pipeline.json (or --set limits.max_graph_elements=N) if the workers have the memory"
            )
            return None, _error(_graph_id(obj, text, source_file), source_file, "GRAPH_TOO_LARGE", msg)
    return obj, None


def _graph_id(obj: Any, text: str, source_file: str) -> str:
    gid = obj.get("graph_id") if isinstance(obj, dict) else None
    return gid if isinstance(gid, str) and gid else _unparseable_id(text, source_file)


def parse_loaded(obj: Any, text: str, source_file: str) -> ParsedGraph | dict:
    """A loaded graph, contract-checked one by one (:func:`udfs.spec.contract.parse_graph`):
    a :class:`ParsedGraph`, or its error row."""
    try:
        return parse_graph(obj)
    except ContractError as e:
        return _error(_graph_id(obj, text, source_file), source_file, e.code, str(e))
    except Exception:  # a bug in the contract check: this graph only, with the traceback
        return _error(_graph_id(obj, text, source_file), source_file, "INTERNAL_ERROR", internal_error_message())


def parse_text(text: str, source_file: str, limits: Limits | None = None) -> ParsedGraph | dict:
    """One graph's JSON text, contract-checked: a :class:`ParsedGraph`, or its error row."""
    obj, error = load_text(text, source_file, limits)
    return error if error is not None else parse_loaded(obj, text, source_file)


class _BadGzip(Exception):
    """The gzip stream cannot be read to its end: CORRUPT_GZIP, with this message."""


_IN_CHUNK = 1 << 20  # compressed bytes fed to zlib at a time: the decompressed file is never held whole


def _gzip_chunks(content: bytes, step: int = _IN_CHUNK) -> Iterator[bytes]:
    """The decompressed bytes of a gzip file (any number of members), piece by piece.
    zlib checks each member's CRC-32 and length trailer; a stream that ends before its
    trailer is a truncated file. (Hadoop's codec, what Spark's text reader uses, stops
    silently at the cut.)"""
    view = memoryview(content)
    pos, member = 0, 0
    while True:
        d = zlib.decompressobj(wbits=31)
        try:
            while not d.eof and pos < len(view):
                out = d.decompress(view[pos : pos + step])
                pos += step
                if out:
                    yield out
        except zlib.error as e:
            raise _BadGzip(f"not a readable gzip stream ({e}) in member {member + 1}") from None
        if not d.eof:
            raise _BadGzip(
                f"the gzip stream ends early, {len(content)} bytes in, before the end of member {member + 1}: "
                "the file is truncated"
            )
        # unused_data is what was left of the last piece fed, not of the file: the next
        # member starts that far before the piece's end.
        pos = min(pos, len(view)) - len(d.unused_data)
        if pos >= len(view) or (view[pos] == 0 and len(content.rstrip(b"\0")) <= pos):
            return  # the end, or trailing zero padding (tape-style), which gzip(1) allows
        member += 1


def _plain_chunks(content: bytes) -> Iterator[bytes]:
    view = memoryview(content)
    for pos in range(0, len(view), 16 * _IN_CHUNK):
        yield bytes(view[pos : pos + 16 * _IN_CHUNK])


def _check_file(chunks: Iterator[bytes], path: str) -> dict | None:
    """First pass over a file: a file-level error row if it is not whole UTF-8 text (or its
    gzip stream is broken), else None. Nothing is handed on before the whole file passed,
    so a bad file is rejected whole -- never half read and looking complete."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    try:
        for chunk in chunks:
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as e:
                return _not_utf8(path, offset + e.start, e.object[e.start], e.reason)
            offset += len(chunk)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as e:
            return _not_utf8(path, offset, e.object[e.start], "the file ends inside a character")
    except _BadGzip as e:
        return _file_error(path, "CORRUPT_GZIP", f"{e}; the file is rejected whole, none of its graphs is read")
    return None


def _not_utf8(path: str, offset: int, byte: int, reason: str) -> dict:
    return _file_error(
        path,
        "NOT_UTF8",
        f"not UTF-8 text: byte {offset} (0x{byte:02x}) cannot be decoded ({reason}); "
        "spec files are UTF-8 JSON; none of its graphs is read",
    )


def _file_error(source_file: str, code: str, message: str) -> dict:
    return _text_row(source_file=source_file, graph_id=file_error_id(source_file), error_code=code, message=message)


def _raw_lines(chunks: Iterator[bytes], limit: int) -> Iterator[bytes | tuple[int, bytes]]:
    """The lines of a file; a line longer than ``limit`` bytes as (its size, its first MB),
    without ever holding more than ``limit`` bytes of it."""
    buf = b""
    skipping, size, head = False, 0, b""
    for chunk in chunks:
        parts = chunk.split(b"\n")
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if skipping:
                size += len(part)
            else:
                buf += part
                if len(buf) > limit:
                    skipping, size, head, buf = True, len(buf), buf[: 1 << 20], b""
            if not last:
                if skipping:
                    yield (size, head)
                    skipping, size, head = False, 0, b""
                else:
                    yield buf
                    buf = b""
    if skipping:
        yield (size, head)
    elif buf:
        yield buf


def _too_long(path: str, size: int, head: bytes, limit: int) -> dict:
    msg = (
        f"a line of {size} bytes, longer than limits.max_line_bytes={limit}; raise it in "
        "conf/pipeline.json (or --set limits.max_line_bytes=N) if the workers have the memory"
    )
    text = head.decode("utf-8", "replace")
    return _text_row(source_file=path, graph_id=_unparseable_id(text, path), error_code="LINE_TOO_LONG", message=msg)


def _texts(text: str) -> list[str]:
    """The JSON texts of a ``*.json`` file: the whole file if it is one object, else its lines."""
    stripped = text.strip()
    if "\n" in stripped:
        try:
            json.loads(stripped)
            return [stripped]
        except (json.JSONDecodeError, RecursionError):
            pass  # JSON Lines after all (or broken: each line then gets its own error)
    return [line for line in stripped.splitlines() if line.strip()]


def _file_texts(path: str, content: bytes, limits: Limits, lines: KnownLines | None = None) -> Iterator[dict]:
    """Text rows of one spec file: one per graph, or the file's (or a line's) error row; with
    ``lines``, each keyed by its bytes, and a known line's without its text (:class:`KnownLines`)."""
    salt, known = (lines.salt, lines.table()) if lines is not None else (None, {})
    name = urlparse(path).path.lower()
    chunks = _gzip_chunks if name.endswith(".gz") else _plain_chunks
    error = _check_file(chunks(content), path)
    if error is not None:
        yield error
        return
    limit = limits.max_line_bytes
    if name.endswith((".json", ".json.gz")):  # one object (maybe pretty-printed), or JSON Lines
        data = b"".join(chunks(content))
        if len(data) > limit and b"\n" not in data.strip():
            yield _too_long(path, len(data), data[: 1 << 20], limit)
            return
        texts: Iterator[bytes | tuple[int, bytes]] = (t.encode("utf-8") for t in _texts(data.decode("utf-8-sig")))
        data = b""
    else:
        texts = _raw_lines(chunks(content), limit)
    first = True
    for raw in texts:
        if isinstance(raw, tuple):
            yield _too_long(path, raw[0], raw[1], limit)
            first = False
            continue
        if len(raw) > limit:
            yield _too_long(path, len(raw), raw[: 1 << 20], limit)
            continue
        key = line_key(salt, raw) if salt is not None else None
        held = known.get(key) if key is not None else None
        if held is not None:  # the very bytes of a line the output computed (KnownLines)
            first = False
            yield _text_row(source_file=path, graph_id=held[0], fingerprint=held[1], node_count=held[2], line_key=key)
            continue
        line = raw.decode("utf-8-sig" if first else "utf-8")  # a leading byte-order mark is dropped
        first = False
        if line.strip():
            yield _text_row(value=line, source_file=path, line_key=key)


def _read_files(limits: Limits, lines: KnownLines | None = None) -> Any:
    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            rows: list[dict] = []
            chars = 0
            for path, content in zip(batch["path"], batch["content"], strict=True):
                if path.startswith("file:/") and not path.startswith("file://"):
                    path = "file://" + path[5:]  # as input_file_name() and list_spec_files write it
                for row in _file_texts(path, content, limits, lines):
                    rows.append(row)
                    chars += len(row["value"] or "")
                    if chars >= _BATCH_CHARS:
                        yield _text_frame(rows)
                        rows, chars = [], 0
            if rows:
                yield _text_frame(rows)

    return run


def _text_frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=_TEXT_COLUMNS)
    frame["node_count"] = frame["node_count"].astype("Int32")  # nulls stay nulls, not NaN
    return frame


def _is_spec_name(name: str) -> bool:
    # Spark's file listing skips names starting with "_" or "." (Hadoop's hidden files); so do we.
    return not name.startswith(("_", ".")) and name.lower().endswith(SPEC_SUFFIXES)


def list_spec_files(spark: SparkSession, path: str) -> tuple[list[str], list[dict], int]:
    """The spec files under ``path`` (URIs), their bytes in all, and an error row for each spec-named entry that
    is not a readable regular file (a FIFO would block its reader forever; a broken link
    fails the whole listing in Spark). Local paths are listed with ``os`` (which tells a
    FIFO from a file; Hadoop's local file system does not), others with Hadoop's FileSystem."""
    if is_local_path(spark, path):
        return _list_local(local_path(path))
    jvm = spark._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
    if not fs.exists(hpath):
        raise InputError(f"input path {path} does not exist")
    files, errors, size = [], [], 0
    it = fs.listFiles(hpath, True)
    while it.hasNext():
        st = it.next()
        name = st.getPath().getName()
        if not _is_spec_name(name):
            continue
        uri = st.getPath().toString()
        if st.isFile() and name.lower().endswith(".gz") and st.getLen() == 0:
            errors.append(_file_error(uri, "CORRUPT_GZIP", _EMPTY_GZIP))
        elif st.isFile():
            files.append(uri)
            size += st.getLen()
        else:
            errors.append(_file_error(uri, "NOT_A_FILE", "not a regular file; none of its graphs is read"))
    return files, errors, size


# Spark's file scans skip 0-byte files, so an empty .gz never reaches _file_texts; it is
# caught while listing.
_EMPTY_GZIP = "an empty file (0 bytes), which is not a gzip file; none of its graphs is read"


def _list_local(path: str) -> tuple[list[str], list[dict], int]:
    if not os.path.lexists(path):
        raise InputError(f"input path {path} does not exist")
    path = os.path.abspath(path)
    if not os.path.isdir(path):
        entries = [path]
    else:
        entries = []
        for folder, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
            entries.extend(os.path.join(folder, n) for n in sorted(names) if _is_spec_name(n))
    files, errors, size = [], [], 0
    for entry in entries:
        uri = "file://" + entry
        try:
            st = os.stat(entry)
        except OSError as e:
            why = "a broken symbolic link" if os.path.islink(entry) else e.strerror
            errors.append(_file_error(uri, "FILE_UNREADABLE", f"cannot be opened ({why}); none of its graphs is read"))
            continue
        mode = st.st_mode
        if stat.S_ISREG(mode) and entry.lower().endswith(".gz") and st.st_size == 0:
            errors.append(_file_error(uri, "CORRUPT_GZIP", _EMPTY_GZIP))
        elif not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            errors.append(_file_error(uri, "NOT_A_FILE", f"{kind}, not a regular file; none of its graphs is read"))
        elif not os.access(entry, os.R_OK):
            errors.append(_file_error(uri, "FILE_UNREADABLE", "no permission to read it; none of its graphs is read"))
        else:
            files.append(uri)
            size += st.st_size
    return files, errors, size


def read_texts(
    spark: SparkSession, path: str, limits: Limits | None = None, lines: KnownLines | None = None
) -> DataFrame:
    """:data:`TEXT_SCHEMA` rows (one per graph text, or per file/line error), spread evenly
    over partitions sized to the input (:func:`text_partitions`) whatever the files' layout;
    a line ``lines`` knows comes without its text (:class:`KnownLines`)."""
    limits = limits or Limits.from_settings()
    files, errors, size = list_spec_files(spark, path)
    if not files and not errors:
        raise InputError(f"no *.json, *.jsonl (or .gz) files under {path}")
    frames = []
    if files:
        raw = spark.read.format("binaryFile").load(files).select("path", "content")
        frames.append(raw.mapInPandas(_read_files(limits, lines), TEXT_SCHEMA))
    if errors:
        frames.append(spark.createDataFrame(_text_frame(errors), TEXT_SCHEMA))
    texts = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    # Round-robin, so the per-graph step's parallelism does not depend on the file layout
    # (bench/split_fleet.py: one gzip file vs 100).
    return texts.repartition(text_partitions(size, int(spark.conf.get("spark.sql.shuffle.partitions"))))


# Spec bytes (as stored, gzip or not) per partition of the graph texts: about 100 graphs of a
# gzip'd fleet. Every partition is a task in each of the run's stages downstream, so a few
# graphs must not make many partitions (docs/performance.md).
BYTES_PER_PARTITION = 256 * 1024


def text_partitions(size: int, most: int) -> int:
    """Partitions for ``size`` bytes of spec files: one per :data:`BYTES_PER_PARTITION`, at
    least one, at most ``most`` (``spark.sql.shuffle.partitions``)."""
    return max(1, min(most, -(-size // BYTES_PER_PARTITION)))
