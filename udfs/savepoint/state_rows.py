"""One row per saved state: the ``savepoint_states`` table, for fleet-wide queries on state types.

The proxies :func:`udfs.savepoint.state_meta.decode_operator_states` reads say, per operator,
which states were saved and with which serializer snapshots. A fleet question ("which jobs hold
Kryo-serialized ``java.util.List`` state?", "which POJOs keep collections in Kryo?") is a filter
on flat columns, so this module flattens each state once, with its type both as one line of
text (readable) and as the snapshot tree in JSON (structured), and the few derived facts the
upgrade rules key on. Operators whose state streams could not be read get one row with
``state_name`` null and the reason, so an unreadable savepoint is visible, never silently empty.

Columns (:data:`STATE_COLUMNS`, in this order):

* ``savepoint``: the savepoint as the manifest names it;
* ``operator_id``, ``operator_name``, ``operator_uid``: as the ``_metadata`` file has them
  (name and uid only in the 2.x formats);
* ``state_name``: the state's registered name (``_timer_state/...`` for timers);
* ``backend``: ``keyed`` (keyed state backend, timers included), ``operator`` or ``broadcast``;
* ``distribution_mode``: operator and broadcast states only (``SPLIT_DISTRIBUTE``, ``UNION``,
  ``BROADCAST``);
* ``state_kind``: ``VALUE``, ``LIST``, ``MAP``, ``REDUCING``, ``AGGREGATING``, ``FOLDING``
  (keyed, the option ``KEYED_STATE_TYPE``), ``TIMERS`` (priority queue named ``_timer_state/``),
  ``PRIORITY_QUEUE`` (any other), ``OPERATOR_LIST``, ``UNION_LIST``, ``BROADCAST``;
* ``key_type``: the keyed backend's key type (keyed states); ``namespace_type``;
  ``user_key_type``: a MAP state's map key, a broadcast state's key; ``value_type``: what one
  value is to the user (VALUE: the value, LIST: an element, MAP: a map value), all as
  ``SnapshotNode.type_text``;
* ``serializer_type``: the whole state serializer (``List<...>``, ``Map<...>``) as text;
* ``key_tree``, ``serializer_tree``: those snapshot trees as JSON text (``SnapshotNode.to_dict``);
* ``uses_kryo``: Kryo serializes some part of the key, namespace or value;
  ``first_kryo_path``: where (``value.element.fields.tags``; see :func:`node_paths`);
  ``kryo_classes``: the type classes Kryo holds, walk order;
* ``pojo_collection_fields``: ``Class.field`` of every POJO field that Kryo holds as a
  ``java.util`` collection interface (the 1.x -> 2.x upgrade breaks exactly these);
* ``class_names``: non-JDK classes named in the tree (POJO, enum, Kryo, Avro types), the
  classes whose facts the restore rules can use;
* ``has_ttl``: a TTL serializer wraps the value;
* ``snapshot_classes``: every serializer snapshot class in the state's trees, first seen first;
* ``subtasks``: how many subtask proxies list the state (a subtask whose keys never touched a
  state does not register it);
* ``unreadable_reason``: why (part of) the state could not be read: an unknown snapshot class
  (custom serializer) and the role that stopped the reader, or the stream's read error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.state_meta import OperatorStateTypes, StateMetaInfo
from udfs.savepoint.type_names import FLINK

__all__ = [
    "STATE_COLUMNS",
    "state_rows",
    "state_kind",
    "node_paths",
    "first_kryo_path",
    "kryo_classes",
    "pojo_collection_fields",
    "user_classes",
    "has_ttl",
    "value_node",
]

STATE_COLUMNS = (
    "savepoint",
    "operator_id",
    "operator_name",
    "operator_uid",
    "state_name",
    "backend",
    "distribution_mode",
    "state_kind",
    "key_type",
    "namespace_type",
    "user_key_type",
    "value_type",
    "serializer_type",
    "key_tree",
    "serializer_tree",
    "uses_kryo",
    "first_kryo_path",
    "kryo_classes",
    "pojo_collection_fields",
    "class_names",
    "has_ttl",
    "snapshot_classes",
    "subtasks",
    "unreadable_reason",
)

TTL_CLASSES = (
    FLINK + "runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot",
    FLINK + "runtime.state.v2.ttl.TtlStateFactory$TtlSerializerSnapshot",
)
TTL_AWARE = FLINK + "runtime.state.ttl.TtlAwareSerializerSnapshot"
_MODES = {"SPLIT_DISTRIBUTE": "OPERATOR_LIST", "UNION": "UNION_LIST", "BROADCAST": "BROADCAST"}
_JDK_PREFIXES = ("java.", "javax.", "scala.", FLINK, "org.apache.avro.generic.")


# ------------------------------------------------------------------------------------------------
#  Facts of one snapshot tree
# ------------------------------------------------------------------------------------------------


def node_paths(node: SnapshotNode, root: str) -> Iterator[tuple[str, SnapshotNode]]:
    """Every node with its path, depth first in Flink's write order: nested snapshots by role
    (``value.element``, ``value.key``, ``value.f0``), POJO fields as ``.fields.<name>``, POJO
    subclasses as ``.subclasses.<class>``. Paths are what rows and rules name a place by."""
    stack: list[tuple[str, SnapshotNode]] = [(root, node)]
    while stack:
        path, n = stack.pop()
        yield path, n
        children: list[tuple[str, SnapshotNode]] = [(f"{path}.{role}", c) for role, c in n.nested]
        children += [(f"{path}.fields.{f.name}", f.snapshot) for f in n.fields if f.snapshot is not None]
        for key in ("registered_subclasses", "non_registered_subclasses"):
            for cls, sub in n.facts.get(key, ()):
                if isinstance(sub, SnapshotNode):
                    children.append((f"{path}.subclasses.{cls}", sub))
        stack.extend(reversed(children))


def first_kryo_path(node: SnapshotNode | None, root: str) -> str | None:
    """Path of the first node Kryo serializes, or None."""
    if node is None:
        return None
    return next((p for p, n in node_paths(node, root) if n.is_kryo), None)


def kryo_classes(node: SnapshotNode | None) -> list[str]:
    """Type classes Kryo holds in the tree, first seen first."""
    if node is None:
        return []
    return list(dict.fromkeys(n.type_class or "?" for n in node.walk() if n.is_kryo))


def pojo_collection_fields(node: SnapshotNode | None) -> list[str]:
    """``Class.field`` of each POJO field whose serializer is Kryo for a collection interface."""
    if node is None:
        return []
    out = []
    for n in node.walk():
        if n.kind != "POJO":
            continue
        for f in n.fields:
            if f.snapshot is not None and f.snapshot.is_kryo_collection:
                out.append(f"{n.type_class}.{f.name}")
    return list(dict.fromkeys(out))


def user_classes(node: SnapshotNode | None) -> list[str]:
    """Non-JDK, non-Flink classes the tree names (the classes of POJO, enum, Kryo, Avro nodes)."""
    if node is None:
        return []
    names = [
        n.type_class
        for n in node.walk()
        if n.type_class and n.kind in ("POJO", "ENUM", "KRYO", "AVRO") and not n.type_class.startswith(_JDK_PREFIXES)
    ]
    return list(dict.fromkeys(names))


def has_ttl(node: SnapshotNode | None) -> bool:
    """A TTL serializer wraps the value (1.x / 2.x TtlSerializer, or 2.x TtlAware with TTL on)."""
    if node is None:
        return False
    return any(
        n.class_name in TTL_CLASSES or (n.class_name == TTL_AWARE and n.facts.get("ttl_enabled")) for n in node.walk()
    )


def _unwrap_ttl(node: SnapshotNode) -> SnapshotNode:
    """The user's value serializer inside TTL wrappers (TtlSerializer's ``value``, TtlAware's
    ``original``), so a TTL state reads as its value type."""
    n = node
    for _ in range(4):
        roles = dict(n.nested)
        if n.class_name in TTL_CLASSES and "value" in roles:
            n = roles["value"]
        elif n.class_name == TTL_AWARE and "original" in roles:
            n = roles["original"]
        else:
            break
    return n


def state_kind(info: StateMetaInfo, backend: str) -> str:
    """VALUE / LIST / MAP / ... for keyed states, TIMERS or PRIORITY_QUEUE for priority queues,
    OPERATOR_LIST / UNION_LIST / BROADCAST for operator states (by distribution mode)."""
    if backend == "keyed":
        if info.backend_state_type == "PRIORITY_QUEUE":
            return "TIMERS" if info.name.startswith("_timer_state/") else "PRIORITY_QUEUE"
        return info.options.get("KEYED_STATE_TYPE", "UNKNOWN")
    mode = info.options.get("OPERATOR_STATE_DISTRIBUTION_MODE", "")
    return _MODES.get(mode, mode or "UNKNOWN")


def value_node(info: StateMetaInfo, kind: str) -> tuple[SnapshotNode | None, SnapshotNode | None]:
    """(user key, one value) of a state: a MAP state's map key and map value, a LIST state's
    element, a broadcast state's key and value; TTL wrappers are looked through."""
    ser = info.serializers.get("VALUE_SERIALIZER")
    if ser is None:
        return None, None
    inner = _unwrap_ttl(ser)
    roles = dict(inner.nested)
    if kind == "MAP" and "key" in roles:
        return roles["key"], _unwrap_ttl(roles.get("value", inner))
    if kind == "LIST" and "element" in roles:
        return None, _unwrap_ttl(roles["element"])
    if kind == "BROADCAST":
        return info.serializers.get("KEY_SERIALIZER"), inner
    return None, inner


# ------------------------------------------------------------------------------------------------
#  Rows
# ------------------------------------------------------------------------------------------------


def _text(node: SnapshotNode | None) -> str | None:
    return node.type_text if node is not None else None


def _tree(node: SnapshotNode | None) -> str | None:
    return json.dumps(node.to_dict(), sort_keys=False) if node is not None else None


def _unreadable(info: StateMetaInfo, stopped: str | None) -> str | None:
    if info.complete:
        return None
    for role, node in info.serializers.items():
        unknown = next((n for n in node.walk() if n.kind in ("UNKNOWN", "LEGACY_CONFIG")), None)
        if unknown is not None:
            what = "pre-1.7 config snapshot" if unknown.kind == "LEGACY_CONFIG" else "unknown snapshot class"
            return f"{role}: {what} {unknown.class_name}"
    return stopped or "incomplete"


def _state_row(
    savepoint: str,
    op: OperatorStateTypes,
    info: StateMetaInfo,
    backend: str,
    key: SnapshotNode | None,
    subtasks: int,
    stopped: str | None,
) -> dict[str, Any]:
    kind = state_kind(info, backend)
    ser = info.serializers.get("VALUE_SERIALIZER")
    ns = info.serializers.get("NAMESPACE_SERIALIZER")
    user_key, value = value_node(info, kind)
    trees = [(r, n) for r, n in (("key", key if backend == "keyed" else None), ("namespace", ns)) if n is not None]
    for role, n in info.serializers.items():
        if role != "NAMESPACE_SERIALIZER":
            trees.append((role.removesuffix("_SERIALIZER").lower(), n))
    kryo_at = next((p for r, n in trees if (p := first_kryo_path(n, r)) is not None), None)
    classes: list[str] = []
    for _, n in trees:
        classes += [m.class_name for m in n.walk()]
    every = [n for _, n in trees]
    return {
        "savepoint": savepoint,
        "operator_id": op.operator_id,
        "operator_name": op.operator_name,
        "operator_uid": op.operator_uid,
        "state_name": info.name,
        "backend": backend if info.backend_state_type != "BROADCAST" else "broadcast",
        "distribution_mode": info.options.get("OPERATOR_STATE_DISTRIBUTION_MODE") if backend != "keyed" else None,
        "state_kind": kind,
        "key_type": _text(key) if backend == "keyed" else None,
        "namespace_type": _text(ns),
        "user_key_type": _text(user_key),
        "value_type": _text(value),
        "serializer_type": _text(ser),
        "key_tree": _tree(key) if backend == "keyed" else None,
        "serializer_tree": _tree(ser),
        "uses_kryo": kryo_at is not None,
        "first_kryo_path": kryo_at,
        "kryo_classes": list(dict.fromkeys(c for n in every for c in kryo_classes(n))),
        "pojo_collection_fields": list(dict.fromkeys(c for n in every for c in pojo_collection_fields(n))),
        "class_names": list(dict.fromkeys(c for n in every for c in user_classes(n))),
        "has_ttl": has_ttl(ser),
        "snapshot_classes": list(dict.fromkeys(classes)),
        "subtasks": subtasks,
        "unreadable_reason": _unreadable(info, stopped),
    }


def _error_row(savepoint: str, op: OperatorStateTypes, backend: str, reason: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(STATE_COLUMNS)
    row.update(
        savepoint=savepoint,
        operator_id=op.operator_id,
        operator_name=op.operator_name,
        operator_uid=op.operator_uid,
        backend=backend,
        uses_kryo=False,
        kryo_classes=[],
        pojo_collection_fields=[],
        class_names=[],
        has_ttl=False,
        snapshot_classes=[],
        subtasks=0,
        unreadable_reason=reason,
    )
    return row


def state_rows(savepoint: str, operators: Mapping[str, OperatorStateTypes]) -> list[dict[str, Any]]:
    """``savepoint_states`` rows of one savepoint: per operator (the mapping's order, which is
    the ``_metadata`` file order) its keyed states, then its operator and broadcast states, each
    in the file order of the first subtask that lists it. Every stream that could not be read
    (a missing or truncated state file) adds one row with ``state_name`` null and its error,
    naming the stream, as ``unreadable_reason``."""
    out: list[dict[str, Any]] = []
    for op in operators.values():
        streams = (("managed_keyed", "keyed", op.keyed), ("managed_operator", "operator", op.operator))
        for kind, backend, subtasks in streams:
            counts: dict[str, int] = {}
            stopped = None
            for s in subtasks:
                if s.proxy is None:
                    continue
                stopped = stopped or s.proxy.stopped
                for info in list(s.proxy.states) + list(getattr(s.proxy, "broadcast_states", ())):
                    counts[info.name] = counts.get(info.name, 0) + 1
            key = op.keyed_proxy.key_serializer if backend == "keyed" and op.keyed_proxy else None
            for name, info in op.states(kind).items():
                out.append(_state_row(savepoint, op, info, backend, key, counts.get(name, 0), stopped))
            for s in subtasks:  # a stream that could not be read: one row naming it
                if s.error:
                    out.append(_error_row(savepoint, op, backend, f"{kind}[{s.subtask}] {s.source}: {s.error}"))
    return out
