"""Reader of Flink checkpoint / savepoint ``_metadata`` files, in pure Python (no JVM).

The restore check must know, for every saved operator, what Flink itself reads from the file:
its ID, parallelism, max parallelism, whether it holds state (Flink's definition) and the size
its handles declare. Flink writes the file with ``DataOutputStream`` (big-endian) and state
handles carry a one-byte tag but no outer length, so the only honest way to reach operator N+1
is to parse every handle of operator N field by field, exactly as Flink's deserializer does.
Every layout below is transcribed from Flink's sources (``Checkpoints``,
``MetadataV2Serializer`` .. ``MetadataV6Serializer``, ``MetadataV2V3SerializerBase``,
``ChannelStateHandleSerializerV1/V2`` and 1.9/1.10's ``SavepointV2Serializer``), release line by
release line; see docs/savepoint-metadata.md for the table of tags and where each came from.
An unknown version or tag stops the parse with :class:`MetadataError` carrying the byte offset,
because without the tag's layout the rest of the file cannot be located (never guess).

Two layouts depend on the Flink release and not on the format version (both are format 3):
Flink 1.11 reads and writes channel-state handles without the subtask index of 1.12+, and Flink
1.14's changelog handles (tags 8, 9, 10) lack fields that 1.15+ read under the same tags. Pass the
reading release (``flink_line="1.14.6"``) to read as that release does; the default is the
newest reader (which, like Flink 1.15+, cannot read the 1.14 layout).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container
from dataclasses import dataclass, field

from udfs.savepoint import binary
from udfs.savepoint.binary import Reader, SavepointReadError, Utf8Fault
from udfs.savepoint.java_objects import (
    PRIMITIVE_SIZES,
    SC_ENUM,
    SC_EXTERNALIZABLE,
    SC_SERIALIZABLE,
    JClassDesc,
    ObjectStreamWalker,
)

HEADER_MAGIC = 0x4960672D
MASTER_STATE_MAGIC = 0xC96B1696
SUPPORTED_VERSIONS = (2, 3, 4, 5, 6)
CHECKPOINT_PROPERTIES_CLASS = "org.apache.flink.runtime.checkpoint.CheckpointProperties"

# Tags of MetadataV2V3SerializerBase (identical constants in SavepointV2Serializer for 0-5).
NULL_HANDLE = 0
BYTE_STREAM_STATE_HANDLE = 1
FILE_STREAM_STATE_HANDLE = 2
KEY_GROUPS_HANDLE = 3
PARTITIONABLE_OPERATOR_STATE_HANDLE = 4
INCREMENTAL_KEY_GROUPS_HANDLE = 5
RELATIVE_STREAM_STATE_HANDLE = 6  # 1.11+
SAVEPOINT_KEY_GROUPS_HANDLE = 7  # 1.13+
CHANGELOG_HANDLE = 8  # 1.14+ (layout changed in 1.15)
CHANGELOG_BYTE_INCREMENT_HANDLE = 9  # 1.14+ (layout changed in 1.15)
CHANGELOG_FILE_INCREMENT_HANDLE = 10  # 1.14+ (layout changed in 1.15)
INCREMENTAL_KEY_GROUPS_HANDLE_V2 = 11  # 1.15+
KEY_GROUPS_HANDLE_V2 = 12  # 1.15+
CHANGELOG_FILE_INCREMENT_HANDLE_V2 = 13  # 1.16+
CHANGELOG_HANDLE_V2 = 14  # 1.16+
SEGMENT_FILE_HANDLE = 15  # 1.20+
EMPTY_SEGMENT_FILE_HANDLE = 16  # 1.20+
SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE = 17  # 1.20+

# Tags of ChannelStateHandleSerializerV2 (format 6, Flink 2.1+).
INPUT_CHANNEL_STATE_HANDLE = 1
RESULT_SUBPARTITION_STATE_HANDLE = 2
MERGED_INPUT_CHANNEL_STATE_HANDLE = 3
MERGED_RESULT_SUBPARTITION_STATE_HANDLE = 4

TAG_NAMES = {
    NULL_HANDLE: "NULL_HANDLE",
    BYTE_STREAM_STATE_HANDLE: "BYTE_STREAM_STATE_HANDLE",
    FILE_STREAM_STATE_HANDLE: "FILE_STREAM_STATE_HANDLE",
    KEY_GROUPS_HANDLE: "KEY_GROUPS_HANDLE",
    PARTITIONABLE_OPERATOR_STATE_HANDLE: "PARTITIONABLE_OPERATOR_STATE_HANDLE",
    INCREMENTAL_KEY_GROUPS_HANDLE: "INCREMENTAL_KEY_GROUPS_HANDLE",
    RELATIVE_STREAM_STATE_HANDLE: "RELATIVE_STREAM_STATE_HANDLE",
    SAVEPOINT_KEY_GROUPS_HANDLE: "SAVEPOINT_KEY_GROUPS_HANDLE",
    CHANGELOG_HANDLE: "CHANGELOG_HANDLE",
    CHANGELOG_BYTE_INCREMENT_HANDLE: "CHANGELOG_BYTE_INCREMENT_HANDLE",
    CHANGELOG_FILE_INCREMENT_HANDLE: "CHANGELOG_FILE_INCREMENT_HANDLE",
    INCREMENTAL_KEY_GROUPS_HANDLE_V2: "INCREMENTAL_KEY_GROUPS_HANDLE_V2",
    KEY_GROUPS_HANDLE_V2: "KEY_GROUPS_HANDLE_V2",
    CHANGELOG_FILE_INCREMENT_HANDLE_V2: "CHANGELOG_FILE_INCREMENT_HANDLE_V2",
    CHANGELOG_HANDLE_V2: "CHANGELOG_HANDLE_V2",
    SEGMENT_FILE_HANDLE: "SEGMENT_FILE_HANDLE",
    EMPTY_SEGMENT_FILE_HANDLE: "EMPTY_SEGMENT_FILE_HANDLE",
    SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE: "SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE",
}
CHANNEL_TAG_NAMES = {
    INPUT_CHANNEL_STATE_HANDLE: "INPUT_CHANNEL_STATE_HANDLE",
    RESULT_SUBPARTITION_STATE_HANDLE: "RESULT_SUBPARTITION_STATE_HANDLE",
    MERGED_INPUT_CHANNEL_STATE_HANDLE: "MERGED_INPUT_CHANNEL_STATE_HANDLE",
    MERGED_RESULT_SUBPARTITION_STATE_HANDLE: "MERGED_RESULT_SUBPARTITION_STATE_HANDLE",
}
# Which tags each position accepts (Flink's readers of 1.20+; earlier releases accept a subset).
STREAM_TAGS = frozenset({0, 1, 2, 3, 6, 15, 16})
KEYED_TAGS = frozenset({0, 3, 5, 7, 8, 9, 10, 11, 12, 13, 14})
OPERATOR_TAGS = frozenset({0, 4, 17})
CHANGELOG_DELTA_TAGS = frozenset({9, 10, 13})

# The release line whose reader first knew each tag, and the newest format each line reads
# (MetadataSerializers / SavepointSerializers of that line). Used when the reading release is given.
TAG_SINCE = {
    **dict.fromkeys((0, 1, 2, 4, 5), (1, 3)),
    6: (1, 11),
    7: (1, 13),
    **dict.fromkeys((8, 9, 10), (1, 14)),
    **dict.fromkeys((11, 12), (1, 15)),
    **dict.fromkeys((13, 14), (1, 16)),
    **dict.fromkeys((15, 16, 17), (1, 20)),
}
STREAM_TAG_KEY_GROUPS_SINCE = (1, 11)  # a KeyGroupsStateHandle in a stream-handle position (tag 3)
NEWEST_FORMAT_READ = [((2, 1), 6), ((2, 0), 5), ((1, 16), 4), ((1, 11), 3), ((1, 3), 2)]


def _line(flink_line: str | None) -> tuple[int, int] | None:
    m = re.match(r"\s*(\d+)\.(\d+)", flink_line or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


OPERATOR_STATE_MODES = ("SPLIT_DISTRIBUTE", "UNION", "BROADCAST")  # OperatorStateHandle.Mode
STATE_SCOPES = ("EXCLUSIVE", "SHARED")  # CheckpointedStateScope
MAX_HANDLE_NESTING = 64  # changelog handles nest keyed handles; Flink itself has no limit but a stack

class MetadataError(SavepointReadError):
    """A ``_metadata`` file Flink could not read either; ``offset`` is where reading stopped."""


@dataclass(frozen=True)
class StreamRef:
    """Where one state stream's bytes are: ``inline`` in ``_metadata`` (ByteStreamStateHandle:
    ``offset`` = where they start in the file, ``data`` = the bytes), a ``file`` (FileStateHandle:
    ``path`` absolute as written), a ``relative`` file (RelativeFileStateHandle: ``path``
    relative to the savepoint folder) or a file ``segment`` (SegmentFileStateHandle: ``offset``
    = where the stream starts in ``path``). ``name`` is the inline handle's name."""

    location: str
    path: str | None
    offset: int
    size: int
    data: bytes | None = None
    name: str | None = None


@dataclass(frozen=True)
class StateStream:
    """A managed keyed / operator state stream of one subtask: the proxy with the state's names
    and serializer snapshots is at its head (``StreamRef``); for RocksDB native / incremental
    snapshots this is the handle's META stream. ``handle`` is the handle's descriptor."""

    kind: str
    subtask: int
    handle: str
    ref: StreamRef


@dataclass
class Handle:
    """One deserialized state handle: its type as Flink names it and the size Flink declares.

    ``streams``: where the state streams behind it start (see StateStream)."""

    type_name: str
    state_size: int
    streams: tuple[StreamRef, ...] = ()

    @property
    def descriptor(self) -> str:
        return self.type_name


@dataclass
class OperatorState:
    """One operator state as Flink's deserializer builds it (fields follow Flink's OperatorState)."""

    operator_id: str
    parallelism: int
    max_parallelism: int
    has_state: bool
    state_size: int
    subtask_count: int
    fully_finished: bool
    finished_subtasks: int
    operator_name: str | None
    operator_uid: str | None
    handle_types: list[str]
    has_coordinator_state: bool = False
    has_subtask_state: bool = False  # some subtask's OperatorSubtaskState.hasState()
    file_offset: int = 0
    state_streams: list[StateStream] = field(default_factory=list)  # managed keyed/operator streams


@dataclass
class SavepointMetadata:
    """What Flink reads from one ``_metadata`` file, operators in file order."""

    format_version: int
    checkpoint_id: int
    operators: list[OperatorState]
    master_state_count: int
    trailer_bytes: int
    body_end: int = 0
    total_bytes: int = 0
    unparsed_bytes: int = 0
    master_state_names: list[str] = field(default_factory=list)
    trailer_class: str | None = None
    checkpoint_properties: dict | None = None
    tags_seen: set[str] = field(default_factory=set)

    def _snapshot_type_fields(self) -> dict:
        ctype = (self.checkpoint_properties or {}).get("checkpointType")
        fields = ctype.get("fields") if isinstance(ctype, dict) else None
        return fields if isinstance(fields, dict) else {}

    @property
    def snapshot_type(self) -> str | None:
        """'Savepoint', 'Checkpoint', 'Full Checkpoint'...: CheckpointProperties.checkpointType.name (V4+)."""
        name = self._snapshot_type_fields().get("name")
        return name if isinstance(name, str) else None

    @property
    def savepoint_format(self) -> str | None:
        """'CANONICAL' / 'NATIVE' for savepoints (V4+ only; SavepointType.formatType), else None."""
        fmt = self._snapshot_type_fields().get("formatType")
        return fmt.get("enum") if isinstance(fmt, dict) else None


def metadata_utf8_error(fault: Utf8Fault, offset: int) -> MetadataError:
    """The ``_metadata`` reader's wording: a partial character at the end is said so, and a bad
    continuation byte is placed at the character's last byte."""
    if fault.kind == "partial":
        return MetadataError("malformed modified UTF-8: partial character at end", offset + fault.lead)
    at = fault.last if fault.kind == "continuation" else fault.lead
    return MetadataError(f"malformed modified UTF-8 around byte {at} of the string", offset + at)


def decode_modified_utf8(raw: bytes, offset: int = 0) -> str:
    """Java's DataInput.readUTF body (:func:`udfs.savepoint.binary.decode_modified_utf8`),
    malformed strings raising :class:`MetadataError` in the ``_metadata`` reader's wording."""
    return binary.decode_modified_utf8(raw, offset, metadata_utf8_error)


class MetadataReader(Reader):
    """The package's :class:`Reader` with the ``_metadata`` reader's errors: every short read is
    a :class:`MetadataError` saying "truncated file", strings fail as :func:`decode_modified_utf8`,
    and strings Flink turns into paths are checked as ``new Path(String)`` checks them."""

    __slots__ = ()

    def fail(self, message: str, at: int | None = None) -> MetadataError:
        return MetadataError(message, self.pos if at is None else at)

    def short_read_error(self, k: int, what: str) -> MetadataError:
        return MetadataError(f"truncated file: {what} needs {k} bytes, {self.end - self.pos} left", self.pos)

    def count_error(self, what: str, k: int, at: int) -> MetadataError:
        return MetadataError(f"truncated file: {what} {k} exceeds the remaining {self.end - self.pos} bytes", at)

    def utf8_error(self, fault: Utf8Fault, offset: int) -> MetadataError:
        return metadata_utf8_error(fault, offset)

    def path(self, what: str) -> str:
        """A string Flink turns into an ``org.apache.flink.core.fs.Path``."""
        at = self.pos
        s = self.utf(what)
        check_flink_path(s, at)
        return s


@dataclass
class _Subtask:
    handles: list[tuple[str, Handle]]  # (kind, handle) for every non-null handle
    state_size: int


class _MetadataParser:
    """One parse of one file; the instance carries the format version and release dialect."""

    def __init__(self, data: bytes, flink_line: str | None) -> None:
        self.r = MetadataReader(data)
        self.flink_line = flink_line or ""
        line = self.line = _line(flink_line)
        self.legacy_changelog = line == (1, 14)
        self.channel_without_subtask = line == (1, 11)
        self.stream_tags, self.keyed_tags, self.operator_tags = STREAM_TAGS, KEYED_TAGS, OPERATOR_TAGS
        if line is not None:  # the reading release knows only the tags of its time

            def known(tags: frozenset[int]) -> frozenset[int]:
                return frozenset(t for t in tags if TAG_SINCE.get(t, (0, 0)) <= line or t == 3)

            self.stream_tags = known(STREAM_TAGS) - ({3} if line < STREAM_TAG_KEY_GROUPS_SINCE else set())
            self.keyed_tags, self.operator_tags = known(KEYED_TAGS), known(OPERATOR_TAGS)
        self.version = 0
        self.tags: set[str] = set()

    # -- header and body ------------------------------------------------------------------------

    def parse(self) -> SavepointMetadata:
        r = self.r
        magic = r.i32("magic number") & 0xFFFFFFFF
        if magic != HEADER_MAGIC:
            raise MetadataError(
                f"not a Flink _metadata file: magic number 0x{magic:08x}, expected 0x{HEADER_MAGIC:08x}", 0
            )
        self.version = version = r.i32("metadata version")
        if version == 1:
            raise MetadataError("metadata version 1 (Flink 1.1 / 1.2) is no longer supported by Flink", 4)
        newest = next((v for since, v in NEWEST_FORMAT_READ if self.line is not None and self.line >= since), None)
        if newest is not None and version > newest:
            raise MetadataError(
                f"Unrecognized checkpoint version number: {version} (Flink {self.flink_line} reads up to {newest})", 4
            )
        if version not in SUPPORTED_VERSIONS:
            raise MetadataError(f"unknown metadata version {version} (known: 2 to 6)", 4)
        at = r.pos
        checkpoint_id = r.i64("checkpoint id")
        if checkpoint_id < 0:
            raise MetadataError(f"invalid checkpoint ID: {checkpoint_id}", at)
        at = r.pos
        num_master = r.i32("number of master states")
        if num_master < 0:
            raise MetadataError(f"invalid number of master states: {num_master}", at)
        master_names = [self._master_state() for _ in range(num_master)]
        num_ops = r.count("number of operator states", 16)
        operators = [self._operator_state() for _ in range(num_ops)]
        body_end = r.pos
        trailer_bytes = 0
        trailer_class = None
        props = None
        if version >= 4:
            obj, end = read_java_serialized_object(r.data, r.pos)
            trailer_class = obj.get("class") if isinstance(obj, dict) else None
            if trailer_class != CHECKPOINT_PROPERTIES_CLASS:
                raise MetadataError(
                    f"trailer is a serialized {trailer_class!r}, expected {CHECKPOINT_PROPERTIES_CLASS}", r.pos
                )
            props = obj.get("fields")
            trailer_bytes = end - r.pos
            r.pos = end
        return SavepointMetadata(
            format_version=version,
            checkpoint_id=checkpoint_id,
            operators=operators,
            master_state_count=num_master,
            trailer_bytes=trailer_bytes,
            body_end=body_end,
            total_bytes=r.end,
            unparsed_bytes=r.end - r.pos,
            master_state_names=master_names,
            trailer_class=trailer_class,
            checkpoint_properties=props,
            tags_seen=self.tags,
        )

    def _master_state(self) -> str:
        r = self.r
        at = r.pos
        if r.i32("master state magic") & 0xFFFFFFFF != MASTER_STATE_MAGIC:
            raise MetadataError("incorrect magic number in master state byte sequence", at)
        at = r.pos
        num = r.i32("master state length")
        if num <= 0:
            raise MetadataError("found zero or negative length for master state bytes", at)
        r.need(num, "master state bytes")
        inner = MetadataReader(r.data, r.pos, r.pos + num)
        inner.i32("master state version")
        name = inner.utf("master state name")
        inner.skip(inner.count("master state payload length"), "master state payload")
        if inner.pos != r.pos + num:
            raise MetadataError("found trailing bytes in master state", inner.pos)
        r.pos += num
        return name

    def _operator_state(self) -> OperatorState:
        r = self.r
        start = r.pos
        name = uid = None
        if self.version >= 5:
            name = r.utf("operator name") or None
            uid = r.utf("operator uid") or None
        r.need(16, "operator id")
        op_id = r.data[r.pos : r.pos + 16].hex()
        r.pos += 16
        parallelism = r.i32("parallelism")
        max_parallelism = r.i32("max parallelism")
        if parallelism < 0:  # OperatorState's constructor: new HashMap<>(parallelism)
            raise MetadataError(f"Illegal initial capacity: {parallelism} (negative parallelism)", r.pos)
        if parallelism > max_parallelism:  # OperatorState's constructor
            raise MetadataError(
                f"Parallelism {parallelism} is not smaller or equal to max parallelism {max_parallelism}.", r.pos
            )
        coordinator = None
        if self.version == 2:
            r.i32("chain length")  # legacy field, ignored by Flink
        else:
            at = r.pos
            coordinator = self._stream_handle(0)
            if coordinator is not None and coordinator.type_name != "ByteStreamStateHandle":
                raise MetadataError(f"expected a ByteStreamStateHandle but found a {coordinator.type_name}", at)
        at = r.pos
        num_subtasks = r.i32("number of subtask states")
        fully_finished = False
        subtasks: dict[int, _Subtask | None] = {}
        if num_subtasks < 0 and self.version == 2:
            num_subtasks = 0  # V2 loops 'for j < num' without allocating: no subtasks
        if num_subtasks < 0:
            if coordinator is not None:
                raise MetadataError("Coordinator State should be null for fully finished operator state", at)
            fully_finished = True
        else:
            if num_subtasks > r.end - r.pos:
                raise MetadataError(f"truncated file: {num_subtasks} subtask states cannot fit", at)
            for _ in range(num_subtasks):
                at = r.pos
                stored = r.i32("subtask index")
                finished = self.version >= 3 and stored < 0
                index = -stored - 1 if finished else stored
                if index < 0 or index >= parallelism:
                    raise MetadataError(f"subtask index {index} outside the operator's parallelism {parallelism}", at)
                # OperatorState.putState: a HashMap, a repeated index replaces the earlier one
                subtasks[index] = None if finished else self._subtask_state()
        kinds: set[str] = set()
        size = 0 if coordinator is None else coordinator.state_size
        if coordinator is not None:
            kinds.add("coordinator:" + coordinator.descriptor)
        has_subtask_handle = False
        streams: list[StateStream] = []
        for index, sub in sorted(subtasks.items()):
            if sub is None:
                continue
            size += sub.state_size
            for kind, h in sub.handles:
                has_subtask_handle = True
                kinds.add(f"{kind}:{h.descriptor}")
                if kind in ("managed_keyed", "managed_operator"):
                    streams += [StateStream(kind, index, h.descriptor, ref) for ref in h.streams]
        return OperatorState(
            operator_id=op_id,
            parallelism=parallelism,
            max_parallelism=max_parallelism,
            has_state=coordinator is not None or has_subtask_handle,
            state_size=size,
            subtask_count=len(subtasks),
            fully_finished=fully_finished,
            finished_subtasks=sum(1 for s in subtasks.values() if s is None),
            operator_name=name,
            operator_uid=uid,
            handle_types=sorted(kinds),
            has_coordinator_state=coordinator is not None,
            has_subtask_state=has_subtask_handle,
            file_offset=start,
            state_streams=streams,
        )

    def _subtask_state(self) -> _Subtask:
        r = self.r
        handles: list[tuple[str, Handle]] = []
        if self.version == 2:
            r.i64("subtask duration")  # removed field, still in the V2 layout
            at = r.pos
            legacy = r.i32("legacy state count")
            if legacy > 0:
                raise MetadataError(
                    "Legacy state (from Flink <= 1.1, created through the 'Checkpointed' interface) "
                    "is no longer supported.",
                    at,
                )
        for kind in ("managed_operator", "raw_operator"):
            if r.i32(kind + " present flag") != 0:
                h = self._operator_handle()
                if h is not None:
                    handles.append((kind, h))
        for kind in ("managed_keyed", "raw_keyed"):
            h = self._keyed_handle(0)
            if h is not None:
                handles.append((kind, h))
        if self.version >= 3:
            for kind, is_input in (("input_channel", True), ("output_channel", False)):
                # deserializeCollection: new ArrayList<>() then 'for i < size': negative = empty
                n = r.i32(kind + " state count")
                if n > r.end - r.pos:
                    raise MetadataError(f"truncated file: {kind} state count {n} cannot fit", r.pos - 4)
                for _ in range(max(n, 0)):
                    h = self._channel_handle(is_input)
                    if h is not None:
                        handles.append((kind, h))
        return _Subtask(handles, sum(h.state_size for _, h in handles))

    # -- handles ------------------------------------------------------------------------------------

    def _handle_tag(
        self,
        family: str,
        read: Callable[[str], int],
        known: Container[int],
        unknown: str,
        depth: int = 0,
        names: dict[int, str] = TAG_NAMES,
    ) -> int:
        """The tag that starts a state handle, refused as Flink's reader of that family refuses it.

        Every handle position reads its tag the same way: a handle nested deeper than any real
        file is refused before it is read, a tag the position (or the reading release) does not
        know fails with that reader's message -- ``unknown`` followed by the tag -- and each tag
        read is recorded in ``tags`` as ``family:tag:name``.
        """
        at = self.r.pos
        if depth > MAX_HANDLE_NESTING:
            raise MetadataError(f"state handles nested deeper than {MAX_HANDLE_NESTING}", at)
        tag = read(f"{family} state handle tag")
        if tag not in known:
            raise MetadataError(f"{unknown}{tag}", at)
        self.tags.add(f"{family}:{tag}:{names.get(tag, '?')}")
        return tag

    def _stream_handle(self, depth: int) -> Handle | None:
        r = self.r
        # DataInputStream.read(): unsigned
        tag = self._handle_tag(
            "stream", r.u8, self.stream_tags, "Unknown implementation of StreamStateHandle, code: ", depth
        )
        if tag == NULL_HANDLE:
            return None
        if tag == FILE_STREAM_STATE_HANDLE:
            size = r.i64("file state size")
            path = r.path("file path")
            return Handle("FileStateHandle", size, (StreamRef("file", path, 0, size),))
        if tag == BYTE_STREAM_STATE_HANDLE:
            name = r.utf("handle name")
            n = r.count("inline state length")
            at = r.pos
            r.skip(n, "inline state bytes")
            return Handle("ByteStreamStateHandle", n, (StreamRef("inline", None, at, n, r.data[at : r.pos], name),))
        if tag == RELATIVE_STREAM_STATE_HANDLE:
            path = r.path("relative path")
            size = r.i64("relative file state size")
            return Handle("RelativeFileStateHandle", size, (StreamRef("relative", path, 0, size),))
        if tag == KEY_GROUPS_HANDLE:
            return self._key_groups_body("KeyGroupsStateHandle", depth)
        if tag == SEGMENT_FILE_HANDLE:
            start = r.i64("segment start position")
            size = r.i64("segment state size")
            at_scope = r.pos
            scope = r.i32("segment scope")
            if not 0 <= scope < len(STATE_SCOPES):
                raise MetadataError(f"invalid CheckpointedStateScope ordinal {scope}", at_scope)
            path = r.path("segment file path")
            r.utf("logical file id")
            return Handle("SegmentFileStateHandle", size, (StreamRef("segment", path, start, size),))
        return Handle("EmptySegmentFileStateHandle", 0)  # EMPTY_SEGMENT_FILE_HANDLE: the 0-byte singleton

    def _key_group_range(self) -> tuple[int, int]:
        """KeyGroupRange.of(start, start + num - 1) in Java int arithmetic: (range size, num as read).

        An empty range when start > end (also on overflow); else the constructor's checks."""
        r = self.r
        start = r.i32("start key group")
        num = r.i32("number of key groups")
        end = _wrap32(start + num - 1)
        if start > end:
            return 0, num
        if start < 0 or _wrap32(end - start + 1) < 0:
            raise MetadataError(f"invalid key-group range [{start}, {end}]", r.pos)
        return end - start + 1, num

    def _key_groups_body(self, type_name: str, depth: int) -> Handle:
        r = self.r
        size, num = self._key_group_range()
        if num < 0:  # new long[num]
            raise MetadataError(f"negative number of key groups: {num}", r.pos)
        r.skip(8 * num, "key-group offsets")
        if num != size:  # KeyGroupRangeOffsets: one offset per key group of the range
            raise MetadataError(f"{num} key-group offsets for a key-group range of {size}", r.pos)
        delegate = self._stream_handle(depth + 1)
        if delegate is None:  # KeyGroupsStateHandle: checkNotNull(streamStateHandle)
            raise MetadataError(f"{type_name} without a delegate state handle (NullPointerException in Flink)", r.pos)
        return Handle(f"{type_name}({delegate.descriptor})", delegate.state_size, delegate.streams)

    def _keyed_handle(self, depth: int) -> Handle | None:
        r = self.r
        # DataInputStream.readByte(): signed
        tag = self._handle_tag("keyed", r.i8, self.keyed_tags, "Reading invalid KeyedStateHandle, type: ", depth)
        if tag == NULL_HANDLE:
            return None
        if tag in (KEY_GROUPS_HANDLE, KEY_GROUPS_HANDLE_V2, SAVEPOINT_KEY_GROUPS_HANDLE):
            name = "KeyGroupsSavepointStateHandle" if tag == SAVEPOINT_KEY_GROUPS_HANDLE else "KeyGroupsStateHandle"
            h = self._key_groups_body(name, depth)
            if tag == KEY_GROUPS_HANDLE_V2:
                r.utf("state handle id")
            return h
        if tag in (INCREMENTAL_KEY_GROUPS_HANDLE, INCREMENTAL_KEY_GROUPS_HANDLE_V2):
            return self._incremental(tag == INCREMENTAL_KEY_GROUPS_HANDLE_V2, depth)
        if tag in (CHANGELOG_HANDLE, CHANGELOG_HANDLE_V2):
            return self._changelog_backend(tag, depth)
        if tag == CHANGELOG_BYTE_INCREMENT_HANDLE:
            self._key_group_range()
            r.i64("sequence number from")
            r.i64("sequence number to")
            size = 0
            for _ in range(r.count("number of state changes", 8)):
                r.i32("key group")
                n = r.count("state change length")
                r.skip(n, "state change bytes")
                size += n
            if not self.legacy_changelog:
                r.utf("state handle id")
            return Handle("InMemoryChangelogStateHandle", size)
        # CHANGELOG_FILE_INCREMENT_HANDLE (10) / _V2 (13)
        self._key_group_range()
        inner: set[str] = set()
        for _ in range(r.count("number of changelog stream handles", 9)):
            r.i64("changelog offset")
            inner.add(_desc(self._stream_handle(depth + 1)))
        size = r.i64("changelog state size")
        if not self.legacy_changelog:
            r.i64("checkpointed size")
            r.utf("state handle id")
            if tag == CHANGELOG_FILE_INCREMENT_HANDLE_V2:
                r.utf("storage identifier")
        return Handle(f"ChangelogStateHandleStreamImpl([{', '.join(sorted(inner))}])", size)

    def _incremental(self, v2: bool, depth: int) -> Handle:
        r = self.r
        r.i64("incremental checkpoint id")
        r.utf("backend identifier")
        self._key_group_range()
        if v2:
            r.i64("checkpointed size")
        meta = self._stream_handle(depth + 1)
        size = 0 if meta is None else meta.state_size
        parts = []
        for what in ("shared", "private"):
            kinds: set[str] = set()
            for _ in range(r.count(f"number of {what} state handles", 3)):
                r.utf(f"{what} state key")
                h = self._stream_handle(depth + 1)
                if h is not None:  # streamSubHandles() filters nulls
                    size += h.state_size
                    kinds.add(h.descriptor)
            parts.append(f"{what}=[{', '.join(sorted(kinds))}]")
        if v2:
            r.utf("state handle id")
        return Handle(
            f"IncrementalRemoteKeyedStateHandle(meta={_desc(meta)}, {parts[0]}, {parts[1]})",
            size,
            meta.streams if meta is not None else (),
        )

    def _changelog_backend(self, tag: int, depth: int) -> Handle:
        r = self.r
        self._key_group_range()
        if not self.legacy_changelog:
            r.i64("checkpointed size")
        size = 0
        materialized: set[str] = set()
        streams: list[StreamRef] = []
        for _ in range(r.count("number of materialized handles", 1)):
            h = self._keyed_handle(depth + 1)
            if h is not None:  # Flink drops (and logs) null materialized handles
                size += h.state_size
                materialized.add(h.descriptor)
                streams += h.streams
        delta: set[str] = set()
        for _ in range(r.count("number of non-materialized handles", 1)):
            at = r.pos
            h = self._keyed_handle(depth + 1)
            if h is not None:
                if not (
                    h.type_name.startswith("InMemoryChangelogStateHandle")
                    or h.type_name.startswith("ChangelogStateHandleStreamImpl")
                ):
                    raise MetadataError(f"{h.type_name} cannot be cast to ChangelogStateHandle", at)
                size += h.state_size
                delta.add(h.descriptor)
        if not self.legacy_changelog:
            r.i64("materialization id")
            if tag == CHANGELOG_HANDLE_V2:
                r.i64("checkpoint id")
            r.utf("state handle id")
        return Handle(
            f"ChangelogStateBackendHandleImpl(materialized=[{', '.join(sorted(materialized))}], "
            f"nonMaterialized=[{', '.join(sorted(delta))}])",
            size,
            tuple(streams),
        )

    def _operator_handle(self) -> Handle | None:
        r = self.r
        tag = self._handle_tag("operator", r.i8, self.operator_tags, "Reading invalid OperatorStateHandle, type: ")
        if tag == NULL_HANDLE:
            return None
        for _ in range(r.count("number of operator state names", 7)):
            r.utf("operator state name")
            at = r.pos
            mode = r.i8("distribution mode")
            if not 0 <= mode < len(OPERATOR_STATE_MODES):
                raise MetadataError(f"invalid OperatorStateHandle.Mode ordinal {mode}", at)
            r.skip(8 * r.count("number of partition offsets", 8), "partition offsets")
        if tag == SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE:
            r.path("task-owned directory")
            r.path("shared directory")
            empty = r.boolean("empty flag")
            at = r.pos
            delegate = self._stream_handle(1)
            if delegate is None or not delegate.type_name.endswith("SegmentFileStateHandle"):
                raise MetadataError("file-merging operator state needs a SegmentFileStateHandle delegate", at)
            name = "EmptyFileMergingOperatorStreamStateHandle" if empty else "FileMergingOperatorStreamStateHandle"
            return Handle(f"{name}({_desc(delegate)})", delegate.state_size, delegate.streams)
        delegate = self._stream_handle(1)
        if delegate is None:  # OperatorStreamStateHandle: checkNotNull(delegateStateHandle)
            raise MetadataError("OperatorStreamStateHandle without a delegate (NullPointerException in Flink)", r.pos)
        return Handle(f"OperatorStreamStateHandle({delegate.descriptor})", delegate.state_size, delegate.streams)

    def _channel_handle(self, is_input: bool) -> Handle:
        r = self.r
        base = "InputChannelStateHandle" if is_input else "ResultSubpartitionStateHandle"
        if self.version >= 6:  # ChannelStateHandleSerializerV2: tagged
            plain = INPUT_CHANNEL_STATE_HANDLE if is_input else RESULT_SUBPARTITION_STATE_HANDLE
            merged = MERGED_INPUT_CHANNEL_STATE_HANDLE if is_input else MERGED_RESULT_SUBPARTITION_STATE_HANDLE
            unknown = f"Unknown {'input' if is_input else 'output'} state handle type: "
            tag = self._handle_tag("channel", r.u8, (plain, merged), unknown, names=CHANNEL_TAG_NAMES)
            if tag == merged:
                r.i32("subtask index")
                size = r.i64("channel state size")
                delegate = self._stream_handle(1)
                r.skip(r.count("serialized channel offsets length"), "serialized channel offsets")
                return Handle(f"Merged{base}({_desc(delegate)})", size)
        if not self.channel_without_subtask:
            r.i32("subtask index")
        r.i32("channel info gate/partition index")
        r.i32("channel info channel/subpartition index")
        r.skip(8 * r.count("number of channel offsets", 8), "channel offsets")
        size = r.i64("channel state size")
        delegate = self._stream_handle(1)
        if delegate is None:  # AbstractChannelStateHandle: checkNotNull(delegate); merged ones allow null
            raise MetadataError(f"{base} without a delegate (NullPointerException in Flink)", r.pos)
        return Handle(f"{base}({delegate.descriptor})", size)


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*\Z")


def check_flink_path(path: str, offset: int) -> None:
    """The checks of Flink's ``new Path(String)`` that can reject a path string read from a file.

    Empty strings are refused; a scheme (text before a ':' that precedes the first '/') must be a
    valid URI scheme and must be followed by an absolute path ("Relative path in absolute URI").
    Windows drive letters ("C:...") are not schemes. The authority is not validated here.
    """
    if not path:
        raise MetadataError("Can not create a Path from an empty string", offset)
    if len(path) >= 2 and path[1] == ":" and path[0].isascii() and path[0].isalpha():
        path = "/" + path
    colon, slash = path.find(":"), path.find("/")
    if colon == -1 or (slash != -1 and colon > slash):
        return
    scheme, start = path[:colon], colon + 1
    if not _SCHEME.match(scheme):
        raise MetadataError(f"Illegal character in scheme name of path {path!r}", offset)
    if path.startswith("//", start) and len(path) - start > 2:
        next_slash = path.find("/", start + 2)
        start = next_slash if next_slash > 0 else len(path)
    rest = path[start:]
    if rest and not rest.replace("\\", "/").startswith("/"):
        raise MetadataError(f"Relative path in absolute URI: {path!r}", offset)


def _wrap32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def _desc(h: Handle | None) -> str:
    return "null" if h is None else h.descriptor


def parse_metadata(data: bytes, flink_line: str | None = None) -> SavepointMetadata:
    """Parse one ``_metadata`` file as Flink's ``Checkpoints.loadCheckpointMetadata`` would.

    ``flink_line`` is the Flink release that reads the file (as in a restore: the new job's
    version, e.g. '1.14.6'). When given, the file is read as that release's reader would: formats
    and tags newer than the release fail as there, and 1.11 / 1.14 use their own layouts (module
    docstring). Without it, the newest reader (2.3) is modelled. Raises MetadataError(message, offset) on anything Flink
    could not read (bad magic, unknown version or tag, truncation, malformed string, ...).
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"parse_metadata needs bytes, got {type(data).__name__}")
    return _MetadataParser(bytes(data), flink_line).parse()


# ---------------------------------------------------------------------------------------------
#  Java object serialization (the V4+ trailer: ObjectOutputStream.writeObject(CheckpointProperties))
# ---------------------------------------------------------------------------------------------

# What ObjectInputStream can resolve for CheckpointProperties in Flink 1.16 - 2.3 (the classes and
# enum constants of CheckpointProperties, CheckpointType, SavepointType, SnapshotType and
# SavepointFormatType in those releases). Anything else is a ClassNotFoundException /
# InvalidObjectException in Flink, so the file does not load.
TRAILER_ENUMS = {
    "org.apache.flink.core.execution.SavepointFormatType": frozenset({"CANONICAL", "NATIVE"}),
    "org.apache.flink.runtime.checkpoint.SavepointType$PostCheckpointAction": frozenset(
        {"NONE", "SUSPEND", "TERMINATE"}
    ),
    "org.apache.flink.runtime.checkpoint.SnapshotType$SharingFilesStrategy": frozenset(
        {"FORWARD_BACKWARD", "FORWARD", "NO_SHARING"}
    ),
}
TRAILER_CLASSES = frozenset(
    {
        CHECKPOINT_PROPERTIES_CLASS,
        "org.apache.flink.runtime.checkpoint.CheckpointType",
        "org.apache.flink.runtime.checkpoint.SavepointType",
        "java.lang.Enum",
        *TRAILER_ENUMS,
    }
)


CHECKPOINT_PROPERTIES_SUID = 2  # declared in CheckpointProperties of every release writing a trailer
_CLASS_HIERARCHY_TOO_DEEP = "Java serialization: class hierarchy nested too deeply"


class CheckpointPropertiesWalker(ObjectStreamWalker):
    """The trailer of formats 4+ as Flink's ``ObjectInputStream`` accepts it, built as plain values.

    Values: an object is ``{"class": name, "fields": {...}}``, an enum constant ``{"enum": name,
    "class": name}``, an array ``{"array": name, "length": n}`` (primitives) or ``{"array": name,
    "items": [...]}``, a ``Class`` ``{"class_of": name}`` (its handle refers to the descriptor),
    block data ``{"block": length}``; char, short and floating-point fields are skipped (None).
    Checks: every object's and enum's class must be one Flink resolves (:data:`TRAILER_CLASSES`),
    enum constants must exist (:data:`TRAILER_ENUMS`), enum descriptors have serialVersionUID 0
    and CheckpointProperties its declared one. Nesting counts nested items, class descriptors and
    proxy superclasses on a limit of :data:`MAX_HANDLE_NESTING`; counts are checked against one
    byte per item; handles enter the table late (``late_handles``); the handle table and a class
    hierarchy are bounded only by the bytes (a hierarchy longer than the stream is a cycle).
    """

    NESTING = {
        "nested": "Java serialization: objects nested too deeply",
        "class": _CLASS_HIERARCHY_TOO_DEEP,
        "proxy superclass": _CLASS_HIERARCHY_TOO_DEEP,
    }
    FIELD_VALUES = {
        **ObjectStreamWalker.FIELD_VALUES,
        **{c: (lambda r, n=PRIMITIVE_SIZES[c]: r.skip(n, "primitive field")) for c in "CSFD"},
    }
    HEADER_ERROR = "expected a Java serialization stream (ACED0005) for the checkpoint properties, found {found}"
    PROTOCOL_1_ERROR = "Java serialization: externalizable without block data"
    WRITER_FAILED_ERROR = None
    max_handles = None
    sized_array_counts = False
    field_min_bytes = 0
    serializable_only = False
    late_handles = True

    def __init__(self, r: MetadataReader) -> None:
        super().__init__(r)
        self.max_class_chain = len(r.data)

    def enter(self, point: str, at: int) -> bool:
        message = self.NESTING.get(point)
        if message is None:
            return False
        self.r.depth += 1
        if self.r.depth > MAX_HANDLE_NESTING:
            raise MetadataError(message, at)
        return True

    def _resolve(self, desc: JClassDesc | None, at: int) -> JClassDesc:
        """ObjectInputStream resolves the class of every object and enum it builds (not of unused supers)."""
        if desc is None:
            raise MetadataError("Java serialization: object without a class descriptor", at)
        if desc.name not in TRAILER_CLASSES:
            raise MetadataError(f"class {desc.name} cannot be resolved (ClassNotFoundException in Flink)", at)
        return desc

    def new_object(self, desc: JClassDesc | None, at: int) -> tuple[object, dict[str, object], list[object]]:
        fields: dict[str, object] = {}
        return {"class": self._resolve(desc, at).name, "fields": fields}, fields, []

    def new_enum(self, desc: JClassDesc | None, name: object, at: int, at_name: int) -> object:
        desc = self._resolve(desc, at)
        known = TRAILER_ENUMS.get(desc.name)
        if known is not None and name not in known:
            raise MetadataError(f"enum constant {name} does not exist in class {desc.name}", at_name)
        return {"enum": name, "class": desc.name}

    def new_array(self, desc: JClassDesc | None, at: int) -> object:
        return {"array": desc.name if desc else None}

    def fill_array(self, array: dict, length: int, items: list[object] | None) -> None:  # type: ignore[override]
        if items is None:
            array["length"] = length
        else:
            array["items"] = items

    def new_class(self, desc: JClassDesc | None) -> tuple[object, object]:
        return {"class_of": desc.name if desc else None}, desc

    def new_block(self, data: bytes) -> object:
        return {"block": len(data)}

    def check_class(self, desc: JClassDesc, at_flags: int) -> None:
        """ObjectStreamClass's checks, worded as Java's InvalidClassException ("name; reason")."""
        name = desc.name
        if desc.flags & SC_SERIALIZABLE and desc.flags & SC_EXTERNALIZABLE:
            raise MetadataError(f"{name}; serializable and externalizable flags conflict", at_flags)
        if desc.flags & SC_ENUM and desc.suid != 0:
            raise MetadataError(f"{name}; enum descriptor has non-zero serialVersionUID: {desc.suid}", at_flags)
        if name == CHECKPOINT_PROPERTIES_CLASS and desc.suid != CHECKPOINT_PROPERTIES_SUID:
            raise MetadataError(f"{name}; local class incompatible: stream serialVersionUID {desc.suid}", at_flags)

    def check_field_type(self, type_name: object, at: int) -> None:
        return None

    def invalid_reference_error(self, handle: int, class_desc: bool) -> str:
        if class_desc:
            return "Java serialization: back reference is not a class descriptor"
        return super().invalid_reference_error(handle, class_desc)

    def long_string_length_error(self, n: int, at: int) -> MetadataError:
        return MetadataError("Java serialization: negative string length", at + 1)


def read_java_serialized_object(data: bytes, offset: int) -> tuple[object, int]:
    """Read one ``ObjectOutputStream`` stream (header + one object) at ``offset``; return it and its end."""
    r = MetadataReader(data, offset)
    obj = CheckpointPropertiesWalker(r).read("Java serialization")
    return obj, r.pos
