"""Avro types (``AvroSerializerSnapshot``): specific records and GenericRecord.

Compatibility here is the snapshot's instance check only: another runtime type class is
incompatible, the same one compatible as is. Flink goes further and resolves the saved writer
schema against the new reader schema (Avro's ``SchemaCompatibility``); the exporter gives no
schema of the new job (a GenericRecord's is built in code), so schema changes are not decided
here (docs/state-rules.md lists those cases apart). Avro state whose module the new class path
lacks fails earlier, while the snapshot is read (``SNAPSHOT_CLASS_GONE``, the decision's module
check).
"""

from __future__ import annotations

from udfs.restore.families.base import Compat, CompatResult, Family, Predicting, Resolve, type_class_changed
from udfs.savepoint.serializer_snapshots import SnapshotNode


def compatibility(new: SnapshotNode, old: SnapshotNode, path: str, resolve: Resolve) -> Compat:
    return type_class_changed(new, old, path) or Compat(CompatResult.AS_IS, path)


def predict(old: SnapshotNode, predicting: Predicting, path: str, depth: int) -> SnapshotNode | None:
    return old


FAMILY = Family("avro", compatibility, predict)
