"""Java ``DataInputView`` over bytes, for every reader of this package (pure Python, no JVM).

Flink writes ``_metadata`` files, state proxies and serializer snapshots with
``DataOutputStream`` semantics (big-endian ints, ``writeUTF`` strings in modified UTF-8) and
almost nothing carries an outer length, so a reader must walk every field. What this reader
adds to a plain cursor:

* one error base, :class:`SavepointReadError` (message and byte offset), for every short or
  malformed read, so callers never see ``struct.error``, ``IndexError`` or
  ``UnicodeDecodeError``. :class:`Reader` raises :class:`StateMetaError`; a reader of another
  file kind subclasses it and overrides the ``*_error`` methods to raise its own error class
  with its own wording (the ``_metadata`` reader's ``MetadataError``);
* the knowledge whether the bytes are the whole stream or only its first chunk (``complete``):
  the proxies are read from the head of state files without reading the whole file, and a
  read that runs past a partial chunk raises with ``truncated=True`` and ``need_more=True`` so
  the caller fetches a longer head and tries again, instead of reporting corruption.

Counts read from the stream are checked against the bytes left before anything is allocated
or looped over, so a bit-flipped count fails fast instead of hanging or allocating gigabytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple

_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

MAX_NESTING = 48  # serializer snapshots nest (POJO in List in Map ...); Flink has only the stack


class SavepointReadError(ValueError):
    """Bytes of a savepoint that Flink could not read either; ``offset`` is where reading stopped.

    The one base of the package's errors: ``str()`` is the message followed by ``(at byte N)``,
    and ``message`` / ``offset`` are kept apart for callers that report them separately."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message} (at byte {offset})")
        self.message = message
        self.offset = offset


class StateMetaError(SavepointReadError):
    """State meta bytes Flink could not read either (or not past this point); ``offset`` is where.

    ``truncated`` says the bytes ended early; ``need_more`` says they ended only because the
    reader was given the first part of a longer stream (read more and retry)."""

    def __init__(self, message: str, offset: int, truncated: bool = False, need_more: bool = False) -> None:
        super().__init__(message, offset)
        self.truncated = truncated
        self.need_more = need_more


class Utf8Fault(NamedTuple):
    """Where a modified UTF-8 string first breaks, as indexes into the string's bytes.

    ``kind``: ``lead`` (a 10xxxxxx or 1111xxxx lead byte), ``partial`` (the string ends inside
    a character) or ``continuation`` (a byte after the lead is not 10xxxxxx); ``lead`` is the
    character's first byte and ``last`` its last (the lead itself for ``lead``)."""

    kind: str
    lead: int
    last: int


def state_meta_utf8_error(fault: Utf8Fault, offset: int) -> SavepointReadError:
    """The state-meta readers name the character's first byte, whatever broke it."""
    return StateMetaError(f"malformed modified UTF-8 around byte {fault.lead} of the string", offset + fault.lead)


def decode_modified_utf8(
    raw: bytes,
    offset: int = 0,
    error: Callable[[Utf8Fault, int], SavepointReadError] = state_meta_utf8_error,
) -> str:
    """``DataInput.readUTF``'s body: modified UTF-8 (NUL as C0 80, non-BMP as surrogate pairs).

    Like Java: 1/2/3-byte patterns decode to one UTF-16 unit each, without overlong checks;
    surrogate pairs are joined and a lone surrogate stays one (a Python str can hold it, as a
    Java String does). A 10xxxxxx or 1111xxxx lead byte, a string ending inside a character or
    a missing continuation byte raises ``error(fault, offset)`` (``offset`` = where ``raw``
    starts in its file): each reader words and places the fault its own way."""
    if raw.isascii():
        return raw.decode("ascii")
    units: list[int] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        top = c >> 4
        if top < 8:
            units.append(c)
            i += 1
            continue
        width = 2 if top in (12, 13) else 3 if top == 14 else 0
        if width == 0:
            raise error(Utf8Fault("lead", i, i), offset)
        if i + width > n:
            raise error(Utf8Fault("partial", i, i), offset)
        if any(raw[i + j] & 0xC0 != 0x80 for j in range(1, width)):
            raise error(Utf8Fault("continuation", i, i + width - 1), offset)
        if width == 2:
            units.append(((c & 0x1F) << 6) | (raw[i + 1] & 0x3F))
        else:
            units.append(((c & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F))
        i += width
    return b"".join(u.to_bytes(2, "big") for u in units).decode("utf-16-be", errors="surrogatepass")


class Reader:
    """A DataInputStream over ``data[pos:end]``; ``complete`` = these are all the stream's bytes."""

    __slots__ = ("data", "pos", "end", "complete", "depth")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None, complete: bool = True) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        self.complete = complete
        self.depth = 0

    @property
    def left(self) -> int:
        return self.end - self.pos

    def fail(self, message: str, at: int | None = None) -> SavepointReadError:
        """The error of this reader's kind for ``message`` at ``at`` (default: the position)."""
        return StateMetaError(message, self.pos if at is None else at)

    def short_read_error(self, k: int, what: str) -> SavepointReadError:
        """``need(k)`` failed: ``k`` negative, or more than the bytes left."""
        if k < 0:
            return StateMetaError(f"negative length {k} for {what}", self.pos)
        more = not self.complete and self.end >= len(self.data)
        return StateMetaError(
            f"truncated: {what} needs {k} bytes, {self.end - self.pos} left",
            self.pos,
            truncated=True,
            need_more=more,
        )

    def count_error(self, what: str, k: int, at: int) -> SavepointReadError:
        """A count (read at ``at``) whose items cannot fit in the bytes left."""
        more = not self.complete and self.end >= len(self.data)
        return StateMetaError(
            f"{what} {k} cannot fit in the {self.end - self.pos} bytes left", at, truncated=True, need_more=more
        )

    def utf8_error(self, fault: Utf8Fault, offset: int) -> SavepointReadError:
        """A malformed modified UTF-8 string whose bytes start at ``offset``."""
        return state_meta_utf8_error(fault, offset)

    def need(self, k: int, what: str) -> None:
        if k < 0 or self.pos + k > self.end:
            raise self.short_read_error(k, what)

    def _num(self, layout: struct.Struct, what: str) -> int:
        self.need(layout.size, what)
        v = layout.unpack_from(self.data, self.pos)[0]
        self.pos += layout.size
        return v

    def u8(self, what: str = "byte") -> int:
        self.need(1, what)
        b = self.data[self.pos]
        self.pos += 1
        return b

    def i8(self, what: str = "byte") -> int:
        b = self.u8(what)
        return b - 256 if b > 127 else b

    def boolean(self, what: str = "boolean") -> bool:
        return self.u8(what) != 0

    def i16(self, what: str = "short") -> int:
        return self._num(_I16, what)

    def u16(self, what: str = "unsigned short") -> int:
        return self._num(_U16, what)

    def i32(self, what: str = "int") -> int:
        return self._num(_I32, what)

    def i64(self, what: str = "long") -> int:
        return self._num(_I64, what)

    def take(self, k: int, what: str) -> bytes:
        self.need(k, what)
        b = self.data[self.pos : self.pos + k]
        self.pos += k
        return b

    def skip(self, k: int, what: str) -> None:
        self.need(k, what)
        self.pos += k

    def i64s(self, k: int, what: str) -> tuple[int, ...]:
        """``k`` big-endian longs (an offsets array)."""
        self.need(8 * k, what)
        out = struct.unpack_from(f">{k}q", self.data, self.pos)
        self.pos += 8 * k
        return out

    def utf(self, what: str = "string") -> str:
        """``DataInput.readUTF``: an unsigned short length, then modified UTF-8."""
        return self.modified_utf8(self.u16(what + " length"), what)

    def modified_utf8(self, n: int, what: str) -> str:
        """The next ``n`` bytes as modified UTF-8 (the body of ``readUTF`` and of long strings)."""
        start = self.pos
        return decode_modified_utf8(self.take(n, what), start, self.utf8_error)

    def count(self, what: str, item_min_bytes: int = 1, value: int | None = None) -> int:
        """An element count (int unless ``value`` was read already) that must fit in the bytes left.

        Negative counts fail as Java's ``new X[n]`` would; a count whose items cannot fit in
        what is left fails as truncation (so a partial chunk asks for more)."""
        at = self.pos
        k = self.i32(what) if value is None else value
        if k < 0:
            raise self.fail(f"negative {what}: {k}", at)
        if k * item_min_bytes > self.end - self.pos:
            raise self.count_error(what, k, at)
        return k

    def flink_string(self, what: str = "string") -> str:
        """``StringValue.readString`` (``StringUtils.readString``): a variable-length length + 1
        (0 = null), then each char as a variable-length int of up to 7 bits per byte."""
        at = self.pos

        def varint() -> int:
            v = self.u8(what)
            if v < 0x80:
                return v
            v &= 0x7F
            shift = 7
            while True:
                cur = self.u8(what)
                if shift > 28:
                    raise self.fail(f"malformed variable-length number in {what}", at)
                if cur < 0x80:
                    return v | (cur << shift)
                v |= (cur & 0x7F) << shift
                shift += 7

        n = varint()
        if n == 0:
            raise self.fail(f"{what} is null", at)
        n -= 1
        if n > self.end - self.pos:  # each char takes at least one byte
            self.need(n, what)
        units = [varint() & 0xFFFF for _ in range(n)]
        return b"".join(u.to_bytes(2, "big") for u in units).decode("utf-16-be", errors="surrogatepass")

    def enter(self, what: str) -> None:
        """One level deeper in nested snapshots or objects (refused past ``MAX_NESTING``)."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.fail(f"{what} nested deeper than {MAX_NESTING}")

    def leave(self) -> None:
        self.depth -= 1

    def sub(self, length: int, what: str) -> Reader:
        """A reader over the next ``length`` bytes (a frame); this reader moves past them."""
        self.need(length, what)
        r = Reader(self.data, self.pos, self.pos + length, complete=True)
        r.depth = self.depth
        self.pos += length
        return r
