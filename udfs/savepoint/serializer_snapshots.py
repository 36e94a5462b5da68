"""Read Flink's serializer snapshots (the TYPES of saved state) into small readable trees.

Flink writes a serializer snapshot with ``TypeSerializerSnapshot.writeVersionedSnapshot``: the
snapshot's class name (``writeUTF``), its version (int), then the snapshot's own payload with
no length prefix. Reading past one snapshot therefore needs the payload layout of its class,
so this module is a registry: one entry per snapshot class Flink 1.9 - 2.3 ships (core,
streaming, runtime, table runtime, CEP, Scala, Avro, Kryo, Python, the connectors that lived in
Flink's tree), each naming a reader that dispatches on the version where the layout changed.
A new class is one entry. The layouts are transcribed from each class's ``readSnapshot`` /
``readOuterSnapshot`` in Flink's sources at release-1.9.3 and release-1.12.2, the 1.16 and
1.20 development lines and the 2.0 development line (Nov 2024), plus the 2.1+ flink-core
serializers in apache/flink's index (each entry's ``since``); docs/state-meta.md says how
they were checked against bytes Flink wrote.

Shared building blocks, as in Flink:

* ``SimpleTypeSerializerSnapshot`` (version 3: no payload; version 2: one UTF string);
* ``CompositeTypeSerializerSnapshot`` (version 3: magic 911108, outer version, the class's
  outer payload, then ``NestedSerializersSnapshotDelegate``: magic 1333245, version 1, a
  count and each nested versioned snapshot; versions 1-2: the legacy form without the magic,
  the outer payload read with the snapshot version);
* ``GenericTypeSerializerSnapshot`` (one UTF class name);
* ``LinkedOptionalMapSerializer`` maps (POJO fields, Kryo registrations): header long, count,
  then per entry a key name, and key and value each as an optional length-prefixed frame.
  Frames are the one place an unknown snapshot can be stepped over (Flink itself logs and
  keeps ``null`` when a frame cannot be read).

An unknown class (a user's own snapshot) cannot be stepped over anywhere else: it comes back as
an ``UNKNOWN`` node with the bytes that follow it, every enclosing node is marked incomplete
and :func:`read_versioned_snapshot` tells the caller that the stream cannot be read further.
Malformed or truncated bytes raise :class:`StateMetaError` (and nothing else).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from udfs.savepoint.binary import Reader, StateMetaError
from udfs.savepoint.java_objects import class_name_of, read_object_stream
from udfs.savepoint.logical_types import describe_data_type, describe_logical_type
from udfs.savepoint.simple_types import SIMPLE_TYPES
from udfs.savepoint.type_names import COLLECTION_INTERFACES, ENUM, FLINK, KRYO, LIST, MAP, NULLABLE, POJO, SET

COMPOSITE_MAGIC = 911108  # CompositeTypeSerializerSnapshot.MAGIC_NUMBER
NESTED_MAGIC = 1333245  # NestedSerializersSnapshotDelegate.MAGIC_NUMBER
NESTED_VERSION = 1
OPTIONAL_MAP_HEADER = 0x4F2C69A3D70  # LinkedOptionalMapSerializer.HEADER
ADAPTER_VERSION = 0x7A53C4F0  # TypeSerializerConfigSnapshot.ADAPTER_VERSION (Flink <= 1.16)
SNAPSHOT_PROXY_VERSION = 2  # TypeSerializerSnapshotSerializationUtil's proxy, Flink 1.7+

KRYO_REGISTRATION_TYPES = ("UNSPECIFIED", "CLASS", "INSTANCE")  # KryoRegistration.SerializerDefinitionType


# ------------------------------------------------------------------------------------------------
#  The tree
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PojoField:
    """One entry of ``PojoSerializerSnapshotData``'s field map, as written.

    ``name`` is the entry's key name (the field name); ``declaring_class`` is None when the
    writer had no field object for it (a field already missing when the snapshot was written);
    ``snapshot`` is None when no serializer snapshot was written or it could not be read."""

    name: str
    declaring_class: str | None
    snapshot: SnapshotNode | None


@dataclass(frozen=True)
class SnapshotNode:
    """One serializer snapshot: its class, version, what its payload says, nested snapshots.

    ``kind``: SIMPLE, COMPOSITE, GENERIC, POJO, KRYO, ENUM, AVRO, ... (the registry entry's
    family), LEGACY_CONFIG (a pre-1.7 ``TypeSerializerConfigSnapshot``) or UNKNOWN (a class
    this reader does not know; ``raw`` then holds the bytes that followed its version).
    ``nested`` lists (role, snapshot) in the order Flink wrote them (role names follow the
    serializer: "key"/"value", "element", "f0".., "field0"..). ``facts`` holds the rest of the
    payload: POJO subclasses, Kryo registrations and default serializers, the Avro schema, enum
    constants, SQL logical types... ``complete`` is False when reading stopped inside this
    node (an UNKNOWN below it, outside any frame)."""

    class_name: str
    version: int
    kind: str
    type_class: str | None = None
    nested: tuple[tuple[str, SnapshotNode], ...] = ()
    fields: tuple[PojoField, ...] = ()
    facts: dict = field(default_factory=dict, hash=False)
    raw: bytes = b""
    offset: int = 0
    end: int = 0
    complete: bool = True

    # -- walks -----------------------------------------------------------------------------

    def children(self) -> Iterator[SnapshotNode]:
        """Every directly nested snapshot: nested roles, POJO fields, POJO subclasses, TTL..."""
        for _, n in self.nested:
            yield n
        for f in self.fields:
            if f.snapshot is not None:
                yield f.snapshot
        for key in ("registered_subclasses", "non_registered_subclasses"):
            for _, n in self.facts.get(key, ()):
                if isinstance(n, SnapshotNode):
                    yield n

    def walk(self) -> Iterator[SnapshotNode]:
        stack = [self]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(reversed(list(n.children())))

    @property
    def is_kryo(self) -> bool:
        """Kryo serializes this node's values (a generic type: Flink's KryoSerializer)."""
        return self.class_name == KRYO or self.kind == "KRYO"

    @property
    def is_kryo_collection(self) -> bool:
        """Kryo holds a ``java.util`` collection interface here: what Flink 2.x gives serializers
        of its own, so a 1.x savepoint's values of it meet another serializer on 2.x."""
        return self.is_kryo and self.type_class in COLLECTION_INTERFACES

    @property
    def uses_kryo(self) -> bool:
        """True when Kryo serializes any part of this type (a generic type anywhere inside)."""
        return any(n.is_kryo for n in self.walk())

    @property
    def has_unknown(self) -> bool:
        return any(n.kind == "UNKNOWN" for n in self.walk())

    @property
    def enum_constants(self) -> tuple[str, ...] | None:
        c = self.facts.get("enum_constants")
        return tuple(c) if c is not None else None

    # -- readable forms ----------------------------------------------------------------------

    @property
    def type_text(self) -> str:
        """One line: ``Tuple2<Long, String>``, ``POJO a.B{x: Long, y: List<String>}``, ``Kryo(a.C)``."""
        return _text(self, 0)

    def to_dict(self) -> dict:
        """The tree in the shape the statetypes vectors record Flink's own reading in:
        ``{class, type_class?, nested?, fields?, enum_constants?}`` (extra facts are left out;
        see :meth:`describe` for everything)."""
        d: dict = {"class": self.class_name}
        if self.type_class is not None:
            d["type_class"] = self.type_class
        if self.kind in COMPOSITE_KINDS or self.nested:
            d["nested"] = [n.to_dict() for _, n in self.nested]
        if self.kind == "POJO":
            d["fields"] = [
                {"name": f.name, "serializer": f.snapshot.to_dict() if f.snapshot is not None else None}
                for f in self.fields
            ]
        if self.enum_constants is not None and self.kind == "ENUM":
            d["enum_constants"] = list(self.enum_constants)
        return d

    def describe(self) -> dict:
        """Everything read, JSON-friendly (raw bytes as their length)."""
        d = self.to_dict()
        d.update(version=self.version, kind=self.kind, text=self.type_text)
        if self.nested:
            d["nested"] = [dict(n.describe(), role=role) for role, n in self.nested]
        if self.fields:
            d["fields"] = [
                {
                    "name": f.name,
                    "declaring_class": f.declaring_class,
                    "serializer": f.snapshot.describe() if f.snapshot is not None else None,
                }
                for f in self.fields
            ]
        facts = {}
        for k, v in self.facts.items():
            if k in ("registered_subclasses", "non_registered_subclasses"):
                v = [[c, n.describe() if isinstance(n, SnapshotNode) else None] for c, n in v]
            facts[k] = v
        if facts:
            d["facts"] = facts
        if self.raw:
            d["raw_bytes"] = len(self.raw)
        if not self.complete:
            d["complete"] = False
        return d


COMPOSITE_KINDS = frozenset({"COMPOSITE"})


# ------------------------------------------------------------------------------------------------
#  Reading
# ------------------------------------------------------------------------------------------------


class _Stop(Exception):
    """Reading cannot go on past an unknown snapshot; carries the partial tree built so far."""

    def __init__(self, node: SnapshotNode) -> None:
        super().__init__(node.class_name)
        self.node = node


@dataclass
class _Parts:
    """What a class reader collects while it reads (so a stop midway still yields a tree)."""

    r: Reader
    version: int
    type_class: str | None = None
    nested: list[tuple[str, SnapshotNode]] = field(default_factory=list)
    fields: list[PojoField] = field(default_factory=list)
    facts: dict = field(default_factory=dict)

    def snapshot(self, role: str) -> SnapshotNode:
        """One nested versioned snapshot, recorded under ``role`` (also when reading stops in it)."""
        try:
            child = _read_snapshot(self.r)
        except _Stop as stop:
            self.nested.append((role, stop.node))
            raise
        self.nested.append((role, child))
        return child

    def nested_delegate(self, roles: Callable[[int], str] | None = None) -> None:
        """``NestedSerializersSnapshotDelegate.readNestedSerializerSnapshots``."""
        r = self.r
        at = r.pos
        magic = r.i32("nested snapshots magic number")
        if magic != NESTED_MAGIC:
            raise StateMetaError(
                f"Corrupt data, magic number mismatch. Expected {NESTED_MAGIC:8x}, found {magic & 0xFFFFFFFF:8x}", at
            )
        at = r.pos
        version = r.i32("nested snapshots version")
        if version != NESTED_VERSION:
            raise StateMetaError(f"Unrecognized version: {version}", at)
        n = r.count("number of nested snapshots", 6)  # a class name (2+) and a version (4) each
        for i in range(n):
            self.snapshot(roles(i) if roles else f"{i}")


PayloadReader = Callable[[_Parts], None]


@dataclass(frozen=True)
class SnapshotSpec:
    """How one snapshot class is read and shown.

    ``kind``: the family (SIMPLE, COMPOSITE, ...); ``read``: fills a :class:`_Parts` from the
    payload (it sees ``parts.version``); ``text``: the one-line type text, or a display name
    for simple types; ``since``: the Flink lines that ship the class, for the record."""

    kind: str
    read: PayloadReader
    text: str | Callable[[SnapshotNode], str] | None = None
    since: str = ""


REGISTRY: dict[str, SnapshotSpec] = {}


def _read_snapshot(r: Reader) -> SnapshotNode:
    """``TypeSerializerSnapshot.readVersionedSnapshot``: class name, version, payload."""
    at = r.pos
    name = r.utf("serializer snapshot class name")
    version = r.i32("serializer snapshot version")
    spec = REGISTRY.get(name)
    if version == ADAPTER_VERSION:
        if spec is None or spec.kind == "LEGACY_CONFIG":
            raise _Stop(
                SnapshotNode(
                    name, version, "LEGACY_CONFIG", raw=bytes(r.data[r.pos : r.end]), offset=at, complete=False
                )
            )
        # Flink 1.7 - 1.16: a class that was a TypeSerializerConfigSnapshot when written and is a
        # TypeSerializerSnapshot now: skip the Java-serialized serializer, read the real version.
        _skip_java_serializer_proxy(r)
        version = r.i32("serializer snapshot version")
    if spec is None:
        raise _Stop(SnapshotNode(name, version, "UNKNOWN", raw=bytes(r.data[r.pos : r.end]), offset=at, complete=False))
    parts = _Parts(r, version)
    r.enter("serializer snapshots")
    try:
        spec.read(parts)
    except _Stop:
        raise _Stop(_build(name, spec, parts, at, r.pos, complete=False)) from None
    finally:
        r.leave()
    return _build(name, spec, parts, at, r.pos)


def _build(name: str, spec: SnapshotSpec, p: _Parts, at: int, end: int, complete: bool = True) -> SnapshotNode:
    return SnapshotNode(
        class_name=name,
        version=p.version,
        kind=spec.kind,
        type_class=p.type_class,
        nested=tuple(p.nested),
        fields=tuple(p.fields),
        facts=p.facts,
        offset=at,
        end=end,
        complete=complete,
    )


@dataclass(frozen=True)
class SnapshotRead:
    """The result of reading one snapshot from a stream: the tree, and whether the stream can
    be read past it (False after an UNKNOWN or legacy snapshot outside any frame)."""

    node: SnapshotNode
    readable_past: bool


def read_versioned_snapshot(r: Reader) -> SnapshotRead:
    """One ``writeVersionedSnapshot`` at ``r`` (nested snapshots are written this way)."""
    try:
        node = _read_snapshot(r)
    except _Stop as stop:
        return SnapshotRead(stop.node, False)
    return SnapshotRead(node, True)


def read_serializer_snapshot(r: Reader) -> SnapshotRead:
    """``TypeSerializerSnapshotSerializationUtil.readSerializerSnapshot``: the proxy's version
    (2 since Flink 1.7; 1 was Flink <= 1.6 and is refused by 1.17+) and a versioned snapshot.
    State meta info and the keyed proxy's key serializer are written this way."""
    at = r.pos
    version = r.i32("serializer snapshot proxy version")
    if version != SNAPSHOT_PROXY_VERSION:
        hint = (
            " (TypeSerializerConfigSnapshot of Flink <= 1.6, no longer supported as of Flink 1.17)"
            if version == 1
            else ""
        )
        raise StateMetaError(f"Unrecognized version for TypeSerializerSnapshot format: {version}{hint}", at)
    return read_versioned_snapshot(r)


def parse_snapshot(data: bytes, offset: int = 0) -> SnapshotRead:
    """Convenience: one versioned snapshot from ``data`` at ``offset``."""
    return read_versioned_snapshot(Reader(bytes(data), offset))


def _skip_java_serializer_proxy(r: Reader) -> None:
    """``TypeSerializerSerializationUtil.TypeSerializerSerializationProxy``: version int, then
    the Java-serialized serializer as an int length and that many bytes."""
    r.i32("serializer proxy version")
    r.skip(r.count("Java-serialized serializer length"), "Java-serialized serializer")


# ------------------------------------------------------------------------------------------------
#  Payload readers (one per layout)
# ------------------------------------------------------------------------------------------------


def _simple(p: _Parts) -> None:
    """SimpleTypeSerializerSnapshot.readSnapshot: 3 = nothing, 2 = the serializer class name."""
    if p.version == 2:
        p.facts["serializer_class"] = p.r.utf("serializer class name")
    elif p.version != 3:
        raise StateMetaError(f"Unrecognized version: {p.version}", p.r.pos)


def _simple_plus_int(p: _Parts) -> None:
    """The JDBC XA snapshots: a simple snapshot followed by their own int VERSION."""
    _simple(p)
    p.facts["own_version"] = p.r.i32("snapshot's own version")


def _generic(p: _Parts) -> None:
    """GenericTypeSerializerSnapshot: the type class (Value, CopyableValue, Writable)."""
    p.type_class = p.r.utf("type class")


OuterReader = Callable[[_Parts, int], None]


def composite(
    roles: Callable[[int], str] | tuple[str, ...] | None = None, outer: OuterReader | None = None
) -> PayloadReader:
    """CompositeTypeSerializerSnapshot.readSnapshot, with the class's readOuterSnapshot."""

    def read(p: _Parts) -> None:
        r = p.r
        if p.version > 2:
            at = r.pos
            magic = r.i32("composite snapshot magic number")
            if magic != COMPOSITE_MAGIC:
                found = magic & 0xFFFFFFFF
                raise StateMetaError(
                    f"Corrupt data, magic number mismatch. Expected {COMPOSITE_MAGIC:8x}, found {found:8x}", at
                )
            outer_version = r.i32("outer snapshot version")
        else:  # legacyInternalReadOuterSnapshot: the snapshot version is the outer version
            outer_version = p.version
        p.facts["outer_version"] = outer_version
        if outer is not None:
            outer(p, outer_version)
        if isinstance(roles, tuple):
            names = roles
            p.nested_delegate(lambda i: names[i] if i < len(names) else f"{i}")
        else:
            p.nested_delegate(roles)

    return read


def _outer_type_class(p: _Parts, _v: int) -> None:
    p.type_class = p.r.utf("outer type class")


def _outer_utf(key: str) -> OuterReader:
    def read(p: _Parts, _v: int) -> None:
        p.facts[key] = p.r.utf(key)

    return read


def _outer_int(key: str) -> OuterReader:
    def read(p: _Parts, _v: int) -> None:
        p.facts[key] = p.r.i32(key)

    return read


def _outer_versioned_flag(key: str, first_implied: int, first_written: int) -> OuterReader:
    """The outer-flag pattern of Row / LinkedList / TwoPhaseCommit / NFAState snapshots: absent
    (False) below ``first_implied``, implied True from ``first_implied`` to just below
    ``first_written``, written as a boolean from ``first_written`` on."""

    def read(p: _Parts, v: int) -> None:
        if v < first_implied:
            p.facts[key] = False
        elif v < first_written:
            p.facts[key] = True
        else:
            p.facts[key] = p.r.boolean(key)

    return read


def _outer_external(p: _Parts, _v: int) -> None:
    """ExternalSerializerSnapshot: a Java-serialized DataType, then (Flink 1.13+, same outer
    version 1) a boolean isInternalInput. The newest readers read the boolean, as modelled here."""
    obj = read_object_stream(p.r, "ExternalSerializer data type")
    p.facts["data_type"] = describe_data_type(obj)
    p.facts["is_internal_input"] = p.r.boolean("isInternalInput")


def _field_roles(i: int) -> str:
    return f"f{i}"


def _read_optional_map(
    p: _Parts,
    what: str,
    key: Callable[[Reader], object],
    value: Callable[[Reader], object],
) -> list[tuple[str, object, object, bool, bool]]:
    """LinkedOptionalMapSerializer.readOptionalMap: (key name, key, value, key present, value present).

    Each present key and value is a frame (int length, bytes); ``key`` / ``value`` read inside
    the frame. Flink reads each frame's own bytes and nothing beyond, so what a frame reader
    leaves unread is ignored here too."""
    r = p.r
    at = r.pos
    header = r.i64(f"{what} header")
    if header != OPTIONAL_MAP_HEADER:
        raise StateMetaError(f"Corrupted stream received header {header}", at)
    n = r.count(f"{what} size", 4)  # key name (2+) and two presence flags
    out = []
    for _ in range(n):
        name = r.utf(f"{what} key name")
        k = v = None
        kp = r.boolean(f"{what} key presence")
        if kp:
            k = key(r.sub(r.count(f"{what} key frame length"), f"{what} key frame"))
        vp = r.boolean(f"{what} value presence")
        if vp:
            v = value(r.sub(r.count(f"{what} value frame length"), f"{what} value frame"))
        out.append((name, k, v, kp, vp))
    return out


def _framed_snapshot(fr: Reader) -> SnapshotNode | None:
    """A versioned snapshot inside a frame: an unknown class stops inside the frame only
    (Flink's PojoSerializerSnapshotData snapshotReader logs any failure and keeps null)."""
    try:
        return _read_snapshot(fr)
    except _Stop as stop:
        return stop.node


def _pojo(p: _Parts) -> None:
    """PojoSerializerSnapshot (version 2 only) -> PojoSerializerSnapshotData.readSnapshotData."""
    if p.version != 2:
        raise StateMetaError(f"unrecognized read version {p.version}", p.r.pos)
    p.type_class = p.r.utf("POJO class")

    def field_key(fr: Reader) -> tuple[str, str]:
        return fr.utf("field declaring class"), fr.utf("field name")

    entries = _read_optional_map(p, "POJO field map", field_key, _framed_snapshot)
    for name, k, v, _kp, _vp in entries:
        declaring = k[0] if isinstance(k, tuple) else None
        p.fields.append(PojoField(name, declaring, v if isinstance(v, SnapshotNode) else None))
    for key in ("registered_subclasses", "non_registered_subclasses"):
        sub = _read_optional_map(p, key.replace("_", " "), lambda fr: None, _framed_snapshot)
        p.facts[key] = [(name, v) for name, _k, v, _kp, _vp in sub]


def _kryo(p: _Parts) -> None:
    """KryoSerializerSnapshot -> KryoSerializerSnapshotData.createFrom: type class, then the
    registrations, the default serializer instances and the default serializer classes, each a
    LinkedOptionalMap."""
    p.type_class = p.r.utf("Kryo type class")

    def registration(fr: Reader) -> dict:
        reg = {"class": fr.utf("registered class")}
        at = fr.pos
        t = fr.i32("registration type")
        if not 0 <= t < len(KRYO_REGISTRATION_TYPES):
            raise StateMetaError(f"invalid KryoRegistration.SerializerDefinitionType ordinal {t}", at)
        reg["type"] = KRYO_REGISTRATION_TYPES[t]
        if t == 1:
            reg["serializer"] = fr.utf("Kryo serializer class")
        elif t == 2:
            reg["serializer"] = class_name_of(read_object_stream(fr, "Kryo serializer instance"))
        return reg

    regs = _read_optional_map(p, "Kryo registrations", lambda fr: None, registration)
    # the entry's key name is the class as registered; the value names the class Kryo got (Flink
    # writes a dummy for Avro's GenericData$Array when Avro is not on the class path)
    p.facts["kryo_registrations"] = [
        (v if v.get("class") == name else {"name": name, **v}) if isinstance(v, dict) else {"name": name, "type": None}
        for name, _k, v, _kp, _vp in regs
    ]
    defaults = _read_optional_map(
        p,
        "Kryo default serializers",
        lambda fr: fr.utf("class"),
        lambda fr: class_name_of(read_object_stream(fr, "Kryo default serializer")),
    )
    p.facts["kryo_default_serializers"] = [[name, v] for name, _k, v, _kp, _vp in defaults]
    classes = _read_optional_map(
        p, "Kryo default serializer classes", lambda fr: fr.utf("class"), lambda fr: fr.utf("serializer class")
    )
    p.facts["kryo_default_serializer_classes"] = [[name, v] for name, _k, v, _kp, _vp in classes]


def _enum(p: _Parts) -> None:
    """EnumSerializer.EnumSerializerSnapshot (versions 1-3 share the layout)."""
    r = p.r
    p.type_class = r.utf("enum class")
    n = r.count("number of enum constants", 2)
    p.facts["enum_constants"] = [r.utf("enum constant") for _ in range(n)]


def _scala_enum(p: _Parts) -> None:
    """ScalaEnumSerializerSnapshot: enumeration class, then (name, id) pairs."""
    r = p.r
    p.type_class = r.utf("enumeration class")
    n = r.count("number of enumeration values", 6)
    p.facts["enum_values"] = [[r.utf("value name"), r.i32("value id")] for _ in range(n)]


def _avro(p: _Parts) -> None:
    """AvroSerializerSnapshot: v1 = schema (UTF); v2 = runtime type, schema (UTF, UTF);
    v3 (Flink 1.11+ writes) = the same as StringValue strings (no 64 KiB limit)."""
    r = p.r
    if p.version == 1:
        p.facts["schema"] = r.utf("Avro schema")
    elif p.version == 2:
        p.type_class = r.utf("Avro runtime type")
        p.facts["schema"] = r.utf("Avro schema")
    elif p.version == 3:
        p.type_class = r.flink_string("Avro runtime type")
        p.facts["schema"] = r.flink_string("Avro schema")
    else:
        raise StateMetaError(f"unknown snapshot version for AvroSerializerSnapshot {p.version}", r.pos)


def _ttl_aware(p: _Parts) -> None:
    """TtlAwareSerializerSnapshot (Flink 2.0+): TTL flag, then the wrapped versioned snapshot."""
    p.facts["ttl_enabled"] = p.r.boolean("isTtlEnabled")
    p.snapshot("original")


def _either_legacy(p: _Parts) -> None:
    """EitherSerializerSnapshot (deprecated, read-only since 1.7): v2 = nested snapshots."""
    if p.version != 2:
        raise StateMetaError(f"No longer supported version [{p.version}]. Please upgrade first to Flink 1.16.", p.r.pos)
    p.nested_delegate(lambda i: ("left", "right")[i] if i < 2 else f"{i}")


def _generic_array_legacy(p: _Parts) -> None:
    """GenericArraySerializerConfigSnapshot (read-only since 1.7): v2 = component class + nested."""
    if p.version != 2:
        raise StateMetaError(f"No longer supported version [{p.version}]. Please upgrade first to Flink 1.16.", p.r.pos)
    p.type_class = p.r.utf("component class")
    p.nested_delegate(lambda i: "component")


def _row_data(p: _Parts) -> None:
    """RowDataSerializerSnapshot (and BaseRow / Python RowData): field count, each field's
    Java-serialized LogicalType, then the field serializers' nested snapshots."""
    r = p.r
    n = r.count("number of row fields", 4)
    p.facts["logical_types"] = [describe_logical_type(read_object_stream(r, "field logical type")) for _ in range(n)]
    p.nested_delegate(_field_roles)


def _java_objects(*keys: str) -> PayloadReader:
    """Snapshots that are only Java-serialized objects in a row (Array/MapData and their
    Python and 1.9 BaseArray/BaseMap twins): logical types are described, serializers named."""

    def read(p: _Parts) -> None:
        for key in keys:
            obj = read_object_stream(p.r, key)
            p.facts[key] = describe_logical_type(obj) if key.endswith("type") else class_name_of(obj)

    return read


def _ints(*keys: str) -> PayloadReader:
    def read(p: _Parts) -> None:
        for key in keys:
            p.facts[key] = p.r.i32(key)

    return read


def _sorted_map(p: _Parts) -> None:
    """SortedMapSerializerSnapshot: the Java-serialized comparator, then nested (key, value)."""
    p.facts["comparator"] = class_name_of(read_object_stream(p.r, "comparator"))
    p.nested_delegate(lambda i: ("key", "value")[i] if i < 2 else f"{i}")


def _pulsar(p: _Parts) -> None:
    """PulsarSchemaTypeSerializerSnapshot (the Pulsar connector in Flink 1.14 - 1.16): a
    length-prefixed Java-serialized schema."""
    n = p.r.count("schema length")
    p.facts["schema_class"] = class_name_of(read_object_stream(p.r.sub(n, "Pulsar schema"), "Pulsar schema"))


def _legacy_config(p: _Parts) -> None:
    """A pre-1.7 config snapshot class written with a version of its own: Flink 1.9 - 1.16 read
    its Java-serialized, class-specific body, which is not modelled, so it is refused. (Written
    with ADAPTER_VERSION it never gets here: :func:`_read_snapshot` stops at it.)"""
    raise StateMetaError("TypeSerializerConfigSnapshot payload", p.r.pos)


# ------------------------------------------------------------------------------------------------
#  Type text
# ------------------------------------------------------------------------------------------------


def _text(n: SnapshotNode, depth: int) -> str:
    if depth > 24:
        return "..."
    spec = REGISTRY.get(n.class_name)
    if n.kind == "UNKNOWN":
        return f"Unknown({n.class_name})"
    if n.kind == "LEGACY_CONFIG":
        return f"LegacyConfig({n.class_name})"
    if spec is not None and callable(spec.text):
        return spec.text(n)
    if spec is not None and isinstance(spec.text, str):
        label = spec.text
    else:
        label = _display_name(n.class_name)
    inner = [_text(c, depth + 1) for _, c in n.nested]
    if inner:
        return f"{label}<{', '.join(inner)}>"
    if n.type_class and n.kind != "SIMPLE":
        return f"{label}({n.type_class})"
    return label


def _display_name(class_name: str) -> str:
    """``...base.LongSerializer$LongSerializerSnapshot`` -> ``Long``; ``...TupleSerializerSnapshot`` -> ``Tuple``."""
    outer = class_name.rsplit(".", 1)[-1].split("$", 1)[0]
    for suffix in ("SerializerSnapshotV2", "SerializerSnapshot", "Serializer", "Snapshot"):
        if outer.endswith(suffix) and len(outer) > len(suffix):
            return outer[: -len(suffix)]
    return outer


def _nested_text(n: SnapshotNode, role: int = 0) -> str:
    return _text(n.nested[role][1], 1) if len(n.nested) > role else "?"


def _all_nested(n: SnapshotNode) -> str:
    return ", ".join(_text(c, 1) for _, c in n.nested)


def _tuple_text(n: SnapshotNode) -> str:
    cls = (n.type_class or "Tuple").rsplit(".", 1)[-1]
    if n.type_class and not n.type_class.startswith(FLINK + "api.java.tuple."):
        cls = n.type_class
    return f"{cls}<{_all_nested(n)}>"


def _pojo_text(n: SnapshotNode) -> str:
    fields = ", ".join(f"{f.name}: {_text(f.snapshot, 1) if f.snapshot else '?'}" for f in n.fields)
    return f"POJO {n.type_class}{{{fields}}}"


def _enum_text(n: SnapshotNode) -> str:
    return f"Enum {n.type_class}{{{', '.join(n.facts.get('enum_constants', []))}}}"


def _row_data_text(n: SnapshotNode) -> str:
    types = n.facts.get("logical_types")
    return f"RowData<{', '.join(types) if types is not None else _all_nested(n)}>"


# ------------------------------------------------------------------------------------------------
#  The registry
# ------------------------------------------------------------------------------------------------


def _register(names: list[str] | tuple[str, ...], spec: SnapshotSpec) -> None:
    for name in names:
        REGISTRY[name if name.startswith(("org.", "com.")) else FLINK + name] = spec


for _simple_type in SIMPLE_TYPES:
    _register([_simple_type.snapshot], SnapshotSpec("SIMPLE", _simple, _simple_type.label, "1.9-2.3"))

_register(
    [
        "connector.jdbc.xa.CheckpointAndXidSerializer$CheckpointAndXidSimpleTypeSerializerSnapshot",
        "connector.jdbc.xa.XaSinkStateSerializer$XaSinkStateSimpleXaTypeSerializerSnapshot",
        "connector.jdbc.xa.XidSerializer$XidSimpleTypeSerializerSnapshot",
    ],
    SnapshotSpec("SIMPLE", _simple_plus_int, None, "1.13-1.16 (JDBC connector in Flink's tree)"),
)

_register(
    [
        "api.java.typeutils.runtime.ValueSerializer$ValueSerializerSnapshot",
        "api.java.typeutils.runtime.CopyableValueSerializer$CopyableValueSerializerSnapshot",
        "api.java.typeutils.runtime.WritableSerializer$WritableSerializerSnapshot",
    ],
    SnapshotSpec("GENERIC", _generic, None, "1.9-2.3"),
)


def _composite(
    names: list[str] | tuple[str, ...],
    roles: Callable[[int], str] | tuple[str, ...] | None = None,
    outer: OuterReader | None = None,
    text: str | Callable[[SnapshotNode], str] | None = None,
    since: str = "1.9-2.3",
) -> None:
    _register(names, SnapshotSpec("COMPOSITE", composite(roles, outer), text, since))


_composite([LIST], ("element",), text="List")
_composite([MAP], ("key", "value"), text="Map")
_composite([SET], ("element",), text="Set", since="2.1+")
_composite(
    ["api.common.typeutils.base.GenericArraySerializerSnapshot"],
    ("component",),
    _outer_type_class,
    lambda n: f"{_nested_text(n)}[]",
)
_composite(
    ["api.common.typeutils.SingleThreadAccessCheckingTypeSerializer$SingleThreadAccessCheckingTypeSerializerSnapshot"],
    ("original",),
    text=_nested_text,
)
_composite(["api.java.typeutils.runtime.JavaEitherSerializerSnapshot"], ("left", "right"), text="Either")
_composite(
    [NULLABLE],
    ("original",),
    _outer_int("null_padding_length"),
    text="Nullable",
)
_composite(
    ["api.java.typeutils.runtime.RowSerializer$RowSerializerSnapshot"],
    _field_roles,
    _outer_versioned_flag("supports_row_kind", 3, 4),
    text=lambda n: f"Row<{_all_nested(n)}>",
)
_composite(["api.java.typeutils.runtime.TupleSerializerSnapshot"], _field_roles, _outer_type_class, _tuple_text)
for _pkg, _since in (("api.scala.typeutils.", "1.9-1.20 (flink-scala)"), ("table.api.typeutils.", "2.0+")):
    _composite([_pkg + "ScalaEitherSerializerSnapshot"], ("left", "right"), text="Either", since=_since)
    _composite([_pkg + "ScalaOptionSerializerSnapshot"], ("element",), text="Option", since=_since)
    _composite([_pkg + "ScalaTrySerializerSnapshot"], ("element", "throwable"), text="Try", since=_since)
    _composite([_pkg + "ScalaCaseClassSerializerSnapshot"], _field_roles, _outer_type_class, _tuple_text, _since)
    _composite([_pkg + "Tuple2CaseClassSerializerSnapshot"], _field_roles, _outer_type_class, _tuple_text, _since)
    _composite(
        [_pkg + "TraversableSerializerSnapshot"],
        ("element",),
        _outer_utf("cbf_code"),
        text="Traversable",
        since=_since,
    )
    _register([_pkg + "ScalaEnumSerializerSnapshot"], SnapshotSpec("ENUM", _scala_enum, None, _since))
_composite(["runtime.state.ArrayListSerializerSnapshot"], ("element",), text="ArrayList")
_composite(
    [
        "runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot",
        "runtime.state.v2.ttl.TtlStateFactory$TtlSerializerSnapshot",
    ],
    ("timestamp", "value"),
    text=lambda n: f"TTL<{_nested_text(n, 1)}>",
)
_composite(["streaming.api.operators.TimerSerializerSnapshot"], ("key", "namespace"), text="Timer")
_composite(["streaming.api.datastream.CoGroupedStreams$UnionSerializerSnapshot"], ("one", "two"), text="TaggedUnion")
_composite(
    [
        "streaming.api.functions.sink.TwoPhaseCommitSinkFunction$StateSerializerSnapshot",
        "streaming.api.functions.sink.legacy.TwoPhaseCommitSinkFunction$StateSerializerSnapshot",
    ],
    ("transaction", "context"),
    _outer_versioned_flag("supports_null_transaction", 3, 4),
    text="TwoPhaseCommitState",
)
_composite(
    ["streaming.api.operators.co.IntervalJoinOperator$BufferEntrySerializerSnapshot"], ("element",), text="BufferEntry"
)
_composite(
    ["streaming.runtime.streamrecord.StreamElementSerializer$StreamElementSerializerSnapshot"],
    ("element",),
    text="StreamElement",
)
_composite(["cep.nfa.NFA$MigratedNFASerializerSnapshot"], text="MigratedNFA", since="1.9-1.20")
_composite(
    ["cep.nfa.NFAStateSerializerSnapshot"],
    outer=_outer_versioned_flag("supports_previous_timestamp", 2, 2),
    text="NFAState",
)
_composite(["cep.nfa.SharedBuffer$SharedBufferSerializerSnapshot"], text="SharedBuffer", since="1.9-1.20")
_composite(["cep.nfa.sharedbuffer.LockableTypeSerializerSnapshot"], ("element",), text="Lockable")
_composite(["cep.nfa.sharedbuffer.NodeId$NodeIdSerializer$NodeIdSerializerSnapshot"], text="NodeId")
_composite(
    ["cep.nfa.sharedbuffer.SharedBufferEdge$SharedBufferEdgeSerializer$SharedBufferEdgeSerializerSnapshot"],
    text="SharedBufferEdge",
)
_composite(
    [
        "cep.nfa.sharedbuffer.SharedBufferNode$SharedBufferNodeSerializer$SharedBufferNodeSerializerSnapshot",
        "cep.nfa.sharedbuffer.SharedBufferNodeSerializerSnapshotV2",
    ],
    text="SharedBufferNode",
)
_composite(["table.dataview.ListViewSerializerSnapshot"], ("list",), text="ListView")
_composite(["table.dataview.MapViewSerializerSnapshot"], ("map",), text="MapView")
_composite(["table.dataview.NullAwareMapSerializerSnapshot"], ("key", "value"), text="NullAwareMap")
_composite(
    ["table.runtime.typeutils.BinaryGenericSerializer$BinaryGenericSerializerSnapshot"],
    ("serializer",),
    text="BinaryGeneric",
    since="1.9-1.10",
)
_composite(
    ["table.runtime.typeutils.RawValueDataSerializer$RawValueDataSerializerSnapshot"],
    ("serializer",),
    text="RawValueData",
    since="1.11-2.3",
)
_composite(
    ["table.runtime.typeutils.ExternalSerializer$ExternalSerializerSnapshot"],
    ("internal",),
    _outer_external,
    text=lambda n: f"External({n.facts.get('data_type')})",
    since="1.11-2.3",
)
_composite(
    ["table.runtime.typeutils.LinkedListSerializer$LinkedListSerializerSnapshot"],
    ("element",),
    _outer_versioned_flag("has_null_mask", 2, 3),
    text="LinkedList",
    since="1.13-2.3",
)
_composite(
    ["table.runtime.typeutils.WindowKeySerializer$WindowKeySerializerSnapshot"],
    ("key", "window"),
    text="WindowKey",
    since="1.13-2.3",
)
_composite(["table.runtime.types.CRowSerializerSnapshot"], ("row",), text="CRow", since="1.9-1.13 (legacy planner)")

_register([POJO], SnapshotSpec("POJO", _pojo, _pojo_text))
_register([KRYO], SnapshotSpec("KRYO", _kryo, lambda n: f"Kryo({n.type_class})"))
_register([ENUM], SnapshotSpec("ENUM", _enum, _enum_text))
_register(
    [
        "formats.avro.typeutils.AvroSerializerSnapshot",
        # 1.7 - 1.20: kept for 1.6 savepoints, a subclass of AvroSerializerSnapshot (same layout)
        "formats.avro.typeutils.AvroSerializer$AvroSchemaSerializerConfigSnapshot",
    ],
    SnapshotSpec("AVRO", _avro, lambda n: f"Avro({n.type_class})"),
)
_register(
    ["runtime.state.ttl.TtlAwareSerializerSnapshot"],
    SnapshotSpec("WRAPPER", _ttl_aware, lambda n: f"TtlAware<{_nested_text(n)}>", "2.0+"),
)
_register(
    ["api.java.typeutils.runtime.EitherSerializerSnapshot"],
    SnapshotSpec("COMPOSITE", _either_legacy, "Either", "1.9-1.20 (read only)"),
)
_register(
    ["api.common.typeutils.base.GenericArraySerializerConfigSnapshot"],
    SnapshotSpec("COMPOSITE", _generic_array_legacy, lambda n: f"{_nested_text(n)}[]", "1.9-1.20 (read only)"),
)
_register(
    [
        "table.runtime.typeutils.RowDataSerializer$RowDataSerializerSnapshot",
        "table.runtime.typeutils.BaseRowSerializer$BaseRowSerializerSnapshot",
        "table.runtime.typeutils.serializers.python.RowDataSerializer$RowDataSerializerSnapshot",
    ],
    SnapshotSpec("ROW_DATA", _row_data, _row_data_text),
)
_register(
    [
        "table.runtime.typeutils.ArrayDataSerializer$ArrayDataSerializerSnapshot",
        "table.runtime.typeutils.BaseArraySerializer$BaseArraySerializerSnapshot",
        "table.runtime.typeutils.serializers.python.ArrayDataSerializer$ArrayDataSerializerSnapshot",
    ],
    SnapshotSpec(
        "JAVA_OBJECTS",
        _java_objects("element_type", "element_serializer"),
        lambda n: f"ArrayData<{n.facts.get('element_type')}>",
    ),
)
_register(
    [
        "table.runtime.typeutils.MapDataSerializer$MapDataSerializerSnapshot",
        "table.runtime.typeutils.BaseMapSerializer$BaseMapSerializerSnapshot",
        "table.runtime.typeutils.serializers.python.MapDataSerializer$BaseMapSerializerSnapshot",
    ],
    SnapshotSpec(
        "JAVA_OBJECTS",
        _java_objects("key_type", "value_type", "key_serializer", "value_serializer"),
        lambda n: f"MapData<{n.facts.get('key_type')}, {n.facts.get('value_type')}>",
    ),
)
_register(
    [
        "table.runtime.typeutils.BinaryRowDataSerializer$BinaryRowDataSerializerSnapshot",
        "table.runtime.typeutils.BinaryRowSerializer$BinaryRowSerializerSnapshot",
    ],
    SnapshotSpec("SQL", _ints("num_fields"), lambda n: f"BinaryRowData({n.facts.get('num_fields')} fields)"),
)
_register(
    [
        "table.runtime.typeutils.DecimalDataSerializer$DecimalSerializerSnapshot",
        "table.runtime.typeutils.DecimalSerializer$DecimalSerializerSnapshot",
        "table.runtime.typeutils.serializers.python.DecimalDataSerializer$DecimalSerializerSnapshot",
    ],
    SnapshotSpec(
        "SQL", _ints("precision", "scale"), lambda n: f"DecimalData({n.facts['precision']}, {n.facts['scale']})"
    ),
)
_register(
    [
        "table.runtime.typeutils.TimestampDataSerializer$TimestampDataSerializerSnapshot",
        "table.runtime.typeutils.serializers.python.TimestampSerializer$TimestampSerializerSnapshot",
    ],
    SnapshotSpec("SQL", _ints("precision"), lambda n: f"TimestampData({n.facts['precision']})"),
)
_register(
    ["table.runtime.typeutils.SortedMapSerializerSnapshot"],
    SnapshotSpec("COMPOSITE", _sorted_map, lambda n: f"SortedMap<{_all_nested(n)}>"),
)
_register(
    ["connector.pulsar.common.schema.PulsarSchemaTypeSerializer$PulsarSchemaTypeSerializerSnapshot"],
    SnapshotSpec("CONNECTOR", _pulsar, "PulsarSchema", "1.14-1.16 (Pulsar connector in Flink's tree)"),
)
# Pre-1.7 TypeSerializerConfigSnapshot classes: Flink 1.9 - 1.16 still read them (Flink <= 1.6
# wrote them, version ADAPTER_VERSION, with a Java-serialized serializer and an unframed
# class-specific body); Flink 1.17+ refuses them. Recognised by name so they are reported as
# such, never stepped over.
_register(
    [
        "api.common.typeutils.CompositeSerializer$ConfigSnapshot",
        "api.common.typeutils.ParameterlessTypeSerializerConfig",
        "api.common.typeutils.base.CollectionSerializerConfigSnapshot",
        "api.common.typeutils.base.EnumSerializer$EnumSerializerConfigSnapshot",
        "api.common.typeutils.base.MapSerializerConfigSnapshot",
        "api.java.typeutils.runtime.CopyableValueSerializer$CopyableValueSerializerConfigSnapshot",
        "api.java.typeutils.runtime.EitherSerializerConfigSnapshot",
        "api.java.typeutils.runtime.NullableSerializer$NullableSerializerConfigSnapshot",
        "api.java.typeutils.runtime.PojoSerializer$PojoSerializerConfigSnapshot",
        "api.java.typeutils.runtime.RowSerializer$RowSerializerConfigSnapshot",
        "api.java.typeutils.runtime.TupleSerializerConfigSnapshot",
        "api.java.typeutils.runtime.ValueSerializer$ValueSerializerConfigSnapshot",
        "api.java.typeutils.runtime.WritableSerializer$WritableSerializerConfigSnapshot",
        "api.java.typeutils.runtime.kryo.KryoSerializer$KryoSerializerConfigSnapshot",
        "api.scala.typeutils.EnumValueSerializer$ScalaEnumSerializerConfigSnapshot",
        "api.scala.typeutils.OptionSerializer$OptionSerializerConfigSnapshot",
        "api.scala.typeutils.ScalaOptionSerializerConfigSnapshot",
        "api.scala.typeutils.ScalaTrySerializerConfigSnapshot",
        "api.scala.typeutils.TraversableSerializerConfigSnapshot",
        "api.scala.typeutils.TrySerializer$TrySerializerConfigSnapshot",
        "cep.nfa.NFA$NFASerializerConfigSnapshot",
        "cep.nfa.SharedBuffer$SharedBufferSerializerConfigSnapshot",
        "streaming.api.datastream.CoGroupedStreams$UnionSerializerConfigSnapshot",
        "streaming.api.functions.sink.TwoPhaseCommitSinkFunction$StateSerializerConfigSnapshot",
        "streaming.api.operators.TimerSerializer$TimerSerializerConfigSnapshot",
        "streaming.api.operators.co.IntervalJoinOperator$BufferSerializerConfigSnapshot",
        "streaming.runtime.streamrecord.StreamElementSerializer$StreamElementSerializerConfigSnapshot",
        "table.runtime.types.CRowSerializer$CRowSerializerConfigSnapshot",
    ],
    SnapshotSpec("LEGACY_CONFIG", _legacy_config, None, "read by 1.9-1.16 only"),
)


# ------------------------------------------------------------------------------------------------
#  Reading with the new job's classes
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UserClass:
    """What the restoring job's class path says about one user class: a POJO's declared field
    names, or an enum's constants (None when the class is not an enum)."""

    name: str
    fields: tuple[str, ...] = ()
    enum_constants: tuple[str, ...] | None = None


class ClassResolutionError(Exception):
    """Flink's own reader fails on these bytes with the restoring job's classes (the snapshot is
    well-formed; the classes no longer match it). ``java_message`` is Flink's exception text."""

    def __init__(self, java_message: str) -> None:
        super().__init__(java_message)
        self.java_message = java_message


def to_dict_with_classes(node: SnapshotNode, classes: dict[str, UserClass]) -> dict:
    """``node.to_dict()`` as Flink reads the same bytes with the restoring job's classes:

    * a POJO field the class no longer declares cannot be resolved (``PojoFieldUtils.readField``
      fails, the field reader logs and keeps null): its ``serializer`` is None and its name is
      listed under ``absent_fields``;
    * an enum constant the enum no longer has makes ``EnumSerializerSnapshot.readSnapshot``
      throw ``IllegalStateException`` ("Could not create a restore serializer for enum class
      ... Probably because an enum value was removed."): raised as ClassResolutionError.

    Classes missing from ``classes`` are taken as unchanged."""
    d = node.to_dict()
    _resolve(node, d, classes)
    return d


def removed_enum_constants(node: SnapshotNode, constants: tuple[str, ...] | None) -> list[str]:
    """The saved constants of an enum snapshot the restoring job's enum no longer has (none when
    ``constants`` is None: the enum is not known). ``EnumSerializerSnapshot.readSnapshot`` looks
    each one up by name, so a single missing constant fails reading the snapshot."""
    if node.kind != "ENUM" or constants is None:
        return []
    return [c for c in node.enum_constants or () if c not in constants]


def enum_removed_message(enum_class: str | None) -> str:
    """``EnumSerializerSnapshot.readSnapshot``'s IllegalStateException text (1.12 - 2.x)."""
    return (
        f"Could not create a restore serializer for enum class {enum_class}. "
        "Probably because an enum value was removed."
    )


def _resolve(node: SnapshotNode, d: dict, classes: dict[str, UserClass]) -> None:
    cls = classes.get(node.type_class or "")
    if cls is not None and removed_enum_constants(node, cls.enum_constants):
        raise ClassResolutionError(f"java.lang.IllegalStateException: {enum_removed_message(node.type_class)}")
    if node.kind == "POJO":
        absent = []
        for f, fd in zip(node.fields, d.get("fields", []), strict=False):
            if cls is not None and f.name not in cls.fields:
                absent.append(f.name)
                fd["serializer"] = None
            elif f.snapshot is not None and fd.get("serializer") is not None:
                _resolve(f.snapshot, fd["serializer"], classes)
        if absent:
            d["absent_fields"] = absent
    for (_, child), cd in zip(node.nested, d.get("nested", []), strict=False):
        _resolve(child, cd, classes)


# Optional Flink modules that ship serializer snapshot classes, by the prefix (after
# ``org.apache.flink.``) of the classes each ships. A task resolves every saved snapshot's class with
# the job's class loader while it reads the state's meta data (``TypeSerializerSnapshot.
# readVersionedSnapshot`` -> ``InstantiationUtil.resolveClassByName``): a module the new job's class
# path lacks fails the restore there (``ClassNotFoundException``). The exporter probes one class per
# module (graph field ``serializer_modules``, docs/spec-extensions.md). ``flink-scala`` (the 1.x Scala
# API) has no 2.x release: its snapshots cannot load on 2.x whatever the job bundles.
SERIALIZER_MODULES: dict[str, tuple[str, ...]] = {
    "flink-avro": ("formats.avro.",),
    "flink-cep": ("cep.",),
    "flink-scala": ("api.scala.",),
    "flink-table-api-scala": ("table.api.typeutils.",),
    "flink-table-runtime": ("table.runtime.",),
}


def module_of(snapshot_class: str) -> str | None:
    """The optional module (a :data:`SERIALIZER_MODULES` key) that ships a snapshot class, else None."""
    if not snapshot_class.startswith(FLINK):
        return None
    rest = snapshot_class[len(FLINK) :]
    for module, prefixes in SERIALIZER_MODULES.items():
        if rest.startswith(prefixes):
            return module
    return None
