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

The same walker reads the ``_metadata`` trailer (one serialized ``CheckpointProperties``, see
``format_v4``), which builds other values and checks what Flink's ``ObjectInputStream`` can
resolve: :class:`ObjectStreamWalker` says which parts of a walk a reader may change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from udfs.savepoint.binary import Reader, SavepointReadError

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
    suid: int = 0  # serialVersionUID as written


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


T = TypeVar("T")

# How each primitive field type is read; floating-point values are skipped (None).
FIELD_VALUES: dict[str, Callable[[Reader], object]] = {
    "Z": lambda r: r.boolean("boolean field"),
    "B": lambda r: r.i8("byte field"),
    "S": lambda r: r.i16("short field"),
    "C": lambda r: chr(r.u16("char field")),
    "I": lambda r: r.i32("int field"),
    "J": lambda r: r.i64("long field"),
    "F": lambda r: r.skip(4, "floating-point field"),
    "D": lambda r: r.skip(8, "floating-point field"),
}


class ObjectStreamWalker:
    """Walks one object graph of a stream (the grammar of protocol 2) and builds its values.

    The grammar is walked here for every reader of the package. What a reader may change, each
    in one place, is what a walk builds and checks:

    * ``NESTING`` and :meth:`enter`: where a level of nesting counts and what exceeding the
      limit is called. Here every content item and every superclass descriptor counts on the
      reader's own depth (:meth:`Reader.enter`), so objects inside serializer snapshots count
      towards the snapshots' limit;
    * the ``new_*`` methods and :meth:`fill_array`: the value of each kind of item, and the
      checks made before one is built (here :class:`JObject`, :class:`JEnum`, ...);
    * :meth:`check_class` / :meth:`check_field_type`: checks of a class descriptor as it is read;
    * the attributes: the handle table's limits and when an item enters it (``late_handles``),
      how primitive fields are read, how counts are checked, and the wording of errors.

    Errors are the reader's (:meth:`Reader.fail`), so each reader's error class comes out.
    """

    NESTING: dict[str, str] = {
        "content": "Java objects",
        "superclass": "class descriptors",
        "proxy superclass": "class descriptors",
    }
    FIELD_VALUES: dict[str, Callable[[Reader], object]] = FIELD_VALUES
    HEADER_ERROR = "{what}: expected a Java serialization stream (ACED0005), found {found}"
    PROTOCOL_1_ERROR = "Java serialization: {name} is Externalizable in protocol 1 (no block data)"
    WRITER_FAILED_ERROR: str | None = "Java serialization: the writer failed (TC_EXCEPTION in the stream)"
    max_handles: int | None = MAX_HANDLES
    max_class_chain = 64
    # An array of primitives is refused at its length when its elements cannot fit (else at the elements).
    sized_array_counts = True
    field_min_bytes = 3  # a field of a class descriptor takes at least its type code and an empty name
    serializable_only = True  # a class of the hierarchy without SC_SERIALIZABLE wrote no fields
    # False: an array, proxy descriptor or object is in the handle table from its start, as
    # ObjectInputStream does it. True: an array or proxy descriptor is None there until it is
    # complete, and an object is entered again once complete.
    late_handles = False

    def __init__(self, r: Reader) -> None:
        self.r = r
        self.handles: list[object] = []
        self._depth = 0  # content items open around the one being read

    def read(self, what: str) -> object:
        """The stream header (ACED 0005), then one content item; ``r`` moves past it."""
        r = self.r
        at = r.pos
        magic = r.u16(what + " magic")
        version = r.u16(what + " version")
        if magic != STREAM_MAGIC or version != STREAM_VERSION:
            raise r.fail(self.HEADER_ERROR.format(what=what, found=f"{magic:04X}{version:04X}"), at)
        return self.content()

    # -- what a reader may change -----------------------------------------------------------------

    def enter(self, point: str, at: int) -> bool:
        """One level deeper at ``point`` ("content", "nested", "class", "superclass", "proxy
        superclass"; ``at``: where the item starts); False where ``point`` does not count."""
        what = self.NESTING.get(point)
        if what is None:
            return False
        self.r.enter(what)
        return True

    def new_object(self, desc: JClassDesc | None, at: int) -> tuple[object, dict[str, object], list[object]]:
        """An object of class ``desc``: its value, and where its field values and annotations go."""
        if desc is None:
            raise self.r.fail("Java serialization: object without a class descriptor", at)
        obj = JObject(desc.name)
        return obj, obj.fields, obj.annotations

    def new_enum(self, desc: JClassDesc | None, name: object, at: int, at_name: int) -> object:
        """An enum constant ``name`` (read at ``at_name``) of class ``desc``."""
        if not isinstance(name, str):
            raise self.r.fail("Java serialization: enum constant name is not a string", at)
        return JEnum(desc.name if desc else "?", name)

    def new_array(self, desc: JClassDesc | None, at: int) -> object:
        """An array of class ``desc``, before its elements are read (:meth:`fill_array`)."""
        if desc is None:
            raise self.r.fail("Java serialization: array without a class descriptor", at)
        return JArray(desc.name)

    def fill_array(self, array: JArray, length: int, items: list[object] | None) -> None:
        """The elements of ``array``: ``items`` for objects, None for primitives (skipped)."""
        array.length = length
        array.items = items

    def new_class(self, desc: JClassDesc | None) -> tuple[object, object]:
        """A ``Class`` object of ``desc``: its value and what its handle refers to."""
        c = JClass(desc.name if desc else "?")
        return c, c

    def new_block(self, data: bytes) -> object:
        """Block data (of an annotation)."""
        return JBlock(data)

    def check_class(self, desc: JClassDesc, at_flags: int) -> None:
        """A class descriptor whose name, serialVersionUID and flags (read at ``at_flags``) are read."""
        if desc.flags & SC_SERIALIZABLE and desc.flags & SC_EXTERNALIZABLE:
            raise self.r.fail(f"{desc.name}: serializable and externalizable flags conflict", at_flags)

    def check_field_type(self, type_name: object, at: int) -> None:
        """The type signature of an object field (read at ``at``)."""
        if not isinstance(type_name, str):
            raise self.r.fail("Java serialization: field type is not a string", at)

    def invalid_reference_error(self, handle: int, class_desc: bool) -> str:
        """A back reference to no handle, where an object or (``class_desc``) a class descriptor stands."""
        return f"Java serialization: invalid back reference {handle + BASE_HANDLE:#x}"

    def long_string_length_error(self, n: int, at: int) -> SavepointReadError:
        """A long string (TC_LONGSTRING at ``at``) of negative length ``n``."""
        return self.r.fail(f"Java serialization: negative long string length {n}", at)

    # -- the grammar ------------------------------------------------------------------------------

    def _within(self, point: str, at: int, read: Callable[[], T]) -> T:
        counted = self.enter(point, at)
        try:
            return read()
        finally:
            if counted:
                self.r.leave()

    def _new_handle(self, obj: object) -> int:
        if self.max_handles is not None and len(self.handles) >= self.max_handles:
            raise self.r.fail("Java serialization: too many objects")
        self.handles.append(obj)
        return len(self.handles) - 1

    def _ref(self, at: int, class_desc: bool = False) -> object:
        h = self.r.i32("handle") - BASE_HANDLE
        if not 0 <= h < len(self.handles):
            raise self.r.fail(self.invalid_reference_error(h, class_desc), at)
        target = self.handles[h]
        if class_desc and not isinstance(target, JClassDesc):
            raise self.r.fail("Java serialization: back reference is not a class descriptor", at)
        return target

    def content(self) -> object:
        """One content item: an object, string, array, enum, class, descriptor or block data."""
        return self._within("content", self.r.pos, self._content)

    def nested(self) -> object:
        """A content item inside another: a field value, array element, annotation or field type."""
        self._depth += 1
        try:
            return self._within("nested", self.r.pos, self.content)
        finally:
            self._depth -= 1

    def _content(self) -> object:
        r = self.r
        at = r.pos
        tc = r.u8("serialization type code")
        while tc == TC_RESET:
            if self._depth:  # ObjectInputStream.handleReset: a reset inside an object is corrupt
                raise self.r.fail(f"Java serialization: unexpected reset; recursion depth: {self._depth}", at)
            self.handles.clear()
            at = r.pos
            tc = r.u8("serialization type code")
        if tc == TC_NULL:
            return None
        if tc == TC_REFERENCE:
            return self._ref(at)
        if tc in (TC_STRING, TC_LONGSTRING):
            s = r.utf("serialized string") if tc == TC_STRING else self._long_string(at)
            self._new_handle(s)
            return s
        if tc in (TC_CLASSDESC, TC_PROXYCLASSDESC):
            r.pos = at
            return self.class_desc()
        if tc == TC_CLASS:
            value, entry = self.new_class(self.class_desc())
            self._new_handle(entry)
            return value
        if tc == TC_ENUM:
            desc = self.class_desc()
            slot = self._new_handle(None)
            at_name = r.pos
            name = self.content()
            if not isinstance(name, str):  # readString: the constant's name is a String or nothing
                raise self.r.fail("Java serialization: enum constant name is not a string", at_name)
            value = self.new_enum(desc, name, at, at_name)
            self.handles[slot] = value
            return value
        if tc == TC_ARRAY:
            return self._array(at)
        if tc == TC_OBJECT:
            return self._object(at)
        if tc == TC_BLOCKDATA:
            return self.new_block(r.take(r.u8("block length"), "block data"))
        if tc == TC_BLOCKDATALONG:
            return self.new_block(r.take(r.count("block length"), "block data"))
        if tc == TC_EXCEPTION and self.WRITER_FAILED_ERROR:
            raise r.fail(self.WRITER_FAILED_ERROR, at)
        raise r.fail(f"Java serialization: unexpected type code 0x{tc:02x}", at)

    def _long_string(self, at: int) -> str:
        n = self.r.i64("long string length")
        if n < 0:
            raise self.long_string_length_error(n, at)
        return self.r.modified_utf8(n, "long string")

    def _array(self, at: int) -> object:
        r = self.r
        desc = self.class_desc()
        array = self.new_array(desc, at)
        slot = self._new_handle(None if self.late_handles else array)
        size = PRIMITIVE_SIZES.get(desc.name[1:2] if desc else "L")
        if size is None:
            n = r.count("array length", 1)
            self.fill_array(array, n, [self.nested() for _ in range(n)])
        else:
            n = r.count("array length", size if self.sized_array_counts else 1)
            r.skip(n * size, "array elements")
            self.fill_array(array, n, None)
        if self.late_handles:
            self.handles[slot] = array
        return array

    def _object(self, at: int) -> object:
        r = self.r
        desc = self.class_desc()
        obj, fields, annotations = self.new_object(desc, at)
        slot = self._new_handle(obj)
        for d in self._hierarchy(desc, at):
            if d.flags & SC_EXTERNALIZABLE:
                if not d.flags & SC_BLOCK_DATA:
                    raise r.fail(self.PROTOCOL_1_ERROR.format(name=d.name))
                annotations += self.annotation()
                continue
            if self.serializable_only and not d.flags & SC_SERIALIZABLE:
                continue
            for code, fname in d.fields:
                fields[fname] = self.field_value(code)
            if d.flags & SC_WRITE_METHOD:
                annotations += self.annotation()
        if self.late_handles:
            self.handles[slot] = obj
        return obj

    def _hierarchy(self, desc: JClassDesc | None, at: int) -> list[JClassDesc]:
        """``desc`` and its superclasses, the topmost first (as their fields are written)."""
        chain: list[JClassDesc] = []
        while desc is not None:
            chain.append(desc)
            if len(chain) > self.max_class_chain:
                raise self.r.fail("Java serialization: class hierarchy too deep", at)
            desc = desc.superclass
        chain.reverse()
        return chain

    def field_value(self, code: str) -> object:
        read = self.FIELD_VALUES.get(code)
        return read(self.r) if read is not None else self.nested()

    def annotation(self) -> list[object]:
        """Objects and block data up to TC_ENDBLOCKDATA."""
        r = self.r
        out: list[object] = []
        while True:
            r.need(1, "annotation")
            if r.data[r.pos] == TC_ENDBLOCKDATA:
                r.pos += 1
                return out
            out.append(self.nested())

    def class_desc(self) -> JClassDesc | None:
        r = self.r
        at = r.pos
        tc = r.u8("class descriptor type code")
        if tc == TC_NULL:
            return None
        if tc == TC_REFERENCE:
            return self._ref(at, class_desc=True)  # type: ignore[return-value]
        if tc == TC_PROXYCLASSDESC:
            return self._proxy_class_desc(at)
        if tc != TC_CLASSDESC:
            raise r.fail(f"Java serialization: expected a class descriptor, got 0x{tc:02x}", at)
        return self._within("class", at, lambda: self._class_desc_body(at))

    def _proxy_class_desc(self, at: int) -> JClassDesc:
        r = self.r
        desc = JClassDesc("<proxy>", SC_SERIALIZABLE)
        slot = self._new_handle(None if self.late_handles else desc)
        for _ in range(r.count("proxy interface count", 2)):
            r.utf("proxy interface name")
        self.annotation()
        if self.late_handles:
            self.handles[slot] = desc
        desc.superclass = self._within("proxy superclass", at, self.class_desc)
        return desc

    def _class_desc_body(self, at: int) -> JClassDesc:
        r = self.r
        desc = JClassDesc(r.utf("class name"))
        desc.suid = r.i64("serialVersionUID")
        self._new_handle(desc)
        at_flags = r.pos
        desc.flags = r.u8("class flags")
        self.check_class(desc, at_flags)
        for _ in range(r.count("field count", self.field_min_bytes, value=r.u16("field count"))):
            at_code = r.pos
            code = chr(r.u8("field type code"))
            fname = r.utf("field name")
            if code in "L[":
                self.check_field_type(self.nested(), at_code)  # the type signature: a String or a back reference
            elif code not in PRIMITIVE_SIZES:
                raise r.fail(f"Java serialization: unknown field type code {code!r}", at_code)
            desc.fields.append((code, fname))
        self.annotation()
        desc.superclass = self._within("superclass", at, self.class_desc)
        return desc


def read_object_stream(r: Reader, what: str = "Java-serialized object") -> object:
    """One ``ObjectOutputStream`` stream at ``r``: header (ACED 0005) and one object; ``r``
    moves past it. Each ``InstantiationUtil.serializeObject`` call writes such a stream."""
    return ObjectStreamWalker(r).read(what)


def short_class(name: str) -> str:
    return name.rsplit(".", 1)[-1].rsplit("$", 1)[-1]


def class_name_of(obj: object) -> str | None:
    """The class a Java-serialized object, enum constant or class object names (None otherwise)."""
    if isinstance(obj, JObject | JEnum):
        return obj.class_name
    if isinstance(obj, JClass):
        return obj.name
    return None
