"""Simple types (``SimpleTypeSerializerSnapshot``): Long, String, int[], Instant, VoidNamespace...

A simple snapshot is its class: two of the same class are compatible as is, whatever the job
(``SimpleTypeSerializerSnapshot.resolveSchemaCompatibility`` checks the class only). The types
and their Java classes are one table, :mod:`udfs.savepoint.simple_types`, which the reader uses
too.
"""

from __future__ import annotations

from udfs.restore.families.base import Compat, CompatResult, Family, Predicting, Resolve, predicted, serializer_class
from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.simple_types import ARRAY_OF, BY_JAVA, BY_SNAPSHOT, SimpleType

SIMPLE = "SIMPLE"


def compatibility(new: SnapshotNode, old: SnapshotNode, path: str, resolve: Resolve) -> Compat:
    return Compat(CompatResult.AS_IS, path)


def predict(old: SnapshotNode, predicting: Predicting, path: str, depth: int) -> SnapshotNode | None:
    return old


def display(node: SnapshotNode) -> str | None:
    """Tuple0Serializer prints its name, not ``Class@hash``."""
    return "Tuple0Serializer" if serializer_class(node.class_name).endswith("Tuple0Serializer") else None


def _node(t: SimpleType | None) -> SnapshotNode | None:
    return predicted(t.snapshot, SIMPLE) if t is not None else None


def for_java_type(name: str) -> SnapshotNode | None:
    """The simple snapshot Flink extracts for a (resolved) Java type, None for any other type."""
    return _node(BY_JAVA.get(name))


def array_of(component: str) -> SnapshotNode | None:
    """The array serializer Flink extracts for ``component[]`` (primitives and String only)."""
    return _node(ARRAY_OF.get(component))


def value_class(node: SnapshotNode) -> str | None:
    """The java.lang class of the values a saved simple serializer reads back (None: another)."""
    t = BY_SNAPSHOT.get(node.class_name) if node.kind == SIMPLE else None
    return t.java if t is not None and t.java and t.java.startswith("java.lang.") else None


FAMILY = Family("simple", compatibility, predict, display)
