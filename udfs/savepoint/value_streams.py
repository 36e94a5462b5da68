"""Where a restoring task reads saved values, and in which order (no JVM).

Each state backend lays the values of a savepoint out its own way; this module walks them as the
backend's restore does, handing each value to a reader (:mod:`udfs.savepoint.flink_values`) and
stopping where Flink would stop, at the first exception:

* **heap, native** (``HeapRestoreOperation``): per key group, at its offset (``KeyGroupsStateHandle``'s
  ``KeyGroupRangeOffsets``), the key group's index, then as many states as the stream's proxy names,
  each a short state ID (the heap snapshot's own order: it is in the file) and its entries
  (namespace, key, value one after the other, no lengths) or its timers. A value read with more or
  fewer bytes than were written moves every later read; an ID that names no state fails as Flink's
  ``kvStatesById.get(id).getBackendStateType()`` does (the NullPointerException).
* **full snapshots** (canonical savepoints of either backend, RocksDB full checkpoints:
  ``FullSnapshotRestoreOperation``): per key group a state ID, then (key bytes, value bytes)
  pairs, each framed by its length, a flag in a key's first byte when the state ID changes
  (0xFFFF: the key group ends). A misread value stays inside its frame: heap restores read every
  value (``HeapSavepointRestoreOperation``), RocksDB reads one when user code asks for it.
* **operator state** (``OperatorStateRestoreOperation``): per state its partitions' offsets
  (``OperatorStateHandle``); a list element is read at its own offset, a broadcast state's entries
  one after the other from its first.

A task reads the streams of the subtasks whose key groups it takes (:func:`task_key_groups`), in
the old subtasks' order. The outcomes are :class:`Outcome`: the first ``JavaError`` (Flink's
failure), why the bytes do not decide (``Undecidable``), or nothing (read through).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from udfs.savepoint.flink_values import Reading, ValueReader, value_reader
from udfs.savepoint.java_read import DataInput, JavaError, Undecidable
from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.state_meta import StateMetaInfo

__all__ = [
    "Outcome",
    "StreamBytes",
    "key_group_range",
    "task_key_groups",
    "read_heap_native",
    "full_entries",
    "read_full_values",
    "read_operator_values",
    "read_delimited_list",
    "NO_STATE_MESSAGE",
]

# HeapRestoreOperation.readKeyGroupStateData: the state ID read names no state (JDK 17's helpful NPE)
NO_STATE_MESSAGE = (
    'Cannot invoke "org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot.getBackendStateType()" because '
    '"stateMetaInfoSnapshot" is null'
)
_NPE = "java.lang.NullPointerException"
_END_OF_KEY_GROUP = 0xFFFF


class Outcome(NamedTuple):
    """What one read came to: ``error`` (Flink's failure), ``undecidable`` (why the bytes do not
    say), both None: read through. ``where``: the read that decided, for the reason text."""

    error: JavaError | None = None
    undecidable: str | None = None
    where: str = ""

    @property
    def failed(self) -> bool:
        return self.error is not None


@dataclass(frozen=True)
class StreamBytes:
    """One old subtask's keyed or operator state stream: its bytes from the stream's start (the
    proxy first), the states its proxy names (in the proxy's order: their IDs), the key serializer
    and where its values are (``layout``: ``{"key_groups": [start, offsets]}`` or
    ``{"partitions": [[name, mode, offsets], ...]}``)."""

    subtask: int
    data: bytes
    states: tuple[StateMetaInfo, ...]
    key: SnapshotNode | None
    layout: dict[str, Any]
    truncated: bool = False  # the bytes stop at the reader's bound

    def input(self, pos: int, view: object = None) -> DataInput:
        """A view of the stream from ``pos`` (``seek``), reading on to its end."""
        return DataInput(self.data, pos, view_id=view, truncated=self.truncated)

    def key_group_offsets(self) -> list[tuple[int, int]]:
        start, offsets = self.layout.get("key_groups") or (0, [])
        return [(start + i, off) for i, off in enumerate(offsets)]

    @property
    def heap_native(self) -> bool:
        """The heap's own format (each key group at its offset starts with its index), not a full
        snapshot's (a RocksDB full checkpoint: a state ID first, offset 0 for an empty key group)."""
        for kg, off in self.key_group_offsets():
            if off <= 0 or off + 4 > len(self.data) or int.from_bytes(self.data[off : off + 4], "big") != kg:
                return False
        return True


def key_group_range(max_parallelism: int, parallelism: int, index: int) -> range:
    """``KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex``."""
    start = (index * max_parallelism + parallelism - 1) // parallelism
    end = ((index + 1) * max_parallelism - 1) // parallelism
    return range(start, end + 1)


def task_key_groups(streams: Sequence[StreamBytes], groups: range) -> Iterator[tuple[StreamBytes, int, int]]:
    """(stream, key group, offset) a task reads, stream after stream (old subtask order), each
    stream's key groups of the task's range in ascending order."""
    for s in sorted(streams, key=lambda s: s.subtask):
        for kg, off in s.key_group_offsets():
            if kg in groups:
                yield s, kg, off


# ------------------------------------------------------------------------------------------------
#  The heap's native snapshot
# ------------------------------------------------------------------------------------------------


@dataclass
class _StateRead:
    """How a task reads one saved state's entries: the readers of its parts."""

    info: StateMetaInfo
    timers: bool
    namespace: ValueReader | None
    key: ValueReader | None
    value: ValueReader | None
    flagged: bool


def _state_reads(stream: StreamBytes, reading: Reading, flagged: set[str]) -> list[_StateRead]:
    out = []
    for info in stream.states:
        s = info.serializers
        timers = info.backend_state_type == "PRIORITY_QUEUE"

        def reader(role: str, node: SnapshotNode | None, name: str = info.name) -> ValueReader | None:
            return value_reader(node, reading, (name, role)) if node is not None else None

        out.append(_StateRead(
            info, timers, reader("namespace", s.get("NAMESPACE_SERIALIZER")), reader("key", stream.key),
            reader("value", s.get("VALUE_SERIALIZER")), info.name in flagged,
        ))  # fmt: skip
    return out


def _read_entries(inp: DataInput, state: _StateRead, reading: Reading, key_in_range: Callable[[Any], None]) -> None:
    """``readMappingsInKeyGroup``: an int count, then each entry (``StateTable.put`` checks the key
    and namespace) or timer (the priority queue's key-group check)."""
    n = inp.read_int()
    for _ in range(max(n, 0)):
        if state.flagged:
            reading.suspect = True
        if state.timers:
            _, key, namespace = _need(state.value)(inp)
            if reading.suspect:
                key_in_range(key)
            continue
        namespace = _need(state.namespace)(inp)
        key = _need(state.key)(inp)
        _need(state.value)(inp)
        if key is None:
            raise JavaError(_NPE, "No key set. This method should not be called outside of a keyed context.")
        if namespace is None:
            raise JavaError(_NPE, "Provided namespace is null.")


def _need(r: ValueReader | None) -> ValueReader:
    if r is None:
        raise Undecidable("a saved state without the serializer its entries need")
    return r


def read_heap_native(
    streams: Sequence[StreamBytes], groups: range, reading: Reading, flagged: set[str], full_range: bool
) -> Outcome:
    """One heap task's restore of its key groups (module docstring). ``flagged``: the states whose
    values may be misread; ``full_range``: the task owns every key group (a timer read from
    misaligned bytes then always falls in its range)."""
    reads = {s.subtask: _state_reads(s, reading, flagged) for s in streams}

    def key_in_range(key: Any) -> None:
        if key is None:
            raise JavaError(_NPE, "Assigned key must not be null!")
        if not full_range:
            raise Undecidable("a timer read from misaligned bytes: its key group depends on the key's hash")

    for stream, kg, off in task_key_groups(streams, groups):
        where = f"key group {kg} of subtask {stream.subtask}'s stream"
        inp = stream.input(off)
        try:
            if inp.read_int() != kg:
                return Outcome(JavaError("java.lang.IllegalStateException", "Unexpected key-group in restore."), None,
                               where)  # fmt: skip
            states = reads[stream.subtask]
            for _ in range(len(states)):
                sid = inp.read_short()
                if not 0 <= sid < len(states):
                    return Outcome(JavaError(_NPE, NO_STATE_MESSAGE), None, where)
                _read_entries(inp, states[sid], reading, key_in_range)
        except JavaError as e:
            return Outcome(e, None, where)
        except Undecidable as e:
            return Outcome(None, str(e), where)
    return Outcome()


# ------------------------------------------------------------------------------------------------
#  Full snapshots (canonical savepoints, RocksDB full checkpoints)
# ------------------------------------------------------------------------------------------------


class Entry(NamedTuple):
    """One framed entry of a full snapshot: its key group, state ID, key and value bytes."""

    key_group: int
    state_id: int
    key: bytes
    value: bytes


def full_entries(stream: StreamBytes, groups: range) -> Iterator[Entry]:
    """``KeyGroupsIterator`` / ``KeyGroupEntriesIterator`` over one stream's key groups in
    ``groups`` (an offset 0: an empty key group)."""
    for kg, off in stream.key_group_offsets():
        if kg not in groups or off == 0:
            continue
        inp = stream.input(off)
        sid = inp.read_ushort()
        while True:
            key = inp.take(inp.read_int())
            value = inp.take(inp.read_int())
            yield Entry(kg, sid, bytes([key[0] & 0x7F]) + key[1:] if key[0] & 0x80 else key, value)
            if key[0] & 0x80:
                sid = inp.read_ushort()
                if sid == _END_OF_KEY_GROUP:
                    break


def read_delimited_list(inp: DataInput, element: ValueReader) -> list[Any]:
    """``ListDelimitedSerializer.deserializeList``: elements one after the other, a delimiter
    byte between them; an element that reads as null ends the list."""
    out = []
    while inp.available() > 0:
        e = element(inp)
        if inp.available() > 0:
            inp.read_byte()
        if e is None:
            break
        out.append(e)
    return out


def read_full_values(
    streams: Sequence[StreamBytes], groups: range, reading: Reading, states: Mapping[str, str],
    views: Mapping[str, object],
) -> Iterator[Outcome]:  # fmt: skip
    """The saved values of ``states`` (name -> kind: VALUE, LIST, MAP...) in the task's key
    groups, in the file's order, each read from its own bytes as a heap restore reads it (or
    RocksDB when user code asks for it): one outcome per value. ``views``: kind -> the input view
    the backend reuses for such values (``HeapSavepointRestoreOperation`` reads lists through its
    ``ListDelimitedSerializer``'s, the others through one more; Kryo keeps its input per view)."""
    for stream in sorted(streams, key=lambda s: s.subtask):
        readers: dict[int, tuple[str, ValueReader]] = {}
        for i, info in enumerate(stream.states):
            node = info.serializers.get("VALUE_SERIALIZER")
            if info.name in states and node is not None:
                readers[i] = (info.name, _framed_reader(node, reading, info.name, states[info.name]))
        if not readers:
            continue
        for entry in full_entries(stream, groups):
            got = readers.get(entry.state_id)
            if got is None:
                continue
            name, read = got
            where = f"a value of '{name}' in key group {entry.key_group} of subtask {stream.subtask}'s stream"
            reading.suspect = True
            view = views.get(states[name], views.get("other"))
            yield _attempt(lambda read=read, entry=entry, view=view: read(DataInput(entry.value, 0, view_id=view)),
                           where)  # fmt: skip


def _framed_reader(node: SnapshotNode, reading: Reading, state: str, kind: str) -> ValueReader:
    """How a value's own bytes are read: a list's elements delimited, a map entry's value after
    its null flag (the user key is in the key bytes), anything else whole."""
    parts = dict(node.nested)
    if kind == "LIST" and "element" in parts:
        element = value_reader(parts["element"], reading, (state, "value", "element"))
        return lambda inp: read_delimited_list(inp, element)
    if kind == "MAP" and "value" in parts:
        value = value_reader(parts["value"], reading, (state, "value", "value"))
        return lambda inp: None if inp.read_boolean() else value(inp)
    return value_reader(node, reading, (state, "value"))


# ------------------------------------------------------------------------------------------------
#  Operator and broadcast state
# ------------------------------------------------------------------------------------------------


def read_operator_values(stream: StreamBytes, reading: Reading, state: str) -> Iterator[Outcome]:
    """Each read of ``state`` in one operator state stream: a list element at each partition
    offset (one outcome each), or a broadcast state's whole map from its first offset."""
    info = next((i for i in stream.states if i.name == state), None)
    parts = [p for p in stream.layout.get("partitions") or () if p[0] == state]
    if info is None or not parts:
        return
    _, mode, offsets = parts[0]
    s = info.serializers
    view = object()  # deserializeOperatorStateValues / deserializeBroadcastStateValues: one view per state
    reading.suspect = True
    if mode == "BROADCAST":
        key = value_reader(_need_node(s.get("KEY_SERIALIZER")), reading, (state, "key"))
        value = value_reader(_need_node(s.get("VALUE_SERIALIZER")), reading, (state, "value"))
        yield _attempt(lambda: _broadcast(stream.input(offsets[0], view), key, value),
                       f"broadcast state '{state}' of subtask {stream.subtask}")  # fmt: skip
        return
    element = value_reader(_need_node(s.get("VALUE_SERIALIZER")), reading, (state, "value"))
    for off in offsets:
        yield _attempt(lambda off=off: element(stream.input(off, view)),
                       f"an element of '{state}' in subtask {stream.subtask}'s stream")  # fmt: skip


def _need_node(node: SnapshotNode | None) -> SnapshotNode:
    if node is None:
        raise Undecidable("a saved state without the serializer its values need")
    return node


def _broadcast(inp: DataInput, key: ValueReader, value: ValueReader) -> None:
    for _ in range(max(inp.read_int(), 0)):
        key(inp)
        value(inp)


def _attempt(read: Callable[[], Any], where: str) -> Outcome:
    try:
        read()
    except JavaError as e:
        return Outcome(e, None, where)
    except Undecidable as e:
        return Outcome(None, str(e), where)
    return Outcome(None, None, where)
