"""The statetypes vectors as inputs of the state rules, and Flink's recorded outcome in their terms.

Shared by tests/test_state_rules.py (and usable from a shell): per case, what the product would
have before deploying -- the savepoint itself, the new job's topology (the project's own
computation of the v2 spec), the new key serializer snapshot the exporter would write
(``declared_types_v2``' key serializer tree, built into a SnapshotNode here), class facts of
the user classes the case's states name (``states_v1`` / ``states_v2`` class definitions) --
and what Flink did, read as (verdict, failure kind, operator, message, failure stage).
"""

from __future__ import annotations

import gzip
import json
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from udfs.restore import rules as rr
from udfs.restore import state_rules as sr
from udfs.restore.state_value_reads import values_from_files
from udfs.savepoint.metadata import parse_metadata
from udfs.savepoint.serializer_snapshots import REGISTRY, PojoField, SnapshotNode
from udfs.savepoint.state_meta import OperatorStateTypes, decode_operator_states, local_file_reader

ROOT = Path(__file__).resolve().parent.parent
STATETYPES = ROOT.parent / "shared" / "vectors" / "statetypes"
SETS = ("statetypes-1.20to2.3-s11", "statetypes-2.3-s11")
PROFILE = ROOT / "conf" / "profiles" / "2.3.json"
ASPECTS = ("verdict", "failure", "operator_id", "message", "failure_stage")


def read_cases() -> list[dict[str, Any]]:
    out = []
    for name in SETS:
        with gzip.open(STATETYPES / f"{name}.jsonl.gz", "rt") as f:
            out += [dict(json.loads(line), _set=name) for line in f]
    return out


def unpack(case: dict[str, Any], dest: Path) -> Path:
    sp = case["savepoint"]
    with tarfile.open(STATETYPES / case["_set"] / sp["archive"]) as tar:
        tar.extractall(dest, filter="data")
    return dest / sp["dir_name"]


# ------------------------------------------------------------------------------------------------
#  Inputs the product would have
# ------------------------------------------------------------------------------------------------

_ROLES = {
    "org.apache.flink.api.common.typeutils.base.ListSerializerSnapshot": ("element",),
    "org.apache.flink.api.common.typeutils.base.MapSerializerSnapshot": ("key", "value"),
    "org.apache.flink.api.java.typeutils.runtime.NullableSerializer$NullableSerializerSnapshot": ("original",),
}


def node_from_dict(d: dict[str, Any]) -> SnapshotNode:
    """A vectors' serializer tree (``{class, type_class?, nested?, fields?, enum_constants?}``,
    the shape of ``SnapshotNode.to_dict``) as the SnapshotNode the exporter's bytes decode to."""
    cls = d["class"]
    spec = REGISTRY.get(cls)
    kind = spec.kind if spec is not None else "UNKNOWN"
    roles = _ROLES.get(cls)
    nested = []
    for i, n in enumerate(d.get("nested") or []):
        role = roles[i] if roles and i < len(roles) else (f"f{i}" if "Tuple" in cls or "Row" in cls else str(i))
        nested.append((role, node_from_dict(n)))
    fields = tuple(
        PojoField(f["name"], d.get("type_class"), node_from_dict(f["serializer"]) if f.get("serializer") else None)
        for f in d.get("fields") or []
    )
    facts: dict[str, Any] = {}
    if "enum_constants" in d:
        facts["enum_constants"] = list(d["enum_constants"])
    if cls.endswith("NullableSerializer$NullableSerializerSnapshot"):
        facts["null_padding_length"] = 0
    return SnapshotNode(cls, 0, kind, d.get("type_class"), tuple(nested), fields, facts)


def class_facts(case: dict[str, Any], side: str) -> dict[str, sr.ClassFacts]:
    """Facts of the classes the case's states name, from ``states_v1`` / ``states_v2``."""
    out: dict[str, sr.ClassFacts] = {}
    for s in case[f"states_{side}"]:
        for key in ("value_class_def", "key_class_def"):
            d = s.get(key)
            if not d:
                continue
            raw = {
                "kind": d["kind"],
                "fields": [{"name": n, "type": t} for t, n in d.get("fields") or []],
                "enum_constants": d.get("constants"),
            }
            out[d["name"]] = sr.ClassFacts.from_dict(d["name"], raw)
    return out


def _operator_key(node: dict[str, Any]) -> str:
    return node["uid"] if node.get("uid") else "#" + node["name"]


@dataclass
class CaseInputs:
    saved: dict[str, OperatorStateTypes]
    order: list[str]
    matched: dict[str, sr.NewOperator]
    ctx: sr.StateContext
    new_classes: dict[str, sr.ClassFacts]
    old_classes: dict[str, sr.ClassFacts]
    topology: rr.Decision
    new_names: dict[str, str] = field(default_factory=dict)  # saved operator id -> new operator name
    format_version: int = 0
    metadata: Any = None  # the parsed _metadata, and the folder its state files are in: for value reads
    folder: Path | None = None


def inputs(case: dict[str, Any], folder: Path) -> CaseInputs:
    from udfs.compute.one_graph import compute_one

    md = parse_metadata((folder / "_metadata").read_bytes())
    saved = decode_operator_states(md, local_file_reader(folder))
    nodes, ops, vertices, _ = compute_one(case["v2"])
    profile = rr.RestoreProfile.for_line(case["v2"].get("flink_version")) or rr.RestoreProfile.from_dict(
        json.loads(PROFILE.read_text())["restore"]
    )
    topology = rr.decide(
        [rr.SavedOperator.from_dict(vars(o)) for o in md.operators],
        [rr.NewVertex.from_dict(r) for r in vertices.to_dict("records")],
        False,
        profile,
        "<savepoint>",
    )
    spec_nodes = {n["id"]: n for n in case["v2"]["nodes"]}
    by_op = {r["operator_id"]: r for r in ops.to_dict("records")}
    vorder = {r["jobvertex_id"]: int(r["vertex_order"]) for r in vertices.to_dict("records")}
    vpar = {r["jobvertex_id"]: int(r["parallelism"]) for r in vertices.to_dict("records")}
    declared = case["declared_types_v2"]
    matched: dict[str, sr.NewOperator] = {}
    names: dict[str, str] = {}
    for o in topology.operators:
        if o.status != rr.MATCHED or o.generated_operator_id is None:
            continue
        row = by_op[o.generated_operator_id]
        node = spec_nodes[int(row["node_id"])]
        key_tree = (declared.get(_operator_key(node)) or {}).get("key")
        matched[o.operator_id] = sr.NewOperator(
            operator_id=o.generated_operator_id,
            jobvertex_id=row["jobvertex_id"],
            chain_index=int(row["chain_index"]),
            vertex_order=vorder.get(row["jobvertex_id"], 0),
            node_id=int(row["node_id"]),
            name=node["name"],
            uid=node.get("uid"),
            key_serializer=node_from_dict(key_tree["serializer"]) if key_tree else None,
            key_type=key_tree["type_info"] if key_tree else None,
            parallelism=vpar.get(row["jobvertex_id"]),
        )
        names[o.operator_id] = node["name"]
    ctx = sr.StateContext(
        saved_major=sr.savepoint_major(md.format_version, case["v1"].get("flink_version")),
        target_major=sr.line_major(case["v2"].get("flink_version")),
        restore_backend=case["runtime"]["state_backend"],
    )
    return CaseInputs(
        saved,
        [o.operator_id for o in md.operators],
        matched,
        ctx,
        class_facts(case, "v2"),
        class_facts(case, "v1"),
        topology,
        names,
        md.format_version,
        md,
        folder,
    )


def decide(ci: CaseInputs, values: bool = False) -> sr.StateDecision:
    """The state half from the case's inputs; ``values``: as check-restore decides it, a second
    time with the saved streams' bytes when the first asks for them (udfs/restore/state_value_reads.py)."""
    d = sr.decide_states(ci.saved, ci.matched, ci.ctx, ci.new_classes, ci.old_classes, ci.order)
    if values and d.value_requests and ci.metadata is not None and ci.folder is not None:
        read = values_from_files(ci.metadata, local_file_reader(ci.folder), d.value_requests)
        d = sr.decide_states(ci.saved, ci.matched, ci.ctx, ci.new_classes, ci.old_classes, ci.order, read)
    return d


# ------------------------------------------------------------------------------------------------
#  Flink's recorded outcome, in the rules' terms
# ------------------------------------------------------------------------------------------------

# The JobMaster's failures (job_init), as devtools/restore_cases.py reads them.
_TOPOLOGY_KINDS = (
    ("Cannot map checkpoint/savepoint state", rr.UNMAPPED_STATE),
    ("Max parallelism mismatch", rr.MAX_PARALLELISM_MISMATCH),
    ("of the restored state is lower than the configured parallelism", rr.PARALLELISM_ABOVE_MAX),
    ("There is no operator for the state", rr.NO_OPERATOR_FOR_STATE),
)
_KINDS = (
    ("The new key serializer", sr.KEY_SERIALIZER_INCOMPATIBLE),
    ("Could not create a restore serializer for enum", sr.ENUM_CONSTANT_REMOVED),
    ("Incompatible key/value state types", sr.STATE_KIND_CHANGED),
    ("new state serializer", sr.STATE_SERIALIZER_INCOMPATIBLE),
    ("typeSerializer for operator state", sr.STATE_SERIALIZER_INCOMPATIBLE),
    ("typeSerializer for broadcast state", sr.STATE_SERIALIZER_INCOMPATIBLE),
    ("requires state migration", sr.MAP_KEY_SCHEMA_CHANGED),
    ("Can not set", sr.STATE_READ_FAILED),
    ("Buffer underflow", sr.STATE_READ_FAILED),
    ("stateMetaInfoSnapshot", sr.STATE_READ_FAILED),
    # the statetypes-*-s21 sets (conformance/statetypes) have these as well
    ("Incompatible state assignment modes", sr.STATE_KIND_CHANGED),  # split <-> union list state
    ("No more bytes left", sr.STATE_READ_FAILED),  # Kryo reading bytes of another shape
    ("Encountered unregistered class ID", sr.STATE_READ_FAILED),  # Kryo 5 reading Kryo 2 bytes
    ("out of bounds for length", sr.STATE_READ_FAILED),  # Avro reading with an incompatible schema
    (".<init>()", sr.STATE_READ_FAILED),  # NoSuchMethodException: a saved POJO's class lost its constructor
    ("migrate RocksDB state", sr.STATE_READ_FAILED),  # RocksDB migrating values it cannot read
    # the saved serializer snapshot names a class the new job's class path lacks: flink-avro's
    # AvroSerializerSnapshot (the job dropped flink-avro), or 1.x's Java-serialized
    # ExecutionConfig$SerializableSerializer inside a Kryo registration (gone in 2.x)
    ("ClassNotFoundException", sr.SNAPSHOT_CLASS_GONE),
    ("Missing value for the key", sr.SNAPSHOT_CLASS_GONE),
)
# a backend that failed while restoring (reading every saved value back): its root exception, whatever
# the misread bytes made of it (EOFException, NullPointerException, StringIndexOutOfBounds...), is a
# value that did not read back
_BACKEND_RESTORE = (
    "Failed when trying to restore heap backend",
    "Failed when trying to restore operator state backend",
)
_CLASS_NAME = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*")


def _misread_class_name(case: dict[str, Any]) -> bool:
    """A ClassNotFoundException whose class name is no Java name: bytes read as a class name."""
    return case.get("error_class") == "java.lang.ClassNotFoundException" and not _CLASS_NAME.fullmatch(
        (case.get("error_message") or "").strip()
    )


# what a 1.x Kryo-held java.util collection looks like when 2.x restores it (docs/state-rules.md)
_KRYO_COLLECTION_TYPES = ("LIST_HINT", "MAP_HINT", "POJO_COLL")


def recorded_kind(case: dict[str, Any]) -> str | None:
    """Flink's root exception as a failure kind. The JobMaster's (job_init) by the topology
    half's kinds. Across majors (1.x -> 2.x), a serializer incompatibility or a failed read-back
    of a job whose v1 had a Kryo-held collection (LIST_HINT, MAP_HINT, or a POJO_COLL's fields)
    comes from the version change (every such case fails, whatever else changed: docs/state-rules.md)
    and is read as KRYO_COLLECTION_ON_2X, except a retyped POJO field named in the message; in the
    s11 cross set v2 is v1's very program and jar, so there every state failure is that."""
    if case["verdict"] != "FAILED":
        return None
    msg = f"{case.get('error_class') or ''}: {case['error_message'] or ''}"
    if case.get("failure_stage") == "job_init":
        return next((k for text, k in _TOPOLOGY_KINDS if text in msg), "OTHER")
    kind = next((k for text, k in _KINDS if text in msg), "OTHER")
    if kind == sr.SNAPSHOT_CLASS_GONE and _misread_class_name(case):
        kind = sr.STATE_READ_FAILED  # Kryo read a class name from misaligned bytes: a value did not read back
    if kind == "OTHER" and any(text in line for line in case["error_chain"] for text in _BACKEND_RESTORE):
        kind = sr.STATE_READ_FAILED  # thrown while a backend read the saved values back (Kryo misreads)
    crosses = sr.line_major(case["flink_version_v1"]) == 1 and (sr.line_major(case["flink_version_v2"]) or 0) >= 2
    kryo_collection = any(s["value_type"] in _KRYO_COLLECTION_TYPES for s in case["states_v1"])
    retyped_field = "Can not set" in msg and "to null value" not in msg
    if (
        crosses
        and kryo_collection
        and not retyped_field
        and kind
        in (
            sr.STATE_SERIALIZER_INCOMPATIBLE,
            sr.STATE_READ_FAILED,
        )
    ):
        return sr.KRYO_COLLECTION_ON_2X
    return kind


def recorded_operator(case: dict[str, Any], ci: CaseInputs) -> str | None:
    """The saved operator whose restore failed: named in the exception chain (a backend that could
    not be built names ``Operator_<id>_(i/n)``), else the one stateful operator of the FAILED task."""
    if case["verdict"] != "FAILED":
        return None
    if case.get("failure_stage") == "job_init":  # the JobMaster names the saved operator's ID
        m = re.search(r"\b[0-9a-f]{32}\b", case["error_message"] or "")
        return m.group(0) if m else None
    for line in case["error_chain"]:
        for op_id in ci.order:
            if f"_{op_id}_(" in line:
                # the chain names the new job's operator id; map it back to the saved one
                return next((s for s, n in ci.matched.items() if n.operator_id == op_id), op_id)
        for s, n in ci.matched.items():
            if f"_{n.operator_id}_(" in line:
                return s
    failed_task = next(t.rsplit(":", 1)[0].strip() for t in case["task_states"].split("|")[1:] if "FAILED" in t)
    names = [n.strip() for n in failed_task.split("->")]
    stateful = [
        s
        for s, name in ci.new_names.items()
        if name in names and s in ci.saved and any(ci.saved[s].states(k) for k in ("managed_keyed", "managed_operator"))
    ]
    # a source's reader state is in every job; prefer the operator with user state
    user = [s for s in stateful if "SourceReaderState" not in ci.saved[s].states("managed_operator")]
    return (user or stateful or [None])[0]


def recorded(case: dict[str, Any], ci: CaseInputs) -> dict[str, Any]:
    failed = case["verdict"] == "FAILED"
    return {
        "verdict": sr.FAILS if failed else sr.RESTORES,
        "failure": recorded_kind(case),
        "operator_id": recorded_operator(case, ci),
        "message": case["error_message"] if failed else None,
        "failure_stage": case["failure_stage"] if failed else None,
    }


def predicted(d: sr.StateDecision) -> dict[str, Any]:
    fails = d.verdict == sr.FAILS
    return {
        "verdict": d.verdict,
        "failure": d.failure if fails else None,
        "operator_id": d.operator_id if fails else None,
        "message": d.message if fails else None,
        "failure_stage": d.failure_stage if fails else None,
    }
