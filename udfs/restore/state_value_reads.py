"""Reading the saved values where only they decide: a Kryo class whose fields changed, Kryo 2 bytes on 2.x.

Kryo keeps no schema: how a class whose fields changed between the jars reads its saved values,
or how Flink 2.x's Kryo 5 reads what 1.x's Kryo 2 wrote, is a function of the saved bytes, which
the check has. For the states whose decision needs them (:func:`flagged_states`; no other state's
values are ever read) this module reads the operator's saved streams as the restoring tasks do
(:mod:`udfs.savepoint.value_streams`, each Java exception as Flink's in the JDK's words) and turns
what each task meets into the restore's problems:

* **heap keyed state** (native and canonical savepoints), read while the backend is built: per new
  subtask (its key groups, from the streams of the old subtasks that held them) the first
  exception, or none; the subtasks that fail, with the same exception, fail the restore there
  (``task_restore``); subtasks that fail differently, or read through while another fails, race;
* **operator and broadcast state**, read while the operator backend is built: each list element
  at its offset, a broadcast state's map from its first;
* **RocksDB**, which reads a value only when user code asks for its key (``task_running``): every
  saved value is read; when they all fail the same way, which key comes first does not matter;
  when some read through and the others fail one way, the job fails with that failure once user
  code reads such a key (the verdict is marked uncertain with the counts: a job that never reads
  those keys again restores); values failing in different ways leave the reported failure open.

Values are read only if the check was given the streams' bytes (:class:`ValueSource`; the Spark
side reads them on the executors when a first pass asked for them, :attr:`Collector.requests`);
without them the rules decide as before, leaving the bytes' part open. RocksDB's SST files (an
incremental checkpoint, a native RocksDB savepoint) are not read: there too the rules decide as
without the bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from udfs.restore.families import kryo
from udfs.restore.state_inputs import ClassFacts
from udfs.restore.state_kinds import Basis, Cause, Failure, Phase, Stage
from udfs.savepoint.flink_values import JobClass, Reading
from udfs.savepoint.state_meta import KeyedProxy, StateMetaInfo
from udfs.savepoint.state_rows import state_kind
from udfs.savepoint.value_streams import (
    NO_STATE_MESSAGE,
    Outcome,
    StreamBytes,
    key_group_range,
    read_full_values,
    read_heap_native,
    read_operator_values,
)

if TYPE_CHECKING:
    from udfs.restore.state_decision import OperatorRestore

__all__ = ["ValueSource", "ValueRequest", "flagged_states", "heap_reads", "operator_reads", "rocksdb_reads"]

_KEYED, _OPERATOR = "managed_keyed", "managed_operator"
NPE = "java.lang.NullPointerException"
_BASIS = [Basis.SAVEPOINT, Basis.CLASS_FACTS, Basis.FLINK_SOURCE]
LAZY_READ = (
    "RocksDB reads a value when user code first reads its key: of the values of {state}, {detail}: the job fails "
    "when user code first reads a key whose value fails (a job that never reads those keys again restores)"
)
SUBTASKS_RACE = "the subtasks fail differently ({detail}): Flink reports whichever fails first"
# HotSpot throws a preallocated NullPointerException, without its helpful message, at a site that has
# thrown many of them (-XX:+OmitStackTraceInFastThrow, on by default): the statetypes harness's
# long-lived JVM reported some of these NPEs without one; replayed in fresh JVMs they had it (3 of 3)
FAST_THROW = (
    "an implicit NullPointerException: a JVM that has thrown many at this site (a long-lived TaskManager) reports "
    "it without its message (HotSpot's OmitStackTraceInFastThrow)"
)
LAZY_STAGE = "RocksDB reads a value when user code first reads the state: task_running while processing records"
READ_THROUGH_RACE = (
    "subtasks {through} read their values through and fail, if at all, at registration, while {failing} fail "
    "reading them: Flink reports whichever fails first"
)


class ValueRequest(NamedTuple):
    """The streams a decision needs the bytes of: one operator's keyed or operator streams."""

    operator_id: str
    stream_kind: str


@dataclass
class ValueSource:
    """The bytes of saved streams a check was given, by (operator, stream kind) -> subtask -> the
    stream from its start; a stream the reader's bound cut short is not read past its bytes."""

    streams: Mapping[tuple[str, str], Mapping[int, bytes]] = field(default_factory=dict)
    truncated: frozenset[tuple[str, str, int]] = frozenset()  # (operator, kind, subtask) cut at the bound

    def get(self, operator_id: str, kind: str) -> Mapping[int, bytes] | None:
        return self.streams.get((operator_id, kind))


def flagged_states(infos: Iterable[StateMetaInfo], r: OperatorRestore) -> set[str]:
    """The states whose saved values only their bytes decide: a class Kryo keeps whose fields
    changed between the jars, or (1.x -> 2.x) Kryo 2 bytes of a collection or of a class that
    is not only primitives and strings, read by Kryo 5."""
    out = set()
    for info in infos:
        for role, ser in info.serializers.items():
            root = role.removesuffix("_SERIALIZER").lower()
            if kryo.kryo_change(ser, r.classes, r.olds, root) is not None:
                out.add(info.name)
            elif r.ctx.crosses_to_2x and (
                kryo.first_collection(ser, root) is not None or kryo.written_by_kryo2(ser, root, r.classes) is not None
            ):
                out.add(info.name)
    return out


def _reading(r: OperatorRestore) -> Reading:
    """What the task's reads share: its Flink line's Kryo, the new jar's classes. With the Scala
    API on the class path Flink's Kryo comes from chill's Scala instantiator, whose registrations
    are not modelled."""
    major = min(r.ctx.target_major or r.ctx.saved_major or 1, 2)
    scala = "flink-scala" if major == 1 else "flink-table-api-scala"
    unknown = None
    if r.ctx.module_gone(scala) is False:
        unknown = f"{scala} is on the class path: Flink's Kryo then registers the Scala classes (not modelled)"
    return Reading(major, {n: _job_class(f) for n, f in r.classes.items()}, kryo_unknown=unknown)


def _job_class(f: ClassFacts) -> JobClass:
    return JobClass(f.kind, f.fields, f.enum_constants)


def _streams(r: OperatorRestore, kind: str) -> list[StreamBytes] | None:
    """The operator's streams of ``kind`` with their bytes; None when the check was not given them."""
    got = r.values.get(r.op.operator_id, kind) if r.values is not None else None
    if got is None:
        r.col.requests.append(ValueRequest(r.op.operator_id, kind))
        return None
    out = []
    for sp in r.op.keyed if kind == _KEYED else r.op.operator:
        data = got.get(sp.subtask)
        proxy = sp.proxy
        if data is None or proxy is None or not sp.layout:
            return None
        states = tuple(proxy.states) + tuple(getattr(proxy, "broadcast_states", ()))
        key = proxy.key_serializer if isinstance(proxy, KeyedProxy) else None
        cut = (r.op.operator_id, kind, sp.subtask) in r.values.truncated
        out.append(StreamBytes(sp.subtask, data, states, key, sp.layout, cut))
    return out


def _tasks(r: OperatorRestore, streams: Sequence[StreamBytes]) -> list[range]:
    """Each new subtask's key groups: the new parallelism (the saved one when the spec does not
    say) over every saved key group."""
    groups = sum(len(s.key_group_offsets()) for s in streams)
    parallelism = r.new.parallelism or len(streams)
    return [key_group_range(groups, parallelism, i) for i in range(parallelism)]


# ------------------------------------------------------------------------------------------------
#  What the reads come to
# ------------------------------------------------------------------------------------------------


def _text(o: Outcome) -> str:
    e = o.error
    return f"{e.error_class}: {e.message}" if e is not None else str(o.undecidable)


def _failure_kind(r: OperatorRestore, infos: Mapping[str, StateMetaInfo], state: str) -> tuple[str, str]:
    """(failure, cause) of a misread: a Kryo 2 collection read by Kryo 5, else a Kryo class."""
    info = infos.get(state)
    collection = info is not None and any(kryo.first_collection(s, "value") for s in info.serializers.values())
    if r.ctx.crosses_to_2x and collection:
        return Failure.KRYO_COLLECTION_ON_2X, Cause.KRYO_COLLECTION_ON_2X
    if r.ctx.crosses_to_2x and info is not None:
        changed = any(kryo.kryo_change(s, r.classes, r.olds, "value") for s in info.serializers.values())
        return Failure.STATE_READ_FAILED, Cause.KRYO_CLASS_CHANGED if changed else Cause.KRYO2_VALUES_ON_KRYO5
    return Failure.STATE_READ_FAILED, Cause.KRYO_CLASS_CHANGED


def _record(
    r: OperatorRestore, phase: Phase, idx: int, outcomes: Sequence[Outcome], state: str, where: dict[str, Any],
    stage: Stage, infos: Mapping[str, StateMetaInfo], race_open: str | None = None, open_verdict: str | None = None,
) -> bool:  # fmt: skip
    """One read's outcomes as a problem: True when decided (a failure, or every read through).
    ``race_open``: some subtasks read through while others fail: if a registration of this
    operator fails too, which subtask Flink reports is a race (:func:`decide_states` says so);
    ``open_verdict``: why a failure's verdict stays open (RocksDB: some values read through)."""
    failing = [o for o in outcomes if o.failed]
    open_ = [o for o in outcomes if o.undecidable]
    if not failing:
        if open_:
            why = f"{open_[0].undecidable} ({open_[0].where})"
            r.undecidable(phase, idx, Failure.KRYO_CLASS_CHANGED, why, cause=Cause.KRYO_CLASS_CHANGED,
                          basis=list(_BASIS), **where)  # fmt: skip
            return True
        r.col.read_through.add((r.op.operator_id, state))
        return True
    first = failing[0].error
    assert first is not None
    uncertain: dict[str, str] = {"verdict": open_verdict} if open_verdict else {}
    distinct = list(dict.fromkeys(_text(o) for o in failing))
    if len(distinct) > 1 or open_:
        detail = "; ".join(distinct + [f"not decidable: {o.undecidable}" for o in open_[:1]])
        uncertain["reported"] = SUBTASKS_RACE.format(detail=detail)
    if first.error_class == NPE and first.message == NO_STATE_MESSAGE:
        uncertain.setdefault("message", FAST_THROW)
    if stage == Stage.TASK_RUNNING:
        uncertain.setdefault("failure_stage", LAZY_STAGE)
    failure, cause = _failure_kind(r, infos, state)
    r.fails(
        phase, idx, failure, first.error_class, first.message, cause=cause, failure_stage=stage, uncertain=uncertain,
        basis=[*_BASIS, Basis.OBSERVED] if r.ctx.crosses_to_2x else list(_BASIS), **where,
    )  # fmt: skip
    if race_open and "reported" not in uncertain:
        r.col.partial_reads[r.op.operator_id] = (r.col.items[-1], race_open)
    return True


# ------------------------------------------------------------------------------------------------
#  The three ways a backend reads values
# ------------------------------------------------------------------------------------------------


def heap_reads(r: OperatorRestore, idx: int) -> bool:
    """A heap backend builds itself from every saved value (module docstring): True when the
    values decided this operator's read-back (a problem recorded, or every value read through)."""
    keyed = r.keyed
    flagged = flagged_states(keyed.values(), r)
    if not flagged:
        return False
    streams = _streams(r, _KEYED)
    if streams is None:
        return False
    state = sorted(flagged)[0]
    where = {"state_name": state, "backend": "keyed", "state_kind": _kind(keyed.get(state))}
    tasks = _tasks(r, streams)
    groups = sum(len(s.key_group_offsets()) for s in streams)
    if r.fmt == "CANONICAL" or not all(s.heap_native for s in streams):
        outcomes = [_first(_canonical(r, streams, g, keyed, flagged)) for g in tasks]
    else:
        outcomes = [read_heap_native(streams, g, _reading(r), flagged, len(g) == groups) for g in tasks]
    through = [str(i + 1) for i, o in enumerate(outcomes) if not o.failed and not o.undecidable]
    failing = [str(i + 1) for i, o in enumerate(outcomes) if o.failed]
    race = READ_THROUGH_RACE.format(through=", ".join(through), failing=", ".join(failing)) if through else None
    return _record(r, Phase.VALUES, idx, outcomes, state, where, Stage.TASK_RESTORE, keyed, race)


def _canonical(
    r: OperatorRestore, streams: Sequence[StreamBytes], groups: range, keyed: Mapping[str, StateMetaInfo],
    flagged: set[str],
) -> Iterable[Outcome]:  # fmt: skip
    """A heap task restoring a full snapshot (a canonical savepoint) reads the flagged states'
    framed values in the file's order (the other states' frames cannot move them), through the
    views ``HeapSavepointRestoreOperation`` reuses."""
    states = {name: _kind(keyed.get(name)) or "VALUE" for name in flagged}
    return read_full_values(streams, groups, _reading(r), states, {"LIST": object(), "other": object()})


def _first(outcomes: Iterable[Outcome]) -> Outcome:
    """A task stops at its first exception."""
    last = Outcome()
    for o in outcomes:
        if o.failed or o.undecidable:
            return o
        last = o
    return Outcome(None, None, last.where)


def _kind(info: StateMetaInfo | None) -> str | None:
    if info is None:
        return None
    return state_kind(info, "operator" if info.backend_state_type in ("OPERATOR", "BROADCAST") else "keyed")


def operator_reads(r: OperatorRestore, idx: int, state: str, where: dict[str, Any]) -> bool:
    """The operator backend reads a flagged operator or broadcast state's values (module
    docstring): True when they decided (a problem recorded, or every value read through)."""
    if state not in flagged_states([r.opstates[state]], r):
        return False
    streams = _streams(r, _OPERATOR)
    if streams is None:
        return False
    reading = _reading(r)
    outcomes = [o for s in streams for o in read_operator_values(s, reading, state)]
    return _record(r, Phase.OP_VALUES, idx, outcomes, state, where, Stage.TASK_RESTORE, r.opstates)


def rocksdb_reads(r: OperatorRestore, idx: int, state: str, where: dict[str, Any]) -> bool:
    """RocksDB reads a flagged keyed state's value when user code asks for its key (module
    docstring). True when the values decided; False (the rules decide) for values in SST files."""
    if state not in flagged_states([r.keyed[state]], r):
        return False
    if any("Incremental" in (sp.handle or "") for sp in r.op.keyed):
        return False  # SST files, not read: the rules decide as without the bytes, leaving their part open
    streams = _streams(r, _KEYED)
    if streams is None:
        return False
    reading, views = _reading(r), {"other": object()}  # the state's own view of RocksDB's bytes
    kind = {state: _kind(r.keyed[state]) or "VALUE"}
    outcomes = [o for g in _tasks(r, streams) for o in read_full_values(streams, g, reading, kind, views)]
    texts = [_text(o) if (o.failed or o.undecidable) else "reads" for o in outcomes]
    open_verdict = None
    if "reads" in texts and len(set(texts)) > 1:  # some values read through, some fail (or are open)
        counts = ", ".join(f"{texts.count(t)} x {t}" for t in sorted(set(texts)))
        open_verdict = LAZY_READ.format(state=state, detail=counts)
    return _record(r, Phase.REGISTER, idx, outcomes, state, where, Stage.TASK_RUNNING, r.keyed,
                   open_verdict=open_verdict)  # fmt: skip


# A stream is read to this many bytes at most: past it, a read that goes on is not decidable.
MAX_STREAM_BYTES = 64 << 20


def values_from_files(metadata: Any, read_head: Any, requests: Iterable[ValueRequest]) -> ValueSource:
    """The requested streams' bytes from files this process can open (``read_head(path, n)``:
    :func:`udfs.savepoint.state_meta.local_file_reader`), as the Spark side reads them on the
    executors: each stream from its start, to its end or :data:`MAX_STREAM_BYTES`."""
    wanted = {(r.operator_id, r.stream_kind) for r in requests}
    streams: dict[tuple[str, str], dict[int, bytes]] = {}
    cut: set[tuple[str, str, int]] = set()
    for op in getattr(metadata, "operators", ()):
        for s in getattr(op, "state_streams", ()) or ():
            key = (op.operator_id, s.kind)
            if key not in wanted:
                continue
            ref = s.ref
            if ref.location == "inline":
                data = ref.data or b""
            else:
                start = ref.offset if ref.location == "segment" else 0
                n = min(ref.size or MAX_STREAM_BYTES, MAX_STREAM_BYTES)
                data = read_head(ref.path, start + n)[start:]
                if len(data) >= MAX_STREAM_BYTES:
                    cut.add((*key, s.subtask))
            streams.setdefault(key, {})[s.subtask] = data
    return ValueSource(streams, frozenset(cut))
