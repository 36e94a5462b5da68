"""Step 1: spec files -> one flat record stream (graph, node, edge and error rows).

``*.jsonl`` files are read line by line, so a fleet in one big file is spread over the
cluster; ``*.json`` files are read whole (one object, or JSON Lines after all). Each
graph is parsed and checked against SPEC section 1 by :func:`parse_graph` inside a
``mapInPandas``, where it is read: the rows of a bad graph never leave that step, only
its one error row does.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipeline.spec_contract import ContractError, ParsedGraph, parse_graph

RECORD_SCHEMA = T.StructType(
    [
        T.StructField("kind", T.StringType(), False),  # graph | node | edge | error
        T.StructField("graph_id", T.StringType(), False),
        T.StructField("source_file", T.StringType(), True),
        # graph
        T.StructField("job_name", T.StringType(), True),
        T.StructField("flink_version", T.StringType(), True),
        T.StructField("chaining_enabled", T.BooleanType(), True),
        T.StructField("chain_operators_with_different_max_parallelism", T.BooleanType(), True),
        T.StructField("job_type", T.StringType(), True),
        T.StructField("dynamic", T.BooleanType(), True),
        T.StructField("source_id_order", T.ArrayType(T.IntegerType()), True),
        # node
        T.StructField("node_id", T.IntegerType(), True),
        T.StructField("name", T.StringType(), True),
        T.StructField("uid", T.StringType(), True),
        T.StructField("uid_hash", T.StringType(), True),
        T.StructField("parallelism", T.IntegerType(), True),
        T.StructField("max_parallelism", T.IntegerType(), True),
        T.StructField("chaining_strategy", T.StringType(), True),
        T.StructField("slot_sharing_group", T.StringType(), True),
        T.StructField("is_source", T.BooleanType(), True),
        T.StructField("source_kind", T.StringType(), True),
        T.StructField("yielding", T.BooleanType(), True),
        T.StructField("has_operator", T.BooleanType(), True),
        # edge
        T.StructField("edge_idx", T.IntegerType(), True),
        T.StructField("source", T.IntegerType(), True),
        T.StructField("target", T.IntegerType(), True),
        T.StructField("partitioner", T.StringType(), True),
        T.StructField("exchange_mode", T.StringType(), True),
        T.StructField("type_number", T.IntegerType(), True),
        T.StructField("output_tag", T.StringType(), True),
        # error
        T.StructField("error_code", T.StringType(), True),
        T.StructField("message", T.StringType(), True),
    ]
)
_COLUMNS = RECORD_SCHEMA.fieldNames()
_GRAPH_ID_RE = re.compile(r'"graph_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


class InputError(RuntimeError):
    """The run cannot start: the input path is missing or holds no spec files."""


def _unparseable_id(text: str, source_file: str) -> str:
    m = _GRAPH_ID_RE.search(text)
    if m:
        return m.group(1)
    digest = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:12]
    return f"unparseable:{source_file.rsplit('/', 1)[-1]}:{digest}"


def parse_text(text: str, source_file: str) -> ParsedGraph | dict:
    """One graph's JSON text, contract-checked: a :class:`ParsedGraph`, or its error row."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        return {
            "kind": "error",
            "graph_id": _unparseable_id(text, source_file),
            "source_file": source_file,
            "error_code": "INVALID_JSON",
            "message": f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})",
        }
    try:
        return parse_graph(obj)
    except ContractError as e:
        gid = obj.get("graph_id") if isinstance(obj, dict) else None
        gid = gid if isinstance(gid, str) and gid else _unparseable_id(text, source_file)
        return {"kind": "error", "graph_id": gid, "source_file": source_file, "error_code": e.code, "message": str(e)}


def records_for_text(text: str, source_file: str) -> list[dict]:
    """All records of one graph's JSON text: its rows, or a single error row."""
    pg = parse_text(text, source_file)
    if isinstance(pg, dict):
        return [pg]
    out = [{"kind": "graph", "source_file": source_file, **pg.graph}]
    out.extend({"kind": "node", **n} for n in pg.nodes)
    out.extend({"kind": "edge", **e} for e in pg.edges)
    return out


def texts_of(value: str, whole_file: bool) -> list[str]:
    if not whole_file:
        return [value] if value.strip() else []
    stripped = value.strip()
    if not stripped:
        return []
    try:
        json.loads(stripped)
        return [stripped]
    except json.JSONDecodeError:
        return [line for line in stripped.splitlines() if line.strip()]


def _parse_partition(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    for batch in batches:
        rows: list[dict] = []
        for value, source_file, whole in zip(batch["value"], batch["source_file"], batch["whole_file"], strict=False):
            for text in texts_of(value, bool(whole)):
                rows.extend(records_for_text(text, source_file))
        frame = pd.DataFrame(rows, columns=_COLUMNS)
        frame["source_id_order"] = frame["source_id_order"].astype(object).where(frame["source_id_order"].notna(), None)
        for c in ("node_id", "parallelism", "max_parallelism", "edge_idx", "source", "target", "type_number"):
            frame[c] = frame[c].astype("Int64")
        yield frame


def _exists(spark: SparkSession, path: str) -> bool:
    jvm = spark._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
    return bool(fs.exists(hpath))


def read_texts(spark: SparkSession, path: str) -> DataFrame:
    """(value, source_file, whole_file) rows: a JSON Lines line, or a whole ``.json`` file."""
    if not _exists(spark, path):
        raise InputError(f"input path {path} does not exist")
    frames = []
    for glob, whole in (("*.{jsonl,jsonl.gz}", False), ("*.{json,json.gz}", True)):
        reader = spark.read.option("recursiveFileLookup", "true").option("pathGlobFilter", glob)
        try:
            df = reader.text(path, wholetext=whole)
        except Exception as e:  # Spark raises when a glob matches no file
            if "Path does not exist" in str(e) or "Unable to infer schema" in str(e):
                continue
            raise
        frames.append(df.select("value", F.input_file_name().alias("source_file"), F.lit(whole).alias("whole_file")))
    if not frames:
        raise InputError(f"no *.json, *.jsonl (or .gz) files under {path}")
    texts = frames[0]
    for f in frames[1:]:
        texts = texts.unionByName(f)
    return texts


def read_records(spark: SparkSession, path: str) -> DataFrame:
    """Parsed records of every graph under ``path`` (a file or a folder)."""
    return read_texts(spark, path).mapInPandas(_parse_partition, RECORD_SCHEMA).localCheckpoint(eager=True)
