"""The state half of the restore check (udfs/restore/state_rules.py) against Flink's real restores.

Ground truth: /work/shared/vectors/statetypes, 80 real restores where the state's types decide (40
Flink 1.20.5 -> 2.3.0, 40 within 2.3.0 with type edits). Each case is given what the product has
before a deploy (tests/state_vectors.py): the savepoint itself, the new job's topology as the
project computes it, the new key serializer snapshot the exporter writes, and facts of the user
classes the states name. Five aspects are compared with what Flink did: verdict, failure kind,
operator, message (``<hash>`` for identity hashes) and failure stage. Every case must agree on all
five, or the rules must have said why they cannot decide (an explicit marker), and that reason
is then checked against the case: the deciding difference really is in user-code-declared state
(a changed declared type or kind, the point where user code first requests the state, a Kryo
class whose fields changed). The agreement table is printed (docs/state-rules.md has the final one).

Then unit tests of each rule on small hand-built trees.
"""

from __future__ import annotations

import base64
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from pipeline.tables.columns import CHECK_EXTRA_COLUMNS, FIX_COLUMNS
from tests import state_vectors as sv
from udfs.restore import state_fixes as sf
from udfs.restore import state_rules as sr
from udfs.restore.check_rows import fix_rows, restore_check_row
from udfs.savepoint.serializer_snapshots import KRYO, POJO, PojoField, SnapshotNode
from udfs.savepoint.state_meta import KeyedProxy, OperatorProxy, OperatorStateTypes, StateMetaInfo, SubtaskProxy
from udfs.savepoint.state_rows import STATE_COLUMNS, state_rows

CASES = sv.read_cases()
AGREE, NOT_DECIDABLE, DISAGREE = "agree", "not decidable", "DISAGREE"


@dataclass
class Judged:
    case: dict[str, Any]
    expected: dict[str, Any]
    got: dict[str, Any]
    decision: sr.StateDecision
    aspects: dict[str, str] = field(default_factory=dict)  # aspect -> agree / not decidable / DISAGREE
    reason: str = ""  # why not decidable, as checked against the case
    rows: list[dict[str, Any]] = field(default_factory=list)


def _v1_v2_states(case: dict[str, Any]) -> tuple[dict, dict]:
    key = lambda s: (s["operator_key"], s["state_name"])  # noqa: E731
    return {key(s): s for s in case["states_v1"]}, {key(s): s for s in case["states_v2"]}


def _declaration_changes(case: dict[str, Any]) -> list[str]:
    """States user code declares differently in v2 (kind or value type), same name and operator."""
    v1, v2 = _v1_v2_states(case)
    out = []
    for k, a in v1.items():
        b = v2.get(k)
        if b is None:
            continue
        if a["state_kind"] != b["state_kind"]:
            out.append(f"{k[1]}: kind {a['state_kind']} -> {b['state_kind']}")
        elif a["value_type"] != b["value_type"]:
            out.append(f"{k[1]}: value type {a['value_type']} -> {b['value_type']}")
    return out


def _kryo_classes_changed(case: dict[str, Any]) -> list[str]:
    v1, v2 = _v1_v2_states(case)
    out = []
    for k, a in v1.items():
        b = v2.get(k, {})
        da, db = a.get("value_class_def") or {}, b.get("value_class_def") or {}
        if da.get("kind") == "generic" and db.get("kind") == "generic" and da.get("fields") != db.get("fields"):
            out.append(f"{da['name']}: {da['fields']} -> {db['fields']}")
    return out


def _registration(case: dict[str, Any], state: str | None) -> str | None:
    return next((s["registration"] for s in case["states_v2"] if s["state_name"] == state), None)


def judge(case: dict[str, Any], ci: sv.CaseInputs, d: sr.StateDecision) -> Judged:
    exp, got = sv.recorded(case, ci), sv.predicted(d)
    j = Judged(case, exp, got, d, {a: AGREE if exp[a] == got[a] else DISAGREE for a in sv.ASPECTS})
    if all(v == AGREE for v in j.aspects.values()):
        return j
    if d.verdict == sr.NOT_DECIDABLE:
        kinds = {p.failure for p in d.problems if p.verdict == sr.NOT_DECIDABLE}
        changed = _kryo_classes_changed(case)
        if kinds == {sr.KRYO_CLASS_CHANGED} and changed:
            j.reason = "Kryo class changed in the new jar: " + "; ".join(changed)
            j.aspects = dict.fromkeys(sv.ASPECTS, NOT_DECIDABLE)
        return j
    if d.verdict == sr.RESTORES and exp["verdict"] == sr.FAILS:
        changes = _declaration_changes(case)
        failing = {s.split("/", 1)[1] for s in d.depends_on_user_code if s.startswith(f"{exp['operator_id']}/")}
        if changes and any(c.split(":")[0] in failing for c in changes):
            j.reason = "declared in user code: " + "; ".join(changes)
            j.aspects = dict.fromkeys(sv.ASPECTS, NOT_DECIDABLE)
        return j
    for aspect, status in list(j.aspects.items()):
        if status != DISAGREE:
            continue
        if aspect == "failure_stage" and "failure_stage" in d.uncertain:
            reg = _registration(case, d.state_name)
            if reg == "lazy" and exp["failure_stage"] == sr.TASK_RUNNING:
                j.aspects[aspect] = NOT_DECIDABLE
                j.reason = f"state '{d.state_name}' first requested while processing records (registration: {reg})"
    return j


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict[str, Judged]:
    out = {}
    for case in CASES:
        folder = sv.unpack(case, tmp_path_factory.mktemp(case["case_id"]))
        ci = sv.inputs(case, folder)
        j = judge(case, ci, sv.decide(ci))
        j.rows = state_rows(case["case_id"], ci.saved)
        out[case["case_id"]] = j
    return out


def agreement_table(judged: dict[str, Judged]) -> str:
    """Per set and aspect: agree / not decidable (reason verified) / disagree; then the list."""
    lines = ["| set | cases | " + " | ".join(sv.ASPECTS) + " |", "|---" * (len(sv.ASPECTS) + 2) + "|"]
    for name in sv.SETS:
        js = [j for j in judged.values() if j.case["_set"] == name]
        cells = []
        for a in sv.ASPECTS:
            c = Counter(j.aspects[a] for j in js)
            cell = f"{c[AGREE]}/{len(js)}"
            if c[NOT_DECIDABLE]:
                cell += f" (+{c[NOT_DECIDABLE]} n.d.)"
            if c[DISAGREE]:
                cell += f" **{c[DISAGREE]} wrong**"
            cells.append(cell)
        lines.append(f"| {name} | {len(js)} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Not decidable (reason checked against the case):")
    for j in judged.values():
        if NOT_DECIDABLE in j.aspects.values():
            which = [a for a, s in j.aspects.items() if s == NOT_DECIDABLE]
            n = "all five" if len(which) == len(sv.ASPECTS) else ", ".join(which)
            lines.append(f"- {j.case['case_id']} ({n}): {j.reason}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
#  The 80 real restores
# ------------------------------------------------------------------------------------------------


def test_the_vectors_are_all_there():
    assert Counter(c["_set"] for c in CASES) == {sv.SETS[0]: 40, sv.SETS[1]: 40}


def test_cross_version_cases_change_nothing_but_the_version():
    """The reading of cross-set failures as KRYO_COLLECTION_ON_2X rests on this: v2 is v1's jar and
    main class, and its edits are topology edits (parallelism, names, a stateless operator)."""
    for c in CASES:
        if c["_set"] != sv.SETS[0]:
            continue
        assert c["v1_program"]["jar"] == c["v2_program"]["jar"]
        assert {e["type"] for e in c["edits"]} <= {"change_parallelism", "rename_op", "insert_stateless"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["case_id"])
def test_case_agrees_or_says_why_not(case, judged):
    j = judged[case["case_id"]]
    wrong = {a: (j.expected[a], j.got[a]) for a, s in j.aspects.items() if s == DISAGREE}
    assert not wrong, f"{case['case_id']}: {wrong}; uncertain: {j.decision.uncertain}"


def test_agreement_table(judged, capsys):
    table = agreement_table(judged)
    with capsys.disabled():
        print("\n" + table)
    undecided = [j for j in judged.values() if NOT_DECIDABLE in j.aspects.values()]
    assert len(undecided) <= 9, [j.case["case_id"] for j in undecided]
    assert all(j.reason for j in undecided)


def test_with_the_full_inputs_nothing_is_taken_as_unchanged(judged):
    """Every keyed operator has its key type from the spec, every user class its facts, every
    canonical savepoint its restoring backend: the verdicts rest on no silent assumption but the
    one about user-code declarations (listed per state in depends_on_user_code)."""
    for j in judged.values():
        assert j.decision.taken_as_unchanged == [], (j.case["case_id"], j.decision.taken_as_unchanged)
        assert j.decision.depends_on_user_code


def test_state_rows_cover_what_flink_read(judged):
    """savepoint_states: one row per state Flink read from each operator (union over subtasks)."""
    for j in judged.values():
        meta = j.case["savepoint"].get("meta_read_by_v2_flink") or j.case["savepoint"]["meta_read_by_v1_flink"]
        want = set()
        for op in meta["operators"]:
            for part in ("keyed", "operator"):
                for s in (op.get(part) or {}).get("states", []) + (op.get(part) or {}).get("broadcast_states", []):
                    want.add((op["operator_id"], s["name"]))
        got = {(r["operator_id"], r["state_name"]) for r in j.rows}
        assert want <= got, (j.case["case_id"], want - got)
        assert all(tuple(r) == STATE_COLUMNS for r in j.rows)


def test_state_rows_find_the_kryo_collections(judged):
    """The fleet query the upgrade needs: POJO fields and values Kryo holds as java.util collections."""
    for j in judged.values():
        for s in j.case["states_v1"]:
            row = next(r for r in j.rows if r["state_name"] == s["state_name"] and r["backend"] == s["backend"])
            vt = s["value_type"]
            if j.case["_set"] == sv.SETS[0] and vt == "POJO_COLL":
                assert row["pojo_collection_fields"] == [
                    "statetypes.user.PojoColl.counts",
                    "statetypes.user.PojoColl.tags",
                ]
                assert row["first_kryo_path"].endswith(".fields.counts")
            if j.case["_set"] == sv.SETS[0] and vt in ("LIST_HINT", "MAP_HINT"):
                assert row["uses_kryo"] and row["kryo_classes"][0] in ("java.util.List", "java.util.Map")
            if vt in ("LONG", "STRING", "TUPLE2", "ROW", "ENUM"):
                assert not row["uses_kryo"], row
            kind = s["state_kind"] if s["backend"] == "keyed" else {"LIST": "OPERATOR_LIST"}.get(s["state_kind"])
            assert row["state_kind"] == (kind or s["state_kind"])


def test_every_failure_has_advice(judged):
    for j in judged.values():
        for p in j.decision.problems:
            if p.verdict != sr.RESTORES:
                assert sf.advice_for(p), (j.case["case_id"], p.failure, p.cause)
        rows = fix_rows({"check_id": j.case["case_id"]}, j.decision.problems)
        assert all(set(FIX_COLUMNS) <= set(r) for r in rows)


# ------------------------------------------------------------------------------------------------
#  Hand-built trees
# ------------------------------------------------------------------------------------------------

B = "org.apache.flink.api.common.typeutils.base."


def simple(name: str) -> SnapshotNode:
    return SnapshotNode(f"{B}{name}Serializer${name}SerializerSnapshot", 3, "SIMPLE")


def kryo(cls: str) -> SnapshotNode:
    return SnapshotNode(KRYO, 2, "KRYO", cls)


def pojo(cls: str, **fields: SnapshotNode | None) -> SnapshotNode:
    return SnapshotNode(POJO, 2, "POJO", cls, fields=tuple(PojoField(n, cls, s) for n, s in fields.items()))


def enum(cls: str, *consts: str) -> SnapshotNode:
    return SnapshotNode(sr.ENUM, 3, "ENUM", cls, facts={"enum_constants": list(consts)})


def composite(cls: str, **nested: SnapshotNode) -> SnapshotNode:
    return SnapshotNode(cls, 1, "COMPOSITE", None, tuple(nested.items()))


def list_of(e: SnapshotNode) -> SnapshotNode:
    return composite(sr.LIST, element=e)


def map_of(k: SnapshotNode, v: SnapshotNode) -> SnapshotNode:
    return composite(sr.MAP, key=k, value=v)


VOID = SnapshotNode(
    "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot", 3, "SIMPLE"
)


def keyed_op(
    op_id: str, key: SnapshotNode, states: dict[str, tuple[str, SnapshotNode]], handle: str = "KeyGroupsStateHandle"
) -> OperatorStateTypes:
    infos = tuple(
        StateMetaInfo(n, "KEY_VALUE", {"KEYED_STATE_TYPE": k}, {"VALUE_SERIALIZER": v, "NAMESPACE_SERIALIZER": VOID}, 0)
        for n, (k, v) in states.items()
    )
    proxy = KeyedProxy(6, False, len(infos), 0, None, key_serializer=key, states=infos)
    return OperatorStateTypes(op_id, None, None, keyed=[SubtaskProxy("managed_keyed", 0, handle, "inline", proxy)])


def operator_op(op_id: str, states: dict[str, SnapshotNode], mode: str = "SPLIT_DISTRIBUTE") -> OperatorStateTypes:
    infos = tuple(
        StateMetaInfo(n, "OPERATOR", {"OPERATOR_STATE_DISTRIBUTION_MODE": mode}, {"VALUE_SERIALIZER": v}, 0)
        for n, v in states.items()
    )
    proxy = OperatorProxy(6, False, len(infos), 0, None, states=infos)
    sub = SubtaskProxy("managed_operator", 0, "OperatorStreamStateHandle", "inline", proxy)
    return OperatorStateTypes(op_id, None, None, operator=[sub])


A, C = "a" * 32, "c" * 32
CTX23 = sr.StateContext(2, 2, "rocksdb")
CTX_UP = sr.StateContext(1, 2, "rocksdb")


def facts(name: str, kind: str, fields: dict[str, str] | None = None, consts: list[str] | None = None):
    raw = {
        "kind": kind,
        "fields": [{"name": n, "type": t} for n, t in (fields or {}).items()],
        "enum_constants": consts,
    }
    return {name: sr.ClassFacts.from_dict(name, raw)}


def test_compatibility_follows_flinks_snapshots():
    assert sr.compatibility(simple("Long"), simple("Long")).result == sr.AS_IS
    c = sr.compatibility(simple("String"), simple("Long"), "key")
    assert c.incompatible and c.path == "key"
    old = pojo("x.P", a=simple("Long"), b=simple("String"))
    assert sr.compatibility(pojo("x.P", a=simple("Long"), b=simple("String"), c=simple("Int")), old).result == (
        sr.AFTER_MIGRATION
    )
    assert sr.compatibility(pojo("x.P", a=simple("Long")), old).result == sr.AFTER_MIGRATION
    c = sr.compatibility(list_of(pojo("x.P", a=simple("Long"), b=simple("Double"))), list_of(old))
    assert c.incompatible and c.path == "value.element.fields.b"
    assert sr.compatibility(pojo("x.Q", a=simple("Long")), pojo("x.P", a=simple("Long"))).incompatible
    assert sr.compatibility(enum("x.E", "B", "A"), enum("x.E", "A", "B")).result == sr.RECONFIGURED
    assert sr.compatibility(kryo("x.G"), kryo("x.G")).result == sr.AS_IS
    assert sr.compatibility(kryo("x.H"), kryo("x.G")).incompatible
    assert sr.compatibility(None, simple("Long")).result == sr.UNKNOWN
    # a predicted collection whose element type is unknown: the element is unknown, not incompatible
    two_x = sr.node_for_java_type("List<x.Unknown>", 2, {})
    saved = composite(sr.NULLABLE, original=list_of(composite(sr.NULLABLE, original=pojo("x.Unknown"))))
    assert sr.compatibility(two_x, saved).result == sr.UNKNOWN


def test_prediction_moves_kryo_collections_on_2x_only():
    p = sr.predict_new(kryo("java.util.List"), CTX_UP, {})
    assert p.node is not None and p.node.class_name == sr.NULLABLE and p.causes == [("value", sr.KRYO_COLLECTION_ON_2X)]
    assert sr.predict_new(kryo("java.util.List"), CTX23, {}).node == kryo("java.util.List")
    assert sr.predict_new(kryo("java.util.ArrayList"), CTX_UP, {}).causes == []  # a class, not an interface
    old = pojo("x.P", id=simple("Long"), tags=kryo("java.util.List"))
    p = sr.predict_new(old, CTX_UP, {})
    assert dict((f.name, f.snapshot.class_name) for f in p.node.fields)["tags"] == sr.NULLABLE
    assert sr.compatibility(p.node, old).path == "value.fields.tags"
    # with facts the field's declared type decides: a raw List stays in Kryo
    raw = facts("x.P", "pojo", {"id": "long", "tags": "List"})
    assert sr.compatibility(sr.predict_new(old, CTX_UP, raw).node, old).result == sr.AS_IS
    typed = facts("x.P", "pojo", {"id": "long", "tags": "List<String>"})
    assert sr.compatibility(sr.predict_new(old, CTX_UP, typed).node, old).incompatible


def test_prediction_follows_class_facts():
    old = pojo("x.P", a=simple("Long"))
    assert sr.predict_new(old, CTX23, facts("x.P", "generic")).node.class_name == KRYO
    assert sr.predict_new(kryo("x.G"), CTX23, facts("x.G", "pojo", {"x": "long"})).node.kind == "POJO"
    p = sr.predict_new(old, CTX23, facts("x.P", "pojo", {"a": "long", "b": "String"}))
    assert sr.compatibility(p.node, old).result == sr.AFTER_MIGRATION
    p = sr.predict_new(old, CTX23, facts("x.P", "pojo", {"a": "String"}))
    assert p.causes == [("value.fields.a", "POJO_FIELD_RETYPED")] and sr.compatibility(p.node, old).incompatible
    p = sr.predict_new(old, CTX23, facts("x.P", "pojo", {"a": "x.Unknown"}))
    assert p.unknown and sr.compatibility(p.node, old).result == sr.UNKNOWN


def test_serializers_print_as_flink_prints_them():
    assert sr.serializer_display(simple("Long")) == f"{B}LongSerializer@<hash>"
    assert sr.serializer_display(list_of(simple("Long"))) == f"{B}ListSerializer@<hash>"
    assert sr.serializer_display(kryo("x")) == "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer@<hash>"
    assert sr.serializer_display(enum("x.Color", "RED", "GREEN")) == (
        "EnumSerializer{enumClass=class x.Color, values=[RED, GREEN]}"
    )
    assert sr.serializer_class("org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot") == (
        "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializer"
    )
    assert sr.serializer_class("org.apache.flink.api.java.typeutils.runtime.PojoSerializerSnapshot").endswith(
        "runtime.PojoSerializer"
    )


def test_key_type_change_fails_at_restore_with_flinks_message():
    ops = {A: keyed_op(A, simple("Long"), {"v": ("VALUE", simple("Long"))})}
    new = {A: sr.NewOperator(A, key_serializer=simple("String"))}
    d = sr.decide_states(ops, new, CTX23)
    assert (d.verdict, d.failure, d.failure_stage) == (sr.FAILS, sr.KEY_SERIALIZER_INCOMPATIBLE, sr.TASK_RESTORE)
    assert d.message == (
        f"The new key serializer ({B}StringSerializer@<hash>) must be compatible with the previous key serializer "
        f"({B}LongSerializer@<hash>)."
    )
    # a key POJO that gained a field needs migration, which keys do not get
    key = pojo("x.K", id=simple("Long"))
    ops = {A: keyed_op(A, key, {})}
    d = sr.decide_states(
        ops, {A: sr.NewOperator(A, key_serializer=pojo("x.K", id=simple("Long"), t=simple("Int")))}, CTX23
    )
    assert d.failure == sr.KEY_SERIALIZER_INCOMPATIBLE
    # no key type in the spec: the key class's facts predict it; nothing known: assumed unchanged
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, CTX23, facts("x.K", "pojo", {"id": "long", "t": "int"}))
    assert d.failure == sr.KEY_SERIALIZER_INCOMPATIBLE and "class_facts" in d.reported.basis
    assert sr.decide_states(ops, {A: sr.NewOperator(A)}, CTX23).verdict == sr.RESTORES


def test_restore_failures_come_before_registration_and_tail_before_head():
    p_old = pojo("x.P", c=simple("Double"))
    ops = {
        A: keyed_op(A, simple("Long"), {"first": ("VALUE", kryo("x.G")), "second": ("VALUE", p_old)}),
    }
    classes = {**facts("x.P", "pojo", {"c": "String"}), **facts("x.G", "pojo", {"x": "long"})}
    heap = sr.StateContext(2, 2, "hashmap")
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, heap, classes, facts("x.P", "pojo", {"c": "double"}))
    # 'first' (Kryo -> POJO) fails only at registration; 'second' fails while the heap reads values back
    assert (d.state_name, d.failure) == ("second", sr.STATE_READ_FAILED)
    assert d.message == "Can not set java.lang.String field x.P.c to java.lang.Double"
    assert [p.state_name for p in d.problems if p.verdict == sr.FAILS] == ["second", "first"]
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, CTX23, classes)
    assert (d.state_name, d.failure) == ("first", sr.STATE_SERIALIZER_INCOMPATIBLE)
    assert d.message.startswith("The new state serializer (org.apache.flink.api.java.typeutils.runtime.PojoSerializer")
    # two operators of one chain: the tail (higher chain index) restores first
    ops = {A: keyed_op(A, simple("Long"), {}), C: keyed_op(C, simple("Long"), {})}
    new = {
        A: sr.NewOperator(A, "v", chain_index=0, key_serializer=simple("String")),
        C: sr.NewOperator(C, "v", chain_index=1, key_serializer=simple("Int")),
    }
    assert sr.decide_states(ops, new, CTX23).operator_id == C
    new[C] = sr.NewOperator(C, "w", chain_index=1, vertex_order=1, key_serializer=simple("Int"))
    d = sr.decide_states(ops, new, CTX23)
    assert d.operator_id == A and "reported" in d.uncertain  # different tasks race
    # both tasks fail the same way (same key serializer change): only which operator is named is open
    new[C] = sr.NewOperator(C, "w", chain_index=1, vertex_order=1, key_serializer=simple("String"))
    new[A] = sr.NewOperator(A, "v", chain_index=0, key_serializer=simple("String"))
    d = sr.decide_states(ops, new, CTX23)
    assert d.failure == sr.KEY_SERIALIZER_INCOMPATIBLE and set(d.uncertain) == {"operator_id"}


def test_upgrade_rules_by_backend_and_format():
    states = {"tags": ("VALUE", kryo("java.util.List")), "n": ("VALUE", simple("Long"))}
    native_heap = {A: keyed_op(A, simple("Long"), states, "KeyGroupsStateHandle")}
    d = sr.decide_states(native_heap, {A: sr.NewOperator(A)}, sr.StateContext(1, 2))
    assert (d.failure, d.error_class) == (sr.KRYO_COLLECTION_ON_2X, "java.lang.NullPointerException")
    # the key group's write order is a HashMap order (StateUID's hash holds an enum's identity hash):
    # whether the misread state is written last, and the read ends without an error, is not known
    # (1.20 -> 2.3 s31 00055, 00081, 00125 failed at registration, 00047, 00062, 00146 with the NPE)
    # (and what the misaligned read throws: 1.20 -> 2.0 s31 00146 an NPE without a message)
    assert set(d.uncertain) == {"failure", "message", "failure_stage"}
    later = {A: keyed_op(A, simple("Long"), {"n": states["n"], "tags": states["tags"]}, "KeyGroupsStateHandle")}
    assert "message" in sr.decide_states(later, {A: sr.NewOperator(A)}, sr.StateContext(1, 2)).uncertain
    alone = {A: keyed_op(A, simple("Long"), {"tags": states["tags"]}, "KeyGroupsStateHandle")}
    assert "message" in sr.decide_states(alone, {A: sr.NewOperator(A)}, sr.StateContext(1, 2)).uncertain
    canonical = {A: keyed_op(A, simple("Long"), states, "KeyGroupsSavepointStateHandle")}
    d = sr.decide_states(canonical, {A: sr.NewOperator(A)}, sr.StateContext(1, 2, "hashmap"))
    assert d.message.startswith("For heap backends, the new state serializer (org.apache.flink.api.java.typeutils")
    d = sr.decide_states(canonical, {A: sr.NewOperator(A)}, sr.StateContext(1, 2))
    assert d.message.startswith("The new state serializer") and "message" in d.uncertain  # backend unknown
    rocks = {A: keyed_op(A, simple("Long"), states, "IncrementalRemoteKeyedStateHandle")}
    d = sr.decide_states(rocks, {A: sr.NewOperator(A)}, sr.StateContext(1, 2))
    assert d.message == (
        "The new state serializer (org.apache.flink.api.java.typeutils.runtime.NullableSerializer@<hash>) must not be "
        "incompatible with the old state serializer (org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer"
        "@<hash>)."
    )
    assert d.failure_stage == sr.TASK_RESTORE and "failure_stage" in d.uncertain
    assert sr.decide_states(rocks, {A: sr.NewOperator(A)}, CTX23).verdict == sr.RESTORES  # 2.x -> 2.x


def test_kryo_classes_across_majors_need_facts():
    ops = {A: keyed_op(A, simple("Long"), {"g": ("VALUE", kryo("x.G"))}, "IncrementalRemoteKeyedStateHandle")}
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, CTX_UP)
    assert d.verdict == sr.NOT_DECIDABLE and d.problems[0].failure == sr.KRYO2_VALUES_ON_KRYO5
    plain = facts("x.G", "generic", {"x": "long", "y": "String"})
    assert sr.decide_states(ops, {A: sr.NewOperator(A)}, CTX_UP, plain).verdict == sr.RESTORES
    nested = facts("x.G", "generic", {"x": "long", "ys": "List<String>"})
    assert sr.decide_states(ops, {A: sr.NewOperator(A)}, CTX_UP, nested).verdict == sr.NOT_DECIDABLE
    # within 2.x: a Kryo class whose fields changed between the jars is not decidable
    old = facts("x.G", "generic", {"x": "long"})
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, CTX23, plain, old)
    assert d.verdict == sr.NOT_DECIDABLE and d.problems[0].failure == sr.KRYO_CLASS_CHANGED


def test_enum_constant_removed_fails_reading_the_snapshot():
    ops = {A: keyed_op(A, simple("Long"), {"m": ("MAP", map_of(simple("String"), enum("x.E", "A", "B")))})}
    d = sr.decide_states(
        ops, {A: sr.NewOperator(A, key_serializer=simple("String"))}, CTX23, facts("x.E", "enum", consts=["A"])
    )
    # the proxy is read before the key serializer is compared
    assert (d.failure, d.reported.field_path) == (sr.ENUM_CONSTANT_REMOVED, "value.value")
    assert (
        d.message
        == "Could not create a restore serializer for enum class x.E. Probably because an enum value was removed."
    )
    assert sr.decide_states(
        ops, {A: sr.NewOperator(A)}, CTX23, facts("x.E", "enum", consts=["B", "A", "C"])
    ).verdict == (sr.RESTORES)
    op_enum = {A: operator_op(A, {"buf": enum("x.E", "A", "B")})}
    assert sr.decide_states(op_enum, {A: sr.NewOperator(A)}, CTX23, facts("x.E", "enum", consts=["B"])).failure == (
        sr.ENUM_CONSTANT_REMOVED
    )


def test_operator_state_and_map_keys():
    ops = {A: operator_op(A, {"buf": kryo("x.G")})}
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, CTX23, facts("x.G", "pojo", {"x": "long"}))
    assert d.message == "The new state typeSerializer for operator state must not be incompatible."
    key = pojo("x.K", id=simple("Long"))
    ops = {
        A: keyed_op(A, simple("Long"), {"m": ("MAP", map_of(key, simple("Long")))}, "IncrementalRemoteKeyedStateHandle")
    }
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, CTX23, facts("x.K", "pojo", {"id": "long", "t": "int"}))
    assert d.failure == sr.MAP_KEY_SCHEMA_CHANGED and d.message.startswith("The new serializer for a MapState")
    heap = {A: keyed_op(A, simple("Long"), {"m": ("MAP", map_of(key, simple("Long")))})}
    assert (
        sr.decide_states(
            heap,
            {A: sr.NewOperator(A)},
            sr.StateContext(2, 2, "hashmap"),
            facts("x.K", "pojo", {"id": "long", "t": "int"}),
        ).verdict
        == sr.RESTORES
    )


def test_unreadable_state_is_not_decidable():
    unknown = SnapshotNode("com.acme.MySerializerSnapshot", 1, "UNKNOWN", complete=False)
    info = StateMetaInfo("s", "KEY_VALUE", {"KEYED_STATE_TYPE": "VALUE"}, {"VALUE_SERIALIZER": unknown}, 0, False)
    proxy = KeyedProxy(6, False, 1, 0, "state 's' VALUE_SERIALIZER: an unknown ...", simple("Long"), (info,))
    op = OperatorStateTypes(A, None, None, keyed=[SubtaskProxy("managed_keyed", 0, "KeyGroupsStateHandle", "x", proxy)])
    d = sr.decide_states({A: op}, {A: sr.NewOperator(A)}, CTX23)
    assert d.verdict == sr.NOT_DECIDABLE and d.problems[0].failure == sr.STATE_UNREADABLE
    row = state_rows("sp", {A: op})[0]
    assert row["unreadable_reason"] == "VALUE_SERIALIZER: unknown snapshot class com.acme.MySerializerSnapshot"


def test_the_key_serializer_spec_field_decodes_flinks_bytes(judged, tmp_path):
    """state_key_serializer_snapshot = base64(writeSerializerSnapshot): the bytes a keyed backend
    writes right after its proxy's version and compression flag; sliced from real savepoints."""
    from udfs.savepoint.metadata import parse_metadata

    seen = 0
    for case in CASES:
        if case["runtime"]["inline_threshold"] != "1mb" or seen >= 6:
            continue
        folder = sv.unpack(case, tmp_path / case["case_id"])
        md = parse_metadata((folder / "_metadata").read_bytes())
        for op in md.operators:
            for s in op.state_streams:
                if s.kind != "managed_keyed" or s.ref.location != "inline" or "Incremental" in s.handle:
                    continue
                from udfs.savepoint.state_meta import read_keyed_proxy

                proxy = read_keyed_proxy(s.ref.data)
                raw = bytes(s.ref.data[5 : proxy.key_serializer.end])
                node = sr.key_serializer_from_spec(base64.b64encode(raw).decode())
                assert node.to_dict() == proxy.key_serializer.to_dict()
                n = sr.NewOperator.from_rows(
                    {"operator_id": op.operator_id, "jobvertex_id": "j", "chain_index": 2},
                    {"id": 3, "name": "x", sr.KEY_SERIALIZER_FIELD: base64.b64encode(raw).decode()},
                )
                assert n.key_serializer == node and n.chain_index == 2
                seen += 1
                break
    assert seen >= 3
    with pytest.raises(ValueError):
        sr.key_serializer_from_spec("not base64!")
    bad = sr.NewOperator.from_rows(
        {"operator_id": A}, {"id": 1, sr.KEY_SERIALIZER_FIELD: base64.b64encode(b"\0\0").decode()}
    )
    assert bad.key_serializer is None and bad.key_serializer_error


def test_missing_inputs_are_named():
    key = pojo("x.K", id=simple("Long"))
    ops = {A: keyed_op(A, key, {"v": ("VALUE", pojo("x.P", a=simple("Long")))}, "KeyGroupsSavepointStateHandle")}
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, sr.StateContext(2, 2))
    assert d.verdict == sr.RESTORES
    assert d.taken_as_unchanged == ["class x.P", "class x.K", f"backend of {A}", f"key of {A}"]
    assert d.depends_on_user_code == [f"{A}/v"]
    d = sr.decide_states(
        ops,
        {A: sr.NewOperator(A, key_serializer=key)},
        sr.StateContext(2, 2, "rocksdb"),
        {**facts("x.P", "pojo", {"a": "long"}), **facts("x.K", "pojo", {"id": "long"})},
    )
    assert d.taken_as_unchanged == []


def test_one_restore_checks_row_for_both_halves():
    head = {"check_id": "c", "savepoint": "sp", "graph_id": "g"}
    ops = {A: keyed_op(A, simple("Long"), {})}
    failing = sr.decide_states(ops, {A: sr.NewOperator(A, key_serializer=simple("Int"))}, CTX23)
    row = restore_check_row(head, sr.RESTORES, None, None, None, [], failing)
    assert (row["verdict"], row["failure"], row["operator_id"], row["failure_stage"]) == (
        sr.FAILS,
        sr.KEY_SERIALIZER_INCOMPATIBLE,
        A,
        sr.TASK_RESTORE,
    )
    assert set(CHECK_EXTRA_COLUMNS) <= set(row) and row["decidable"]
    # the JobMaster's checks come first
    row = restore_check_row(head, sr.FAILS, "UNMAPPED_STATE", C, "Failed to rollback", [], failing)
    assert (row["failure"], row["failure_stage"]) == ("UNMAPPED_STATE", sr.JOB_INIT)
    undecided = sr.decide_states(
        {A: keyed_op(A, simple("Long"), {"g": ("VALUE", kryo("x.G"))})},
        {A: sr.NewOperator(A)},
        sr.StateContext(1, 2, "hashmap"),
    )
    row = restore_check_row(head, sr.RESTORES, None, None, None, [], undecided)
    assert row["verdict"] == sr.RESTORES and row["decidable"] is False
    assert row["undecidable_reasons"][0].startswith(sr.KRYO2_VALUES_ON_KRYO5)


def test_lines():
    assert sr.savepoint_major(4) == 1 and sr.savepoint_major(6) == 2 and sr.savepoint_major(5, "1.20") == 1
    assert sr.line_major("2.3.0") == 2 and sr.line_major(None) is None


def test_advice_texts():
    p = sr.StateProblem(
        sr.FAILS, sr.KRYO_COLLECTION_ON_2X, A, "tags", cause=sr.KRYO_COLLECTION_ON_2X, field_path="value"
    )
    codes = [a.code for a in sf.advice_for(p)]
    assert codes == ["REWRITE_ON_1X_WITH_EXPLICIT_TYPES", "DROP_STATE"]
    assert all(a.needs_real_restore for a in sf.advice_for(p))
    rows = fix_rows({"check_id": "c"}, [p])
    assert rows[0]["reasons"] == [sr.KRYO_COLLECTION_ON_2X] and rows[0]["patch_field"] is None
    assert set(sf.NOT_FIXES) >= {"KEEP_KRYO_ON_2X", "TYPE_HINT_OR_TYPES_LIST_ON_2X"}


def test_the_spec_backend_names_flinks_backends():
    """StateBackendLoader.loadStateBackendFromConfig (1.13 - 2.x): ``hashmap``; the deprecated
    ``jobmanager`` (MemoryStateBackend) and ``filesystem`` (HashMapStateBackend since 1.13) are heap
    backends too (HeapKeyedStateBackend restores them all); ``rocksdb`` (EmbeddedRocksDBStateBackend);
    a backend the rules do not model (ForSt, a custom factory) counts as not configured."""
    assert [sr.backend_family(n) for n in ("hashmap", "HashMap", "jobmanager", "filesystem")] == ["hashmap"] * 4
    assert sr.backend_family("org.apache.flink.runtime.state.hashmap.HashMapStateBackendFactory") == "hashmap"
    assert sr.backend_family("rocksdb") == "rocksdb"
    assert sr.backend_family("org.apache.flink.contrib.streaming.state.EmbeddedRocksDBStateBackend") == "rocksdb"
    assert [sr.backend_family(n) for n in ("forst", "com.acme.MyBackendFactory", None, "")] == [None] * 4


def test_a_1x_kryo_serializer_instance_cannot_be_read_on_2x():
    """KryoSerializerSnapshot.restoreSerializer (2.x) unwraps the snapshot's LinkedOptionalMaps
    (default serializers, then registrations): LinkedOptionalMap.unwrapOptionals throws
    ``IllegalStateException: Missing value for the key '<key>'`` for an entry whose value did not
    read. 1.x writes a registered serializer instance Java-serialized as
    ``org.apache.flink.api.common.ExecutionConfig$SerializableSerializer``, a class 2.x no longer has
    (it is ``org.apache.flink.api.common.SerializableSerializer`` there), so a 1.x job with flink-avro
    (which registers GenericData$Array with one) fails while the keyed backend is built, before the
    heap read-back and before any registration: conformance/statetypes' 1.20 -> 2.3 cases 00008
    (RocksDB), 00040 and 00058 (HashMap NATIVE), 00042 and 00056 (HashMap CANONICAL) fail so."""
    avro_reg = {"class": "org.apache.avro.generic.GenericData$Array", "type": "INSTANCE",
                "serializer": sr.SERIALIZABLE_SERIALIZER_1X}  # fmt: skip
    tags = SnapshotNode(KRYO, 2, "KRYO", "java.util.List", facts={"kryo_registrations": [avro_reg]})
    for handle in ("KeyGroupsStateHandle", "KeyGroupsSavepointStateHandle", "IncrementalRemoteKeyedStateHandle"):
        ops = {A: keyed_op(A, simple("Long"), {"n": ("VALUE", simple("Long")), "tags": ("VALUE", tags)}, handle)}
        d = sr.decide_states(ops, {A: sr.NewOperator(A)}, sr.StateContext(1, 2))
        assert (d.failure, d.state_name, d.failure_stage) == (sr.SNAPSHOT_CLASS_GONE, "tags", sr.TASK_RESTORE)
        assert (d.error_class, d.message) == (
            "java.lang.IllegalStateException",
            "Missing value for the key 'org.apache.avro.generic.GenericData$Array'",
        )
        assert sf.advice_for(d.reported)[0].code == "REWRITE_KRYO_STATE_ON_1X"
        # the same savepoint within 1.x (or 2.x -> 2.x) reads it: only the Kryo collection rule may apply
        assert sr.decide_states(ops, {A: sr.NewOperator(A)}, sr.StateContext(1, 1)).verdict == sr.RESTORES
    ops = {A: operator_op(A, {"buf": list_of(tags)})}
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, sr.StateContext(1, 2))
    assert (d.failure, d.state_name) == (sr.SNAPSHOT_CLASS_GONE, "buf")


def test_a_pojo_with_a_kryo_collection_field_misreads_on_heap_across_majors():
    """PojoSerializer.deserialize reads a null flag, then the value, per field in the snapshot's
    order. On 2.x Kryo 5 reads the Kryo 2 bytes of a java.util collection field differently, the
    next field's null flag comes from the wrong byte, and a primitive field gets null: Field.set
    throws ``IllegalArgumentException: Can not set long field <cls>.id to null value``. Every heap
    backend reads values back at restore (NATIVE and CANONICAL), and the operator backend always
    does: conformance/statetypes 1.20 -> 2.3 / 2.0 and 1.15 -> 2.3 cases 00015 (operator state),
    00018 (NATIVE), 00021 and 00046 (CANONICAL) failed exactly so, 10 of 10. RocksDB reads no value:
    the registration check decides, as before."""
    coll = pojo("x.PC", counts=kryo("java.util.Map"), id=simple("Long"), tags=kryo("java.util.List"))
    old = facts("x.PC", "pojo", {"counts": "Map<String, Long>", "id": "long", "tags": "List<String>"})
    want = "Can not set long field x.PC.id to null value"
    for handle in ("KeyGroupsStateHandle", "KeyGroupsSavepointStateHandle"):
        ops = {A: keyed_op(A, simple("Long"), {"v": ("VALUE", coll)}, handle)}
        d = sr.decide_states(ops, {A: sr.NewOperator(A)}, sr.StateContext(1, 2, "hashmap"), old, old)
        assert (d.failure, d.error_class, d.message) == (
            sr.KRYO_COLLECTION_ON_2X,
            "java.lang.IllegalArgumentException",
            want,
        )
        # the saved values decide whether Kryo 5 misreads them (1.20 -> 2.3 s31 00075 read them back)
        assert d.reported.field_path == "value.fields.counts" and set(d.uncertain) == {"message"}
    ops = {A: operator_op(A, {"buf": list_of(coll)})}
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, sr.StateContext(1, 2, "hashmap"), old, old)
    assert (d.failure, d.message, d.reported.field_path) == (
        sr.KRYO_COLLECTION_ON_2X,
        want,
        "value.element.fields.counts",
    )
    rocks = {A: keyed_op(A, simple("Long"), {"v": ("VALUE", coll)}, "IncrementalRemoteKeyedStateHandle")}
    d = sr.decide_states(rocks, {A: sr.NewOperator(A)}, sr.StateContext(1, 2, "rocksdb"), old, old)
    assert d.message.startswith("The new state serializer (org.apache.flink.api.java.typeutils.runtime.PojoSerializer")
    # without facts the next field's Java type is unknown: the failure stands, the message is left open
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, sr.StateContext(1, 2, "hashmap"))
    assert d.failure == sr.KRYO_COLLECTION_ON_2X and d.message is None and "message" in d.uncertain


def test_a_snapshot_class_of_a_module_the_new_class_path_lacks():
    """Every saved snapshot of a restored operator is read with the new job's class loader
    (TypeSerializerSnapshot.readVersionedSnapshot -> InstantiationUtil.resolveClassByName), used by
    the new job or not: a job that dropped its Avro state, and flink-avro with it, fails reading the
    keyed proxy (``ClassNotFoundException: ...AvroSerializerSnapshot``; conformance/statetypes
    00010 / 00061 of the seed-21 sets, every line). Decided from the graph field
    ``serializer_modules``; without it the module is taken as present and the row says so."""
    avro = "org.apache.flink.formats.avro.typeutils.AvroSerializerSnapshot"
    rec = SnapshotNode(avro, 2, "AVRO", "org.apache.avro.generic.GenericRecord")
    ops = {A: keyed_op(A, simple("Long"), {"n": ("VALUE", simple("Long")), "rec": ("VALUE", rec)})}
    ctx = sr.StateContext(2, 2, "rocksdb", {"flink-avro": False})
    d = sr.decide_states(ops, {A: sr.NewOperator(A)}, ctx)
    assert (d.verdict, d.failure, d.operator_id, d.state_name) == (sr.FAILS, sr.SNAPSHOT_CLASS_GONE, A, "rec")
    assert (d.error_class, d.message, d.failure_stage) == ("java.lang.ClassNotFoundException", avro, sr.TASK_RESTORE)
    assert sf.advice_for(d.reported)[0].code == "BUNDLE_MODULE"
    # in a list, in operator state: the same, from the operator backend's proxy
    d = sr.decide_states({A: operator_op(A, {"buf": list_of(rec)})}, {A: sr.NewOperator(A)}, ctx)
    assert (d.failure, d.state_name, d.message) == (sr.SNAPSHOT_CLASS_GONE, "buf", avro)
    present = sr.decide_states(ops, {A: sr.NewOperator(A)}, sr.StateContext(2, 2, "rocksdb", {"flink-avro": True}))
    assert present.verdict == sr.RESTORES and "module flink-avro" not in present.taken_as_unchanged
    unknown = sr.decide_states(ops, {A: sr.NewOperator(A)}, sr.StateContext(2, 2, "rocksdb"))
    assert unknown.verdict == sr.RESTORES and "module flink-avro" in unknown.taken_as_unchanged
    # the 1.x Scala API has no 2.x release
    scala = SnapshotNode("org.apache.flink.api.scala.typeutils.ScalaCaseClassSerializerSnapshot", 2, "COMPOSITE", "x.C")
    ops = {A: keyed_op(A, simple("Long"), {"c": ("VALUE", scala)})}
    assert sr.decide_states(ops, {A: sr.NewOperator(A)}, sr.StateContext(1, 2)).failure == sr.SNAPSHOT_CLASS_GONE
    assert sr.decide_states(ops, {A: sr.NewOperator(A)}, sr.StateContext(1, 1)).verdict == sr.RESTORES
