"""Registration against what the new job declares: each saved state meets its declaration.

When the new job's spec says what each operator declares (``declared_states``,
:mod:`udfs.restore.declared`), the registration phase of a task's restore is no longer predicted
from the saved types: every saved state of a matched operator is looked up by name in its
backend, and Flink's checks run against the declared serializer, in Flink's order
(``HeapKeyedStateBackend.tryRegisterStateTable`` / ``RocksDBKeyedStateBackend
.updateRestoredStateMetaInfo`` for keyed state, ``DefaultOperatorStateBackend.getListState`` /
``getBroadcastState`` for operator state):

1. the kind (``Incompatible key/value state types. Was [VALUE], registered with [LIST].``) or the
   assignment mode of operator state (``Incompatible state assignment modes. ...``);
2. the serializer (a broadcast state's key first), with Flink's TTL wrapper around a TTL state's
   value, and on the lines that allow it a TTL switched on or off as compatible after migration
   (``StateContext.ttl_switch``);
3. what compatible-after-migration costs on each backend: RocksDB migrates every value at
   registration (a MapState's key cannot migrate; GenericRecord values with added fields fail),
   Flink 2.1's heap backend refuses a TTL switch.

A Kryo class whose fields changed between the jars is decided from both jars' class facts where
its values are read (:meth:`DeclaredRegistration.kryo_values`). A saved state no declaration
names is a silent loss (:mod:`udfs.restore.state_warnings`), as are POJO and Avro fields the new
type drops; a state an unresolved entry may declare is not decidable, with the exporter's reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from udfs.restore import families as fam
from udfs.restore.declared import ASSIGNMENT_MODES, OPERATOR_KINDS, Declarations, DeclaredState, without_ttl
from udfs.restore.families import avro, composite, kryo
from udfs.restore.families.base import Compat, CompatResult
from udfs.restore.state_kinds import Basis, Cause, ErrorClass, Failure, Phase, Stage
from udfs.restore.state_value_reads import rocksdb_reads
from udfs.restore.state_warnings import Loss, RestoreWarning
from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.state_meta import StateMetaInfo
from udfs.savepoint.state_rows import node_paths

if TYPE_CHECKING:
    from udfs.restore.state_decision import OperatorRestore

__all__ = ["DeclaredRegistration", "KIND_MESSAGE", "MODE_MESSAGE", "TTL_MIGRATION_MESSAGE"]

# RegisteredKeyValueStateBackendMetaInfo.checkStateMetaInfo and
# DefaultOperatorStateBackend.checkStateNameAndMode (1.12 - 2.3, the same words)
KIND_MESSAGE = "Incompatible key/value state types. Was [{old}], registered with [{new}]."
MODE_MESSAGE = "Incompatible state assignment modes. Was [{old}], registered with [{new}]."
BROADCAST_KEY_MESSAGE = "The new key typeSerializer for broadcast state must not be incompatible."
# HeapKeyedStateBackend.tryRegisterStateTable, Flink 2.1 only (2.2 migrates the values)
TTL_MIGRATION_MESSAGE = (
    "For heap backends, the new state serializer ({new}) must not need ttl state migration with the old state "
    "serializer ({old})."
)
_DECLARED = [Basis.SAVEPOINT, Basis.DECLARED_STATES]
_TIMERS = ("TIMERS", "PRIORITY_QUEUE")
_LAZY_RACE = "registered while processing records: task_running, unless the task fails before it reported RUNNING"


def _helper_stage(entry: DeclaredState) -> str:
    return (
        f"state '{entry.name}' is registered in {entry.where}, a method of the job Flink does not call itself: when "
        "it runs is not in the spec (from open() or initializeState(): task_restore, taken here; while processing "
        "records: task_running)"
    )


@dataclass
class _Saved:
    """One saved state as a registration meets it."""

    idx: int
    name: str
    info: StateMetaInfo
    kind: str
    backend: str  # keyed / operator / broadcast

    @property
    def where(self) -> dict[str, Any]:
        return {"state_name": self.name, "backend": self.backend, "state_kind": self.kind}

    @property
    def value(self) -> SnapshotNode | None:
        return self.info.serializers.get("VALUE_SERIALIZER")


@dataclass
class DeclaredRegistration:
    """The registration phase of one operator's restore, against its declarations."""

    restore: OperatorRestore
    declared: Declarations

    def run(self) -> None:
        saved = list(self._saved())
        for s in saved:
            self.register(s)
        self.warn_undeclared(saved)

    def _saved(self) -> Iterator[_Saved]:
        for idx, name, info, kind in self.restore.keyed_states():
            if kind not in _TIMERS:
                yield _Saved(idx, name, info, kind, "keyed")
        for idx, name, info, kind, bk in self.restore.operator_states():
            yield _Saved(1000 + idx, name, info, kind, bk)

    def match(self, s: _Saved) -> Any:
        return self.declared.match(s.name, s.backend)

    # -- one saved state ---------------------------------------------------------------------

    def register(self, s: _Saved) -> None:
        m = self.match(s)
        if m.entry is not None:
            self.compare(s, m.entry)
        elif m.unknown:
            self.maybe_declared(s, m.unknown)

    def maybe_declared(self, s: _Saved, unknown: tuple[DeclaredState, ...]) -> None:
        """Unresolved entries that may register the state: a known name and call with another
        kind fails for certain; else the answer waits for the declaration."""
        r = self.restore
        named = [e for e in unknown if e.name == s.name and e.kind and e.basis == "bytecode"]
        for e in named:
            if self.kind_fails(s, e):
                return
        r.col.user_code.append(f"{r.op.operator_id}/{s.name}")
        why = "; ".join(dict.fromkeys(f"{e.where}: {e.why_unknown}" for e in unknown))
        r.undecidable(
            Phase.REGISTER, s.idx, Failure.DECLARATION_UNRESOLVED,
            f"the new job's declaration of state '{s.name}' is not known before it runs ({why})",
            cause=Cause.DECLARATION_UNRESOLVED, basis=list(_DECLARED), **s.where,
        )  # fmt: skip

    def stage_of(self, entry: DeclaredState) -> tuple[Stage, dict[str, str]]:
        """Where a failing registration shows, and what of that is open."""
        stage = entry.stage()
        if stage is None:
            return Stage.TASK_RESTORE, {"failure_stage": _helper_stage(entry)}
        if stage == Stage.TASK_RUNNING:
            return stage, {"failure_stage": _LAZY_RACE}
        return stage, {}

    def kind_fails(self, s: _Saved, entry: DeclaredState) -> bool:
        """Flink checks the kind (keyed) or the assignment mode (operator state) before the
        serializer: another one fails, whatever the types."""
        if s.backend == "keyed":
            if entry.kind == s.kind:
                return False
            message = KIND_MESSAGE.format(old=s.kind, new=entry.kind)
        else:
            new_kind = OPERATOR_KINDS.get(entry.kind or "", entry.kind)
            if new_kind == s.kind:
                return False
            message = MODE_MESSAGE.format(old=ASSIGNMENT_MODES.get(s.kind, s.kind),
                                          new=ASSIGNMENT_MODES.get(new_kind or "", new_kind))  # fmt: skip
        stage, uncertain = self.stage_of(entry)
        self.restore.fails(
            Phase.REGISTER, s.idx, Failure.STATE_KIND_CHANGED, ErrorClass.ILLEGAL_STATE, message,
            cause=Cause.STATE_KIND_CHANGED, failure_stage=stage, uncertain=uncertain,
            basis=[*_DECLARED, Basis.FLINK_SOURCE], **s.where,
        )  # fmt: skip
        return True

    def compare(self, s: _Saved, entry: DeclaredState) -> None:
        """Kind, then serializer, as the backend registers the declared state."""
        if self.kind_fails(s, entry) or s.value is None:
            return
        if s.backend == "broadcast" and self.broadcast_key_fails(s, entry):
            return
        new = entry.state_serializer()
        c, ttl_switched = self.compatibility(new, s.value)
        stage, uncertain = self.stage_of(entry)
        cause = self.cause_of(new, s.value, c, ttl_switched)
        if c.result == CompatResult.INCOMPATIBLE:
            self.incompatible(s, new, c, cause, stage, uncertain)
        elif c.result == CompatResult.UNKNOWN:
            self.restore.undecidable(Phase.REGISTER, s.idx, Failure.NEW_TYPE_UNKNOWN, c.why, cause=cause,
                                     field_path=c.path, basis=list(_DECLARED), **s.where)  # fmt: skip
        elif c.result == CompatResult.AFTER_MIGRATION and self.migration_fails(
            s, new, c, ttl_switched, stage, uncertain
        ):
            return
        else:
            self.kryo_values(s, stage)
            self.restore.kryo_across_majors(s.idx, s.info, s.where)
            self.warn_fields(s, new)

    def compatibility(self, new: SnapshotNode | None, old: SnapshotNode) -> tuple[Compat, bool]:
        """``new.resolveSchemaCompatibility(old)`` with Flink's TTL handling on the restoring line:
        up to 2.0 a TTL wrapper on one side only is another serializer (incompatible); from 2.1
        ``TtlAwareSerializer`` compares what it wraps and calls the switch a migration."""
        if new is None:
            return Compat(CompatResult.UNKNOWN, "value", "the declared serializer is not known"), False
        plain_new, ttl_new = without_ttl(new)
        plain_old, ttl_old = without_ttl(old)
        if ttl_new == ttl_old or self.restore.ctx.ttl_switch == "incompatible":
            return fam.compatibility(new, old, "value"), ttl_new != ttl_old
        inner = fam.compatibility(plain_new, plain_old, "value")
        if inner.result in (CompatResult.INCOMPATIBLE, CompatResult.UNKNOWN):
            return inner, True
        return Compat(CompatResult.AFTER_MIGRATION, "value", "TTL switched " + ("on" if ttl_new else "off")), True

    def cause_of(self, new: SnapshotNode | None, old: SnapshotNode, c: Compat, ttl_switched: bool) -> str:
        """What changed where the result was decided: a TTL switched on or off, unless what the
        TTL wrapper holds is incompatible too (then that part's change)."""
        if ttl_switched:
            new, _ = without_ttl(new) if new is not None else (None, False)
            old, _ = without_ttl(old)
            c = fam.compatibility(new, old, "value")
            if c.result != CompatResult.INCOMPATIBLE:
                return Cause.TTL_SWITCHED
        olds = dict(node_paths(old, "value"))
        news = dict(node_paths(new, "value")) if new is not None else {}
        o, n = olds.get(c.path), news.get(c.path)
        if o is not None and o.is_kryo_collection and self.restore.ctx.crosses_to_2x:
            return Cause.KRYO_COLLECTION_ON_2X
        if o is None or n is None:
            return Cause.DECLARED_TYPE_CHANGED
        if o.kind == "AVRO" and n.kind == "AVRO":
            return Cause.AVRO_SCHEMA_CHANGED
        pairs = {("POJO", "KRYO"): Cause.POJO_TO_KRYO, ("KRYO", "POJO"): Cause.KRYO_TO_POJO,
                 ("KRYO", "ENUM"): Cause.KRYO_TO_ENUM, ("ENUM", "POJO"): Cause.ENUM_TO_POJO}  # fmt: skip
        if o.type_class and o.type_class == n.type_class and (o.kind, n.kind) in pairs:
            return pairs[(o.kind, n.kind)]
        if ".fields." in c.path:
            return Cause.POJO_FIELD_RETYPED
        return Cause.DECLARED_TYPE_CHANGED

    def incompatible(self, s: _Saved, new: SnapshotNode | None, c: Compat, cause: str, stage: Stage,
                     uncertain: dict[str, str]) -> None:  # fmt: skip
        r = self.restore
        uncertain = dict(uncertain)
        message = r.incompatible_message(s.backend, new, s.value, uncertain)  # type: ignore[arg-type]
        collection = cause == Cause.KRYO_COLLECTION_ON_2X
        failure = Failure.KRYO_COLLECTION_ON_2X if collection else Failure.STATE_SERIALIZER_INCOMPATIBLE
        r.fails(
            Phase.REGISTER, s.idx, failure, ErrorClass.STATE_MIGRATION, message, cause=cause, field_path=c.path,
            failure_stage=stage, uncertain=uncertain,
            basis=[*_DECLARED, Basis.FLINK_SOURCE] + ([Basis.OBSERVED] if collection else []),
            **s.where,
        )  # fmt: skip

    def broadcast_key_fails(self, s: _Saved, entry: DeclaredState) -> bool:
        old_key = s.info.serializers.get("KEY_SERIALIZER")
        if old_key is None or entry.key_serializer is None:
            return False
        if fam.compatibility(entry.key_serializer, old_key, "key").result != CompatResult.INCOMPATIBLE:
            return False
        stage, uncertain = self.stage_of(entry)
        self.restore.fails(
            Phase.REGISTER, s.idx, Failure.STATE_SERIALIZER_INCOMPATIBLE, ErrorClass.STATE_MIGRATION,
            BROADCAST_KEY_MESSAGE, cause=Cause.DECLARED_TYPE_CHANGED, field_path="key", failure_stage=stage,
            uncertain=uncertain, basis=[*_DECLARED, Basis.FLINK_SOURCE], **s.where,
        )  # fmt: skip
        return True

    # -- compatible after migration ----------------------------------------------------------

    def migration_fails(self, s: _Saved, new: SnapshotNode | None, c: Compat, ttl_switched: bool, stage: Stage,
                        uncertain: dict[str, str]) -> bool:  # fmt: skip
        """What a migration costs where the backend runs one (keyed state only: operator state is
        read into objects at restore)."""
        r = self.restore
        if s.backend != "keyed" or new is None:
            return False
        if ttl_switched and r.ctx.ttl_switch == "heap_refuses" and r.backend != "rocksdb":
            message = TTL_MIGRATION_MESSAGE.format(new=fam.serializer_display(new), old=fam.serializer_display(s.value))
            open_ = dict(uncertain)
            if r.backend is None:
                open_["failure"] = "restoring backend not known: RocksDB migrates a TTL switch on 2.1, the heap refuses"
            r.fails(Phase.REGISTER, s.idx, Failure.STATE_SERIALIZER_INCOMPATIBLE, ErrorClass.STATE_MIGRATION, message,
                    cause=Cause.TTL_SWITCHED, field_path=c.path, failure_stage=stage, uncertain=open_,
                    basis=[*_DECLARED, Basis.FLINK_SOURCE], **s.where)  # fmt: skip
            return True
        if r.backend != "rocksdb":
            return False
        if s.kind == "MAP" and composite.map_key_migrates(s.value, new, fam.compatibility):
            r.fails(Phase.REGISTER, s.idx, Failure.MAP_KEY_SCHEMA_CHANGED, ErrorClass.STATE_MIGRATION,
                    composite.MAP_KEY_MESSAGE, cause=Cause.DECLARED_TYPE_CHANGED, field_path="value.key",
                    failure_stage=stage, uncertain=dict(uncertain), basis=[*_DECLARED, Basis.FLINK_SOURCE],
                    **s.where)  # fmt: skip
            return True
        return self.avro_migration_fails(s, new, stage, uncertain)

    def avro_migration_fails(self, s: _Saved, new: SnapshotNode, stage: Stage, uncertain: dict[str, str]) -> bool:
        olds = dict(node_paths(s.value, "value"))  # type: ignore[arg-type]
        for path, n in node_paths(new, "value"):
            o = olds.get(path)
            if o is None or n.kind != "AVRO" or o.kind != "AVRO":
                continue
            found = avro.rocksdb_migration_failure(n, o)
            if found is None:
                continue
            message, certain = found
            open_ = dict(uncertain)
            if not certain:
                open_.update(
                    dict.fromkeys(
                        ("verdict", "message"),
                        "RocksDB migrates GenericRecord values by field "
                        "position; with the fields reordered the outcome depends on their types",
                    )
                )
            self.restore.fails(
                Phase.REGISTER, s.idx, Failure.STATE_READ_FAILED, ErrorClass.INDEX_OUT_OF_BOUNDS, message,
                cause=Cause.AVRO_SCHEMA_CHANGED, field_path=path, failure_stage=stage, uncertain=open_,
                basis=[*_DECLARED, Basis.FLINK_SOURCE, Basis.OBSERVED], **s.where,
            )  # fmt: skip
            return True
        return False

    # -- values read later, and what does not come across ------------------------------------

    def kryo_values(self, s: _Saved, stage: Stage) -> None:
        """RocksDB reads a keyed value when user code first reads it: a Kryo class that gained
        trailing fields reads past the value's bytes (Kryo's EOF); one that lost trailing fields
        reads what is kept (the rest is a silent loss, :meth:`warn_fields`). Heap and operator
        state were read at restore (the read-back phase)."""
        r = self.restore
        if s.backend != "keyed" or r.backend != "rocksdb":
            return
        change = kryo.kryo_change(s.value, r.classes, r.olds, "value")  # type: ignore[arg-type]
        if change is None or (change.tail_only and not change.added and s.kind != "LIST"):
            return
        open_: dict[str, str] = {"failure_stage": "RocksDB reads a value when user code first reads the state: "
                                 "task_running while processing records"}  # fmt: skip
        certain = change.tail_only and s.kind != "LIST"
        if not certain and rocksdb_reads(r, s.idx, s.name, s.where):
            return  # the saved values decided (state_value_reads)
        if not certain:
            open_.update(dict.fromkeys(("verdict", "message"), kryo.KRYO_VALUES_MISREAD.format(change=change.text)))
        major = r.ctx.target_major or 1
        r.fails(
            Phase.REGISTER, s.idx, Failure.STATE_READ_FAILED, ErrorClass.EOF, kryo.EOF_MESSAGE[min(major, 2)],
            cause=Cause.KRYO_CLASS_CHANGED, field_path=change.path, failure_stage=Stage.TASK_RUNNING,
            uncertain=open_, basis=[Basis.SAVEPOINT, Basis.CLASS_FACTS, Basis.OBSERVED], **s.where,
        )  # fmt: skip

    def warn_fields(self, s: _Saved, new: SnapshotNode | None) -> None:
        """POJO, Avro and Kryo fields the saved values have and the new type drops."""
        if new is None or s.value is None:
            return
        read = (self.restore.op.operator_id, s.name) in self.restore.col.read_through
        for w in field_losses(s.value, new, self.restore, s.backend, s.kind, read):
            w.state_name, w.backend, w.state_kind = s.name, s.backend, s.kind
            self.restore.col.warnings.append(w)

    def warn_undeclared(self, saved: list[_Saved]) -> None:
        """Saved states no declaration names (and no unresolved one may): silent losses; one whose
        kind and serializer a new, unsaved state declares looks renamed."""
        r = self.restore
        unsaved = {s.backend: [] for s in saved}
        for backend in ("keyed", "operator", "broadcast"):
            names = {s.name for s in saved if s.backend == backend}
            unsaved[backend] = [e for e in self.declared.named(backend) if e.name not in names]
        for s in saved:
            m = self.match(s)
            if m.entry is not None or m.unknown:
                continue
            twin = next((e for e in unsaved[s.backend] if _same_state(e, s)), None)
            loss = Loss.STATE_RENAMED if twin is not None else Loss.STATE_NOT_DECLARED
            detail = (
                f"the new version does not declare state '{s.name}': its saved values are restored and kept in later "
                "savepoints, but never read"
                + (f"; state '{twin.name}' (same kind and type) starts empty" if twin else "")
            )
            r.col.warnings.append(RestoreWarning(
                r.op.operator_id, s.name, loss, detail, s.backend, s.kind, None, twin.name if twin else None,
                list(_DECLARED)))  # fmt: skip


def _same_state(entry: DeclaredState, s: _Saved) -> bool:
    """A declared state of the same kind whose serializer reads the saved one as is."""
    kind = entry.kind if s.backend == "keyed" else OPERATOR_KINDS.get(entry.kind or "", entry.kind)
    if kind != s.kind or s.value is None:
        return False
    new = entry.state_serializer()
    return new is not None and fam.compatibility(new, s.value, "value").result in (
        CompatResult.AS_IS, CompatResult.RECONFIGURED)  # fmt: skip


def field_losses(old: SnapshotNode, new: SnapshotNode, r: OperatorRestore, backend: str, kind: str,
                 read: bool = False) -> Iterator[RestoreWarning]:  # fmt: skip
    """The fields of the saved values the new type drops, walking both trees by path. ``read``:
    the saved values were read through (:mod:`udfs.restore.state_value_reads`): a Kryo class's
    removed fields are then lost in every value, wherever they were."""
    news = dict(node_paths(new, "value"))
    for path, o in node_paths(old, "value"):
        n = news.get(path)
        if n is None:
            continue
        if o.kind == "POJO" and n.kind == "POJO" and o.type_class == n.type_class:
            yield from _pojo_losses(r.op.operator_id, path, o, n)
        elif o.kind == "AVRO" and n.kind == "AVRO":
            for f in avro.dropped_fields(n, o):
                yield RestoreWarning(r.op.operator_id, "", Loss.AVRO_FIELD_REMOVED,
                                     f"field '{f}' of the saved Avro records is not in the new schema: dropped",
                                     field_path=f"{path}.{f}", basis=[*_DECLARED])  # fmt: skip
        elif o.is_kryo and (read or (backend == "keyed" and r.backend == "rocksdb" and kind != "LIST")):
            change = kryo.kryo_change(o, r.classes, r.olds, path)
            if change is not None and change.removed and (read or (change.tail_only and not change.added)):
                for f in change.removed:
                    yield RestoreWarning(r.op.operator_id, "", Loss.KRYO_FIELD_REMOVED,
                                         f"field '{f}' of {change.type_class} is gone from the class: Kryo leaves its "
                                         "saved bytes unread", field_path=f"{path}.{f}",
                                         basis=[Basis.SAVEPOINT, Basis.CLASS_FACTS, Basis.OBSERVED])  # fmt: skip


def _pojo_losses(op: str, path: str, old: SnapshotNode, new: SnapshotNode) -> Iterator[RestoreWarning]:
    kept = {f.name for f in new.fields}
    saved = {f.name for f in old.fields if f.snapshot is not None}
    added = [f for f in new.fields if f.name not in saved and f.snapshot is not None]
    for f in old.fields:
        if f.name in kept or f.snapshot is None:
            continue
        twin = next(
            (a for a in added if a.snapshot is not None and a.snapshot.class_name == f.snapshot.class_name), None
        )
        where = f"{path}.fields.{f.name}"
        if twin is not None:
            detail = (f"field '{f.name}' of {old.type_class} is gone and '{twin.name}' (same type) is new: the saved "
                      f"values of '{f.name}' are dropped, '{twin.name}' reads its default")  # fmt: skip
            yield RestoreWarning(op, "", Loss.POJO_FIELD_RENAMED, detail, field_path=where, renamed_to=twin.name,
                                 basis=[*_DECLARED])  # fmt: skip
        else:
            detail = f"field '{f.name}' of {old.type_class} is gone from the class: its saved values are dropped"
            yield RestoreWarning(op, "", Loss.POJO_FIELD_REMOVED, detail, field_path=where, basis=[*_DECLARED])
