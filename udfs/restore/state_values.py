"""Saved values read back while a task restores: what each backend's read meets, as one policy.

A heap keyed backend (``HeapRestoreOperation`` for native, ``HeapSavepointRestoreOperation`` for
canonical savepoints) and every operator state backend (``OperatorStateRestoreOperation``)
deserialize every saved value with the saved serializers before any state is requested; RocksDB
reads none at restore. The same failures can show in both, in an order and with a certainty that
differ: each backend is a :class:`ValuePolicy` naming its checks, and each check is a function of
the operator's restore (:class:`udfs.restore.state_decision.OperatorRestore`) and the state read
(:class:`ValueRead`) that records what it finds and says whether it decided this state's read.
What a failure is, and its message, is the serializer family's (:mod:`udfs.restore.families`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from udfs.restore import families as fam
from udfs.restore.families import kryo, pojo
from udfs.restore.state_kinds import Basis, Cause, ErrorClass, Failure, Phase, Stage, Verdict
from udfs.restore.state_problems import ASSUME_OPEN
from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.state_rows import node_paths

if TYPE_CHECKING:
    from udfs.restore.state_decision import OperatorRestore

__all__ = [
    "ValueRead",
    "ValueCheck",
    "ValuePolicy",
    "HEAP",
    "HEAP_READ",
    "OPERATOR",
    "OPERATOR_READ",
    "ENTRY_GONE",
    "kryo_class_changed",
]

_HEAP_ONLY = "restoring backend not known: a heap backend fails reading the values back, RocksDB at registration"


class ValueRead(NamedTuple):
    """One saved state's serializer as a backend reads its values back."""

    policy: ValuePolicy
    idx: int
    ser: SnapshotNode
    root: str
    where: dict[str, Any]


# one failure a backend's read-back may meet: True when it decides this state's read (recorded or not)
ValueCheck = Callable[["OperatorRestore", ValueRead], bool]


@dataclass(frozen=True)
class ValuePolicy:
    """How a backend reads saved values back at restore: the phase, the failures looked for in
    order, and what stays open. ``misread_needs_backend``: a Kryo collection misread inside a POJO
    is reported only when the backend is known to read values (heap); ``misread_uncertain``: why
    its message stays open even when known; ``backend_unknown_open``: a read-back failure is
    reported with its failure and message open when the backend is not known (RocksDB would fail
    at registration instead)."""

    phase: Phase
    checks: tuple[ValueCheck, ...]
    misread_needs_backend: bool
    misread_uncertain: str | None
    backend_unknown_open: bool


def value_entry_gone(r: OperatorRestore, v: ValueRead) -> bool:
    return r.entry_gone(v.policy.phase, v.idx, v.ser, v.root, [Basis.SAVEPOINT, Basis.FLINK_SOURCE], **v.where)


def collection_field_misread(r: OperatorRestore, v: ValueRead) -> bool:
    """A POJO's Kryo collection field misread by 2.x: the next field gets the wrong bytes."""
    kryo_at = kryo.first_collection(v.ser, v.root) if r.ctx.crosses_to_2x else None
    misread = kryo.pojo_field_misread(v.ser, v.root, r.classes, r.olds) if kryo_at is not None else None
    if misread is None or (v.policy.misread_needs_backend and r.backend is None):
        return False
    path, message = misread
    if message is None:
        uncertain = {"message": kryo.POJO_MISREAD}
    else:
        uncertain = {"message": v.policy.misread_uncertain} if v.policy.misread_uncertain else {}
    basis = [Basis.SAVEPOINT, Basis.CLASS_FACTS, Basis.FLINK_SOURCE, Basis.OBSERVED]
    r.kryo5_misread(v.policy.phase, v.idx, ErrorClass.ILLEGAL_ARGUMENT, message, path, basis, uncertain, **v.where)
    return True


def heap_stream_misread(r: OperatorRestore, v: ValueRead) -> bool:
    """A Kryo collection misread by 2.x's Kryo 5 while a heap backend reads the values back. A
    NATIVE heap stream holds the values one after the other: the key-group stream loses its place
    and the next state id read is not there. A CANONICAL savepoint frames each value in its own
    bytes (the full-snapshot format RocksDB shares): one collection per value (VALUE, MAP,
    REDUCING, AGGREGATING) reads without error and registration decides; a LIST state's value holds
    its elements one after the other, so the misread goes on into the next element, and what that
    throws depends on the bytes (seen: ``EOFException: Buffer underflow.``, a
    ``ClassNotFoundException`` naming bytes read as a class name, Kryo's ``Encountered unregistered
    class ID``)."""
    kryo_at = kryo.first_collection(v.ser, v.root) if r.ctx.crosses_to_2x else None
    if kryo_at is None:
        return False
    if r.fmt == "CANONICAL" and r.backend == "hashmap" and v.where.get("state_kind") == "LIST":
        basis = [Basis.SAVEPOINT, Basis.FLINK_SOURCE, Basis.OBSERVED]
        r.kryo5_misread(v.policy.phase, v.idx, ErrorClass.EOF, None, kryo_at, basis,
                        {"message": kryo.CANONICAL_LIST_MISREAD}, **v.where)  # fmt: skip
    elif r.fmt == "NATIVE" and r.backend == "hashmap":
        if len(r.keyed) == 1:
            uncertain = {"message": kryo.LAST_IN_KEY_GROUP}
        else:
            uncertain = dict.fromkeys(("failure", "message", "failure_stage"), kryo.KEY_GROUP_ORDER)
        basis = [Basis.SAVEPOINT, Basis.FLINK_SOURCE, Basis.OBSERVED]
        message, error = kryo.HEAP_NATIVE_MISREAD_MESSAGE, ErrorClass.NULL_POINTER
        r.kryo5_misread(v.policy.phase, v.idx, error, message, kryo_at, basis, uncertain, **v.where)
    return True


def operator_stream_misread(r: OperatorRestore, v: ValueRead) -> bool:
    """A Kryo collection read by 2.x's Kryo 5 while the operator backend is built."""
    kryo_at = kryo.first_collection(v.ser, v.root) if r.ctx.crosses_to_2x else None
    if kryo_at is None:
        return False
    r.add(
        v.policy.phase, v.idx, verdict=Verdict.FAILS, failure=Failure.KRYO_COLLECTION_ON_2X,
        cause=Cause.KRYO_COLLECTION_ON_2X, field_path=kryo_at, failure_stage=Stage.TASK_RESTORE,
        basis=[Basis.SAVEPOINT, Basis.FLINK_SOURCE], uncertain={"message": kryo.OPERATOR_STATE_MISREAD}, **v.where,
    )  # fmt: skip
    return True


def field_set(r: OperatorRestore, v: ValueRead) -> bool:
    """A kept POJO field whose new type cannot take the saved value (``Field.set``)."""
    hit = pojo.field_set_failure(v.ser, r.classes, r.olds, v.root)
    if hit is None:
        return False
    path, message, certain = hit
    uncertain = {} if certain else {"message": pojo.MAYBE_NULLS}
    if v.policy.backend_unknown_open and r.backend is None:
        uncertain.update(dict.fromkeys(("failure", "message"), _HEAP_ONLY))
    r.fails(
        v.policy.phase, v.idx, Failure.STATE_READ_FAILED, ErrorClass.ILLEGAL_ARGUMENT, message,
        cause=Cause.POJO_FIELD_RETYPED, field_path=path, uncertain=uncertain,
        basis=[Basis.SAVEPOINT, Basis.CLASS_FACTS, Basis.FLINK_SOURCE], **v.where,
    )  # fmt: skip
    return True


def no_longer_a_pojo(r: OperatorRestore, v: ValueRead) -> bool:
    """Saved POJOs of a class the new jar gives to Kryo, rebuilt by a known heap backend with the
    saved PojoSerializer (``Class.newInstance()``): the class facts say whether it can
    (``no_arg_constructor``: none -> ``NoSuchMethodException: <class>.<init>()`` here; public -> it
    reads, and registration fails); without them, which of the two is not known."""
    pred = fam.predict_new(v.ser, r.ctx, r.classes, v.root)
    to_kryo = next((p for p, c in pred.causes if c == Cause.POJO_TO_KRYO), None)
    if to_kryo is None or r.backend is None:
        return False
    node = dict(node_paths(v.ser, v.root)).get(to_kryo)
    facts = r.classes.get(node.type_class or "") if node is not None else None
    ctor = facts.no_arg_constructor if facts is not None else None
    if ctor == "public":
        return False
    kw: dict[str, Any] = {"uncertain": {"message": pojo.NO_LONGER_A_POJO, "failure_stage": ASSUME_OPEN}}
    if ctor == "none" and facts is not None:
        kw = {"error_class": pojo.NO_SUCH_METHOD, "message": pojo.NO_CONSTRUCTOR_MESSAGE.format(cls=facts.name),
              "failure_stage": Stage.TASK_RESTORE}  # fmt: skip
    r.add(
        v.policy.phase, v.idx, verdict=Verdict.FAILS, failure=Failure.STATE_READ_FAILED,
        cause=Cause.POJO_TO_KRYO, field_path=to_kryo, basis=[Basis.SAVEPOINT, Basis.CLASS_FACTS], **kw, **v.where,
    )  # fmt: skip
    return True


def operator_pojo_rebuilt(r: OperatorRestore, v: ValueRead) -> bool:
    """With the new job's declarations known: saved POJOs of operator state whose class the new
    jar gives to Kryo are rebuilt when the operator backend reads them (``PojoSerializer`` creates
    each instance of the new class): that fails if the class lost its public no-argument
    constructor (``Cannot instantiate class.``), else registration fails (the declared Kryo
    serializer against the saved POJO one)."""
    return r.new.declared is not None and no_longer_a_pojo(r, v)


def kryo_class_changed(r: OperatorRestore, phase: Phase, idx: int, ser: SnapshotNode, root: str, basis: list[str],
                       where: dict[str, Any]) -> bool:  # fmt: skip
    """Without declarations (an older spec): a Kryo class whose fields changed is not decidable."""
    changed = kryo.class_changed(ser, r.classes, r.olds, root)
    if changed is None:
        return False
    kw = {"cause": Cause.KRYO_CLASS_CHANGED, "field_path": changed[0], "basis": basis, **where}
    r.undecidable(phase, idx, Failure.KRYO_CLASS_CHANGED, changed[1], **kw)
    return True


def kryo_stream_read(r: OperatorRestore, v: ValueRead) -> bool:
    """With the new job's declarations known: a Kryo class whose fields changed, read in a stream
    (heap keyed state, operator state). Kryo's ``FieldSerializer`` writes no field count, so the
    new class reads too many or too few bytes of each value and the rest of the stream is read
    from the wrong place: it fails there, with what the misread bytes make of it (seen: an
    ``EOFException``, ``NullPointerException: No key set...``, ``IndexOutOfBoundsException``, a
    ``Can not set ... to null value``), or reads through with wrong values. Without the previous
    version's facts of the class, whether its fields changed is not known."""
    if r.new.declared is None:
        return False
    change = kryo.kryo_change(v.ser, r.classes, r.olds, v.root)
    if change is None:
        missing = kryo.facts_missing(v.ser, r.classes, r.olds, v.root)
        if missing is None:
            return False
        r.undecidable(v.policy.phase, v.idx, Failure.KRYO_CLASS_CHANGED, kryo.facts_missing_reason(missing[1]),
                      cause=Cause.KRYO_CLASS_CHANGED, field_path=missing[0], basis=[Basis.SAVEPOINT],
                      **v.where)  # fmt: skip
        return True
    uncertain = dict.fromkeys(("verdict", "message"), kryo.KRYO_STREAM_MISREAD.format(change=change.text))
    r.fails(
        v.policy.phase, v.idx, Failure.STATE_READ_FAILED, None, None, cause=Cause.KRYO_CLASS_CHANGED,
        field_path=change.path, uncertain=uncertain, basis=[Basis.SAVEPOINT, Basis.CLASS_FACTS, Basis.OBSERVED],
        **v.where,
    )  # fmt: skip
    return True


def value_kryo_class_changed(r: OperatorRestore, v: ValueRead) -> bool:
    if r.new.declared is not None:
        return kryo_stream_read(r, v)
    return kryo_class_changed(r, v.policy.phase, v.idx, v.ser, v.root, [Basis.SAVEPOINT, Basis.CLASS_FACTS], v.where)


# A heap backend reads every keyed value back (NATIVE and CANONICAL savepoints alike); a misread
# Kryo collection shows in the POJO holding it, else in the key group's stream; RocksDB reads none.
HEAP = ValuePolicy(
    Phase.VALUES,
    (collection_field_misread, heap_stream_misread, field_set, no_longer_a_pojo, kryo_stream_read),
    misread_needs_backend=True,
    misread_uncertain=kryo.POJO_READ_BACK,
    backend_unknown_open=True,
)
# ... once the saved values were read (state_value_reads): what those reads do not model
HEAP_READ = ValuePolicy(Phase.VALUES, (no_longer_a_pojo,), True, kryo.POJO_READ_BACK, True)
# The operator backend restores each Kryo snapshot (ENTRY_GONE), then reads its values.
ENTRY_GONE = ValuePolicy(Phase.OP_VALUES, (value_entry_gone,), False, None, False)
OPERATOR = ValuePolicy(
    Phase.OP_VALUES,
    (field_set, collection_field_misread, operator_stream_misread, value_kryo_class_changed, operator_pojo_rebuilt),
    misread_needs_backend=False,
    misread_uncertain=None,
    backend_unknown_open=False,
)
OPERATOR_READ = ValuePolicy(Phase.OP_VALUES, (operator_pojo_rebuilt,), False, None, False)
