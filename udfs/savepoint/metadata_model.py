"""What reading a Flink ``_metadata`` file yields, and how it fails.

:class:`SavepointMetadata` (one file) holds :class:`OperatorState` (one per operator, in file
order), each with the :class:`StateStream` of its managed state and where their bytes are
(:class:`StreamRef`). :class:`MetadataError` is every failure, with the byte offset where
reading stopped; :class:`MetadataReader` is the package's byte reader raising it, in the
wording of the ``_metadata`` reader, and checking the strings Flink turns into paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from udfs.savepoint import binary
from udfs.savepoint.binary import Reader, SavepointReadError, Utf8Fault


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
    layout: dict | None = None  # where the values are: {"key_groups": [start, offsets]} / {"partitions": [...]}


@dataclass
class Handle:
    """One deserialized state handle: its type as Flink names it and the size Flink declares.

    ``streams``: where the state streams behind it start (see StateStream)."""

    type_name: str
    state_size: int
    streams: tuple[StreamRef, ...] = ()
    layout: dict | None = None  # key-group offsets or operator state partitions (StateStream.layout)

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
    files: list = field(default_factory=list)  # handles.FileRef: every file a state handle names

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


def operator_state_of(
    *,
    operator_id: str,
    parallelism: int,
    max_parallelism: int,
    name: str | None,
    uid: str | None,
    file_offset: int,
    coordinator: Handle | None,
    subtasks: dict[int, list[tuple[str, Handle]] | None],
    fully_finished: bool,
) -> OperatorState:
    """The :class:`OperatorState` of what was read for one operator, by Flink's definitions.

    ``subtasks``: subtask index -> (kind, handle) of its non-null handles, None for a finished
    subtask. ``state_size`` is the coordinator's size plus every subtask handle's (Flink's
    ``getStateSize``); ``has_state`` is a coordinator state or any subtask handle
    (``hasState``); ``handle_types`` are the distinct ``kind:descriptor``; ``state_streams``
    are the managed keyed / operator streams, by subtask index.
    """
    kinds: set[str] = set()
    size = 0 if coordinator is None else coordinator.state_size
    if coordinator is not None:
        kinds.add("coordinator:" + coordinator.descriptor)
    has_subtask_handle = False
    streams: list[StateStream] = []
    for index, handles in sorted(subtasks.items()):
        if handles is None:
            continue
        size += sum(h.state_size for _, h in handles)
        for kind, h in handles:
            has_subtask_handle = True
            kinds.add(f"{kind}:{h.descriptor}")
            if kind in ("managed_keyed", "managed_operator"):
                streams += [StateStream(kind, index, h.descriptor, ref, h.layout) for ref in h.streams]
    return OperatorState(
        operator_id=operator_id,
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
        file_offset=file_offset,
        state_streams=streams,
    )


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
