"""Rows of several kinds in one Spark schema: the one codec between a pandas UDF that
emits them and the Spark code that reads them back by kind.

A Spark stage has one output schema, but the per-graph stage (:mod:`pipeline.compute.stage`)
emits rows for several tables at once (operators, vertices, job edges, chain edges,
graphs, stats, errors, timings), so every row carries a ``kind`` and the kinds share
columns. Which kind's column sits in which shared column (the slot layout) is known here
only: the UDF hands over a frame per kind with the kind's own column names
(:meth:`RowCodec.encode` to pandas frames, :meth:`RowCodec.encode_arrow` to Arrow record
batches), Spark code asks for a kind's rows or one of its columns by name
(:meth:`RowCodec.rows`, :meth:`RowCodec.column`), and a kind or column the codec was not
told of is refused with an error naming it -- as a multi-output API with declared tags
(Beam's ``TaggedOutput``) refuses an undeclared tag -- instead of a silently null or
silently dropped column.

:data:`FUSED_ROWS` is the per-graph stage's codec.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from pipeline.tables.columns import JOB_EDGE_COLUMNS, OPERATOR_COLUMNS, VERTEX_COLUMNS, column_type
from udfs.spec.contract import EDGE_COLUMNS, ERROR_COLUMNS, GRAPH_COLUMNS, NODE_COLUMNS

# Columns of these types share typed slots (i0, s0, b0, ...), each kind filling them in its
# column order; a column of any other type keeps its own name. The rows are then as wide as
# the widest kind per type, not the union of every kind's columns (nearly all null in any
# one row): fewer columns to build, to convert to and from Arrow, and to hold in the
# checkpoint (what that saves: docs/benchmarks.md).
_SLOT_PREFIX: dict[T.DataType, str] = {T.IntegerType(): "i", T.StringType(): "s", T.BooleanType(): "b"}
_KEYS = ("kind", "graph_id")  # in every row, never null, never a kind's declared column


class RowCodec:
    """The kinds of row one stage emits, each with its columns and their Spark types (every
    row also has ``kind`` and ``graph_id``), and the one schema they all travel in."""

    def __init__(self, kinds: Mapping[str, Mapping[str, T.DataType]]) -> None:
        self._types: dict[str, dict[str, T.DataType]] = {kind: dict(columns) for kind, columns in kinds.items()}
        self._slots: dict[str, dict[str, str]] = {}  # kind -> its column -> the schema's column
        slot_types: dict[str, T.DataType] = {}
        own_types: dict[str, T.DataType] = {}
        for kind, columns in self._types.items():
            used: dict[str, int] = {}
            slots = self._slots[kind] = {}
            for name, dtype in columns.items():
                if name in _KEYS:
                    raise ValueError(f"kind {kind!r} declares {name!r}, which every row has already")
                prefix = _SLOT_PREFIX.get(dtype)
                if prefix is None:
                    if own_types.setdefault(name, dtype) != dtype:
                        raise ValueError(f"column {name!r} has two types: {own_types[name]} and {dtype}")
                    slots[name] = name
                    continue
                slots[name] = f"{prefix}{used.get(prefix, 0)}"
                used[prefix] = used.get(prefix, 0) + 1
                slot_types[slots[name]] = dtype
        clash = set(own_types) & set(slot_types)
        if clash:
            raise ValueError(f"columns named like a shared slot: {sorted(clash)}")
        ordered = sorted(slot_types, key=lambda s: (s[0], int(s[1:])))
        self.schema = T.StructType(
            [
                *[T.StructField(name, T.StringType(), False) for name in _KEYS],
                *[T.StructField(s, slot_types[s], True) for s in ordered],
                *[T.StructField(name, dtype, True) for name, dtype in own_types.items()],
            ]
        )
        # per kind: each schema field with the kind's column it carries (None: ``kind``, or null)
        self._sources: dict[str, list[tuple[T.StructField, str | None]]] = {}
        for kind, slots in self._slots.items():
            carried = {"graph_id": "graph_id", **{s: c for c, s in slots.items()}}
            self._sources[kind] = [(f, carried.get(f.name)) for f in self.schema.fields]
        self.arrow_schema: pa.Schema = to_arrow_schema(self.schema)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._types)

    def columns(self, kind: str) -> list[str]:
        """The declared columns of ``kind``, in order (``graph_id`` and ``kind`` not among them)."""
        return list(self._kind(kind))

    def types(self, kind: str) -> dict[str, T.DataType]:
        """Each declared column of ``kind`` with its Spark type."""
        return dict(self._kind(kind))

    def slot(self, kind: str, name: str) -> str:
        """The schema's column that carries ``kind``'s column ``name`` (the layout, for tests
        and for reading the raw rows; code that reads rows uses :meth:`column`)."""
        slots = self._slots[self._known(kind)]
        if name not in slots:
            raise ValueError(f"kind {kind!r} has no column {name!r}; its columns: {', '.join(slots)}")
        return slots[name]

    # -- the worker side: pandas frames per kind -> frames of the schema

    def encode(self, by_kind: Mapping[str, pd.DataFrame | Mapping[str, Any]]) -> list[pd.DataFrame]:
        """One frame of exactly :attr:`schema`'s columns per kind of row, ready for Arrow as
        they are or concatenated. Each kind's rows (a frame, or a dict of equal-length
        columns; a scalar is repeated) must have exactly ``graph_id`` and the kind's declared
        columns, in any order.

        Each kind is aligned to the schema on its own, before any concat: concatenating
        differently shaped frames turns every partly missing int column into objects, which
        then cost a slow conversion. A kind's own
        columns are converted only where Arrow needs it; the columns it does not fill are
        typed all-null columns."""
        return [self._encode_kind(kind, rows) for kind, rows in by_kind.items()]

    def encode_arrow(self, by_kind: Mapping[str, pd.DataFrame | Mapping[str, Any]]) -> list[pa.RecordBatch]:
        """As :meth:`encode`, but one Arrow record batch of :attr:`arrow_schema` per kind, for
        ``mapInArrow``: each of the kind's columns goes straight to its Arrow type, the
        columns it does not fill are Arrow nulls. From pandas frames, pyspark's conversion
        (a null mask per column, then Arrow, the struct around it) cost the per-graph stage
        more than its own encode: 0.72 against 0.22 CPU s per 1,000 graphs of fleet-10k."""
        return [self._encode_kind_arrow(kind, rows) for kind, rows in by_kind.items()]

    def _encode_kind_arrow(self, kind: str, rows: pd.DataFrame | Mapping[str, Any]) -> pa.RecordBatch:
        columns = {c: rows[c] for c in rows.columns} if isinstance(rows, pd.DataFrame) else rows
        self._check_columns(kind, columns)
        n = max((len(v) for v in columns.values() if not _scalar(v)), default=1)
        arrays = []
        for (field, name), arrow in zip(self._sources[kind], self.arrow_schema, strict=True):
            if field.name == "kind":
                arrays.append(pa.array([kind] * n, arrow.type))
            elif name is None:
                arrays.append(pa.nulls(n, arrow.type))
            else:
                values = columns[name]
                arrays.append(pa.array([values] * n if _scalar(values) else values, arrow.type, from_pandas=True))
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)

    def _encode_kind(self, kind: str, rows: pd.DataFrame | Mapping[str, Any]) -> pd.DataFrame:
        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
        self._check_columns(kind, frame.columns)
        n = len(frame)
        out = {}
        for field, name in self._sources[kind]:
            col = frame[name] if name is not None else None
            if field.name == "kind":
                col = np.full(n, kind, dtype=object)
            elif isinstance(field.dataType, T.IntegerType):
                if col is None:
                    col = pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
                elif not pd.api.types.is_integer_dtype(col.dtype):
                    col = col.astype("Int64")
            elif isinstance(field.dataType, T.DoubleType):
                col = np.full(n, np.nan) if col is None else col
            elif col is None:
                col = np.full(n, None, dtype=object)
            out[field.name] = col
        return pd.DataFrame(out, index=frame.index)

    # -- the Spark side

    def encode_spark(self, df: DataFrame, kind: str) -> DataFrame:
        """Rows of ``kind`` that are already a Spark DataFrame (``graph_id`` and exactly the
        kind's declared columns), as rows of :attr:`schema` -- for rows that join the UDF's
        output without passing through it."""
        self._check_columns(kind, df.columns)
        return df.select(
            *[
                F.lit(kind).alias(field.name)
                if field.name == "kind"
                else (F.col(name) if name is not None else F.lit(None)).cast(field.dataType).alias(field.name)
                for field, name in self._sources[kind]
            ]
        )

    def rows(self, df: DataFrame, kind: str) -> DataFrame:
        """The rows of ``kind`` in ``df`` (of :attr:`schema`), with the kind's own column
        names and types (``graph_id`` first)."""
        columns = self._kind(kind)
        return df.where(F.col("kind") == kind).select("graph_id", *[self.column(kind, c).alias(c) for c in columns])

    def column(self, kind: str, name: str) -> Column:
        """Column ``name`` of the rows of ``kind``, wherever the layout put it (in rows of
        other kinds it holds their values: filter on ``kind`` first, or use :meth:`rows`)."""
        return F.col(self.slot(kind, name))

    # -- checks

    def _known(self, kind: str) -> str:
        if kind not in self._types:
            raise ValueError(f"unknown kind of row {kind!r}; the kinds are: {', '.join(self._types)}")
        return kind

    def _kind(self, kind: str) -> dict[str, T.DataType]:
        return self._types[self._known(kind)]

    def _check_columns(self, kind: str, columns: Iterable[str]) -> None:
        """Exactly ``graph_id`` and the declared columns: a missing one would travel as
        nulls and an extra one be dropped, both without a word."""
        want = ["graph_id", *self._kind(kind)]
        have = list(columns)
        missing = [c for c in want if c not in have]
        extra = [c for c in have if c not in want]
        repeated = sorted({c for c in have if have.count(c) > 1})
        if missing or extra or repeated:
            problems = [
                f"{label} {', '.join(cs)}"
                for label, cs in (("missing", missing), ("not declared", extra), ("repeated", repeated))
                if cs
            ]
            raise ValueError(f"rows of kind {kind!r}: {'; '.join(problems)} (its columns: {', '.join(want)})")


def _scalar(value: Any) -> bool:
    """A value that stands for a whole column (repeated on every row), as pandas takes it."""
    return not isinstance(value, list | tuple | np.ndarray | pd.Series | pd.api.extensions.ExtensionArray)


def _typed(columns: Iterable[str], **types: T.DataType) -> dict[str, T.DataType]:
    """Columns with the tables' type of their name (:func:`column_type`) unless given."""
    return {c: types.get(c, column_type(c)) for c in columns}


_INT = T.IntegerType()

# The per-graph stage's kinds (:mod:`pipeline.compute.stage`): the output tables' rows without
# graph_id, a vertex's operator-id lists as comma-joined text (udfs.flink.job_graph_rows
# says why), and the stage's own kinds.
FUSED_ROWS = RowCodec(
    {
        "operator": _typed(c for c in OPERATOR_COLUMNS if c != "graph_id"),
        "vertex": _typed(
            [c for c in VERTEX_COLUMNS if c not in ("graph_id", "operator_ids", "user_operator_ids")]
            + ["operator_ids_text", "user_operator_ids_text"]
        ),
        "job_edge": _typed(c for c in JOB_EDGE_COLUMNS if c != "graph_id"),
        "chain_edge": _typed(["source_node_id", "target_node_id"]),
        "graph": _typed(["source_file", "node_count"], node_count=_INT),
        "stats": _typed(
            ["bfs_levels", "hash_layers", "frontier_sizes"],
            bfs_levels=_INT,
            hash_layers=_INT,
            frontier_sizes=T.ArrayType(_INT),
        ),
        "error": _typed(c for c in ERROR_COLUMNS if c != "graph_id"),
        "timing": _typed(["step", "worker_seconds"], worker_seconds=T.DoubleType()),
        # what decides a graph's tables (udfs/spec/fingerprint.py), and whether the run skipped it
        # (and, for the next run's read step, the key of the line's bytes and its stream nodes)
        "fingerprint": _typed(
            ["fingerprint", "skipped", "known", "line_key", "node_count", "rekeyed"],
            skipped=T.BooleanType(), known=T.BooleanType(), line_key=T.StringType(), node_count=_INT,
            rekeyed=T.BooleanType(),
        ),  # fmt: skip
        # the stream tables' rows (what ``ingest`` writes, what ``check-restore`` explains with),
        # emitted only when asked for: the graphs as the contract checks read them
        "stream_graph": _typed(c for c in GRAPH_COLUMNS if c != "graph_id"),
        "stream_node": _typed(c for c in NODE_COLUMNS if c != "graph_id"),
        "stream_edge": _typed(c for c in EDGE_COLUMNS if c != "graph_id"),
    }
)
