"""Kryo and generic types (``KryoSerializerSnapshot``, ``GenericTypeSerializerSnapshot``).

Compatibility: another type class is incompatible, the same one compatible as is (Kryo's
registrations are assumed unchanged); Kryo keeps no field layout, so a Kryo class whose fields
changed between the jars is not decidable from the snapshot (``KRYO_CLASS_CHANGED``).

Most of this family is the 1.x -> 2.x upgrade. Flink 2.x extracts its own serializers for
``java.util`` collection interfaces, so a 1.x savepoint's Kryo-held List / Map / Set state meets
another serializer (``KRYO_COLLECTION_ON_2X``), and where a backend reads saved values back at
restore, 2.x's Kryo 5 reads the Kryo 2 bytes of those collections wrongly: what that throws
depends on the bytes after it (:func:`pojo_field_misread`, the heap key group's stream). A 1.x
snapshot holding a Java-serialized serializer instance cannot be restored on 2.x at all
(:func:`entry_gone`); other Kryo classes' Kryo 2 values are read by Kryo 5 with no documented
compatibility (:func:`written_by_kryo2`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from udfs.restore.families import base, composite
from udfs.restore.families.base import Compat, CompatResult, Family, Predicting, Resolve, predicted
from udfs.restore.families.pojo import FIELD_NULL_MESSAGE
from udfs.restore.java_types import resolve_type_name
from udfs.restore.state_inputs import ClassFacts
from udfs.restore.state_kinds import Cause
from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.simple_types import BY_JAVA, PRIMITIVES
from udfs.savepoint.state_rows import node_paths
from udfs.savepoint.type_names import COLLECTION_INTERFACES, FLINK, KRYO

# Flink 1.x writes every serializer instance registered with Kryo (a registration, a default serializer)
# Java-serialized as an ExecutionConfig$SerializableSerializer; 2.x moved the class
# (org.apache.flink.api.common.SerializableSerializer), so the entry reads back without a value.
SERIALIZABLE_SERIALIZER_1X = FLINK + "api.common.ExecutionConfig$SerializableSerializer"
# LinkedOptionalMap.unwrapOptionals (KryoSerializerSnapshot.restoreSerializer): an entry whose value
# could not be read with the new job's classes
MISSING_VALUE_MESSAGE = "Missing value for the key '{key}'"
# HeapRestoreOperation.readKeyGroupStateData after a misread value (Flink 2.3, JDK 17+)
HEAP_NATIVE_MISREAD_MESSAGE = (
    'Cannot invoke "org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot.getBackendStateType()" because '
    '"stateMetaInfoSnapshot" is null'
)

# what the failures assume, and what they leave open (docs/state-rules.md has the evidence)
INSTANCE_1X = (
    "Flink 2.x has no org.apache.flink.api.common.ExecutionConfig$SerializableSerializer (moved to "
    "org.apache.flink.api.common.SerializableSerializer): the Java-serialized entry of a 1.x Kryo snapshot reads "
    "as absent"
)
KRYO5_MISREADS = "Flink 2.x's Kryo 5 reads Kryo 2 collection bytes wrongly (observed, not documented)"
LAST_IN_KEY_GROUP = (
    "the misread state is the last one of its key group: the read may end without an error, then the "
    "registration check fails"
)
# HeapSnapshotResources keeps a key group's states in a HashMap keyed by StateUID, whose hashCode is
# Objects.hash(name, BackendStateType): an enum's identity hash, so the order the states are written in
# (HeapSnapshotStrategy iterates that map per key group) is not known before the run
KEY_GROUP_ORDER = (
    "the heap snapshot writes a key group's states (timers included) in a HashMap order whose hash holds an "
    "enum's identity hash: when the misread state comes last the read ends without an error and the "
    "registration check fails instead (its stage: where user code first requests the state); else what the "
    "misaligned read throws depends on the bytes it lands on (seen: the NPE on the missing state, once an NPE "
    "without a message)"
)
POJO_READ_BACK = (
    "how Kryo 5 reads the Kryo 2 collection bytes depends on the saved values: seen to read them back without "
    "an error (then the registration check fails) or to lose the key group's place (a NullPointerException)"
)
CANONICAL_LIST_MISREAD = (
    "Kryo 5 reads each element of the list's value from where the Kryo 2 bytes of the one before ended: what that "
    "throws depends on the saved bytes (seen: EOFException: Buffer underflow., a ClassNotFoundException naming "
    "misread bytes, Encountered unregistered class ID)"
)
POJO_MISREAD = (
    "the field after the misread collection is not a known primitive: the read goes on misaligned and fails "
    "(or not) in a way not known"
)
OPERATOR_STATE_MISREAD = (
    "Kryo 5 reads the Kryo 2 collection bytes when the operator state backend is built: it may fail there "
    "(exception not known) before the registration check"
)


def compatibility(new: SnapshotNode, old: SnapshotNode, path: str, resolve: Resolve) -> Compat:
    return base.type_class_changed(new, old, path) or Compat(CompatResult.AS_IS, path)


def node_for(type_class: str | None) -> SnapshotNode:
    """The KryoSerializer snapshot of a generic type."""
    return predicted(KRYO, "KRYO", type_class)


def predict(old: SnapshotNode, predicting: Predicting, path: str, depth: int) -> SnapshotNode | None:
    """On 1.x -> 2.x a Kryo-held collection interface becomes 2.x's Nullable collection; a class the
    new jar makes a POJO or an enum leaves Kryo; anything else stays as saved."""
    if not old.is_kryo:  # a generic Value / Writable type: its class decides
        return old
    if old.type_class in COLLECTION_INTERFACES and predicting.ctx.crosses_to_2x:
        predicting.change(path, Cause.KRYO_COLLECTION_ON_2X)
        return composite.collection_2x(old.type_class or "java.util.List")
    facts = predicting.facts_of(old)
    if facts is not None and facts.kind in ("pojo", "enum"):
        predicting.change(path, Cause.KRYO_TO_POJO if facts.kind == "pojo" else Cause.KRYO_TO_ENUM)
        return predicting.for_class(facts, depth)
    return old


def first_collection(node: SnapshotNode, root: str) -> str | None:
    """Path of the first Kryo-held collection interface in a saved tree."""
    return next((p for p, n in node_paths(node, root) if n.is_kryo_collection), None)


def entry_gone(node: SnapshotNode, root: str) -> tuple[str, str] | None:
    """(path, key) of the first Kryo snapshot entry a 2.x class path cannot read back: a default
    serializer or a registration held as 1.x's ExecutionConfig$SerializableSerializer, in the order
    KryoSerializerSnapshot.restoreSerializer unwraps them (default serializers, then registrations)."""
    for p, n in node_paths(node, root):
        if not n.is_kryo:
            continue
        for name, value in n.facts.get("kryo_default_serializers") or []:
            if value == SERIALIZABLE_SERIALIZER_1X:
                return p, str(name)
        for reg in n.facts.get("kryo_registrations") or []:
            if reg.get("type") == "INSTANCE" and reg.get("serializer") == SERIALIZABLE_SERIALIZER_1X:
                return p, str(reg.get("name") or reg.get("class"))
    return None


def pojo_field_misread(
    node: SnapshotNode, root: str, classes: Mapping[str, ClassFacts], olds: Mapping[str, ClassFacts]
) -> tuple[str, str | None] | None:
    """A saved POJO with a field Kryo holds as a ``java.util`` collection, read back by 2.x (heap
    restore, operator state): PojoSerializer.deserialize reads each field as a null flag then the
    value, in the snapshot's field order; Kryo 5 consumes the Kryo 2 collection bytes differently,
    so the next field's null flag is read from the wrong byte: a primitive field then gets null,
    and ``Field.set`` throws. (path of the Kryo field, message or None when the next field is not a
    known primitive)."""
    for p, n in node_paths(node, root):
        if n.kind != "POJO":
            continue
        for i, f in enumerate(n.fields):
            if f.snapshot is None or not f.snapshot.is_kryo_collection:
                continue
            where = f"{p}.fields.{f.name}"
            if i + 1 >= len(n.fields):
                return where, None
            nxt = n.fields[i + 1].name
            facts = olds.get(n.type_class or "") or classes.get(n.type_class or "")
            ftype = facts.field_type(nxt) if facts is not None else None
            if ftype in PRIMITIVES:
                return where, FIELD_NULL_MESSAGE.format(field_type=ftype, cls=n.type_class, field=nxt)
            return where, None
    return None


def class_changed(
    ser: SnapshotNode, classes: Mapping[str, ClassFacts], olds: Mapping[str, ClassFacts], root: str
) -> tuple[str, str] | None:
    """A class Kryo keeps (in both jars) whose fields differ between the old and the new jar:
    Kryo's snapshot has no field layout, whether the old bytes read depends on the change."""
    for p, n in node_paths(ser, root):
        if not n.is_kryo or not n.type_class:
            continue
        new, old = classes.get(n.type_class), olds.get(n.type_class)
        if new is None or old is None or new.kind != "generic" or old.kind != "generic":
            continue
        if new.fields != old.fields:
            return p, (
                f"Kryo serializes {n.type_class} with no schema in the savepoint; its fields changed "
                f"({list(old.fields)} -> {list(new.fields)}): whether the saved bytes still read, and how it fails, "
                "depends on Kryo's field serializer and the values"
            )
    return None


@dataclass(frozen=True)
class KryoChange:
    """A class Kryo keeps whose serialized fields differ between the jars (old facts -> new).

    Kryo's ``FieldSerializer`` (Flink's default for a generic class, Kryo 2 on 1.x, Kryo 5 on 2.x)
    writes the fields one after the other, sorted by name, with no names, lengths or count: the
    new class reads the saved bytes as if they had its own fields. ``tail_only``: the kept fields
    come first in that order, unchanged, and every added or removed field sorts after them, so
    reading stops early (fields removed: the value's last bytes are left unread) or wants bytes
    past the saved value's end (fields added)."""

    path: str
    type_class: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    retyped: tuple[str, ...]
    tail_only: bool

    @property
    def text(self) -> str:
        parts = [f"{what} {list(names)}" for what, names in
                 (("added", self.added), ("removed", self.removed), ("retyped", self.retyped)) if names]  # fmt: skip
        return f"{self.type_class}: " + ", ".join(parts)


def kryo_change(
    ser: SnapshotNode, classes: Mapping[str, ClassFacts], olds: Mapping[str, ClassFacts], root: str
) -> KryoChange | None:
    """The first class Kryo keeps in a saved tree whose fields changed between the old and the new
    jar (both jars' facts needed; see :func:`facts_missing`)."""
    for p, n in node_paths(ser, root):
        if not n.is_kryo or not n.type_class:
            continue
        new, old = classes.get(n.type_class), olds.get(n.type_class)
        if new is None or old is None or new.kind != "generic" or old.kind != "generic" or new.fields == old.fields:
            continue
        a, b = dict(old.fields), dict(new.fields)
        added = tuple(sorted(set(b) - set(a)))
        removed = tuple(sorted(set(a) - set(b)))
        retyped = tuple(sorted(f for f in set(a) & set(b) if a[f] != b[f]))
        kept = sorted(set(a) & set(b))
        tail = not retyped and all(f > kept[-1] for f in added + removed) if kept else False
        return KryoChange(p, n.type_class, added, removed, retyped, tail)
    return None


def facts_missing(ser: SnapshotNode, classes: Mapping[str, ClassFacts], olds: Mapping[str, ClassFacts],
                  root: str) -> tuple[str, str] | None:  # fmt: skip
    """(path, class) of the first class Kryo keeps that the new jar describes but the previous
    version's facts do not: the savepoint keeps no Kryo schema, so whether the saved bytes still
    read depends on how the class looked when they were written."""
    for p, n in node_paths(ser, root):
        if n.is_kryo and n.type_class and n.type_class in classes and n.type_class not in olds:
            if classes[n.type_class].kind == "generic":
                return p, n.type_class
    return None


def facts_missing_reason(type_class: str) -> str:
    return (
        f"Kryo keeps no schema of {type_class} in the savepoint and the previous version's class facts (the previous "
        "spec's user_classes) are not given: whether the saved bytes read with the new class depends on its fields "
        "then"
    )


KRYO_STREAM_MISREAD = (
    "Kryo reads the saved values of a class whose fields changed ({change}) one after the other with no field "
    "count: the stream goes on from the wrong byte, and what that throws (or whether it reads through with wrong "
    "values) depends on the saved bytes"
)
KRYO_VALUES_MISREAD = (
    "the class Kryo keeps changed ({change}): the new class reads other bytes than a saved value holds (a list's "
    "elements one after the other), and whether that fails or reads wrong values depends on the saved bytes"
)


# Kryo's EOF at the end of a value's bytes, as Flink's NoFetchingInput raises it (EOFException
# cause of a KryoException, rethrown by KryoSerializer.deserialize): Kryo 2 on 1.x, Kryo 5 on 2.x
EOF_CLASS = "java.io.EOFException"
EOF_MESSAGE = {1: "No more bytes left.", 2: "Buffer underflow."}


def _plain_class(facts: ClassFacts | None, classes: Mapping[str, ClassFacts]) -> bool:
    """A Kryo class whose fields are primitives, boxed numbers or strings only: the shape whose
    Kryo 2 (Flink 1.x) bytes Flink 2.x's Kryo 5 was seen to read back (docs/state-rules.md)."""
    if facts is None or facts.kind != "generic":
        return False
    return all(resolve_type_name(t, classes) in BY_JAVA for _, t in facts.fields)


def written_by_kryo2(ser: SnapshotNode, root: str, classes: Mapping[str, ClassFacts]) -> tuple[str, str] | None:
    """(path, why) of the first Kryo-held class (not a collection) whose saved values, written by
    1.x's Kryo 2, 2.x's Kryo 5 may not read: only classes of primitive and String fields were seen
    to read back."""
    for p, n in node_paths(ser, root):
        if not n.is_kryo or n.type_class in COLLECTION_INTERFACES:
            continue
        facts = classes.get(n.type_class or "")
        if _plain_class(facts, classes):
            continue
        return p, (
            f"Kryo({n.type_class}) values were written by Kryo 2 (Flink 1.x) and are read by Kryo 5 (Flink "
            "2.x); Flink documents no compatibility; real restores read back classes of primitive and "
            "String fields only" + ("" if facts is not None else f"; no facts about {n.type_class}")
        )
    return None


_SPA = "State Processor API"
REWRITE_ON_1X_WITH_EXPLICIT_TYPES = base.Advice(
    "REWRITE_ON_1X_WITH_EXPLICIT_TYPES",
    "Before upgrading, on Flink 1.x: rewrite state '{where}' off Kryo with the " + _SPA + " (read it with its "
    "current descriptor, write it with an explicit TypeInformation: Types.LIST(<element>) / Types.MAP(<key>, "
    "<value>), for a POJO field an @TypeInfo factory returning one), restore the 1.x job from that savepoint, then "
    "declare the state with the same explicit TypeInformation on 2.x (not a TypeHint: 2.x would extract Nullable "
    "collections).",
    "flink_source",
    True,
    "ListSerializer / MapSerializer snapshots and values restore 1.20 -> 2.3 unchanged (every LIST and MAP state of "
    "the cross-version vectors); the rewrite itself is not exercised by the vectors",
)
DROP_STATE = base.Advice(
    "DROP_STATE",
    "If state '{state}' can be rebuilt: give it a new name on 2.x; a saved state no code requests is dropped "
    "silently (no --allowNonRestoredState needed). With the HashMap backend take the last 1.x savepoint as "
    "CANONICAL first: a NATIVE heap restore reads every saved state, requested or not.",
    "real_restores",
    True,
    "renamed and removed states restored silently (statetypes-2.3 rename_state, remove_state); HashMap CANONICAL "
    "1.20 savepoints with Kryo collections read without error on 2.3 (1 case); the drop across versions is not "
    "exercised",
)
KEEP_GENERIC_OR_REWRITE = base.Advice(
    "KEEP_GENERIC_OR_REWRITE",
    "A class saved by Kryo cannot turn into a POJO in place: keep it as it was for state '{state}', or rewrite the "
    "state with the " + _SPA + " (read with Kryo, write as the POJO).",
    "real_restores",
    True,
    "Gen-pojo failed (keyed and operator state); the rewrite is not exercised",
)
REVERT_KRYO_CLASS_CHANGE = base.Advice(
    "REVERT_KRYO_CLASS_CHANGE",
    "Kryo keeps no schema: revert the field change of the class in state '{state}', or first rewrite the state with "
    "the " + _SPA + " into a POJO or Avro type, which evolve.",
    "no",
    True,
    "Gen-add failed with EOFException on RocksDB operator state; other shapes are unknown",
)
TRY_RESTORE_OR_REWRITE_ON_1X = base.Advice(
    "TRY_RESTORE_OR_REWRITE_ON_1X",
    "Restore a copy of the savepoint on 2.x first (the restore harness) and check state '{state}', or rewrite it off "
    "Kryo on 1.x as for collections.",
    "no",
    True,
    "Kryo 2 -> 5 has no documented compatibility; classes of primitive and String fields read back",
)
REWRITE_KRYO_STATE_ON_1X = base.Advice(
    "REWRITE_KRYO_STATE_ON_1X",
    "Before upgrading, on Flink 1.x: rewrite every Kryo-held state of this operator (here '{where}') with the "
    + _SPA
    + " into explicitly typed state (no Kryo), or leave it out of the rewritten savepoint: 2.x builds the keyed "
    "backend from every saved state's serializer snapshot, and a 1.x Kryo snapshot that carries a registered "
    "serializer instance (flink-avro registers one for GenericData$Array) cannot be read back; renaming the state on "
    "2.x does not help.",
    "flink_source",
    True,
    "KryoSerializerSnapshot.restoreSerializer unwraps every entry; 1.x's ExecutionConfig$SerializableSerializer is "
    "not in 2.x; renamed states failed the same way (1.20 -> 2.3 rename_state); the rewrite itself is not exercised",
)

FAMILY = Family("kryo", compatibility, predict)
