"""The project's own statetypes sets keep the shared vectors' format and cover what they must.

Why: ``harness/restore``'s ``statetypes`` command writes the ground truth of the state half of
the restore check (``conformance/statetypes``: real typed-state restores, same-line and
cross-version); the check's tests read these sets exactly like ``shared/vectors/statetypes``,
so a field renamed, an archive or jar missing, or a verdict recorded inconsistently would
silently shrink what they check. Also checks the exporter's ``state_key_serializer_snapshot`` (spec
node field) against what Flink wrote into the savepoints: the same tree as the savepoint's key
serializer when the key type did not change, a different one when it did. Reads files only.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from udfs.savepoint.binary import Reader
from udfs.savepoint.serializer_snapshots import read_serializer_snapshot

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "conformance" / "statetypes"
SETS = sorted(HARNESS.glob("statetypes-*.jsonl.gz"))
VECTOR = ROOT.parent / "shared" / "vectors" / "statetypes" / "statetypes-2.3-s11.jsonl.gz"
STAGES = {"job_init", "task_restore", "task_running"}


def _read(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


CASES = [dict(c, _dir=p.with_name(p.name.removesuffix(".jsonl.gz"))) for p in SETS for c in _read(p)]


def test_sets_exist():
    assert len(SETS) >= 3 and len(CASES) >= 120


@pytest.mark.skipif(not VECTOR.exists(), reason="shared vectors not mounted")
def test_same_fields_as_the_vectors():
    vector = _read(VECTOR)[0]
    for c in CASES:
        assert set(c) - {"_dir"} == set(vector), c["case_id"]
        assert set(vector["savepoint"]) <= set(c["savepoint"]), c["case_id"]
        assert set(vector["v1_program"]) <= set(c["v1_program"])
        assert set(vector["runtime"]) <= set(c["runtime"])
        for s in c["states_v1"] + c["states_v2"]:
            assert set(vector["states_v1"][0]) - {"map_user_key_type"} <= set(s)
        op = c["savepoint"]["meta_read_by_v1_flink"]
        assert set(op) == set(vector["savepoint"]["meta_read_by_v1_flink"])


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.name)
def test_verdicts_archives_and_jars(path: Path):
    folder = path.with_name(path.name.removesuffix(".jsonl.gz"))
    catalogue = json.loads((folder / "jars" / "catalogue.json").read_text())
    for c in _read(path):
        failed = c["verdict"] == "FAILED"
        assert c["verdict"] in ("RESTORED", "FAILED")
        assert (c["error_class"] is not None) == failed == (c["failure_stage"] in STAGES)
        assert (c["task_states"] is not None) == failed
        assert c["values_check"] in (("ok", "inconsistent") if not failed else (None,))
        assert (folder / c["savepoint"]["archive"]).is_file()
        for side in ("v1", "v2"):
            prog = c[f"{side}_program"]
            assert (folder / prog["jar"]).is_file() and prog["jar_variant"] in catalogue
            assert prog["args"][0].startswith(f"env:name={c['case_id']},")
        assert c["v1"]["graph_id"] == c["case_id"] + "/v1" and c["v2"]["graph_id"] == c["case_id"] + "/v2"
        # the probe reports on v2's states only
        assert set(c["state_probe"]) <= {s["probe_key"] for s in c["states_v2"]}
        if not failed:
            assert all(c["state_probe"].get(s["probe_key"]) for s in c["states_v2"]) or any(
                n.startswith("probe incomplete") for n in c["notes"]
            ), c["case_id"]
        cross = c["set"] == "cross"
        assert (c["flink_version_v1"] != c["flink_version_v2"]) == cross


def _kind(c: dict[str, Any]) -> str | None:
    """The failure kinds the vectors show, by Flink's root message."""
    if c["verdict"] != "FAILED":
        return "restored"
    m = c["error_message"] or ""
    if "The new key serializer" in m:
        return "key serializer incompatible"
    if "enum value was removed" in m:
        return "enum constant removed"
    if "Incompatible key/value state types" in m:
        return "state kind changed"
    if "Can not set" in m and "field" in m:
        return "POJO field retyped"
    if "must not be incompatible" in m:
        kryo = any(t in ("LIST_HINT", "MAP_HINT", "POJO_COLL") for t in [s["value_type"] for s in c["states_v1"]])
        return (
            "Kryo List/Map upgrade (state serializer incompatible)"
            if c["set"] == "cross" and kryo
            else ("state serializer incompatible")
        )
    if c["failure_stage"] == "job_init":
        return "job refused (job_init)"
    return "other"


def test_coverage():
    """Every failure stage and the failure kinds of the vectors are there."""
    stages = Counter(c["failure_stage"] for c in CASES if c["verdict"] == "FAILED")
    assert set(stages) == STAGES, stages
    kinds = Counter(_kind(c) for c in CASES)
    for k in (
        "restored",
        "key serializer incompatible",
        "state serializer incompatible",
        "enum constant removed",
        "POJO field retyped",
        "state kind changed",
        "Kryo List/Map upgrade (state serializer incompatible)",
        "job refused (job_init)",
    ):
        assert kinds[k] > 0, (k, kinds)


def _states_by_operator(c: dict[str, Any], side: str) -> dict[tuple[str | None, str], dict]:
    return {(s["operator_uid"], s["operator_name"]): s for s in c[f"states_{side}"]}


def _key(s: dict[str, Any]) -> tuple:
    return s["key_type"], (s.get("key_class_def") or {}).get("variant")


def test_key_serializer_snapshot_is_what_the_savepoint_holds():
    """The spec's state_key_serializer_snapshot (exporter, every line's writeSerializerSnapshot) decodes
    to the savepoint's key serializer of the same operator when the key type (or key class) did
    not change between v1 and v2, and to a different tree when it did."""
    seen: Counter = Counter()
    for c in CASES:
        saved = {o["operator_id"]: o for o in c["savepoint"]["meta_read_by_v1_flink"]["operators"] if "keyed" in o}
        v1_ops = _states_by_operator(c, "v1")
        for side in ("v1", "v2"):
            states = _states_by_operator(c, side)
            for n in c[side]["nodes"]:
                if "state_key_serializer_snapshot" not in n:
                    continue
                data = base64.b64decode(n["state_key_serializer_snapshot"])
                r = Reader(data)
                tree = read_serializer_snapshot(r).node.to_dict()
                assert r.pos == len(data)
                op = c[f"{side}_expected"]["operators"][str(n["id"])]["operator_id"]
                if op not in saved or "key_serializer" not in saved[op]["keyed"]:
                    seen[(side, "operator not in the savepoint")] += 1
                    continue
                here = next((s for (uid, name), s in states.items() if (uid or name) == (n["uid"] or n["name"])), None)
                before = next((s for s in v1_ops.values() if here and s["operator_key"] == here["operator_key"]), None)
                changed = here is not None and before is not None and _key(here) != _key(before)
                same = tree == saved[op]["keyed"]["key_serializer"]
                assert same != changed, (c["case_id"], side, n["name"], tree, saved[op]["keyed"]["key_serializer"])
                seen[(side, "changed" if changed else "unchanged")] += 1
    assert seen[("v1", "unchanged")] > 100 and seen[("v2", "changed")] > 5, seen


def _short_type(t: str) -> str:
    return t.replace("java.lang.", "").replace("java.util.", "")


def test_exported_backend_and_user_classes_are_what_the_job_ran_with():
    """The exporter's graph fields (docs/spec-extensions.md) against what the harness knows for
    certain: ``state_backend`` is the backend each side really ran with (``runtime``), and for every
    user class a state names, ``user_classes`` holds the kind, fields (name and type) and enum
    constants of the class the harness compiled into that side's jar (``*_class_def``): POJO field
    edits, POJO <-> Kryo, the @TypeInfo factory, enum constants. Avro records are GenericRecords
    whose schema lives in code, not a class: no facts to compare."""
    checked = 0
    for c in CASES:
        for side in ("v1", "v2"):
            spec = c[side]
            assert spec["state_backend"] == c["runtime"]["state_backend"], (c["case_id"], side)
            assert "statetypes.user.StJob" in spec["user_classes"], (c["case_id"], side)
            for s in c[f"states_{side}"]:
                for key in ("value_class_def", "key_class_def"):
                    d = s.get(key)
                    if not d or d["kind"] == "avro":
                        continue
                    facts = spec["user_classes"][d["name"]]
                    assert facts["kind"] == d["kind"], (c["case_id"], side, d["name"])
                    if d["kind"] == "enum":
                        assert facts["enum_constants"] == d["constants"], (c["case_id"], side)
                    else:
                        want = sorted((n, t) for t, n in d["fields"])
                        got = sorted((f["name"], _short_type(f["type"])) for f in facts["fields"])
                        assert got == want, (c["case_id"], side, d["name"])
                    checked += 1
    assert checked > 1000
