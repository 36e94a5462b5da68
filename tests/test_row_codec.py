"""The per-graph stage's multi-kind rows, through their one codec
(:data:`pipeline.compute.row_codec.FUSED_ROWS`): every kind's columns go out of a pandas UDF in the
shared typed slots of its schema and come back by name and type. A round trip through real
Spark (Arrow included) for every kind and column, nulls too, so a change to the slot layout
cannot silently mix up two columns of the same type; and rows that do not match their
kind's declaration are refused by name, not turned into nulls or dropped."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import types as T

from pipeline.compute import stage as fused
from pipeline.compute.row_codec import FUSED_ROWS, RowCodec
from udfs.compute.batch import STEPS, StepClock

KINDS = FUSED_ROWS.kinds


def _value(kind: str, column: str, row: int):
    """A value no other column of the same kind and type has (row 1: null where nullable)."""
    t = FUSED_ROWS.types(kind)[column]
    position = FUSED_ROWS.columns(kind).index(column)
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
    t = FUSED_ROWS.types(kind)[column]
    if isinstance(t, T.IntegerType):
        return pd.array(values, dtype="Int64")
    if isinstance(t, T.BooleanType):
        return pd.array(values, dtype="boolean")
    if isinstance(t, T.DoubleType):
        return np.array([np.nan if v is None else v for v in values])
    out = np.empty(n, dtype=object)  # (np.array of equal-length lists would be 2-D)
    out[:] = values
    return out


def _rows(kind: str, n: int = 2) -> dict:
    return {"graph_id": np.array([f"g-{kind}-{r}" for r in range(n)], dtype=object)} | {
        c: _column(kind, c, n) for c in FUSED_ROWS.columns(kind)
    }


def test_the_stage_has_the_kinds_it_emits():
    assert set(KINDS) == {"operator", "vertex", "job_edge", "chain_edge", "graph", "stats", "error", "timing",
                          "fingerprint", "stream_graph", "stream_node", "stream_edge"}
    assert fused.FUSED_SCHEMA == FUSED_ROWS.schema


@pytest.mark.parametrize("encoding", ["arrow", "pandas"])
def test_every_kind_round_trips_through_the_slots(spark, encoding):
    """Every kind, every column, a null in each nullable one: encoded as the worker does,
    through Spark and Arrow, decoded by name. ``arrow``: record batches through
    ``mapInArrow``, as the stage from spec texts yields them (pipeline.compute.stage._from_texts);
    ``pandas``: frames through ``mapInPandas``, as the stage from ingested tables."""
    by_kind = {kind: _rows(kind) for kind in KINDS}
    if encoding == "arrow":
        batches = FUSED_ROWS.encode_arrow(by_kind)
        assert len(batches) == len(KINDS)
        assert all(b.schema == FUSED_ROWS.arrow_schema for b in batches)
        df = spark.range(1, numPartitions=1).mapInArrow(lambda _: iter(batches), FUSED_ROWS.schema)
    else:
        frames = FUSED_ROWS.encode(by_kind)
        assert len(frames) == len(KINDS)
        assert all(list(f.columns) == FUSED_ROWS.schema.names for f in frames)
        # one Arrow batch per kind, as the stage yields them
        df = spark.range(1, numPartitions=1).mapInPandas(lambda _: iter(frames), FUSED_ROWS.schema)
    assert df.schema == FUSED_ROWS.schema

    for kind in KINDS:
        back = FUSED_ROWS.rows(df, kind).orderBy("graph_id")
        assert back.columns == ["graph_id", *FUSED_ROWS.columns(kind)]
        assert [f.dataType for f in back.schema.fields[1:]] == list(FUSED_ROWS.types(kind).values()), kind
        got = [r.asDict() for r in back.collect()]
        want = [
            {"graph_id": f"g-{kind}-{r}"} | {c: _value(kind, c, r) for c in FUSED_ROWS.columns(kind)} for r in range(2)
        ]
        assert got == want, kind
        one = FUSED_ROWS.columns(kind)[0]
        picked = df.where(df.kind == kind).select(FUSED_ROWS.column(kind, one).alias(one)).collect()
        assert sorted(r[one] for r in picked if r[one] is not None) == [_value(kind, one, 0)], kind


def test_the_stage_encodes_a_batch_and_its_timing(spark):
    """The stage's own encode (:func:`pipeline.compute.stage._frames`): a batch's rows as lists of
    column dicts, and the step clock as ``timing`` rows."""
    clock = StepClock()
    clock.seconds = {step: 0.25 * (i + 1) for i, step in enumerate(STEPS)}
    frames = fused._frames({"chain_edge": [_rows("chain_edge", 1), _rows("chain_edge", 2)]}, clock)
    df = spark.createDataFrame(pd.concat(frames, ignore_index=True), FUSED_ROWS.schema)
    assert FUSED_ROWS.rows(df, "chain_edge").count() == 3
    timing = {r["step"]: r["worker_seconds"] for r in FUSED_ROWS.rows(df, "timing").collect()}
    assert timing == clock.seconds


def test_the_stage_from_texts_encodes_a_batch_as_arrow_and_its_timing(spark):
    """The stage's Arrow encode (:func:`pipeline.compute.stage._batches`, what ``mapInArrow`` gets):
    the same rows as the pandas one, lists and numpy columns alike, and the step clock as
    ``timing`` rows."""
    clock = StepClock()
    clock.seconds = {step: 0.25 * (i + 1) for i, step in enumerate(STEPS)}
    parts = {"chain_edge": [_rows("chain_edge", 1), _rows("chain_edge", 2)], "error": [_rows("error", 2)]}
    parts["error"][0] = {c: list(v) for c, v in parts["error"][0].items()}  # lists, as some steps give
    batches = fused._batches(parts, clock)
    df = spark.range(1, numPartitions=1).mapInArrow(lambda _: iter(batches), FUSED_ROWS.schema)
    frames = fused._frames(parts, StepClock())
    want = spark.createDataFrame(pd.concat(frames, ignore_index=True), FUSED_ROWS.schema)
    for kind in ("chain_edge", "error"):
        got_rows = sorted(map(tuple, FUSED_ROWS.rows(df, kind).collect()), key=repr)
        assert got_rows == sorted(map(tuple, FUSED_ROWS.rows(want, kind).collect()), key=repr), kind
    assert FUSED_ROWS.rows(df, "chain_edge").count() == 3
    timing = {r["step"]: r["worker_seconds"] for r in FUSED_ROWS.rows(df, "timing").collect()}
    assert timing == clock.seconds


def test_rows_already_in_spark_encode_to_the_same_schema(spark):
    """Rows that join the stage's output without passing through the UDF (errors recorded
    at ingest) land in the same slots."""
    errors = spark.createDataFrame(
        [("g1", "BAD_JSON", "no", "f.jsonl")], "graph_id string, error_code string, message string, source_file string"
    )
    encoded = FUSED_ROWS.encode_spark(errors, "error")
    assert encoded.schema.names == FUSED_ROWS.schema.names
    assert [f.dataType for f in encoded.schema] == [f.dataType for f in FUSED_ROWS.schema]
    back = FUSED_ROWS.rows(encoded, "error").collect()
    assert [r.asDict() for r in back] == [
        {"graph_id": "g1", "error_code": "BAD_JSON", "message": "no", "source_file": "f.jsonl"}
    ]


def test_no_two_columns_of_a_kind_share_a_slot():
    for kind in KINDS:
        slots = [FUSED_ROWS.slot(kind, c) for c in FUSED_ROWS.columns(kind)]
        assert len(set(slots)) == len(slots), kind
        assert not {"kind", "graph_id"} & set(slots), kind
        for column, slot in zip(FUSED_ROWS.columns(kind), slots, strict=True):
            assert FUSED_ROWS.schema[slot].dataType == FUSED_ROWS.types(kind)[column], (kind, column, slot)


def test_an_unknown_kind_is_refused_by_name(spark):
    with pytest.raises(ValueError, match=r"unknown kind of row 'edge'.*job_edge"):
        FUSED_ROWS.encode({"edge": _rows("job_edge")})
    with pytest.raises(ValueError, match="unknown kind of row 'edges'"):
        FUSED_ROWS.column("edges", "edge_idx")
    empty = spark.createDataFrame([], FUSED_ROWS.schema)
    with pytest.raises(ValueError, match="unknown kind of row 'vertices'"):
        FUSED_ROWS.rows(empty, "vertices")
    with pytest.raises(ValueError, match="kind 'graph' has no column 'nodes'"):
        FUSED_ROWS.column("graph", "nodes")


def test_a_missing_or_extra_column_is_refused_by_name(spark):
    missing = _rows("stats")
    del missing["hash_layers"]
    for encode in (FUSED_ROWS.encode, FUSED_ROWS.encode_arrow):
        with pytest.raises(ValueError, match=r"rows of kind 'stats': missing hash_layers \(its columns: graph_id, "):
            encode({"stats": missing})
    extra = _rows("chain_edge") | {"chainable": np.array([True, False])}
    for encode in (FUSED_ROWS.encode, FUSED_ROWS.encode_arrow):
        with pytest.raises(ValueError, match="rows of kind 'chain_edge': not declared chainable"):
            encode({"chain_edge": extra})
    no_id = _rows("timing")
    del no_id["graph_id"]
    with pytest.raises(ValueError, match="missing graph_id"):
        FUSED_ROWS.encode({"timing": no_id})
    graphs = spark.createDataFrame([("g1", "f.jsonl")], "graph_id string, source_file string")
    with pytest.raises(ValueError, match="rows of kind 'graph': missing node_count"):
        FUSED_ROWS.encode_spark(graphs, "graph")


def test_a_declaration_the_layout_cannot_hold_is_refused():
    with pytest.raises(ValueError, match="'graph_id'"):
        RowCodec({"a": {"graph_id": T.StringType()}})
    with pytest.raises(ValueError, match="two types"):
        RowCodec({"a": {"xs": T.ArrayType(T.IntegerType())}, "b": {"xs": T.ArrayType(T.StringType())}})
    with pytest.raises(ValueError, match="like a shared slot"):
        RowCodec({"a": {"i0": T.DoubleType(), "n": T.IntegerType()}})
