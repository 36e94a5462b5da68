"""The serializer families and the registry that picks one for a snapshot, as Flink's snapshot classes do.

Each family is a module holding its own rule, the way Flink keeps one snapshot class per
serializer with its ``resolveSchemaCompatibility``:

============  ==================================================================  ====================
family        Flink's snapshot classes                                            module
============  ==================================================================  ====================
simple        SimpleTypeSerializerSnapshot (Long, String, int[], Instant, ...)    ``simple.py``
POJO          PojoSerializerSnapshot                                              ``pojo.py``
enum          EnumSerializerSnapshot (and the Scala enumeration's)                ``enums.py``
Kryo/generic  KryoSerializerSnapshot, GenericTypeSerializerSnapshot (Value, ...)  ``kryo.py``
Avro          AvroSerializerSnapshot                                              ``avro.py``
composite     CompositeTypeSerializerSnapshot: List, Map, Set, Nullable, TTL...   ``composite.py``
Row / Tuple   RowSerializerSnapshot, TupleSerializerSnapshot, case classes, ...   ``row_tuple.py``
custom        a user's own snapshot, and the ones no rule models                  ``custom.py``
============  ==================================================================  ====================

A family is picked by snapshot class where the class says more than the reader's kind
(:data:`_BY_CLASS`), else by the kind the snapshot reader's registry gives the class. Here too:
:func:`compatibility` for a whole tree, :func:`predict_new` (the new job's serializer predicted
from the saved one) with Flink's type extraction of a declared Java type
(:func:`node_for_java_type`), and :func:`serializer_display` (a serializer as Flink prints it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from udfs.restore.families import avro, composite, custom, enums, kryo, pojo, row_tuple, simple
from udfs.restore.families.base import (
    UNKNOWN_ELEMENT,
    Compat,
    CompatResult,
    Family,
    serializer_class,
    short_text,
)
from udfs.restore.java_types import resolve_type_name, split_generic
from udfs.restore.state_inputs import ClassFacts, StateContext
from udfs.restore.state_kinds import HASH
from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.type_names import COLLECTION_INTERFACES

__all__ = [
    "Prediction",
    "compatibility",
    "family_of",
    "node_for_java_type",
    "predict_new",
    "serializer_class",
    "serializer_display",
]

# the snapshot reader's kind (its registry's SnapshotSpec.kind) -> the family
_BY_KIND: dict[str, Family] = {
    "SIMPLE": simple.FAMILY,
    "POJO": pojo.FAMILY,
    "ENUM": enums.FAMILY,
    "KRYO": kryo.FAMILY,
    "GENERIC": kryo.FAMILY,
    "AVRO": avro.FAMILY,
    "COMPOSITE": composite.FAMILY,
    "WRAPPER": composite.FAMILY,
    "ROW_DATA": row_tuple.FAMILY,
}
_BY_CLASS: dict[str, Family] = dict.fromkeys(row_tuple.CLASSES, row_tuple.FAMILY)


def family_of(node: SnapshotNode) -> Family:
    """The family whose rule applies to a snapshot (custom when no rule models its class)."""
    return _BY_CLASS.get(node.class_name) or _BY_KIND.get(node.kind) or custom.FAMILY


def compatibility(new: SnapshotNode | None, old: SnapshotNode, path: str = "value") -> Compat:
    """What ``new.resolveSchemaCompatibility(old)`` returns (2.x; 1.x's
    ``old.resolveSchemaCompatibility(newSerializer)`` decides the same): a different snapshot class
    is incompatible (every Flink snapshot's rule starts with that instance check), else the class's
    family decides. ``new`` None: unknown."""
    if new is None or new.kind == UNKNOWN_ELEMENT:
        return Compat(CompatResult.UNKNOWN, path, "the new serializer is not known")
    if new.class_name != old.class_name:
        return Compat(CompatResult.INCOMPATIBLE, path, f"{short_text(old)} -> {short_text(new)}")
    return family_of(new).compatibility(new, old, path, compatibility)


def serializer_display(node: SnapshotNode) -> str:
    """``TypeSerializer.toString()`` of the serializer this snapshot describes: Object's
    ``Class@hash`` (hash as ``<hash>``, as the vectors normalise it), except the serializers
    that override it (EnumSerializer, GenericArraySerializer, Tuple0Serializer)."""
    return family_of(node).display(node) or f"{serializer_class(node.class_name)}@{HASH}"


# ------------------------------------------------------------------------------------------------
#  Flink's type extraction, and the new job's serializer predicted from the saved one
# ------------------------------------------------------------------------------------------------


def node_for_java_type(
    type_text: str, major: int | None, classes: Mapping[str, ClassFacts], depth: int = 0
) -> SnapshotNode | None:
    """The serializer snapshot Flink's type extraction gives a POJO field of this Java type on the
    target line, or None when it cannot be said (a class without facts, a type variable...)."""
    if depth > 8:
        return None
    raw, args = split_generic(type_text)
    if raw.endswith("[]"):
        return simple.array_of(resolve_type_name(raw[:-2], classes))
    name = resolve_type_name(raw, classes)
    found = simple.for_java_type(name)
    if found is not None:
        return found
    if name in COLLECTION_INTERFACES:
        if (major or 0) >= 2 and args:
            nested = [node_for_java_type(a, major, classes, depth + 1) for a in args]
            return composite.collection_2x(name, nested)
        return kryo.node_for(name)
    facts = classes.get(name)
    if facts is None:
        return None if not name.startswith("java.") else kryo.node_for(name)
    return node_for_class(facts, major, classes, depth + 1)


def node_for_class(facts: ClassFacts, major: int | None, classes: Mapping[str, ClassFacts], depth: int) -> SnapshotNode:
    """What the target line makes of a user class: an enum, a POJO (its fields by type), else Kryo."""
    if facts.kind == "enum":
        return enums.node_for(facts)
    if facts.kind == "pojo":
        return pojo.node_for(facts, lambda t: node_for_java_type(t, major, classes, depth))
    return kryo.node_for(facts.name)


@dataclass
class Prediction:
    """A predicted serializer tree and what it rests on: ``causes`` (path, cause) of every
    change applied, ``unknown`` (path, reason) where nothing can be predicted."""

    node: SnapshotNode | None
    causes: list[tuple[str, str]] = field(default_factory=list)
    unknown: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Predictor:
    """One prediction under way: the families call back into it (base.Predicting)."""

    ctx: StateContext
    classes: Mapping[str, ClassFacts]
    out: Prediction

    def predict(self, old: SnapshotNode, path: str, depth: int) -> SnapshotNode | None:
        if depth > 24:
            return old
        return family_of(old).predict(old, self, path, depth)

    def extract(self, type_text: str) -> SnapshotNode | None:
        return node_for_java_type(type_text, self.ctx.target_major, self.classes)

    def for_class(self, facts: ClassFacts, depth: int) -> SnapshotNode:
        return node_for_class(facts, self.ctx.target_major, self.classes, depth)

    def facts_of(self, node: SnapshotNode) -> ClassFacts | None:
        return self.classes.get(node.type_class or "") if node.type_class else None

    def change(self, path: str, cause: str) -> None:
        self.out.causes.append((path, cause))

    def unknown_at(self, path: str, why: str) -> None:
        self.out.unknown.append((path, why))


def predict_new(
    old: SnapshotNode, ctx: StateContext, classes: Mapping[str, ClassFacts], path: str = "value"
) -> Prediction:
    """The serializer snapshot the new job builds for a state whose saved snapshot is ``old``,
    if it declares the same Java type: user classes follow their facts (a POJO's fields and
    their types, an enum's constants, POJO <-> Kryo), and on 1.x -> 2.x a Kryo-held ``java.util``
    collection interface becomes 2.x's Nullable collection serializer (POJO fields included).
    A part that cannot be predicted is marked unknown (``Prediction.unknown``)."""
    out = Prediction(None)
    out.node = _Predictor(ctx, classes, out).predict(old, path, 0)
    return out
