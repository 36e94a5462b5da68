"""Every table's columns, and the one Spark type of each column name.

The stream tables' columns (``stream_graphs``, ``stream_nodes``, ``stream_edges``,
``graph_errors``) are the rows of :mod:`udfs.spec.contract`; the output tables'
(``operators``, ``job_vertices``, ``job_edges``) are below. Their rows come from each graph's
``createChain`` walk (:func:`udfs.flink.job_graph.walk_graph`: chain index, names, operator-ID
order, vertex order, job-edge input order), built for a whole batch of graphs at once
(:mod:`udfs.flink.job_graph_rows`) inside the one per-graph stage (:mod:`pipeline.compute.stage`). A column
name means the same thing, with the same type, in every table: :func:`column_type` and
:func:`struct` give the Spark side of it.
"""

from __future__ import annotations

from pyspark.sql import types as T

from udfs.savepoint.state_rows import STATE_COLUMNS

OPERATOR_COLUMNS = [
    "graph_id",
    "node_id",
    "name",
    "uid",
    "operator_id",
    "user_operator_id",
    "hash_source",
    "jobvertex_id",
    "chain_head_node_id",
    "chain_index",
    "is_chain_head",
    "is_chain_end",
    "in_vertex_operator_ids",
    "hash_position",
    "flink_version",
]

VERTEX_COLUMNS = [
    "graph_id",
    "jobvertex_id",
    "head_node_id",
    "name",
    "parallelism",
    "max_parallelism",
    "effective_max_parallelism",  # configured, else Flink's default for the parallelism (as the web UI shows)
    "slot_sharing_group",
    "operator_ids",
    "user_operator_ids",
    "vertex_order",
]
JOB_EDGE_COLUMNS = [
    "graph_id",
    "source_jobvertex_id",
    "target_jobvertex_id",
    "source_node_id",
    "target_node_id",
    "ship_strategy",
    "distribution_pattern",
    "input_index",
    "edge_idx",
    "exchange_mode",
]

# The restore tables (SPEC section 5 and what the check adds); every row starts with CHECK_KEY. Their
# rows are built by udfs/restore/check_rows.py (tests/test_restore_check.py holds them to these).
CHECK_KEY = ["check_id", "savepoint", "graph_id"]
# what restore_checks adds to SPEC section 5's columns, for the state half (restore_check_row)
CHECK_EXTRA_COLUMNS = [
    "failure_stage",  # where Flink fails: job_init / task_restore / task_running
    "state_name",
    "error_class",
    "decidable",
    "undecidable_reasons",
    "taken_as_unchanged",
    "states_checked_in_user_code",
    "loss_warnings",  # how many restore_warnings rows the check has (silent losses of a restore Flink accepts)
]
RESTORE_CHECKS_COLUMNS = [
    *CHECK_KEY,
    "verdict",
    "failure",
    "operator_id",
    "message",
    "dropped_operator_ids",
    *CHECK_EXTRA_COLUMNS,
    "savepoint_graph_id",  # the manifest's: the job version that took the savepoint (null: not given)
]
# One row per state-type problem of a check: the fields of udfs/restore/state_problems.StateProblem.
PROBLEM_COLUMNS = [
    "verdict",  # FAILS / NOT_DECIDABLE / RESTORES (a warning that does not change the verdict)
    "failure",
    "cause",
    "operator_id",
    "state_name",
    "backend",
    "state_kind",
    "field_path",
    "error_class",
    "message",
    "failure_stage",
    "basis",
    "assumes",
    "certain",
    "uncertain",
    "undecidable_reason",
    "reported",
    "order",
]
STATE_PROBLEMS_COLUMNS = [*CHECK_KEY, *PROBLEM_COLUMNS]
# One row per silent loss of a check: saved values a restore Flink accepts does not carry over (the
# fields of udfs/restore/state_warnings.RestoreWarning).
WARNING_COLUMNS = [
    "operator_id",
    "state_name",
    "backend",
    "state_kind",
    "field_path",
    "loss",  # STATE_NOT_DECLARED, STATE_RENAMED, POJO_FIELD_REMOVED, POJO_FIELD_RENAMED, AVRO_FIELD_REMOVED, ...
    "detail",
    "renamed_to",
    "basis",
]
RESTORE_WARNINGS_COLUMNS = [*CHECK_KEY, *WARNING_COLUMNS]
# One row per saved state of a savepoint (udfs/savepoint/state_rows.py).
SAVEPOINT_STATES_COLUMNS = list(STATE_COLUMNS)
MATCHES_COLUMNS = [
    *CHECK_KEY,
    "operator_index",
    "operator_id",
    "has_state",
    "state_size",
    "saved_max_parallelism",
    "status",  # MATCHED | DROPPED_EMPTY | SKIPPED | LOST | MATCHED_NOT_ASSIGNED | NOT_REACHED
    "matched_via",  # generated | user_defined
    "jobvertex_id",
    "node_id",
    "name",
    "uid",
]
# a restore_fixes row after its check key: the topology fixes (udfs/restore/fixes.py, proven by
# check_rows) and the state half's advice (udfs/restore/state_fixes.py)
FIX_COLUMNS = [
    "operator_id",  # the saved operator (or the vertex) it is about
    "old_node_id",
    "old_name",
    "old_uid",
    "counterpart_node_id",
    "counterpart_name",
    "counterpart_uid",
    "counterpart_operator_id",
    "reasons",
    "fix_code",
    "patch_node_id",
    "patch_field",
    "patch_value",
    "proof_round",  # the round that proposed it (1 = from the graph as given)
    "verified",  # the graph with all of the check's fixes restores
    "verified_verdict",
    "verified_failure",
    # state-type advice (no spec patch proves it)
    "state_name",
    "field_path",
    "advice_code",
    "advice_basis",  # what the advice rests on: flink_source, real_restores, no
    "needs_real_restore",
    "evidence",
]
FIXES_COLUMNS = [*CHECK_KEY, *FIX_COLUMNS]
SAVEPOINT_OPERATORS_COLUMNS = [  # SPEC section 5, then what the reader adds
    "savepoint",
    "format_version",
    "checkpoint_id",
    "operator_id",
    "parallelism",
    "max_parallelism",
    "has_state",
    "state_size",
    "operator_name",
    "operator_uid",
    "operator_index",
    "metadata_path",
    "subtask_count",
    "fully_finished",
    "finished_subtasks",
    "has_coordinator_state",
    "has_subtask_state",
    "handle_types",
]

_INT_COLUMNS = (
    "node_id",
    "parallelism",
    "max_parallelism",
    "edge_idx",
    "source",
    "target",
    "type_number",
    "hash_position",
    "chain_head_node_id",
    "chain_index",
    "vertex_order",
    "head_node_id",
    "source_node_id",
    "target_node_id",
    "input_index",
    "operator_index",
    "effective_max_parallelism",
    "saved_max_parallelism",
    "proof_round",
    "old_node_id",
    "counterpart_node_id",
    "patch_node_id",
    "format_version",
    "subtask_count",
    "finished_subtasks",
    "operator_count",
    "master_state_count",
    "subtasks",
    "states_checked_in_user_code",
    "loss_warnings",
)
_LONG_COLUMNS = ("state_size", "checkpoint_id", "metadata_bytes", "trailer_bytes", "unparsed_bytes", "error_offset")
_BOOL_COLUMNS = (
    "chaining_enabled",
    "chain_operators_with_different_max_parallelism",
    "dynamic",
    "auto_parallelism_enabled",
    "is_source",
    "yielding",
    "has_operator",
    "parallelism_configured",
    "is_chain_head",
    "is_chain_end",
    "in_vertex_operator_ids",
    "has_state",
    "verified",
    "fully_finished",
    "has_coordinator_state",
    "has_subtask_state",
    "allow_non_restored_state",
    "ok",
    "uses_kryo",
    "has_ttl",
    "decidable",
    "needs_real_restore",
    "certain",
    "reported",
)
_STRINGS = T.ArrayType(T.StringType())
_ARRAY_COLUMNS: dict[str, T.DataType] = {
    "source_id_order": T.ArrayType(T.IntegerType()),
    "order": T.ArrayType(T.IntegerType()),
    "uncertain": T.MapType(T.StringType(), T.StringType()),
    **dict.fromkeys(
        (
            "operator_ids",
            "user_operator_ids",
            "dropped_operator_ids",
            "reasons",
            "handle_types",
            "kryo_classes",
            "pojo_collection_fields",
            "class_names",
            "snapshot_classes",
            "undecidable_reasons",
            "taken_as_unchanged",
            "assumes",
        ),
        _STRINGS,
    ),  # fmt: skip
}


def column_type(name: str) -> T.DataType:
    """The Spark type of a column of that name in any table (strings unless listed)."""
    if name in _INT_COLUMNS:
        return T.IntegerType()
    if name in _LONG_COLUMNS:
        return T.LongType()
    if name in _BOOL_COLUMNS:
        return T.BooleanType()
    return _ARRAY_COLUMNS.get(name, T.StringType())


def struct(*column_lists: list[str], kind: bool = False) -> T.StructType:
    """The schema of rows holding these columns (each once, in order of first appearance);
    ``kind``: a non-null ``kind`` column first, telling which table a row belongs to.
    ``graph_id`` is never null."""
    names = list(dict.fromkeys(c for columns in column_lists for c in columns))
    fields = [T.StructField("kind", T.StringType(), False)] if kind else []
    fields += [T.StructField(c, column_type(c), c not in ("graph_id", "kind")) for c in names]
    return T.StructType(fields)
