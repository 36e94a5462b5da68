"""The state-meta readers (udfs/savepoint) against what Flink itself read from real savepoints.

Ground truth: /work/shared/vectors/statetypes (README "State types"): 80 whole savepoints, 40
written by Flink 1.20.5 and 40 by Flink 2.3.0 (HashMap and RocksDB, NATIVE and CANONICAL,
inline and file state). Each case line records, per operator, the keyed and operator proxies
as Flink read them with the old job's classes (``meta_read_by_v1_flink``) and with the new
job's (``meta_read_by_v2_flink``). Every archive is unpacked here, every operator's proxies are
decoded from the savepoint's own bytes and compared field by field with both.

The same comparison runs over the project's own statetypes sets (``conformance/statetypes``,
written by ``harness/restore``'s ``statetypes`` command: Flink 1.15, 1.20, 2.0 and 2.3,
same-line and cross-version, window / broadcast / operator / keyed state, Avro, checkpoints),
whose cases also carry the facts the vectors' shape leaves out (Kryo registrations, Avro
schemas: ``facts_read_by_v1_flink``), compared with the decoder's ``facts``.

Also: the inline proxies in the ``_metadata`` of the restore sets (formats 3 - 6, Flink 1.15 -
2.3); layouts the vectors do not contain, built byte by byte after Flink's writer methods
(quoted per helper); a seeded fuzz of real proxy bytes; the serializer snapshots and savepoints
Flink keeps as test resources (its upgrade tests, 1.11 - 1.20; packed from Flink's sources by
scripts/flink_test_resources.py).
"""

from __future__ import annotations

import gzip
import json
import random
import struct
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from udfs.savepoint.binary import Reader, StateMetaError
from udfs.savepoint.java_objects import read_object_stream
from udfs.savepoint.metadata import StateStream, StreamRef, parse_metadata
from udfs.savepoint.serializer_snapshots import (
    ADAPTER_VERSION,
    REGISTRY,
    UserClass,
    parse_snapshot,
    read_serializer_snapshot,
)
from udfs.savepoint.state_meta import (
    KeyedProxy,
    OperatorProxy,
    decode_operator_states,
    local_file_reader,
    read_keyed_proxy,
    read_operator_proxy,
)

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT.parent / "shared" / "vectors"
STATETYPES = VECTORS / "statetypes"
SETS = ("statetypes-1.20to2.3-s11", "statetypes-2.3-s11")
RESTORE_TARS = sorted((ROOT / "tests" / "golden" / "restore").glob("*.tar.gz")) + sorted(
    (VECTORS / "restore").glob("*.tar.gz")
)
USER_PACKAGE = "statetypes.user."


def _cases() -> list[dict]:
    out = []
    for name in SETS:
        with gzip.open(STATETYPES / f"{name}.jsonl.gz", "rt") as f:
            out += [dict(json.loads(line), _set=name) for line in f]
    return out


CASES = _cases()


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> dict[str, Path]:
    """case_id -> the savepoint folder, every archive unpacked once into a tmp dir."""
    out = {}
    for case in CASES:
        sp = case["savepoint"]
        dest = tmp_path_factory.mktemp(case["case_id"])
        with tarfile.open(STATETYPES / case["_set"] / sp["archive"]) as tar:
            tar.extractall(dest, filter="data")
        out[case["case_id"]] = dest / sp["dir_name"]
    return out


@pytest.fixture(scope="module")
def decoded(unpacked) -> dict[str, dict]:
    """case_id -> decoded operators, from the savepoint's own bytes."""
    return {
        case_id: decode_operator_states(parse_metadata((folder / "_metadata").read_bytes()), local_file_reader(folder))
        for case_id, folder in unpacked.items()
    }


def _catalogue(case: dict, side: str, folder: Path | None = None) -> dict[str, UserClass]:
    """The user classes of the case's v1 or v2 jar (jars/catalogue.json), as UserClass."""
    jar = Path(case[f"{side}_program"]["jar"]).stem
    folder = folder if folder is not None else STATETYPES / case["_set"]
    catalogue = json.loads((folder / "jars" / "catalogue.json").read_text())
    classes = {}
    for simple, info in catalogue[jar].items():
        name = USER_PACKAGE + simple
        fields = tuple(f for _t, f in info.get("fields", []))
        consts = tuple(info["constants"]) if info["kind"] == "enum" else None
        classes[name] = UserClass(name, fields, consts)
    return classes


def _diff(want: object, got: object, path: str = "") -> list[str]:
    """Field-by-field differences (paths), so a failure says exactly what disagrees."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}.{k}: missing" for k in want if k not in got]
        out += [f"{path}.{k}: unexpected" for k in got if k not in want]
        for k in want:
            if k in got:
                out += _diff(want[k], got[k], f"{path}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(want)} items expected, {len(got)} read"]
        return [d for i, (a, b) in enumerate(zip(want, got, strict=True)) for d in _diff(a, b, f"{path}[{i}]")]
    return [] if want == got else [f"{path}: expected {want!r}, read {got!r}"]


def _flink_read(case: dict, side: str) -> dict[str, dict]:
    return {op["operator_id"]: op for op in case["savepoint"][f"meta_read_by_{side}_flink"]["operators"]}


# ------------------------------------------------------------------------------------------------
#  The 80 statetypes savepoints
# ------------------------------------------------------------------------------------------------


def test_the_vectors_are_all_there():
    assert [sum(c["_set"] == s for c in CASES) for s in SETS] == [40, 40]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["case_id"])
def test_proxies_match_what_flink_read(case, decoded):
    """Every operator with keyed or operator state: proxy version, compression, key serializer,
    states in file order with backend state type, options and every serializer tree (class,
    type class, nested, POJO fields, enum constants), as Flink itself read them with the old
    job's classes, and as it read them with the new job's classes."""
    ops = decoded[case["case_id"]]
    for side in ("v1", "v2"):
        classes = None if side == "v1" else _catalogue(case, "v2")
        for op_id, op in _flink_read(case, side).items():
            for part in ("keyed", "operator"):
                if part not in op:
                    continue
                assert op_id in ops, f"{side}: operator {op_id} has {part} state but no stream was located"
                got = ops[op_id]
                proxy = got.keyed_proxy if part == "keyed" else got.operator_proxy
                assert proxy is not None, got.errors
                assert proxy.complete, proxy.stopped
                mine = proxy.to_dict(classes)
                assert not _diff(op[part], mine, f"{side}.{op_id}.{part}"), _diff(op[part], mine, f"{op_id}.{part}")
        # and nothing was found that Flink did not read
        with_state = {i for i, op in _flink_read(case, side).items() if "keyed" in op or "operator" in op}
        assert set(ops) == with_state


def test_every_subtask_is_read_and_subtasks_may_list_fewer_states(decoded):
    """Every subtask's proxy is read; a subtask that never touched a state does not list it
    (so the restore check must take the union over subtasks: OperatorStateTypes.states)."""
    subtasks = fewer = 0
    for ops in decoded.values():
        for got in ops.values():
            for kind, entries in (("managed_keyed", got.keyed), ("managed_operator", got.operator)):
                union = got.states(kind)
                for s in entries:
                    subtasks += 1
                    assert s.proxy is not None and s.proxy.complete, s.error
                    names = [i.name for i in s.proxy.states]
                    assert set(names) <= set(union)
                    fewer += len(names) < len(union)
    assert subtasks > 300 and 0 < fewer < 10


def test_readable_types_and_kryo(decoded):
    """The one-line type text and the Kryo walk, on the vectors' types."""
    texts: dict[str, bool] = {}
    for ops in decoded.values():
        for got in ops.values():
            for info in list(got.states("managed_keyed").values()) + list(got.states("managed_operator").values()):
                for node in info.serializers.values():
                    texts[node.type_text] = node.uses_kryo
            if got.keyed_proxy and got.keyed_proxy.key_serializer:
                texts[got.keyed_proxy.key_serializer.type_text] = got.keyed_proxy.key_serializer.uses_kryo
    assert texts["Tuple2<Long, String>"] is False
    assert texts["POJO statetypes.user.PojoV{a: Long, b: String, c: Double}"] is False
    assert texts["Kryo(statetypes.user.Gen)"] is True
    assert texts["List<Kryo(statetypes.user.Gen)>"] is True
    assert texts["POJO statetypes.user.PojoColl{counts: Kryo(java.util.Map), id: Long, tags: Kryo(java.util.List)}"]
    assert "POJO statetypes.user.PojoColl{counts: Nullable<Map<Nullable<String>, Long>>, id: Long, " in " ".join(texts)
    assert texts["Map<String, Enum statetypes.user.Color{RED, GREEN, BLUE}>"] is False
    assert texts["Row<Long, String, Double>"] is False
    assert texts["Timer<POJO statetypes.user.PojoK{id: Long, tag: String}, VoidNamespace>"] is False


def test_kryo_snapshot_facts(decoded):
    """Kryo registrations as written: the type class itself and Flink's default Avro dummy."""
    for ops in decoded.values():
        for got in ops.values():
            for info in got.states().values():
                node = info.serializers.get("VALUE_SERIALIZER")
                if node is not None and node.kind == "KRYO":
                    regs = node.facts["kryo_registrations"]
                    assert regs[0] == {"class": node.type_class, "type": "UNSPECIFIED"}
                    assert regs[1]["type"] == "CLASS" and regs[1]["serializer"].endswith("DummyAvroKryoSerializerClass")
                    assert regs[1]["name"] == "org.apache.avro.generic.GenericData$Array"
                    assert node.facts["kryo_default_serializers"] == []
                    return
    pytest.fail("no Kryo state in the vectors")


# ------------------------------------------------------------------------------------------------
#  The project's own statetypes sets (harness/restore statetypes, conformance/statetypes)
# ------------------------------------------------------------------------------------------------

HARNESS = ROOT / "conformance" / "statetypes"
HARNESS_SETS = sorted(HARNESS.glob("statetypes-*.jsonl.gz"))


def _harness_cases() -> list[dict]:
    out = []
    for path in HARNESS_SETS:
        folder = path.with_name(path.name.removesuffix(".jsonl.gz"))
        with gzip.open(path, "rt") as f:
            out += [dict(json.loads(line), _dir=folder) for line in f if line.strip()]
    return out


HARNESS_CASES = _harness_cases()


@pytest.fixture(scope="module")
def harness_decoded(tmp_path_factory) -> dict[str, dict]:
    """case_id -> decoded operators of the harness sets' savepoints (each archive unpacked once)."""
    out = {}
    for case in HARNESS_CASES:
        sp = case["savepoint"]
        dest = tmp_path_factory.mktemp(case["case_id"])
        with tarfile.open(case["_dir"] / sp["archive"]) as tar:
            tar.extractall(dest, filter="data")
        folder = dest / sp["dir_name"]
        out[case["case_id"]] = decode_operator_states(
            parse_metadata((folder / "_metadata").read_bytes()), local_file_reader(folder)
        )
    return out


def test_harness_sets_are_there():
    """At least the sets the harness README lists: same-line 2.3 and 1.20, cross 1.20 -> 2.3."""
    names = {p.name.split("-s")[0] for p in HARNESS_SETS}
    assert {"statetypes-2.3", "statetypes-1.20", "statetypes-1.20to2.3"} <= names, names
    assert len(HARNESS_CASES) >= 120


@pytest.mark.parametrize("case", HARNESS_CASES, ids=lambda c: c["case_id"])
def test_harness_proxies_match_what_flink_read(case, harness_decoded):
    """As test_proxies_match_what_flink_read, over the harness's own savepoints: every operator's
    keyed and operator proxies (broadcast states included) equal Flink's reading with v1's
    classes and, through the catalogue of v2's jar, with v2's (on v2's Flink line)."""
    ops = harness_decoded[case["case_id"]]
    for side in ("v1", "v2"):
        classes = None if side == "v1" else _catalogue(case, "v2", case["_dir"])
        for op_id, op in _flink_read(case, side).items():
            for part in ("keyed", "operator"):
                if part not in op:
                    continue
                assert op_id in ops, f"{side}: operator {op_id} has {part} state but no stream was located"
                got = ops[op_id]
                proxy = got.keyed_proxy if part == "keyed" else got.operator_proxy
                assert proxy is not None, got.errors
                assert proxy.complete, proxy.stopped
                missing = _class_not_found(op[part])
                if missing is not None:
                    # a job that does not bundle flink-avro cannot load Flink's Avro snapshot class
                    # (the catalogue models user classes only): the decoder read that class there
                    infos = proxy.states + getattr(proxy, "broadcast_states", ())  # an Avro broadcast state too
                    names = {n.class_name for s in infos for n in _walk_all(s)}
                    if isinstance(proxy, KeyedProxy):
                        names |= {n.class_name for n in proxy.key_serializer.walk()}
                    assert missing in names and not case[f"{side}_program"]["bundled_jars"], (missing, names)
                    continue
                mine = proxy.to_dict(classes)
                assert not _diff(op[part], mine, f"{side}.{op_id}.{part}"), _diff(op[part], mine, f"{op_id}.{part}")
        with_state = {i for i, op in _flink_read(case, side).items() if "keyed" in op or "operator" in op}
        assert set(ops) == with_state


def _class_not_found(entry: dict) -> str | None:
    """The class a Flink reading failed to load ({"error": ["java.lang.ClassNotFoundException: X"]})."""
    for e in entry.get("error", []):
        if e.startswith("java.lang.ClassNotFoundException: "):
            return e.split(": ", 1)[1]
    return None


def _walk_all(info) -> list:
    return [n for node in info.serializers.values() for n in node.walk()]


def _fact_root(got, root: str):
    """The decoded snapshot tree a facts entry's root names: <op>/keyed/key_serializer,
    <op>/keyed|operator|broadcast/<state>/<role>."""
    parts = root.split("/")
    if parts[1] == "keyed" and parts[2] == "key_serializer":
        return got.keyed_proxy.key_serializer
    proxy = got.keyed_proxy if parts[1] == "keyed" else got.operator_proxy
    states = proxy.broadcast_states if parts[1] == "broadcast" else proxy.states
    role = parts[-1]
    name = "/".join(parts[2:-1])
    return next(s for s in states if s.name == name).serializers[role]


@pytest.mark.parametrize("case", HARNESS_CASES, ids=lambda c: c["case_id"])
def test_harness_serializer_facts_match_what_flink_read(case, harness_decoded):
    """The facts Flink's snapshot objects hold beyond the vectors' shape (Kryo registrations,
    default serializers and their classes, POJO subclass registrations, the Avro schema), node by
    node (pre-order index below each root), equal the decoder's ``facts``. v1's reading only:
    the same bytes, and no class of v1 is missing there."""
    ops = harness_decoded[case["case_id"]]
    for fact in case["savepoint"]["facts_read_by_v1_flink"]:
        node = list(_fact_root(ops[fact["root"].split("/")[0]], fact["root"]).walk())[fact["index"]]
        assert node.class_name == fact["class"], fact
        if "kryo_registrations" in fact:
            # an entry Flink could not resolve with these classes has type None: not compared
            pairs = zip(fact["kryo_registrations"], node.facts["kryo_registrations"], strict=True)
            # serializer_instance: the serializer inside Flink's SerializableSerializer wrapper,
            # which the decoder names by the wrapper only
            assert all(
                {k: v for k, v in want.items() if k != "serializer_instance"} == got
                for want, got in pairs
                if want["type"] is not None
            ), fact
        for key in ("kryo_default_serializers", "kryo_default_serializer_classes"):
            if key in fact:
                assert [list(x) for x in node.facts[key]] == fact[key], fact
        for key in ("registered_subclasses", "non_registered_subclasses"):
            if key in fact:
                assert [n for n, _ in node.facts[key]] == fact[key]
        if "schema" in fact:
            assert json.loads(node.facts["schema"]) == json.loads(fact["schema"])


# ------------------------------------------------------------------------------------------------
#  Inline proxies of the restore sets' _metadata (formats 3 - 6)
# ------------------------------------------------------------------------------------------------


def _restore_metadata() -> list[tuple[str, bytes]]:
    out = []
    for tar_path in RESTORE_TARS:
        with tarfile.open(tar_path) as tar:
            out += [(f"{tar_path.name}:{m.name}", tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]
    return out


def test_inline_proxies_of_the_restore_sets():
    def no_files(path: str, n: int) -> bytes:
        raise FileNotFoundError(path)  # only _metadata is kept in these sets

    files = _restore_metadata()
    formats, inline, located_files = set(), 0, 0
    for name, data in files:
        md = parse_metadata(data)
        formats.add(md.format_version)
        for got in decode_operator_states(md, no_files).values():
            for s in got.keyed + got.operator:
                if s.source != "inline":
                    located_files += 1
                    assert s.proxy is None and "cannot read the file" in s.error
                    continue
                inline += 1
                assert s.proxy is not None and s.proxy.complete, (name, s.error)
                assert isinstance(s.proxy, KeyedProxy if s.kind == "managed_keyed" else OperatorProxy)
                for info in s.proxy.states:
                    for node in info.serializers.values():
                        assert all(n.class_name in REGISTRY for n in node.walk()), name
    assert len(files) >= 200 and formats >= {3, 4, 5, 6}
    assert inline > 1000 and located_files > 100


# ------------------------------------------------------------------------------------------------
#  Layouts built after Flink's writers
# ------------------------------------------------------------------------------------------------


def utf(s: str) -> bytes:
    """DataOutput.writeUTF (ASCII here)."""
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def versioned(cls: str, version: int, payload: bytes = b"") -> bytes:
    """TypeSerializerSnapshot.writeVersionedSnapshot: writeUTF(class), writeInt(version), payload."""
    return utf(cls) + i32(version) + payload


def simple(cls: str) -> bytes:
    """A SimpleTypeSerializerSnapshot (version 3, writeSnapshot writes nothing)."""
    return versioned(cls, 3)


def nested(*snapshots: bytes) -> bytes:
    """NestedSerializersSnapshotDelegate.writeNestedSerializerSnapshots: magic, version 1, count."""
    return i32(1333245) + i32(1) + i32(len(snapshots)) + b"".join(snapshots)


def composite(cls: str, outer_version: int, outer: bytes, *snapshots: bytes) -> bytes:
    """CompositeTypeSerializerSnapshot.writeSnapshot: magic 911108, outer version, the outer
    snapshot, then the nested snapshots; the snapshot's own version is 3."""
    return versioned(cls, 3, i32(911108) + i32(outer_version) + outer + nested(*snapshots))


def optional_map(entries: list[tuple[str, bytes | None, bytes | None]]) -> bytes:
    """LinkedOptionalMapSerializer.writeOptionalMap: header, size, then per entry the key name
    and the key and value as optional frames (boolean, int length, bytes)."""
    out = i64(0x4F2C69A3D70) + i32(len(entries))
    for name, key, value in entries:
        out += utf(name)
        for part in (key, value):
            out += b"\x00" if part is None else b"\x01" + i32(len(part)) + part
    return out


B = "org.apache.flink.api.common.typeutils.base."
LONG = simple(B + "LongSerializer$LongSerializerSnapshot")
STRING = simple(B + "StringSerializer$StringSerializerSnapshot")
VOID_NS = simple("org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot")
POJO_CLASS = "org.apache.flink.api.java.typeutils.runtime.PojoSerializerSnapshot"
KRYO_CLASS = "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot"


def serializer_snapshot(snapshot: bytes) -> bytes:
    """TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot: proxy version 2 first."""
    return i32(2) + snapshot


def meta_info(name: str, state_type: int, options: dict[str, str], serializers: dict[str, bytes]) -> bytes:
    """StateMetaInfoSnapshotReadersWriters.CurrentWriterImpl.writeStateMetaInfoSnapshot."""
    out = utf(name) + i32(state_type) + i32(len(options))
    for k, v in options.items():
        out += utf(k) + utf(v)
    out += i32(len(serializers))
    for role, snap in serializers.items():
        out += utf(role) + serializer_snapshot(snap)
    return out


def keyed_proxy(key: bytes, states: list[bytes], compression: bool = False) -> bytes:
    """KeyedBackendSerializationProxy.write (version 6): compression, key snapshot, short count."""
    return i32(6) + bytes([compression]) + serializer_snapshot(key) + struct.pack(">h", len(states)) + b"".join(states)


def operator_proxy(version: int, states: list[bytes], broadcast: list[bytes], compression: bool = False) -> bytes:
    """OperatorBackendSerializationProxy.write: v6 (1.18+) writes the compression flag, v5 does not."""
    out = i32(version) + (bytes([compression]) if version >= 6 else b"")
    for group in (states, broadcast):
        out += struct.pack(">h", len(group)) + b"".join(group)
    return out


def pojo(cls: str, fields: list[tuple[str, str | None, bytes | None]]) -> bytes:
    """PojoSerializerSnapshotData.writeSnapshotData: class, fields (key frame = declaring
    class + field name), registered and non-registered subclass maps."""
    entries = [(n, None if decl is None else utf(decl) + utf(n), snap) for n, decl, snap in fields]
    return versioned(POJO_CLASS, 2, utf(cls) + optional_map(entries) + optional_map([]) + optional_map([]))


# --- a minimal Java serialization writer (ObjectOutputStream, protocol 2) for the tests ---------


def _jclassdesc(name: str, flags: int, fields: list[tuple[str, str, str | None]], superclass: bytes) -> bytes:
    out = b"\x72" + utf(name) + i64(1) + bytes([flags]) + struct.pack(">H", len(fields))
    for code, fname, sig in fields:
        out += code.encode() + utf(fname) + (b"\x74" + utf(sig) if sig else b"")
    return out + b"\x78" + superclass


def java_logical_type(cls: str, root: str, nullable: bool = True, ints: dict[str, int] | None = None) -> bytes:
    """ObjectOutputStream of a Flink LogicalType: the subclass's int fields, LogicalType's
    isNullable and typeRoot (an enum LogicalTypeRoot)."""
    ints = ints or {}
    enum_desc = _jclassdesc(
        "org.apache.flink.table.types.logical.LogicalTypeRoot",
        0x12,
        [],
        _jclassdesc("java.lang.Enum", 0x12, [], b"\x70"),
    )
    base = _jclassdesc(
        "org.apache.flink.table.types.logical.LogicalType",
        0x02,
        [("Z", "isNullable", None), ("L", "typeRoot", "Lorg/apache/flink/table/types/logical/LogicalTypeRoot;")],
        b"\x70",
    )
    desc = _jclassdesc(f"org.apache.flink.table.types.logical.{cls}", 0x02, [("I", k, None) for k in ints], base)
    values = bytes([nullable]) + b"\x7e" + enum_desc + b"\x74" + utf(root) + b"".join(i32(v) for v in ints.values())
    return b"\xac\xed\x00\x05" + b"\x73" + desc + values


def test_keyed_proxy_of_every_family():
    """One proxy with one state per snapshot family the vectors lack; each read back exactly."""
    gen_array = composite(B + "GenericArraySerializerSnapshot", 1, utf("java.lang.String"), STRING)
    nullable = composite(
        "org.apache.flink.api.java.typeutils.runtime.NullableSerializer$NullableSerializerSnapshot", 2, i32(8), LONG
    )
    row_v4 = composite(
        "org.apache.flink.api.java.typeutils.runtime.RowSerializer$RowSerializerSnapshot", 4, b"\x01", LONG, STRING
    )
    avro_v3 = versioned(
        "org.apache.flink.formats.avro.typeutils.AvroSerializerSnapshot",
        3,
        b"\x0bcom.a.User" + bytes([0x81, 0x01]) + b"{" * 128,  # StringValue: length + 1, varint-coded
    )
    avro_v2 = versioned("org.apache.flink.formats.avro.typeutils.AvroSerializerSnapshot", 2, utf("com.a.U") + utf("{}"))
    enum = versioned(B + "EnumSerializer$EnumSerializerSnapshot", 3, utf("com.a.E") + i32(2) + utf("A") + utf("B"))
    scala_enum = versioned(
        "org.apache.flink.api.scala.typeutils.ScalaEnumSerializerSnapshot",
        3,
        utf("com.a.Weekday$") + i32(2) + utf("Mon") + i32(0) + utf("Tue") + i32(1),
    )
    ttl = composite("org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot", 2, b"", LONG, STRING)
    ttl_aware = versioned("org.apache.flink.runtime.state.ttl.TtlAwareSerializerSnapshot", 1, b"\x01" + STRING)
    value = versioned(
        "org.apache.flink.api.java.typeutils.runtime.ValueSerializer$ValueSerializerSnapshot", 2, utf("com.a.V")
    )
    row_data = versioned(
        "org.apache.flink.table.runtime.typeutils.RowDataSerializer$RowDataSerializerSnapshot",
        3,
        i32(2)
        + java_logical_type("BigIntType", "BIGINT", nullable=False)
        + java_logical_type("VarCharType", "VARCHAR", ints={"length": 2147483647})
        + nested(
            LONG, simple("org.apache.flink.table.runtime.typeutils.StringDataSerializer$StringDataSerializerSnapshot")
        ),
    )
    decimal = versioned(
        "org.apache.flink.table.runtime.typeutils.DecimalDataSerializer$DecimalSerializerSnapshot", 3, i32(10) + i32(2)
    )
    kryo = versioned(
        KRYO_CLASS,
        2,
        utf("com.a.G")
        + optional_map(
            [
                ("com.a.G", utf("com.a.G"), utf("com.a.G") + i32(0)),
                ("com.a.H", utf("com.a.H"), utf("com.a.H") + i32(1) + utf("com.a.HSerializer")),
            ]
        )
        + optional_map([])
        + optional_map([("com.a.I", utf("com.a.I"), utf("com.a.ISerializer"))]),
    )
    states = {
        "array": (gen_array, "String[]"),
        "nullable": (nullable, "Nullable<Long>"),
        "row": (row_v4, "Row<Long, String>"),
        "avro3": (avro_v3, "Avro(com.a.User)"),
        "avro2": (avro_v2, "Avro(com.a.U)"),
        "enum": (enum, "Enum com.a.E{A, B}"),
        "scala_enum": (scala_enum, "ScalaEnum(com.a.Weekday$)"),
        "ttl": (ttl, "TTL<String>"),
        "ttl_aware": (ttl_aware, "TtlAware<String>"),
        "value": (value, "Value(com.a.V)"),
        "rowdata": (row_data, "RowData<BIGINT NOT NULL, STRING>"),
        "decimal": (decimal, "DecimalData(10, 2)"),
        "kryo": (kryo, "Kryo(com.a.G)"),
    }
    data = keyed_proxy(
        LONG,
        [
            meta_info(n, 0, {"KEYED_STATE_TYPE": "VALUE"}, {"VALUE_SERIALIZER": s, "NAMESPACE_SERIALIZER": VOID_NS})
            for n, (s, _t) in states.items()
        ],
        compression=True,
    )
    proxy = read_keyed_proxy(data)
    assert proxy.complete and proxy.compression and proxy.end == len(data)
    assert proxy.key_serializer.type_text == "Long"
    read = {s.name: s.serializers["VALUE_SERIALIZER"] for s in proxy.states}
    assert {n: read[n].type_text for n in states} == {n: t for n, (_s, t) in states.items()}
    assert read["array"].type_class == "java.lang.String"
    assert read["nullable"].facts["null_padding_length"] == 8
    assert read["row"].facts["supports_row_kind"] is True
    assert read["avro3"].facts["schema"] == "{" * 128
    assert read["scala_enum"].facts["enum_values"] == [["Mon", 0], ["Tue", 1]]
    assert read["ttl_aware"].facts["ttl_enabled"] is True
    assert read["kryo"].facts["kryo_registrations"][1] == {
        "class": "com.a.H",
        "type": "CLASS",
        "serializer": "com.a.HSerializer",
    }
    assert read["kryo"].facts["kryo_default_serializer_classes"] == [["com.a.I", "com.a.ISerializer"]]
    assert read["kryo"].uses_kryo and not read["rowdata"].uses_kryo


def test_row_outer_versions_and_legacy_composite():
    """RowSerializerSnapshot outer versions: 2 = no row kind, 3 = implied, 4 = written; a
    composite written by Flink 1.7 (snapshot version 2, no magic: the legacy outer read)."""
    row = "org.apache.flink.api.java.typeutils.runtime.RowSerializer$RowSerializerSnapshot"
    for version, flag, expected in ((2, b"", False), (3, b"", True), (4, b"\x00", False)):
        node = parse_snapshot(composite(row, version, flag, LONG)).node
        assert node.facts["supports_row_kind"] is expected and node.end == len(composite(row, version, flag, LONG))
    legacy = versioned("org.apache.flink.api.java.typeutils.runtime.TupleSerializerSnapshot", 2)
    legacy += utf("org.apache.flink.api.java.tuple.Tuple1") + nested(LONG)
    assert parse_snapshot(legacy).node.type_text == "Tuple1<Long>"


def test_pojo_frames_keep_going_past_an_unknown_field_snapshot():
    """POJO field snapshots sit in frames: an unknown class inside one is kept as UNKNOWN and
    the rest is read (Flink's field reader logs and keeps null); a field whose key was
    written absent has no declaring class."""
    data = pojo(
        "com.a.P",
        [
            ("a", "com.a.P", LONG),
            ("b", "com.a.P", versioned("com.user.MySnapshot", 1, b"\x00\x01\x02")),
            ("gone", None, STRING),
            ("c", "com.a.P", STRING),
        ],
    )
    read = parse_snapshot(data)
    assert read.readable_past and read.node.end == len(data)
    fields = {f.name: f for f in read.node.fields}
    assert fields["b"].snapshot.kind == "UNKNOWN" and fields["b"].snapshot.raw == b"\x00\x01\x02"
    assert fields["gone"].declaring_class is None
    assert read.node.type_text == "POJO com.a.P{a: Long, b: Unknown(com.user.MySnapshot), gone: String, c: String}"
    assert read.node.has_unknown


def test_an_unknown_snapshot_stops_the_proxy_and_names_the_state():
    custom = versioned("com.user.CustomSnapshot", 1, b"\x00" * 10)
    data = keyed_proxy(
        STRING,
        [
            meta_info("ok", 0, {"KEYED_STATE_TYPE": "VALUE"}, {"VALUE_SERIALIZER": LONG}),
            meta_info(
                "custom",
                0,
                {"KEYED_STATE_TYPE": "MAP"},
                {"VALUE_SERIALIZER": composite(B + "MapSerializerSnapshot", 1, b"", STRING, custom)},
            ),
            meta_info("after", 0, {}, {"VALUE_SERIALIZER": LONG}),
        ],
    )
    proxy = read_keyed_proxy(data)
    assert not proxy.complete and proxy.declared_states == 3
    assert [s.name for s in proxy.states] == ["ok", "custom"]
    assert "state 'custom' VALUE_SERIALIZER" in proxy.stopped and "com.user.CustomSnapshot" in proxy.stopped
    assert "1 more keyed states not read" in proxy.stopped
    partial = proxy.states[1].serializers["VALUE_SERIALIZER"]
    assert not partial.complete and partial.type_text == "Map<String, Unknown(com.user.CustomSnapshot)>"
    assert partial.nested[1][1].raw.startswith(b"\x00" * 10)
    # an unknown key serializer: no state can be located at all
    proxy = read_keyed_proxy(keyed_proxy(custom, [meta_info("ok", 0, {}, {"VALUE_SERIALIZER": LONG})]))
    assert proxy.states == () and proxy.stopped.startswith("key serializer: unknown")
    assert proxy.key_serializer.kind == "UNKNOWN"


def test_legacy_forms():
    """Flink 1.7 - 1.16 read a snapshot written as TypeSerializerConfigSnapshot
    (ADAPTER_VERSION) whose class is a TypeSerializerSnapshot now: the Java-serialized
    serializer (proxy version 1, length, bytes) is skipped, the real version follows. A
    pre-1.7 config snapshot class stops reading; proxy version 1 and keyed proxy < 6 are refused."""
    adapted = (
        utf(B + "LongSerializer$LongSerializerSnapshot") + i32(ADAPTER_VERSION) + i32(1) + i32(3) + b"abc" + i32(3)
    )
    assert parse_snapshot(adapted).node.type_text == "Long"
    config = utf("org.apache.flink.api.common.typeutils.ParameterlessTypeSerializerConfig") + i32(ADAPTER_VERSION)
    read = parse_snapshot(config + b"\x00" * 8)
    assert not read.readable_past and read.node.kind == "LEGACY_CONFIG"
    with pytest.raises(StateMetaError, match="Flink 1.17"):
        read_serializer_snapshot(Reader(i32(1) + LONG))
    with pytest.raises(StateMetaError, match="Flink <= 1.6"):
        read_keyed_proxy(i32(5) + b"\x00" * 40)


def test_operator_proxy_versions_and_broadcast_state():
    """v5 (Flink 1.7 - 1.17) has no compression flag, v6 (1.18+) has one; broadcast states
    follow the operator states."""
    op = meta_info("buffer", 1, {"OPERATOR_STATE_DISTRIBUTION_MODE": "UNION"}, {"VALUE_SERIALIZER": LONG})
    bc = meta_info(
        "rules",
        2,
        {"OPERATOR_STATE_DISTRIBUTION_MODE": "BROADCAST"},
        {"KEY_SERIALIZER": STRING, "VALUE_SERIALIZER": LONG},
    )
    for version in (5, 6):
        data = operator_proxy(version, [op], [bc], compression=version == 6)
        proxy = read_operator_proxy(data)
        assert proxy.complete and proxy.end == len(data) and proxy.compression is (version == 6)
        assert [s.backend_state_type for s in proxy.states + proxy.broadcast_states] == ["OPERATOR", "BROADCAST"]
        assert proxy.to_dict()["broadcast_states"][0]["serializers"]["KEY_SERIALIZER"]["class"].endswith(
            "StringSerializerSnapshot"
        )


def test_files_are_read_by_their_head_only(tmp_path):
    """A proxy longer than the first chunk asks for more; a short one costs one small read."""
    big = meta_info("big", 0, {"KEYED_STATE_TYPE": "VALUE"}, {"VALUE_SERIALIZER": LONG})
    data = keyed_proxy(LONG, [big] * 200) + b"\xee" * 100_000  # key-group data follows the proxy
    (tmp_path / "state").write_bytes(data)
    reads: list[int] = []
    base = local_file_reader(tmp_path)
    ref = StreamRef("relative", "state", 0, len(data))
    op = {"operator_id": "ab" * 16, "operator_name": None, "operator_uid": None}

    def head(path: str, n: int) -> bytes:
        reads.append(n)
        return base(path, n)

    stream = StateStream("managed_keyed", 0, "KeyGroupsStateHandle(RelativeFileStateHandle)", ref)
    md = SimpleNamespace(operators=[SimpleNamespace(**op, state_streams=[stream])])
    got = decode_operator_states(md, head, first_chunk=1024)["ab" * 16]
    assert len(got.keyed_proxy.states) == 200 and got.keyed[0].bytes_read < len(data)
    assert reads[0] == 1024 and len(reads) > 1 and max(reads) < len(data)


# ------------------------------------------------------------------------------------------------
#  Fuzz
# ------------------------------------------------------------------------------------------------


def _real_proxies(unpacked: dict[str, Path]) -> list[tuple[str, bytes]]:
    """Real proxy bytes: the inline ones of the restore sets' _metadata, and every first
    subtask's proxy of the statetypes savepoints (POJO, Kryo, Row, enum, Tuple... types)."""
    out = []
    for _name, data in _restore_metadata()[::4]:
        for op in parse_metadata(data).operators:
            for s in op.state_streams:
                if s.ref.location == "inline" and s.ref.data:
                    out.append((s.kind, s.ref.data[:4096]))
    for folder in unpacked.values():
        read_head = local_file_reader(folder)
        for op in parse_metadata((folder / "_metadata").read_bytes()).operators:
            for s in op.state_streams[:1]:
                data = s.ref.data if s.ref.location == "inline" else read_head(s.ref.path, 1 << 20)
                reader = read_keyed_proxy if s.kind == "managed_keyed" else read_operator_proxy
                out.append((s.kind, data[: reader(data).end]))
    return out


def test_fuzz_truncations_and_bit_flips(unpacked):
    """Seeded mutations of real proxy bytes: each read returns or raises StateMetaError (how fast is
    the benchmarks' business, not a test's)."""
    rng = random.Random(20240611)
    corpus = _real_proxies(unpacked)
    kinds = {k for k, _ in corpus}
    assert len(corpus) > 150 and kinds == {"managed_keyed", "managed_operator"}
    outcomes = {"ok": 0, "error": 0}
    for i in range(5000):
        kind, data = corpus[rng.randrange(len(corpus))]
        buf = bytearray(data)
        if i % 3 == 0:
            buf = buf[: rng.randrange(len(buf) + 1)]
        else:
            for _ in range(rng.randint(1, 4)):
                if buf:
                    buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        reader = read_keyed_proxy if kind == "managed_keyed" else read_operator_proxy
        try:
            proxy = reader(bytes(buf), 0, complete=bool(i % 2))
            outcomes["ok"] += 1
            proxy.to_dict()
            for info in proxy.states:
                for node in info.serializers.values():
                    _ = node.type_text, node.uses_kryo, node.describe()
        except StateMetaError:
            outcomes["error"] += 1
    assert outcomes["ok"] > 100 and outcomes["error"] > 1000


def test_java_objects_reject_garbage_without_hanging():
    rng = random.Random(7)
    base = java_logical_type("VarCharType", "VARCHAR", ints={"length": 10})
    assert read_object_stream(Reader(base)).class_name.endswith("VarCharType")
    for _ in range(2000):
        buf = bytearray(base)
        buf[rng.randrange(len(buf))] = rng.randrange(256)
        try:
            read_object_stream(Reader(bytes(buf[: rng.randrange(len(buf) + 1)])))
        except StateMetaError:
            pass


# ------------------------------------------------------------------------------------------------
#  Flink's own test resources, packed by scripts/flink_test_resources.py from Flink's sources
FLINK_RESOURCES = Path(__file__).parent / "savepoints" / "flink-test-resources.tar.xz"


@pytest.fixture(scope="module")
def flink_resources() -> dict[str, bytes]:
    with tarfile.open(FLINK_RESOURCES) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_flink_upgrade_test_snapshots(flink_resources):
    """Every serializer-snapshot file of Flink's TypeSerializerUpgradeTestBase resources that a
    1.17+ Flink reads is decoded to its last byte without an unknown class."""
    files = [f for f in flink_resources if f.endswith("/serializer-snapshot")]
    assert len(files) > 800
    for f in files:
        data = flink_resources[f]
        r = Reader(data)
        read = read_serializer_snapshot(r)
        assert read.readable_past and not read.node.has_unknown and r.pos == len(data), f


def test_flink_test_savepoints(flink_resources):
    """The _metadata files of Flink's own test resources (SQL restore tests of every
    ExecNode, migration tests): every proxy located is read to the end; the only stops are the
    test-only snapshot classes Flink's migration tests define and pre-1.7 formats."""
    proxies = 0
    metas = [n for n in flink_resources if n.endswith("/_metadata")]
    assert len(metas) > 300
    for f in metas:
        folder = f.rsplit("/", 1)[0]

        def head(path: str, n: int, folder: str = folder) -> bytes:
            p = f"{folder}/{path.rsplit('/', 1)[-1]}"
            if p not in flink_resources:
                raise FileNotFoundError(p)
            return flink_resources[p][:n]

        for got in decode_operator_states(parse_metadata(flink_resources[f]), head).values():
            for s in got.keyed + got.operator:
                if s.proxy is None:
                    assert "Flink <= 1.6" in s.error or "cannot read the file" in s.error, (f, s.error)
                    continue
                proxies += 1
                assert s.proxy.complete or "org.apache.flink.test." in s.proxy.stopped or "pre-1.7" in s.proxy.stopped
    assert proxies > 1000
