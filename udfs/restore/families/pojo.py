"""POJOs (``PojoSerializerSnapshot``): field by field, by name.

Compatibility: another class is incompatible; each field kept by name is resolved against its
saved serializer; a field added or removed needs migration. Prediction: the new jar's facts say
the fields and their declared Java types (a class that is no longer a POJO goes to Kryo or is an
enum). Failure: a heap restore (and the operator backend) reads every saved POJO back with the
saved field serializers into the new class's fields (``Field.set``), so a kept field whose new
type cannot take the saved value fails there, in the JDK's words.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from udfs.restore.families import base, simple
from udfs.restore.families.base import Compat, CompatResult, Family, Predicting, Resolve, predicted
from udfs.restore.java_types import assignable, resolve_type_name, split_generic
from udfs.restore.state_inputs import ClassFacts
from udfs.restore.state_kinds import Cause
from udfs.savepoint.serializer_snapshots import PojoField, SnapshotNode
from udfs.savepoint.simple_types import PRIMITIVES
from udfs.savepoint.state_rows import node_paths
from udfs.savepoint.type_names import POJO

# Field.set's IllegalArgumentException texts (JDK 17+: UnsafeFieldAccessorImpl)
FIELD_SET_MESSAGE = "Can not set {field_type} field {cls}.{field} to {value_class}"
FIELD_NULL_MESSAGE = "Can not set {field_type} field {cls}.{field} to null value"
# PojoSerializer.createInstance -> Class.newInstance() of a class without a no-argument constructor
# ("Cannot instantiate class.", its root cause)
NO_SUCH_METHOD = "java.lang.NoSuchMethodException"
NO_CONSTRUCTOR_MESSAGE = "{cls}.<init>()"
# uncertainty texts of the read-back failures
MAYBE_NULLS = "the saved field may hold only nulls (then the registration check fails instead)"
NO_LONGER_A_POJO = (
    "the heap restore rebuilds saved POJOs of a class that is no longer a POJO: it fails there if the class lost "
    "its public no-argument constructor, else at registration (STATE_SERIALIZER_INCOMPATIBLE)"
)


def compatibility(new: SnapshotNode, old: SnapshotNode, path: str, resolve: Resolve) -> Compat:
    """PojoSerializerSnapshot: a kept field's serializer decides; fields added or removed make it compatible
    after migration (a removed field's saved values are dropped: a silent loss, state_warnings)."""
    changed = base.type_class_changed(new, old, path)
    if changed is not None:
        return changed
    new_fields = {f.name: f for f in new.fields}
    parts = []
    kept = 0
    for f in old.fields:
        nf = new_fields.get(f.name)
        if nf is None or f.snapshot is None:  # removed (absent key), or unreadable
            continue
        kept += 1
        if nf.snapshot is None:
            parts.append(Compat(CompatResult.UNKNOWN, f"{path}.fields.{f.name}", "the new field's type is not known"))
        else:
            parts.append(resolve(nf.snapshot, f.snapshot, f"{path}.fields.{f.name}"))
    fields = base.worst(parts, path)
    if fields.result in (CompatResult.INCOMPATIBLE, CompatResult.UNKNOWN):
        return fields
    removed = len(old.fields) - kept
    added = len(new.fields) - kept
    if removed or added or fields.result == CompatResult.AFTER_MIGRATION:
        why = fields.why or f"{added} field(s) added, {removed} removed"
        at = fields.path if fields.result == CompatResult.AFTER_MIGRATION else path
        return Compat(CompatResult.AFTER_MIGRATION, at, why)
    return fields


def node_for(facts: ClassFacts, extract: Callable[[str], SnapshotNode | None]) -> SnapshotNode:
    """The PojoSerializer snapshot of a class with these facts, each field's by its declared type."""
    fields = [PojoField(n, facts.name, extract(t)) for n, t in sorted(facts.fields)]
    return predicted(POJO, "POJO", facts.name, fields=fields)


def predict(old: SnapshotNode, predicting: Predicting, path: str, depth: int) -> SnapshotNode | None:
    """The new class's fields, each predicted from its declared type (or, without facts, from the
    saved field); a class no longer a POJO is what the new jar makes of it."""
    facts = predicting.facts_of(old)
    if facts is not None and facts.kind in ("generic", "enum"):
        predicting.change(path, Cause.POJO_TO_KRYO if facts.kind == "generic" else Cause.POJO_TO_ENUM)
        return predicting.for_class(facts, depth)
    saved = {f.name: f for f in old.fields}
    names = [n for n, _ in facts.fields] if facts is not None and facts.kind == "pojo" else list(saved)
    fields = [_predict_field(old, name, saved.get(name), facts, predicting, path, depth) for name in sorted(names)]
    if facts is not None and facts.kind == "pojo":
        gone = [n for n in saved if n not in dict(facts.fields)]
        added = [n for n in names if n not in saved]
        if gone or added:
            predicting.change(path, f"{Cause.POJO_FIELDS_CHANGED}(+{added} -{gone})")
    return replace(old, fields=tuple(fields))


def _predict_field(
    old: SnapshotNode,
    name: str,
    saved: PojoField | None,
    facts: ClassFacts | None,
    predicting: Predicting,
    path: str,
    depth: int,
) -> PojoField:
    at = f"{path}.fields.{name}"
    declared = facts.field_type(name) if facts is not None else None
    if declared is None:
        if saved is not None and saved.snapshot is not None:
            return PojoField(name, saved.declaring_class, predicting.predict(saved.snapshot, at, depth + 1))
        return PojoField(name, old.type_class, None)
    node = predicting.extract(declared)
    if saved is not None and saved.snapshot is not None and node is not None:
        if saved.snapshot.class_name == node.class_name and not node.is_kryo_collection:
            # the same user class: its own facts decide, recursively (a raw collection interface
            # stays in Kryo on 2.x: only type arguments select 2.x's serializers)
            node = predicting.predict(saved.snapshot, at, depth + 1)
        elif saved.snapshot.class_name != node.class_name:
            to_2x = saved.snapshot.is_kryo_collection and predicting.ctx.crosses_to_2x
            predicting.change(at, Cause.KRYO_COLLECTION_ON_2X if to_2x else Cause.POJO_FIELD_RETYPED)
    if node is None:
        predicting.unknown_at(at, f"type {declared}: no facts to predict its serializer")
    return PojoField(name, old.type_class, node)


def _value_class(n: SnapshotNode) -> str | None:
    """The runtime class of the values a saved serializer reads back."""
    if n.kind == "SIMPLE":
        return simple.value_class(n)
    if n.kind in ("POJO", "ENUM", "AVRO") and n.type_class:
        return n.type_class
    return None


def field_set_failure(
    old: SnapshotNode, classes: Mapping[str, ClassFacts], old_classes: Mapping[str, ClassFacts], path: str
) -> tuple[str, str, bool] | None:
    """The first kept field of a saved POJO whose new type cannot take the saved value: (path,
    Java's message, certain). Certain when the old field was a primitive (never null); a nullable
    one fails only on its first non-null value."""
    for p, n in node_paths(old, path):
        facts = classes.get(n.type_class or "") if n.kind == "POJO" else None
        if facts is None or facts.kind != "pojo":
            continue
        old_facts = old_classes.get(n.type_class or "")
        for f in n.fields:
            new_type = facts.field_type(f.name)
            if new_type is None or f.snapshot is None:
                continue
            value_class = _value_class(f.snapshot)
            if value_class is None:
                continue
            new_name = resolve_type_name(split_generic(new_type)[0], classes)
            if assignable(value_class, new_name):
                continue
            old_type = old_facts.field_type(f.name) if old_facts is not None else None
            certain = old_type in PRIMITIVES if old_type is not None else False
            msg = FIELD_SET_MESSAGE.format(field_type=new_name, cls=n.type_class, field=f.name, value_class=value_class)
            return f"{p}.fields.{f.name}", msg, certain
    return None


KEEP_FIELD_TYPE = base.Advice(
    "KEEP_FIELD_TYPE",
    "Keep field '{field}' of the POJO in state '{state}' with its saved type{saved}; add a new field for the new "
    "type instead. Fields added, removed or renamed restore, but the saved values of a removed or renamed field "
    "are dropped (a renamed field starts at its default): copy them over with the State Processor API if they "
    "matter.",
    "real_restores",
    False,
    "PojoSerializerSnapshot: a kept field's serializer must stay compatible; PojoV-add / -remove / -rename restored "
    "(the probe found a removed or renamed field's values gone, e.g. TaxiRide.driverIdent 0 in every restored "
    "value), PojoV-retype failed",
)
KEEP_POJO = base.Advice(
    "KEEP_POJO",
    "Keep the class in state '{state}' a POJO (public class, public no-argument constructor, fields public or with "
    "getters and setters); Kryo cannot read PojoSerializer state.",
    "real_restores",
    False,
    "PojoV-kryo failed on both backends; PojoSerializerSnapshot vs KryoSerializerSnapshot: incompatible",
)

FAMILY = Family("pojo", compatibility, predict)
