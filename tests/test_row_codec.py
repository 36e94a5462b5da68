"""The per-graph stage's multi-kind rows: every kind's columns go out of the pandas UDF in
the shared typed slots of ``pipeline.fused.FUSED_SCHEMA`` and come back, by name and type,
through ``pipeline.fused.kind_rows``. A round trip through real Spark (Arrow included) for
every kind and column, nulls too, so a change to the slot layout cannot silently mix up
two columns of the same type."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import types as T

from pipeline import fused
from pipeline.table_columns import column_type
from udfs.graph_batch import STEPS, StepClock


def _type(column: str) -> T.DataType:
    if column in fused._OWN:
        return fused._OWN[column]
    return T.IntegerType() if column in fused._STAGE_INT_COLUMNS else column_type(column)


def _value(kind: str, column: str, row: int):
    """A value no other column of the same kind and type has (row 1: null where nullable)."""
    t = _type(column)
    position = fused.KIND_COLUMNS[kind].index(column)
    if row == 1 and not isinstance(t, T.ArrayType):
        return None
    if isinstance(t, T.IntegerType):
        return 1000 * (row + 1) + position
    if isinstance(t, T.BooleanType):
        return position % 2 == 0
    if isinstance(t, T.DoubleType):
        return 0.5 + position
    if isinstance(t, T.ArrayType):
        return [position, row, 3]
    return f"{kind}.{column}#{row}"


def _column(kind: str, column: str, n: int):
    values = [_value(kind, column, r) for r in range(n)]
    t = _type(column)
    if isinstance(t, T.IntegerType):
        return pd.array(values, dtype="Int64")
    if isinstance(t, T.BooleanType):
        return pd.array(values, dtype="boolean")
    out = np.empty(n, dtype=object)  # (np.array of equal-length lists would be 2-D)
    out[:] = values
    return out


def test_every_kind_round_trips_through_the_slots(spark):
    kinds = [k for k in fused.KIND_COLUMNS if k != "timing"]
    rows = {
        kind: [
            {"graph_id": np.array([f"g-{kind}-0", f"g-{kind}-1"], dtype=object)}
            | {c: _column(kind, c, 2) for c in fused.KIND_COLUMNS[kind]}
        ]
        for kind in kinds
    }
    clock = StepClock()
    clock.seconds = {step: 0.25 * (i + 1) for i, step in enumerate(STEPS)}
    frames = fused._frames(rows, clock)
    assert all(list(f.columns) == fused.FUSED_SCHEMA.names for f in frames)
    df = spark.createDataFrame(pd.concat(frames, ignore_index=True), fused.FUSED_SCHEMA)

    for kind in kinds:
        back = fused.kind_rows(df, kind).orderBy("graph_id")
        assert back.columns == ["graph_id", *fused.KIND_COLUMNS[kind]]
        assert [f.dataType for f in back.schema.fields[1:]] == [_type(c) for c in fused.KIND_COLUMNS[kind]], kind
        got = [r.asDict() for r in back.collect()]
        want = [
            {"graph_id": f"g-{kind}-{r}"} | {c: _value(kind, c, r) for c in fused.KIND_COLUMNS[kind]} for r in range(2)
        ]
        assert got == want, kind

    timing = {r["step"]: r["worker_seconds"] for r in fused.kind_rows(df, "timing").collect()}
    assert timing == clock.seconds


def test_no_two_columns_of_a_kind_share_a_slot():
    for kind, slots in fused.LAYOUT.items():
        assert len(set(slots.values())) == len(slots), kind
        for column, slot in slots.items():
            field = fused.FUSED_SCHEMA[slot]
            assert field.dataType == _type(column), (kind, column, slot)
