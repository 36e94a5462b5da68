"""What a user can do about a state-type problem: short, exact fix texts for ``restore_fixes``.

The topology half's fixes are spec edits the pipeline can prove by recomputing the graph. A
state-type fix is a code or procedure change no graph shows, so each advice says how far it is
verified (``verified``): ``flink_source`` (the compatibility rules in Flink's source say the
fixed types are compatible), ``real_restores`` (the statetypes vectors restored that change),
``no``; and ``needs_real_restore`` when only a real restore across the versions can prove it
(the restore harness is the place: docs/state-rules.md lists them). Advice that does NOT work is
kept in :data:`NOT_FIXES` with the evidence, since users reach for it first.

The advice is data: each serializer family's texts in its own module, the rest (the key, a declared
type, a missing module) here, and :data:`ADVICE`, one entry per kind of problem, in the order they
are tried.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from udfs.restore.families import composite, enums, kryo, pojo
from udfs.restore.families.base import Advice, AdviceRule
from udfs.restore.state_kinds import Cause, Failure
from udfs.restore.state_problems import StateProblem

__all__ = ["Advice", "AdviceRule", "ADVICE", "advice_for", "NOT_FIXES"]

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
KEEP_KEY_TYPE = Advice(
    "KEEP_KEY_TYPE",
    "Key operator {operator_id} by the saved key type again (keys must be compatible as is: no field added, removed "
    "or retyped in a key POJO, no other key type).",
    "flink_source",
    False,
    "HeapRestoreOperation / restore operations: key serializer compatible after migration or incompatible -> "
    "StateMigrationException",
)
REWRITE_KEYED_STATE = Advice(
    "REWRITE_KEYED_STATE",
    "To change the key type, rewrite the operator's keyed state with the " + _SPA + " (read with the old key, write "
    "with the new) and restore from that savepoint.",
    "no",
    True,
    "the State Processor API's documented use; not exercised by the vectors",
)
KEEP_STATE_TYPE = Advice(
    "KEEP_STATE_TYPE",
    "Declare state '{state}' with its saved type{saved}, or rewrite it with the " + _SPA + ".",
    "flink_source",
    False,
    "the state's new serializer is incompatible with the saved one",
)
BUNDLE_MODULE = Advice(
    "BUNDLE_MODULE",
    "Put the module of {message} back on the job's class path (bundle it, or add it to the cluster's lib/), or "
    "rewrite the savepoint without state '{where}' with the " + _SPA + ": Flink reads every saved state's serializer "
    "snapshot of the operators it restores, used by the new job or not.",
    "real_restores",
    False,
    "TypeSerializerSnapshot.readVersionedSnapshot resolves the snapshot class by name; jobs that dropped their Avro "
    "state and flink-avro with it failed with ClassNotFoundException",
)

F, C = Failure, Cause
# One entry per kind of problem: the first whose failure and cause match a problem (None: any) gives
# its advice, most direct first. The order matters where a failure and a cause could both match: the
# failures no cause changes the fix for come first (a Kryo collection on 2.x, the key, a removed
# constant, a value that does not read back), then what changed in the type, then the rest.
ADVICE: tuple[AdviceRule, ...] = (
    AdviceRule(F.KRYO_COLLECTION_ON_2X, None, (kryo.REWRITE_ON_1X_WITH_EXPLICIT_TYPES, kryo.DROP_STATE)),
    AdviceRule(F.KEY_SERIALIZER_INCOMPATIBLE, None, (KEEP_KEY_TYPE, REWRITE_KEYED_STATE)),
    AdviceRule(F.ENUM_CONSTANT_REMOVED, None, (enums.KEEP_ENUM_CONSTANTS,)),
    AdviceRule(None, C.POJO_FIELD_RETYPED, (pojo.KEEP_FIELD_TYPE,)),
    AdviceRule(F.STATE_READ_FAILED, None, (pojo.KEEP_FIELD_TYPE,)),
    AdviceRule(None, C.POJO_TO_KRYO, (pojo.KEEP_POJO,)),
    AdviceRule(None, C.KRYO_TO_POJO, (kryo.KEEP_GENERIC_OR_REWRITE,)),
    AdviceRule(None, C.KRYO_TO_ENUM, (kryo.KEEP_GENERIC_OR_REWRITE,)),
    AdviceRule(F.MAP_KEY_SCHEMA_CHANGED, None, (composite.KEEP_MAP_KEY_TYPE,)),
    AdviceRule(F.KRYO_CLASS_CHANGED, None, (kryo.REVERT_KRYO_CLASS_CHANGE,)),
    AdviceRule(F.KRYO2_VALUES_ON_KRYO5, None, (kryo.TRY_RESTORE_OR_REWRITE_ON_1X,)),
    AdviceRule(F.STATE_SERIALIZER_INCOMPATIBLE, None, (KEEP_STATE_TYPE,)),
    AdviceRule(F.SNAPSHOT_CLASS_GONE, C.MODULE_NOT_ON_CLASS_PATH, (BUNDLE_MODULE,)),
    AdviceRule(F.SNAPSHOT_CLASS_GONE, C.KRYO_SERIALIZER_INSTANCE_1X, (kryo.REWRITE_KRYO_STATE_ON_1X,)),
)


def advice_for(p: StateProblem, old_types: Mapping[str, str] | None = None) -> list[Advice]:
    """The fixes for one problem, most direct first. ``old_types``: readable saved types by
    ``operator_id/state`` (``savepoint_states.value_type``), to name them in the texts."""
    rule = next((r for r in ADVICE if r.matches(p.failure, p.cause)), None)
    if rule is None:
        return []
    names = _names(p, old_types)
    return [replace(a, text=a.text.format(**names)) for a in rule.advice]


def _names(p: StateProblem, old_types: Mapping[str, str] | None) -> dict[str, str]:
    """What the advice texts name: the state (and where in its type), its saved type, the
    operator, the enum class and the field the problem is about, Flink's message."""
    state = p.state_name or "?"
    old_type = (old_types or {}).get(f"{p.operator_id}/{p.state_name}")
    enum_class = (p.message or "").split("enum class ")[-1].split(". Probably")[0] if p.message else "the enum"
    return {
        "state": state,
        "where": state + (f" ({p.field_path})" if p.field_path else ""),
        "saved": f" ({old_type})" if old_type else "",
        "operator_id": str(p.operator_id),
        "enum_class": enum_class,
        "field": (p.field_path or "").rsplit(".fields.", 1)[-1],
        "message": str(p.message),
    }
