"""``check-restore`` (SPEC section 5): for every (savepoint, new graph) pair, Flink's own verdict.

The phases:

1. **graphs**: the specs are computed by the ``compute`` path (their tables land in
   ``--output``), keeping the graphs as the contract checks read them, so nothing reads the
   specs again; an ingested folder gives its stream tables directly;
2. **manifest**: every line checked (:mod:`pipeline.restore.manifest`); a bad line is an
   ERROR row naming the line;
3. **savepoints**: every ``_metadata`` parsed once, in parallel (:mod:`pipeline.restore.savepoints`);
4. **decide**: each check gets its rows (its savepoint's operators, its graph's vertices,
   operators and stream rows, and those of the job version that took the savepoint when the
   manifest names it) and ONE grouped pandas UDF over all checks decides, explains, proposes
   fixes and proves them by computing the patched graph again (:mod:`udfs.restore.check_rows`);
5. **write**: the restore tables, each replaced by its key in one Delta commit, and the
   run published in ``runs`` (:func:`pipeline.tables.delta_writer.write_run`), as ``compute``
   writes its tables.

A check never aborts the run: an unreadable savepoint, an unknown or rejected graph, a bad
manifest line give verdict ERROR with the reason in ``failure`` and ``message``.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.compute.run import ComputeRun, Progress, compares_rows, compute_run, read_ingested
from pipeline.options import Summary
from pipeline.restore import incremental
from pipeline.restore.manifest import CheckLine, check_records, read_manifest
from pipeline.restore.savepoints import (
    HEAD_COLUMNS,
    SavepointTables,
    read_savepoint_tables,
    read_value_streams,
    resolve_metadata_files,
    savepoint_states,
)
from pipeline.session import local_frame
from pipeline.settings import Settings
from pipeline.tables import delta_writer
from pipeline.tables.columns import (
    FIXES_COLUMNS,
    MATCHES_COLUMNS,
    RESTORE_CHECKS_COLUMNS,
    RESTORE_WARNINGS_COLUMNS,
    SAVEPOINT_OPERATORS_COLUMNS,
    STATE_PROBLEMS_COLUMNS,
    struct,
)
from pipeline.tables.stream_tables import StreamTables
from udfs.restore.check_rows import OPERATOR_FIELDS, VALUE_REQUESTS, VERTEX_FIELDS, check_rows_many
from udfs.spec.contract import EDGE_COLUMNS, GRAPH_COLUMNS, NODE_COLUMNS

# Checks are grouped by their manifest line: two lines may (wrongly) share a check_id, and each
# still gets its own row.
_OUT_SCHEMA = struct(["line", "table", "row"])
_IN_COLS = ["line", "kind", "payload"]
# Checks decided by one call of the grouped UDF: their proofs' patched graphs are computed as one
# batch per round (udfs.restore.check_rows.run_batched), and enough groups stay to share the cores.
CHECKS_PER_GROUP = 50
_CHECK_COLS = ["check_id", "savepoint", "graph_id", "savepoint_graph_id", "allow_non_restored_state",
               "flink_version", "chaining_enabled", "old_chaining_enabled", "old_flink_version", "target_flink",
               "error"]  # fmt: skip
_MANIFEST_SCHEMA = (
    "check_id string, savepoint string, savepoint_path string, graph_id string, "
    "allow_non_restored_state boolean, savepoint_graph_id string, target_flink string, line string, "
    "manifest_error string"
)


@dataclass
class RestoreSummary(Summary):
    """What a check-restore run decided. Fix rows are counted apart by what they are: a spec fix
    whose patched job restores (proven), one whose patched job still fails (not proven), a problem
    without a fix (no counterpart can be named: the origin of the state is unknown), and state-type
    advice (a code or procedure change no recomputation can prove)."""

    checks: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    fixes: int = 0  # spec fixes proposed (proven + not proven)
    fixes_verified: int = 0
    fixes_not_proven: int = 0
    problems_without_fix: int = 0
    state_advice: int = 0
    proof_rounds: int = 0
    checks_unchanged: int = 0  # inputs as the output's published run decided them: not decided again
    graphs: dict[str, Any] = field(default_factory=dict)


@dataclass
class RestoreRun:
    """A check-restore run: its summary and its restore tables (``restore_checks``,
    ``restore_operator_matches``, ``restore_fixes``, ``restore_state_problems``,
    ``restore_warnings``) as
    checkpointed DataFrames, which the deploy gate reads its one check from."""

    summary: RestoreSummary
    tables: dict[str, DataFrame]


def check_restore(
    spark: SparkSession,
    graphs_path: str,
    checks_path: str,
    output: str | None,
    settings: Settings,
    progress: Progress | None = None,
    prove_fixes: bool = True,
    target_flink: str | None = None,
    full: bool = False,
) -> RestoreSummary:
    """Decide every check of the manifest at ``checks_path`` against the graphs under
    ``graphs_path`` (spec files or an ingested folder); all tables land in ``output``.
    ``target_flink``: decide the state half as if the new jobs ran on this Flink line (the
    upgrade check), unless a manifest line names its own ``target_flink``. Incremental unless
    ``full``: a check whose inputs are unchanged since the output's published run is not
    decided again (:mod:`pipeline.restore.incremental`)."""
    return run_checks(
        spark, graphs_path, checks_path, output, settings, progress, prove_fixes, target_flink, full
    ).summary


def run_checks(
    spark: SparkSession,
    graphs_path: str,
    checks_path: str | list[CheckLine],
    output: str | None,
    settings: Settings,
    progress: Progress | None = None,
    prove_fixes: bool = True,
    target_flink: str | None = None,
    full: bool = False,
) -> RestoreRun:
    """:func:`check_restore`, keeping its restore tables. ``output`` None (the deploy gate
    without ``--output``): the same run, nothing written -- the checks read the run's own
    tables, never the output's, either way. ``checks_path`` may be the checks themselves,
    records as the manifest reader makes them (:func:`pipeline.restore.manifest.check_record`):
    the deploy gate's one check, its savepoint resolved where the user gave it."""
    progress = progress or Progress()
    summary = RestoreSummary()
    run = compute_run(spark, graphs_path, output, settings, progress, keep_stream=True, full=full)
    s = run.summary
    summary.graphs = {"in": s.graphs_in, "processed": s.graphs_processed, "rejected": s.graphs_rejected,
                      "skipped": s.graphs_skipped}  # fmt: skip
    graph_fps = _graph_fingerprints(run)
    lines = _manifest_lines(spark, checks_path, target_flink)
    fps: dict[str, str | None] = {}
    compare = True  # rows compared with the tables' before they are written (TableWrite.compare)
    if output is not None:
        version = incremental.restore_rules_version(settings, prove_fixes)
        fps = _check_fingerprints(spark, lines, graph_fps, version)
        lines, compare = _changed_checks(spark, output, lines, fps, full, progress, summary)
        run = _with_skipped_graphs(spark, run, graphs_path, settings, progress, lines, graph_fps)
    stream = _stream_of(spark, run, graphs_path)
    savepoints = _read_savepoints(spark, lines, stream)
    progress.say(f"savepoints read: {len({c.savepoint_path for c in lines if c.savepoint_path})}")
    # checkpointed: the decide plan reads it five times, and planning five copies of its joins
    # cost a one-job check about a second on the driver
    checks = _checks_frame(spark, lines, stream, run.tables["graph_errors"], savepoints.errors).localCheckpoint(
        eager=True
    )
    decided = _with_values(spark, checks, savepoints, stream, run.tables, prove_fixes, len(lines))
    results = _table(decided, "restore_checks", RESTORE_CHECKS_COLUMNS)
    matches = _table(decided, "restore_operator_matches", MATCHES_COLUMNS)
    fixes = _table(decided, "restore_fixes", FIXES_COLUMNS)
    problems = _table(decided, "restore_state_problems", STATE_PROBLEMS_COLUMNS)
    warnings = _table(decided, "restore_warnings", RESTORE_WARNINGS_COLUMNS)
    if output is not None:
        sp_table = _savepoint_operators(spark, lines, savepoints.operators)
        given = sorted({(c.savepoint, c.savepoint_path) for c in lines if c.savepoint_path and c.error is None})
        states = savepoint_states(spark, given, savepoints.heads)
        fp_rows = [(c.check_id, fps[c.line], version) for c in lines if fps.get(c.line) is not None]
        check_fps = local_frame(spark, fp_rows, incremental.SCHEMA)
        _write(spark, output, lines, results, matches, fixes, problems, warnings, sp_table, states, check_fps, progress,
               settings, compare, version)  # fmt: skip
    verdicts = Counter(r["verdict"] for r in results.select("verdict").collect())
    summary.verdicts, summary.checks = dict(verdicts), sum(verdicts.values())
    _count_fixes(summary, fixes)
    tables = {"restore_checks": results, "restore_operator_matches": matches, "restore_fixes": fixes,
              "restore_state_problems": problems, "restore_warnings": warnings}  # fmt: skip
    return RestoreRun(summary, tables)


def _manifest_lines(spark: SparkSession, checks: str | list[CheckLine], target_flink: str | None) -> list[CheckLine]:
    """The manifest's checks, or the records handed over as they are (the deploy gate's)."""
    return read_manifest(spark, checks, target_flink) if isinstance(checks, str) else check_records(checks)


def _changed_checks(
    spark: SparkSession,
    output: str,
    lines: list[CheckLine],
    fps: dict[str, str | None],
    full: bool,
    progress: Progress,
    summary: RestoreSummary,
) -> tuple[list[CheckLine], bool]:
    """The checks to decide: those whose fingerprint the output's published run does not hold
    (every one when ``full``), and whether their rows are compared before they are written."""
    known = {} if full else incremental.known_checks(spark, output, progress.say)
    decide = [c for c in lines if fps[c.line] is None or known.get(c.check_id) != fps[c.line]]
    summary.checks_unchanged = len(lines) - len(decide)
    if known:
        progress.say(f"incremental: {summary.checks_unchanged} of {len(lines)} checks unchanged, not decided again")
    return decide, compares_rows(len(decide), len(known))


def _count_fixes(summary: RestoreSummary, fixes: DataFrame) -> None:
    """The summary's fix counts, in one Spark job: spec fixes (proven or not), problems without
    a fix, state advice, proof rounds."""
    spec_fix = F.col("advice_code").isNull() & F.col("fix_code").isNotNull()
    counts = fixes.agg(
        F.sum(spec_fix.cast("int")),
        F.sum((spec_fix & F.col("verified")).cast("int")),
        F.sum((spec_fix & ~F.coalesce(F.col("verified"), F.lit(False))).cast("int")),
        F.sum((F.col("advice_code").isNull() & F.col("fix_code").isNull()).cast("int")),
        F.sum(F.col("advice_code").isNotNull().cast("int")),
        F.max("proof_round"),
    ).first()
    (summary.fixes, summary.fixes_verified, summary.fixes_not_proven, summary.problems_without_fix,
     summary.state_advice, summary.proof_rounds) = (int(v or 0) for v in counts)  # fmt: skip


@dataclass
class _GraphFingerprints:
    """The run's graphs' spec fingerprints (a graph_id read twice has none) and which of them
    the run skipped as unchanged (their rows are the output's, not the run's)."""

    fingerprints: dict[str, str]
    skipped: set[str]


def _graph_fingerprints(run: ComputeRun) -> _GraphFingerprints:
    rows = run.tables["graph_fingerprints"].collect() if "graph_fingerprints" in run.tables else []
    copies = Counter(r["graph_id"] for r in rows)
    once = [r for r in rows if copies[r["graph_id"]] == 1]
    fingerprints = {r["graph_id"]: r["fingerprint"] for r in once}
    return _GraphFingerprints(fingerprints, {r["graph_id"] for r in once if r["skipped"]})


def _with_skipped_graphs(
    spark: SparkSession,
    run: ComputeRun,
    graphs_path: str,
    settings: Settings,
    progress: Progress,
    lines: list[CheckLine],
    graphs: _GraphFingerprints,
) -> ComputeRun:
    """``run`` with the graphs the checks to decide need (new and previous versions) that it
    skipped as unchanged: a check is decided again when its savepoint changed even if its graphs
    did not, and deciding reads its graphs' rows. They are computed in a second pass that
    skips every other graph and writes nothing; a re-run whose checks are all unchanged has no
    second pass and computes only the graphs that changed."""
    needed = {c.graph_id for c in lines} | {c.savepoint_graph_id for c in lines if c.savepoint_graph_id}
    missing = needed & graphs.skipped
    if not missing:
        return run
    progress.say(f"graphs: {len(missing)} unchanged graphs the changed checks need, computed again")
    others = {gid: fp for gid, fp in graphs.fingerprints.items() if gid not in missing}
    again = compute_run(spark, graphs_path, None, settings, progress, keep_stream=True, known=others)
    ids = F.broadcast(local_frame(spark, [(g,) for g in sorted(missing)], "graph_id string"))
    only = lambda df: df.join(ids, "graph_id", "left_semi")  # noqa: E731
    tables = dict(run.tables)
    for name in ("operators", "job_vertices", "job_edges", "graph_errors"):
        tables[name] = run.tables[name].unionByName(only(again.tables[name]))
    a, b = run.stream, again.stream
    stream = StreamTables(
        a.graphs.unionByName(only(b.graphs)), a.nodes.unionByName(only(b.nodes)),
        a.edges.unionByName(only(b.edges)), a.errors.unionByName(only(b.errors)),
    )  # fmt: skip
    return ComputeRun(run.summary, stream, tables)


def _check_fingerprints(
    spark: SparkSession, lines: list[CheckLine], graphs: _GraphFingerprints, version: str
) -> dict[str, str | None]:
    """Per manifest line (its ``line``), the check's fingerprint under the restore rules
    ``version`` (:mod:`pipeline.restore.incremental`): the savepoints listed once on the driver,
    the graphs' spec fingerprints from the run (a graph_id read twice has none: its checks are
    decided every run)."""
    identity: dict[str, str] = {}
    paths = sorted({c.savepoint_path for c in lines if c.savepoint_path and c.error is None})
    resolve_metadata_files(spark, paths, identity)
    return {
        c.line: incremental.check_fingerprint(c, identity.get(c.savepoint_path or ""), graphs.fingerprints, version)
        for c in lines
    }


def _stream_of(spark: SparkSession, run: ComputeRun, graphs_path: str) -> StreamTables:
    stream = run.stream if run.stream is not None else read_ingested(spark, graphs_path)
    return StreamTables(
        stream.graphs.localCheckpoint(eager=True),
        stream.nodes.localCheckpoint(eager=True),
        stream.edges.localCheckpoint(eager=True),
        stream.errors.localCheckpoint(eager=True),
    )


def _read_savepoints(spark: SparkSession, lines: list[CheckLine], stream: StreamTables):  # noqa: ANN202
    """Every savepoint of the manifest, parsed once; each with the Flink line of the graph
    that will restore from it (two 1.11/1.14 layouts depend on the reading release)."""
    versions = dict(stream.graphs.select("graph_id", "flink_version").collect())
    paths = sorted({c.savepoint_path for c in lines if c.savepoint_path and c.error is None})
    readers = {c.savepoint_path: versions.get(c.graph_id) for c in lines if c.savepoint_path and c.error is None}
    return read_savepoint_tables(spark, paths, {p: v for p, v in readers.items() if v})


def _checks_frame(
    spark: SparkSession, lines: list[CheckLine], stream: StreamTables, errors: DataFrame, sp_errors: DataFrame
) -> DataFrame:
    """One row per manifest line with the new graph's Flink line and chaining flag, and the
    reason it cannot be decided (``error``: a bad line, a rejected or unknown graph, a
    savepoint that cannot be read, named by its path)."""
    columns = [f.split()[0] for f in _MANIFEST_SCHEMA.split(", ")]
    rows = [{**asdict(c), "manifest_error": c.error} for c in lines]
    manifest = local_frame(spark, [tuple(r.get(c) for c in columns) for r in rows], _MANIFEST_SCHEMA)
    info = stream.graphs.select("graph_id", "flink_version", "chaining_enabled")
    old_info = stream.graphs.select(
        F.col("graph_id").alias("savepoint_graph_id"),
        F.col("chaining_enabled").alias("old_chaining_enabled"),
        F.col("flink_version").alias("old_flink_version"),
    )
    g_err = errors.groupBy("graph_id").agg(
        F.first(F.concat(F.lit("rejected graph: "), F.col("error_code"), F.lit(": "), F.col("message"))).alias("g_err")
    )
    s_err = sp_errors.groupBy(F.col("savepoint").alias("savepoint_path")).agg(
        F.first(F.concat(F.lit("unreadable savepoint "), F.col("savepoint"), F.lit(": "), F.col("error"))).alias(
            "s_err"
        )
    )
    return (
        manifest.join(info, "graph_id", "left")
        .join(old_info, "savepoint_graph_id", "left")
        .join(g_err, "graph_id", "left")
        .join(s_err, "savepoint_path", "left")
        .withColumn(
            "error",
            F.coalesce(
                F.col("manifest_error"),
                F.col("g_err"),
                F.when(F.col("flink_version").isNull(), F.concat(F.lit("unknown graph: "), F.col("graph_id"))),
                F.col("s_err"),
            ),
        )
        .drop("g_err", "s_err", "manifest_error")
    )


def _with_values(
    spark: SparkSession, checks: DataFrame, savepoints: SavepointTables, stream: StreamTables,
    computed: dict[str, DataFrame], prove: bool, check_count: int,
) -> DataFrame:  # fmt: skip
    """Every check decided (:func:`_decide`, checkpointed), and a second pass of the checks whose
    state half asked for saved values (its ``value_requests`` rows: a Kryo class whose fields
    changed, Kryo 2 bytes on 2.x): the streams it named are read on the executors
    (``read_value_streams``) and those checks decided again with their bytes. Every other check
    keeps its first decision; with no request (the usual case, and the deploy gate's) nothing
    more is read."""
    decided = _decide(spark, checks, savepoints, stream, computed, prove, check_count).localCheckpoint(eager=True)
    asked = decided.where(F.col("table") == VALUE_REQUESTS).select("line", "row").collect()
    if not asked:
        return decided
    wanted = [(r["line"], *(json.loads(r["row"])[k] for k in ("operator_id", "stream_kind"))) for r in asked]
    lines = sorted({w[0] for w in wanted})
    requests = local_frame(spark, wanted, "line string, operator_id string, stream_kind string")
    by_line = requests.join(checks.select("line", F.col("savepoint_path").alias("savepoint")), "line")
    values = read_value_streams(savepoints.heads, by_line.select("savepoint", "operator_id", "stream_kind").distinct())
    again = checks.where(F.col("line").isin(lines))
    redone = _decide(spark, again, savepoints, stream, computed, prove, len(lines), values.localCheckpoint(eager=True))
    kept = decided.where(~F.col("line").isin(lines) & (F.col("table") != VALUE_REQUESTS))
    return kept.unionByName(redone.where(F.col("table") != VALUE_REQUESTS)).localCheckpoint(eager=True)


def _payload(df: DataFrame, kind: str, key: str, cols: list[str]) -> DataFrame:
    return df.select(F.col(key).alias("_key"), F.lit(kind).alias("kind"), F.to_json(F.struct(*cols)).alias("payload"))


def _decide(
    spark: SparkSession,
    checks: DataFrame,
    savepoints: SavepointTables,
    stream: StreamTables,
    computed: dict[str, DataFrame],
    prove: bool,
    check_count: int,
    values: DataFrame | None = None,
) -> DataFrame:
    """(line, table, row JSON) for every check: one grouped pandas UDF over groups of about
    CHECKS_PER_GROUP checks. ``computed``: the run's own job_vertices and operators
    (:class:`ComputeRun`); ``values``: saved streams' bytes a second pass hands the checks
    (:func:`_with_values`)."""
    rows = _check_inputs(checks, savepoints, stream, computed)
    if values is not None:
        rows = rows.unionByName(_value_rows(checks, values))

    def per_group(pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = pdf.sort_values("line", kind="stable")
        lines, kinds, payloads = (pdf[c].to_numpy() for c in ("line", "kind", "payload"))
        starts = [0, *(np.flatnonzero(lines[1:] != lines[:-1]) + 1).tolist(), len(lines)]
        spans = list(itertools.pairwise(starts))
        decided = check_rows_many([(kinds[a:b], payloads[a:b]) for a, b in spans], prove)
        out_line, out_table, out_row = [], [], []
        for (a, b), out in zip(spans, decided, strict=True):
            if isinstance(out, Exception):  # one check never aborts the run
                out = [_internal_error_row(kinds[a:b], payloads[a:b], out)]
            out_line += [lines[a]] * len(out)
            out_table += [t for t, _ in out]
            out_row += [r for _, r in out]
        return pd.DataFrame({"line": out_line, "table": out_table, "row": out_row})

    groups = max(1, -(-check_count // CHECKS_PER_GROUP))
    grouped = rows.withColumn("_group", F.pmod(F.hash("line"), F.lit(groups)))
    return grouped.groupBy("_group").applyInPandas(per_group, _OUT_SCHEMA)


def _check_inputs(
    checks: DataFrame, savepoints: SavepointTables, stream: StreamTables, computed: dict[str, DataFrame]
) -> DataFrame:
    """(line, kind, JSON payload) rows: each check's own, its new graph's (job vertices,
    operators, graph, nodes, edges), the old graph's, its savepoint's operators and state heads."""
    sp_ops = savepoints.operators
    by_graph = (
        _payload(computed["job_vertices"], "vx", "graph_id", VERTEX_FIELDS)
        .unionByName(_payload(computed["operators"], "op", "graph_id", OPERATOR_FIELDS))
        .unionByName(_payload(stream.graphs, "graph", "graph_id", [c for c in GRAPH_COLUMNS if c != "source_file"]))
        .unionByName(_payload(stream.nodes, "node", "graph_id", NODE_COLUMNS))
        .unionByName(_payload(stream.edges, "edge", "graph_id", EDGE_COLUMNS))
    )
    new_rows = checks.select("line", F.col("graph_id").alias("_key")).join(by_graph, "_key")
    old_rows = (
        checks.where(F.col("savepoint_graph_id").isNotNull())
        .select("line", F.col("savepoint_graph_id").alias("_key"))
        .join(by_graph.where(F.col("kind").isin("op", "node", "edge", "graph")), "_key")
        .withColumn("kind", F.concat(F.lit("old_"), F.col("kind")))
    )
    sp_cols = [c for c in sp_ops.columns if c != "savepoint"]
    sp_rows = checks.select("line", F.col("savepoint_path").alias("_key")).join(
        _payload(sp_ops, "sp", "savepoint", sp_cols), "_key"
    )
    head_cols = [F.base64("data").alias("data") if c == "data" else F.col(c) for c in HEAD_COLUMNS]
    heads = savepoints.heads.select(*head_cols)
    st_rows = checks.select("line", F.col("savepoint_path").alias("_key")).join(
        heads.select(
            F.col("savepoint").alias("_key"),
            F.lit("st").alias("kind"),
            F.to_json(F.struct(*[c for c in heads.columns if c not in ("savepoint", "metadata_path")])).alias(
                "payload"
            ),
        ),
        "_key",
    )
    rows = (
        checks.select("line", F.lit("check").alias("kind"), F.to_json(F.struct(*_CHECK_COLS)).alias("payload"))
        .unionByName(new_rows.select(*_IN_COLS))
        .unionByName(old_rows.select(*_IN_COLS))
        .unionByName(sp_rows.select(*_IN_COLS))
        .unionByName(st_rows.select(*_IN_COLS))
    )
    return rows


def _value_rows(checks: DataFrame, values: DataFrame) -> DataFrame:
    """(line, "sv", payload) rows: each stream's bytes (base64) for the checks of its savepoint."""
    cols = ["operator_id", "stream_kind", "subtask", F.base64("data").alias("data"), "truncated"]
    payload = values.select(F.col("savepoint").alias("savepoint_path"), F.to_json(F.struct(*cols)).alias("payload"))
    return (
        checks.select("line", "savepoint_path")
        .join(payload, "savepoint_path")
        .select("line", F.lit("sv").alias("kind"), "payload")
    )


def _internal_error_row(kinds: np.ndarray, payloads: np.ndarray, e: Exception) -> tuple[str, str]:
    check = json.loads(next(p for k, p in zip(kinds, payloads, strict=True) if k == "check"))
    reason = f"internal error: {type(e).__name__}: {e}"
    row = {k: check.get(k) for k in ("check_id", "savepoint", "graph_id", "savepoint_graph_id")}
    row.update(verdict="ERROR", failure=reason, message=reason, dropped_operator_ids=[])
    return ("restore_checks", json.dumps(row))


def _table(decided: DataFrame, name: str, columns: list[str]) -> DataFrame:
    parsed = decided.where(F.col("table") == name).select(F.from_json("row", struct(columns)).alias("r"))
    return parsed.select("r.*")


def _savepoint_operators(spark: SparkSession, lines: list[CheckLine], operators: DataFrame) -> DataFrame:
    """``savepoint_operators``: the parsed operators under each savepoint as the manifest gives it."""
    given = sorted({(c.savepoint, c.savepoint_path) for c in lines if c.savepoint_path and c.error is None})
    paths = local_frame(spark, given, "savepoint string, savepoint_path string")
    return (
        operators.withColumnRenamed("savepoint", "savepoint_path")
        .join(paths, "savepoint_path")
        .select(*SAVEPOINT_OPERATORS_COLUMNS)
    )


def _write(
    spark: SparkSession,
    output: str,
    lines: list[CheckLine],
    results: DataFrame,
    matches: DataFrame,
    fixes: DataFrame,
    problems: DataFrame,
    warnings: DataFrame,
    sp_table: DataFrame,
    states: DataFrame,
    check_fps: DataFrame,
    progress: Progress,
    settings: Settings,
    compare: bool = True,
    rules_version: str | None = None,
) -> None:
    """The restore tables, each replaced by its key (``check_id``; ``savepoint`` for the
    savepoint tables) in one Delta commit, then the run published: as ``compute``'s tables,
    its record naming the restore rules it decided under (the next run's JVM follows them)."""
    check_ids = local_frame(spark, sorted({(c.check_id,) for c in lines}), "check_id string")
    savepoints = local_frame(
        spark, sorted({(c.savepoint,) for c in lines if c.savepoint_path and c.error is None}), "savepoint string"
    )
    writes = [
        delta_writer.TableWrite("savepoint_operators", sp_table, key="savepoint", ids=savepoints, compare=compare),
        delta_writer.TableWrite("savepoint_states", states, key="savepoint", ids=savepoints, compare=compare),
        *(
            delta_writer.TableWrite(name, rows, key="check_id", compare=compare)
            for name, rows in (("restore_checks", results), ("restore_operator_matches", matches),
                               ("restore_fixes", fixes), ("restore_state_problems", problems),
                               ("restore_warnings", warnings), (incremental.TABLE, check_fps))
        ),
    ]  # fmt: skip
    delta_writer.write_run(
        spark, output, writes, check_ids, say=progress.say, deletion_vectors=settings.tables.deletion_vectors,
        replace_where_max_keys=settings.tables.replace_where_max_keys, rules_version=rules_version,
    )  # fmt: skip
