"""Composites and collections (``CompositeTypeSerializerSnapshot``): List, Map, Set, Nullable, arrays, TTL...

Flink resolves a composite in two steps: the subclass's outer check
(``resolveOuterSchemaCompatibility``: here the outer type class and a Nullable's null padding),
then every nested snapshot in order, the worst result winning
(``CompositeTypeSerializerUtil.constructIntermediateCompatibilityResult``). The saved tree is
predicted part by part.

Flink 2.x extracts its own serializers for ``java.util`` collection interfaces declared with type
arguments (1.x gave them to Kryo): :func:`collection_2x` builds them as the 2.3 savepoints of the
vectors hold them. A MapState whose map key needs migration fails on RocksDB, which migrates map
values only (:func:`map_key_migrates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from udfs.restore.families import base
from udfs.restore.families.base import Compat, CompatResult, Family, Predicting, Resolve, predicted
from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.type_names import LIST, MAP, NULLABLE, SET

COMPOSITE = "COMPOSITE"
# RocksDBKeyedStateBackend.migrateStateValues
MAP_KEY_MESSAGE = (
    "The new serializer for a MapState requires state migration in order for the job to proceed, since the key "
    "schema has changed. However, migration for MapState currently only allows value schema evolutions."
)


def outer_compatibility(new: SnapshotNode, old: SnapshotNode, path: str) -> Compat | None:
    """The outer checks: another outer type class (where both name one), another null padding."""
    if new.type_class != old.type_class and new.type_class is not None and old.type_class is not None:
        return Compat(CompatResult.INCOMPATIBLE, path, f"{old.type_class} -> {new.type_class}")
    pad_old, pad_new = old.facts.get("null_padding_length"), new.facts.get("null_padding_length")
    if pad_old is not None and pad_new is not None and pad_old != pad_new:
        return Compat(CompatResult.INCOMPATIBLE, path, f"null padding {pad_old} -> {pad_new}")
    return None


def nested_compatibility(new: SnapshotNode, old: SnapshotNode, path: str, resolve: Resolve) -> Compat:
    """Every nested snapshot against its saved one, by position, the worst result winning."""
    if len(new.nested) != len(old.nested):
        return Compat(CompatResult.INCOMPATIBLE, path, "a different number of nested serializers")
    parts = [resolve(n, o, f"{path}.{role}") for (role, o), (_, n) in zip(old.nested, new.nested, strict=True)]
    return base.worst(parts, path)


def compatibility(new: SnapshotNode, old: SnapshotNode, path: str, resolve: Resolve) -> Compat:
    return outer_compatibility(new, old, path) or nested_compatibility(new, old, path, resolve)


def predict(old: SnapshotNode, predicting: Predicting, path: str, depth: int) -> SnapshotNode | None:
    """The same composite around the predicted parts; unknown when a part is."""
    if not old.nested:
        return old
    nested = [(role, predicting.predict(c, f"{path}.{role}", depth + 1)) for role, c in old.nested]
    if any(n is None for _, n in nested):
        return None
    return replace(old, nested=tuple(nested))  # type: ignore[arg-type]


def display(node: SnapshotNode) -> str | None:
    """GenericArraySerializer prints its component class."""
    if base.serializer_class(node.class_name).endswith("GenericArraySerializer") and node.type_class:
        return f"Serializer {node.type_class}[]"
    return None


def nullable(inner: SnapshotNode | None) -> SnapshotNode | None:
    if inner is None:
        return None
    return predicted(NULLABLE, COMPOSITE, nested=[("original", inner)], facts={"null_padding_length": 0})


def collection_2x(interface: str, args: Sequence[SnapshotNode | None] = ()) -> SnapshotNode:
    """What Flink 2.x extracts for a collection interface with type arguments (NullableList /
    NullableMap / NullableSet TypeInfo, seen in the 2.3 vectors' declared types): Nullable<List<
    Nullable<E>>>, Nullable<Map<Nullable<K>, V>>. Unknown element types stay unknown (a synthetic
    placeholder), which changes nothing in the verdict: the outer class already differs from Kryo."""
    unknown = predicted("?", base.UNKNOWN_ELEMENT)
    a = list(args) + [None, None]
    if interface == "java.util.Map":
        inner = predicted(MAP, COMPOSITE, nested=[("key", nullable(a[0]) or unknown), ("value", a[1] or unknown)])
    elif interface == "java.util.Set":
        inner = predicted(SET, COMPOSITE, nested=[("element", nullable(a[0]) or unknown)])
    else:  # List, and Collection (extracted as a list: unverified, see docs/state-rules.md)
        inner = predicted(LIST, COMPOSITE, nested=[("element", nullable(a[0]) or unknown)])
    return nullable(inner)  # type: ignore[return-value]


def map_key_migrates(saved: SnapshotNode, new: SnapshotNode | None, resolve: Resolve) -> bool:
    """A MapState's map key that is not compatible as is (RocksDB cannot migrate map keys)."""
    old_key = dict(saved.nested).get("key")
    new_key = dict(new.nested).get("key") if new is not None else None
    return old_key is not None and resolve(new_key, old_key, "value.key").result != CompatResult.AS_IS


KEEP_MAP_KEY_TYPE = base.Advice(
    "KEEP_MAP_KEY_TYPE",
    "Keep the map key type of MapState '{state}': RocksDB migrates map values, never map keys.",
    "flink_source",
    False,
    "RocksDBKeyedStateBackend.migrateStateValues: map key compatibility must be as is",
)

FAMILY = Family("composite", compatibility, predict, display)
