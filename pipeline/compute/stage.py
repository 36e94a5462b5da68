"""The per-graph stage: spec text -> every per-graph step -> rows of all output tables, in
ONE Spark stage.

Every step but the chains is per graph, and a graph is small: a Spark stage per step would
mostly pay Spark's fixed costs (a shuffle and a materialised table each; docs/benchmarks.md).
So one ``mapInArrow`` over the input lines parses and checks each graph
(:mod:`udfs.spec.contract`) and runs the rest on the batch
(:func:`udfs.compute.batch.compute_batch`): no shuffle until the connected components, which
need all graphs' chainable edges at once.

Output: Arrow batches of :data:`FUSED_SCHEMA`, one per kind, ``kind`` telling the row's table:
``operator``/``vertex``/``job_edge`` (the output tables), ``chain_edge`` (the input of
connected components), ``graph`` (one per input graph text: id, file, node count),
``stats`` (traversal statistics), ``error`` and ``timing`` (worker seconds per step and batch),
and, when asked (``emit``), the stream tables' rows (``stream_graph``/``stream_node``/``stream_edge``).
Each kind's columns, and where they sit in the schema, are :data:`pipeline.compute.row_codec.FUSED_ROWS`'s:
rows go in and come out only through it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipeline.compute.buckets import cogroup_buckets
from pipeline.compute.read import Limits, load_text, nulls_as_none, parse_loaded
from pipeline.compute.row_codec import FUSED_ROWS
from pipeline.session import held_value
from pipeline.tables.columns import VERTEX_COLUMNS, column_type
from pipeline.tables.stream_tables import StreamTables
from udfs.compute.batch import (
    BatchRows,
    StepClock,
    compute_batch,
    concat_parts,
)
from udfs.errors import internal_error_message
from udfs.spec.batch import ParsedBatch, parse_batch
from udfs.spec.contract import EDGE_COLUMNS, ERROR_COLUMNS, GRAPH_COLUMNS, NODE_COLUMNS
from udfs.spec.fingerprint import REJECTED_FROM, spec_fingerprint

E = TypeVar("E")  # an encoded kind of row: a pandas frame or an Arrow record batch

# The one schema of every kind of row, as the codec lays them out (pipeline/compute/row_codec.py).
FUSED_SCHEMA = FUSED_ROWS.schema


def kind_rows(rows: DataFrame, kind: str) -> DataFrame:
    """The rows of ``kind`` of this stage's output, with their own column names (``graph_id``
    first): :meth:`RowCodec.rows <pipeline.compute.row_codec.RowCodec.rows>` of :data:`FUSED_ROWS`,
    named here too for the callers that read the stage's output (tests, the benchmark)."""
    return FUSED_ROWS.rows(rows, kind)


def _encoded(rows: BatchRows, clock: StepClock, encode: Callable[[dict], list[E]]) -> list[E]:
    """One encoded piece per kind of row (``encode``: the codec's pandas or Arrow encoder),
    each in the full output schema; the time this takes is the step "rows out" of the
    batch's own timing rows (encoded last, so they include it)."""
    t = time.perf_counter()
    out = encode({kind: concat_parts(cols) for kind, cols in rows.items()})
    clock.add("rows out", t)
    return out + encode({"timing": {"graph_id": "", **clock.rows()}})


def _frames(rows: BatchRows, clock: StepClock) -> list[pd.DataFrame]:
    """Pandas frames, for the stage from ingested tables (a cogroup's pandas UDF)."""
    return _encoded(rows, clock, FUSED_ROWS.encode)


def _batches(rows: BatchRows, clock: StepClock) -> list[pa.RecordBatch]:
    """Arrow record batches, for the stage from spec texts (``mapInArrow``: no pandas frame
    on the way out; :meth:`RowCodec.encode_arrow` says what that saves)."""
    return _encoded(rows, clock, FUSED_ROWS.encode_arrow)


def _batch_frames(
    parsed: list, columns: ParsedBatch | None = None, files: list[str] | None = None, clock: StepClock | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Stream-table frames of a batch: the graphs parsed one by one (``parsed``, pairs of a
    ParsedGraph and its file) and those the columnar checks accepted (``columns``, with
    ``files``), built column by column (a frame from a list of row dicts costs several times
    more)."""
    t = time.perf_counter()
    graph_rows = [{**pg.graph, "source_file": source_file} for pg, source_file in parsed]
    node_rows = list(chain.from_iterable(pg.nodes for pg, _ in parsed))
    edge_rows = list(chain.from_iterable(pg.edges for pg, _ in parsed))
    nodes = {c: [n[c] for n in node_rows] for c in NODE_COLUMNS}
    edges = {c: [e[c] for e in edge_rows] for c in EDGE_COLUMNS}
    if columns is not None:
        graph_rows += [{**g, "source_file": f} for g, f in zip(columns.graphs, files or [], strict=True)]
        for c in NODE_COLUMNS:
            nodes[c] += columns.nodes[c]
        for c in EDGE_COLUMNS:
            edges[c] += columns.edges[c]
    frames = pd.DataFrame(graph_rows, columns=GRAPH_COLUMNS), _typed_frame(nodes), _typed_frame(edges)
    if clock is not None:
        clock.add("parse+validate", t)  # the parsed rows as the batch's columns
    return frames


_NUMPY_TYPES = {T.IntegerType(): np.int64, T.BooleanType(): bool}


def _typed_frame(columns: dict[str, list]) -> pd.DataFrame:
    """A frame of contract-checked columns, each built with its table type's numpy dtype:
    the dtype pandas would infer from the checked values, without inferring it (which was
    most of building the batch's frames)."""
    return pd.DataFrame(
        {c: np.array(v, dtype=_NUMPY_TYPES.get(column_type(c), object)) for c, v in columns.items()}, copy=False
    )


JOBGRAPH, STREAM = "jobgraph", "stream"


@dataclass(frozen=True)
class Skip:
    """What lets the stage skip a graph: the fingerprints the output already holds (graph_id ->
    fingerprint, a broadcast for a fleet). A graph whose fingerprint (computed under this
    ``rules_version``) is there is neither computed nor emitted, only counted (its ``graph`` row
    and a ``fingerprint`` row with ``skipped``); every other graph gets its ``fingerprint`` row
    (``known``: the output holds the graph, under another fingerprint), which the run writes to
    ``graph_fingerprints`` with its tables.

    ``keys``: graph_id -> the key of the line the output's row was computed from
    (:class:`pipeline.compute.read.KnownLines`). A graph skipped by its fingerprint but read
    from other bytes (a re-export with other whitespace) is ``rekeyed``: its ``graph_fingerprints``
    row is written again with the new key, as a full run writes it, and the next run knows the
    line by its bytes."""

    rules_version: str
    known: Any = None  # a Broadcast of dict[str, str], or a dict; None: nothing known yet
    keys: Any = None  # a Broadcast of dict[str, str], or a dict

    def fingerprints(self) -> dict[str, str]:
        return held_value(self.known)

    def line_keys(self) -> dict[str, str]:
        return held_value(self.keys)


def _from_texts(
    limits: Limits, raise_in_graph: str | None, emit: frozenset[str], skip: Skip | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from _batches(*_batch_rows(batch.to_pandas(), limits, raise_in_graph, emit, skip))

    return run


def _batch_rows(
    batch: pd.DataFrame,
    limits: Limits,
    raise_in_graph: str | None,
    emit: frozenset[str] = frozenset({JOBGRAPH}),
    skip: Skip | None = None,
) -> tuple[BatchRows, StepClock]:
    """Every row of one Arrow batch of texts. A graph_id seen twice in the batch is not
    computed: each copy gets only its ``graph`` row, and the driver's duplicate check
    (:func:`pipeline.compute.duplicates.duplicate_id_errors`, over all batches) rejects the id, as
    it does for copies in different batches or files. With ``skip``, a graph whose fingerprint
    the output holds already is not computed (:class:`Skip`)."""
    clock = StepClock()
    t = time.perf_counter()
    loaded, errors, skipped, fingerprints = _load(batch, limits, skip)
    columns, files, parsed = _parse(loaded, limits, errors)
    columns, files, parsed, repeated = _without_repeated_ids(columns, files, parsed)
    clock.add("parse+validate", t)
    rows = _compute_isolated(parsed, columns, files, clock, raise_in_graph, emit) if parsed or columns.graphs else {}
    for err in errors:
        rows.setdefault("error", []).append({k: [err[k]] for k in ERROR_COLUMNS})
        rows.setdefault("graph", []).append(
            {"source_file": [err["source_file"]], "node_count": [None], "graph_id": [err["graph_id"]]}
        )
    for gid, source_file, node_count in repeated + skipped:
        graph_row = {"source_file": [source_file], "node_count": [node_count], "graph_id": [gid]}
        rows.setdefault("graph", []).append(graph_row)
    if fingerprints["graph_id"]:
        rows.setdefault("fingerprint", []).append(fingerprints)
    return rows, clock


def _load(
    batch: pd.DataFrame, limits: Limits, skip: Skip | None
) -> tuple[list[tuple[Any, str, str]], list[dict], list[tuple[str, str, int | None]], dict[str, list]]:
    """The batch's texts as JSON: (loaded (JSON, text, file), error rows, the graphs skipped as
    unchanged (id, file, node count), the fingerprint rows' columns)."""
    loaded, errors, skipped = [], [], []
    known = skip.fingerprints() if skip else {}
    stored_keys = skip.line_keys() if skip else {}
    fingerprints: dict[str, list] = {k: [] for k in ("graph_id", "fingerprint", "skipped", "known", "line_key",
                                                     "node_count", "rekeyed")}  # fmt: skip
    node_counts = nulls_as_none(batch["node_count"])
    for value, source_file, gid, code, message, key, held_fp, held_nodes in zip(
        batch["value"], batch["source_file"], batch["graph_id"], batch["error_code"], batch["message"],
        batch["line_key"], batch["fingerprint"], node_counts, strict=True,
    ):  # fmt: skip
        if code is not None:  # a file or line that could not be read (read_spec._file_texts)
            errors.append({"graph_id": gid, "error_code": code, "message": message, "source_file": source_file})
            continue
        if value is None:  # a line the output computed, known by its bytes (read_spec.KnownLines)
            for k, v in zip(fingerprints, (gid, held_fp, True, True, key, held_nodes, False), strict=True):
                fingerprints[k].append(v)
            skipped.append((gid, source_file, held_nodes))
            continue
        obj, error = load_text(value, source_file, limits, fast=True)
        if error is not None:
            errors.append(error)
            continue
        graph_id = obj.get("graph_id") if isinstance(obj, dict) else None
        # a graph without a text graph_id is rejected whatever it holds: nothing to key it by
        fp = spec_fingerprint(obj, skip.rules_version) if skip and isinstance(graph_id, str) else None
        if fp is not None:
            held = known.get(graph_id)
            nodes = obj.get("nodes")
            n_nodes = len(nodes) if isinstance(nodes, list) else None
            unchanged = held == fp or held == f"{fp}{REJECTED_FROM}{source_file}"
            rekeyed = unchanged and key is not None and stored_keys.get(graph_id) != key
            values = (graph_id, fp, unchanged, graph_id in known, key, n_nodes, rekeyed)
            for k, v in zip(fingerprints, values, strict=True):
                fingerprints[k].append(v)
            if unchanged:
                skipped.append((graph_id, source_file, n_nodes))
                continue
        loaded.append((obj, value, source_file))
    return loaded, errors, skipped, fingerprints


def _parse(
    loaded: list[tuple[Any, str, str]], limits: Limits, errors: list[dict]
) -> tuple[ParsedBatch, list[str], list[tuple[Any, str]]]:
    """The loaded graphs checked: (the columnar batch, its graphs' files, the graphs checked one
    by one with their files); a graph that breaches the contract adds its row to ``errors``."""
    # The columnar checks over the whole batch; the graphs they do not accept are checked one
    # by one (which names what is wrong). Should the columnar pass itself fail (a bug), every
    # graph goes the checked way: no graph is lost to it.
    try:
        columns, rest = parse_batch([obj for obj, _, _ in loaded])
    except Exception:
        columns, rest = parse_batch([]), list(range(len(loaded)))
    # The parsed JSON (several times the text's size) is not needed past the columnar checks:
    # dropped before the batch is computed, it is not part of the worker's peak memory.
    loaded[:] = [(None, value, source_file) for _, value, source_file in loaded]
    files = [loaded[p][2] for p in columns.positions]
    parsed = []
    for p in rest:
        _, value, source_file = loaded[p]
        obj, error = load_text(value, source_file, limits)  # json's values, for parse_graph's errors
        result = error if error is not None else parse_loaded(obj, value, source_file)
        if isinstance(result, dict):
            errors.append(result)
        else:
            parsed.append((result, loaded[p][2]))
    return columns, files, parsed


def _without_repeated_ids(
    columns: ParsedBatch, files: list[str], parsed: list[tuple[Any, str]]
) -> tuple[ParsedBatch, list[str], list[tuple[Any, str]], list[tuple[str, str, int]]]:
    """The batch less every graph whose graph_id it holds twice, and those (id, file, node count)."""
    counts = Counter([pg.graph["graph_id"] for pg, _ in parsed] + [g["graph_id"] for g in columns.graphs])
    repeated = [(pg.graph["graph_id"], f, len(pg.nodes)) for pg, f in parsed if counts[pg.graph["graph_id"]] > 1]
    repeated += [
        (g["graph_id"], f, n)
        for g, f, n in zip(columns.graphs, files, columns.node_counts, strict=True)
        if counts[g["graph_id"]] > 1
    ]
    parsed = [(pg, f) for pg, f in parsed if counts[pg.graph["graph_id"]] == 1]
    keep = [counts[g["graph_id"]] == 1 for g in columns.graphs]
    if not all(keep):
        columns, files = columns.select(keep), [f for f, k in zip(files, keep, strict=True) if k]
    return columns, files, parsed, repeated


def _compute_isolated(
    parsed: list,
    columns: ParsedBatch,
    files: list[str],
    clock: StepClock,
    raise_in_graph: str | None,
    emit: frozenset[str] = frozenset({JOBGRAPH}),
) -> BatchRows:
    """The batch's rows of the kinds ``emit`` asks for: the JobGraph rows of
    :func:`compute_batch` (``jobgraph``) and the stream tables' rows (``stream``).

    Should the batch-wide work raise (a bug), each graph is done again on its own, so the one
    that raises gets an INTERNAL_ERROR row with its traceback and the others of the batch are
    still written. (compute_batch itself turns an exception inside one graph's steps into that
    graph's INTERNAL_ERROR row.)"""
    try:
        return _rows(_batch_frames(parsed, columns, files, clock), clock, raise_in_graph, emit)
    except Exception:
        pass
    out: BatchRows = {}
    for pg, source_file in parsed + list(zip(columns.parsed_graphs(), files, strict=True)):
        try:
            rows = _rows(_batch_frames([(pg, source_file)]), clock, raise_in_graph, emit)
        except Exception:
            gid = pg.graph["graph_id"]
            rows = {
                "graph": [{"source_file": [source_file], "node_count": [len(pg.nodes)], "graph_id": [gid]}],
                "error": [
                    {
                        "graph_id": [gid],
                        "error_code": ["INTERNAL_ERROR"],
                        "message": [internal_error_message()],
                        "source_file": [source_file],
                    }
                ],
            }
        for kind, parts in rows.items():
            out.setdefault(kind, []).extend(parts)
    return out


def _rows(
    frames: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame],
    clock: StepClock,
    raise_in_graph: str | None,
    emit: frozenset[str],
) -> BatchRows:
    out: BatchRows = _stream_rows(*frames) if STREAM in emit else {}
    if JOBGRAPH in emit:
        for kind, parts in compute_batch(*frames, clock, raise_in_graph=raise_in_graph).items():
            out.setdefault(kind, []).extend(parts)
    else:  # the graph rows compute_batch would have made: id, file, node count
        graphs, nodes, _ = frames
        counts = nodes.groupby("graph_id", sort=False).size().reindex(graphs["graph_id"], fill_value=0)
        out["graph"] = [{"graph_id": graphs["graph_id"].tolist(), "source_file": graphs["source_file"].tolist(),
                         "node_count": counts.to_numpy()}]  # fmt: skip
    return out


def _stream_rows(graphs: pd.DataFrame, nodes: pd.DataFrame, edges: pd.DataFrame) -> BatchRows:
    """The stream tables' rows of the batch's accepted graphs, as the contract checks read them."""
    return {
        "stream_graph": [{c: graphs[c].tolist() for c in GRAPH_COLUMNS}],
        "stream_node": [{c: nodes[c].to_numpy() for c in NODE_COLUMNS}],
        "stream_edge": [{c: edges[c].to_numpy() for c in EDGE_COLUMNS}],
    }


def rows_from_texts(
    texts: DataFrame,
    limits: Limits | None = None,
    raise_in_graph: str | None = None,
    emit: frozenset[str] = frozenset({JOBGRAPH}),
    skip: Skip | None = None,
) -> DataFrame:
    """All rows from :data:`read_spec.TEXT_SCHEMA` rows (:func:`read_spec.read_texts`): the
    JobGraph rows (``emit`` holds ``jobgraph``), the stream tables' rows (``stream``), or both.

    ``raise_in_graph`` is a test hook (setting ``testing.raise_in_graph``, never in
    conf/pipeline.json): the per-graph code raises a RuntimeError for the graph of that id,
    to show that an unexpected exception costs that graph only (tests/test_bad_input.py)."""
    return texts.mapInArrow(_from_texts(limits or Limits.from_settings(), raise_in_graph, emit, skip), FUSED_SCHEMA)


def rows_from_tables(tables: StreamTables, buckets: int) -> DataFrame:
    """All rows from ingested stream tables: graphs are grouped into buckets, each bucket one
    :func:`compute_batch` call. Errors recorded at ingest are passed through."""
    graph_cols = [c for c in GRAPH_COLUMNS if c != "graph_id"]
    left = tables.nodes.join(tables.graphs, "graph_id")
    node_cols = list(NODE_COLUMNS)

    def run(nodes: pd.DataFrame, edges: pd.DataFrame) -> pd.DataFrame:
        clock = StepClock()
        graphs = nodes[["graph_id", *graph_cols]].drop_duplicates("graph_id").reset_index(drop=True)
        rows = compute_batch(graphs, nodes[node_cols], edges, clock) if len(graphs) else {}
        return pd.concat(_frames(rows, clock), ignore_index=True)

    computed = cogroup_buckets(left, tables.edges, run, FUSED_SCHEMA, buckets)

    errors = tables.errors.select("graph_id", *FUSED_ROWS.columns("error"))
    graphs = tables.errors.select("graph_id", "source_file", F.lit(None).alias("node_count"))
    return computed.unionByName(
        FUSED_ROWS.encode_spark(errors, "error").unionByName(FUSED_ROWS.encode_spark(graphs, "graph"))
    )


def vertex_rows(rows: DataFrame) -> DataFrame:
    """The ``job_vertices`` table from the rows of kind ``vertex``."""
    split = F.split(F.col("operator_ids_text"), ",")
    user_split = F.split(F.col("user_operator_ids_text"), ",")
    return (
        FUSED_ROWS.rows(rows, "vertex")
        .withColumn("operator_ids", split)
        .withColumn("user_operator_ids", F.transform(user_split, lambda x: F.when(x != "", x)))
        .select(*VERTEX_COLUMNS)
    )
