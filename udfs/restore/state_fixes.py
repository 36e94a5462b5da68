"""What a user can do about a state-type problem: short, exact fix texts for ``restore_fixes``.

The topology half's fixes are spec edits the pipeline can prove by recomputing the graph. A
state-type fix is a code or procedure change no graph shows, so each advice here says how far it
is verified (``verified``): ``flink_source`` (the compatibility rules in Flink's source say the
fixed types are compatible), ``real_restores`` (the statetypes vectors restored that change),
``no``; and ``needs_real_restore`` when only a real restore across the versions can prove it
(the restore harness is the place: docs/state-rules.md lists them). Advice that does NOT work is
kept in :data:`NOT_FIXES` with the evidence, since users reach for it first.

Rows (:func:`fix_rows`) have ``restore_fixes``' columns (SPEC section 5, fixes.py) -- the state
problems have no counterpart node and no spec patch, so those stay null -- and these more:
``state_name``, ``field_path``, ``advice_code``, ``verified``, ``needs_real_restore``,
``evidence``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from udfs.restore import state_rules as sr

__all__ = ["Advice", "advice_for", "fix_rows", "NOT_FIXES", "FIX_COLUMNS"]

# the columns of a restore_fixes row after its check key (the table is these, in this order):
# the topology fixes (udfs/restore/fixes.py, proven by check_rows) and the state advice here
FIX_COLUMNS = (
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
    # state-type advice (no spec patch proves it): advice_for, below
    "state_name",
    "field_path",
    "advice_code",
    "advice_basis",  # what the advice rests on: flink_source, real_restores, no
    "needs_real_restore",
    "evidence",
)


@dataclass(frozen=True)
class Advice:
    """One fix: ``code`` (stable id), ``text`` (the fix, names filled in), ``verified``,
    ``needs_real_restore`` and ``evidence`` (what it rests on)."""

    code: str
    text: str
    verified: str
    needs_real_restore: bool
    evidence: str


# What users try for 1.x Kryo collection state on 2.x, and why it does not work.
NOT_FIXES = {
    "TYPE_HINT_OR_TYPES_LIST_ON_2X": (
        "Declaring the state on 2.x with a TypeHint, Types.LIST/Types.MAP or ListTypeInfo/MapTypeInfo: the new "
        "snapshot is a List/Map (or Nullable) serializer snapshot, the saved one Kryo's: a different snapshot class "
        "is incompatible (CompositeTypeSerializerSnapshot / KryoSerializerSnapshot.resolveSchemaCompatibility)."
    ),
    "KEEP_KRYO_ON_2X": (
        "Keeping Kryo on 2.x (new GenericTypeInfo<>(List.class), Types.GENERIC(List.class), an @TypeInfo factory "
        "returning one): the serializer check passes (same Kryo type class), but Flink 2.x's Kryo 5 reads the Kryo 2 "
        "bytes of the saved collections back: in all 3 HashMap/NATIVE restores of the vectors that read failed "
        "(NullPointerException in HeapRestoreOperation, using that very Kryo(java.util.List|Map) serializer). "
        "Not a fix."
    ),
    "PIPELINE_GENERIC_TYPES": (
        "pipeline.generic-types: false only makes Flink refuse Kryo types; it changes no serializer."
    ),
    "BUILT_IN_COLLECTION_TYPES_OPTION": (
        "A pipeline.built-in-collection-types switch was proposed in apache/flink PR #25797 (FLINK-34123) and "
        "reverted before the merge: Flink 2.x has no option to give List/Map back to Kryo."
    ),
}

_SPA = "State Processor API"


def advice_for(p: sr.StateProblem, old_types: Mapping[str, str] | None = None) -> list[Advice]:
    """The fixes for one problem, most direct first. ``old_types``: readable saved types by
    ``operator_id/state`` (``savepoint_states.value_type``), to name them in the texts."""
    state = p.state_name or "?"
    where = f"{state}" + (f" ({p.field_path})" if p.field_path else "")
    old_type = (old_types or {}).get(f"{p.operator_id}/{p.state_name}")
    cause = p.cause or ""
    kind = p.failure
    if kind == sr.KRYO_COLLECTION_ON_2X:
        return [
            Advice(
                "REWRITE_ON_1X_WITH_EXPLICIT_TYPES",
                f"Before upgrading, on Flink 1.x: rewrite state '{where}' off Kryo with the {_SPA} (read it with its "
                "current descriptor, write it with an explicit TypeInformation: Types.LIST(<element>) / "
                "Types.MAP(<key>, <value>), for a POJO field an @TypeInfo factory returning one), restore the 1.x "
                "job from that savepoint, then declare the state with the same explicit TypeInformation on 2.x "
                "(not a TypeHint: 2.x would extract Nullable collections).",
                "flink_source",
                True,
                "ListSerializer / MapSerializer snapshots and values restore 1.20 -> 2.3 unchanged (every LIST and "
                "MAP state of the cross-version vectors); the rewrite itself is not exercised by the vectors",
            ),
            Advice(
                "DROP_STATE",
                f"If state '{state}' can be rebuilt: give it a new name on 2.x; a saved state no code requests is "
                "dropped silently (no --allowNonRestoredState needed). With the HashMap backend take the last 1.x "
                "savepoint as CANONICAL first: a NATIVE heap restore reads every saved state, requested or not.",
                "real_restores",
                True,
                "renamed and removed states restored silently (statetypes-2.3 rename_state, remove_state); HashMap "
                "CANONICAL 1.20 savepoints with Kryo collections read without error on 2.3 (1 case); the drop across "
                "versions is not exercised",
            ),
        ]
    if kind == sr.KEY_SERIALIZER_INCOMPATIBLE:
        fix = (
            f"Key operator {p.operator_id} by the saved key type again (keys must be compatible as is: "
            "no field added, removed or retyped in a key POJO, no other key type)"
        )
        return [
            Advice(
                "KEEP_KEY_TYPE",
                fix + ".",
                "flink_source",
                False,
                "HeapRestoreOperation / restore operations: "
                "key serializer compatible after migration or incompatible -> StateMigrationException",
            ),  # fmt: skip
            Advice(
                "REWRITE_KEYED_STATE",
                f"To change the key type, rewrite the operator's keyed state with the {_SPA} (read with the old key, "
                "write with the new) and restore from that savepoint.",
                "no",
                True,
                "the State Processor API's documented use; not exercised by the vectors",
            ),
        ]
    if kind == sr.ENUM_CONSTANT_REMOVED:
        cls = (p.message or "").split("enum class ")[-1].split(". Probably")[0] if p.message else "the enum"
        return [
            Advice(
                "KEEP_ENUM_CONSTANTS",
                f"Keep every saved constant of {cls} (mark unused ones @Deprecated); adding and reordering constants "
                "restores.",
                "real_restores",
                False,
                "EnumSerializerSnapshot.readSnapshot throws on a missing constant; Color-add / Color-reorder restored",
            )
        ]
    if cause == "POJO_FIELD_RETYPED" or kind == sr.STATE_READ_FAILED:
        field = (p.field_path or "").rsplit(".fields.", 1)[-1]
        return [
            Advice(
                "KEEP_FIELD_TYPE",
                f"Keep field '{field}' of the POJO in state '{state}' with its saved type{_saved(old_type)}; add a "
                "new field for the new type instead (POJO fields added, removed or renamed migrate).",
                "real_restores",
                False,
                "PojoSerializerSnapshot: a kept field's serializer must stay compatible; PojoV-add / -remove / -rename "
                "restored, PojoV-retype failed",
            )
        ]
    if cause == "POJO_TO_KRYO":
        return [
            Advice(
                "KEEP_POJO",
                f"Keep the class in state '{state}' a POJO (public class, public no-argument constructor, fields "
                "public or with getters and setters); Kryo cannot read PojoSerializer state.",
                "real_restores",
                False,
                "PojoV-kryo failed on both backends; PojoSerializerSnapshot vs KryoSerializerSnapshot: incompatible",
            )
        ]
    if cause.startswith("KRYO_TO_"):
        return [
            Advice(
                "KEEP_GENERIC_OR_REWRITE",
                f"A class saved by Kryo cannot turn into a POJO in place: keep it as it was for state '{state}', or "
                f"rewrite the state with the {_SPA} (read with Kryo, write as the POJO).",
                "real_restores",
                True,
                "Gen-pojo failed (keyed and operator state); the rewrite is not exercised",
            )
        ]
    if kind == sr.MAP_KEY_SCHEMA_CHANGED:
        return [
            Advice(
                "KEEP_MAP_KEY_TYPE",
                f"Keep the map key type of MapState '{state}': RocksDB migrates map values, never map keys.",
                "flink_source",
                False,
                "RocksDBKeyedStateBackend.migrateStateValues: map key compatibility must be as is",
            )
        ]
    if kind == sr.KRYO_CLASS_CHANGED:
        return [
            Advice(
                "REVERT_KRYO_CLASS_CHANGE",
                f"Kryo keeps no schema: revert the field change of the class in state '{state}', or first rewrite the "
                f"state with the {_SPA} into a POJO or Avro type, which evolve.",
                "no",
                True,
                "Gen-add failed with EOFException on RocksDB operator state; other shapes are unknown",
            )
        ]
    if kind == sr.KRYO2_VALUES_ON_KRYO5:
        return [
            Advice(
                "TRY_RESTORE_OR_REWRITE_ON_1X",
                f"Restore a copy of the savepoint on 2.x first (the restore harness) and check state '{state}', or "
                "rewrite it off Kryo on 1.x as for collections.",
                "no",
                True,
                "Kryo 2 -> 5 has no documented compatibility; classes of primitive and String fields read back",
            )
        ]
    if kind == sr.STATE_SERIALIZER_INCOMPATIBLE:
        return [
            Advice(
                "KEEP_STATE_TYPE",
                f"Declare state '{state}' with its saved type{_saved(old_type)}, or rewrite it with the {_SPA}.",
                "flink_source",
                False,
                "the state's new serializer is incompatible with the saved one",
            )
        ]
    if kind == sr.SNAPSHOT_CLASS_GONE and cause == "MODULE_NOT_ON_CLASS_PATH":
        return [
            Advice(
                "BUNDLE_MODULE",
                f"Put the module of {p.message} back on the job's class path (bundle it, or add it to the cluster's "
                f"lib/), or rewrite the savepoint without state '{where}' with the {_SPA}: Flink reads every saved "
                "state's serializer snapshot of the operators it restores, used by the new job or not.",
                "real_restores",
                False,
                "TypeSerializerSnapshot.readVersionedSnapshot resolves the snapshot class by name; jobs that dropped "
                "their Avro state and flink-avro with it failed with ClassNotFoundException",
            )
        ]
    if kind == sr.SNAPSHOT_CLASS_GONE and cause == "KRYO_SERIALIZER_INSTANCE_1X":
        return [
            Advice(
                "REWRITE_KRYO_STATE_ON_1X",
                f"Before upgrading, on Flink 1.x: rewrite every Kryo-held state of this operator (here '{where}') with "
                f"the {_SPA} into explicitly typed state (no Kryo), or leave it out of the rewritten savepoint: 2.x "
                "builds the keyed backend from every saved state's serializer snapshot, and a 1.x Kryo snapshot "
                "that carries a registered serializer instance (flink-avro registers one for GenericData$Array) "
                "cannot be read back; renaming the state on 2.x does not help.",
                "flink_source",
                True,
                "KryoSerializerSnapshot.restoreSerializer unwraps every entry; 1.x's "
                "ExecutionConfig$SerializableSerializer is not in 2.x; renamed states failed the same way (1.20 -> 2.3 "
                "rename_state); the rewrite itself is not exercised",
            )
        ]
    return []


def _saved(old_type: str | None) -> str:
    return f" ({old_type})" if old_type else ""


def fix_rows(
    head: Mapping[str, Any], problems: Iterable[sr.StateProblem], old_types: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """``restore_fixes`` rows for the problems that fail or cannot be decided: one per advice."""
    out = []
    for p in problems:
        if p.verdict == sr.RESTORES:
            continue
        for a in advice_for(p, old_types):
            row: dict[str, Any] = {**head, **dict.fromkeys(FIX_COLUMNS)}
            row.update(
                operator_id=p.operator_id,
                reasons=list(dict.fromkeys(r for r in (p.failure, p.cause) if r)),
                fix_code=a.text,
                state_name=p.state_name,
                field_path=p.field_path,
                advice_code=a.code,
                verified=a.verified,
                needs_real_restore=a.needs_real_restore,
                evidence=a.evidence,
            )
            out.append(row)
    return out
