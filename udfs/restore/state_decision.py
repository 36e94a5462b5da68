"""One task's restore of its operators' state, phase by phase as Flink runs it.

Per saved operator matched into the new job (:class:`OperatorRestore`), in Flink's order
(``StreamTaskStateInitializerImpl``, the backends' restore operations, then user code):

1. ``READ``: the keyed backend reads its proxy with the new job's classes: a snapshot class of a
   module the class path lacks, or an enum constant removed, fails here;
2. ``KEY``: the key serializer must be compatible as is; on 1.x -> 2.x a Kryo snapshot holding a
   1.x serializer instance cannot be restored while the keyed backend is built;
3. ``VALUES``: heap backends read every saved value back with the saved serializers (RocksDB none);
4. ``OP_READ`` / ``OP_VALUES``: the operator backend reads its proxy, then every value;
5. ``REGISTER``: each state user code requests is checked (serializer, a MapState's key), in the
   savepoint's file order.

Reading values back is one check for both backends (:meth:`OperatorRestore.read_back`),
parameterised by the backend's :class:`udfs.restore.state_values.ValuePolicy`: which failures can
show while that backend reads, in which order, and how sure each is. When the new job's spec says
what each operator declares (``declared_states``), registration compares each saved state with
its declaration (:mod:`udfs.restore.state_declared`); else it predicts the new serializer from the
saved one. What a failure is, and its message, is the serializer family's
(:mod:`udfs.restore.families`); here is only where and when. Which of a check's failures Flink
reports: :func:`udfs.restore.state_problems.reported_decision`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from udfs.restore import families as fam
from udfs.restore.families import composite, custom, enums, kryo
from udfs.restore.families.base import CompatResult
from udfs.restore.state_declared import DeclaredRegistration
from udfs.restore.state_inputs import ClassFacts, NewOperator, StateContext
from udfs.restore.state_kinds import Basis, Cause, ErrorClass, Failure, Phase, Stage, Verdict
from udfs.restore.state_problems import (
    ASSUME_DECLARED,
    ASSUME_OPEN,
    OperatorPosition,
    StateDecision,
    StateProblem,
    WalkOrder,
    reported_decision,
)
from udfs.restore.state_value_reads import ValueRequest, ValueSource, heap_reads, operator_reads, rocksdb_reads
from udfs.restore.state_values import (
    ENTRY_GONE,
    HEAP,
    HEAP_READ,
    OPERATOR,
    OPERATOR_READ,
    ValuePolicy,
    ValueRead,
    kryo_class_changed,
)
from udfs.restore.state_warnings import RestoreWarning
from udfs.savepoint.serializer_snapshots import SnapshotNode, module_of
from udfs.savepoint.state_meta import OperatorStateTypes, StateMetaInfo
from udfs.savepoint.state_rows import node_paths, state_kind, user_classes

__all__ = ["decide_states", "OperatorRestore"]

# The backends' exception texts, identical in the 1.12, 1.20 and 2.x sources (HeapRestoreOperation,
# FullSnapshotRestoreOperation, RocksDBKeyedStateBackend, HeapKeyedStateBackend,
# DefaultOperatorStateBackend); {new} / {old} are serializers' toString()
KEY_MESSAGE = "The new key serializer ({new}) must be compatible with the previous key serializer ({old})."
STATE_MESSAGE = "The new state serializer ({new}) must not be incompatible with the old state serializer ({old})."
HEAP_STATE_MESSAGE = (
    "For heap backends, the new state serializer ({new}) must not be incompatible with the old state serializer "
    "({old})."
)
OPERATOR_STATE_MESSAGE = "The new state typeSerializer for operator state must not be incompatible."
BROADCAST_STATE_MESSAGE = "The new value typeSerializer for broadcast state must not be incompatible."
_TIMERS = ("TIMERS", "PRIORITY_QUEUE")


class _Collector:
    """Problems of one check. A state that already fails for sure while its values are read back
    (no aspect uncertain) is not reported again at registration: the task never gets there."""

    def __init__(self) -> None:
        self.items: list[StateProblem] = []
        self.read_failed: set[tuple[str, str | None]] = set()
        self.user_code: list[str] = []
        self.warnings: list[RestoreWarning] = []
        self.unchanged: list[str] = []
        self.requests: list[ValueRequest] = []  # streams whose bytes the decision needs (state_value_reads)
        self.read_through: set[tuple[str, str]] = set()  # (operator, state): its saved values were read
        self.partial_reads: dict[str, tuple[StateProblem, str]] = {}  # operator -> its read failure, the race
        self.register_fails: set[str] = set()  # operators a registration fails in (kept or not)

    def add(self, p: StateProblem, order: WalkOrder) -> None:
        p.order = order
        if order.phase == Phase.REGISTER and p.verdict == Verdict.FAILS:
            self.register_fails.add(p.operator_id)
        if order.phase == Phase.REGISTER and (p.operator_id, p.state_name) in self.read_failed:
            return
        if p.verdict == Verdict.FAILS and order.phase in (Phase.VALUES, Phase.OP_VALUES) and not p.uncertain:
            self.read_failed.add((p.operator_id, p.state_name))
        self.items.append(p)


def decide_states(
    saved: Mapping[str, OperatorStateTypes],
    matched: Mapping[str, NewOperator],
    ctx: StateContext,
    new_classes: Mapping[str, ClassFacts] | None = None,
    old_classes: Mapping[str, ClassFacts] | None = None,
    saved_order: Sequence[str] | None = None,
    values: ValueSource | None = None,
) -> StateDecision:
    """The state half of one check. ``saved``: decoded operator states by operator ID (file
    order); ``matched``: saved operator ID -> the new operator it restores into (unmatched
    operators' state is the topology half's business); ``new_classes`` / ``old_classes``:
    facts of the new / old jar's classes by name (absent: taken as unchanged); ``values``: the
    bytes of the saved streams, for the states only they decide (:mod:`udfs.restore.state_value_reads`;
    None: not read, and the decision's ``value_requests`` name the streams it would read)."""
    classes = dict(new_classes or {})
    olds = dict(old_classes or {})
    col = _Collector()
    for file_index, op_id in enumerate(list(saved_order or saved)):
        op = saved.get(op_id)
        new = matched.get(op_id)
        if op is None or new is None:
            continue
        position = OperatorPosition(new.vertex_order, new.jobvertex_id or "", -new.chain_index, file_index)
        OperatorRestore(op, new, ctx, classes, olds, col, position, values).run()
    for op_id, (problem, race) in col.partial_reads.items():
        if op_id in col.register_fails:
            problem.uncertain.setdefault("reported", race)
    decision = reported_decision(col.items)
    decision.value_requests = list(dict.fromkeys(col.requests))
    decision.depends_on_user_code = col.user_code
    decision.warnings = col.warnings
    decision.taken_as_unchanged = list(dict.fromkeys(col.unchanged))
    return decision


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


@dataclass
class OperatorRestore:
    """The restore of one saved operator in the new job, as the phases Flink runs (module docstring)."""

    op: OperatorStateTypes
    new: NewOperator
    ctx: StateContext
    classes: dict[str, ClassFacts]
    olds: dict[str, ClassFacts]
    col: _Collector
    position: OperatorPosition
    values: ValueSource | None = None

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

    def run(self) -> None:
        self.unreadable()
        self.keyed_proxy_read()
        self.key()
        self.kryo_entries_gone()
        self.heap_values()
        self.operator_backend()
        self.registration()

    # -- recording ---------------------------------------------------------------------------

    def add(self, phase: Phase, idx: int, **kw: Any) -> None:
        kw.setdefault("operator_id", self.op.operator_id)
        self.col.add(StateProblem(**kw), WalkOrder(*self.position, phase, idx))

    def fails(
        self, phase: Phase, idx: int, failure: Failure, error: ErrorClass, message: str | None, **kw: Any
    ) -> None:
        kw.setdefault("failure_stage", Stage.TASK_RESTORE)
        self.add(phase, idx, verdict=Verdict.FAILS, failure=failure, error_class=error, message=message, **kw)

    def undecidable(self, phase: Phase, idx: int, failure: Failure, why: str, **kw: Any) -> None:
        kw.update(certain=False, undecidable_reason=why)
        self.add(phase, idx, verdict=Verdict.NOT_DECIDABLE, failure=failure, **kw)

    def kryo5_misread(
        self, phase: Phase, idx: int, error: ErrorClass, message: str | None, field_path: str | None,
        basis: list[str], uncertain: dict[str, str], **where: Any,
    ) -> None:  # fmt: skip
        """Flink 2.x's Kryo 5 reading the Kryo 2 bytes a 1.x job wrote for a collection fails
        (KRYO_COLLECTION_ON_2X); what it throws depends on the bytes that follow."""
        self.fails(
            phase, idx, Failure.KRYO_COLLECTION_ON_2X, error, message, cause=Cause.KRYO_COLLECTION_ON_2X,
            field_path=field_path, basis=basis, uncertain=uncertain, assumes=[kryo.KRYO5_MISREADS], **where,
        )  # fmt: skip

    def keyed_states(self) -> Iterable[tuple[int, str, StateMetaInfo, str]]:
        for idx, (name, info) in enumerate(self.keyed.items()):
            yield idx, name, info, state_kind(info, "keyed")

    def operator_states(self) -> Iterable[tuple[int, str, StateMetaInfo, str, str]]:
        for idx, (name, info) in enumerate(self.opstates.items()):
            kind = state_kind(info, "operator")
            yield idx, name, info, kind, "broadcast" if kind == "BROADCAST" else "operator"

    # -- what reading a proxy meets ------------------------------------------------------------

    def unreadable(self) -> None:
        """An unknown (custom) snapshot class stops the reader: nothing after it can be checked."""
        stopped = custom.reader_stopped(self.op)
        if stopped:
            basis = [Basis.SAVEPOINT]
            self.undecidable(Phase.READ, -1, Failure.STATE_UNREADABLE, stopped, state_name=None, basis=basis)

    def class_gone(self, phase: Phase, idx: int, name: str | None, root: str, node: SnapshotNode, **kw: Any) -> bool:
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
                    phase, idx, Failure.SNAPSHOT_CLASS_GONE, ErrorClass.CLASS_NOT_FOUND, n.class_name,
                    cause=Cause.MODULE_NOT_ON_CLASS_PATH, state_name=name, field_path=path,
                    basis=[Basis.SAVEPOINT, Basis.SERIALIZER_MODULES, Basis.FLINK_SOURCE, Basis.OBSERVED],
                    assumes=[f"the new job's class path is the exported one: {module} not on it"], **kw,
                )  # fmt: skip
                return True
        return False

    def enum_removed(self, phase: Phase, idx: int, name: str | None, root: str, node: SnapshotNode, **kw: Any) -> None:
        gone = enums.removed_constant(node, self.classes)
        if gone is not None:
            self.fails(
                phase, idx, Failure.ENUM_CONSTANT_REMOVED, ErrorClass.ILLEGAL_STATE, enums.removed_message(gone),
                cause=Cause.ENUM_CONSTANT_REMOVED, state_name=name, field_path=_path_of(node, gone, root),
                basis=[Basis.SAVEPOINT, Basis.CLASS_FACTS, Basis.FLINK_SOURCE], **kw,
            )  # fmt: skip

    def keyed_proxy_read(self) -> None:
        """KeyedBackendSerializationProxy.read with the new job's classes: the key serializer
        snapshot, then each state's, in file order."""
        proxy = self.op.keyed_proxy
        if proxy is None:
            return
        roots: list[tuple[str | None, str, SnapshotNode]] = []
        if proxy.key_serializer is not None:
            roots.append((None, "key", proxy.key_serializer))
        for name, info in self.keyed.items():
            roots += [(name, _role(r), n) for r, n in info.serializers.items()]
        for idx, (name, root, node) in enumerate(roots):
            if self.class_gone(Phase.READ, idx, name, root, node, backend="keyed"):
                return
            self.enum_removed(Phase.READ, idx, name, root, node, backend="keyed")

    # -- the keyed backend ---------------------------------------------------------------------

    def key(self) -> None:
        """The key serializer must be compatible as is or with a reconfigured serializer (every
        backend's restore operation; StateMigrationException otherwise)."""
        proxy = self.op.keyed_proxy
        saved_key = proxy.key_serializer if proxy is not None else None
        if saved_key is None:
            return
        basis = [Basis.SAVEPOINT, Basis.KEY_TYPE_IN_SPEC]
        new_key = self.new.key_serializer
        causes: list[tuple[str, str]] = []
        if new_key is None:
            pred = fam.predict_new(saved_key, self.ctx, self.classes, "key")
            new_key, causes = pred.node, pred.causes
            basis = [Basis.SAVEPOINT, Basis.CLASS_FACTS]
            if not causes:
                self.col.unchanged.append(f"key of {self.op.operator_id}")
                return  # no key type in the spec and nothing known to have changed
        c = fam.compatibility(new_key, saved_key, "key")
        if c.result in (CompatResult.AS_IS, CompatResult.RECONFIGURED):
            return
        if c.result == CompatResult.UNKNOWN or new_key is None:
            where = {"state_name": None, "backend": "keyed", "field_path": c.path, "basis": basis}
            self.undecidable(Phase.KEY, 0, Failure.NEW_TYPE_UNKNOWN, c.why, **where)
            return
        message = KEY_MESSAGE.format(new=fam.serializer_display(new_key), old=fam.serializer_display(saved_key))
        cause = causes[0][1] if causes else (Cause.KEY_TYPE_CHANGED if c.path == "key" else Cause.KEY_TYPE_EVOLVED)
        self.fails(
            Phase.KEY, 0, Failure.KEY_SERIALIZER_INCOMPATIBLE, ErrorClass.STATE_MIGRATION, message, cause=cause,
            state_name=None, backend="keyed", field_path=c.path, basis=basis + [Basis.FLINK_SOURCE],
            assumes=[f"keys must be compatible as is; here {c.result.lower()}: {c.why}"],
        )  # fmt: skip

    def entry_gone(self, phase: Phase, idx: int, ser: SnapshotNode, root: str, basis: list[str], **where: Any) -> bool:
        """1.x -> 2.x: a saved Kryo snapshot holding a serializer instance (flink-avro registers one
        for GenericData$Array) cannot be turned back into a serializer on 2.x, whatever the backend:
        KryoSerializerSnapshot.restoreSerializer unwraps its entries ("Missing value for the key")
        while the backend is built, before any value is read or state registered."""
        gone = kryo.entry_gone(ser, root) if self.ctx.crosses_to_2x else None
        if gone is None:
            return False
        self.fails(
            phase, idx, Failure.SNAPSHOT_CLASS_GONE, ErrorClass.ILLEGAL_STATE,
            kryo.MISSING_VALUE_MESSAGE.format(key=gone[1]), cause=Cause.KRYO_SERIALIZER_INSTANCE_1X,
            field_path=gone[0], basis=basis, assumes=[kryo.INSTANCE_1X], **where,
        )  # fmt: skip
        return True

    def kryo_entries_gone(self) -> None:
        """The keyed backend is built from every keyed state's snapshot (operator state: when the
        operator backend reads its values, :data:`OPERATOR`)."""
        basis = [Basis.SAVEPOINT, Basis.FLINK_SOURCE, Basis.OBSERVED]
        for idx, name, info, kind in self.keyed_states():
            where = {"state_name": name, "backend": "keyed", "state_kind": kind}
            for role, ser in info.serializers.items():
                if self.entry_gone(Phase.KEY, 1 + idx, ser, _role(role), basis, **where):
                    return

    # -- reading the saved values back ---------------------------------------------------------

    def read_back(self, policy: ValuePolicy, idx: int, ser: SnapshotNode, root: str, where: dict[str, Any]) -> bool:
        """The backend reads one state's saved values: the first failure its policy meets decides."""
        read = ValueRead(policy, idx, ser, root, where)
        return any(check(self, read) for check in policy.checks)

    def heap_values(self) -> None:
        """Heap restores (HeapRestoreOperation for native, HeapSavepointRestoreOperation for
        canonical savepoints) read every saved value back with the saved serializers, before any
        state is requested; RocksDB reads none."""
        if self.backend == "rocksdb":
            return
        policy = HEAP_READ if heap_reads(self, -1) else HEAP
        for idx, name, info, kind in self.keyed_states():
            ser = info.serializers.get("VALUE_SERIALIZER")
            if ser is not None and kind not in _TIMERS:
                self.read_back(policy, idx, ser, "value", {"state_name": name, "backend": "keyed", "state_kind": kind})

    def operator_backend(self) -> None:
        """OperatorBackendSerializationProxy.read (module classes, removed enum constants), then
        OperatorStateRestoreOperation reads every operator and broadcast state value eagerly."""
        for idx, name, info, kind, bk in self.operator_states():
            for role, ser in info.serializers.items():
                if self.class_gone(Phase.OP_READ, idx, name, _role(role), ser, backend=bk, state_kind=kind):
                    return
                self.enum_removed(Phase.OP_READ, idx, name, _role(role), ser, backend=bk, state_kind=kind)
            where = {"state_name": name, "backend": bk, "state_kind": kind}
            if any(self.read_back(ENTRY_GONE, idx, ser, _role(role), where) for role, ser in info.serializers.items()):
                continue
            policy = OPERATOR_READ if operator_reads(self, idx, name, where) else OPERATOR
            for role, ser in info.serializers.items():
                if self.read_back(policy, idx, ser, _role(role), where):
                    break

    # -- user code requests the states ---------------------------------------------------------

    def registration(self) -> None:
        """``getState`` / ``getListState`` ... in ``initializeState()`` / ``open()``: keyed states
        (namespace, kind, then value serializer: heap accepts migration, RocksDB migrates values),
        then operator and broadcast states (element serializer). Against the declarations where the
        spec has them, else predicted from the saved serializers."""
        if self.new.declared is not None:
            DeclaredRegistration(self, self.new.declared).run()
            return
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
        pred = fam.predict_new(ser, self.ctx, self.classes, "value")
        facts_used = any(c != Cause.KRYO_COLLECTION_ON_2X for _, c in pred.causes)
        basis = [Basis.SAVEPOINT] + ([Basis.CLASS_FACTS] if facts_used else [])
        if bk == "keyed" and kryo_class_changed(self, Phase.REGISTER, idx, ser, "value", basis, where):
            return
        c = fam.compatibility(pred.node, ser, "value")
        cause = _cause_at(pred.causes, c.path)
        common = {"basis": basis, "assumes": [ASSUME_DECLARED], "uncertain": {"failure_stage": ASSUME_OPEN}}
        map_key = bk == "keyed" and kind == "MAP" and self.backend != "hashmap"
        if c.result == CompatResult.INCOMPATIBLE:
            self.serializer_incompatible(idx, bk, pred.node, ser, c.path, cause, basis, where)
        elif (
            c.result == CompatResult.AFTER_MIGRATION
            and map_key
            and composite.map_key_migrates(ser, pred.node, fam.compatibility)
        ):
            self.fails(
                Phase.REGISTER, idx, Failure.MAP_KEY_SCHEMA_CHANGED, ErrorClass.STATE_MIGRATION,
                composite.MAP_KEY_MESSAGE, cause=cause, field_path="value.key", **common, **where,
            )  # fmt: skip
        elif c.result == CompatResult.UNKNOWN:
            why = c.why or "; ".join(r for _, r in pred.unknown)
            kw = {"cause": cause, "field_path": c.path, "basis": basis, **where}
            self.undecidable(Phase.REGISTER, idx, Failure.NEW_TYPE_UNKNOWN, why, **kw)
        else:
            self.kryo_across_majors(idx, info, where)

    def serializer_incompatible(
        self, idx: int, bk: str, new: SnapshotNode | None, ser: SnapshotNode, path: str, cause: str | None,
        basis: list[str], where: dict[str, Any],
    ) -> None:  # fmt: skip
        uncertain: dict[str, str] = {"failure_stage": ASSUME_OPEN}
        message = self.incompatible_message(bk, new, ser, uncertain)
        collection = cause == Cause.KRYO_COLLECTION_ON_2X
        self.fails(
            Phase.REGISTER, idx, Failure.KRYO_COLLECTION_ON_2X if collection else Failure.STATE_SERIALIZER_INCOMPATIBLE,
            ErrorClass.STATE_MIGRATION, message, cause=cause or Cause.DECLARED_TYPE_CHANGED, field_path=path,
            basis=basis + [Basis.FLINK_SOURCE] + ([Basis.OBSERVED] if collection else []),
            assumes=[ASSUME_DECLARED], uncertain=uncertain, **where,
        )  # fmt: skip

    def incompatible_message(
        self, bk: str, new: SnapshotNode | None, old: SnapshotNode, uncertain: dict[str, str]
    ) -> str:
        if bk == "operator":
            return OPERATOR_STATE_MESSAGE
        if bk == "broadcast":
            return BROADCAST_STATE_MESSAGE
        texts = {"new": fam.serializer_display(new) if new is not None else "?", "old": fam.serializer_display(old)}
        if self.backend == "hashmap":
            return HEAP_STATE_MESSAGE.format(**texts)
        if self.backend is None:
            uncertain["message"] = "restoring backend not known; heap backends say 'For heap backends, the new ...'"
        return STATE_MESSAGE.format(**texts)

    def kryo_across_majors(self, idx: int, info: StateMetaInfo, where: dict[str, Any]) -> None:
        """1.x -> 2.x: a Kryo-held class passes the snapshot check (same type class and
        registrations) but its values are Kryo 2 bytes read by Kryo 5."""
        if not self.ctx.crosses_to_2x:
            return
        for role, ser in info.serializers.items():
            found = kryo.written_by_kryo2(ser, _role(role), self.classes)
            keyed_rocksdb = self.backend == "rocksdb" and where.get("backend") == "keyed"
            if found is not None and keyed_rocksdb and rocksdb_reads(self, idx, where["state_name"], where):
                return  # the saved values decided (state_value_reads)
            if found is not None:
                kw = {"cause": Cause.KRYO2_VALUES_ON_KRYO5, "field_path": found[0], **where}
                self.undecidable(Phase.REGISTER, idx, Failure.KRYO2_VALUES_ON_KRYO5, found[1],
                                 basis=[Basis.SAVEPOINT, Basis.OBSERVED], **kw)  # fmt: skip
                return


def _role(role: str) -> str:
    return role.removesuffix("_SERIALIZER").lower()


def _path_of(root: SnapshotNode, target: SnapshotNode, name: str) -> str:
    return next((p for p, n in node_paths(root, name) if n is target), name)


def _cause_at(causes: Sequence[tuple[str, str]], path: str) -> str | None:
    """The change that explains a result at ``path``: the nearest change at or above it, else the
    first one below it."""
    above = [(p, c) for p, c in causes if path == p or path.startswith(p + ".")]
    if above:
        return max(above, key=lambda pc: len(pc[0]))[1]
    below = [(p, c) for p, c in causes if p.startswith(path + ".")]
    return min(below, key=lambda pc: len(pc[0]))[1] if below else None
