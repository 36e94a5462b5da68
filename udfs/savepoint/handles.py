"""The state handles of a ``_metadata`` file, read as Flink's ``MetadataV2V3SerializerBase`` does.

A handle starts with a one-byte tag and has no length, so the only way to the next byte after
a handle is to read every field of its layout. :class:`HandleReader` holds every layout of the
newest reader (tags 0 - 17 in the positions that accept them) and is shared by every format
version, as Flink's base class is; a format adds only where it reads handles. The tags a
reading release does not know and the releases whose layouts differ under the same tag
(Flink 1.11's channel handles, Flink 1.14's changelog handles) are in ``releases``.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass

from udfs.savepoint.metadata_model import Handle, MetadataError, MetadataReader, StreamRef

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
# Which tags each position accepts (Flink's readers of 1.20+; earlier releases accept a subset).
STREAM_TAGS = frozenset({0, 1, 2, 3, 6, 15, 16})
KEYED_TAGS = frozenset({0, 3, 5, 7, 8, 9, 10, 11, 12, 13, 14})
OPERATOR_TAGS = frozenset({0, 4, 17})
CHANGELOG_DELTA_TAGS = frozenset({9, 10, 13})

OPERATOR_STATE_MODES = ("SPLIT_DISTRIBUTE", "UNION", "BROADCAST")  # OperatorStateHandle.Mode
STATE_SCOPES = ("EXCLUSIVE", "SHARED")  # CheckpointedStateScope
MAX_HANDLE_NESTING = 64  # changelog handles nest keyed handles; Flink itself has no limit but a stack


@dataclass(frozen=True)
class FileRef:
    """A file a state handle names: the operator it belongs to (None: outside any operator), the
    handle's type, and where its bytes are (``ref.path`` as written, ``ref.offset`` +
    ``ref.size`` the end the file must reach)."""

    operator_id: str | None
    handle: str
    ref: StreamRef


class HandleReader:
    """Reads state handles at the reader's position; ``tags`` records each tag read.

    ``stream_tags`` / ``keyed_tags`` / ``operator_tags``: the tags each position accepts (those
    the reading release knows). The methods a release's layout may change are the
    ``changelog_*`` and ``channel_subtask_index`` ones.
    """

    def __init__(
        self,
        r: MetadataReader,
        stream_tags: frozenset[int] = STREAM_TAGS,
        keyed_tags: frozenset[int] = KEYED_TAGS,
        operator_tags: frozenset[int] = OPERATOR_TAGS,
    ) -> None:
        self.r = r
        self.stream_tags, self.keyed_tags, self.operator_tags = stream_tags, keyed_tags, operator_tags
        self.tags: set[str] = set()
        # Every file a handle names (file, relative and segment handles, wherever they sit: managed
        # and raw state, incremental checkpoints' shared and private files, changelogs, channel
        # state, coordinators), with the operator being read: what must exist, and be as long as
        # the handles say, for the savepoint to be whole (``inventory`` checks each one).
        self.operator_id: str | None = None
        self.files: list[FileRef] = []

    def tag(
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

    def stream_handle(self, depth: int) -> Handle | None:
        """A StreamStateHandle (``depth``: how many handles enclose it); None for the null tag."""
        r = self.r
        # DataInputStream.read(): unsigned
        tag = self.tag("stream", r.u8, self.stream_tags, "Unknown implementation of StreamStateHandle, code: ", depth)
        if tag == NULL_HANDLE:
            return None
        if tag == FILE_STREAM_STATE_HANDLE:
            size = r.i64("file state size")
            path = r.path("file path")
            return self._named(Handle("FileStateHandle", size, (StreamRef("file", path, 0, size),)))
        if tag == BYTE_STREAM_STATE_HANDLE:
            name = r.utf("handle name")
            n = r.count("inline state length")
            at = r.pos
            r.skip(n, "inline state bytes")
            return Handle("ByteStreamStateHandle", n, (StreamRef("inline", None, at, n, r.data[at : r.pos], name),))
        if tag == RELATIVE_STREAM_STATE_HANDLE:
            path = r.path("relative path")
            size = r.i64("relative file state size")
            return self._named(Handle("RelativeFileStateHandle", size, (StreamRef("relative", path, 0, size),)))
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
            return self._named(Handle("SegmentFileStateHandle", size, (StreamRef("segment", path, start, size),)))
        return Handle("EmptySegmentFileStateHandle", 0)  # EMPTY_SEGMENT_FILE_HANDLE: the 0-byte singleton

    def _named(self, h: Handle) -> Handle:
        """A file-backed stream handle, recorded in ``files`` with the operator being read."""
        self.files.extend(FileRef(self.operator_id, h.type_name, ref) for ref in h.streams)
        return h

    def key_group_range(self) -> tuple[int, int]:
        """KeyGroupRange.of(start, start + num - 1) in Java int arithmetic: (range size, num as read).

        An empty range when start > end (also on overflow); else the constructor's checks."""
        size, num, _ = self._key_group_range()
        return size, num

    def _key_group_range(self) -> tuple[int, int, int]:
        r = self.r
        start = r.i32("start key group")
        num = r.i32("number of key groups")
        end = _wrap32(start + num - 1)
        if start > end:
            return 0, num, start
        if start < 0 or _wrap32(end - start + 1) < 0:
            raise MetadataError(f"invalid key-group range [{start}, {end}]", r.pos)
        return end - start + 1, num, start

    def _key_groups_body(self, type_name: str, depth: int) -> Handle:
        """A key-groups handle: its range and each key group's offset in the stream
        (``KeyGroupRangeOffsets``, kept as the handle's ``layout``: where a value reader seeks)."""
        r = self.r
        size, num, start = self._key_group_range()
        if num < 0:  # new long[num]
            raise MetadataError(f"negative number of key groups: {num}", r.pos)
        offsets = r.i64s(num, "key-group offsets")
        if num != size:  # KeyGroupRangeOffsets: one offset per key group of the range
            raise MetadataError(f"{num} key-group offsets for a key-group range of {size}", r.pos)
        delegate = self.stream_handle(depth + 1)
        if delegate is None:  # KeyGroupsStateHandle: checkNotNull(streamStateHandle)
            raise MetadataError(f"{type_name} without a delegate state handle (NullPointerException in Flink)", r.pos)
        layout = {"key_groups": [start, list(offsets)]}
        return Handle(f"{type_name}({delegate.descriptor})", delegate.state_size, delegate.streams, layout)

    def keyed_handle(self, depth: int) -> Handle | None:
        """A KeyedStateHandle (``depth``: how many handles enclose it); None for the null tag."""
        r = self.r
        # DataInputStream.readByte(): signed
        tag = self.tag("keyed", r.i8, self.keyed_tags, "Reading invalid KeyedStateHandle, type: ", depth)
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
            self.key_group_range()
            r.i64("sequence number from")
            r.i64("sequence number to")
            size = 0
            for _ in range(r.count("number of state changes", 8)):
                r.i32("key group")
                n = r.count("state change length")
                r.skip(n, "state change bytes")
                size += n
            self.byte_increment_tail()
            return Handle("InMemoryChangelogStateHandle", size)
        # CHANGELOG_FILE_INCREMENT_HANDLE (10) / _V2 (13)
        self.key_group_range()
        inner: set[str] = set()
        for _ in range(r.count("number of changelog stream handles", 9)):
            r.i64("changelog offset")
            inner.add(describe(self.stream_handle(depth + 1)))
        size = r.i64("changelog state size")
        self.file_increment_tail(tag)
        return Handle(f"ChangelogStateHandleStreamImpl([{', '.join(sorted(inner))}])", size)

    # -- the fields a release's layout may lack ----------------------------------------------------

    def changelog_backend_head(self) -> None:
        """ChangelogStateBackendHandle (8, 14) after its key-group range."""
        self.r.i64("checkpointed size")

    def changelog_backend_tail(self, tag: int) -> None:
        """ChangelogStateBackendHandle (8, 14) after its non-materialized handles."""
        self.r.i64("materialization id")
        if tag == CHANGELOG_HANDLE_V2:
            self.r.i64("checkpoint id")
        self.r.utf("state handle id")

    def byte_increment_tail(self) -> None:
        """InMemoryChangelogStateHandle (9) after its changes."""
        self.r.utf("state handle id")

    def file_increment_tail(self, tag: int) -> None:
        """ChangelogStateHandleStreamImpl (10, 13) after its state size."""
        self.r.i64("checkpointed size")
        self.r.utf("state handle id")
        if tag == CHANGELOG_FILE_INCREMENT_HANDLE_V2:
            self.r.utf("storage identifier")

    def channel_subtask_index(self) -> None:
        """A channel state handle's subtask index, before its channel info."""
        self.r.i32("subtask index")

    # -- layouts ----------------------------------------------------------------------------------

    def _incremental(self, v2: bool, depth: int) -> Handle:
        r = self.r
        r.i64("incremental checkpoint id")
        r.utf("backend identifier")
        self.key_group_range()
        if v2:
            r.i64("checkpointed size")
        meta = self.stream_handle(depth + 1)
        size = 0 if meta is None else meta.state_size
        parts = []
        for what in ("shared", "private"):
            kinds: set[str] = set()
            for _ in range(r.count(f"number of {what} state handles", 3)):
                r.utf(f"{what} state key")
                h = self.stream_handle(depth + 1)
                if h is not None:  # streamSubHandles() filters nulls
                    size += h.state_size
                    kinds.add(h.descriptor)
            parts.append(f"{what}=[{', '.join(sorted(kinds))}]")
        if v2:
            r.utf("state handle id")
        return Handle(
            f"IncrementalRemoteKeyedStateHandle(meta={describe(meta)}, {parts[0]}, {parts[1]})",
            size,
            meta.streams if meta is not None else (),
        )

    def _changelog_backend(self, tag: int, depth: int) -> Handle:
        r = self.r
        self.key_group_range()
        self.changelog_backend_head()
        size = 0
        materialized: set[str] = set()
        streams: list[StreamRef] = []
        for _ in range(r.count("number of materialized handles", 1)):
            h = self.keyed_handle(depth + 1)
            if h is not None:  # Flink drops (and logs) null materialized handles
                size += h.state_size
                materialized.add(h.descriptor)
                streams += h.streams
        delta: set[str] = set()
        for _ in range(r.count("number of non-materialized handles", 1)):
            at = r.pos
            h = self.keyed_handle(depth + 1)
            if h is not None:
                if not (
                    h.type_name.startswith("InMemoryChangelogStateHandle")
                    or h.type_name.startswith("ChangelogStateHandleStreamImpl")
                ):
                    raise MetadataError(f"{h.type_name} cannot be cast to ChangelogStateHandle", at)
                size += h.state_size
                delta.add(h.descriptor)
        self.changelog_backend_tail(tag)
        return Handle(
            f"ChangelogStateBackendHandleImpl(materialized=[{', '.join(sorted(materialized))}], "
            f"nonMaterialized=[{', '.join(sorted(delta))}])",
            size,
            tuple(streams),
        )

    def operator_handle(self) -> Handle | None:
        """An OperatorStateHandle; None for the null tag."""
        r = self.r
        tag = self.tag("operator", r.i8, self.operator_tags, "Reading invalid OperatorStateHandle, type: ")
        if tag == NULL_HANDLE:
            return None
        partitions = []  # (state name, mode, offsets): where each state's values are (the handle's layout)
        for _ in range(r.count("number of operator state names", 7)):
            name = r.utf("operator state name")
            at = r.pos
            mode = r.i8("distribution mode")
            if not 0 <= mode < len(OPERATOR_STATE_MODES):
                raise MetadataError(f"invalid OperatorStateHandle.Mode ordinal {mode}", at)
            offsets = r.i64s(r.count("number of partition offsets", 8), "partition offsets")
            partitions.append([name, OPERATOR_STATE_MODES[mode], list(offsets)])
        layout = {"partitions": partitions}
        if tag == SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE:
            r.path("task-owned directory")
            r.path("shared directory")
            empty = r.boolean("empty flag")
            at = r.pos
            delegate = self.stream_handle(1)
            if delegate is None or not delegate.type_name.endswith("SegmentFileStateHandle"):
                raise MetadataError("file-merging operator state needs a SegmentFileStateHandle delegate", at)
            name = "EmptyFileMergingOperatorStreamStateHandle" if empty else "FileMergingOperatorStreamStateHandle"
            return Handle(f"{name}({describe(delegate)})", delegate.state_size, delegate.streams, layout)
        delegate = self.stream_handle(1)
        if delegate is None:  # OperatorStreamStateHandle: checkNotNull(delegateStateHandle)
            raise MetadataError("OperatorStreamStateHandle without a delegate (NullPointerException in Flink)", r.pos)
        name = f"OperatorStreamStateHandle({delegate.descriptor})"
        return Handle(name, delegate.state_size, delegate.streams, layout)

    def channel_handle(self, is_input: bool) -> Handle:
        """An input channel or result subpartition state handle (``ChannelStateHandleSerializerV1``)."""
        r = self.r
        base = channel_handle_name(is_input)
        self.channel_subtask_index()
        r.i32("channel info gate/partition index")
        r.i32("channel info channel/subpartition index")
        r.skip(8 * r.count("number of channel offsets", 8), "channel offsets")
        size = r.i64("channel state size")
        delegate = self.stream_handle(1)
        if delegate is None:  # AbstractChannelStateHandle: checkNotNull(delegate); merged ones allow null
            raise MetadataError(f"{base} without a delegate (NullPointerException in Flink)", r.pos)
        return Handle(f"{base}({delegate.descriptor})", size)


def _wrap32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def describe(h: Handle | None) -> str:
    return "null" if h is None else h.descriptor


def channel_handle_name(is_input: bool) -> str:
    return "InputChannelStateHandle" if is_input else "ResultSubpartitionStateHandle"
