"""The reader of saved values (udfs/savepoint/java_read.py, kryo_values.py, flink_values.py,
value_streams.py; udfs/restore/state_value_reads.py) against what Flink's own serializers did.

Each expectation comes from real Flink: the recorded restores of conformance/statetypes (seed 41)
and harness/restore's ``value-check``, which reads the same bytes with Flink's serializers restored
from the saved snapshots and the new job's classes (real Kryo 2.24 / 5.6; the commands are in
docs/state-rules.md, "Reading the saved values"). No Spark here: the state half is decided as
check-restore decides it, from the cases' specs and savepoints (scripts/value_reader_check.py).
"""

from __future__ import annotations

import gzip
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from udfs.savepoint.flink_values import JobClass, Reading, read_string_value, value_reader
from udfs.savepoint.java_read import DataInput, JavaError
from udfs.savepoint.kryo_values import KryoInput, KryoSetup, read_kryo_value, registrations
from udfs.savepoint.serializer_snapshots import PojoField, SnapshotNode
from udfs.savepoint.type_names import POJO

ROOT = Path(__file__).resolve().parent.parent
SETS = ROOT / "conformance" / "statetypes"
sys.path.insert(0, str(ROOT / "scripts"))

import value_reader_check as vrc  # noqa: E402

GEN = "statetypes.user.Gen"
GEN_BASE = (("x", "long"), ("y", "java.lang.String"))
GEN_ADD = (*GEN_BASE, ("z", "double"))
# Flink 2.3's KryoSerializer restored from the saved snapshot of a Kryo(Gen) state (value-check's
# registrations): Kryo 5's nine, Flink's chill registrar at 73 - 84, the snapshot's own from 85
REGISTERED_23 = registrations(2, [GEN, "org.apache.avro.generic.GenericData$Array"])
# A Gen(33, "y33") as Flink 2.3 wrote it (st-2.3-s41-00021, key group 17), then the next state's ID
GEN_33 = bytes.fromhex("5701420179 33b3".replace(" ", "")) + bytes.fromhex("000100000001800001a22a945ded")


def kryo(major: int, fields: tuple[tuple[str, str], ...], data: bytes) -> tuple[Any, int]:
    inp = DataInput(data)
    setup = KryoSetup(major, registrations(major, [GEN]), {GEN: fields})
    return read_kryo_value(setup, KryoInput(inp, major), lambda name: False), inp.pos


def test_registrations_are_flinks():
    """value-check printed these for Flink 2.3 and (with ``void`` at 9) Flink 1.20."""
    assert REGISTERED_23[1] == "java.lang.String" and 9 not in REGISTERED_23
    assert REGISTERED_23[73] == "java.util.Arrays$ArrayList" and REGISTERED_23[84] == "java.text.SimpleDateFormat"
    assert REGISTERED_23[85] == GEN and REGISTERED_23[86] == "org.apache.avro.generic.GenericData$Array"
    assert registrations(1, [GEN])[9] == "void"


def test_a_kryo_class_reads_its_fields_in_name_order():
    """value-check: Gen(33,y33) ending at the value's end; with the field z the new class added,
    8 more bytes (the next state's ID and count) read as the double z."""
    assert kryo(2, GEN_BASE, GEN_33) == ({"@class": GEN, "x": 33, "y": "y33"}, 7)
    value, end = kryo(2, GEN_ADD, GEN_33)
    assert end == 15 and value["z"] == pytest.approx(2.848789874470163e-306)


def test_kryo_failures_are_flinks():
    with pytest.raises(JavaError) as e:
        kryo(2, GEN_BASE, bytes([0x38]))  # class ID 56 - 2
    assert (e.value.error_class, e.value.message) == ("com.esotericsoftware.kryo.KryoException",
                                                      "Encountered unregistered class ID: 54")  # fmt: skip
    for major, text in ((1, "No more bytes left."), (2, "Buffer underflow.")):
        with pytest.raises(JavaError) as e:
            kryo(major, GEN_ADD, GEN_33[:7])
        assert (e.value.error_class, e.value.message) == ("java.io.EOFException", text)
    with pytest.raises(JavaError) as e:  # a class name that is no class name: Class.forName's
        kryo(2, GEN_BASE, b"\x01\x00,\x01\x00ab\xe3")
    assert (e.value.error_class, e.value.message) == ("java.lang.ClassNotFoundException", ",\x01\x00abc")


def test_a_string_value_with_a_negative_length_fails_in_new_string():
    """StringValue.readString reads short strings into a char[2048]: a garbage length below zero
    fails as in st-2.3-s41-00177 (offset 0, count -1431655767, length 2048)."""
    with pytest.raises(JavaError) as e:
        read_string_value(DataInput(bytes.fromhex("aad5aad50a")))
    assert e.value.message == "offset 0, count -1431655767, length 2048"


def test_a_null_into_a_primitive_pojo_field_fails_in_field_set():
    node = SnapshotNode(POJO, 2, "POJO", "statetypes.user.PojoColl",
                        fields=(PojoField("id", "statetypes.user.PojoColl", None),))  # fmt: skip
    reading = Reading(2, {"statetypes.user.PojoColl": JobClass("pojo", (("id", "long"),))})
    with pytest.raises(JavaError) as e:
        value_reader(node, reading)(DataInput(bytes([2, 1])))  # NO_SUBCLASS, then id's null flag set
    assert e.value.message == "Can not set long field statetypes.user.PojoColl.id to null value"


# ------------------------------------------------------------------------------------------------
#  Whole restores: the state half with the saved streams, against Flink's recorded outcome
# ------------------------------------------------------------------------------------------------


@cache
def _case(set_name: str, case_id: str) -> dict[str, Any]:
    with gzip.open(SETS / f"{set_name}.jsonl.gz", "rt") as f:
        return next(c for c in map(json.loads, f) if c["case_id"] == case_id)


def _decided(set_name: str, case_id: str) -> tuple[Any, Any, dict[str, Any]]:
    case = _case(set_name, case_id)
    folder = vrc.unpack(case, SETS / set_name)
    return vrc.decide(case, folder, False), vrc.decide(case, folder, True), case


# (set, case, what the values decide): each Flink's real outcome, replayed 3 - 6 times alike
DECIDED = [
    ("statetypes-2.3-s41", "st-2.3-s41-00021", "heap native: Gen gained z, the next state ID is not one (the NPE)"),
    ("statetypes-2.3-s41", "st-2.3-s41-00177", "heap native: a key read from misaligned bytes, a negative length"),
    ("statetypes-2.3-s41", "st-2.3-s41-00255", "broadcast state: Gen gained z, an unregistered class ID"),
    ("statetypes-2.3-s41", "st-2.3-s41-00153", "RocksDB canonical list: Gen lost z, every list still reads"),
    ("statetypes-1.20-s41", "st-1.20-s41-00177", "the same on 1.20 (Kryo 2): the same exception"),
    ("statetypes-1.20to2.3-s41", "st-1.20to2.3-s41-00093", "Kryo 5 reading Kryo 2's Gen with z: Buffer underflow."),
    ("statetypes-1.20to2.3-s41", "st-1.20to2.3-s41-00059", "Kryo 5 reading Kryo 2 lists in a heap stream"),
    ("statetypes-1.20to2.3-s41", "st-1.20to2.3-s41-00072", "the misread list is last in its key group: reads on"),
    ("statetypes-1.20to2.3-s41", "st-1.20to2.3-s41-00156", "Kryo 5 reading Kryo 2 lists in broadcast state"),
]


@pytest.mark.parametrize(("set_name", "case_id", "shows"), DECIDED, ids=[d[1] for d in DECIDED])
def test_the_saved_values_decide_as_flink_did(set_name, case_id, shows):
    first, second, case = _decided(set_name, case_id)
    assert first.value_requests, "the first pass asks for the streams' bytes"
    failed = case["verdict"] == "FAILED"
    assert second.verdict == ("FAILS" if failed else "RESTORES"), shows
    if failed:
        assert (second.error_class, second.message, second.failure_stage) == (
            case["error_class"], case["error_message"], case["failure_stage"]), shows  # fmt: skip
        assert set(second.uncertain) <= {"message"}, second.uncertain  # only the NPE's JVM-dependent message


def test_subtasks_that_fail_differently_race():
    """st-1.20to2.3-s41-00179: every subtask fails reading a Kryo 2 list, each naming another
    garbage class (its Kryo input keeps other characters; Flink's own serializers, value-check,
    give the same three names): which Flink reports is left open."""
    _, second, case = _decided("statetypes-1.20to2.3-s41", "st-1.20to2.3-s41-00179")
    assert second.verdict == "FAILS" and "reported" in second.uncertain
    assert case["error_message"] in second.uncertain["reported"]


def test_values_in_sst_files_are_not_read():
    """st-2.3-s41-00099: RocksDB keeps the list in an SST file (an incremental checkpoint): no bytes
    are asked for, and the rules decide as without them: the failure, its message left open (Flink
    threw ``Encountered unregistered class ID: 2097150``, a function of bytes the check does not read)."""
    first, second, case = _decided("statetypes-2.3-s41", "st-2.3-s41-00099")
    assert not first.value_requests
    assert (second.verdict, second.failure_stage) == ("FAILS", case["failure_stage"])
    assert "message" in second.uncertain and second.message != case["error_message"]


def test_rocksdb_values_that_partly_read_through_fail_once_a_failing_key_is_read():
    """st-1.20-s41-00231: a RocksDB list of Gen, which gained z: three lists read through (the next
    element's bytes read as z), one reads past its end: Flink failed with that EOF when user code
    read its key; the verdict says that a job that never reads such a key again would restore."""
    first, second, case = _decided("statetypes-1.20-s41", "st-1.20-s41-00231")
    assert first.value_requests
    assert (second.verdict, second.error_class, second.message, second.failure_stage) == (
        "FAILS", case["error_class"], case["error_message"], case["failure_stage"])  # fmt: skip
    assert "1 x java.io.EOFException" in second.uncertain["verdict"] and "3 x reads" in second.uncertain["verdict"]
    assert "message" not in second.uncertain and "reported" not in second.uncertain


def test_no_values_are_asked_for_where_no_kryo_class_changed():
    """A POJO field retyped (st-2.3-s41-00216): the rules decide from the types, no bytes are read."""
    first, _, _ = _decided("statetypes-2.3-s41", "st-2.3-s41-00216")
    assert first.value_requests == []
