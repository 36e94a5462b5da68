"""Avro types (``AvroSerializerSnapshot``): specific records and GenericRecord.

Compatibility is Flink's (flink-avro 1.15 - 2.3, ``AvroSerializerSnapshot.resolveSchemaCompatibility``):
only another snapshot class is incompatible outright; the saved (writer) schema and the new
(reader) schema decide: equal, compatible as is; readable under Avro's own rules
(:mod:`udfs.restore.avro_schema`), compatible after migration; else incompatible. The runtime type
is not compared. The new schema comes from the new job's declared serializer
(``declared_states``); without it the saved serializer is predicted unchanged.

After migration each backend does its own thing: a heap backend keeps the restored records as they
were read (with the writer's schema), RocksDB rewrites every value at registration, reading it
with the saved serializer and writing it with the new one. For GenericRecord that rewrite writes
the new schema's fields by position from the old record (``GenericDatumWriter`` ->
``GenericData.Record.get(pos)``), so a reader schema with more fields than the writer's fails on
the first position the old record lacks (:func:`rocksdb_migration_failure`; seen on 1.20.5 and
2.3.0: ``ArrayIndexOutOfBoundsException: Index 2 out of bounds for length 2`` for one field added
with a default). Avro state whose module the new class path lacks fails earlier, while the
snapshot is read (``SNAPSHOT_CLASS_GONE``, the decision's module check).
"""

from __future__ import annotations

import json
from typing import Any

from udfs.restore import avro_schema
from udfs.restore.families.base import Compat, CompatResult, Family, Predicting, Resolve, serializer_class
from udfs.savepoint.serializer_snapshots import SnapshotNode

GENERIC_RECORD = "org.apache.avro.generic.GenericRecord"
AIOOBE = "java.lang.ArrayIndexOutOfBoundsException"
AIOOBE_MESSAGE = "Index {index} out of bounds for length {length}"


def _canonical(schema: Any) -> str:
    """A schema as Avro's ``Schema.equals`` compares it: documentation aside, key order aside."""

    def strip(s: Any) -> Any:
        if isinstance(s, dict):
            return {k: strip(v) for k, v in s.items() if k != "doc"}
        if isinstance(s, list):
            return [strip(v) for v in s]
        return s

    return json.dumps(strip(schema), sort_keys=True)


def schemas(new: SnapshotNode, old: SnapshotNode) -> tuple[Any, Any]:
    """(reader, writer) schemas of two Avro snapshots (None where a snapshot holds none)."""
    return avro_schema.parse(new.facts.get("schema")), avro_schema.parse(old.facts.get("schema"))


def compatibility(new: SnapshotNode, old: SnapshotNode, path: str, resolve: Resolve) -> Compat:
    if new.facts.get("schema") == old.facts.get("schema"):
        return Compat(CompatResult.AS_IS, path)  # the same schema (the saved one, as the old rules predict)
    reader, writer = schemas(new, old)
    if reader is None or writer is None:
        return Compat(CompatResult.UNKNOWN, path, "an Avro snapshot without a readable schema")
    if _canonical(reader) == _canonical(writer):
        return Compat(CompatResult.AS_IS, path)
    found = avro_schema.check(reader, writer)
    if found.compatible:
        return Compat(CompatResult.AFTER_MIGRATION, path, "Avro schema evolved (readable by Avro's rules)")
    return Compat(CompatResult.INCOMPATIBLE, path, f"Avro schema: {found.why} at {found.location or '/'}")


def predict(old: SnapshotNode, predicting: Predicting, path: str, depth: int) -> SnapshotNode | None:
    return old


def rocksdb_migration_failure(new: SnapshotNode, old: SnapshotNode) -> tuple[str, bool] | None:
    """RocksDB migrating GenericRecord values to a reader schema with more fields: (Java's message,
    certain). Certain when the reader's first fields are the writer's, in order (the record's
    array is then read past its end at the first new field); another field order migrates values
    by position, whose outcome depends on the types met."""
    if old.type_class != GENERIC_RECORD:
        return None
    reader, writer = schemas(new, old)
    r, w = avro_schema.record_field_names(reader), avro_schema.record_field_names(writer)
    if len(r) <= len(w) or not w:
        return None
    certain = r[: len(w)] == w
    return AIOOBE_MESSAGE.format(index=len(w), length=len(w)), certain


def dropped_fields(new: SnapshotNode, old: SnapshotNode) -> list[str]:
    """The saved records' fields the new schema has no field for (skipped when read: lost)."""
    reader, writer = schemas(new, old)
    if reader is None or writer is None:
        return []
    return avro_schema.dropped_fields(reader, writer)


def display(node: SnapshotNode) -> str | None:
    """``AvroSerializer.toString()``: its class and runtime type (``... (org.apache.avro.generic.GenericRecord)``)."""
    return f"{serializer_class(node.class_name)} ({node.type_class})" if node.type_class else None


FAMILY = Family("avro", compatibility, predict, display)
