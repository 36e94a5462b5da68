"""The simple serializer snapshots, one table for reading them and for deciding with them.

A simple snapshot (``SimpleTypeSerializerSnapshot`` and its kin) has no payload worth keeping:
its class says everything. The reader (:mod:`udfs.savepoint.serializer_snapshots`) registers
each row's class with its label; the state rules (:mod:`udfs.restore.families.simple`) predict
the snapshot Flink's type extraction gives a Java type from the same rows, and know which Java
class the values it reads back are. A row's ``java`` is set only for the types the rules model
(the boxed primitives, String, BigDecimal / BigInteger and the date-time classes); the others
are read and shown, never predicted.
"""

from __future__ import annotations

from dataclasses import dataclass

from udfs.savepoint.type_names import FLINK, TYPEUTILS_BASE


@dataclass(frozen=True)
class SimpleType:
    """One simple snapshot class: ``label`` its type text; ``java`` the Java class of its values
    and ``primitive`` the primitive that boxes to it (when the rules model the type);
    ``component`` an array serializer's element type."""

    snapshot: str
    label: str
    java: str | None = None
    primitive: str | None = None
    component: str | None = None


def _base(stem: str, label: str, java: str | None = None, primitive: str | None = None) -> SimpleType:
    """flink-core's ``<stem>Serializer$<stem>SerializerSnapshot`` in the typeutils base package."""
    return SimpleType(f"{TYPEUTILS_BASE}{stem}Serializer${stem}SerializerSnapshot", label, java, primitive)


def _array(stem: str, component: str, label: str) -> SimpleType:
    return SimpleType(f"{TYPEUTILS_BASE}array.{stem}Serializer${stem}SerializerSnapshot", label, component=component)


_PRIMITIVE_STEMS = {
    "Boolean": "boolean",
    "Byte": "byte",
    "Char": "char",
    "Double": "double",
    "Float": "float",
    "Int": "int",
    "Long": "long",
    "Short": "short",
}

SIMPLE_TYPES: tuple[SimpleType, ...] = (
    _base("BigDec", "BigDecimal", "java.math.BigDecimal"),
    _base("BigInt", "BigInteger", "java.math.BigInteger"),
    _base("Boolean", "Boolean", "java.lang.Boolean", "boolean"),
    _base("BooleanValue", "BooleanValue"),
    _base("Byte", "Byte", "java.lang.Byte", "byte"),
    _base("ByteValue", "ByteValue"),
    _base("Char", "Character", "java.lang.Character", "char"),
    _base("CharValue", "CharValue"),
    _base("Date", "Date", "java.util.Date"),
    _base("Double", "Double", "java.lang.Double", "double"),
    _base("DoubleValue", "DoubleValue"),
    _base("Float", "Float", "java.lang.Float", "float"),
    _base("FloatValue", "FloatValue"),
    _base("Instant", "Instant", "java.time.Instant"),
    _base("Int", "Integer", "java.lang.Integer", "int"),
    _base("IntValue", "IntValue"),
    _base("LocalDate", "LocalDate", "java.time.LocalDate"),
    _base("LocalDateTime", "LocalDateTime", "java.time.LocalDateTime"),
    _base("LocalTime", "LocalTime", "java.time.LocalTime"),
    _base("Long", "Long", "java.lang.Long", "long"),
    _base("LongValue", "LongValue"),
    _base("NullValue", "NullValue"),
    _base("Short", "Short", "java.lang.Short", "short"),
    _base("ShortValue", "ShortValue"),
    _base("SqlDate", "java.sql.Date"),
    _base("SqlTime", "java.sql.Time"),
    _base("SqlTimestamp", "java.sql.Timestamp"),
    _base("String", "String", "java.lang.String"),
    _base("StringValue", "StringValue"),
    _base("Void", "Void"),
    # Flink 2.1+ (VARIANT) and newer flink-core types seen in apache/flink's index
    _base("Variant", "Variant"),
    _base("Bitmap", "Bitmap"),
    _base("Uuid", "UUID"),
    *(_array(f"{s}PrimitiveArray", p, f"{p}[]") for s, p in _PRIMITIVE_STEMS.items()),
    _array("StringArray", "java.lang.String", "String[]"),
    *(
        SimpleType(FLINK + name, label)
        for name, label in {
            "api.java.typeutils.runtime.Tuple0SerializerSnapshot": "Tuple0",
            "runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot": "VoidNamespace",
            "queryablestate.client.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot": "VoidNamespace",
            "runtime.state.JavaSerializer$JavaSerializerSnapshot": "JavaSerialized",
            "streaming.api.windowing.windows.TimeWindow$Serializer$TimeWindowSerializerSnapshot": "TimeWindow",
            "streaming.api.windowing.windows.GlobalWindow$Serializer$GlobalWindowSerializerSnapshot": "GlobalWindow",
            "streaming.api.utils.ByteArrayWrapperSerializer$ByteArrayWrapperSerializerSnapshot": "ByteArrayWrapper",
            "cep.nfa.DeweyNumber$DeweyNumberSerializer$DeweyNumberSerializerSnapshot": "DeweyNumber",
            "cep.nfa.sharedbuffer.EventId$EventIdSerializer$EventIdSerializerSnapshot": "EventId",
            "table.dataview.NullSerializer$NullSerializerSnapshot": "Null",
            "table.runtime.operators.window.CountWindow$Serializer$CountWindowSerializerSnapshot": "CountWindow",
            "table.runtime.operators.window.TimeWindow$Serializer$TimeWindowSerializerSnapshot": "TimeWindow",
            "table.runtime.typeutils.StringDataSerializer$StringDataSerializerSnapshot": "StringData",
            "table.runtime.typeutils.BinaryStringSerializer$BinaryStringSerializerSnapshot": "BinaryString",
            "table.runtime.typeutils.serializers.python.BigDecSerializer$BigDecSerializerSnapshot": "BigDecimal",
            "table.runtime.typeutils.serializers.python.DateSerializer$DateSerializerSnapshot": "java.sql.Date",
            "table.runtime.typeutils.serializers.python.StringSerializer$StringSerializerSnapshot": "String",
            "table.runtime.typeutils.serializers.python.TimeSerializer$TimeSerializerSnapshot": "java.sql.Time",
            "api.scala.typeutils.UnitSerializer$UnitSerializerSnapshot": "Unit",
            "api.scala.typeutils.NothingSerializerSnapshot": "Nothing",
            "table.api.typeutils.UnitSerializer$UnitSerializerSnapshot": "Unit",
            "table.api.typeutils.NothingSerializerSnapshot": "Nothing",
            "graph.drivers.transform.LongValueWithProperHashCode$LongValueWithProperHashCodeSerializer"
            "$LongValueWithProperHashCodeSerializerSnapshot": "LongValueWithProperHashCode",
        }.items()
    ),
    *(
        SimpleType(f"{FLINK}graph.types.valuearray.{stem}ArraySerializer${stem}ArraySerializerSnapshot", f"{stem}Array")
        for stem in (
            "ByteValue",
            "CharValue",
            "DoubleValue",
            "FloatValue",
            "IntValue",
            "LongValue",
            "NullValue",
            "ShortValue",
            "StringValue",
        )
    ),
    *(
        SimpleType(
            f"{FLINK}streaming.connectors.kafka.{producer}${inner}Serializer${inner}SerializerSnapshot", f"Kafka{inner}"
        )
        for producer in ("FlinkKafkaProducer", "FlinkKafkaProducer011")
        for inner in ("ContextState", "NextTransactionalIdHint", "TransactionState")
    ),
)

BY_SNAPSHOT: dict[str, SimpleType] = {t.snapshot: t for t in SIMPLE_TYPES}
# a Java type as written in a class (``long``, ``java.lang.Long``) -> the simple type Flink extracts for it
BY_JAVA: dict[str, SimpleType] = {
    name: t for t in SIMPLE_TYPES if t.java for name in (t.java, t.primitive) if name is not None
}
ARRAY_OF: dict[str, SimpleType] = {t.component: t for t in SIMPLE_TYPES if t.component}
PRIMITIVES = frozenset(t.primitive for t in SIMPLE_TYPES if t.primitive)
UNBOX: dict[str, str] = {t.java: t.primitive for t in SIMPLE_TYPES if t.java and t.primitive}
