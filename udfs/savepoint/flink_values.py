"""Flink's serializers reading saved values, from the saved serializer snapshots (no JVM).

A restoring task reads saved values with the serializers it restores from the saved snapshots
(``TypeSerializerSnapshot.restoreSerializer``) and the new job's classes. :func:`value_reader`
builds that reader from a snapshot tree (:class:`~udfs.savepoint.serializer_snapshots.SnapshotNode`)
for the serializers state holds: the basic types (``Long``, ``String`` as ``StringValue`` writes
it...), namespaces and windows, timers, POJOs (``PojoSerializer``: a flags byte, then per saved
field a null flag and the value, set into the new class's field), enums, tuples, rows, lists,
maps, ``Nullable``, Flink's TTL wrapper, byte arrays, and Kryo (:mod:`udfs.savepoint.kryo_values`).
Each reads as Flink's does, bytes right or misaligned, and fails as Flink's does (Java's
exceptions in the JDK's words: :mod:`udfs.savepoint.java_read`). A serializer it does not
emulate raises :class:`~udfs.savepoint.java_read.Undecidable` when it is reached.

:class:`Reading` is what one task's reads share: the reading Flink line (``PojoSerializer`` and
Kryo differ between 1.x and 2.x), the new jar's classes, and Kryo's inputs (one per serializer
and input view, as Flink keeps one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from udfs.savepoint.java_read import JAVA_CLASS_NAME, MAX_ALLOCATION, DataInput, JavaError, Undecidable, int32, shl32
from udfs.savepoint.kryo_values import KryoInput, KryoSetup, read_kryo_value, registrations
from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.simple_types import BY_SNAPSHOT, UNBOX
from udfs.savepoint.type_names import KRYO, LIST, MAP, NULLABLE, POJO

__all__ = ["JobClass", "Reading", "ValueReader", "value_reader", "java_class_of", "FIELD_NULL", "FIELD_TYPE"]

ValueReader = Callable[[DataInput], Any]

# java.lang.reflect.Field.set of a value the field cannot take (the JDK's wording)
FIELD_NULL = "Can not set {ftype} field {cls}.{field} to null value"
FIELD_TYPE = "Can not set {ftype} field {cls}.{field} to {vtype}"
_SHORT_STRING = 2048  # StringValue reads shorter strings into a thread-local char[2048]
_ROW = "org.apache.flink.api.java.typeutils.runtime.RowSerializer$RowSerializerSnapshot"
_TUPLE = "org.apache.flink.api.java.typeutils.runtime.TupleSerializerSnapshot"
_TTL = (
    "runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot",
    "runtime.state.v2.ttl.TtlStateFactory$TtlSerializerSnapshot",
)
_TIMER = "org.apache.flink.streaming.api.operators.TimerSerializerSnapshot"
_ENUM = "org.apache.flink.api.common.typeutils.base.EnumSerializer$EnumSerializerSnapshot"
_ASSIGNABLE = {
    "java.lang.Object": None,
    "java.util.List": ("java.util.ArrayList", "java.util.LinkedList"),
    "java.util.Collection": ("java.util.ArrayList", "java.util.LinkedList", "java.util.HashSet"),
    "java.util.Map": ("java.util.HashMap", "java.util.LinkedHashMap"),
}


class JobClass(NamedTuple):
    """A class of the new job's jar as the reader needs it: its kind (pojo, generic, enum, avro),
    its fields (name, Java type) and enum constants."""

    kind: str
    fields: tuple[tuple[str, str], ...] = ()
    enum_constants: tuple[str, ...] | None = None


@dataclass
class Reading:
    """What one task's reads of saved values share. ``major``: the reading Flink line's;
    ``classes``: the new jar's classes by name; ``suspect``: set once a value was read with a
    serializer whose bytes may be misread: from then on the checks Flink runs on what it read
    (a key that is null, a timer's key group) matter and are made."""

    major: int
    classes: Mapping[str, JobClass]
    kryo_inputs: dict[tuple[Any, ...], KryoInput] = field(default_factory=dict)
    suspect: bool = False
    kryo_unknown: str | None = None  # why Kryo's registrations are not the ones modelled (none: they are)

    def resolvable(self, name: str) -> bool:
        """A class name the reader knows to be on the job's class path."""
        return name in self.classes or name in ("java.util.ArrayList", "java.util.HashMap", "java.util.LinkedList",
                                                "java.util.LinkedHashMap") or name in UNBOX  # fmt: skip

    def kryo_input(self, key: tuple[Any, ...], inp: DataInput) -> KryoInput:
        """The KryoSerializer's ``NoFetchingInput``: one per serializer and input view (a view
        Flink points at other bytes, ``DataInputDeserializer.setBuffer``, keeps it, and its
        ``chars`` buffer with it)."""
        k = (*key, inp.view_id)
        got = self.kryo_inputs.get(k)
        if got is None:
            got = self.kryo_inputs[k] = KryoInput(inp, self.major)
        elif got.src is not inp:
            got.src, got.peeked = inp, None
        return got


def java_class_of(node: SnapshotNode) -> str | None:
    """The Java class of the values a saved serializer reads (None when only the bytes say)."""
    simple = BY_SNAPSHOT.get(node.class_name)
    if simple is not None:
        return simple.java
    if node.class_name in (POJO, _ENUM):
        return node.type_class
    if node.class_name == _ROW:
        return "org.apache.flink.types.Row"
    if node.class_name == LIST:
        return "java.util.ArrayList"
    if node.class_name == MAP:
        return "java.util.HashMap"
    return None


def value_reader(node: SnapshotNode, reading: Reading, key: tuple[Any, ...] = ()) -> ValueReader:
    """The reader of the values ``node``'s restored serializer reads; ``key`` names the
    serializer instance (a state and the path to this node) for Kryo's inputs."""
    simple = BY_SNAPSHOT.get(node.class_name)
    if simple is not None:
        return _simple_reader(simple.label)
    name = node.class_name
    parts = {role: n for role, n in node.nested}
    if name == KRYO:
        return _kryo_reader(node, reading, key)
    if name == POJO:
        return _pojo_reader(node, reading, key)
    if name == _ENUM:
        return _enum_reader(node)
    if name == LIST:
        return _list_reader(value_reader(parts["element"], reading, (*key, "element")))
    if name == MAP:
        return _map_reader(value_reader(parts["key"], reading, (*key, "key")),
                           value_reader(parts["value"], reading, (*key, "value")))  # fmt: skip
    if name == NULLABLE:
        return _nullable_reader(value_reader(parts["original"], reading, (*key, "original")),
                                int(node.facts.get("null_padding_length") or 0))  # fmt: skip
    if name in (_TUPLE, _ROW, _TIMER) or name.endswith(_TTL):
        fields = [value_reader(n, reading, (*key, role)) for role, n in node.nested]
        if name == _ROW:
            return _row_reader(fields, bool(node.facts.get("supports_row_kind", True)))
        if name == _TIMER:
            return _timer_reader(fields)
        return _fields_reader(fields)
    return _unsupported(name)


def _unsupported(name: str) -> ValueReader:
    def read(inp: DataInput) -> Any:
        raise Undecidable(f"reading values of {name.rsplit('.', 1)[-1]} is not emulated")

    return read


def read_string_value(inp: DataInput) -> str | None:
    """``StringValue.readString``: a varint length + 1 (0: null), each char a varint."""
    n = inp.read_ubyte()
    if n == 0:
        return None
    n = int32(_varint_rest(inp, n) - 1)
    if n > MAX_ALLOCATION:
        raise Undecidable(f"a String of {n} characters read from misaligned bytes: allocation depends on the heap")
    if n < 0:
        raise JavaError("java.lang.StringIndexOutOfBoundsException", f"offset 0, count {n}, length {_SHORT_STRING}")
    chars = []
    for _ in range(n):
        chars.append(chr(_varint_rest(inp, inp.read_ubyte()) & 0xFFFF))
    return "".join(chars)


def _varint_rest(inp: DataInput, first: int) -> int:
    """StringValue's variable-length int whose first byte is read: 7 bits a byte, high bit set
    while more follow, in Java's int arithmetic."""
    if first < 0x80:
        return first
    n, shift = first & 0x7F, 7
    while (curr := inp.read_ubyte()) >= 0x80:
        n = int32(n | shl32(curr & 0x7F, shift))
        shift += 7
    return int32(n | shl32(curr, shift))


def _byte_array(inp: DataInput) -> bytes:
    n = inp.read_int()
    if n < 0:
        raise JavaError("java.lang.NegativeArraySizeException", str(n))
    if n > MAX_ALLOCATION:
        raise Undecidable(f"a byte[{n}] read from misaligned bytes: allocation depends on the heap")
    return inp.take(n)


_SIMPLE: dict[str, ValueReader] = {
    "Long": DataInput.read_long,
    "Integer": DataInput.read_int,
    "Short": DataInput.read_short,
    "Byte": DataInput.read_byte,
    "Boolean": DataInput.read_boolean,
    "Double": DataInput.read_double,
    "Float": DataInput.read_float,
    "Character": lambda inp: chr(inp.read_ushort()),
    "String": read_string_value,
    "VoidNamespace": DataInput.read_byte,
    "GlobalWindow": DataInput.read_byte,
    "TimeWindow": lambda inp: (inp.read_long(), inp.read_long()),
    "byte[]": _byte_array,
}


def _simple_reader(label: str) -> ValueReader:
    return _SIMPLE.get(label) or _unsupported(label)


def _kryo_reader(node: SnapshotNode, reading: Reading, key: tuple[Any, ...]) -> ValueReader:
    saved = [r.get("name") or r.get("class") for r in node.facts.get("kryo_registrations") or []]
    generic = {n: c.fields for n, c in reading.classes.items() if c.kind == "generic"}
    setup = KryoSetup(reading.major, registrations(reading.major, [str(s) for s in saved]), generic)

    def read(inp: DataInput) -> Any:
        if reading.kryo_unknown:
            raise Undecidable(reading.kryo_unknown)
        return read_kryo_value(setup, reading.kryo_input(key, inp), reading.resolvable)

    return read


def _enum_reader(node: SnapshotNode) -> ValueReader:
    constants = list(node.facts.get("enum_constants") or ())

    def read(inp: DataInput) -> Any:
        i = inp.read_int()
        if not 0 <= i < len(constants):
            raise JavaError("java.lang.ArrayIndexOutOfBoundsException", f"Index {i} out of bounds for length "
                            f"{len(constants)}")  # fmt: skip
        return constants[i]

    return read


def _list_reader(element: ValueReader) -> ValueReader:
    def read(inp: DataInput) -> list[Any]:
        n = inp.read_int()
        if int32(n + 1) < 0:
            raise JavaError("java.lang.IllegalArgumentException", f"Illegal Capacity: {int32(n + 1)}")
        if n > MAX_ALLOCATION:
            raise Undecidable(f"a list of {n} elements read from misaligned bytes: allocation depends on the heap")
        return [element(inp) for _ in range(n)]

    return read


def _map_reader(k: ValueReader, v: ValueReader) -> ValueReader:
    def read(inp: DataInput) -> dict[Any, Any]:
        n = inp.read_int()
        if n < 0:  # CollectionUtil.newHashMapWithExpectedSize: checkArgument(expectedSize >= 0)
            raise JavaError("java.lang.IllegalArgumentException", None)
        out: dict[Any, Any] = {}
        for _ in range(n):
            key = k(inp)
            out[repr(key)] = None if inp.read_boolean() else v(inp)
        return out

    return read


def _nullable_reader(original: ValueReader, padding: int) -> ValueReader:
    def read(inp: DataInput) -> Any:
        if inp.read_boolean():
            inp.skip(padding)
            return None
        return original(inp)

    return read


def _fields_reader(fields: list[ValueReader]) -> ValueReader:
    """A tuple, Flink's TTL wrapper (timestamp, value): each field in turn, no null flags."""

    def read(inp: DataInput) -> tuple[Any, ...]:
        return tuple(f(inp) for f in fields)

    return read


def _row_reader(fields: list[ValueReader], kind: bool) -> ValueReader:
    """``RowSerializer``: a null mask (the row kind's two bits first), then the non-null fields."""
    offset = 2 if kind else 0
    bits = offset + len(fields)

    def read(inp: DataInput) -> tuple[Any, ...]:
        mask = [bool((b >> (7 - i)) & 1) for _ in range((bits + 7) // 8) for b in [inp.read_ubyte()] for i in range(8)]
        return tuple(None if mask[offset + i] else f(inp) for i, f in enumerate(fields))

    return read


def _timer_reader(fields: list[ValueReader]) -> ValueReader:
    """``TimerSerializer``: the timestamp with its sign bit flipped, the key, the namespace."""
    key, namespace = fields

    def read(inp: DataInput) -> tuple[Any, ...]:
        return inp.read_long() ^ (-(1 << 63)), key(inp), namespace(inp)

    return read


def _pojo_reader(node: SnapshotNode, reading: Reading, key: tuple[Any, ...]) -> ValueReader:
    """``PojoSerializer.deserialize`` of the restored serializer: the saved fields in their saved
    order, each set into the new class's field of that name (a field the class lost is read and
    dropped)."""
    cls = node.type_class or "?"
    saved = [(f.name, f.snapshot) for f in node.fields]
    readers = [value_reader(s, reading, (*key, "fields", n)) if s is not None else _unsupported(cls) for n, s in saved]
    registered = len(node.facts.get("registered_subclasses") or ())

    def read(inp: DataInput) -> Any:
        flags = inp.read_byte()
        if flags & 1:
            return None
        if flags & 4:
            name = inp.read_utf()
            raise _subclass(name, reading)
        if flags & 8:
            tag = inp.read_byte()
            if not 0 <= tag < registered:
                raise JavaError("java.lang.ArrayIndexOutOfBoundsException",
                                f"Index {tag} out of bounds for length {registered}")  # fmt: skip
            raise Undecidable(f"a value of a registered subclass of {cls} (not emulated)")
        if not flags & 2:
            if reading.major >= 2:
                raise JavaError("java.lang.RuntimeException", "Unknown POJO flags, this should not happen.")
            return {"@class": cls}
        obj: dict[str, Any] = {"@class": cls}
        for (fname, snap), r in zip(saved, readers, strict=True):
            value = None if inp.read_boolean() else r(inp)
            _field_set(reading, cls, fname, value, snap)
            obj[fname] = value
        return obj

    return read


def _subclass(name: str, reading: Reading) -> Exception:
    """A subclass named in the bytes: ``Class.forName`` fails for a name that is no class name."""
    if not JAVA_CLASS_NAME.fullmatch(name):
        return JavaError("java.lang.ClassNotFoundException", name)
    return Undecidable(f"a POJO subclass named {name} in the bytes (whether the class path holds it is not known)")


def _field_set(reading: Reading, cls: str, fname: str, value: Any, snap: SnapshotNode | None) -> None:
    """``Field.set`` into the new class: a null into a primitive, a value of another class."""
    facts = reading.classes.get(cls)
    ftype = next((t for n, t in facts.fields if n == fname), None) if facts is not None else None
    if facts is None:
        if reading.suspect:
            raise Undecidable(f"the new job's class {cls} is not described: Field.set is not checked")
        return
    if ftype is None:
        return  # a field the class lost: read and dropped
    ftype = {"String": "java.lang.String"}.get(ftype, ftype)
    if value is None:
        if ftype in UNBOX.values():
            raise JavaError("java.lang.IllegalArgumentException", FIELD_NULL.format(ftype=ftype, cls=cls, field=fname))
        return
    vtype = java_class_of(snap) if snap is not None else None
    if vtype is None or _assignable(ftype.split("<")[0], vtype):
        return
    raise JavaError("java.lang.IllegalArgumentException", FIELD_TYPE.format(ftype=ftype, cls=cls, field=fname,
                                                                            vtype=vtype))  # fmt: skip


def _assignable(ftype: str, vtype: str) -> bool:
    if ftype == vtype or UNBOX.get(vtype) == ftype:
        return True
    allowed = _ASSIGNABLE.get(ftype, ())
    return allowed is None or vtype in allowed
