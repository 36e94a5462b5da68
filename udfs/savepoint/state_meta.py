"""The state half of a savepoint's metadata: which states each operator saved, and their types.

Every managed keyed state stream starts with a ``KeyedBackendSerializationProxy`` and every
managed operator state stream with an ``OperatorBackendSerializationProxy`` (both
``VersionedIOReadableWritable``: an int version first). They list each state's name, backend
state type, options (``KEYED_STATE_TYPE``, ``OPERATOR_STATE_DISTRIBUTION_MODE``...) and the
serializer snapshots Flink later checks the new job's serializers against. This module reads
them as Flink's readers do (layouts from Flink's sources, release-1.9.3 to the 2.x line):

* keyed proxy version 6 (Flink 1.7 - 2.3 write it): compression flag, the key serializer
  snapshot (TypeSerializerSnapshotSerializationUtil proxy, version 2), a short count and the
  state meta infos (StateMetaInfoSnapshotReadersWriters v6 = v7 layout). Versions 1 - 5 are
  Flink <= 1.6 formats (refused by Flink 1.17+, reported here as such).
* operator proxy version 5 (Flink 1.7 - 1.17: meta info v6, no compression flag) and 6 (1.18+:
  meta info v7, a compression flag first), then operator states and broadcast states, each
  list with a short count.

Where the proxies are: :func:`decode_operator_states` takes a parsed ``_metadata`` (whose
operators list their ``state_streams``: inline bytes or file paths, RocksDB incremental META
handles included) and a callable that returns the first N bytes of a file; it reads a first
chunk of each file and more only when the proxy is longer. Errors are :class:`StateMetaError`
only (truncated or malformed bytes, impossible counts), never anything else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from udfs.savepoint.binary import Reader, StateMetaError
from udfs.savepoint.serializer_snapshots import (
    ClassResolutionError,
    SnapshotNode,
    UserClass,
    read_serializer_snapshot,
    to_dict_with_classes,
)

__all__ = [
    "StateMetaError",
    "StateMetaInfo",
    "KeyedProxy",
    "OperatorProxy",
    "SubtaskProxy",
    "OperatorStateTypes",
    "read_keyed_proxy",
    "read_operator_proxy",
    "decode_operator_states",
    "local_file_reader",
]

# StateMetaInfoSnapshot.BackendStateType, by ordinal (written as ordinal() in every release)
BACKEND_STATE_TYPES = ("KEY_VALUE", "OPERATOR", "BROADCAST", "PRIORITY_QUEUE", "KEY_VALUE_V2")
KEYED_PROXY_VERSION = 6
OPERATOR_PROXY_VERSIONS = {5: 6, 6: 7}  # proxy version -> state meta info version it carries
FIRST_CHUNK = 64 * 1024
MAX_HEAD = 64 * 1024 * 1024  # a proxy is never this long; stop asking for more


@dataclass(frozen=True)
class StateMetaInfo:
    """One ``StateMetaInfoSnapshot``: ``serializers`` maps role (KEY_SERIALIZER,
    NAMESPACE_SERIALIZER, VALUE_SERIALIZER, USER_KEY...) to the snapshot tree, in file order.
    ``complete`` is False when reading stopped inside (an unknown snapshot class)."""

    name: str
    backend_state_type: str
    options: dict[str, str]
    serializers: dict[str, SnapshotNode]
    offset: int
    complete: bool = True

    def to_dict(self, classes: dict[str, UserClass] | None = None) -> dict:
        """The vectors' shape; with ``classes``, as read with the restoring job's classes
        (may raise ClassResolutionError, see ``to_dict_with_classes``)."""
        return {
            "name": self.name,
            "backend_state_type": self.backend_state_type,
            "options": dict(self.options),
            "serializers": {
                k: (v.to_dict() if classes is None else to_dict_with_classes(v, classes))
                for k, v in self.serializers.items()
            },
        }

    def describe(self) -> dict:
        d = self.to_dict()
        d["serializers"] = {k: v.describe() for k, v in self.serializers.items()}
        d["types"] = {k: v.type_text for k, v in self.serializers.items()}
        if not self.complete:
            d["complete"] = False
        return d


@dataclass(frozen=True)
class _Proxy:
    version: int
    compression: bool
    declared_states: int
    end: int
    stopped: str | None  # why reading stopped early (an unknown snapshot class), else None

    @property
    def complete(self) -> bool:
        return self.stopped is None


@dataclass(frozen=True)
class KeyedProxy(_Proxy):
    """A ``KeyedBackendSerializationProxy`` as read."""

    key_serializer: SnapshotNode | None = None
    states: tuple[StateMetaInfo, ...] = ()

    def to_dict(self, classes: dict[str, UserClass] | None = None) -> dict:
        """The shape the statetypes vectors record Flink's reading in (``keyed``). With
        ``classes`` (the restoring job's user classes), as that job's Flink reads it: a snapshot
        its reader rejects turns the whole entry into ``{"error": [message]}``."""
        try:
            key = self.key_serializer
            return {
                "proxy_version": self.version,
                "compression": self.compression,
                "key_serializer": (key.to_dict() if classes is None else to_dict_with_classes(key, classes))
                if key
                else None,
                "states": [s.to_dict(classes) for s in self.states],
            }
        except ClassResolutionError as e:
            return {"error": [e.java_message]}


@dataclass(frozen=True)
class OperatorProxy(_Proxy):
    """An ``OperatorBackendSerializationProxy`` as read."""

    states: tuple[StateMetaInfo, ...] = ()
    broadcast_states: tuple[StateMetaInfo, ...] = ()
    declared_broadcast_states: int = 0

    def to_dict(self, classes: dict[str, UserClass] | None = None) -> dict:
        """The shape of the vectors' ``operator`` entry (broadcast states only when there are
        some); ``classes`` as for KeyedProxy.to_dict."""
        try:
            d: dict = {"proxy_version": self.version, "states": [s.to_dict(classes) for s in self.states]}
            if self.broadcast_states:
                d["broadcast_states"] = [s.to_dict(classes) for s in self.broadcast_states]
        except ClassResolutionError as e:
            return {"error": [e.java_message]}
        return d


# ------------------------------------------------------------------------------------------------
#  Proxies from bytes
# ------------------------------------------------------------------------------------------------


class _StateStop(Exception):
    def __init__(self, info: StateMetaInfo, why: str) -> None:
        super().__init__(why)
        self.info = info
        self.why = why


def _meta_info(r: Reader) -> StateMetaInfo:
    """StateMetaInfoSnapshotReadersWriters.CurrentReaderImpl (meta info versions 6 and 7)."""
    at = r.pos
    name = r.utf("state name")
    at_type = r.pos
    ordinal = r.i32("backend state type")
    if not 0 <= ordinal < len(BACKEND_STATE_TYPES):
        raise StateMetaError(f"Index {ordinal} out of bounds for StateMetaInfoSnapshot.BackendStateType", at_type)
    options: dict[str, str] = {}
    for _ in range(r.count("number of state options", 4)):
        key = r.utf("option key")
        options[key] = r.utf("option value")
    serializers: dict[str, SnapshotNode] = {}
    for _ in range(r.count("number of serializer snapshots", 12)):
        role = r.utf("serializer role")
        read = read_serializer_snapshot(r)
        serializers[role] = read.node
        if not read.readable_past:
            info = StateMetaInfo(name, BACKEND_STATE_TYPES[ordinal], options, serializers, at, complete=False)
            unknown = next((n for n in read.node.walk() if n.kind in ("UNKNOWN", "LEGACY_CONFIG")), read.node)
            what = "a pre-1.7 TypeSerializerConfigSnapshot" if unknown.kind == "LEGACY_CONFIG" else "an unknown"
            raise _StateStop(
                info,
                f"state {name!r} {role}: {what} serializer snapshot class {unknown.class_name} at byte "
                f"{unknown.offset}; its payload layout is unknown, so nothing after it can be read",
            )
    return StateMetaInfo(name, BACKEND_STATE_TYPES[ordinal], options, serializers, at)


def _meta_infos(r: Reader, what: str) -> tuple[int, list[StateMetaInfo], str | None]:
    """A short count (``readShort``, signed as in Flink) and that many meta infos."""
    at = r.pos
    n = r.i16(f"number of {what}")
    if n < 0:  # new ArrayList<>(negative)
        raise StateMetaError(f"Illegal Capacity: {n} ({what})", at)
    r.count(f"number of {what}", 10, value=n)  # name (2) + type (4) + two counts (4) at least
    out: list[StateMetaInfo] = []
    for i in range(n):
        try:
            out.append(_meta_info(r))
        except _StateStop as stop:
            out.append(stop.info)
            left = n - i - 1
            return n, out, stop.why + (f"; {left} more {what} not read" if left else "")
    return n, out, None


def _version(r: Reader, what: str) -> int:
    """VersionedIOReadableWritable.read: the int version first."""
    return r.i32(f"{what} version")


def read_keyed_proxy(data: bytes, offset: int = 0, complete: bool = True) -> KeyedProxy:
    """A ``KeyedBackendSerializationProxy`` at ``offset``. ``complete=False``: ``data`` is only
    the head of the stream (a short read then raises StateMetaError with ``need_more``)."""
    r = Reader(bytes(data), offset, complete=complete)
    at = r.pos
    version = _version(r, "keyed backend serialization proxy")
    if version != KEYED_PROXY_VERSION:
        if 1 <= version < KEYED_PROXY_VERSION:
            raise StateMetaError(
                f"keyed backend serialization proxy version {version} (Flink <= 1.6): not read here; Flink 1.17+ "
                "refuse it too (Unsupported readVersion, please migrate using Flink 1.16)",
                at,
            )
        raise StateMetaError(
            f"Incompatible version: found {version}, compatible versions are [{KEYED_PROXY_VERSION}] "
            "(keyed backend serialization proxy)",
            at,
        )
    compression = r.boolean("key-group compression flag")
    key = read_serializer_snapshot(r)
    if not key.readable_past:
        return KeyedProxy(
            version,
            compression,
            -1,
            r.pos,
            f"key serializer: {'pre-1.7 config' if key.node.kind == 'LEGACY_CONFIG' else 'unknown'} serializer "
            f"snapshot class {key.node.class_name}; its payload layout is unknown, so no state can be read",
            key_serializer=key.node,
        )
    n, states, stopped = _meta_infos(r, "keyed states")
    return KeyedProxy(version, compression, n, r.pos, stopped, key_serializer=key.node, states=tuple(states))


def read_operator_proxy(data: bytes, offset: int = 0, complete: bool = True) -> OperatorProxy:
    """An ``OperatorBackendSerializationProxy`` at ``offset`` (versions 5 and 6)."""
    r = Reader(bytes(data), offset, complete=complete)
    at = r.pos
    version = _version(r, "operator backend serialization proxy")
    meta_version = OPERATOR_PROXY_VERSIONS.get(version)
    if meta_version is None:
        if 1 <= version <= 4:
            raise StateMetaError(
                f"operator backend serialization proxy version {version} (Flink <= 1.6): not read here; "
                "Flink 1.17+ refuse it too (No longer supported version, please upgrade first to Flink 1.16)",
                at,
            )
        raise StateMetaError(
            f"Incompatible version: found {version}, compatible versions are [6, 5, 4, 3, 2, 1] "
            "(operator backend serialization proxy)",
            at,
        )
    compression = r.boolean("operator state compression flag") if meta_version >= 7 else False
    n, states, stopped = _meta_infos(r, "operator states")
    if stopped is not None:
        return OperatorProxy(version, compression, n, r.pos, stopped, states=tuple(states))
    nb, broadcast, stopped = _meta_infos(r, "broadcast states")
    return OperatorProxy(
        version,
        compression,
        n,
        r.pos,
        stopped,
        states=tuple(states),
        broadcast_states=tuple(broadcast),
        declared_broadcast_states=nb,
    )


# ------------------------------------------------------------------------------------------------
#  Proxies of a parsed _metadata
# ------------------------------------------------------------------------------------------------

ReadHead = Callable[[str, int], bytes]
"""(path as written in ``_metadata``, n) -> the file's first n bytes (fewer if it is shorter)."""


@dataclass(frozen=True)
class SubtaskProxy:
    """The proxy of one subtask's state stream, or why it could not be read.

    ``source``: "inline", or the path as written; ``proxy`` is None when ``error`` says why
    (unreadable bytes, a missing file). ``bytes_read``: how much of the file was fetched."""

    kind: str
    subtask: int
    handle: str
    source: str
    proxy: KeyedProxy | OperatorProxy | None
    error: str | None = None
    bytes_read: int = 0
    layout: dict | None = None  # where its values are (StateStream.layout): key-group offsets, partitions


@dataclass
class OperatorStateTypes:
    """Per operator: every subtask's keyed and operator proxies (file order of subtasks)."""

    operator_id: str
    operator_name: str | None
    operator_uid: str | None
    keyed: list[SubtaskProxy] = field(default_factory=list)
    operator: list[SubtaskProxy] = field(default_factory=list)

    @property
    def keyed_proxy(self) -> KeyedProxy | None:
        """The first readable keyed proxy (all subtasks of a job write the same states)."""
        return next((s.proxy for s in self.keyed if isinstance(s.proxy, KeyedProxy)), None)

    @property
    def operator_proxy(self) -> OperatorProxy | None:
        return next((s.proxy for s in self.operator if isinstance(s.proxy, OperatorProxy)), None)

    def states(self, kind: str = "managed_keyed") -> dict[str, StateMetaInfo]:
        """Every state any subtask wrote, by name, first occurrence kept. Subtasks differ: a
        subtask whose keys never touched a state did not register it and its proxy lacks it."""
        out: dict[str, StateMetaInfo] = {}
        for s in self.keyed if kind == "managed_keyed" else self.operator:
            if s.proxy is None:
                continue
            infos = list(s.proxy.states) + list(getattr(s.proxy, "broadcast_states", ()))
            for info in infos:
                out.setdefault(info.name, info)
        return out

    @property
    def errors(self) -> list[str]:
        return [f"{s.kind}[{s.subtask}] {s.source}: {s.error}" for s in self.keyed + self.operator if s.error]


def _read_stream(
    kind: str, ref: object, read_head: ReadHead, first_chunk: int
) -> tuple[KeyedProxy | OperatorProxy, int]:
    reader = read_keyed_proxy if kind == "managed_keyed" else read_operator_proxy
    location = getattr(ref, "location", None)
    if location == "inline":
        data = getattr(ref, "data", None) or b""
        return reader(data, 0, True), len(data)
    path = getattr(ref, "path", None)
    if not path:
        raise StateMetaError(f"state stream without a location ({location})", 0)
    start = int(getattr(ref, "offset", 0) or 0) if location == "segment" else 0
    declared = int(getattr(ref, "size", 0) or 0)
    n = first_chunk
    while True:
        head = read_head(path, start + n)
        whole = len(head) < start + n
        body = head[start:]
        if declared > 0 and len(body) >= declared:
            body, whole = body[:declared], True
        try:
            return reader(body, 0, whole), len(head)
        except StateMetaError as e:
            if not e.need_more or whole or n >= MAX_HEAD:
                raise
            n *= 4


def decode_operator_states(
    metadata: object, read_head: ReadHead, first_chunk: int = FIRST_CHUNK
) -> dict[str, OperatorStateTypes]:
    """Every operator's keyed and operator proxies, by operator ID (operators without managed
    state streams are left out). ``metadata`` is a parsed ``_metadata``
    (``udfs.savepoint.metadata.parse_metadata``); its operators' ``state_streams`` say where each
    stream is. Files are read through ``read_head`` only as far as the proxy goes."""
    out: dict[str, OperatorStateTypes] = {}
    for op in getattr(metadata, "operators", ()):
        streams: Iterable = getattr(op, "state_streams", ()) or ()
        for s in streams:
            entry = out.setdefault(
                op.operator_id, OperatorStateTypes(op.operator_id, op.operator_name, op.operator_uid)
            )
            ref = s.ref
            source = "inline" if ref.location == "inline" else str(ref.path)
            layout = getattr(s, "layout", None)
            try:
                proxy, n = _read_stream(s.kind, ref, read_head, first_chunk)
                sp = SubtaskProxy(s.kind, s.subtask, s.handle, source, proxy, None, n, layout)
            except StateMetaError as e:
                sp = SubtaskProxy(s.kind, s.subtask, s.handle, source, None, str(e), layout=layout)
            except OSError as e:
                sp = SubtaskProxy(s.kind, s.subtask, s.handle, source, None, f"cannot read the file: {e}",
                                  layout=layout)  # fmt: skip
            (entry.keyed if s.kind == "managed_keyed" else entry.operator).append(sp)
    return out


def local_file_reader(savepoint_dir: str | Path) -> ReadHead:
    """A ``read_head`` for a savepoint folder on this machine. Relative paths are read from the
    folder; absolute ones (``file:/...``) where they are, or, when the savepoint was moved (the
    recorded paths are the writer's scratch paths), from the folder by their path below the
    savepoint's own folder name, else by file name."""
    root = Path(savepoint_dir)

    def resolve(path: str) -> Path:
        p = path
        if p.startswith("file://"):
            p = p[len("file://") :]
        elif p.startswith("file:"):
            p = p[len("file:") :]
        candidate = Path(p)
        if candidate.is_absolute():
            if candidate.exists():
                return candidate
            parts = candidate.parts
            if root.name in parts:
                tail = parts[len(parts) - 1 - parts[::-1].index(root.name) + 1 :]
                moved = root.joinpath(*tail)
                if moved.exists():
                    return moved
            return root / candidate.name
        return root / candidate

    def read_head(path: str, n: int) -> bytes:
        with open(resolve(path), "rb") as f:
            return f.read(n)

    return read_head
