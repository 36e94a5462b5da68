"""The state half against what the new job declares (``declared_states``), on small hand-built trees.

Each rule of udfs/restore/state_declared.py (and what it uses: the TTL wrapper per Flink line,
Avro's schema rules, Kryo's field layout, the silent losses) on the smallest savepoint that shows
it: one operator with one or two saved states, and the entries the exporter would write for the
new job. The real restores these rules were read from are the seed-41 statetypes sets
(scripts/state_agreement.py, tests/test_state_agreement.py's declared subset).
"""

from __future__ import annotations

import json

import pytest

from tests.test_state_rules import A, facts, keyed_op, kryo, list_of, map_of, operator_op, pojo, simple
from udfs.restore import avro_schema
from udfs.restore import state_rules as sr
from udfs.restore.check_rows import restore_check_row, warning_row
from udfs.restore.declared import Declarations, DeclaredState, declarations_from_spec, ttl_wrapped
from udfs.restore.families import avro as avro_family
from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.type_names import FLINK

# what the exporter writes for a LongSerializer and a StringSerializer (the framed snapshot, base64)
LONG_B64 = (
    "AAAAAgBQb3JnLmFwYWNoZS5mbGluay5hcGkuY29tbW9uLnR5cGV1dGlscy5iYXNlLkxvbmdTZXJpYWxpemVyJExvbmdTZXJpYWxpemVyU25hcHNo"
    "b3QAAAAD"
)
STRING_B64 = (
    "AAAAAgBUb3JnLmFwYWNoZS5mbGluay5hcGkuY29tbW9uLnR5cGV1dGlscy5iYXNlLlN0cmluZ1NlcmlhbGl6ZXIkU3RyaW5nU2VyaWFsaXplclNu"
    "YXBzaG90AAAAAw=="
)
TTL = {"ttl_ms": 3_600_000, "update_type": "OnCreateAndWrite"}
OPEN, PROCESS = "com.acme.Fn#open", "com.acme.Fn#processElement"
AVRO = FLINK + "formats.avro.typeutils.AvroSerializerSnapshot"
GENERIC_RECORD = "org.apache.avro.generic.GenericRecord"


def declared(name: str, kind: str, ser: SnapshotNode | None, where: str = OPEN, **kw: object) -> DeclaredState:
    return DeclaredState(name, kind, ser, basis="bytecode", declared_in=where, **kw)  # type: ignore[arg-type]


def new_op(*entries: DeclaredState) -> sr.NewOperator:
    return sr.NewOperator(A, declared=Declarations(tuple(entries)))


def ctx(line: str, backend: str = "rocksdb", saved_major: int | None = None) -> sr.StateContext:
    major = sr.line_major(line)
    return sr.StateContext(saved_major or major, major, backend, target_line=line)


def decide(saved: dict, *entries: DeclaredState, line: str = "2.3", backend: str = "rocksdb", **kw: object):
    ops = {A: keyed_op(A, simple("Long"), saved, _handle(backend))}
    return sr.decide_states(ops, {A: new_op(*entries)}, ctx(line, backend), **kw)  # type: ignore[arg-type]


def _handle(backend: str) -> str:
    return "IncrementalRemoteKeyedStateHandle" if backend == "rocksdb" else "KeyGroupsStateHandle"


def avro(*fields: tuple[str, object], name: str = "Rec") -> SnapshotNode:
    schema = {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}
    return SnapshotNode(AVRO, 3, "AVRO", GENERIC_RECORD, facts={"schema": json.dumps(schema)})


def test_the_spec_field_decodes_the_exporters_entries():
    raw = [
        {"name": "n", "kind": "VALUE", "serializer_snapshot": LONG_B64, "ttl": TTL, "basis": "bytecode",
         "declared_in": "a.Fn#registerStates", "called_from": "a.Base#open", "unresolved": None},
        {"name": "bad", "kind": "VALUE", "serializer_snapshot": "not base64!", "basis": "bytecode"},
        {"name": None, "kind": "LIST", "serializer_snapshot": None, "unresolved": "a name built at run time"},
    ]  # fmt: skip
    d = declarations_from_spec(json.dumps(raw))
    assert d is not None and [e.resolved for e in d.entries] == [True, False, False]
    n, bad, unknown = d.entries
    assert n.serializer is not None and n.serializer.class_name.endswith("LongSerializer$LongSerializerSnapshot")
    assert n.stage() == sr.TASK_RESTORE  # called from open(), though declared in a helper
    assert n.state_serializer().class_name.endswith("TtlStateFactory$TtlSerializerSnapshot")  # type: ignore[union-attr]
    assert "serializer_snapshot: not base64" in bad.why_unknown
    assert unknown.why_unknown == "a name built at run time"
    assert declarations_from_spec(None) is None  # an older spec: not known
    assert declarations_from_spec("[]") == Declarations(())
    assert d.match("n", "keyed").entry is n and d.match("n", "operator").entry is None
    assert d.match("other", "keyed").unknown == (unknown,)  # an unnamed LIST may be it


def test_stage_from_where_flink_calls_the_registration():
    assert declared("s", "VALUE", simple("Long"), OPEN).stage() == sr.TASK_RESTORE
    assert declared("s", "VALUE", simple("Long"), "com.acme.Fn#initializeState").stage() == sr.TASK_RESTORE
    assert declared("s", "VALUE", simple("Long"), PROCESS).stage() == sr.TASK_RUNNING
    assert declared("s", "VALUE", simple("Long"), "com.acme.Fn#registerStates").stage() is None
    hook = declared("s", "VALUE", simple("Long"), "com.acme.Fn#registerStates", called_from=PROCESS)
    assert hook.stage() == sr.TASK_RUNNING
    assert DeclaredState("r", "BROADCAST", simple("Long"), declared_in="Op.broadcastStateDescriptors[0]").stage() == (
        sr.TASK_RESTORE
    )


def test_the_declared_state_restores_as_declared():
    d = decide({"n": ("VALUE", simple("Long"))}, declared("n", "VALUE", simple("Long")))
    assert d.verdict == sr.RESTORES and d.warnings == [] and d.depends_on_user_code == []


def test_a_changed_kind_fails_with_flinks_message_where_it_is_registered():
    for where, stage in ((OPEN, sr.TASK_RESTORE), (PROCESS, sr.TASK_RUNNING)):
        d = decide({"n": ("VALUE", simple("Long"))}, declared("n", "LIST", list_of(simple("Long")), where))
        assert (d.verdict, d.failure, d.error_class) == (
            sr.FAILS,
            sr.STATE_KIND_CHANGED,
            "java.lang.IllegalStateException",
        )
        assert d.message == "Incompatible key/value state types. Was [VALUE], registered with [LIST]."
        assert d.failure_stage == stage and d.state_name == "n"
    helper = declared("n", "MAP", map_of(simple("String"), simple("Long")), "com.acme.Fn#registerStates")
    d = decide({"n": ("VALUE", simple("Long"))}, helper)
    assert d.failure_stage == sr.TASK_RESTORE and "failure_stage" in d.uncertain  # the caller is not named


def test_a_changed_type_fails_with_the_backends_message():
    d = decide({"n": ("VALUE", simple("Long"))}, declared("n", "VALUE", simple("String")), backend="hashmap")
    assert (d.failure, d.failure_stage) == (sr.STATE_SERIALIZER_INCOMPATIBLE, sr.TASK_RESTORE)
    assert d.message == (
        "For heap backends, the new state serializer (org.apache.flink.api.common.typeutils.base.StringSerializer"
        "@<hash>) must not be incompatible with the old state serializer (org.apache.flink.api.common.typeutils.base."
        "LongSerializer@<hash>)."
    )


@pytest.mark.parametrize(
    "line, backend, outcome",
    [
        ("1.20", "rocksdb", "incompatible"),
        ("2.0", "hashmap", "incompatible"),
        ("2.1", "hashmap", "refused"),
        ("2.1", "rocksdb", "restores"),
        ("2.2", "hashmap", "restores"),
        ("2.3", "rocksdb", "restores"),
    ],
)
def test_ttl_switched_on_or_off_per_line(line, backend, outcome):
    """Flink wraps a TTL state's value in TtlStateFactory.TtlSerializer: a different serializer up to
    2.0, TtlAwareSerializer's migration from 2.1 (RocksDB migrates; 2.1's heap backend refuses,
    2.2 migrates too), read in each line's StateSerializerProvider and backends."""
    saved_ttl = ttl_wrapped(simple("Long"), "VALUE")
    for saved, new in ((simple("Long"), declared("n", "VALUE", simple("Long"), ttl=TTL)),
                       (saved_ttl, declared("n", "VALUE", simple("Long")))):  # fmt: skip
        d = decide({"n": ("VALUE", saved)}, new, line=line, backend=backend)
        if outcome == "restores":
            assert d.verdict == sr.RESTORES, (line, backend)
            continue
        assert (d.verdict, d.failure, d.reported.cause) == (
            sr.FAILS,
            sr.STATE_SERIALIZER_INCOMPATIBLE,
            sr.Cause.TTL_SWITCHED,
        )
        if outcome == "refused":
            assert "must not need ttl state migration with the old state serializer" in (d.message or "")
        else:
            assert "must not be incompatible with the old state serializer" in (d.message or "")
    # a list: the wrapper is around each element, so the list serializer is what Flink prints
    d = decide(
        {"l": ("LIST", list_of(simple("Long")))}, declared("l", "LIST", list_of(simple("Long")), ttl=TTL), line="1.20"
    )
    assert d.message is not None and d.message.startswith(
        "The new state serializer (org.apache.flink.api.common.typeutils.base.ListSerializer@<hash>)"
    )


def test_avro_schemas_resolve_by_avros_rules():
    base = [("id", "long"), ("name", "string")]
    w = {"type": "record", "name": "Rec", "fields": [{"name": n, "type": t} for n, t in base]}
    added = {**w, "fields": [*w["fields"], {"name": "x", "type": "double", "default": 0.0}]}
    no_default = {**w, "fields": [*w["fields"], {"name": "x", "type": "double"}]}
    removed = {**w, "fields": w["fields"][:1]}
    retyped = {**w, "fields": [w["fields"][0], {"name": "name", "type": "int"}]}
    widened = {**w, "fields": [{"name": "id", "type": "double"}, w["fields"][1]]}
    renamed_type = {**w, "name": "Other"}
    aliased = {**renamed_type, "aliases": ["Rec"]}
    assert avro_schema.check(added, w).compatible and avro_schema.check(removed, w).compatible
    assert not avro_schema.check(no_default, w).compatible
    assert "no default" in avro_schema.check(no_default, w).why
    assert not avro_schema.check(retyped, w).compatible and avro_schema.check(widened, w).compatible
    assert not avro_schema.check(w, widened).compatible  # double does not narrow to long
    assert not avro_schema.check(renamed_type, w).compatible and avro_schema.check(aliased, w).compatible
    enum_w = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
    assert not avro_schema.check({**enum_w, "symbols": ["A"]}, enum_w).compatible
    assert avro_schema.check({**enum_w, "symbols": ["A"], "default": "A"}, enum_w).compatible
    assert (
        avro_schema.check(["null", "long"], "int").compatible
        and not avro_schema.check("long", ["null", "long"]).compatible
    )
    assert avro_schema.dropped_fields(removed, w) == ["name"] and avro_schema.dropped_fields(added, w) == []
    # the family: equal schemas as is, readable ones after migration, AvroSerializer printed as Flink does
    assert sr.compatibility(avro(*base), avro(*base)).result == sr.AS_IS
    assert sr.compatibility(avro(*base, ("x", "double")), avro(*base)).result == sr.INCOMPATIBLE
    assert sr.serializer_display(avro(*base)) == (
        "org.apache.flink.formats.avro.typeutils.AvroSerializer (org.apache.avro.generic.GenericRecord)"
    )


def test_avro_fields_added_migrate_on_heap_and_fail_on_rocksdb():
    """RocksDB rewrites GenericRecord values at registration by the new schema's field positions
    (seen on 1.20.5 and 2.3.0: ArrayIndexOutOfBoundsException: Index 2 out of bounds for length 2);
    a heap backend keeps the records as read. A field removed restores, its values dropped."""
    saved = {"r": ("VALUE", avro(("id", "long"), ("name", "string")))}
    added = avro(("id", "long"), ("name", "string"))
    added = SnapshotNode(AVRO, 3, "AVRO", GENERIC_RECORD, facts={"schema": json.dumps({
        "type": "record", "name": "Rec", "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
                                                    {"name": "x", "type": "double", "default": 0.0}]})})  # fmt: skip
    d = decide(saved, declared("r", "VALUE", added), backend="rocksdb")
    assert (d.failure, d.error_class, d.message) == (
        sr.STATE_READ_FAILED,
        "java.lang.ArrayIndexOutOfBoundsException",
        "Index 2 out of bounds for length 2",
    )
    assert decide(saved, declared("r", "VALUE", added), backend="hashmap").verdict == sr.RESTORES
    d = decide(saved, declared("r", "VALUE", avro(("id", "long"))), backend="rocksdb")
    assert d.verdict == sr.RESTORES
    assert [(w.loss, w.field_path) for w in d.warnings] == [("AVRO_FIELD_REMOVED", "value.name")]
    assert avro_family.dropped_fields(avro(("id", "long")), saved["r"][1]) == ["name"]


def test_a_kryo_class_whose_fields_changed_is_decided_from_both_jars_facts():
    """Kryo keeps no field layout: the new class reads the saved bytes as if they had its fields.
    RocksDB reads each value on its own when user code reads it: fields added at the end read past
    the value (Kryo's EOF: 1.x 'No more bytes left.', 2.x 'Buffer underflow.'), fields removed at
    the end are left unread (the values restore without them). A heap stream goes on from the wrong
    byte. Without the previous version's facts the answer depends on them."""
    old = facts("x.G", "generic", {"x": "long", "y": "String"})
    added = facts("x.G", "generic", {"x": "long", "y": "String", "z": "double"})
    saved = {"g": ("VALUE", kryo("x.G"))}
    entry = declared("g", "VALUE", kryo("x.G"))
    for line, message in (("1.20", "No more bytes left."), ("2.3", "Buffer underflow.")):
        d = decide(saved, entry, line=line, new_classes=added, old_classes=old)
        assert (d.failure, d.error_class, d.message, d.failure_stage) == (
            sr.STATE_READ_FAILED, "java.io.EOFException", message, sr.TASK_RUNNING)  # fmt: skip
        assert "failure_stage" in d.uncertain and "verdict" not in d.uncertain
    d = decide(saved, entry, new_classes=old, old_classes=added)  # z removed
    assert d.verdict == sr.RESTORES
    assert [(w.loss, w.field_path) for w in d.warnings] == [("KRYO_FIELD_REMOVED", "value.z")]
    d = decide(saved, entry, backend="hashmap", new_classes=added, old_classes=old)
    assert d.verdict == sr.FAILS and {"verdict", "message"} <= set(d.uncertain)  # what the misread throws
    d = decide(saved, entry, backend="hashmap", new_classes=added)
    assert (
        d.verdict == sr.NOT_DECIDABLE
        and "x.G" in d.uncertain["verdict"]
        and "previous version" in d.uncertain["verdict"]
    )


def test_silent_losses_are_warned_of():
    """A state the new version no longer declares (kept in later savepoints, never read), one that
    looks renamed, and POJO fields removed or renamed: the restore goes through, the values do not."""
    p = pojo("x.P", a=simple("Long"), b=simple("String"))
    saved = {"gone": ("VALUE", simple("Long")), "old": ("VALUE", simple("String")), "p": ("VALUE", p)}
    renamed = pojo("x.P", a=simple("Long"), c=simple("String"))
    d = decide(saved, declared("new", "VALUE", simple("String")), declared("p", "VALUE", renamed))
    assert d.verdict == sr.RESTORES
    got = sorted((w.state_name, w.loss, w.field_path, w.renamed_to) for w in d.warnings)
    assert got == [("gone", "STATE_NOT_DECLARED", None, None), ("old", "STATE_RENAMED", None, "new"),
                   ("p", "POJO_FIELD_RENAMED", "value.fields.b", "c")]  # fmt: skip
    d = decide({"p": ("VALUE", p)}, declared("p", "VALUE", pojo("x.P", a=simple("Long"))))
    assert [(w.loss, w.field_path) for w in d.warnings] == [("POJO_FIELD_REMOVED", "value.fields.b")]
    added = decide({"p": ("VALUE", p)}, declared("p", "VALUE", pojo("x.P", a=simple("Long"), b=simple("String"),
                                                                    c=simple("Int"))))  # fmt: skip
    assert added.verdict == sr.RESTORES and added.warnings == []  # a new field: nothing lost
    head = {"check_id": "c", "savepoint": "s", "graph_id": "g"}
    row = warning_row(head, d.warnings[0])
    assert list(row) == ["check_id", "savepoint", "graph_id", "operator_id", "state_name", "backend", "state_kind",
                         "field_path", "loss", "detail", "renamed_to", "basis"]  # fmt: skip
    assert restore_check_row(head, sr.RESTORES, None, None, None, [], d)["loss_warnings"] == 1


def test_an_unresolved_declaration_leaves_the_state_open_with_its_reason():
    why = "the descriptor passed to getState in a.Fn#open is not known before the job runs: an object built at run time"
    unknown = DeclaredState("n", "VALUE", None, basis="bytecode", declared_in="a.Fn#open", unresolved=why)
    d = decide({"n": ("VALUE", simple("Long"))}, unknown)
    assert d.verdict == sr.NOT_DECIDABLE and why in d.uncertain["verdict"]
    assert d.problems[0].failure == "DECLARATION_UNRESOLVED" and d.depends_on_user_code == [f"{A}/n"]
    # the call's kind is known: another kind fails whatever the type
    listed = DeclaredState("n", "LIST", None, basis="bytecode", declared_in="a.Fn#open", unresolved=why)
    assert decide({"n": ("VALUE", simple("Long"))}, listed).failure == sr.STATE_KIND_CHANGED
    unnamed = DeclaredState(None, None, None, basis="bytecode", declared_in="a.Fn#open", unresolved="a loop")
    assert decide({"n": ("VALUE", simple("Long"))}, unnamed).verdict == sr.NOT_DECIDABLE
    assert decide({"n": ("VALUE", simple("Long"))}, unnamed).warnings == []  # may be declared: no loss claimed


def test_operator_and_broadcast_state_meet_their_declarations():
    ops = {A: operator_op(A, {"buf": simple("Long")})}
    union = DeclaredState("buf", "OPERATOR_UNION_LIST", simple("Long"), declared_in="a.Fn#initializeState")
    d = sr.decide_states(ops, {A: new_op(union)}, ctx("2.3"))
    assert d.message == "Incompatible state assignment modes. Was [SPLIT_DISTRIBUTE], registered with [UNION]."
    retyped = DeclaredState("buf", "OPERATOR_LIST", simple("String"), declared_in="a.Fn#initializeState")
    d = sr.decide_states(ops, {A: new_op(retyped)}, ctx("2.3"))
    assert d.message == "The new state typeSerializer for operator state must not be incompatible."
    # a broadcast state is another backend: an operator list state of that name does not meet it
    bc = {A: operator_op(A, {"rules": simple("Long")}, "BROADCAST")}
    d = sr.decide_states(bc, {A: new_op(DeclaredState("rules", "OPERATOR_LIST", simple("Long")))}, ctx("2.3"))
    assert d.verdict == sr.RESTORES and [w.loss for w in d.warnings] == ["STATE_NOT_DECLARED"]


def test_without_declarations_the_check_is_what_it_was():
    """An older spec (no declared_states): the saved states are taken as declared as before."""
    ops = {A: keyed_op(A, simple("Long"), {"n": ("VALUE", simple("Long"))})}
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, ctx("2.3"))
    assert d.verdict == sr.RESTORES and d.depends_on_user_code == [f"{A}/n"] and d.warnings == []


def test_a_class_that_left_pojo_is_rebuilt_at_restore_as_its_facts_say():
    """The heap backend reads saved POJOs back with the saved PojoSerializer, which creates each
    instance with Class.newInstance(): a class the new jar makes generic without a no-argument
    constructor fails there (NoSuchMethodException, as 1.20.5 and 2.3.0 threw); with a public one it
    reads, and the declared Kryo serializer fails at registration; an older spec's facts say
    neither, and the row leaves the message open."""
    p = pojo("x.P", a=simple("Long"))
    saved = {"p": ("VALUE", p)}
    entry = declared("p", "VALUE", kryo("x.P"))
    gone = {"x.P": sr.ClassFacts.from_dict("x.P", {"kind": "generic", "fields": [{"name": "a", "type": "long"}],
                                                  "no_arg_constructor": "none"})}  # fmt: skip
    d = decide(saved, entry, backend="hashmap", new_classes=gone)
    assert (d.failure, d.error_class, d.message, d.failure_stage) == (
        sr.STATE_READ_FAILED, "java.lang.NoSuchMethodException", "x.P.<init>()", sr.TASK_RESTORE)  # fmt: skip
    assert d.uncertain == {}
    kept = {"x.P": sr.ClassFacts.from_dict("x.P", {"kind": "generic", "no_arg_constructor": "public"})}
    d = decide(saved, entry, backend="hashmap", new_classes=kept)
    assert (d.failure, d.state_name) == (sr.STATE_SERIALIZER_INCOMPATIBLE, "p") and d.uncertain == {}
    older = {"x.P": sr.ClassFacts.from_dict("x.P", {"kind": "generic"})}
    d = decide(saved, entry, backend="hashmap", new_classes=older)
    assert d.failure == sr.STATE_READ_FAILED and "message" in d.uncertain
