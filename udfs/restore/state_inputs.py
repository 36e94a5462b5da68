"""What one check knows before a deploy: the Flink lines, the backend, the new operators and classes.

The state half (:mod:`udfs.restore.state_rules`) decides from these inputs only. Each comes from the
spec (docs/state-rules.md, "Inputs"): the lines from ``flink_version`` (or the ``_metadata``
format), the backend from ``state_backend``, the optional modules from ``serializer_modules``, the
new key serializer from a node's ``state_key_serializer_snapshot``, what each node declares from
its ``declared_states`` (:mod:`udfs.restore.declared`) and the user classes from ``user_classes``.
What is missing is taken as unchanged, and the decision names it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from udfs.flink.profiles import restore_rules
from udfs.restore.declared import DECLARED_STATES_FIELD, Declarations, declarations_from_spec, snapshot_from_base64
from udfs.savepoint.serializer_snapshots import SnapshotNode, UserClass

__all__ = [
    "ClassFacts",
    "NewOperator",
    "StateContext",
    "KEY_SERIALIZER_FIELD",
    "key_serializer_from_spec",
    "backend_family",
    "line_major",
    "savepoint_major",
]


def line_major(line: str | None) -> int | None:
    """``"1.20"`` / ``"1.20.5"`` / ``"2.3"`` -> 1 / 1 / 2; None when unknown."""
    if not line:
        return None
    m = re.match(r"\s*(\d+)", str(line))
    return int(m.group(1)) if m else None


def savepoint_major(format_version: int | None, old_spec_flink_version: str | None = None) -> int | None:
    """The Flink major line that wrote a savepoint: the old job's spec says it when the manifest
    names that job; else the ``_metadata`` format does (1 - 4: Flink 1.x, 5 - 6: Flink 2.x)."""
    major = line_major(old_spec_flink_version)
    if major is not None:
        return major
    if format_version is None:
        return None
    return 1 if format_version <= 4 else 2


@dataclass(frozen=True)
class ClassFacts:
    """What a jar's class path says about one user class, by name (spec field ``user_classes``).

    ``kind``: ``pojo`` (Flink's POJO rules hold: PojoSerializer), ``generic`` (not a POJO, not an
    enum: Kryo), ``enum``, ``avro`` or ``absent`` (not in the jar). ``fields``: (name, Java type)
    of the serialized fields in declaration order (types as written: ``long``, ``String``,
    ``List<String>``, or fully qualified). ``enum_constants``: in declaration order."""

    name: str
    kind: str
    fields: tuple[tuple[str, str], ...] = ()
    enum_constants: tuple[str, ...] | None = None
    no_arg_constructor: str | None = None  # a generic class: public / other / none (None: not said)

    @staticmethod
    def from_dict(name: str, raw: Mapping[str, Any]) -> ClassFacts:
        """``{"kind": "pojo", "fields": [{"name": "a", "type": "long"}], "enum_constants": [...],
        "no_arg_constructor": "public"}``."""
        fields = tuple((str(f["name"]), str(f["type"])) for f in raw.get("fields") or ())
        consts = raw.get("enum_constants")
        ctor = raw.get("no_arg_constructor")
        return ClassFacts(name, str(raw.get("kind", "pojo")), fields, tuple(consts) if consts is not None else None,
                          str(ctor) if ctor is not None else None)  # fmt: skip

    def user_class(self) -> UserClass:
        """The same facts for ``udfs.savepoint``'s reading "with the new job's classes"."""
        return UserClass(self.name, tuple(n for n, _ in self.fields), self.enum_constants)

    def field_type(self, name: str) -> str | None:
        return next((t for n, t in self.fields if n == name), None)


@dataclass(frozen=True)
class NewOperator:
    """The new job's operator a saved operator's state goes to (the topology half's match).

    ``key_serializer``: the decoded spec field ``state_key_serializer_snapshot`` (None: not in
    the spec, or not keyed); ``chain_index``: position in its job vertex's chain (head 0), since
    Flink restores a chain tail first; ``vertex_order``: the vertex's position in the JobGraph;
    ``declared``: the node's ``declared_states`` (None: the spec does not say what it declares,
    and every saved state is taken as declared as before)."""

    operator_id: str
    jobvertex_id: str | None = None
    chain_index: int = 0
    vertex_order: int = 0
    node_id: int | None = None
    name: str | None = None
    uid: str | None = None
    key_serializer: SnapshotNode | None = None
    key_type: str | None = None  # the spec's readable key type, when given
    key_serializer_error: str | None = None  # the spec field was there but did not decode
    declared: Declarations | None = None
    parallelism: int | None = None  # its job vertex's: how many tasks restore it (None: as saved)

    @staticmethod
    def from_rows(
        operator: Mapping[str, Any], node: Mapping[str, Any], vertex_order: int = 0, parallelism: int | None = None
    ) -> NewOperator:
        """From the pipeline's ``operators`` row and the spec node (``state_key_serializer_snapshot``
        decoded here; a field that does not decode is kept as ``key_serializer_error``)."""
        key, error = None, None
        raw = node.get(KEY_SERIALIZER_FIELD)
        if raw:
            try:
                key = key_serializer_from_spec(str(raw))
            except ValueError as e:
                error = str(e)
        return NewOperator(
            operator_id=str(operator["operator_id"]),
            jobvertex_id=operator.get("jobvertex_id"),
            chain_index=int(operator.get("chain_index") or 0),
            vertex_order=vertex_order,
            node_id=int(node["id"]) if node.get("id") is not None else None,
            name=node.get("name"),
            uid=node.get("uid"),
            key_serializer=key,
            key_type=node.get("state_key_type"),
            key_serializer_error=error,
            declared=declarations_from_spec(node.get(DECLARED_STATES_FIELD)),
            parallelism=parallelism,
        )


KEY_SERIALIZER_FIELD = "state_key_serializer_snapshot"


def key_serializer_from_spec(value: str) -> SnapshotNode:
    """The spec node field ``state_key_serializer_snapshot``: base64 of the bytes Flink's
    ``TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot`` writes for the StreamNode's
    state key serializer (proxy version 2, then the versioned snapshot), the very bytes a keyed
    backend writes at the head of its state. Raises ValueError when they do not decode. A custom
    key serializer decodes to an UNKNOWN node: its compatibility is unknown."""
    return snapshot_from_base64(value, KEY_SERIALIZER_FIELD)


_HEAP_BACKENDS = ("hashmap", "jobmanager", "filesystem")
_HEAP_CLASSES = ("HashMapStateBackend", "MemoryStateBackend", "FsStateBackend")


def backend_family(name: str | None) -> str | None:
    """The spec's ``state_backend`` as the rules know backends: ``hashmap`` for every heap backend
    (Flink's names ``hashmap``, and the deprecated ``jobmanager`` / ``filesystem``, which
    StateBackendLoader maps to MemoryStateBackend / HashMapStateBackend: all restore through
    HeapKeyedStateBackend), ``rocksdb``, else None: ForSt and custom backends restore in ways not
    modelled here, so they count as not configured (the savepoint's native handles may tell)."""
    if not name:
        return None
    text = str(name).strip()
    short = text.rsplit(".", 1)[-1]
    if text.lower() in _HEAP_BACKENDS or short.removesuffix("Factory") in _HEAP_CLASSES:
        return "hashmap"
    if text.lower() == "rocksdb" or "RocksDBStateBackend" in short:
        return "rocksdb"
    return None


@dataclass(frozen=True)
class StateContext:
    """The versions and backend of one check.

    ``saved_major`` / ``target_major``: Flink major lines (:func:`savepoint_major`,
    :func:`line_major` of the new spec's ``flink_version`` or the ``target_flink`` asked for).
    ``restore_backend``: ``hashmap`` / ``rocksdb`` as the new job is configured (spec field
    ``state_backend`` through :func:`backend_family`); None: taken from the savepoint's native handles where they tell
    (KeyGroupsStateHandle: hashmap, IncrementalRemoteKeyedStateHandle: rocksdb), else unknown.
    ``modules``: optional module -> whether the new job's class path loads it (spec field
    ``serializer_modules``); None, or a module not named: taken as present (and said so).
    ``target_line``: the Flink line that restores (``2.3``), for what differs within a major line
    (:attr:`ttl_switch`)."""

    saved_major: int | None
    target_major: int | None
    restore_backend: str | None = None
    modules: Mapping[str, bool] | None = None
    target_line: str | None = None

    @property
    def ttl_switch(self) -> str:
        """What the restoring line does with a state whose TTL was switched on or off (profile
        ``restore.state_ttl_switch``, read in each line's ``StateSerializerProvider`` and backends):
        ``incompatible`` (up to 2.0: the TTL wrapper is another serializer), ``heap_refuses`` (2.1:
        ``TtlAwareSerializer`` makes it compatible after migration, RocksDB migrates the values, the
        heap backend refuses), ``migrates`` (2.2+: both backends migrate)."""
        m = re.match(r"\s*(\d+)\.(\d+)", str(self.target_line or ""))
        rules = restore_rules(f"{int(m.group(1))}.{int(m.group(2))}") if m else None
        return str((rules or {}).get("state_ttl_switch", "incompatible"))

    def module_gone(self, module: str) -> bool | None:
        """Whether the new job cannot load the module's snapshot classes (None: not known)."""
        if module == "flink-scala" and (self.target_major or 0) >= 2:
            return True  # the 1.x Scala API has no 2.x release
        if self.modules is None or module not in self.modules:
            return None
        return not self.modules[module]

    @property
    def crosses_to_2x(self) -> bool:
        return self.saved_major == 1 and (self.target_major or 0) >= 2
