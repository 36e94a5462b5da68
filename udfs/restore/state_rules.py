"""Flink's restore decision for the state's types: what a task does with the saved serializers.

The topology half (:mod:`udfs.restore.rules`) ends where the JobMaster hands each task its state.
From there every task of the new job restores its operators' state and checks the types, and
this module reproduces that, from what can be known before deploying:

* the savepoint's own serializer snapshots (``udfs.savepoint.state_meta``), per operator;
* the Flink line that wrote it and the one that will read it (:func:`savepoint_major`);
* for each matched keyed operator, the new job's key serializer snapshot (the spec field
  ``state_key_serializer_snapshot``, docs/state-rules.md), the one type the StreamGraph holds;
* optionally, facts about user classes in the new (and the old) jar: POJO fields and their
  types, enum constants, whether a class is a POJO or goes to Kryo (:class:`ClassFacts`).

Value types are declared in user code (a state descriptor in ``open()``), so the rules predict
the new serializer from the saved one, assuming the new job declares each saved state as the old
one did (same name, kind and Java type) and applying what changed: the user classes (facts) and
the Flink line (1.x -> 2.x: ``java.util`` collection interfaces leave Kryo). Every row says what
it rests on (``basis``) and what it assumes; what that leaves open is marked not decidable, with
the reason, never guessed.

Where and in which order a task fails (Flink's source, 1.12 - 2.x lines, see docs/state-rules.md):

1. operators of a chain are restored tail first (``RegularOperatorChain``), each fully;
2. keyed backend: the proxy is read with the new job's classes (an enum constant gone fails
   here: ENUM_CONSTANT_REMOVED); then the key serializer must be compatible as is
   (KEY_SERIALIZER_INCOMPATIBLE); heap backends then read every value with the saved
   serializers (STATE_READ_FAILED, KRYO_COLLECTION_ON_2X); RocksDB reads no value;
3. operator state backend: proxy, then every value read with the saved serializers;
4. ``initializeState()`` / ``open()``: each state the user code requests is checked then
   (STATE_KIND_CHANGED, STATE_SERIALIZER_INCOMPATIBLE, MAP_KEY_SCHEMA_CHANGED): in the savepoint's
   file order here, which is RocksDB's registration order; a state first requested while
   processing records fails later (``task_running``), which only the user code knows.

Output: :class:`StateProblem` rows (the restore tables' columns plus the state's) and one
:class:`StateDecision` per check (:func:`decide_states`).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from udfs.savepoint.binary import Reader, StateMetaError
from udfs.savepoint.serializer_snapshots import (
    KRYO,
    POJO,
    PojoField,
    SnapshotNode,
    UserClass,
    module_of,
    read_serializer_snapshot,
)
from udfs.savepoint.state_meta import OperatorStateTypes, StateMetaInfo
from udfs.savepoint.state_rows import COLLECTION_INTERFACES, node_paths, state_kind, user_classes

__all__ = [
    "ClassFacts",
    "NewOperator",
    "StateContext",
    "StateProblem",
    "StateDecision",
    "Compat",
    "decide_states",
    "savepoint_major",
    "line_major",
    "backend_family",
    "compatibility",
    "predict_new",
    "serializer_display",
    "problem_columns",
    "MESSAGES",
    "key_serializer_from_spec",
    "KEY_SERIALIZER_FIELD",
    "restore_check_row",
    "CHECK_EXTRA_COLUMNS",
]

# -- failure kinds (the ``failure`` column) ------------------------------------------------------
KEY_SERIALIZER_INCOMPATIBLE = "KEY_SERIALIZER_INCOMPATIBLE"
STATE_SERIALIZER_INCOMPATIBLE = "STATE_SERIALIZER_INCOMPATIBLE"
STATE_KIND_CHANGED = "STATE_KIND_CHANGED"
ENUM_CONSTANT_REMOVED = "ENUM_CONSTANT_REMOVED"
STATE_READ_FAILED = "STATE_READ_FAILED"  # the saved values cannot be read back at restore
MAP_KEY_SCHEMA_CHANGED = "MAP_KEY_SCHEMA_CHANGED"
KRYO_COLLECTION_ON_2X = "KRYO_COLLECTION_ON_2X"  # 1.x Kryo List/Map/Set/Collection state on 2.x
# not decidable without running the job
KRYO_CLASS_CHANGED = "KRYO_CLASS_CHANGED"
KRYO2_VALUES_ON_KRYO5 = "KRYO2_VALUES_ON_KRYO5"
STATE_UNREADABLE = "STATE_UNREADABLE"
SNAPSHOT_CLASS_GONE = "SNAPSHOT_CLASS_GONE"
NEW_TYPE_UNKNOWN = "NEW_TYPE_UNKNOWN"

FAILS, RESTORES, NOT_DECIDABLE = "FAILS", "RESTORES", "NOT_DECIDABLE"
JOB_INIT, TASK_RESTORE, TASK_RUNNING = "job_init", "task_restore", "task_running"
HASH = "<hash>"  # where Flink prints an identity hash code (Object.toString)

# Flink's exception texts, identical in the 1.12, 1.20 and 2.x sources (HeapKeyedStateBackend,
# RocksDBKeyedStateBackend, HeapRestoreOperation, AbstractRocksDBRestoreOperation /
# FullSnapshotRestoreOperation, DefaultOperatorStateBackend, RegisteredKeyValueStateBackendMetaInfo,
# EnumSerializer.EnumSerializerSnapshot); ``{new}`` / ``{old}`` are serializers' toString().
MESSAGES = {
    "key": "The new key serializer ({new}) must be compatible with the previous key serializer ({old}).",
    "state_rocksdb": "The new state serializer ({new}) must not be incompatible with the old state serializer ({old}).",
    "state_heap": "For heap backends, the new state serializer ({new}) must not be incompatible with the old "
    "state serializer ({old}).",
    "namespace_rocksdb": "The new namespace serializer ({new}) must be compatible with the old namespace serializer "
    "({old}).",
    "operator_state": "The new state typeSerializer for operator state must not be incompatible.",
    "broadcast_key": "The new key typeSerializer for broadcast state must not be incompatible.",
    "broadcast_value": "The new value typeSerializer for broadcast state must not be incompatible.",
    "kind": "Incompatible key/value state types. Was [{old}], registered with [{new}].",
    "enum": "Could not create a restore serializer for enum class {cls}. Probably because an enum value was removed.",
    "map_key": "The new serializer for a MapState requires state migration in order for the job to proceed, since "
    "the key schema has changed. However, migration for MapState currently only allows value schema evolutions.",
    "field_set": "Can not set {field_type} field {cls}.{field} to {value_class}",
    "field_null": "Can not set {field_type} field {cls}.{field} to null value",
    # HeapRestoreOperation.readKeyGroupStateData after a misread value (observed, Flink 2.3 / JDK 17+)
    # LinkedOptionalMap.unwrapOptionals (KryoSerializerSnapshot.restoreSerializer): an entry whose value
    # could not be read with the new job's classes
    "missing_value": "Missing value for the key '{key}'",
    "heap_native_misread": 'Cannot invoke "org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot.'
    'getBackendStateType()" because "stateMetaInfoSnapshot" is null',
}
ERROR_CLASSES = {
    "StateMigrationException": "org.apache.flink.util.StateMigrationException",
    "IllegalStateException": "java.lang.IllegalStateException",
    "IllegalArgumentException": "java.lang.IllegalArgumentException",
    "NullPointerException": "java.lang.NullPointerException",
    "ClassNotFoundException": "java.lang.ClassNotFoundException",
}

# -- snapshot classes the predicted trees use ----------------------------------------------------
_BASE = "org.apache.flink.api.common.typeutils.base."
NULLABLE = "org.apache.flink.api.java.typeutils.runtime.NullableSerializer$NullableSerializerSnapshot"
LIST = _BASE + "ListSerializerSnapshot"
MAP = _BASE + "MapSerializerSnapshot"
SET = _BASE + "SetSerializerSnapshot"
ENUM = _BASE + "EnumSerializer$EnumSerializerSnapshot"
_SIMPLE = {
    "boolean": "Boolean",
    "byte": "Byte",
    "short": "Short",
    "int": "Int",
    "long": "Long",
    "float": "Float",
    "double": "Double",
    "char": "Char",
    "java.lang.Boolean": "Boolean",
    "java.lang.Byte": "Byte",
    "java.lang.Short": "Short",
    "java.lang.Integer": "Int",
    "java.lang.Long": "Long",
    "java.lang.Float": "Float",
    "java.lang.Double": "Double",
    "java.lang.Character": "Char",
    "java.lang.String": "String",
    "java.math.BigDecimal": "BigDec",
    "java.math.BigInteger": "BigInt",
    "java.util.Date": "Date",
    "java.time.Instant": "Instant",
    "java.time.LocalDate": "LocalDate",
    "java.time.LocalDateTime": "LocalDateTime",
    "java.time.LocalTime": "LocalTime",
}
_PRIMITIVES = {"boolean", "byte", "short", "int", "long", "float", "double", "char"}
_BOXED = {
    "Boolean": "java.lang.Boolean",
    "Byte": "java.lang.Byte",
    "Short": "java.lang.Short",
    "Int": "java.lang.Integer",
    "Long": "java.lang.Long",
    "Float": "java.lang.Float",
    "Double": "java.lang.Double",
    "Char": "java.lang.Character",
    "String": "java.lang.String",
}
_JAVA_LANG = {"String", "Long", "Integer", "Double", "Float", "Short", "Byte", "Boolean", "Character", "Object"}
_JAVA_UTIL = {"List", "Map", "Set", "Collection", "ArrayList", "HashMap", "HashSet", "LinkedList", "Date"}
# JLS 5.1.2 widening (what Field.set accepts for a primitive field given a wrapper of another type)
_WIDENS = {
    "byte": {"short", "int", "long", "float", "double"},
    "short": {"int", "long", "float", "double"},
    "char": {"int", "long", "float", "double"},
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
}
_UNBOX = {
    "java.lang.Boolean": "boolean",
    "java.lang.Byte": "byte",
    "java.lang.Short": "short",
    "java.lang.Integer": "int",
    "java.lang.Long": "long",
    "java.lang.Float": "float",
    "java.lang.Double": "double",
    "java.lang.Character": "char",
}


# ------------------------------------------------------------------------------------------------
#  Inputs
# ------------------------------------------------------------------------------------------------


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

    @staticmethod
    def from_dict(name: str, raw: Mapping[str, Any]) -> ClassFacts:
        """``{"kind": "pojo", "fields": [{"name": "a", "type": "long"}], "enum_constants": [...]}``."""
        fields = tuple((str(f["name"]), str(f["type"])) for f in raw.get("fields") or ())
        consts = raw.get("enum_constants")
        return ClassFacts(name, str(raw.get("kind", "pojo")), fields, tuple(consts) if consts is not None else None)

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
    Flink restores a chain tail first; ``vertex_order``: the vertex's position in the JobGraph."""

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

    @staticmethod
    def from_rows(operator: Mapping[str, Any], node: Mapping[str, Any], vertex_order: int = 0) -> NewOperator:
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
        )


KEY_SERIALIZER_FIELD = "state_key_serializer_snapshot"


def key_serializer_from_spec(value: str) -> SnapshotNode:
    """The spec node field ``state_key_serializer_snapshot``: base64 of the bytes Flink's
    ``TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot`` writes for the StreamNode's
    state key serializer (proxy version 2, then the versioned snapshot), the very bytes a keyed
    backend writes at the head of its state. Raises ValueError when they do not decode."""
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"{KEY_SERIALIZER_FIELD}: not base64 ({e})") from None
    try:
        read = read_serializer_snapshot(Reader(data, 0))
    except StateMetaError as e:
        raise ValueError(f"{KEY_SERIALIZER_FIELD}: {e}") from None
    return read.node  # an UNKNOWN node for a custom key serializer: its compatibility is unknown


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
    ``serializer_modules``); None, or a module not named: taken as present (and said so)."""

    saved_major: int | None
    target_major: int | None
    restore_backend: str | None = None
    modules: Mapping[str, bool] | None = None

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


# ------------------------------------------------------------------------------------------------
#  Serializer compatibility (TypeSerializerSnapshot.resolveSchemaCompatibility, in Python)
# ------------------------------------------------------------------------------------------------

AS_IS, RECONFIGURED, AFTER_MIGRATION, INCOMPATIBLE, UNKNOWN = (
    "COMPATIBLE_AS_IS",
    "COMPATIBLE_WITH_RECONFIGURED_SERIALIZER",
    "COMPATIBLE_AFTER_MIGRATION",
    "INCOMPATIBLE",
    "UNKNOWN",
)
_RANK = {AS_IS: 0, RECONFIGURED: 1, AFTER_MIGRATION: 2, UNKNOWN: 3, INCOMPATIBLE: 4}


@dataclass(frozen=True)
class Compat:
    """A compatibility result with where it was decided (path of the first deciding node) and why."""

    result: str
    path: str = ""
    why: str = ""

    @property
    def incompatible(self) -> bool:
        return self.result == INCOMPATIBLE


def _worst(results: Iterable[Compat], at: str) -> Compat:
    """CompositeTypeSerializerUtil.constructIntermediateCompatibilityResult: incompatible wins,
    then after migration, then reconfigured; unknown (a part we cannot predict) sits below
    incompatible, since one certain incompatibility decides regardless."""
    out = Compat(AS_IS, at)
    for r in results:
        if _RANK[r.result] > _RANK[out.result]:
            out = r
    return out


def compatibility(new: SnapshotNode | None, old: SnapshotNode, path: str = "value") -> Compat:
    """What ``new.resolveSchemaCompatibility(old)`` returns (2.x; 1.x's
    ``old.resolveSchemaCompatibility(newSerializer)`` decides the same), for the snapshot
    families Flink ships: a different snapshot class is incompatible; simple snapshots are as is;
    POJOs by field name (PojoSerializerSnapshot: a field gone or added needs migration; a kept
    field's serializer decides); enums (EnumSerializerSnapshot: other constants -> reconfigured;
    a removed constant already fails reading the snapshot); Kryo by type class (registrations
    are assumed unchanged); composites outer part then nested in order. ``new`` None: unknown."""
    if new is None or new.kind == _UNKNOWN_ELEMENT:
        return Compat(UNKNOWN, path, "the new serializer is not known")
    if new.class_name != old.class_name:
        return Compat(INCOMPATIBLE, path, f"{_short(old)} -> {_short(new)}")
    if new.kind == "POJO":
        return _pojo_compat(new, old, path)
    if new.kind in ("KRYO", "ENUM", "AVRO", "GENERIC") or new.class_name == KRYO:
        if new.type_class != old.type_class:
            return Compat(INCOMPATIBLE, path, f"{old.type_class} -> {new.type_class}")
        if new.kind == "ENUM":
            a, b = old.enum_constants or (), new.enum_constants or ()
            if a == b:
                return Compat(AS_IS, path)
            return Compat(RECONFIGURED, path, f"enum constants {list(a)} -> {list(b)}")
        return Compat(AS_IS, path)
    if new.kind == "SIMPLE":
        return Compat(AS_IS, path)
    if new.kind == "COMPOSITE" or new.nested or old.nested:
        if new.type_class != old.type_class and new.type_class is not None and old.type_class is not None:
            return Compat(INCOMPATIBLE, path, f"{old.type_class} -> {new.type_class}")
        pad_old, pad_new = old.facts.get("null_padding_length"), new.facts.get("null_padding_length")
        if pad_old is not None and pad_new is not None and pad_old != pad_new:
            return Compat(INCOMPATIBLE, path, f"null padding {pad_old} -> {pad_new}")
        if len(new.nested) != len(old.nested):
            return Compat(INCOMPATIBLE, path, "a different number of nested serializers")
        parts = [
            compatibility(n, o, f"{path}.{role}") for (role, o), (_, n) in zip(old.nested, new.nested, strict=True)
        ]
        return _worst(parts, path)
    if new.to_dict() == old.to_dict() and new.facts == old.facts:
        return Compat(AS_IS, path)
    return Compat(UNKNOWN, path, f"{_short(new)}: compatibility not modelled")


def _pojo_compat(new: SnapshotNode, old: SnapshotNode, path: str) -> Compat:
    if new.type_class != old.type_class:
        return Compat(INCOMPATIBLE, path, f"{old.type_class} -> {new.type_class}")
    new_fields = {f.name: f for f in new.fields}
    parts = []
    kept = 0
    for f in old.fields:
        nf = new_fields.get(f.name)
        if nf is None or f.snapshot is None:  # removed (absent key), or unreadable
            continue
        kept += 1
        if nf.snapshot is None:
            parts.append(Compat(UNKNOWN, f"{path}.fields.{f.name}", "the new field's type is not known"))
        else:
            parts.append(compatibility(nf.snapshot, f.snapshot, f"{path}.fields.{f.name}"))
    fields = _worst(parts, path)
    if fields.result in (INCOMPATIBLE, UNKNOWN):
        return fields
    removed = len(old.fields) - kept
    added = len(new.fields) - kept
    if removed or added or fields.result == AFTER_MIGRATION:
        why = fields.why or f"{added} field(s) added, {removed} removed"
        return Compat(AFTER_MIGRATION, fields.path if fields.result == AFTER_MIGRATION else path, why)
    return fields


def _short(n: SnapshotNode) -> str:
    return n.type_text if len(n.type_text) < 80 else n.type_text[:77] + "..."


# ------------------------------------------------------------------------------------------------
#  The new job's serializer, predicted from the saved one
# ------------------------------------------------------------------------------------------------


@dataclass
class Prediction:
    """A predicted serializer tree and what it rests on: ``causes`` (path, cause) of every
    change applied, ``unknown`` (path, reason) where nothing can be predicted."""

    node: SnapshotNode | None
    causes: list[tuple[str, str]] = field(default_factory=list)
    unknown: list[tuple[str, str]] = field(default_factory=list)


def _node(
    class_name: str,
    kind: str,
    type_class: str | None = None,
    nested: Iterable[tuple[str, SnapshotNode]] = (),
    fields: Iterable[PojoField] = (),
    facts: Mapping[str, Any] | None = None,
) -> SnapshotNode:
    """A predicted snapshot (what the new job's serializer would write; version and offsets 0)."""
    return SnapshotNode(
        class_name, 0, kind, type_class, tuple(nested), tuple(fields), dict(facts or {}), b"", 0, 0, True
    )


_UNKNOWN_ELEMENT = "UNKNOWN_ELEMENT"  # a predicted part whose type is not known


def _nullable(inner: SnapshotNode | None) -> SnapshotNode | None:
    if inner is None:
        return None
    return _node(NULLABLE, "COMPOSITE", nested=[("original", inner)], facts={"null_padding_length": 0})


def _collection_2x(interface: str, args: Sequence[SnapshotNode | None] = ()) -> SnapshotNode:
    """What Flink 2.x extracts for a collection interface with type arguments (NullableList /
    NullableMap / NullableSet TypeInfo, seen in the 2.3 vectors' declared types): Nullable<List<
    Nullable<E>>>, Nullable<Map<Nullable<K>, V>>. Unknown element types stay unknown (a synthetic
    placeholder), which changes nothing in the verdict: the outer class already differs from Kryo."""
    unknown = _node("?", _UNKNOWN_ELEMENT)
    a = list(args) + [None, None]
    if interface == "java.util.Map":
        inner = _node(MAP, "COMPOSITE", nested=[("key", _nullable(a[0]) or unknown), ("value", a[1] or unknown)])
    elif interface == "java.util.Set":
        inner = _node(SET, "COMPOSITE", nested=[("element", _nullable(a[0]) or unknown)])
    else:  # List, and Collection (extracted as a list: unverified, see docs/state-rules.md)
        inner = _node(LIST, "COMPOSITE", nested=[("element", _nullable(a[0]) or unknown)])
    return _nullable(inner)  # type: ignore[return-value]


def _resolve_type_name(name: str, classes: Mapping[str, ClassFacts]) -> str:
    if "." in name or name in _PRIMITIVES:
        return name
    if name in _JAVA_LANG:
        return f"java.lang.{name}"
    if name in _JAVA_UTIL:
        return f"java.util.{name}"
    matches = [c for c in classes if c.rsplit(".", 1)[-1] == name]
    return matches[0] if len(matches) == 1 else name


def _split_generic(text: str) -> tuple[str, list[str]]:
    """``Map<String, List<Long>>`` -> (``Map``, [``String``, ``List<Long>``])."""
    text = text.strip()
    if "<" not in text:
        return text, []
    raw, rest = text.split("<", 1)
    rest = rest.rsplit(">", 1)[0]
    args, depth, cur = [], 0, ""
    for ch in rest:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur.strip())
    return raw.strip(), args


def node_for_java_type(
    type_text: str, major: int | None, classes: Mapping[str, ClassFacts], depth: int = 0
) -> SnapshotNode | None:
    """The serializer snapshot Flink's type extraction gives a POJO field of this Java type on the
    target line, or None when it cannot be said (a class without facts, a type variable...)."""
    if depth > 8:
        return None
    raw, args = _split_generic(type_text)
    if raw.endswith("[]"):
        comp = _resolve_type_name(raw[:-2], classes)
        prim = {
            "int": "Int",
            "long": "Long",
            "double": "Double",
            "float": "Float",
            "short": "Short",
            "byte": "Byte",
            "char": "Char",
            "boolean": "Boolean",
        }.get(comp)
        if prim:
            return _node(
                f"{_BASE}array.{prim}PrimitiveArraySerializer${prim}PrimitiveArraySerializerSnapshot", "SIMPLE"
            )
        if comp == "java.lang.String":
            return _node(f"{_BASE}array.StringArraySerializer$StringArraySerializerSnapshot", "SIMPLE")
        return None
    name = _resolve_type_name(raw, classes)
    simple = _SIMPLE.get(name)
    if simple:
        return _node(f"{_BASE}{simple}Serializer${simple}SerializerSnapshot", "SIMPLE")
    if name in COLLECTION_INTERFACES:
        if (major or 0) >= 2 and args:
            nested = [node_for_java_type(a, major, classes, depth + 1) for a in args]
            return _collection_2x(name, nested)
        return _node(KRYO, "KRYO", name)
    facts = classes.get(name)
    if facts is None:
        return None if not name.startswith("java.") else _node(KRYO, "KRYO", name)
    return _node_for_class(facts, major, classes, depth + 1)


def _node_for_class(
    facts: ClassFacts, major: int | None, classes: Mapping[str, ClassFacts], depth: int
) -> SnapshotNode:
    if facts.kind == "enum":
        return _node(ENUM, "ENUM", facts.name, facts={"enum_constants": list(facts.enum_constants or ())})
    if facts.kind == "pojo":
        fields = [
            PojoField(n, facts.name, node_for_java_type(t, major, classes, depth)) for n, t in sorted(facts.fields)
        ]
        return _node(POJO, "POJO", facts.name, fields=fields)
    return _node(KRYO, "KRYO", facts.name)


def predict_new(
    old: SnapshotNode, ctx: StateContext, classes: Mapping[str, ClassFacts], path: str = "value"
) -> Prediction:
    """The serializer snapshot the new job builds for a state whose saved snapshot is ``old``,
    if it declares the same Java type: user classes follow their facts (a POJO's fields and
    their types, an enum's constants, POJO <-> Kryo), and on 1.x -> 2.x a Kryo-held ``java.util``
    collection interface becomes 2.x's Nullable collection serializer (POJO fields included).
    A part that cannot be predicted is marked unknown (``Prediction.unknown``)."""
    pred = Prediction(None)
    pred.node = _predict(old, ctx, classes, path, pred, 0)
    return pred


def _predict(
    old: SnapshotNode, ctx: StateContext, classes: Mapping[str, ClassFacts], path: str, pred: Prediction, depth: int
) -> SnapshotNode | None:
    if depth > 24:
        return old
    facts = classes.get(old.type_class or "") if old.type_class else None
    if old.kind == "KRYO" or old.class_name == KRYO:
        if old.type_class in COLLECTION_INTERFACES and ctx.crosses_to_2x:
            pred.causes.append((path, KRYO_COLLECTION_ON_2X))
            return _collection_2x(old.type_class or "java.util.List")
        if facts is not None and facts.kind in ("pojo", "enum"):
            pred.causes.append((path, f"KRYO_TO_{facts.kind.upper()}"))
            return _node_for_class(facts, ctx.target_major, classes, depth)
        return old
    if old.kind == "POJO":
        if facts is not None and facts.kind == "generic":
            pred.causes.append((path, "POJO_TO_KRYO"))
            return _node(KRYO, "KRYO", old.type_class)
        if facts is not None and facts.kind == "enum":
            pred.causes.append((path, "POJO_TO_ENUM"))
            return _node_for_class(facts, ctx.target_major, classes, depth)
        saved = {f.name: f for f in old.fields}
        names = [n for n, _ in facts.fields] if facts is not None and facts.kind == "pojo" else list(saved)
        fields = []
        for name in sorted(names):
            fpath = f"{path}.fields.{name}"
            f = saved.get(name)
            declared = facts.field_type(name) if facts is not None else None
            if declared is not None:
                node = node_for_java_type(declared, ctx.target_major, classes)
                if f is not None and f.snapshot is not None and node is not None:
                    same_class = f.snapshot.class_name == node.class_name
                    if same_class and not _is_collection_kryo(node):
                        # the same user class: its own facts decide, recursively (a raw collection
                        # interface stays in Kryo on 2.x: only type arguments select 2.x's serializers)
                        node = _predict(f.snapshot, ctx, classes, fpath, pred, depth + 1)
                    elif f.snapshot.class_name != node.class_name:
                        cause = (
                            KRYO_COLLECTION_ON_2X
                            if _is_collection_kryo(f.snapshot) and ctx.crosses_to_2x
                            else "POJO_FIELD_RETYPED"
                        )
                        pred.causes.append((fpath, cause))
                if node is None:
                    pred.unknown.append((fpath, f"type {declared}: no facts to predict its serializer"))
                fields.append(PojoField(name, old.type_class, node))
            elif f is not None and f.snapshot is not None:
                fields.append(
                    PojoField(name, f.declaring_class, _predict(f.snapshot, ctx, classes, fpath, pred, depth + 1))
                )
            else:
                fields.append(PojoField(name, old.type_class, None))
        if facts is not None and facts.kind == "pojo":
            gone = [n for n in saved if n not in dict(facts.fields)]
            added = [n for n in names if n not in saved]
            if gone or added:
                pred.causes.append((path, f"POJO_FIELDS_CHANGED(+{added} -{gone})"))
        return replace(old, fields=tuple(fields))
    if old.kind == "ENUM" and facts is not None and facts.kind == "enum":
        if tuple(facts.enum_constants or ()) != tuple(old.enum_constants or ()):
            pred.causes.append((path, "ENUM_CONSTANTS_CHANGED"))
        return replace(old, facts={**old.facts, "enum_constants": list(facts.enum_constants or ())})
    if old.kind == "ENUM" and facts is not None and facts.kind in ("pojo", "generic"):
        pred.causes.append((path, f"ENUM_TO_{facts.kind.upper()}"))
        return _node_for_class(facts, ctx.target_major, classes, depth)
    if old.nested:
        nested = [(role, _predict(c, ctx, classes, f"{path}.{role}", pred, depth + 1)) for role, c in old.nested]
        if any(n is None for _, n in nested):
            return None
        return replace(old, nested=tuple(nested))  # type: ignore[arg-type]
    return old


def _cause_at(causes: Sequence[tuple[str, str]], path: str) -> str | None:
    """The change that explains a result at ``path``: the nearest change at or above it, else the
    first one below it."""
    above = [(p, c) for p, c in causes if path == p or path.startswith(p + ".")]
    if above:
        return max(above, key=lambda pc: len(pc[0]))[1]
    below = [(p, c) for p, c in causes if p.startswith(path + ".")]
    return min(below, key=lambda pc: len(pc[0]))[1] if below else None


def _is_collection_kryo(n: SnapshotNode) -> bool:
    return (n.kind == "KRYO" or n.class_name == KRYO) and n.type_class in COLLECTION_INTERFACES


# ------------------------------------------------------------------------------------------------
#  Serializers as Flink prints them
# ------------------------------------------------------------------------------------------------

_SERIALIZER_OF = {
    "org.apache.flink.api.java.typeutils.runtime.JavaEitherSerializerSnapshot": (
        "org.apache.flink.api.java.typeutils.runtime.EitherSerializer"
    ),
}


def serializer_class(snapshot_class: str) -> str:
    """The serializer class a snapshot class restores: ``X$XSnapshot`` -> ``X`` (a snapshot nested
    in its serializer), ``F$YSerializerSnapshot`` -> ``F$YSerializer``, ``XSnapshot`` -> ``X``."""
    if snapshot_class in _SERIALIZER_OF:
        return _SERIALIZER_OF[snapshot_class]
    if "$" in snapshot_class:
        outer, inner = snapshot_class.rsplit("$", 1)
        if outer.endswith("Serializer"):
            return outer
        return f"{outer}${inner.removesuffix('Snapshot')}"
    return snapshot_class.removesuffix("Snapshot")


def serializer_display(node: SnapshotNode) -> str:
    """``TypeSerializer.toString()`` of the serializer this snapshot describes: Object's
    ``Class@hash`` (hash as ``<hash>``, as the vectors normalise it), except the serializers
    that override it (EnumSerializer, GenericArraySerializer, Tuple0Serializer)."""
    cls = serializer_class(node.class_name)
    if node.kind == "ENUM" and node.class_name == ENUM:
        return f"EnumSerializer{{enumClass=class {node.type_class}, values=[{', '.join(node.enum_constants or ())}]}}"
    if cls.endswith("GenericArraySerializer") and node.type_class:
        return f"Serializer {node.type_class}[]"
    if cls.endswith("Tuple0Serializer"):
        return "Tuple0Serializer"
    return f"{cls}@{HASH}"


# ------------------------------------------------------------------------------------------------
#  Problems and the decision
# ------------------------------------------------------------------------------------------------

PROBLEM_COLUMNS = (
    "verdict",  # FAILS / NOT_DECIDABLE / RESTORES (a warning that does not change the verdict)
    "failure",
    "cause",
    "operator_id",
    "state_name",
    "backend",
    "state_kind",
    "field_path",
    "error_class",
    "message",
    "failure_stage",
    "basis",
    "assumes",
    "certain",
    "uncertain",
    "undecidable_reason",
    "reported",
    "order",
)


@dataclass
class StateProblem:
    """One thing that breaks, may break, or cannot be decided, for one state of one operator.

    ``verdict``: what it contributes (FAILS, NOT_DECIDABLE, or RESTORES for a warning);
    ``failure``: the kind (module constants); ``cause``: what changed (POJO_FIELD_RETYPED,
    KRYO_COLLECTION_ON_2X, ...); ``field_path``: where in the state's type; ``message`` /
    ``error_class``: Flink's root exception, in that line's words, ``<hash>`` for identity
    hashes; ``failure_stage``: job_init | task_restore | task_running; ``basis``: what it rests
    on (``savepoint``, ``key_type_in_spec``, ``class_facts``, ``flink_source``, ``observed``);
    ``assumes``: what it takes for granted; ``certain``: the verdict is certain;
    ``uncertain``: aspects left open (message, failure_stage, reported) and why;
    ``reported``: the one Flink's exception names (first in Flink's order); ``order``: rank."""

    verdict: str
    failure: str
    operator_id: str
    state_name: str | None
    backend: str | None = None
    state_kind: str | None = None
    cause: str | None = None
    field_path: str | None = None
    error_class: str | None = None
    message: str | None = None
    failure_stage: str | None = None
    basis: list[str] = field(default_factory=list)
    assumes: list[str] = field(default_factory=list)
    certain: bool = True
    uncertain: dict[str, str] = field(default_factory=dict)
    undecidable_reason: str | None = None
    reported: bool = False
    order: tuple = ()

    def to_row(self, head: Mapping[str, Any] | None = None) -> dict[str, Any]:
        row = dict(head or {})
        for c in PROBLEM_COLUMNS:
            v = getattr(self, c)
            row[c] = list(v) if c == "order" else (dict(v) if isinstance(v, dict) else v)
        return row


def problem_columns() -> tuple[str, ...]:
    return PROBLEM_COLUMNS


@dataclass
class StateDecision:
    """The state half of one check: FAILS when some problem certainly fails (then ``failure``,
    ``operator_id``, ``state_name``, ``message``, ``failure_stage`` are the reported one's),
    NOT_DECIDABLE when none fails for sure but something cannot be decided, else RESTORES.
    ``assumes``: what every verdict here takes for granted; ``depends_on_user_code``: the states
    (``operator_id/state``) checked only when user code requests them, whose verdict therefore
    holds only if the new job declares them as the old one did (kind, type): a change there is
    not decidable without running the job; ``taken_as_unchanged``: the inputs that were missing
    and taken as unchanged (``class <name>``: a user class in the saved types without facts;
    ``key of <operator>``: no key serializer in the spec; ``backend of <operator>``: a canonical
    savepoint and no configured backend)."""

    verdict: str
    problems: list[StateProblem]
    failure: str | None = None
    operator_id: str | None = None
    state_name: str | None = None
    error_class: str | None = None
    message: str | None = None
    failure_stage: str | None = None
    uncertain: dict[str, str] = field(default_factory=dict)
    assumes: list[str] = field(default_factory=list)
    depends_on_user_code: list[str] = field(default_factory=list)
    taken_as_unchanged: list[str] = field(default_factory=list)

    @property
    def reported(self) -> StateProblem | None:
        return next((p for p in self.problems if p.reported), None)


ASSUME_DECLARED = (
    "the new job declares every saved state as the old one did (same name, kind and Java type); "
    "a changed declaration is in user code and not decidable without running the job"
)
ASSUME_OPEN = (
    "the state is requested in open()/initializeState(); first requested while processing records: task_running"
)
_PHASES = {"read": 0, "key": 1, "values": 2, "op_read": 3, "op_values": 4, "register": 5}


def _backend_of(op: OperatorStateTypes, ctx: StateContext) -> tuple[str | None, str | None]:
    """(restoring backend, savepoint format) from the configuration and the keyed handles."""
    fmt = None
    native = None
    for s in op.keyed:
        h = s.handle or ""
        if "KeyGroupsSavepointStateHandle" in h:
            fmt = "CANONICAL"
        elif "IncrementalRemoteKeyedStateHandle" in h or "IncrementalLocalKeyedStateHandle" in h:
            fmt, native = "NATIVE", "rocksdb"
        elif "KeyGroupsStateHandle" in h:
            fmt, native = "NATIVE", "hashmap"
    return ctx.restore_backend or native, fmt


def _enum_removed(node: SnapshotNode, classes: Mapping[str, ClassFacts]) -> SnapshotNode | None:
    for n in node.walk():
        if n.kind == "ENUM" and n.class_name == ENUM:
            facts = classes.get(n.type_class or "")
            if facts is not None and facts.enum_constants is not None:
                if any(c not in facts.enum_constants for c in n.enum_constants or ()):
                    return n
    return None


def _field_set_failure(
    old: SnapshotNode, classes: Mapping[str, ClassFacts], old_classes: Mapping[str, ClassFacts], path: str
) -> tuple[str, str, bool] | None:
    """A heap restore reads each saved POJO with the saved field serializers into the new class's
    fields (``Field.set``): a kept field whose new type cannot take the saved value fails with
    Java's IllegalArgumentException. (path, message, certain): certain when the old field was a
    primitive (never null); a nullable one fails only on its first non-null value."""
    for p, n in node_paths(old, path):
        if n.kind != "POJO":
            continue
        facts = classes.get(n.type_class or "")
        if facts is None or facts.kind != "pojo":
            continue
        old_facts = old_classes.get(n.type_class or "")
        for f in n.fields:
            new_type = facts.field_type(f.name)
            if new_type is None or f.snapshot is None:
                continue
            value_class = _value_class(f.snapshot)
            if value_class is None:
                continue
            new_name = _resolve_type_name(_split_generic(new_type)[0], classes)
            if _assignable(value_class, new_name):
                continue
            old_type = old_facts.field_type(f.name) if old_facts is not None else None
            certain = old_type in _PRIMITIVES if old_type is not None else False
            msg = MESSAGES["field_set"].format(
                field_type=new_name, cls=n.type_class, field=f.name, value_class=value_class
            )
            return f"{p}.fields.{f.name}", msg, certain
    return None


def _value_class(n: SnapshotNode) -> str | None:
    """The runtime class of the values a saved serializer reads back."""
    if n.kind == "SIMPLE":
        for simple, boxed in _BOXED.items():
            if n.class_name == f"{_BASE}{simple}Serializer${simple}SerializerSnapshot":
                return boxed
        return None
    if n.kind in ("POJO", "ENUM", "AVRO") and n.type_class:
        return n.type_class
    return None


def _assignable(value_class: str, field_type: str) -> bool:
    if value_class == field_type or field_type in ("java.lang.Object", "java.io.Serializable"):
        return True
    if field_type in _PRIMITIVES:
        prim = _UNBOX.get(value_class)
        return prim is not None and (prim == field_type or field_type in _WIDENS.get(prim, set()))
    if field_type == "java.lang.Number":
        return value_class in _UNBOX and value_class not in ("java.lang.Boolean", "java.lang.Character")
    if field_type in ("java.lang.Comparable",):
        return value_class.startswith("java.lang.")
    if field_type == "java.lang.CharSequence":
        return value_class == "java.lang.String"
    return False


# Flink 1.x writes every serializer instance registered with Kryo (a registration, a default serializer)
# Java-serialized as an ExecutionConfig$SerializableSerializer; 2.x moved the class
# (org.apache.flink.api.common.SerializableSerializer), so the entry reads back without a value.
SERIALIZABLE_SERIALIZER_1X = "org.apache.flink.api.common.ExecutionConfig$SerializableSerializer"


def _kryo_entry_gone(node: SnapshotNode, root: str) -> tuple[str, str] | None:
    """(path, key) of the first Kryo snapshot entry a 2.x class path cannot read back: a default
    serializer or a registration held as 1.x's ExecutionConfig$SerializableSerializer, in the order
    KryoSerializerSnapshot.restoreSerializer unwraps them (default serializers, then registrations)."""
    for p, n in node_paths(node, root):
        if not (n.kind == "KRYO" or n.class_name == KRYO):
            continue
        for name, value in n.facts.get("kryo_default_serializers") or []:
            if value == SERIALIZABLE_SERIALIZER_1X:
                return p, str(name)
        for reg in n.facts.get("kryo_registrations") or []:
            if reg.get("type") == "INSTANCE" and reg.get("serializer") == SERIALIZABLE_SERIALIZER_1X:
                return p, str(reg.get("name") or reg.get("class"))
    return None


def _pojo_field_misread(
    node: SnapshotNode, root: str, classes: Mapping[str, ClassFacts], olds: Mapping[str, ClassFacts]
) -> tuple[str, str | None] | None:
    """A saved POJO with a field Kryo holds as a ``java.util`` collection, read back by 2.x (heap
    restore, operator state): PojoSerializer.deserialize reads each field as a null flag then the
    value, in the snapshot's field order; Kryo 5 consumes the Kryo 2 collection bytes differently,
    so the next field's null flag is read from the wrong byte: a primitive field then gets null,
    ``Field.set`` -> ``IllegalArgumentException: Can not set long field x.P.id to null value``
    (observed 10 of 10: every heap or operator-state restore of such a POJO across 1.x -> 2.x in
    conformance/statetypes, NATIVE and CANONICAL). (path of the Kryo field, message or None when
    the next field is not a known primitive)."""
    for p, n in node_paths(node, root):
        if n.kind != "POJO":
            continue
        for i, f in enumerate(n.fields):
            if f.snapshot is None or not _is_collection_kryo(f.snapshot):
                continue
            where = f"{p}.fields.{f.name}"
            if i + 1 >= len(n.fields):
                return where, None
            nxt = n.fields[i + 1].name
            facts = olds.get(n.type_class or "") or classes.get(n.type_class or "")
            ftype = facts.field_type(nxt) if facts is not None else None
            if ftype in _PRIMITIVES:
                return where, MESSAGES["field_null"].format(field_type=ftype, cls=n.type_class, field=nxt)
            return where, None
    return None


def _first_collection_kryo(node: SnapshotNode, root: str) -> str | None:
    return next((p for p, n in node_paths(node, root) if _is_collection_kryo(n)), None)


def _simple_kryo_class(facts: ClassFacts | None, classes: Mapping[str, ClassFacts]) -> bool:
    """A Kryo class whose fields are primitives, boxed numbers or strings only: the shape whose
    Kryo 2 (Flink 1.x) bytes Flink 2.x's Kryo 5 was seen to read back (docs/state-rules.md)."""
    if facts is None or facts.kind != "generic":
        return False
    return all(
        _resolve_type_name(t, classes) in _PRIMITIVES or _SIMPLE.get(_resolve_type_name(t, classes))
        for _, t in facts.fields
    )


class _Collector:
    """Problems of one check, with the sort key that is Flink's walk order. A state that already
    fails for sure while its values are read back (no aspect uncertain) is not reported again at
    registration: the task never gets there."""

    def __init__(self) -> None:
        self.items: list[StateProblem] = []
        self.read_failed: set[tuple[str, str | None]] = set()
        self.user_code: list[str] = []
        self.unchanged: list[str] = []

    def add(self, p: StateProblem, key: tuple) -> None:
        p.order = key
        if key[4] == _PHASES["register"] and (p.operator_id, p.state_name) in self.read_failed:
            return
        if p.verdict == FAILS and key[4] in (_PHASES["values"], _PHASES["op_values"]) and not p.uncertain:
            self.read_failed.add((p.operator_id, p.state_name))
        self.items.append(p)


def decide_states(
    saved: Mapping[str, OperatorStateTypes],
    matched: Mapping[str, NewOperator],
    ctx: StateContext,
    new_classes: Mapping[str, ClassFacts] | None = None,
    old_classes: Mapping[str, ClassFacts] | None = None,
    saved_order: Sequence[str] | None = None,
) -> StateDecision:
    """The state half of one check. ``saved``: decoded operator states by operator ID (file
    order); ``matched``: saved operator ID -> the new operator it restores into (unmatched
    operators' state is the topology half's business); ``new_classes`` / ``old_classes``:
    facts of the new / old jar's classes by name (absent: taken as unchanged)."""
    classes = dict(new_classes or {})
    olds = dict(old_classes or {})
    col = _Collector()
    order = list(saved_order or saved)
    for file_index, op_id in enumerate(order):
        op = saved.get(op_id)
        new = matched.get(op_id)
        if op is None or new is None:
            continue
        _check_operator(op, new, ctx, classes, olds, col, file_index)
    decision = _decide(col.items)
    decision.depends_on_user_code = col.user_code
    decision.taken_as_unchanged = list(dict.fromkeys(col.unchanged))
    return decision


def _op_key(new: NewOperator, file_index: int) -> tuple:
    # tasks (vertices) fail independently; inside one, the chain's tail restores first
    return (new.vertex_order, new.jobvertex_id or "", -new.chain_index, file_index)


def _check_operator(
    op: OperatorStateTypes,
    new: NewOperator,
    ctx: StateContext,
    classes: dict[str, ClassFacts],
    olds: dict[str, ClassFacts],
    col: _Collector,
    file_index: int,
) -> None:
    """One saved operator into its new operator, phase by phase in Flink's order."""
    check = _OperatorCheck(op, new, ctx, classes, olds, col, _op_key(new, file_index))
    check.unreadable()
    check.keyed_proxy_read()
    check.key()
    check.kryo_entries_gone()
    check.heap_values()
    check.operator_backend()
    check.registration()


@dataclass
class _OperatorCheck:
    """The restore of one operator in the new job, as the phases Flink runs (module docstring)."""

    op: OperatorStateTypes
    new: NewOperator
    ctx: StateContext
    classes: dict[str, ClassFacts]
    olds: dict[str, ClassFacts]
    col: _Collector
    key_order: tuple

    def __post_init__(self) -> None:
        self.backend, self.fmt = _backend_of(self.op, self.ctx)
        self.keyed = self.op.states("managed_keyed")
        self.opstates = self.op.states("managed_operator")
        infos = [i for i in self.keyed.values() if i.backend_state_type != "PRIORITY_QUEUE"]  # timers: the key
        trees = [n for info in [*infos, *self.opstates.values()] for n in info.serializers.values()]
        proxy = self.op.keyed_proxy
        if proxy is not None and proxy.key_serializer is not None and self.new.key_serializer is None:
            trees.append(proxy.key_serializer)  # the key's classes matter only when the spec has no key type
        for name in dict.fromkeys(c for t in trees for c in user_classes(t)):
            if name not in self.classes:
                self.col.unchanged.append(f"class {name}")
        if self.keyed and self.backend is None:
            self.col.unchanged.append(f"backend of {self.op.operator_id}")

    # -- helpers -----------------------------------------------------------------------------

    def add(self, phase: str, idx: int, **kw: Any) -> None:
        kw.setdefault("operator_id", self.op.operator_id)
        self.col.add(StateProblem(**kw), (*self.key_order, _PHASES[phase], idx))

    def fails(self, phase: str, idx: int, failure: str, error: str, message: str | None, **kw: Any) -> None:
        kw.setdefault("failure_stage", TASK_RESTORE)
        self.add(phase, idx, verdict=FAILS, failure=failure, error_class=ERROR_CLASSES[error], message=message, **kw)

    def kryo5_misread(
        self, phase: str, idx: int, error: str, message: str | None, field_path: str | None, basis: list[str],
        uncertain: dict[str, str], **where: Any,
    ) -> None:  # fmt: skip
        """Flink 2.x's Kryo 5 reading the Kryo 2 bytes a 1.x job wrote for a collection fails
        (KRYO_COLLECTION_ON_2X); what it throws depends on the bytes that follow (_KRYO5_MISREADS)."""
        self.fails(
            phase, idx, KRYO_COLLECTION_ON_2X, error, message, cause=KRYO_COLLECTION_ON_2X, field_path=field_path,
            basis=basis, uncertain=uncertain, assumes=[_KRYO5_MISREADS], **where,
        )  # fmt: skip

    def undecidable(self, phase: str, idx: int, failure: str, why: str, **kw: Any) -> None:
        self.add(phase, idx, verdict=NOT_DECIDABLE, failure=failure, certain=False, undecidable_reason=why, **kw)

    def keyed_states(self) -> Iterable[tuple[int, str, StateMetaInfo, str]]:
        for idx, (name, info) in enumerate(self.keyed.items()):
            yield idx, name, info, state_kind(info, "keyed")

    def operator_states(self) -> Iterable[tuple[int, str, StateMetaInfo, str, str]]:
        for idx, (name, info) in enumerate(self.opstates.items()):
            kind = state_kind(info, "operator")
            yield idx, name, info, kind, "broadcast" if kind == "BROADCAST" else "operator"

    def enum_removed(self, phase: str, idx: int, name: str | None, root: str, node: SnapshotNode, **kw: Any) -> None:
        gone = _enum_removed(node, self.classes)
        if gone is not None:
            self.fails(
                phase,
                idx,
                ENUM_CONSTANT_REMOVED,
                "IllegalStateException",
                MESSAGES["enum"].format(cls=gone.type_class),
                cause=ENUM_CONSTANT_REMOVED,
                state_name=name,
                field_path=_path_of(node, gone, root),
                basis=["savepoint", "class_facts", "flink_source"],
                **kw,
            )

    # -- phases ------------------------------------------------------------------------------

    def unreadable(self) -> None:
        """An unknown (custom) snapshot class stops the reader: nothing after it can be checked."""
        for s in self.op.keyed + self.op.operator:
            if s.proxy is not None and s.proxy.stopped:
                self.undecidable("read", -1, STATE_UNREADABLE, s.proxy.stopped, state_name=None, basis=["savepoint"])
                return

    def class_gone(self, phase: str, idx: int, name: str | None, root: str, node: SnapshotNode, **kw: Any) -> bool:
        """A saved snapshot class of an optional module the new job's class path lacks: the proxy
        read resolves it by name and fails (``IOException: Could not find class '...' in
        classpath``, root ``ClassNotFoundException``), whether or not the new job uses the state."""
        for path, n in node_paths(node, root):
            module = module_of(n.class_name)
            if module is None:
                continue
            gone = self.ctx.module_gone(module)
            if gone is None:
                self.col.unchanged.append(f"module {module}")
            elif gone:
                self.fails(
                    phase,
                    idx,
                    SNAPSHOT_CLASS_GONE,
                    "ClassNotFoundException",
                    n.class_name,
                    cause="MODULE_NOT_ON_CLASS_PATH",
                    state_name=name,
                    field_path=path,
                    basis=["savepoint", "serializer_modules", "flink_source", "observed"],
                    assumes=[f"the new job's class path is the exported one: {module} not on it"],
                    **kw,
                )
                return True
        return False

    def keyed_proxy_read(self) -> None:
        """KeyedBackendSerializationProxy.read with the new job's classes: the key serializer
        snapshot, then each state's, in file order; a snapshot class the class path lacks, or a
        removed enum constant, throws here."""
        proxy = self.op.keyed_proxy
        if proxy is None:
            return
        roots: list[tuple[str | None, str, SnapshotNode]] = []
        if proxy.key_serializer is not None:
            roots.append((None, "key", proxy.key_serializer))
        for name, info in self.keyed.items():
            roots += [(name, _role(r), n) for r, n in info.serializers.items()]
        for idx, (name, root, node) in enumerate(roots):
            if self.class_gone("read", idx, name, root, node, backend="keyed"):
                return
            self.enum_removed("read", idx, name, root, node, backend="keyed")

    def key(self) -> None:
        """The key serializer must be compatible as is or with a reconfigured serializer (every
        backend's restore operation; StateMigrationException otherwise)."""
        proxy = self.op.keyed_proxy
        saved_key = proxy.key_serializer if proxy is not None else None
        if saved_key is None:
            return
        basis = ["savepoint", "key_type_in_spec"]
        new_key = self.new.key_serializer
        causes: list[tuple[str, str]] = []
        if new_key is None:
            pred = predict_new(saved_key, self.ctx, self.classes, "key")
            new_key, causes = pred.node, pred.causes
            basis = ["savepoint", "class_facts"]
            if not causes:
                self.col.unchanged.append(f"key of {self.op.operator_id}")
                return  # no key type in the spec and nothing known to have changed
        c = compatibility(new_key, saved_key, "key")
        if c.result in (AS_IS, RECONFIGURED):
            return
        if c.result == UNKNOWN or new_key is None:
            self.undecidable(
                "key", 0, NEW_TYPE_UNKNOWN, c.why, state_name=None, backend="keyed", field_path=c.path, basis=basis
            )
            return
        message = MESSAGES["key"].format(new=serializer_display(new_key), old=serializer_display(saved_key))
        cause = causes[0][1] if causes else ("KEY_TYPE_CHANGED" if c.path == "key" else "KEY_TYPE_EVOLVED")
        self.fails(
            "key",
            0,
            KEY_SERIALIZER_INCOMPATIBLE,
            "StateMigrationException",
            message,
            cause=cause,
            state_name=None,
            backend="keyed",
            field_path=c.path,
            basis=basis + ["flink_source"],
            assumes=[f"keys must be compatible as is; here {c.result.lower()}: {c.why}"],
        )

    def kryo_entries_gone(self) -> None:
        """1.x -> 2.x: a saved Kryo snapshot holding a serializer instance (flink-avro registers one
        for GenericData$Array) cannot be turned back into a serializer on 2.x, whatever the backend:
        KryoSerializerSnapshot.restoreSerializer unwraps its entries (LinkedOptionalMap: "Missing value
        for the key ...") while the keyed backend is built, before any value is read or state
        registered (observed in every such cross-version restore of conformance/statetypes). Operator
        state: when the operator backend reads its values (:meth:`operator_backend`)."""
        if not self.ctx.crosses_to_2x:
            return
        for idx, name, info, kind in self.keyed_states():
            for role, ser in info.serializers.items():
                gone = _kryo_entry_gone(ser, _role(role))
                if gone is not None:
                    self.fails(
                        "key",
                        1 + idx,
                        SNAPSHOT_CLASS_GONE,
                        "IllegalStateException",
                        MESSAGES["missing_value"].format(key=gone[1]),
                        cause="KRYO_SERIALIZER_INSTANCE_1X",
                        state_name=name,
                        backend="keyed",
                        state_kind=kind,
                        field_path=gone[0],
                        basis=["savepoint", "flink_source", "observed"],
                        assumes=[_KRYO_INSTANCE_1X],
                    )
                    return

    def heap_values(self) -> None:
        """Heap restores (HeapRestoreOperation for native, HeapSavepointRestoreOperation for
        canonical savepoints) read every saved value back with the saved serializers, before any
        state is requested; RocksDB reads none."""
        if self.backend == "rocksdb":
            return
        states = list(self.keyed)
        for idx, name, info, kind in self.keyed_states():
            ser = info.serializers.get("VALUE_SERIALIZER")
            if ser is None or kind in _TIMERS:
                continue
            where = {"state_name": name, "backend": "keyed", "state_kind": kind}
            kryo_at = _first_collection_kryo(ser, "value") if self.ctx.crosses_to_2x else None
            misread = _pojo_field_misread(ser, "value", self.classes, self.olds) if kryo_at is not None else None
            if misread is not None and self.backend is not None:
                # any heap restore (NATIVE or CANONICAL) reads the POJO back and fails on its next field
                self.kryo5_misread(
                    "values",
                    idx,
                    "IllegalArgumentException",
                    misread[1],
                    misread[0],
                    ["savepoint", "class_facts", "flink_source", "observed"],
                    {"message": _POJO_MISREAD if not misread[1] else _POJO_READ_BACK},
                    **where,
                )
                continue
            if kryo_at is not None:
                if self.fmt == "NATIVE" and self.backend == "hashmap":
                    # Kryo 5 misreads the Kryo 2 bytes of a collection, the key-group stream loses its
                    # place and the next state id read is not there (3 of 3 such real restores)
                    if len(states) == 1:
                        unc = {"message": _LAST_IN_KEY_GROUP}
                    else:
                        unc = dict.fromkeys(("failure", "message", "failure_stage"), _KEY_GROUP_ORDER)
                    self.kryo5_misread(
                        "values",
                        idx,
                        "NullPointerException",
                        MESSAGES["heap_native_misread"],
                        kryo_at,
                        ["savepoint", "flink_source", "observed"],
                        unc,
                        **where,
                    )
                continue  # canonical heap savepoints were read without error (observed): registration decides
            hit = _field_set_failure(ser, self.classes, self.olds, "value")
            if hit is not None:
                path, message, certain = hit
                unc = {} if certain else {"message": _MAYBE_NULLS}
                if self.backend is None:
                    unc.update(dict.fromkeys(("failure", "message"), _HEAP_ONLY))
                self.fails(
                    "values",
                    idx,
                    STATE_READ_FAILED,
                    "IllegalArgumentException",
                    message,
                    cause="POJO_FIELD_RETYPED",
                    field_path=path,
                    uncertain=unc,
                    basis=["savepoint", "class_facts", "flink_source"],
                    **where,
                )
                continue
            pred = predict_new(ser, self.ctx, self.classes, "value")
            to_kryo = next((p for p, c in pred.causes if c == "POJO_TO_KRYO"), None)
            if to_kryo is not None and self.backend is not None:
                self.add(
                    "values",
                    idx,
                    verdict=FAILS,
                    failure=STATE_READ_FAILED,
                    cause="POJO_TO_KRYO",
                    field_path=to_kryo,
                    basis=["savepoint", "class_facts"],
                    uncertain={"message": _POJO_NO_LONGER, "failure_stage": ASSUME_OPEN},
                    **where,
                )

    def operator_backend(self) -> None:
        """OperatorBackendSerializationProxy.read (removed enum constants), then
        OperatorStateRestoreOperation reads every operator and broadcast state value eagerly."""
        for idx, name, info, kind, bk in self.operator_states():
            where = {"state_name": name, "backend": bk, "state_kind": kind}
            for role, ser in info.serializers.items():
                if self.class_gone("op_read", idx, name, _role(role), ser, backend=bk, state_kind=kind):
                    return
                self.enum_removed("op_read", idx, name, _role(role), ser, backend=bk, state_kind=kind)
            for role, ser in info.serializers.items():
                root = _role(role)
                gone = _kryo_entry_gone(ser, root) if self.ctx.crosses_to_2x else None
                if gone is not None:
                    self.fails(
                        "op_values",
                        idx,
                        SNAPSHOT_CLASS_GONE,
                        "IllegalStateException",
                        MESSAGES["missing_value"].format(key=gone[1]),
                        cause="KRYO_SERIALIZER_INSTANCE_1X",
                        field_path=gone[0],
                        basis=["savepoint", "flink_source"],
                        assumes=[_KRYO_INSTANCE_1X],
                        **where,
                    )
                    break
                hit = _field_set_failure(ser, self.classes, self.olds, root)
                if hit is not None:
                    path, message, certain = hit
                    self.fails(
                        "op_values",
                        idx,
                        STATE_READ_FAILED,
                        "IllegalArgumentException",
                        message,
                        cause="POJO_FIELD_RETYPED",
                        field_path=path,
                        basis=["savepoint", "class_facts", "flink_source"],
                        uncertain={} if certain else {"message": _MAYBE_NULLS},
                        **where,
                    )
                    break
                kryo_at = _first_collection_kryo(ser, root) if self.ctx.crosses_to_2x else None
                misread = _pojo_field_misread(ser, root, self.classes, self.olds) if kryo_at is not None else None
                if misread is not None:
                    self.kryo5_misread(
                        "op_values",
                        idx,
                        "IllegalArgumentException",
                        misread[1],
                        misread[0],
                        ["savepoint", "class_facts", "flink_source", "observed"],
                        {} if misread[1] else {"message": _POJO_MISREAD},
                        **where,
                    )
                    break
                if kryo_at is not None:
                    self.add(
                        "op_values",
                        idx,
                        verdict=FAILS,
                        failure=KRYO_COLLECTION_ON_2X,
                        cause=KRYO_COLLECTION_ON_2X,
                        field_path=kryo_at,
                        failure_stage=TASK_RESTORE,
                        basis=["savepoint", "flink_source"],
                        uncertain={"message": _OPSTATE_KRYO},
                        **where,
                    )
                    break
                changed = _kryo_class_changed(ser, self.classes, self.olds, root)
                if changed is not None:
                    self.undecidable(
                        "op_values",
                        idx,
                        KRYO_CLASS_CHANGED,
                        changed[1],
                        cause=KRYO_CLASS_CHANGED,
                        field_path=changed[0],
                        basis=["savepoint", "class_facts"],
                        **where,
                    )
                    break

    def registration(self) -> None:
        """``getState`` / ``getListState`` ... in ``initializeState()`` / ``open()``: keyed states
        (namespace, kind, then value serializer: heap accepts migration, RocksDB migrates values),
        then operator and broadcast states (element serializer)."""
        for idx, name, info, kind in self.keyed_states():
            if kind not in _TIMERS:
                self.col.user_code.append(f"{self.op.operator_id}/{name}")
                self.register(idx, name, info, kind, "keyed")
        for idx, name, info, kind, bk in self.operator_states():
            self.col.user_code.append(f"{self.op.operator_id}/{name}")
            self.register(1000 + idx, name, info, kind, bk)

    def register(self, idx: int, name: str, info: StateMetaInfo, kind: str, bk: str) -> None:
        ser = info.serializers.get("VALUE_SERIALIZER")
        if ser is None:
            return
        where = {"state_name": name, "backend": bk, "state_kind": kind}
        pred = predict_new(ser, self.ctx, self.classes, "value")
        facts_used = any(not c.startswith("KRYO_COLLECTION") for _, c in pred.causes)
        basis = ["savepoint"] + (["class_facts"] if facts_used else [])
        if bk == "keyed":
            changed = _kryo_class_changed(ser, self.classes, self.olds, "value")
            if changed is not None:
                self.undecidable(
                    "register",
                    idx,
                    KRYO_CLASS_CHANGED,
                    changed[1],
                    cause=KRYO_CLASS_CHANGED,
                    field_path=changed[0],
                    basis=basis,
                    **where,
                )
                return
        c = compatibility(pred.node, ser, "value")
        cause = _cause_at(pred.causes, c.path)
        common = {"basis": basis, "assumes": [ASSUME_DECLARED], "uncertain": {"failure_stage": ASSUME_OPEN}}
        if c.result == INCOMPATIBLE:
            unc: dict[str, str] = {"failure_stage": ASSUME_OPEN}
            message = self.incompatible_message(bk, pred.node, ser, unc)
            collection = cause == KRYO_COLLECTION_ON_2X
            self.fails(
                "register",
                idx,
                KRYO_COLLECTION_ON_2X if collection else STATE_SERIALIZER_INCOMPATIBLE,
                "StateMigrationException",
                message,
                cause=cause or "DECLARED_TYPE_CHANGED",
                field_path=c.path,
                **{
                    **common,
                    "uncertain": unc,
                    "basis": basis + ["flink_source"] + (["observed"] if collection else []),
                },
                **where,
            )
            return
        if c.result == AFTER_MIGRATION and bk == "keyed" and kind == "MAP" and self.backend != "hashmap":
            old_key, new_key = dict(ser.nested).get("key"), dict(pred.node.nested).get("key") if pred.node else None
            if old_key is not None and compatibility(new_key, old_key, "value.key").result != AS_IS:
                self.fails(
                    "register",
                    idx,
                    MAP_KEY_SCHEMA_CHANGED,
                    "StateMigrationException",
                    MESSAGES["map_key"],
                    cause=cause,
                    field_path="value.key",
                    **common,
                    **where,
                )
                return
        if c.result == UNKNOWN:
            why = c.why or "; ".join(r for _, r in pred.unknown)
            self.undecidable(
                "register", idx, NEW_TYPE_UNKNOWN, why, cause=cause, field_path=c.path, basis=basis, **where
            )
            return
        self.kryo_across_majors(idx, info, where)

    def incompatible_message(
        self, bk: str, new: SnapshotNode | None, old: SnapshotNode, uncertain: dict[str, str]
    ) -> str:
        if bk == "operator":
            return MESSAGES["operator_state"]
        if bk == "broadcast":
            return MESSAGES["broadcast_value"]
        texts = {"new": serializer_display(new) if new is not None else "?", "old": serializer_display(old)}
        if self.backend == "hashmap":
            return MESSAGES["state_heap"].format(**texts)
        if self.backend is None:
            uncertain["message"] = "restoring backend not known; heap backends say 'For heap backends, the new ...'"
        return MESSAGES["state_rocksdb"].format(**texts)

    def kryo_across_majors(self, idx: int, info: StateMetaInfo, where: dict[str, Any]) -> None:
        """1.x -> 2.x: a Kryo-held class passes the snapshot check (same type class and
        registrations) but its values are Kryo 2 bytes read by Kryo 5: seen to read back for
        classes of primitive and String fields; anything else is not decidable without running."""
        if not self.ctx.crosses_to_2x:
            return
        for role, ser in info.serializers.items():
            for p, n in node_paths(ser, _role(role)):
                if not (n.kind == "KRYO" or n.class_name == KRYO) or n.type_class in COLLECTION_INTERFACES:
                    continue
                facts = self.classes.get(n.type_class or "")
                if _simple_kryo_class(facts, self.classes):
                    continue
                why = (
                    f"Kryo({n.type_class}) values were written by Kryo 2 (Flink 1.x) and are read by Kryo 5 (Flink "
                    "2.x); Flink documents no compatibility; real restores read back classes of primitive and "
                    "String fields only" + ("" if facts is not None else f"; no facts about {n.type_class}")
                )
                self.undecidable(
                    "register",
                    idx,
                    KRYO2_VALUES_ON_KRYO5,
                    why,
                    cause=KRYO2_VALUES_ON_KRYO5,
                    field_path=p,
                    basis=["savepoint", "observed"],
                    **where,
                )
                return


_TIMERS = ("TIMERS", "PRIORITY_QUEUE")
_KRYO_INSTANCE_1X = (
    "Flink 2.x has no org.apache.flink.api.common.ExecutionConfig$SerializableSerializer (moved to "
    "org.apache.flink.api.common.SerializableSerializer): the Java-serialized entry of a 1.x Kryo snapshot reads "
    "as absent"
)
_HEAP_ONLY = "restoring backend not known: a heap backend fails reading the values back, RocksDB at registration"
_LAST_IN_KEY_GROUP = (
    "the misread state is the last one of its key group: the read may end without an error, then the "
    "registration check fails"
)
# HeapSnapshotResources keeps a key group's states in a HashMap keyed by StateUID, whose hashCode is
# Objects.hash(name, BackendStateType): an enum's identity hash, so the order the states are written in
# (HeapSnapshotStrategy iterates that map per key group) is not known before the run
_KEY_GROUP_ORDER = (
    "the heap snapshot writes a key group's states (timers included) in a HashMap order whose hash holds an "
    "enum's identity hash: when the misread state comes last the read ends without an error and the "
    "registration check fails instead (its stage: where user code first requests the state); else what the "
    "misaligned read throws depends on the bytes it lands on (seen: the NPE on the missing state, once an NPE "
    "without a message)"
)
_KRYO5_MISREADS = "Flink 2.x's Kryo 5 reads Kryo 2 collection bytes wrongly (observed, not documented)"
# observed (conformance/statetypes): 40 such heap restores failed so (10 of seed 21, 15 per seed-31
# cross set); per seed-31 cross set two went otherwise: 00075 read its POJOs back and failed at
# registration, 00003 (NATIVE) lost its place in the key-group stream (the NPE of a missing state)
_POJO_READ_BACK = (
    "how Kryo 5 reads the Kryo 2 collection bytes depends on the saved values: seen to read them back without "
    "an error (then the registration check fails) or to lose the key group's place (a NullPointerException)"
)
_POJO_MISREAD = (
    "the field after the misread collection is not a known primitive: the read goes on misaligned and fails "
    "(or not) in a way not known"
)
_MAYBE_NULLS = "the saved field may hold only nulls (then the registration check fails instead)"
_POJO_NO_LONGER = (
    "the heap restore rebuilds saved POJOs of a class that is no longer a POJO: it fails there if the class lost "
    "its public no-argument constructor, else at registration (STATE_SERIALIZER_INCOMPATIBLE)"
)
_OPSTATE_KRYO = (
    "Kryo 5 reads the Kryo 2 collection bytes when the operator state backend is built: it may fail there "
    "(exception not known) before the registration check"
)


def _role(role: str) -> str:
    return role.removesuffix("_SERIALIZER").lower()


def _path_of(root: SnapshotNode, target: SnapshotNode, name: str) -> str:
    return next((p for p, n in node_paths(root, name) if n is target), name)


def _kryo_class_changed(
    ser: SnapshotNode, classes: Mapping[str, ClassFacts], olds: Mapping[str, ClassFacts], root: str
) -> tuple[str, str] | None:
    """A class Kryo keeps (in both jars) whose fields differ between the old and the new jar:
    Kryo's snapshot has no field layout, whether the old bytes read depends on the change."""
    for p, n in node_paths(ser, root):
        if not (n.kind == "KRYO" or n.class_name == KRYO) or not n.type_class:
            continue
        new, old = classes.get(n.type_class), olds.get(n.type_class)
        if new is None or old is None or new.kind != "generic" or old.kind != "generic":
            continue
        if new.fields != old.fields:
            return p, (
                f"Kryo serializes {n.type_class} with no schema in the savepoint; its fields changed "
                f"({list(old.fields)} -> {list(new.fields)}): whether the saved bytes still read, and how it fails, "
                "depends on Kryo's field serializer and the values"
            )
    return None


def _decide(items: list[StateProblem]) -> StateDecision:
    """Flink reports the first failure in its walk order; failures in different tasks race."""
    items.sort(key=lambda p: p.order)
    fails = [p for p in items if p.verdict == FAILS]
    undecided = [p for p in items if p.verdict == NOT_DECIDABLE]
    decision = StateDecision(RESTORES, items, assumes=[ASSUME_DECLARED])
    if fails:
        first = fails[0]
        first.reported = True
        decision.verdict = FAILS
        decision.failure, decision.operator_id, decision.state_name = first.failure, first.operator_id, first.state_name
        decision.error_class, decision.message, decision.failure_stage = (
            first.error_class,
            first.message,
            first.failure_stage,
        )
        decision.uncertain = dict(first.uncertain)
        tasks = {p.order[:2] for p in fails}
        if len(tasks) > 1:
            decision.uncertain["reported"] = "failures in several tasks: Flink reports whichever task fails first"
        heap_regs = [p for p in fails if p.order[:4] == first.order[:4] and p.order[4] == _PHASES["register"]]
        if first.order[4] == _PHASES["register"] and len(heap_regs) > 1:
            decision.uncertain["reported"] = (
                "several states of the operator fail at registration: Flink names the first the user code requests "
                "(the savepoint's order here: RocksDB's registration order, a hash order for heap savepoints)"
            )
        if undecided and any(p.order < first.order for p in undecided):
            decision.uncertain.setdefault("reported", "an earlier step is not decidable")
    elif undecided:
        decision.verdict = NOT_DECIDABLE
        decision.uncertain = {"verdict": "; ".join(sorted({p.undecidable_reason or p.failure for p in undecided}))}
    return decision


# ------------------------------------------------------------------------------------------------
#  One restore_checks row for both halves
# ------------------------------------------------------------------------------------------------

CHECK_EXTRA_COLUMNS = (
    "failure_stage",
    "state_name",
    "error_class",
    "decidable",
    "undecidable_reasons",
    "taken_as_unchanged",
    "states_checked_in_user_code",
)


def restore_check_row(
    head: Mapping[str, Any],
    verdict: str,
    failure: str | None,
    operator_id: str | None,
    message: str | None,
    dropped: Sequence[str],
    state: StateDecision | None,
) -> dict[str, Any]:
    """A ``restore_checks`` row from the topology half's result (its five values as
    :mod:`udfs.restore.check_rows` writes them) and the state half's decision, with SPEC section 5's
    columns and meaning unchanged and :data:`CHECK_EXTRA_COLUMNS` added. The JobMaster's checks run
    before any task: a topology failure is the one reported (stage ``job_init``). Else a state
    failure is (its kind, operator, message, stage). ``verdict`` keeps its three values: when the
    state half cannot decide, the row says RESTORES (nothing certainly fails) with ``decidable``
    false and the reasons."""
    row: dict[str, Any] = {
        **head,
        "verdict": verdict,
        "failure": failure,
        "operator_id": operator_id,
        "message": message,
        "dropped_operator_ids": list(dropped),
        **dict.fromkeys(CHECK_EXTRA_COLUMNS),
    }
    row["decidable"] = True
    if verdict == FAILS:
        row["failure_stage"] = JOB_INIT
    if state is None or verdict != RESTORES:
        return row
    row["taken_as_unchanged"] = list(state.taken_as_unchanged)
    row["states_checked_in_user_code"] = len(state.depends_on_user_code)
    if state.verdict == FAILS:
        row.update(
            verdict=FAILS,
            failure=state.failure,
            operator_id=state.operator_id,
            message=state.message,
            failure_stage=state.failure_stage,
            state_name=state.state_name,
            error_class=state.error_class,
        )
        row["undecidable_reasons"] = [f"{k}: {v}" for k, v in state.uncertain.items()] or None
    elif state.verdict == NOT_DECIDABLE:
        row["decidable"] = False
        row["undecidable_reasons"] = sorted(
            {f"{p.failure}: {p.undecidable_reason}" for p in state.problems if p.verdict == NOT_DECIDABLE}
        )
    return row
