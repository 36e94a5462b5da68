"""Flink's ``LogicalType`` and ``DataType`` objects, Java-serialized inside SQL serializer snapshots, as text.

The table runtime's snapshots (RowData, ArrayData, MapData, External) keep each field's logical
type as a Java-serialized object; the snapshot reader shows them as SQL-like text
(``BIGINT NOT NULL``, ``VARCHAR(10)``, ``ROW<a INT, b STRING>``) so a state's type reads as the
user declared it.
"""

from __future__ import annotations

from udfs.savepoint.java_objects import JArray, JClass, JEnum, JObject, class_name_of, short_class

_ROOT_NAMES = {
    "CHAR": "CHAR",
    "VARCHAR": "VARCHAR",
    "BOOLEAN": "BOOLEAN",
    "BINARY": "BINARY",
    "VARBINARY": "VARBINARY",
    "DECIMAL": "DECIMAL",
    "TINYINT": "TINYINT",
    "SMALLINT": "SMALLINT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "DATE": "DATE",
    "TIME_WITHOUT_TIME_ZONE": "TIME",
    "TIMESTAMP_WITHOUT_TIME_ZONE": "TIMESTAMP",
    "TIMESTAMP_WITH_TIME_ZONE": "TIMESTAMP WITH TIME ZONE",
    "TIMESTAMP_WITH_LOCAL_TIME_ZONE": "TIMESTAMP_LTZ",
    "INTERVAL_YEAR_MONTH": "INTERVAL YEAR TO MONTH",
    "INTERVAL_DAY_TIME": "INTERVAL DAY TO SECOND",
    "ARRAY": "ARRAY",
    "MULTISET": "MULTISET",
    "MAP": "MAP",
    "ROW": "ROW",
    "DISTINCT_TYPE": "DISTINCT",
    "STRUCTURED_TYPE": "STRUCTURED",
    "NULL": "NULL",
    "RAW": "RAW",
    "SYMBOL": "SYMBOL",
    "UNRESOLVED": "UNRESOLVED",
    "VARIANT": "VARIANT",
    "DESCRIPTOR": "DESCRIPTOR",
}
MAX_JAVA_STRING = 2147483647


def _list_items(obj: object, depth: int = 0) -> list[object]:
    """The elements of a serialized java.util list (ArrayList, Collections.unmodifiableList...)."""
    if depth > 4:
        return []
    if isinstance(obj, JArray):
        return list(obj.items or [])
    if isinstance(obj, JObject):
        if obj.class_name in ("java.util.ArrayList", "java.util.LinkedList", "java.util.Arrays$ArrayList"):
            items = [a for a in obj.annotations if not hasattr(a, "data")]
            if obj.class_name == "java.util.Arrays$ArrayList":
                return _list_items(obj.fields.get("a"), depth + 1)
            return items
        for key in ("list", "c"):
            if key in obj.fields:
                return _list_items(obj.fields[key], depth + 1)
    return []


def describe_logical_type(obj: object, depth: int = 0) -> str:
    """A Java-serialized Flink ``LogicalType`` as SQL-like text (``BIGINT NOT NULL``,
    ``VARCHAR(10)``, ``STRING``, ``ROW<a INT, b STRING>``); unknown shapes by class name."""
    if depth > 16:
        return "..."
    if not isinstance(obj, JObject):
        return class_name_of(obj) or "null"
    f = obj.fields
    root = f.get("typeRoot")
    root_name = root.constant if isinstance(root, JEnum) else None
    base = _ROOT_NAMES.get(root_name or "", short_class(obj.class_name).removesuffix("Type").upper())
    if root_name in ("VARCHAR", "CHAR", "BINARY", "VARBINARY") and isinstance(f.get("length"), int):
        if root_name == "VARCHAR" and f["length"] == MAX_JAVA_STRING:
            base = "STRING"
        elif root_name == "VARBINARY" and f["length"] == MAX_JAVA_STRING:
            base = "BYTES"
        else:
            base = f"{base}({f['length']})"
    elif root_name == "DECIMAL":
        base = f"DECIMAL({f.get('precision')}, {f.get('scale')})"
    elif root_name and root_name.startswith(("TIMESTAMP", "TIME_")) and isinstance(f.get("precision"), int):
        base = f"{base}({f['precision']})"
    elif root_name in ("ARRAY", "MULTISET"):
        base = f"{base}<{describe_logical_type(f.get('elementType'), depth + 1)}>"
    elif root_name == "MAP":
        k = describe_logical_type(f.get("keyType"), depth + 1)
        v = describe_logical_type(f.get("valueType"), depth + 1)
        base = f"MAP<{k}, {v}>"
    elif root_name == "ROW":
        parts = []
        for rf in _list_items(f.get("fields")):
            if isinstance(rf, JObject):
                parts.append(f"{rf.fields.get('name')} {describe_logical_type(rf.fields.get('type'), depth + 1)}")
        base = f"ROW<{', '.join(parts)}>"
    elif root_name == "RAW":
        clazz = f.get("clazz")
        base = f"RAW({clazz.name if isinstance(clazz, JClass) else '?'})"
    elif root_name in ("STRUCTURED_TYPE", "DISTINCT_TYPE"):
        ident = f.get("objectIdentifier") or f.get("implementationClass")
        base = f"{base}({class_name_of(ident) if not isinstance(ident, str) else ident})"
    if f.get("isNullable") is False:
        base += " NOT NULL"
    return base


def describe_data_type(obj: object) -> str:
    """A Java-serialized ``DataType`` (ExternalSerializer): its logical type and conversion class."""
    if isinstance(obj, JObject):
        lt = obj.fields.get("logicalType")
        conv = obj.fields.get("conversionClass")
        text = describe_logical_type(lt)
        if isinstance(conv, JClass):
            text += f" (as {conv.name})"
        return text
    return class_name_of(obj) or "null"
