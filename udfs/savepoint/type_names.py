"""Class names the snapshot reader and the state rules both speak of, each spelled once.

Flink's package prefix, the snapshot classes the rules build predicted serializers from, and the
``java.util`` collection interfaces whose serializer changed between Flink 1.x (Kryo) and 2.x.
"""

from __future__ import annotations

FLINK = "org.apache.flink."
TYPEUTILS_BASE = FLINK + "api.common.typeutils.base."  # flink-core's basic serializers
_RUNTIME = FLINK + "api.java.typeutils.runtime."

KRYO = _RUNTIME + "kryo.KryoSerializerSnapshot"
POJO = _RUNTIME + "PojoSerializerSnapshot"
NULLABLE = _RUNTIME + "NullableSerializer$NullableSerializerSnapshot"
ENUM = TYPEUTILS_BASE + "EnumSerializer$EnumSerializerSnapshot"
LIST = TYPEUTILS_BASE + "ListSerializerSnapshot"
MAP = TYPEUTILS_BASE + "MapSerializerSnapshot"
SET = TYPEUTILS_BASE + "SetSerializerSnapshot"

# The collection interfaces Flink 2.x extracts its own serializers for (List, Map, Set and their
# super-interface Collection, declared with type arguments), where Flink 1.x used Kryo.
COLLECTION_INTERFACES = ("java.util.List", "java.util.Map", "java.util.Set", "java.util.Collection")
