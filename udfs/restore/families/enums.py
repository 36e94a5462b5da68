"""Java enums (``EnumSerializer.EnumSerializerSnapshot``): by the names of their constants.

Compatibility: another enum class is incompatible; other constants (added, reordered) need a
reconfigured serializer, which Flink builds. A saved constant the new enum no longer has fails
earlier, while the task reads the saved snapshot itself (``readSnapshot`` looks each constant up
by name): ENUM_CONSTANT_REMOVED, for keys and values alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from udfs.restore.families import base
from udfs.restore.families.base import Compat, CompatResult, Family, Predicting, Resolve, predicted
from udfs.restore.state_inputs import ClassFacts
from udfs.restore.state_kinds import Cause
from udfs.savepoint.serializer_snapshots import SnapshotNode, enum_removed_message, removed_enum_constants
from udfs.savepoint.type_names import ENUM

__all__ = ["FAMILY", "KEEP_ENUM_CONSTANTS", "node_for", "removed_constant", "removed_message"]


def compatibility(new: SnapshotNode, old: SnapshotNode, path: str, resolve: Resolve) -> Compat:
    changed = base.type_class_changed(new, old, path)
    if changed is not None:
        return changed
    a, b = old.enum_constants or (), new.enum_constants or ()
    if a == b:
        return Compat(CompatResult.AS_IS, path)
    return Compat(CompatResult.RECONFIGURED, path, f"enum constants {list(a)} -> {list(b)}")


def node_for(facts: ClassFacts) -> SnapshotNode:
    return predicted(ENUM, "ENUM", facts.name, facts={"enum_constants": list(facts.enum_constants or ())})


def predict(old: SnapshotNode, predicting: Predicting, path: str, depth: int) -> SnapshotNode | None:
    """The new enum's constants; a class that is no longer an enum is what the new jar makes of it."""
    facts = predicting.facts_of(old)
    if facts is not None and facts.kind == "enum":
        if tuple(facts.enum_constants or ()) != tuple(old.enum_constants or ()):
            predicting.change(path, Cause.ENUM_CONSTANTS_CHANGED)
        return replace(old, facts={**old.facts, "enum_constants": list(facts.enum_constants or ())})
    if facts is not None and facts.kind in ("pojo", "generic"):
        predicting.change(path, Cause.ENUM_TO_POJO if facts.kind == "pojo" else Cause.ENUM_TO_GENERIC)
        return predicting.for_class(facts, depth)
    return old


def display(node: SnapshotNode) -> str | None:
    """EnumSerializer prints its class and constants."""
    if node.class_name != ENUM:
        return None
    return f"EnumSerializer{{enumClass=class {node.type_class}, values=[{', '.join(node.enum_constants or ())}]}}"


def removed_constant(node: SnapshotNode, classes: Mapping[str, ClassFacts]) -> SnapshotNode | None:
    """The first enum in a saved tree with a constant the new jar's enum lacks."""
    for n in node.walk():
        facts = classes.get(n.type_class or "") if n.class_name == ENUM else None
        if facts is not None and removed_enum_constants(n, facts.enum_constants):
            return n
    return None


def removed_message(gone: SnapshotNode) -> str:
    return enum_removed_message(gone.type_class)


KEEP_ENUM_CONSTANTS = base.Advice(
    "KEEP_ENUM_CONSTANTS",
    "Keep every saved constant of {enum_class} (mark unused ones @Deprecated); adding and reordering constants "
    "restores.",
    "real_restores",
    False,
    "EnumSerializerSnapshot.readSnapshot throws on a missing constant; Color-add / Color-reorder restored",
)

FAMILY = Family("enum", compatibility, predict, display)
