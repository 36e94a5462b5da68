"""What a restoring task's reads of saved values throw, emulated over the bytes (no JVM).

A value reader (:mod:`udfs.savepoint.flink_values`, :mod:`udfs.savepoint.kryo_values`) reads saved
state the way Flink's serializers do, through :class:`DataInput`: a Java ``DataInputView`` over a
stream's bytes (``DataInputViewStreamWrapper`` over a state file, where reading goes on past one
value into the next; ``DataInputDeserializer`` over one framed value, where it ends at the
value's end). Where Java would throw, the reader raises :class:`JavaError` with the exception's
class and message as Flink reports them (the root of the chain); where what happens depends on
something the bytes do not hold (a class on the job's class path, the JVM's heap), it raises
:class:`Undecidable` with the reason. Java's integer arithmetic is kept where the misread bytes
reach it (``int`` wrap-around, shift counts taken modulo 32).
"""

from __future__ import annotations

import re
import struct

from udfs.savepoint.binary import Utf8Fault, decode_modified_utf8

__all__ = [
    "JavaError",
    "Undecidable",
    "DataInput",
    "EOF",
    "int32",
    "int64",
    "shl32",
    "index_error",
    "MAX_ALLOCATION",
    "JAVA_CLASS_NAME",
]

EOF = "java.io.EOFException"
# Arrays longer than this many elements are not emulated: whether the JVM can allocate them
# (OutOfMemoryError) depends on the task's heap, not on the bytes.
MAX_ALLOCATION = 1 << 24

# what Class.forName can find at all: a name that is not one fails whatever the class path
JAVA_CLASS_NAME = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*", re.ASCII)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")


class JavaError(Exception):
    """A Java exception: ``error_class`` and ``message`` are the root cause's (what Flink's failure
    names)."""

    def __init__(self, error_class: str, message: str | None = None) -> None:
        super().__init__(f"{error_class}: {message}")
        self.error_class = error_class
        self.message = message


class Undecidable(Exception):
    """The emulated read reached a point whose outcome is not a function of the saved bytes."""


def int32(v: int) -> int:
    """``v`` as a Java int (two's complement wrap-around)."""
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def int64(v: int) -> int:
    return (v + (1 << 63)) % (1 << 64) - (1 << 63)


def shl32(v: int, shift: int) -> int:
    """Java's ``int << shift`` (the shift count taken modulo 32)."""
    return int32(v << (shift & 31))


def index_error(index: int, length: int) -> JavaError:
    """``ArrayList.get`` / an array index out of range, in JDK 17's words."""
    return JavaError("java.lang.IndexOutOfBoundsException", f"Index {index} out of bounds for length {length}")


class DataInput:
    """A ``DataInputView`` over ``data[pos:end]``: big-endian reads that raise Java's
    ``EOFException`` (no message) past ``end``. ``view_id`` names the Java view object the
    reads go through (a Kryo serializer keeps one ``Input`` per view)."""

    def __init__(
        self, data: bytes, pos: int = 0, end: int | None = None, view_id: object = None, truncated: bool = False
    ) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        self.view_id = view_id if view_id is not None else self
        self.truncated = truncated  # the bytes stop at the reader's bound, not at the stream's end

    def past_end(self) -> JavaError:
        """Java's EOFException at the stream's end; past the reader's bound, nothing is known."""
        if self.truncated:
            raise Undecidable(f"the read goes past the first {len(self.data)} bytes the value reader takes of a stream")
        return JavaError(EOF)

    def available(self) -> int:
        return self.end - self.pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            self.pos = self.end
            raise self.past_end()
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def read_byte(self) -> int:
        """``readByte``: signed."""
        b = self.read_ubyte()
        return b - 256 if b > 127 else b

    def read_ubyte(self) -> int:
        if self.pos >= self.end:
            raise self.past_end()
        b = self.data[self.pos]
        self.pos += 1
        return b

    def read_boolean(self) -> bool:
        return self.read_ubyte() != 0

    def read_short(self) -> int:
        return _I16.unpack(self.take(2))[0]

    def read_ushort(self) -> int:
        return self.read_short() & 0xFFFF

    def read_int(self) -> int:
        return _I32.unpack(self.take(4))[0]

    def read_long(self) -> int:
        return _I64.unpack(self.take(8))[0]

    def read_float(self) -> float:
        return _F32.unpack(self.take(4))[0]

    def read_double(self) -> float:
        return _F64.unpack(self.take(8))[0]

    def read_utf(self) -> str:
        """``readUTF``: an unsigned short length, then modified UTF-8 (JDK's messages)."""
        raw = self.take(self.read_ushort())
        return decode_modified_utf8(raw, 0, _utf_error)  # type: ignore[arg-type]

    def skip(self, n: int) -> None:
        self.take(n)


def _utf_error(fault: Utf8Fault, offset: int) -> JavaError:
    """``DataInputStream.readUTF``'s wording: a bad lead byte is named by its index, a bad
    continuation by the index two past the lead (where its count stands then)."""
    if fault.kind == "partial":
        return JavaError("java.io.UTFDataFormatException", "malformed input: partial character at end")
    at = fault.lead if fault.kind == "lead" else fault.lead + 2
    return JavaError("java.io.UTFDataFormatException", f"malformed input around byte {at}")
