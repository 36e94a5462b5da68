"""Rows and tuples (``RowSerializerSnapshot``, ``TupleSerializerSnapshot``, Scala case classes, RowData).

Composites whose nested snapshots are their fields in order: Flink's outer check compares the
tuple or case class (``TupleSerializerSnapshot.resolveOuterSchemaCompatibility``), then each field
is resolved as a composite's nested part; a different arity is incompatible. The row kind flag of
Flink 1.11+ Row snapshots is not compared.
"""

from __future__ import annotations

from udfs.restore.families import composite
from udfs.restore.families.base import Compat, Family, Resolve
from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.type_names import FLINK

CLASSES = (
    FLINK + "api.java.typeutils.runtime.RowSerializer$RowSerializerSnapshot",
    FLINK + "api.java.typeutils.runtime.TupleSerializerSnapshot",
    *(
        FLINK + pkg + name
        for pkg in ("api.scala.typeutils.", "table.api.typeutils.")
        for name in ("ScalaCaseClassSerializerSnapshot", "Tuple2CaseClassSerializerSnapshot")
    ),
    FLINK + "table.runtime.typeutils.RowDataSerializer$RowDataSerializerSnapshot",
    FLINK + "table.runtime.typeutils.BaseRowSerializer$BaseRowSerializerSnapshot",
    FLINK + "table.runtime.typeutils.serializers.python.RowDataSerializer$RowDataSerializerSnapshot",
)


def compatibility(new: SnapshotNode, old: SnapshotNode, path: str, resolve: Resolve) -> Compat:
    return composite.outer_compatibility(new, old, path) or composite.nested_compatibility(new, old, path, resolve)


FAMILY = Family("row_tuple", compatibility, composite.predict)
