"""``check-restore`` (SPEC section 5): for every (savepoint, new graph) pair, Flink's own verdict.

1. the graphs are computed by the normal ``compute`` path (their tables land in ``--output``);
2. the manifest is read (relative savepoint paths resolve against its folder) and every
   savepoint's ``_metadata`` is parsed once, in parallel (``pipeline/restore/savepoints.py``);
3. each check gets its rows -- its savepoint's operators, its graph's vertices, operators,
   nodes and edges, and those of the job version that took the savepoint when the manifest
   names it (``savepoint_graph_id``) -- and ONE grouped pandas UDF over all checks decides,
   explains and proposes fixes (``udfs/restore/check_rows.py``);
4. every proposed fix is proven: the patched graphs are computed again by the same
   ``compute`` path and checked again (a fix can uncover the next problem, so up to
   ``PROOF_ROUNDS`` rounds); ``restore_fixes.verified`` says whether the patched job restores.

A check never aborts the run: an unreadable savepoint, an unknown or rejected graph give
verdict ERROR with the reason in ``failure``.
"""

from __future__ import annotations

import json
import posixpath
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipeline.compute.run import Progress, compute, load_stream_tables
from pipeline.restore.savepoints import read_savepoint_tables
from pipeline.tables import delta_writer as delta_sink
from udfs.flink.profiles import PROFILE_DIR
from udfs.restore.check_rows import CHECK_KEY, NODE_FIELDS, check_rows
from udfs.restore.fixes import ALLOW_NON_RESTORED

PROOF_ROUNDS = 3
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

# The restore tables' columns that are not strings; a column name has the same type in every
# one of them (as in the graph tables, pipeline/tables/columns.py).
_COLUMN_TYPES: dict[str, T.DataType] = {
    **dict.fromkeys(("node_id", "old_node_id", "counterpart_node_id", "patch_node_id"), T.IntegerType()),
    **dict.fromkeys(("operator_index", "saved_max_parallelism", "proof_round"), T.IntegerType()),
    "state_size": T.LongType(),
    **dict.fromkeys(("has_state", "verified"), T.BooleanType()),
    **dict.fromkeys(("dropped_operator_ids", "reasons"), T.ArrayType(T.StringType())),
}


def _struct(*columns: str) -> T.StructType:
    """The schema of rows with these columns, each of its name's type (strings unless listed)."""
    return T.StructType([T.StructField(c, _COLUMN_TYPES.get(c, T.StringType())) for c in columns])


RESTORE_CHECKS_SCHEMA = _struct(*CHECK_KEY, "verdict", "failure", "operator_id", "message", "dropped_operator_ids")
MATCHES_SCHEMA = _struct(
    *CHECK_KEY, "operator_index", "operator_id", "has_state", "state_size", "saved_max_parallelism",
    "status",  # MATCHED | DROPPED_EMPTY | SKIPPED | LOST | MATCHED_NOT_ASSIGNED | NOT_REACHED
    "matched_via",  # generated | user_defined
    "jobvertex_id", "node_id", "name", "uid",
)  # fmt: skip
FIXES_SCHEMA = _struct(
    *CHECK_KEY,
    "operator_id",  # the saved operator (or the vertex) it is about
    "old_node_id", "old_name", "old_uid",
    "counterpart_node_id", "counterpart_name", "counterpart_uid", "counterpart_operator_id",
    "reasons", "fix_code", "patch_node_id", "patch_field", "patch_value",
)  # fmt: skip
PROOF_COLUMNS = _struct(
    "proof_round",  # the round that proposed it (1 = from the graph as given)
    "verified",  # the graph with all of the check's fixes restores
    "verified_verdict", "verified_failure",
).fields  # fmt: skip
SAVEPOINT_COLUMNS = [  # SPEC section 5, then what the reader adds
    "savepoint", "format_version", "checkpoint_id", "operator_id", "parallelism", "max_parallelism",
    "has_state", "state_size", "operator_name", "operator_uid", "operator_index", "metadata_path",
    "subtask_count", "fully_finished", "finished_subtasks", "has_coordinator_state", "has_subtask_state",
    "handle_types",
]  # fmt: skip
_OUT_SCHEMA = _struct("check_id", "table", "row")
_IN_COLS = ["check_id", "kind", "payload"]
VERTEX_FIELDS = ["jobvertex_id", "parallelism", "max_parallelism", "operator_ids", "user_operator_ids", "vertex_order"]


@dataclass
class RestoreSummary:
    checks: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    fixes: int = 0
    fixes_verified: int = 0
    proof_rounds: int = 0
    graphs: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def restore_profiles() -> dict[str, dict]:
    """Flink line -> the ``restore`` section of its profile (only lines that have one)."""
    out = {}
    for p in PROFILE_DIR.glob("*.json"):
        raw = json.loads(p.read_text())
        if "restore" in raw:
            out[raw["version"]] = raw["restore"]
    return out


def resolve_savepoint(savepoint: str, manifest_dir: str) -> str:
    """SPEC: a relative savepoint path resolves against the manifest's folder."""
    if _SCHEME.match(savepoint) or savepoint.startswith("/"):
        return savepoint
    return posixpath.normpath(posixpath.join(manifest_dir, savepoint))


def read_manifest(spark: SparkSession, checks_path: str) -> pd.DataFrame:
    """The manifest (JSON Lines), small enough to hold on the driver; paths resolved."""
    schema = (
        "check_id string, savepoint string, graph_id string, allow_non_restored_state boolean, "
        "savepoint_graph_id string"
    )
    df = spark.read.schema(schema).json(checks_path).toPandas()
    base = checks_path.rstrip("/")
    manifest_dir = base if _is_dir(spark, checks_path) else posixpath.dirname(base)
    df["allow_non_restored_state"] = [
        bool(a) if a is not None and a == a else False for a in df["allow_non_restored_state"]
    ]
    df["savepoint_path"] = [resolve_savepoint(s, manifest_dir) if isinstance(s, str) else None for s in df["savepoint"]]
    return df


def _is_dir(spark: SparkSession, path: str) -> bool:
    jvm = spark._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
    return bool(fs.exists(hpath) and fs.getFileStatus(hpath).isDirectory())


def _payload(df: DataFrame, kind: str, key: str, cols: list[str]) -> DataFrame:
    return df.select(F.col(key).alias("_key"), F.lit(kind).alias("kind"), F.to_json(F.struct(*cols)).alias("payload"))


def _decide(checks: DataFrame, sp_ops: DataFrame, graph: dict[str, DataFrame], profiles: dict[str, dict]) -> DataFrame:
    """(check_id, table, row JSON) for every check: one grouped pandas UDF over all checks."""
    by_graph = (
        _payload(graph["vertices"], "vx", "graph_id", VERTEX_FIELDS)
        .unionByName(_payload(graph["operators"], "op", "graph_id",
                              ["node_id", "operator_id", "user_operator_id", "jobvertex_id"]))
        .unionByName(_payload(graph["nodes"], "node", "graph_id", NODE_FIELDS))
        .unionByName(_payload(graph["edges"], "edge", "graph_id", ["source", "target"]))
    )  # fmt: skip
    new_rows = checks.select("check_id", F.col("graph_id").alias("_key")).join(by_graph, "_key")
    old_rows = (
        checks.where(F.col("savepoint_graph_id").isNotNull())
        .select("check_id", F.col("savepoint_graph_id").alias("_key"))
        .join(by_graph.where(F.col("kind") != "vx"), "_key")
        .withColumn("kind", F.concat(F.lit("old_"), F.col("kind")))
    )
    sp_rows = checks.select("check_id", F.col("savepoint_path").alias("_key")).join(
        _payload(sp_ops, "sp", "metadata_key", [c for c in sp_ops.columns if c != "metadata_key"]), "_key"
    )
    check_cols = ["check_id", "savepoint", "graph_id", "allow_non_restored_state", "flink_version",
                  "chaining_enabled", "old_chaining_enabled", "error"]  # fmt: skip
    rows = (
        checks.select("check_id", F.lit("check").alias("kind"), F.to_json(F.struct(*check_cols)).alias("payload"))
        .unionByName(new_rows.select(*_IN_COLS))
        .unionByName(old_rows.select(*_IN_COLS))
        .unionByName(sp_rows.select(*_IN_COLS))
    )

    def per_check(pdf: pd.DataFrame) -> pd.DataFrame:
        cid = pdf["check_id"].iloc[0]
        try:
            out = check_rows(pdf["kind"], pdf["payload"], profiles)
        except Exception as e:  # one check never aborts the run
            check = json.loads(pdf.loc[pdf["kind"] == "check", "payload"].iloc[0])
            row = {k: check.get(k) for k in CHECK_KEY}
            row.update(verdict="ERROR", failure=f"internal error: {type(e).__name__}: {e}", dropped_operator_ids=[])
            out = [("restore_checks", json.dumps(row))]
        return pd.DataFrame({"check_id": cid, "table": [t for t, _ in out], "row": [r for _, r in out]})

    return rows.groupBy("check_id").applyInPandas(per_check, _OUT_SCHEMA)


def _table(decided: DataFrame, name: str, schema: T.StructType) -> DataFrame:
    parsed = decided.where(F.col("table") == name).select(F.from_json("row", schema).alias("r"))
    return parsed.select("r.*")


def _graph_frames(spark: SparkSession, graphs_path: str, output: str) -> tuple[dict[str, DataFrame], DataFrame]:
    tables = load_stream_tables(spark, graphs_path)
    read = lambda t: spark.read.format("delta").load(delta_sink.table_path(output, t))  # noqa: E731
    frames = {
        "vertices": read("job_vertices"),
        "operators": read("operators"),
        "nodes": tables.nodes,
        "edges": tables.edges,
    }
    info = tables.graphs.select("graph_id", "flink_version", "chaining_enabled")
    return frames, info


def _checks_frame(spark: SparkSession, manifest: pd.DataFrame, info: DataFrame, output: str, sp_errors: DataFrame):
    errors = spark.read.format("delta").load(delta_sink.table_path(output, "graph_errors"))
    m = spark.createDataFrame(
        manifest[["check_id", "savepoint", "savepoint_path", "graph_id", "allow_non_restored_state",
                  "savepoint_graph_id"]].astype(object).where(manifest.notna(), None),
        "check_id string, savepoint string, savepoint_path string, graph_id string, "
        "allow_non_restored_state boolean, savepoint_graph_id string",
    )  # fmt: skip
    g_err = errors.groupBy("graph_id").agg(
        F.first(F.concat(F.lit("rejected graph: "), F.col("error_code"), F.lit(": "), F.col("message"))).alias("g_err")
    )
    s_err = sp_errors.groupBy(F.col("savepoint").alias("savepoint_path")).agg(
        F.first(F.concat(F.lit("unreadable savepoint: "), F.col("error"))).alias("s_err")
    )
    old_info = info.select(
        F.col("graph_id").alias("savepoint_graph_id"), F.col("chaining_enabled").alias("old_chaining_enabled")
    )
    return (
        m.join(info, "graph_id", "left")
        .join(old_info, "savepoint_graph_id", "left")
        .join(g_err, "graph_id", "left")
        .join(s_err, "savepoint_path", "left")
        .withColumn(
            "error",
            F.coalesce(
                F.when(F.col("check_id").isNull(), F.lit("manifest line without check_id")),
                F.when(F.col("savepoint").isNull(), F.lit("manifest line without savepoint")),
                F.col("g_err"),
                F.when(F.col("flink_version").isNull(), F.concat(F.lit("unknown graph: "), F.col("graph_id"))),
                F.col("s_err"),
            ),
        )
        .drop("g_err", "s_err")
    )


def _replace(spark: SparkSession, output: str, table: str, rows: DataFrame, key: str, keys: DataFrame) -> None:
    """Rows of this run's keys replace earlier ones; other rows stay (as the graph tables do by graph_id)."""
    path = delta_sink.table_path(output, table)
    if DeltaTable.isDeltaTable(spark, path):
        DeltaTable.forPath(spark, path).alias("t").merge(
            keys.alias("r"), f"t.{key} = r.{key}"
        ).whenMatchedDelete().execute()
        rows.write.format("delta").mode("append").save(path)
    else:
        rows.write.format("delta").mode("overwrite").save(path)


def check_restore(
    spark: SparkSession,
    graphs_path: str,
    checks_path: str,
    output: str,
    settings: dict[str, Any],
    progress: Progress | None = None,
    prove_fixes: bool = True,
    compute_graphs: bool = True,
) -> RestoreSummary:
    """``compute_graphs=False`` reuses the graph tables already in ``output`` (computed from ``graphs_path``)."""
    progress = progress or Progress()
    summary = RestoreSummary()
    if compute_graphs:
        run = compute(spark, graphs_path, output, settings, progress)
        summary.graphs = {"in": run.graphs_in, "processed": run.graphs_processed, "rejected": run.graphs_rejected}
    manifest = read_manifest(spark, checks_path)
    frames, info = _graph_frames(spark, graphs_path, output)
    versions = dict(info.select("graph_id", "flink_version").toPandas().itertuples(index=False, name=None))
    paths = sorted({p for p in manifest["savepoint_path"] if isinstance(p, str)})
    lines = {p: versions.get(g) for p, g in zip(manifest["savepoint_path"], manifest["graph_id"], strict=True)}
    sp = read_savepoint_tables(spark, paths, {p: v for p, v in lines.items() if v})
    progress.say(f"savepoints read: {len(paths)}")
    sp_ops = sp.operators.withColumn("metadata_key", F.col("savepoint"))
    checks = _checks_frame(spark, manifest, info, output, sp.errors).persist()
    profiles = restore_profiles()
    decided = _decide(checks, sp_ops, frames, profiles).localCheckpoint(eager=True)
    results = _table(decided, "restore_checks", RESTORE_CHECKS_SCHEMA)
    matches = _table(decided, "restore_operator_matches", MATCHES_SCHEMA)
    fixes = _table(decided, "restore_fixes", FIXES_SCHEMA)

    given = spark.createDataFrame(
        manifest[["savepoint", "savepoint_path"]].dropna().drop_duplicates("savepoint_path"),
        "savepoint string, savepoint_path string",
    )
    sp_table = (
        sp.operators.withColumnRenamed("savepoint", "savepoint_path")
        .join(given, "savepoint_path")
        .select(*SAVEPOINT_COLUMNS)
    )
    proofs = (
        _prove(spark, graphs_path, output, settings, checks, sp_ops, fixes, profiles, summary) if prove_fixes else None
    )
    fixes_out = fixes.withColumn("proof_round", F.lit(1))
    if proofs is not None:
        fixes_out = proofs
    else:
        for f in PROOF_COLUMNS[1:]:
            fixes_out = fixes_out.withColumn(f.name, F.lit(None).cast(f.dataType))

    check_keys = checks.select("check_id").distinct()
    _replace(spark, output, "savepoint_operators", sp_table, "savepoint", given.select("savepoint"))
    _replace(spark, output, "restore_checks", results, "check_id", check_keys)
    _replace(spark, output, "restore_operator_matches", matches, "check_id", check_keys)
    _replace(spark, output, "restore_fixes", fixes_out, "check_id", check_keys)
    counts = (
        spark.read.format("delta")
        .load(delta_sink.table_path(output, "restore_checks"))
        .join(check_keys, "check_id")
        .groupBy("verdict")
        .count()
        .collect()
    )
    summary.verdicts = {r["verdict"]: int(r["count"]) for r in counts}
    summary.checks = sum(summary.verdicts.values())
    checks.unpersist()
    return summary


def _spec_texts(spark: SparkSession, graphs_path: str, graph_ids: set[str]) -> dict[str, dict]:
    """The original spec objects of a few graphs (the ones a fix patches), on the driver:
    JSON Lines files line by line, ``.json`` files whole, as ``read_spec`` takes them."""
    out: dict[str, dict] = {}
    wanted = sorted(graph_ids)
    for glob, whole in (("*.{jsonl,jsonl.gz}", False), ("*.{json,json.gz}", True)):
        reader = spark.read.option("recursiveFileLookup", "true").option("pathGlobFilter", glob)
        try:
            df = reader.text(graphs_path, wholetext=whole)
        except Exception:  # noqa: BLE001 -- Spark raises when the glob matches no file
            continue
        gid = F.get_json_object("value", "$.graph_id")
        for r in df.where(gid.isin(wanted)).select("value").collect():
            obj = json.loads(r["value"])
            out[obj["graph_id"]] = obj
    return out


def _patched(spec: dict, patches: list[tuple[int, str, str]], graph_id: str) -> dict:
    obj = json.loads(json.dumps(spec))
    obj["graph_id"] = graph_id
    nodes = {n["id"]: n for n in obj["nodes"]}
    for node_id, fld, value in patches:
        nodes[node_id][fld] = int(value) if fld in ("parallelism", "max_parallelism") else value
    return obj


def _write_text(spark: SparkSession, path: str, text: str) -> None:
    """One file through Hadoop's FileSystem, so the proof works wherever --output lives."""
    jvm = spark._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
    out = fs.create(hpath, True)
    out.write(bytearray(text.encode("utf-8")))
    out.close()


def _delete(spark: SparkSession, path: str) -> None:
    jvm = spark._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    hpath.getFileSystem(spark._jsc.hadoopConfiguration()).delete(hpath, True)


def _append_rows(frame: pd.DataFrame, rows: list[dict]) -> pd.DataFrame:
    """Rows added by a proof round, dtypes inferred once over old and new rows together.

    ``pd.concat`` with a frame whose column is all None (a fix without a patch) is deprecated
    in pandas 2.x and warns on every run; building the frame from the records once infers
    the same dtypes without relying on that behaviour.
    """
    columns = list(dict.fromkeys([*frame.columns, *(k for r in rows for k in r)]))
    return pd.DataFrame(frame.to_dict("records") + rows, columns=columns)


def _prove(spark, graphs_path, output, settings, checks, sp_ops, fixes, profiles, summary) -> DataFrame:  # noqa: ANN001
    """Recompute every check's graph with its fixes applied and decide again, round by round."""
    all_fixes = fixes.withColumn("proof_round", F.lit(1)).toPandas()
    if all_fixes.empty:
        return spark.createDataFrame([], T.StructType(FIXES_SCHEMA.fields + PROOF_COLUMNS))
    graph_of = dict(checks.select("check_id", "graph_id").toPandas().itertuples(index=False, name=None))
    specs = _spec_texts(spark, graphs_path, {graph_of[c] for c in all_fixes["check_id"]})
    scratch = f"{output.rstrip('/')}/_restore_fix_proof-{uuid.uuid4().hex[:8]}"
    final: dict[str, tuple[str, str | None]] = {}
    pending = sorted(set(all_fixes["check_id"]))
    try:
        for rnd in range(1, PROOF_ROUNDS + 1):
            summary.proof_rounds = rnd
            lines, patched_ids = [], {}
            for cid in pending:
                f = all_fixes[(all_fixes["check_id"] == cid) & all_fixes["patch_node_id"].notna()]
                pid = f"{graph_of[cid]}#fix:{cid}"
                patches = [(int(n), fl, v) for n, fl, v in zip(f["patch_node_id"], f["patch_field"], f["patch_value"],
                                                              strict=True)]  # fmt: skip
                lines.append(json.dumps(_patched(specs[graph_of[cid]], patches, pid)))
                patched_ids[cid] = pid
            rdir = f"{scratch}/round{rnd}"
            _write_text(spark, f"{rdir}/specs/patched.jsonl", "\n".join(lines) + "\n")
            compute(spark, f"{rdir}/specs", f"{rdir}/out", settings, Progress(enabled=False))
            frames, info = _graph_frames(spark, f"{rdir}/specs", f"{rdir}/out")
            allow = all_fixes.groupby("check_id")["fix_code"].apply(lambda s: bool((s == ALLOW_NON_RESTORED).any()))
            remap = spark.createDataFrame(
                pd.DataFrame({"check_id": list(patched_ids), "new_graph_id": list(patched_ids.values()),
                              "allow_fix": [bool(allow.get(c, False)) for c in patched_ids]}),
                "check_id string, new_graph_id string, allow_fix boolean",
            )  # fmt: skip
            again = (
                checks.join(remap, "check_id")
                .drop("flink_version", "chaining_enabled", "error")
                .withColumn("graph_id", F.col("new_graph_id"))
                .withColumn("allow_non_restored_state", F.col("allow_non_restored_state") | F.col("allow_fix"))
                .drop("new_graph_id", "allow_fix")
                .join(info, "graph_id", "left")
                .withColumn("error", F.lit(None).cast("string"))
            )
            decided = _decide(again, sp_ops, frames, profiles).toPandas()
            pending = []
            for cid, grp in decided.groupby("check_id"):
                res = json.loads(grp.loc[grp["table"] == "restore_checks", "row"].iloc[0])
                final[cid] = (res["verdict"], res["failure"])
                more = [json.loads(r) for r in grp.loc[grp["table"] == "restore_fixes", "row"]]
                if res["verdict"] != "RESTORES" and more and rnd < PROOF_ROUNDS:
                    extra = [{**m, "check_id": cid, "graph_id": graph_of[cid], "proof_round": rnd + 1} for m in more]
                    all_fixes = _append_rows(all_fixes, extra)
                    pending.append(cid)
            if not pending:
                break
    finally:
        _delete(spark, scratch)
    keys = ["check_id", "operator_id", "fix_code", "patch_node_id", "patch_field"]
    all_fixes = all_fixes.drop_duplicates(keys).reset_index(drop=True)
    all_fixes["verified_verdict"] = [final.get(c, (None, None))[0] for c in all_fixes["check_id"]]
    all_fixes["verified_failure"] = [final.get(c, (None, None))[1] for c in all_fixes["check_id"]]
    all_fixes["verified"] = all_fixes["verified_verdict"] == "RESTORES"
    summary.fixes = len(all_fixes)
    summary.fixes_verified = int(all_fixes["verified"].sum())
    schema = T.StructType(FIXES_SCHEMA.fields + PROOF_COLUMNS)
    cols = schema.fieldNames()
    pdf = all_fixes[cols].astype(object).where(all_fixes[cols].notna(), None)
    return spark.createDataFrame(pdf, schema)
