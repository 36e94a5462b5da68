"""Walk one Java-serialized object stream (``ObjectOutputStream``) without the classes at hand.

Some serializer snapshots embed ``InstantiationUtil.serializeObject(...)`` output with no
length prefix (the SQL ``RowDataSerializerSnapshot`` writes each field's ``LogicalType`` that
way, ``MapDataSerializerSnapshot`` / ``ArrayDataSerializerSnapshot`` even the element
serializers, ``ExternalSerializerSnapshot`` a ``DataType``, ``SortedMapSerializerSnapshot`` a
comparator). The only way past such bytes is to parse the serialization grammar itself
(Java Object Serialization Specification, protocol 2), which is self-describing: class
descriptors carry the field names and types, so every object can be read without knowing its
class.

One assumption is needed where the grammar leaves it open: a class with its own
``writeObject`` (flag ``SC_WRITE_METHOD``) is assumed to call ``defaultWriteObject`` first
(its declared fields, then the optional data), which is what the JDK collections and Flink's
own classes do and what the serialization spec asks for. A class that breaks this rule makes
the walk fail with :class:`StateMetaError` (never a wrong result silently: the grammar rarely
stays consistent past such a misread). ``Externalizable`` objects written in the old protocol 1
(no block data) cannot be walked at all and fail the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from udfs.savepoint.binary import Reader, StateMetaError, decode_modified_utf8

STREAM_MAGIC = 0xACED
STREAM_VERSION = 5
TC_NULL, TC_REFERENCE, TC_CLASSDESC, TC_OBJECT, TC_STRING, TC_ARRAY, TC_CLASS = range(0x70, 0x77)
TC_BLOCKDATA, TC_ENDBLOCKDATA, TC_RESET, TC_BLOCKDATALONG, TC_EXCEPTION, TC_LONGSTRING = range(0x77, 0x7D)
TC_PROXYCLASSDESC, TC_ENUM = 0x7D, 0x7E
BASE_HANDLE = 0x7E0000
SC_WRITE_METHOD, SC_SERIALIZABLE, SC_EXTERNALIZABLE, SC_BLOCK_DATA, SC_ENUM = 0x01, 0x02, 0x04, 0x08, 0x10
PRIMITIVE_SIZES = {"B": 1, "C": 2, "D": 8, "F": 4, "I": 4, "J": 8, "S": 2, "Z": 1}
MAX_HANDLES = 200_000  # every handle costs at least one byte of stream; a bound for the list


@dataclass
class JClassDesc:
    """A class descriptor: name, flags, declared fields (type code, name) and its superclass."""

    name: str
    flags: int = 0
    fields: list[tuple[str, str]] = field(default_factory=list)
    superclass: JClassDesc | None = None


@dataclass
class JObject:
    """An object read from the stream: its class, its declared fields (all classes of the
    hierarchy, a subclass's field shadowing a superclass's of the same name) and the objects
    and block data its ``writeObject`` methods added (``annotations``)."""

    class_name: str
    fields: dict[str, object] = field(default_factory=dict)
    annotations: list[object] = field(default_factory=list)


@dataclass
class JEnum:
    class_name: str
    constant: str


@dataclass
class JArray:
    class_name: str
    items: list[object] | None = None  # object arrays
    length: int = 0


@dataclass
class JClass:
    name: str


@dataclass
class JBlock:
    data: bytes


class _Stream:
    def __init__(self, r: Reader) -> None:
        self.r = r
        self.handles: list[object] = []

    def _new_handle(self, obj: object) -> int:
        if len(self.handles) >= MAX_HANDLES:
            raise StateMetaError("Java serialization: too many objects", self.r.pos)
        self.handles.append(obj)
        return len(self.handles) - 1

    def _ref(self, at: int) -> object:
        h = self.r.i32("handle") - BASE_HANDLE
        if not 0 <= h < len(self.handles):
            raise StateMetaError(f"Java serialization: invalid back reference {h + BASE_HANDLE:#x}", at)
        return self.handles[h]

    def content(self) -> object:
        r = self.r
        r.enter("Java objects")
        try:
            return self._content()
        finally:
            r.leave()

    def _content(self) -> object:
        r = self.r
        at = r.pos
        tc = r.u8("serialization type code")
        if tc == TC_NULL:
            return None
        if tc == TC_REFERENCE:
            return self._ref(at)
        if tc == TC_STRING:
            s = r.utf("serialized string")
            self._new_handle(s)
            return s
        if tc == TC_LONGSTRING:
            n = r.i64("long string length")
            if n < 0:
                raise StateMetaError(f"Java serialization: negative long string length {n}", at)
            s = decode_modified_utf8(r.take(n, "long string"), at + 9)
            self._new_handle(s)
            return s
        if tc in (TC_CLASSDESC, TC_PROXYCLASSDESC):
            r.pos = at
            return self.class_desc()
        if tc == TC_CLASS:
            desc = self.class_desc()
            c = JClass(desc.name if desc else "?")
            self._new_handle(c)
            return c
        if tc == TC_ENUM:
            desc = self.class_desc()
            slot = self._new_handle(None)
            name = self.content()
            if not isinstance(name, str):
                raise StateMetaError("Java serialization: enum constant name is not a string", at)
            e = JEnum(desc.name if desc else "?", name)
            self.handles[slot] = e
            return e
        if tc == TC_ARRAY:
            desc = self.class_desc()
            if desc is None:
                raise StateMetaError("Java serialization: array without a class descriptor", at)
            arr = JArray(desc.name)
            self._new_handle(arr)
            elem = desc.name[1:2]
            if elem in PRIMITIVE_SIZES:
                n = r.count("array length", PRIMITIVE_SIZES[elem])
                r.skip(n * PRIMITIVE_SIZES[elem], "array elements")
                arr.length = n
            else:
                n = r.count("array length", 1)
                arr.length = n
                arr.items = [self.content() for _ in range(n)]
            return arr
        if tc == TC_OBJECT:
            return self._object(at)
        if tc == TC_BLOCKDATA:
            return JBlock(r.take(r.u8("block length"), "block data"))
        if tc == TC_BLOCKDATALONG:
            return JBlock(r.take(r.count("block length"), "block data"))
        if tc == TC_RESET:
            self.handles.clear()
            return self._content()
        if tc == TC_EXCEPTION:
            raise StateMetaError("Java serialization: the writer failed (TC_EXCEPTION in the stream)", at)
        raise StateMetaError(f"Java serialization: unexpected type code 0x{tc:02x}", at)

    def _object(self, at: int) -> JObject:
        r = self.r
        desc = self.class_desc()
        if desc is None:
            raise StateMetaError("Java serialization: object without a class descriptor", at)
        obj = JObject(desc.name)
        self._new_handle(obj)
        chain: list[JClassDesc] = []
        d: JClassDesc | None = desc
        while d is not None:
            chain.append(d)
            if len(chain) > 64:
                raise StateMetaError("Java serialization: class hierarchy too deep", at)
            d = d.superclass
        for d in reversed(chain):
            if d.flags & SC_EXTERNALIZABLE:
                if not d.flags & SC_BLOCK_DATA:
                    raise StateMetaError(
                        f"Java serialization: {d.name} is Externalizable in protocol 1 (no block data)", r.pos
                    )
                obj.annotations += self.annotation()
                continue
            if not d.flags & SC_SERIALIZABLE:
                continue
            for code, fname in d.fields:
                obj.fields[fname] = self.field_value(code)
            if d.flags & SC_WRITE_METHOD:
                obj.annotations += self.annotation()
        return obj

    def field_value(self, code: str) -> object:
        r = self.r
        if code == "Z":
            return r.boolean("boolean field")
        if code == "B":
            return r.i8("byte field")
        if code == "S":
            return r.i16("short field")
        if code == "C":
            return chr(r.u16("char field"))
        if code == "I":
            return r.i32("int field")
        if code == "J":
            return r.i64("long field")
        if code in ("F", "D"):
            r.skip(PRIMITIVE_SIZES[code], "floating-point field")
            return None
        return self.content()

    def annotation(self) -> list[object]:
        """Objects and block data up to TC_ENDBLOCKDATA."""
        r = self.r
        out: list[object] = []
        while True:
            r.need(1, "annotation")
            if r.data[r.pos] == TC_ENDBLOCKDATA:
                r.pos += 1
                return out
            out.append(self.content())

    def class_desc(self) -> JClassDesc | None:
        r = self.r
        at = r.pos
        tc = r.u8("class descriptor type code")
        if tc == TC_NULL:
            return None
        if tc == TC_REFERENCE:
            d = self._ref(at)
            if not isinstance(d, JClassDesc):
                raise StateMetaError("Java serialization: back reference is not a class descriptor", at)
            return d
        if tc == TC_PROXYCLASSDESC:
            desc = JClassDesc("<proxy>", SC_SERIALIZABLE)
            self._new_handle(desc)
            for _ in range(r.count("proxy interface count", 2)):
                r.utf("proxy interface name")
            self.annotation()
            r.enter("class descriptors")
            try:
                desc.superclass = self.class_desc()
            finally:
                r.leave()
            return desc
        if tc != TC_CLASSDESC:
            raise StateMetaError(f"Java serialization: expected a class descriptor, got 0x{tc:02x}", at)
        desc = JClassDesc(r.utf("class name"))
        r.i64("serialVersionUID")
        self._new_handle(desc)
        at_flags = r.pos
        desc.flags = r.u8("class flags")
        if desc.flags & SC_SERIALIZABLE and desc.flags & SC_EXTERNALIZABLE:
            raise StateMetaError(f"{desc.name}: serializable and externalizable flags conflict", at_flags)
        for _ in range(r.count("field count", 3, value=r.u16("field count"))):
            at_code = r.pos
            code = chr(r.u8("field type code"))
            fname = r.utf("field name")
            if code in "L[":
                tname = self.content()  # the field's type signature: a String or a back reference
                if not isinstance(tname, str):
                    raise StateMetaError("Java serialization: field type is not a string", at_code)
            elif code not in PRIMITIVE_SIZES:
                raise StateMetaError(f"Java serialization: unknown field type code {code!r}", at_code)
            desc.fields.append((code, fname))
        self.annotation()
        r.enter("class descriptors")
        try:
            desc.superclass = self.class_desc()
        finally:
            r.leave()
        return desc


def read_object_stream(r: Reader, what: str = "Java-serialized object") -> object:
    """One ``ObjectOutputStream`` stream at ``r``: header (ACED 0005) and one object; ``r``
    moves past it. Each ``InstantiationUtil.serializeObject`` call writes such a stream."""
    at = r.pos
    magic = r.u16(what + " magic")
    version = r.u16(what + " version")
    if magic != STREAM_MAGIC or version != STREAM_VERSION:
        found = f"{magic:04X}{version:04X}"
        raise StateMetaError(f"{what}: expected a Java serialization stream (ACED0005), found {found}", at)
    return _Stream(r).content()


def short_class(name: str) -> str:
    return name.rsplit(".", 1)[-1].rsplit("$", 1)[-1]
