"""What the new job declares: the spec node field ``declared_states``, read for the state half.

The exporter writes, per stream node, every state its operator and user functions declare
(docs/spec-extensions.md, "``declared_states``"): the name, the kind, the serializer snapshot
Flink will write for it (framed as ``state_key_serializer_snapshot``), TTL, where the declaration
was found, and why it could not be resolved. With it the state half compares each saved state
with the state the new job really declares, instead of assuming it is declared as before.

This module turns the field into :class:`Declarations` and answers, per saved state, which entry
Flink will register it with (:meth:`Declarations.match`), what Flink's backend then holds for it
(:meth:`DeclaredState.state_serializer`: the TTL wrapper ``TtlStateFactory.TtlSerializer`` put
around a TTL state's value, as Flink's ``TtlStateFactory`` does) and when the registration runs
(:meth:`DeclaredState.stage`: in ``open()`` / ``initializeState()`` while the task restores, in
``processElement()`` and friends once it runs).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from udfs.restore.state_kinds import Stage
from udfs.savepoint.binary import Reader, StateMetaError
from udfs.savepoint.serializer_snapshots import SnapshotNode, read_serializer_snapshot
from udfs.savepoint.simple_types import BY_JAVA
from udfs.savepoint.state_rows import TTL_CLASSES

__all__ = [
    "DECLARED_STATES_FIELD",
    "DeclaredState",
    "Declarations",
    "Match",
    "declarations_from_spec",
    "snapshot_from_base64",
    "KEYED_KINDS",
    "OPERATOR_KINDS",
]

DECLARED_STATES_FIELD = "declared_states"
KEYED_KINDS = frozenset({"VALUE", "LIST", "MAP", "REDUCING", "AGGREGATING"})
# a declared operator state's kind -> the savepoint's kind (state_rows.state_kind of its distribution mode)
OPERATOR_KINDS = {"OPERATOR_LIST": "OPERATOR_LIST", "OPERATOR_UNION_LIST": "UNION_LIST", "BROADCAST": "BROADCAST"}
# OperatorStateHandle.Mode as Flink prints it in "Incompatible state assignment modes"
ASSIGNMENT_MODES = {"OPERATOR_LIST": "SPLIT_DISTRIBUTE", "UNION_LIST": "UNION", "BROADCAST": "BROADCAST"}
TTL_SNAPSHOT = TTL_CLASSES[0]  # TtlStateFactory$TtlSerializerSnapshot: (timestamp: Long, value)

# The methods Flink calls while a task restores (StreamTask.restoreInternal -> initializeState,
# then open) and those it calls only once the task runs (records, timers, broadcast elements,
# window functions and triggers).
_RESTORING = frozenset({"open", "initializeState", "setup", "setRuntimeContext", "initializeStateAndOpen"})
_RUNNING = frozenset({
    "processElement", "processElement1", "processElement2", "processBroadcastElement", "onTimer", "flatMap", "map",
    "filter", "reduce", "fold", "invoke", "apply", "process", "join", "coGroup", "flatMap1", "flatMap2", "map1",
    "map2", "onElement", "onEventTime", "onProcessingTime", "onMerge", "clear", "processWatermark", "add", "merge",
    "getResult", "createAccumulator", "run", "processRecord", "snapshotState", "notifyCheckpointComplete",
    "endInput", "finish", "close", "asyncInvoke", "timeout",
})  # fmt: skip


def snapshot_from_base64(value: str, what: str) -> SnapshotNode:
    """A serializer snapshot the exporter wrote: base64 of the bytes
    ``TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot`` writes (proxy version 2,
    then the versioned snapshot). Raises ValueError naming ``what`` when they do not decode."""
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"{what}: not base64 ({e})") from None
    try:
        return read_serializer_snapshot(Reader(data, 0)).node
    except StateMetaError as e:
        raise ValueError(f"{what}: {e}") from None


def _method(site: str | None) -> str | None:
    """``com.acme.RideFn#open`` -> ``open``; a field path (no ``#``) -> None."""
    if not site or "#" not in site:
        return None
    return site.rsplit("#", 1)[1]


@dataclass(frozen=True)
class DeclaredState:
    """One entry of ``declared_states``. ``serializer``: the decoded snapshot of the state's own
    serializer (a TTL state's unwrapped; LIST: the ListSerializer, MAP: the MapSerializer, operator
    state: the element's, broadcast: the value's); ``key_serializer``: a broadcast state's map key;
    ``unresolved``: why the entry is not known (then the serializer is None); ``error``: a snapshot
    that did not decode."""

    name: str | None
    kind: str | None
    serializer: SnapshotNode | None = None
    key_serializer: SnapshotNode | None = None
    ttl: Mapping[str, Any] | None = None
    basis: str | None = None
    declared_in: str | None = None
    registered_in: str | None = None
    called_from: str | None = None
    unresolved: str | None = None
    conditional: bool = False
    saved_as: tuple[str, ...] = ()
    type_info: str | None = None
    error: str | None = None

    @staticmethod
    def from_dict(raw: Mapping[str, Any]) -> DeclaredState:
        """One entry as the exporter writes it; a snapshot that does not decode is kept as ``error``."""
        errors: list[str] = []

        def decode(key: str) -> SnapshotNode | None:
            value = raw.get(key)
            if not value:
                return None
            try:
                return snapshot_from_base64(str(value), key)
            except ValueError as e:
                errors.append(str(e))
                return None

        return DeclaredState(
            name=raw.get("name"),
            kind=raw.get("kind"),
            serializer=decode("serializer_snapshot"),
            key_serializer=decode("key_serializer_snapshot"),
            ttl=raw.get("ttl") or None,
            basis=raw.get("basis"),
            declared_in=raw.get("declared_in"),
            registered_in=raw.get("registered_in"),
            called_from=raw.get("called_from"),
            unresolved=raw.get("unresolved"),
            conditional=bool(raw.get("conditional")),
            saved_as=tuple(raw.get("saved_as") or ()),
            type_info=raw.get("type_info"),
            error="; ".join(errors) or None,
        )

    @property
    def resolved(self) -> bool:
        """Name, kind and serializer known (a TIMERS entry needs no serializer here)."""
        if self.unresolved or self.error or not self.name or not self.kind:
            return False
        return self.serializer is not None or self.kind == "TIMERS"

    @property
    def why_unknown(self) -> str:
        """Why the entry cannot be compared, in the exporter's words (class, method, why)."""
        if self.unresolved:
            return self.unresolved
        if self.error:
            return f"its serializer snapshot does not decode: {self.error}"
        return f"declared in {self.declared_in or '?'} without a serializer snapshot"

    @property
    def where(self) -> str:
        """The call that registers the state (``class#method``), or where the descriptor is held."""
        return self.registered_in or self.declared_in or "?"

    def stage(self) -> Stage | None:
        """When Flink registers the state, so when a failing check shows: while the task restores
        (``initializeState()``, ``open()``; a broadcast operator registers its descriptors in
        ``open()``), or once it runs (``processElement()``...): the method Flink calls that reaches
        the declaring call (``called_from``, for a call in a helper), else the method of the call.
        None: a method of the job Flink does not call itself, whose caller the entry does not name
        (an exporter before ``called_from``)."""
        method = _method(self.called_from) or _method(self.registered_in) or _method(self.declared_in)
        if method is None:
            return Stage.TASK_RESTORE if self.kind == "BROADCAST" else None
        if method in _RESTORING:
            return Stage.TASK_RESTORE
        if method in _RUNNING:
            return Stage.TASK_RUNNING
        return None

    def state_serializer(self) -> SnapshotNode | None:
        """The serializer Flink's backend registers for the state: with TTL, the value wrapped in
        ``TtlStateFactory.TtlSerializer(LongSerializer, value)`` (a list: each element, a map: each
        value), as the savepoint of a TTL state holds it."""
        if self.serializer is None or not self.ttl:
            return self.serializer
        return ttl_wrapped(self.serializer, self.kind)


_LONG = SnapshotNode(BY_JAVA["long"].snapshot, 0, "SIMPLE")


def _ttl(node: SnapshotNode) -> SnapshotNode:
    return SnapshotNode(TTL_SNAPSHOT, 0, "COMPOSITE", nested=(("timestamp", _LONG), ("value", node)))


def ttl_wrapped(node: SnapshotNode, kind: str | None) -> SnapshotNode:
    """``TtlStateFactory``'s serializer for a TTL state of this kind: LIST wraps the element, MAP
    the map value, every other kind the value."""
    roles = dict(node.nested)
    if kind == "LIST" and "element" in roles:
        return replace(node, nested=(("element", _ttl(roles["element"])),))
    if kind == "MAP" and "value" in roles:
        return replace(node, nested=tuple((r, _ttl(n) if r == "value" else n) for r, n in node.nested))
    return _ttl(node)


def without_ttl(node: SnapshotNode) -> tuple[SnapshotNode, bool]:
    """The serializer with every TTL wrapper replaced by its value (and whether there was one):
    what a Flink 2.1+ ``TtlAwareSerializer`` compares when TTL was switched on or off."""
    if node.class_name in TTL_CLASSES:
        value = dict(node.nested).get("value")
        if value is not None:
            return without_ttl(value)[0], True
    if not node.nested:
        return node, False
    parts = [(role, *without_ttl(n)) for role, n in node.nested]
    had = any(h for _, _, h in parts)
    return (replace(node, nested=tuple((r, n) for r, n, _ in parts)) if had else node), had


@dataclass(frozen=True)
class Match:
    """The declaration a saved state meets: ``entry`` (resolved, Flink registers the state with
    it), else the ``unknown`` entries that may be it (unresolved, possibly of that name), else
    neither: the new job does not declare the state."""

    entry: DeclaredState | None = None
    unknown: tuple[DeclaredState, ...] = ()


@dataclass(frozen=True)
class Declarations:
    """Every entry of one node's ``declared_states`` (``[]``: the node declares no state)."""

    entries: tuple[DeclaredState, ...] = ()
    error: str | None = None  # the field itself did not parse

    def match(self, name: str, backend: str) -> Match:
        """The entry Flink registers a saved state of this name with, in its backend (``keyed``,
        ``operator`` or ``broadcast``: each keeps its own states, so a keyed and an operator state
        of one name never meet). The first resolved entry of that name wins (Flink keeps the state
        the first registration created; a broadcast operator registers its descriptors in
        ``open()`` before any function asks). Unresolved entries of that name, or of no known
        name, of a kind the backend could hold, may be it."""
        same = [e for e in self.entries if _backend_fits(e.kind, backend)]
        exact = [e for e in same if e.resolved and e.name == name]
        if exact:
            return Match(exact[0])
        maybe = tuple(e for e in same if not e.resolved and e.name in (name, None))
        return Match(None, maybe)

    def named(self, backend: str) -> list[DeclaredState]:
        """The resolved entries of one backend (timers aside)."""
        return [e for e in self.entries if e.resolved and _backend_fits(e.kind, backend)]


_BACKEND_KINDS = {
    "keyed": KEYED_KINDS,
    "operator": frozenset({"OPERATOR_LIST", "OPERATOR_UNION_LIST"}),
    "broadcast": frozenset({"BROADCAST"}),
}


def _backend_fits(kind: str | None, backend: str) -> bool:
    """An entry of this kind may hold a state of the backend; an unknown kind may be any. TIMERS
    are priority queues of the keyed backend, never requested by name here."""
    if kind == "TIMERS":
        return False
    return kind is None or kind in _BACKEND_KINDS.get(backend, ())


def declarations_from_spec(value: Any) -> Declarations | None:
    """The node field as the stream rows keep it (canonical JSON text) or as a spec holds it (a
    list); None when the field is absent (an older exporter: the declarations are not known)."""
    if value is None:
        return None
    raw: Any = value
    if isinstance(value, str):
        try:
            raw = json.loads(value)
        except json.JSONDecodeError as e:
            return Declarations((), f"{DECLARED_STATES_FIELD} is not JSON: {e}")
    if not isinstance(raw, list):
        return Declarations((), f"{DECLARED_STATES_FIELD} is not a list")
    return Declarations(tuple(DeclaredState.from_dict(e) for e in _objects(raw)))


def _objects(raw: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    return (e for e in raw if isinstance(e, Mapping))
