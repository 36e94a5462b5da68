"""Kryo reading saved values, as Flink's ``KryoSerializer`` makes it read them (no JVM).

A generic type's values are Kryo's bytes: a class (a registration ID, or a name the first time a
class is met in one value), a reference marker, then what the class's serializer wrote. Kryo keeps
no field names, lengths or counts, so a class whose fields changed, or Kryo 5 (Flink 2.x) reading
what Kryo 2 (Flink 1.x) wrote, goes on reading from wherever the last read stopped; what it then
throws is a function of the bytes. This module reads exactly as the two Kryo versions Flink ships
do (Kryo 2.24.0 on Flink 1.x, Kryo 5.6 on 2.x, through Flink's ``NoFetchingInput``, which reads
no byte ahead), for what Flink's serializer and the job's generic classes need:

* the registrations of the restored serializer: Kryo's own (IDs 0 - 9 on Kryo 2 with ``void``,
  0 - 8 on Kryo 5), Flink's chill registrar (73 - 84, both lines), then the saved snapshot's, from
  85 in its order (:func:`registrations`); a class first met by name;
* the primitives, their boxes and ``String`` (Kryo 2 writes fixed-width numbers big-endian, Kryo 5
  little-endian; varints are the same), ``java.util`` lists and maps (``CollectionSerializer``,
  ``MapSerializer``: Kryo 5 writes a collection's size plus one and a flag Kryo 2 does not), and a
  user class by its ``FieldSerializer`` (the new class's fields, sorted by name);
* references (Flink turns them on): a marker before each object that is not a boxed primitive;
* what each throws, as the root cause Flink reports: ``Encountered unregistered class ID: N``,
  ``Unable to find class: X`` (a ``ClassNotFoundException``), the end of the bytes (Kryo 2: an
  ``EOFException: No more bytes left.``, Kryo 5: ``Buffer underflow.``), the JDK's exceptions of a
  garbage count (``new String(chars, 0, -5)``), with Kryo's serialization trace where Kryo adds it.

The ``chars`` buffer of Kryo's ``Input`` lives as long as Flink's input view (:class:`KryoInput`):
a string read from misaligned bytes keeps the characters an earlier string left there, as Kryo's
does. What the bytes alone do not decide (a class name that may be on the job's class path, an
allocation the heap may refuse, a class whose serializer is not emulated) raises
:class:`~udfs.savepoint.java_read.Undecidable`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from udfs.savepoint.java_read import (
    EOF,
    JAVA_CLASS_NAME,
    MAX_ALLOCATION,
    DataInput,
    JavaError,
    Undecidable,
    index_error,
    int32,
)

__all__ = ["KryoSetup", "KryoInput", "KryoFailure", "registrations", "read_kryo_value", "KRYO_EXCEPTION"]

KRYO_EXCEPTION = "com.esotericsoftware.kryo.KryoException"
_EOF_TEXT = {1: "No more bytes left.", 2: "Buffer underflow."}

# Kryo's own registrations (its constructor), then Flink's chill package registrar (flink-java on
# 1.x, flink-core on 2.x: the same classes at 73 - 84); the saved registrations follow from 85.
_KRYO_DEFAULTS = ("int", "java.lang.String", "float", "boolean", "byte", "char", "short", "long", "double", "void")
_CHILL = (
    "java.util.Arrays$ArrayList", "java.util.BitSet", "java.util.PriorityQueue", "java.util.regex.Pattern",
    "java.sql.Date", "java.sql.Time", "java.sql.Timestamp", "java.net.URI", "java.net.InetSocketAddress",
    "java.util.UUID", "java.util.Locale", "java.text.SimpleDateFormat",
)  # fmt: skip
_CHILL_FIRST = 73
_BOXES = {
    "java.lang.Integer": "int", "java.lang.Long": "long", "java.lang.Double": "double", "java.lang.Float": "float",
    "java.lang.Boolean": "boolean", "java.lang.Byte": "byte", "java.lang.Character": "char",
    "java.lang.Short": "short",
}  # fmt: skip
_LISTS = ("java.util.ArrayList", "java.util.LinkedList")
_MAPS = ("java.util.HashMap", "java.util.LinkedHashMap")
_NOT_FINAL = ("java.lang.Object", "java.util.List", "java.util.Map", "java.util.Set", "java.util.Collection")


def registrations(major: int, saved: list[str]) -> dict[int, str]:
    """ID -> class of the KryoSerializer Flink restores from a saved snapshot whose
    registrations are ``saved`` (class names, in order), on a Flink line of ``major``."""
    out = dict(enumerate(_KRYO_DEFAULTS if major == 1 else _KRYO_DEFAULTS[:9]))
    out.update({_CHILL_FIRST + i: c for i, c in enumerate(_CHILL)})
    out.update({_CHILL_FIRST + len(_CHILL) + i: c for i, c in enumerate(saved)})
    return out


@dataclass(frozen=True)
class KryoSetup:
    """One restored KryoSerializer: the Kryo version (``major`` of the reading Flink line), its
    registrations, and the fields (name, Java type) of the generic classes of the new jar."""

    major: int
    registered: dict[int, str]
    classes: Mapping[str, tuple[tuple[str, str], ...]]


class KryoFailure(Exception):
    """A KryoException of Kryo's own (no cause): its message and serialization trace;
    ``underflow``: Kryo 5's ``KryoBufferUnderflowException`` (Flink turns it into an EOF)."""

    def __init__(self, message: str, underflow: bool = False) -> None:
        super().__init__(message)
        self.text = message
        self.trace: list[str] = []
        self.underflow = underflow

    def add_trace(self, info: str) -> None:
        self.trace.append(info)

    def full_message(self) -> str:
        """``KryoException.getMessage``: the message, then ``Serialization trace:`` and each frame."""
        if not self.trace:
            return self.text
        return self.text + "\nSerialization trace:" + "".join("\n" + t for t in self.trace)


@dataclass
class KryoInput:
    """Kryo's ``NoFetchingInput`` over one Flink input view: reads exactly the bytes asked for,
    keeps at most a byte Kryo 5 peeked at, and its ``chars`` buffer (32 at first) across reads."""

    src: DataInput
    major: int
    chars: list[int] = field(default_factory=lambda: [0] * 32)
    peeked: int | None = None

    def eof(self) -> Exception:
        if self.major == 1:
            return JavaError(EOF, _EOF_TEXT[1])
        return KryoFailure(_EOF_TEXT[2], underflow=True)

    def byte(self) -> int:
        """The next byte, unsigned."""
        if self.peeked is not None:
            b, self.peeked = self.peeked, None
            return b
        if self.src.pos >= self.src.end:
            self.src.past_end()  # past the reader's bound: Undecidable
            raise self.eof()
        b = self.src.data[self.src.pos]
        self.src.pos += 1
        return b

    def peek_flag(self) -> bool:
        """Kryo 5's ``readVarIntFlag()``: the next byte's top bit, the byte kept for the next read."""
        if self.peeked is None:
            self.peeked = self.byte()
        return bool(self.peeked & 0x80)

    def take(self, n: int) -> bytes:
        return bytes(self.byte() for _ in range(n))

    def var_int(self, positive: bool) -> int:
        result, shift = 0, 0
        for i in range(5):
            b = self.byte()
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80 or i == 4:
                break
        result = int32(result)
        return result if positive else int32((result & 0xFFFFFFFF) >> 1 ^ -(result & 1))

    def var_long(self, positive: bool) -> int:
        result, shift = 0, 0
        for i in range(9):
            b = self.byte()
            result |= (b if i == 8 else b & 0x7F) << shift
            shift += 7
            if not b & 0x80 or i == 8:
                break
        result &= (1 << 64) - 1
        if not positive:
            result = (result >> 1) ^ -(result & 1)
        return (result + (1 << 63)) % (1 << 64) - (1 << 63)

    def flag_int(self) -> int:
        """Kryo's 6-bit-first varint (a string's length, Kryo 5's ``readVarIntFlag(true)``)."""
        b = self.byte()
        result = b & 0x3F
        if b & 0x40:
            for shift in (6, 13, 20, 27):
                b = self.byte()
                result |= (b & 0x7F) << shift
                if not b & 0x80:
                    break
        return int32(result)

    def fixed(self, fmt: str, n: int) -> Any:
        """A fixed-width number: big-endian on Kryo 2, little-endian on Kryo 5."""
        return struct.unpack(("<" if self.major == 2 else ">") + fmt, self.take(n))[0]

    def boolean(self) -> bool:
        return self.byte() == 1

    def string(self) -> str | None:
        """``Input.readString``: ASCII with the last byte's top bit set, else a flag-int length + 1
        (0: null, 1: empty) and UTF-8 characters."""
        if self.major == 2:
            if not self.peek_flag():
                return self._ascii()
            count = self.flag_int()
        else:
            b = self.byte()
            if not b & 0x80:
                self.peeked = b
                return self._ascii()
            self.peeked = b
            count = self.flag_int()
        if count in (0, 1):
            return None if count == 0 else ""
        return self._utf8(count - 1)

    def _ascii(self) -> str:
        n = 0
        while True:
            b = self.byte()
            if n == len(self.chars):
                self.chars = self.chars + [0] * n
            self.chars[n] = b & 0x7F
            n += 1
            if b & 0x80:
                return _string(self.chars, n)

    def _utf8(self, count: int) -> str:
        if count > MAX_ALLOCATION:
            raise Undecidable(f"Kryo allocates {count} characters for a string read from misaligned bytes")
        if len(self.chars) < count:
            self.chars = [0] * count
        if count <= 0:
            self.peeked = self.peeked if self.peeked is not None else self.byte()  # require(1) before the loop
        i = 0
        while i < count:
            b = self.byte()
            top = b >> 4
            if top < 8:
                self.chars[i] = b
            elif top in (12, 13):
                self.chars[i] = ((b & 0x1F) << 6) | (self.byte() & 0x3F)
            elif top == 14:
                b2, b3 = self.byte(), self.byte()
                self.chars[i] = ((b & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
            i += 1  # 10xx and 1111 lead bytes leave the buffer's character as it was
        return _string(self.chars, count)


def _string(chars: list[int], count: int) -> str:
    """``new String(chars, 0, count)``."""
    if count < 0 or count > len(chars):
        raise JavaError("java.lang.StringIndexOutOfBoundsException", f"offset 0, count {count}, length {len(chars)}")
    return "".join(map(chr, chars[:count]))


class _Graph:
    """What Kryo keeps while it reads one top-level value: classes met by name, the objects read
    (references point into it), and the slots reserved for objects being read (``readReferenceIds``:
    -1 for a type without references)."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.objects: list[Any] = []
        self.slots: list[int] = []


class KryoReader:
    """``kryo.readClassAndObject(input)`` of one restored KryoSerializer."""

    def __init__(self, setup: KryoSetup, inp: KryoInput, resolvable: Callable[[str], bool]) -> None:
        self.setup = setup
        self.inp = inp
        self.resolvable = resolvable
        self.graph = _Graph()

    def read_class_and_object(self) -> Any:
        cls = self.read_class()
        if cls is None:
            return None
        return self.read_object(cls)

    def read_class(self) -> str | None:
        """``DefaultClassResolver.readClass``: 0 null, 1 a name, else a registration ID + 2."""
        cid = self.inp.var_int(True)
        if cid == 0:
            return None
        if cid == 1:
            return self.read_name()
        cls = self.setup.registered.get(int32(cid - 2))
        if cls is None:
            raise KryoFailure(f"Encountered unregistered class ID: {int32(cid - 2)}")
        return cls

    def read_name(self) -> str:
        name_id = self.inp.var_int(True)
        if name_id in self.graph.names:
            return self.graph.names[name_id]
        name = self.inp.string()
        if name is None:
            raise Undecidable("Kryo read a null class name")
        if not JAVA_CLASS_NAME.fullmatch(name):
            raise JavaError("java.lang.ClassNotFoundException", name)  # the cause of "Unable to find class"
        if not self.resolvable(name):
            raise Undecidable(f"the bytes name class {name}: whether the job's class path holds it is not known")
        self.graph.names[name_id] = name
        return name

    def reserve(self, cls: str, may_be_null: bool) -> tuple[bool, Any]:
        """``readReferenceOrNull``: (True, the object) for null or an object read before, else
        (False, None) with a slot reserved for the object about to be read."""
        refs = cls not in _BOXES and cls not in _BOXES.values()  # Kryo 5 also leaves enums out: not read here
        if may_be_null:
            rid = self.inp.var_int(True)
            if rid == 0:
                return True, None
        if not refs:
            self.graph.slots.append(-1)
            return False, None
        if not may_be_null:
            rid = self.inp.var_int(True)
        if rid == 1:
            self.graph.slots.append(len(self.graph.objects))
            self.graph.objects.append(None)
            return False, None
        at = int32(rid - 2)
        if not 0 <= at < len(self.graph.objects):
            raise index_error(at, len(self.graph.objects))  # Kryo 5 wraps it; the root is the JDK's
        return True, self.graph.objects[at]

    def referenced(self, obj: Any) -> None:
        """``kryo.reference(object)``: the object fills the slot reserved for it."""
        if self.graph.slots:
            at = self.graph.slots.pop()
            if at >= 0:
                self.graph.objects[at] = obj

    def read_object(self, cls: str, may_be_null: bool = False) -> Any:
        done, value = self.reserve(cls, may_be_null)
        if done:
            return value
        depth = len(self.graph.slots)
        value = self.serializer_read(cls)
        if len(self.graph.slots) == depth:
            self.referenced(value)
        return value

    def serializer_read(self, cls: str) -> Any:
        inp = self.inp
        prim = _BOXES.get(cls, cls)
        readers: dict[str, Callable[[], Any]] = {
            "int": lambda: inp.var_int(False),
            "long": lambda: inp.var_long(False),
            "java.lang.String": inp.string,
            "double": lambda: inp.fixed("d", 8),
            "float": lambda: inp.fixed("f", 4),
            "boolean": inp.boolean,
            "byte": lambda: int32(inp.byte() << 24) >> 24,
            "char": lambda: inp.fixed("H", 2),
            "short": lambda: inp.fixed("h", 2),
            "void": lambda: None,
        }
        if prim in readers:
            return readers[prim]()
        if cls in _LISTS:
            return self.read_collection(cls)
        if cls in _MAPS:
            return self.read_map(cls)
        if cls in self.setup.classes:
            return self.read_fields(cls)
        raise Undecidable(f"Kryo's serializer for {cls} is not emulated")

    def read_collection(self, cls: str) -> list[Any] | None:
        """``CollectionSerializer.read`` without element generics (Flink's top-level type)."""
        out: list[Any] = []
        if self.setup.major == 1:
            self.referenced(out)  # kryo.reference(collection) before the length
            n = self.inp.var_int(True)
            _capacity(n, cls, 1)
            for _ in range(max(n, 0)):
                out.append(self.read_class_and_object())
            return out
        same_type = self.inp.peek_flag()
        n = self.inp.flag_int()
        if n == 0:
            return None
        n -= 1
        _capacity(n, cls, 2)
        self.referenced(out)
        if n == 0:
            return out
        if not same_type:
            return [self.read_class_and_object() for _ in range(n)]
        element = self.read_class()
        if element is None:
            return [None] * n
        can_be_null = self.inp.boolean()  # elementsCanBeNull (true by default) is read from the stream
        return [self.read_object(element, may_be_null=can_be_null) for _ in range(n)]

    def read_map(self, cls: str) -> dict[Any, Any] | None:
        """``MapSerializer.read`` without key / value generics."""
        n = self.inp.var_int(True)
        out: dict[Any, Any] = {}
        if self.setup.major == 2:
            if n == 0:
                return None
            n -= 1
            size = n + 1 if n < 3 else n  # MapSerializer.create's HashMap capacity
            if size < 0 and cls == "java.util.HashMap":
                raise JavaError("java.lang.IllegalArgumentException", f"Illegal initial capacity: {size}")
        self.referenced(out)
        for _ in range(max(n, 0)):
            key = self.read_class_and_object()
            out[_hashable(key)] = self.read_class_and_object()
        return out

    def read_fields(self, cls: str) -> dict[str, Any]:
        """``FieldSerializer.read``: the new class's fields in name order."""
        obj: dict[str, Any] = {"@class": cls}
        self.referenced(obj)
        for name, jtype in sorted(self.setup.classes[cls]):
            obj[name] = self.read_field(cls, name, jtype)
        return obj

    def read_field(self, cls: str, name: str, jtype: str) -> Any:
        """One field as Kryo's unsafe field accessors read it (Unsafe is there on JDK 17): a
        primitive straight from the input, an object field through Kryo, which adds the field to
        the serialization trace of a KryoException passing through it."""
        if jtype in _BOXES.values():
            return self.serializer_read(jtype)
        try:
            if jtype in ("java.lang.String", "String") or jtype in _BOXES:
                return self.read_object("java.lang.String" if jtype == "String" else jtype, may_be_null=True)
            if jtype in _NOT_FINAL:
                element = self.read_class()
                return None if element is None else self.read_object(element)
            raise Undecidable(f"Kryo's field {cls}.{name} ({jtype}) is not emulated")
        except KryoFailure as e:
            e.add_trace(f"{name} ({cls})")
            raise


def _capacity(n: int, cls: str, major: int) -> None:
    """An ArrayList sized for ``n``: Kryo 2 ``ensureCapacity`` (a negative size is ignored),
    Kryo 5 ``new ArrayList(n)``."""
    if n > MAX_ALLOCATION and cls == "java.util.ArrayList":
        raise Undecidable(f"Kryo sizes a {cls} for {n} elements read from misaligned bytes")
    if n < 0 and cls == "java.util.ArrayList" and major == 2:
        raise JavaError("java.lang.IllegalArgumentException", f"Illegal Capacity: {n}")


def _hashable(v: Any) -> Any:
    return repr(v) if isinstance(v, dict | list) else v


def read_kryo_value(setup: KryoSetup, inp: KryoInput, resolvable: Callable[[str], bool]) -> Any:
    """``KryoSerializer.deserialize``: Kryo reads one value; its exception as the root cause
    Flink reports (Kryo 2's EOF is rethrown as the ``EOFException`` it wraps, Kryo 5's underflow
    turned into one with the same message)."""
    try:
        return KryoReader(setup, inp, resolvable).read_class_and_object()
    except KryoFailure as e:
        if e.underflow:
            raise JavaError(EOF, e.full_message()) from e
        raise JavaError(KRYO_EXCEPTION, e.full_message()) from e
