"""The ``_metadata`` reader against real Flink savepoints, Flink's writer layouts, mutations and Spark.

Real files: the 120 savepoints of /work/shared/vectors/restore (Flink 1.20.5: format 4, Flink
2.3.0: format 6), whose ``savepoint.operators`` is what Flink itself read from each file. The
format versions and handle tags those files do not contain (formats 2, 3, 5; changelog,
file-merging and channel-state handles; the 1.11 / 1.14 layouts) are built here byte by byte
following the *writer* side of Flink's serializers (``serialize*`` methods, quoted per helper),
and the expected sizes and flags are worked out by hand from Flink's ``getStateSize`` /
``hasState`` rules, not by the reader.
"""

from __future__ import annotations

import gzip
import json
import random
import struct
import tarfile
from pathlib import Path

import pytest

from udfs.savepoint.metadata import (
    CHECKPOINT_PROPERTIES_CLASS,
    MetadataError,
    decode_modified_utf8,
    parse_metadata,
    read_java_serialized_object,
)

RESTORE = Path(__file__).resolve().parent.parent.parent / "shared" / "vectors" / "restore"
LINES = ("1.20", "2.3")


def _load_cases(line: str) -> list[tuple[dict, bytes]]:
    return _load_set(RESTORE / f"savepoint-{line}-s11.jsonl.gz")


def _load_set(jsonl: Path) -> list[tuple[dict, bytes]]:
    """(case record, _metadata bytes) of one recorded set: a .jsonl.gz and its -metadata.tar.gz."""
    tar_path = jsonl.with_name(jsonl.name.replace(".jsonl.gz", "-metadata.tar.gz"))
    with tarfile.open(tar_path) as tar:
        blobs = {m.name.rsplit("/", 1)[-1]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    with gzip.open(jsonl, "rt") as f:
        records = [json.loads(line) for line in f]
    return [(r, blobs[r["savepoint_metadata"]]) for r in records]


def _recorded_sets() -> list[Path]:
    """The shared restore vectors plus every set the project's harness has committed since
    (savepoint-<line>-s<seed>.jsonl.gz beside its -metadata.tar.gz, under tests/ or harness/)."""
    repo = Path(__file__).resolve().parent.parent
    found = sorted(RESTORE.glob("savepoint-*.jsonl.gz"))
    for top in (repo / "tests", repo / "harness"):
        found += sorted(top.rglob("savepoint-*-s*.jsonl.gz"))
    return [f for f in found if f.with_name(f.name.replace(".jsonl.gz", "-metadata.tar.gz")).exists()]


@pytest.fixture(scope="module")
def real_cases() -> dict[str, list[tuple[dict, bytes]]]:
    return {line: _load_cases(line) for line in LINES}


# ------------------------------------------------------------------------------------------------
#  Real files
# ------------------------------------------------------------------------------------------------


def test_shared_vectors_are_all_read(real_cases):
    assert [len(real_cases[line]) for line in LINES] == [60, 60]
    assert len(_recorded_sets()) >= 2


@pytest.mark.parametrize("recorded", _recorded_sets(), ids=lambda p: p.name)
def test_real_savepoints_match_what_flink_read(recorded):
    cases = _load_set(recorded)
    assert cases
    for record, data in cases:
        sp = record["savepoint"]
        meta = parse_metadata(data)
        where = record["savepoint_metadata"]
        assert meta.format_version == sp["metadata_version"], where
        assert meta.checkpoint_id == sp["checkpoint_id"], where
        assert meta.master_state_count == sp["master_states"], where
        assert meta.total_bytes == len(data) == sp["metadata_bytes"], where
        # the body ends exactly where the Java-serialized CheckpointProperties starts, and it
        # ends exactly at the end of the file: 0 unparsed bytes
        assert meta.unparsed_bytes == 0, where
        assert meta.body_end + meta.trailer_bytes == len(data), where
        if meta.format_version >= 4:  # MetadataV4Serializer added the CheckpointProperties trailer
            assert data[meta.body_end : meta.body_end + 4] == b"\xac\xed\x00\x05", where
            assert meta.trailer_class == CHECKPOINT_PROPERTIES_CLASS, where
            assert 500 < meta.trailer_bytes < 1000, where
            assert meta.savepoint_format == sp["format"], where  # None for retained checkpoints
            assert (meta.snapshot_type == "Checkpoint") == (sp["format"] is None), where
        else:  # format 3 (1.11-1.15) ends with the last operator: no trailer, no properties
            assert (meta.trailer_bytes, meta.trailer_class, meta.savepoint_format) == (0, None, None), where
        assert len(meta.operators) == len(sp["operators"]), where
        for op, want in zip(meta.operators, sp["operators"], strict=True):
            got = {
                "operator_id": op.operator_id,
                "parallelism": op.parallelism,
                "max_parallelism": op.max_parallelism,
                "has_state": op.has_state,
                "state_size": op.state_size,
                "subtask_states": op.subtask_count,
                "fully_finished": op.fully_finished,
                "has_subtask_state": op.has_subtask_state,
                "has_coordinator_state": op.has_coordinator_state,
                "operator_name": op.operator_name,
                "operator_uid": op.operator_uid,
                "handles": op.handle_types,
            }
            expected = {k: want.get(k) for k in got if k != "handles"}
            expected["handles"] = sorted(f"{kind}:{t}" for kind, types in want["handles"].items() for t in types)
            assert got == expected, (where, op.operator_id)
            assert op.finished_subtasks == 0


def test_real_trailer_is_one_checkpoint_properties_object(real_cases):
    _, data = real_cases["2.3"][0]
    meta = parse_metadata(data)
    obj, end = read_java_serialized_object(data, meta.body_end)
    assert end == len(data)
    assert obj["class"] == CHECKPOINT_PROPERTIES_CLASS
    fields = obj["fields"]
    assert set(fields) >= {"forced", "discardSubsumed", "checkpointType", "unclaimed"}
    assert fields["checkpointType"]["class"] == "org.apache.flink.runtime.checkpoint.SavepointType"
    # a trailer that stops early is an error at the trailer, not a silent success
    with pytest.raises(MetadataError) as e:
        parse_metadata(data[:-3])
    assert e.value.offset > meta.body_end


def test_real_v6_relabelled_v5_and_v4_stripped_to_v3_read_the_same(real_cases):
    """Format 5 = format 6 without tagged channel state (none in these files); format 3 = format 4
    without the trailer: relabelled real files are exactly what Flink 2.0 / 1.15 would write."""
    for line, new_version, strip in (("2.3", 5, False), ("1.20", 3, True)):
        for _, data in real_cases[line][:20]:
            meta = parse_metadata(data)
            assert not any(t.startswith("channel:") for t in meta.tags_seen)
            body = data[: meta.body_end] if strip else data
            other = parse_metadata(body[:4] + struct.pack(">i", new_version) + body[8:])
            assert other.format_version == new_version
            assert other.operators == meta.operators
            assert other.trailer_bytes == (0 if strip else meta.trailer_bytes)
            assert other.unparsed_bytes == 0


# ------------------------------------------------------------------------------------------------
#  Writer side of Flink's serializers, for the layouts no real file here contains
# ------------------------------------------------------------------------------------------------


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def jutf(s: str) -> bytes:
    """DataOutputStream.writeUTF: per UTF-16 unit, 1..7F one byte; 0 and 80..7FF two; else three."""
    units = struct.unpack(
        f">{len(s.encode('utf-16-be', 'surrogatepass')) // 2}H", s.encode("utf-16-be", "surrogatepass")
    )
    out = bytearray()
    for c in units:
        if 0x0001 <= c <= 0x007F:
            out.append(c)
        elif c <= 0x07FF:
            out += bytes([0xC0 | (c >> 6), 0x80 | (c & 0x3F)])
        else:
            out += bytes([0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)])
    return struct.pack(">H", len(out)) + bytes(out)


NULL = i8(0)


def byte_stream(n: int, name: str = "handle") -> bytes:  # BYTE_STREAM_STATE_HANDLE
    return i8(1) + jutf(name) + i32(n) + bytes(n)


def file_handle(size: int, path: str = "file:/tmp/x") -> bytes:  # FILE_STREAM_STATE_HANDLE
    return i8(2) + i64(size) + jutf(path)


def relative(size: int, path: str = "abc-uuid") -> bytes:  # RELATIVE_STREAM_STATE_HANDLE
    return i8(6) + jutf(path) + i64(size)


def segment(size: int) -> bytes:  # SEGMENT_FILE_HANDLE: startPos, stateSize, scope ordinal, path, logical id
    return i8(15) + i64(128) + i64(size) + i32(1) + jutf("file:/tmp/merged-1") + jutf("logical-7")


def key_groups(tag: int, delegate: bytes, n: int = 4, handle_id: str | None = None) -> bytes:
    body = i8(tag) + i32(0) + i32(n) + b"".join(i64(8 * k) for k in range(n)) + delegate
    return body + (jutf(handle_id) if handle_id is not None else b"")


def op_handle(delegate: bytes, states: dict[str, tuple[int, list[int]]] | None = None, segment_dirs=None) -> bytes:
    states = states or {"SourceReaderState": (0, [0, 5])}
    tag = 17 if segment_dirs else 4
    out = i8(tag) + i32(len(states))
    for name, (mode, offsets) in states.items():
        out += jutf(name) + i8(mode) + i32(len(offsets)) + b"".join(i64(o) for o in offsets)
    if segment_dirs:
        out += jutf(segment_dirs[0]) + jutf(segment_dirs[1]) + bytes([segment_dirs[2]])
    return out + delegate


def incremental(v2: bool, meta: bytes, shared: list[bytes], private: list[bytes]) -> bytes:
    out = i8(11 if v2 else 5) + i64(3) + jutf("6f1e2d3c-0000-4000-8000-000000000000") + i32(0) + i32(128)
    if v2:
        out += i64(999)  # checkpointed size: not the state size
    out += meta
    for group in (shared, private):
        out += i32(len(group)) + b"".join(jutf(f"{k:06d}.sst") + h for k, h in enumerate(group))
    return out + (jutf("handle-id") if v2 else b"")


def subtask(version: int, mo=None, ro=None, mk=NULL, rk=NULL, inputs=(), outputs=()) -> bytes:
    out = i64(0) + i32(0) if version == 2 else b""  # V2: ignored duration, legacy state count
    for h in (mo, ro):
        out += i32(0) if h is None else i32(1) + h
    out += mk + rk
    if version >= 3:
        out += i32(len(inputs)) + b"".join(inputs) + i32(len(outputs)) + b"".join(outputs)
    return out


def operator(version, op_id: bytes, par, max_par, subtasks, coord=NULL, name="", uid="") -> bytes:
    out = jutf(name) + jutf(uid) if version >= 5 else b""
    out += op_id + i32(par) + i32(max_par)
    out += i32(1) if version == 2 else coord  # V2: chain length
    if subtasks is None:  # fully finished operator (V3+)
        return out + i32(-1)
    out += i32(len(subtasks))
    for index, body in subtasks:
        out += i32(index if body is not None else -(index + 1)) + (body or b"")
    return out


def master_state(name: str, payload: bytes) -> bytes:
    inner = i32(1) + jutf(name) + i32(len(payload)) + payload
    return i32(0xC96B1696 - (1 << 32)) + i32(len(inner)) + inner


def metadata(version: int, operators: list[bytes], masters=(), trailer: bytes = b"", checkpoint_id: int = 42) -> bytes:
    out = i32(0x4960672D) + i32(version) + i64(checkpoint_id) + i32(len(masters)) + b"".join(masters)
    return out + i32(len(operators)) + b"".join(operators) + trailer


def channel_v1(input_: bool, size: int, delegate: bytes, with_subtask: bool = True) -> bytes:
    """ChannelStateHandleSerializerV1.serializeChannelStateHandle (1.12+; 1.11: no subtask index)."""
    head = i32(1) if with_subtask else b""
    return head + i32(0) + i32(2 if input_ else 3) + i32(2) + i64(0) + i64(8) + i64(size) + delegate


OID = [bytes([k]) * 16 for k in range(1, 8)]


@pytest.fixture(scope="module")
def real_trailer(real_cases) -> bytes:
    _, data = real_cases["1.20"][0]
    return data[parse_metadata(data).body_end :]


def test_format2_flink_1_9_layout():
    """SavepointV2Serializer (1.9/1.10): chain length, duration, legacy count; tags 0-5; master state."""
    inc = incremental(False, byte_stream(3), [file_handle(100), file_handle(50)], [byte_stream(7)])
    data = metadata(
        2,
        [
            operator(2, OID[0], 2, 128, [
                (0, subtask(2, mo=op_handle(byte_stream(10)), mk=key_groups(3, file_handle(1234)))),
                (1, subtask(2, mk=inc)),
            ]),
            operator(2, OID[1], 3, 128, []),
            operator(2, OID[2], 1, 128, [(0, subtask(2))]),
        ],
        masters=[master_state("hook-1", b"\x01\x02\x03")],
    )  # fmt: skip
    meta = parse_metadata(data)
    assert (meta.format_version, meta.checkpoint_id, meta.master_state_count) == (2, 42, 1)
    assert meta.master_state_names == ["hook-1"]
    assert (meta.trailer_bytes, meta.unparsed_bytes) == (0, 0)
    a, b, c = meta.operators
    assert a.operator_id == "01" * 16 and (a.parallelism, a.max_parallelism) == (2, 128)
    assert (a.has_state, a.state_size, a.subtask_count) == (True, 10 + 1234 + 3 + 100 + 50 + 7, 2)
    assert a.handle_types == [
        "managed_keyed:IncrementalRemoteKeyedStateHandle(meta=ByteStreamStateHandle, shared=[FileStateHandle], "
        "private=[ByteStreamStateHandle])",
        "managed_keyed:KeyGroupsStateHandle(FileStateHandle)",
        "managed_operator:OperatorStreamStateHandle(ByteStreamStateHandle)",
    ]
    assert (b.has_state, b.state_size, b.subtask_count) == (False, 0, 0)
    # a subtask entry whose handles are all empty: counted, but no state (OperatorSubtaskState.hasState)
    assert (c.has_state, c.state_size, c.subtask_count, c.has_subtask_state) == (False, 0, 1, False)
    assert c.operator_name is None and c.operator_uid is None


def _format3_operators(with_subtask: bool) -> list[bytes]:
    return [
        operator(3, OID[0], 2, 128, None),  # fully finished
        operator(3, OID[1], 3, 256, [
            (0, None),  # finished subtask: -(0 + 1)
            (1, subtask(3, mk=key_groups(12, relative(77), handle_id="kg-id") if with_subtask  # 1.11: tag 3
                        else key_groups(3, relative(77)),
                        inputs=[channel_v1(True, 16, byte_stream(32), with_subtask)],
                        outputs=[channel_v1(False, 9, file_handle(999), with_subtask)])),
        ], coord=byte_stream(5)),
    ]  # fmt: skip


def test_format3_finished_operators_channel_state_and_coordinator():
    meta = parse_metadata(metadata(3, _format3_operators(True)))
    done, op = meta.operators
    assert (done.fully_finished, done.has_state, done.subtask_count, done.state_size) == (True, False, 0, 0)
    assert (op.fully_finished, op.finished_subtasks, op.subtask_count) == (False, 1, 2)
    # channel handles declare their own size (not the delegate's): 16 + 9; + keyed 77 + coordinator 5
    assert (op.has_state, op.state_size, op.has_coordinator_state) == (True, 107, True)
    assert op.handle_types == [
        "coordinator:ByteStreamStateHandle",
        "input_channel:InputChannelStateHandle(ByteStreamStateHandle)",
        "managed_keyed:KeyGroupsStateHandle(RelativeFileStateHandle)",
        "output_channel:ResultSubpartitionStateHandle(FileStateHandle)",
    ]


def test_format3_flink_1_11_channel_state_without_subtask_index():
    legacy = metadata(3, _format3_operators(False))
    assert (
        parse_metadata(legacy, flink_line="1.11").operators
        == parse_metadata(metadata(3, _format3_operators(True))).operators
    )
    with pytest.raises(MetadataError):  # read with the 1.12+ layout it runs off its end
        parse_metadata(legacy)


def _changelog(version_line: str) -> bytes:
    """CHANGELOG_HANDLE(_V2) with an incremental base and both kinds of delta handles."""
    legacy = version_line == "1.14"
    v16 = version_line not in ("1.14", "1.15")
    base = incremental(not legacy, byte_stream(4), [relative(40)], [])  # 1.14 writes the v1 tag (5)
    mem = i8(9) + i32(0) + i32(128) + i64(1) + i64(3) + i32(2)
    mem += i32(0) + i32(3) + b"abc" + i32(-1) + i32(2) + b"xy"  # a data change and a META_KEY_GROUP change
    mem += b"" if legacy else jutf("mem-id")
    stream = i8(13 if v16 else 10) + i32(0) + i32(128) + i32(2)
    stream += i64(0) + file_handle(500) + i64(10) + file_handle(500) + i64(60)
    stream += b"" if legacy else i64(20) + jutf("stream-id") + (jutf("filesystem") if v16 else b"")
    out = i8(14 if v16 else 8) + i32(0) + i32(128) + (b"" if legacy else i64(77))
    out += i32(1) + base + i32(2) + mem + stream
    if not legacy:
        out += i64(5) + (i64(6) if v16 else b"") + jutf("changelog-id")
    return out


@pytest.mark.parametrize("version_line", ["1.14", "1.15", "1.16"])
def test_changelog_handles_per_release(version_line):
    data = metadata(3, [operator(3, OID[3], 1, 128, [(0, subtask(3, mk=_changelog(version_line)))])])
    meta = parse_metadata(data, flink_line=version_line)
    (op,) = meta.operators
    # materialized (4 + 40) + in-memory changes (3 + 2) + the stream handle's declared size 60
    assert (op.has_state, op.state_size) == (True, 109)
    assert op.handle_types == [
        "managed_keyed:ChangelogStateBackendHandleImpl(materialized=[IncrementalRemoteKeyedStateHandle("
        "meta=ByteStreamStateHandle, shared=[RelativeFileStateHandle], private=[])], "
        "nonMaterialized=[ChangelogStateHandleStreamImpl([FileStateHandle]), InMemoryChangelogStateHandle])"
    ]
    if version_line == "1.14":  # 1.15 changed these tags' layouts in place; the default reads 1.15+
        with pytest.raises(MetadataError):
            parse_metadata(data)


def test_format4_file_merging_segment_handles(real_trailer):
    """1.20 file merging: SEGMENT_PARTITIONABLE_OPERATOR_STATE_HANDLE over segment handles."""
    sub = subtask(
        4,
        mo=op_handle(segment(321), segment_dirs=("file:/tmp/taskowned", "file:/tmp/shared", 0)),
        ro=op_handle(i8(16), segment_dirs=("file:/tmp/taskowned", "file:/tmp/shared", 1)),
        mk=key_groups(12, segment(111), handle_id="kg"),
    )
    meta = parse_metadata(metadata(4, [operator(4, OID[4], 1, 128, [(0, sub)])], trailer=real_trailer))
    (op,) = meta.operators
    assert (op.has_state, op.state_size) == (True, 321 + 0 + 111)
    assert op.handle_types == [
        "managed_keyed:KeyGroupsStateHandle(SegmentFileStateHandle)",
        "managed_operator:FileMergingOperatorStreamStateHandle(SegmentFileStateHandle)",
        "raw_operator:EmptyFileMergingOperatorStreamStateHandle(EmptySegmentFileStateHandle)",
    ]
    assert (meta.trailer_bytes, meta.unparsed_bytes) == (len(real_trailer), 0)
    # a file-merging operator handle must delegate to a segment handle (Preconditions.checkArgument)
    bad = subtask(4, mo=op_handle(byte_stream(3), segment_dirs=("a", "b", 0)))
    with pytest.raises(MetadataError, match="SegmentFileStateHandle"):
        parse_metadata(metadata(4, [operator(4, OID[4], 1, 128, [(0, bad)])], trailer=real_trailer))


def test_format5_name_and_uid_in_modified_utf8(real_trailer):
    name = "Map\x00 → 😀 \u00e9"
    data = metadata(5, [operator(5, OID[5], 1, 128, [], name=name, uid=""),
                        operator(5, OID[6], 1, 128, [], name="", uid="my-uid")],
                    trailer=real_trailer)  # fmt: skip
    assert b"\xc0\x80" in data and b"\xed\xa0\xbd\xed\xb8\x80" in data  # NUL and the CESU-8 pair
    a, b = parse_metadata(data).operators
    assert (a.operator_name, a.operator_uid) == (name, None)
    assert (b.operator_name, b.operator_uid) == (None, "my-uid")


def test_format6_tagged_and_merged_channel_state(real_trailer):
    merged = i8(3) + i32(0) + i64(44) + byte_stream(10) + i32(6) + b"\x00" * 6
    plain_out = i8(2) + channel_v1(False, 5, file_handle(1))
    sub = subtask(6, inputs=[merged], outputs=[plain_out])
    meta = parse_metadata(metadata(6, [operator(6, OID[0], 1, 128, [(0, sub)])], trailer=real_trailer))
    (op,) = meta.operators
    assert (op.has_state, op.state_size) == (True, 49)
    assert op.handle_types == [
        "input_channel:MergedInputChannelStateHandle(ByteStreamStateHandle)",
        "output_channel:ResultSubpartitionStateHandle(FileStateHandle)",
    ]
    merged_out = i8(4) + i32(0) + i64(7) + NULL + i32(0)
    sub = subtask(6, inputs=[i8(1) + channel_v1(True, 2, byte_stream(1))], outputs=[merged_out])
    (op,) = parse_metadata(metadata(6, [operator(6, OID[0], 1, 128, [(0, sub)])], trailer=real_trailer)).operators
    assert op.handle_types == [
        "input_channel:InputChannelStateHandle(ByteStreamStateHandle)",
        "output_channel:MergedResultSubpartitionStateHandle(null)",
    ]
    assert op.state_size == 9


def test_every_tag_of_every_release_is_exercised(real_trailer):
    """The tests above together reach every handle tag Flink 1.9 - 2.3 defines (0-17, channel 1-4)."""
    seen: set[str] = set()
    for version_line in ("1.15", "1.16"):
        data = metadata(3, [operator(3, OID[3], 1, 128, [(0, subtask(3, mk=_changelog(version_line)))])])
        seen |= parse_metadata(data).tags_seen
    seen |= parse_metadata(metadata(3, _format3_operators(True))).tags_seen
    inc1 = incremental(False, byte_stream(3), [file_handle(1)], [])
    seen |= parse_metadata(metadata(2, [operator(2, OID[0], 1, 1, [(0, subtask(2, mk=inc1))])])).tags_seen
    kg_in_stream = key_groups(3, byte_stream(1))  # a KeyGroupsStateHandle in a stream-handle position
    savepoint_kg = key_groups(7, kg_in_stream)
    seen |= parse_metadata(
        metadata(3, [operator(3, OID[0], 1, 1, [(0, subtask(3, mo=op_handle(byte_stream(2)), mk=savepoint_kg))])])
    ).tags_seen
    sub = subtask(
        4, mo=op_handle(segment(1), segment_dirs=("a", "b", 0)), ro=op_handle(i8(16), segment_dirs=("a", "b", 1))
    )
    seen |= parse_metadata(metadata(4, [operator(4, OID[0], 1, 1, [(0, sub)])], trailer=real_trailer)).tags_seen
    merged_in = i8(3) + i32(0) + i64(1) + NULL + i32(0)
    merged_out = i8(4) + i32(0) + i64(1) + NULL + i32(0)
    sub = subtask(6, inputs=[merged_in, i8(1) + channel_v1(True, 1, byte_stream(1))],
                  outputs=[merged_out, i8(2) + channel_v1(False, 1, byte_stream(1))])  # fmt: skip
    seen |= parse_metadata(metadata(6, [operator(6, OID[0], 1, 1, [(0, sub)])], trailer=real_trailer)).tags_seen
    tags = {int(t.split(":")[1]) for t in seen if not t.startswith("channel:")}
    assert tags == set(range(18))
    assert {int(t.split(":")[1]) for t in seen if t.startswith("channel:")} == {1, 2, 3, 4}


# ------------------------------------------------------------------------------------------------
#  Errors: where Flink stops, we stop, with the byte offset
# ------------------------------------------------------------------------------------------------


def _raises_at(data: bytes, offset: int, match: str) -> None:
    with pytest.raises(MetadataError, match=match) as e:
        parse_metadata(data)
    assert e.value.offset == offset, str(e.value)
    assert f"(at byte {offset})" in str(e.value)


def test_errors_carry_the_offset(real_trailer):
    _raises_at(b"PK\x03\x04 not a savepoint", 0, "not a Flink _metadata file")
    _raises_at(b"", 0, "truncated")
    _raises_at(i32(0x4960672D) + i32(7) + b"\x00" * 20, 4, "unknown metadata version 7")
    _raises_at(i32(0x4960672D) + i32(1), 4, "version 1")
    head = i32(0x4960672D) + i32(3) + i64(1) + i32(0) + i32(1) + OID[0] + i32(1) + i32(1) + NULL + i32(1) + i32(0)
    head += i32(0) + i32(0)  # no managed / raw operator state
    _raises_at(head + i8(18) + b"\x00" * 40, len(head), "invalid KeyedStateHandle, type: 18")
    _raises_at(head + i8(-3) + b"\x00" * 40, len(head), "type: -3")
    kg = i8(7) + i32(0) + i32(1) + i64(0)
    _raises_at(head + kg + i8(99), len(head) + len(kg), "StreamStateHandle, code: 99")
    coord = metadata(3, [operator(3, OID[0], 1, 1, [], coord=file_handle(3))])
    _raises_at(coord, 8 + 8 + 4 + 4 + 16 + 8, "expected a ByteStreamStateHandle")
    finished_with_coord = metadata(3, [operator(3, OID[0], 1, 1, None, coord=byte_stream(1))])
    with pytest.raises(MetadataError, match="fully finished"):
        parse_metadata(finished_with_coord)
    out_of_range = metadata(3, [operator(3, OID[0], 2, 128, [(2, subtask(3))])])
    _raises_at(out_of_range, 8 + 8 + 4 + 4 + 16 + 8 + 1 + 4, "outside the operator's parallelism 2")
    any_negative = metadata(3, [operator(3, OID[0], 1, 1, [])])[:-4] + i32(-7)  # Flink: any count < 0 = finished
    assert parse_metadata(any_negative).operators[0].fully_finished
    missing_trailer = metadata(4, [operator(4, OID[0], 1, 1, [])])
    _raises_at(missing_trailer, len(missing_trailer), "truncated")
    # the trailer must be what Flink's ObjectInputStream can load: known classes and enum constants
    wrong_class = real_trailer.replace(b"CheckpointProperties", b"CheckpointPropertieX")
    with pytest.raises(MetadataError, match="CheckpointPropertieX cannot be resolved"):
        parse_metadata(metadata(4, [], trailer=wrong_class))
    with pytest.raises(MetadataError, match="expected org.apache.flink.runtime.checkpoint.CheckpointProperties"):
        parse_metadata(metadata(4, [], trailer=b"\xac\xed\x00\x05t\x00\x03abc"))
    assert b"CANONICAL" in real_trailer
    with pytest.raises(MetadataError, match="enum constant CALONICAL does not exist"):
        parse_metadata(metadata(4, [], trailer=real_trailer.replace(b"CANONICAL", b"CALONICAL")))
    enum_desc = b"SavepointFormatType\x00\x00\x00\x00\x00\x00\x00\x00"
    assert enum_desc in real_trailer
    with pytest.raises(MetadataError, match="enum descriptor has non-zero serialVersionUID"):
        parse_metadata(metadata(4, [], trailer=real_trailer.replace(enum_desc, enum_desc[:-1] + b"\x01")))
    # the checks of the objects Flink builds while reading: OperatorState, KeyGroupRange(Offsets)
    _raises_at(metadata(3, [operator(3, OID[0], 9, 8, [])]), 8 + 8 + 4 + 4 + 16 + 8, "Parallelism 9 is not smaller")
    prefix = metadata(3, [operator(3, OID[0], 1, 128, [(0, subtask(3))])])[: -2 - 8]  # up to the keyed handles
    bad_range = i8(7) + i32(-1) + i32(2) + i64(0) + i64(0) + NULL + NULL + i32(0) + i32(0)
    _raises_at(prefix + bad_range, len(prefix) + 9, "invalid key-group range")
    empty_range = i8(7) + i32(5) + i32(0) + byte_stream(0) + NULL + i32(0) + i32(0)  # start > end: empty range
    assert parse_metadata(prefix + empty_range).operators[0].handle_types == [
        "managed_keyed:KeyGroupsSavepointStateHandle(ByteStreamStateHandle)"
    ]
    # path strings become org.apache.flink.core.fs.Path objects, which refuse some strings
    for bad_path, why in (("", "empty string"), ("hdfs:relative/x", "Relative path in absolute URI"),
                          ("1abc:/x", "Illegal character in scheme")):  # fmt: skip
        handle = i8(7) + i32(0) + i32(1) + i64(0) + relative(3, bad_path)
        _raises_at(prefix + handle + NULL + i32(0) + i32(0), len(prefix) + 18, why)
    for good_path in ("C:relative", "x/y:z", "file:/abs", "s3://bucket/a/b", "s3://bucket"):
        handle = i8(7) + i32(0) + i32(1) + i64(0) + file_handle(3, good_path)
        assert parse_metadata(prefix + handle + NULL + i32(0) + i32(0)).operators[0].state_size == 3
    # Flink's deserializeCollection loops 'for i < size': a negative channel-state count is an empty list
    negative_channels = metadata(3, [operator(3, OID[0], 1, 1, [(0, subtask(3))])])[:-8] + i32(-5) + i32(0)
    assert parse_metadata(negative_channels).operators[0].subtask_count == 1
    # and V2 loops 'for j < numSubTaskStates': a negative count is no subtasks, not a finished operator
    negative_v2 = metadata(2, [operator(2, OID[0], 1, 1, [])])[:-4] + i32(-1)
    assert not parse_metadata(negative_v2).operators[0].fully_finished
    no_delegate = i8(7) + i32(0) + i32(1) + i64(0) + NULL
    _raises_at(prefix + no_delegate + NULL + i32(0) + i32(0), len(prefix + no_delegate), "without a delegate")
    legacy = metadata(2, [operator(2, OID[0], 1, 1, [(0, i64(0) + i32(1))])])
    with pytest.raises(MetadataError, match="Legacy state"):
        parse_metadata(legacy)


# ------------------------------------------------------------------------------------------------
#  Modified UTF-8 (DataInput.readUTF)
# ------------------------------------------------------------------------------------------------


def test_modified_utf8_by_javas_rules():
    assert decode_modified_utf8(b"plain") == "plain"
    assert decode_modified_utf8(b"a\xc0\x80b") == "a\x00b"  # NUL as C0 80
    assert decode_modified_utf8(b"\x00") == "\x00"  # Java also reads a bare 0 byte
    assert decode_modified_utf8(b"\xc3\xa9\xe2\x82\xac") == "é€"
    assert decode_modified_utf8(b"\xed\xa0\xbd\xed\xb8\x80") == "😀"  # CESU-8 surrogate pair D83D DE00
    assert decode_modified_utf8(b"\xed\xa0\xbd") == "\ud83d"  # a lone surrogate stays one, as in Java
    assert decode_modified_utf8(b"\xc1\x81") == "A"  # Java does not reject overlong forms
    for bad in (b"\x80", b"\xf0\x9f\x98\x80", b"\xc3", b"\xe2\x82", b"\xc3\x41", b"\xf8"):
        with pytest.raises(MetadataError):
            decode_modified_utf8(bad)
    with pytest.raises(MetadataError) as e:
        decode_modified_utf8(b"ab\xe2\x28\xa1", offset=100)
    assert e.value.offset == 104
    assert jutf("a\x00😀") == b"\x00\x09a\xc0\x80\xed\xa0\xbd\xed\xb8\x80"


# ------------------------------------------------------------------------------------------------
#  Mutations: a MetadataError or a parse, never another exception or a hang
# ------------------------------------------------------------------------------------------------


def test_truncated_and_bit_flipped_files_never_crash(real_cases, real_trailer):
    rng = random.Random(20261123)
    pool = [d for line in LINES for _, d in real_cases[line][:15]]
    pool.append(metadata(3, _format3_operators(True)))
    pool.append(metadata(3, [operator(3, OID[3], 1, 128, [(0, subtask(3, mk=_changelog("1.16")))])]))
    outcomes = {"parsed": 0, "error": 0}
    for _ in range(400):
        data = bytearray(rng.choice(pool))
        kind = rng.random()
        if kind < 0.35:
            data = data[: rng.randrange(len(data))]
        elif kind < 0.8:
            for _ in range(rng.randint(1, 4)):
                j = rng.randrange(len(data))
                data[j] ^= 1 << rng.randrange(8)
        else:
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            parse_metadata(bytes(data))
            outcomes["parsed"] += 1
        except MetadataError as e:
            assert 0 <= e.offset <= len(data)
            outcomes["error"] += 1
    assert outcomes["error"] > 100 and outcomes["parsed"] > 20, outcomes


def test_adversarial_counts_fail_fast():
    big = i32(0x4960672D) + i32(3) + i64(1) + i32(0) + i32(2**31 - 1)
    _raises_at(big, 20, "number of operator states")
    deep = i32(0x4960672D) + i32(3) + i64(1) + i32(0) + i32(1) + OID[0] + i32(1) + i32(1) + NULL + i32(1) + i32(0)
    deep += i32(0) + i32(0) + (i8(14) + i32(0) + i32(1) + i64(0) + i32(1)) * 200
    with pytest.raises(MetadataError, match="nested deeper"):
        parse_metadata(deep)
    java_resets = metadata(4, [], trailer=b"\xac\xed\x00\x05" + b"\x79" * 5000 + b"\x70")  # TC_RESET..., null
    with pytest.raises(MetadataError, match="trailer is a serialized None"):
        parse_metadata(java_resets)
    with pytest.raises(MetadataError):
        parse_metadata(metadata(4, [], trailer=b"\xac\xed\x00\x05" + b"\x73\x72" * 3000))


# ------------------------------------------------------------------------------------------------
#  Spark: many savepoints at once, per-savepoint errors
# ------------------------------------------------------------------------------------------------


def test_read_savepoints_on_spark(spark, real_cases, tmp_path):
    from pipeline.restore.savepoints import (
        SAVEPOINT_ERRORS_SCHEMA,
        SAVEPOINT_OPERATORS_SCHEMA,
        read_savepoint_tables,
    )

    cases = real_cases["1.20"][:4] + real_cases["2.3"][:4]
    paths, expected = [], {}
    for k, (record, data) in enumerate(cases):
        folder = tmp_path / f"savepoint-{k}"
        folder.mkdir()
        (folder / "_metadata").write_bytes(data)
        given = str(folder) if k % 3 else f"file://{folder}/_metadata"
        paths.append(given)
        expected[given] = record["savepoint"]
    renamed = tmp_path / "copy.metadata"  # a renamed copy: read by binaryFile on the executors
    renamed.write_bytes(cases[0][1])
    paths.append(str(renamed))
    expected[str(renamed)] = cases[0][0]["savepoint"]
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "_metadata").write_bytes(bytes(random.Random(1).randrange(256) for _ in range(5000)))
    (tmp_path / "truncated").mkdir()
    (tmp_path / "truncated" / "_metadata").write_bytes(cases[1][1][:600])
    (tmp_path / "empty-folder").mkdir()
    bad = [
        str(tmp_path / "garbage"),
        str(tmp_path / "truncated"),
        str(tmp_path / "empty-folder"),
        str(tmp_path / "nope"),
    ]
    tables = read_savepoint_tables(spark, paths + bad)

    assert tables.operators.columns == SAVEPOINT_OPERATORS_SCHEMA.fieldNames()
    assert tables.errors.columns == SAVEPOINT_ERRORS_SCHEMA.fieldNames()
    rows = tables.operators.collect()
    by_savepoint: dict[str, list] = {}
    for row in rows:
        by_savepoint.setdefault(row.savepoint, []).append(row)
    assert set(by_savepoint) == set(expected)
    for given, sp in expected.items():
        got = sorted(by_savepoint[given], key=lambda r: r.operator_index)
        assert [r.operator_index for r in got] == list(range(len(sp["operators"])))
        for row, want in zip(got, sp["operators"], strict=True):
            assert row.format_version == sp["metadata_version"] and row.checkpoint_id == sp["checkpoint_id"]
            assert (row.operator_id, row.parallelism, row.max_parallelism) == (
                want["operator_id"], want["parallelism"], want["max_parallelism"])  # fmt: skip
            assert (row.has_state, row.state_size) == (want["has_state"], want["state_size"])
            assert (row.operator_name, row.operator_uid) == (want.get("operator_name"), want.get("operator_uid"))
            assert sorted(row.handle_types) == sorted(f"{k}:{t}" for k, ts in want["handles"].items() for t in ts)

    errors = {r.savepoint: r for r in tables.errors.collect()}
    assert set(errors) == set(bad)
    assert errors[bad[0]].error_offset == 0 and "not a Flink _metadata file" in errors[bad[0]].error
    assert "truncated" in errors[bad[1]].error and 0 < errors[bad[1]].error_offset <= 600
    assert f"(at byte {errors[bad[1]].error_offset})" in errors[bad[1]].error
    assert errors[bad[2]].error == "no _metadata file in the savepoint folder"
    assert errors[bad[3]].error == "savepoint path does not exist"
    summaries = {r.savepoint: r for r in tables.savepoints.collect()}
    assert len(summaries) == len(paths) + len(bad)
    assert all(summaries[p].ok and summaries[p].unparsed_bytes == 0 for p in paths)


def test_spark_strings_without_lone_surrogates():
    from pipeline.restore.savepoints import _spark_str

    assert _spark_str("a\ud83db") == "a\ufffdb"
    assert _spark_str("😀") == "😀"
    assert _spark_str(None) is None


# ------------------------------------------------------------------------------------------------
#  The synthetic files read by real Flink (tests/savepoints/record_flink_reads.sh)
# ------------------------------------------------------------------------------------------------

SYNTHETIC = Path(__file__).resolve().parent / "savepoints" / "synthetic"


def test_synthetic_files_are_what_the_builder_writes():
    """The committed fixtures are exactly the output of build_synthetic.py (no drift from the writers)."""
    from tests.savepoints.build_synthetic import cases

    built = cases()
    manifest = json.loads((SYNTHETIC / "cases.json").read_text())
    assert set(built) == set(manifest)
    for name, (data, line) in built.items():
        assert (SYNTHETIC / name / "_metadata").read_bytes() == data, name
        assert manifest[name]["flink_line"] == line


def test_synthetic_files_read_as_real_flink_read_them():
    """Flink 1.20.5, 2.0.2 and 2.3.0 read every synthetic file; the reader agrees field by field,
    and where Flink fails (a version it does not know, or the 1.11 / 1.14 layouts that later
    releases cannot read) the reader fails too unless told the older release's layout."""
    manifest = json.loads((SYNTHETIC / "cases.json").read_text())
    reads = [json.loads(line) for line in (SYNTHETIC / "flink_reads.jsonl").read_text().splitlines()]
    assert {r["flink"] for r in reads} == {"1.20.5", "2.0.2", "2.3.0"}
    assert {r["file"] for r in reads} == set(manifest)
    compared = 0
    for read in reads:
        data = (SYNTHETIC / read["file"] / "_metadata").read_bytes()
        line = manifest[read["file"]]["flink_line"]
        if "error" in read:
            version = struct.unpack(">i", data[4:8])[0]
            too_new = f"Unrecognized checkpoint version number: {version}" in read["error"]
            assert too_new or line is not None, read
            if line is not None:  # an older release's layout: the default (1.15+ / 1.12+) reading fails as Flink's
                with pytest.raises(MetadataError):
                    parse_metadata(data)
            continue
        meta = parse_metadata(data, flink_line=line)
        assert meta.checkpoint_id == read["checkpoint_id"] and meta.master_state_count == read["master_states"]
        assert meta.unparsed_bytes == read["remaining_bytes"] == 0
        for op, want in zip(meta.operators, read["operators"], strict=True):
            got = {k: getattr(op, k) for k in want}
            assert got == want, (read["flink"], read["file"])
            compared += 1
    assert compared == 34  # 21 successful reads of 1-3 operators each


@pytest.mark.parametrize(
    ("archive", "version"),
    [("sp-1.20-s11-format3-by-flink-1.20.5.tar.gz", 3), ("sp-1.20-s11-format5-by-flink-2.0.2.tar.gz", 5)],
)
def test_real_savepoints_rewritten_by_flinks_own_writers(real_cases, archive, version):
    """The 60 real 1.20 savepoints, loaded and written again by real Flink: format 3 by flink-runtime
    1.20.5's MetadataV3Serializer (the 1.11 - 1.15 layout) and format 5 by Flink 2.0.2's
    Checkpoints.storeCheckpointMetadata (tests/savepoints/reserialize.sh). Same state, so every
    operator must read as Flink read the original file."""
    recorded = {r["savepoint_metadata"].removesuffix(".metadata"): r["savepoint"] for r, _ in real_cases["1.20"]}
    with tarfile.open(Path(__file__).resolve().parent / "savepoints" / "reserialized" / archive) as tar:
        files = {m.name.split("/")[-2]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert set(files) == set(recorded)
    for name, data in files.items():
        meta = parse_metadata(data)
        assert (meta.format_version, meta.unparsed_bytes) == (version, 0)
        assert (meta.trailer_bytes > 0) == (version >= 4)
        sp = recorded[name]
        assert meta.checkpoint_id == sp["checkpoint_id"]
        got = [
            (o.operator_id, o.parallelism, o.max_parallelism, o.has_state, o.state_size, o.subtask_count,
             o.operator_name, o.operator_uid, o.handle_types)
            for o in meta.operators
        ]  # fmt: skip
        want = [
            (e["operator_id"], e["parallelism"], e["max_parallelism"], e["has_state"], e["state_size"],
             e["subtask_states"], None, None, sorted(f"{k}:{t}" for k, ts in e["handles"].items() for t in ts))
            for e in sp["operators"]
        ]  # fmt: skip
        assert got == want, name


def test_reading_release_limits_formats_and_tags(real_cases):
    """Given the release that reads the file, formats and tags newer than it fail as in that release."""
    _, v6 = real_cases["2.3"][0]
    with pytest.raises(MetadataError, match="Unrecognized checkpoint version number: 6"):
        parse_metadata(v6, flink_line="2.0.2")
    assert parse_metadata(v6, flink_line="2.1").format_version == 6
    _, v4 = real_cases["1.20"][0]
    with pytest.raises(MetadataError, match="Unrecognized checkpoint version number: 4"):
        parse_metadata(v4, flink_line="1.15.4")
    v3 = v4[:4] + i32(3) + v4[8 : parse_metadata(v4).body_end]  # tags 7 and 12 in a format-3 body
    assert parse_metadata(v3, flink_line="1.15").operators == parse_metadata(v4).operators
    with pytest.raises(MetadataError, match="type: 12|type: 7"):
        parse_metadata(v3, flink_line="1.12")
    relative_in_v2 = metadata(2, [operator(2, OID[0], 1, 1, [(0, subtask(2, mo=op_handle(relative(5))))])])
    assert parse_metadata(relative_in_v2, flink_line="1.11").operators[0].state_size == 5
    with pytest.raises(MetadataError, match="StreamStateHandle, code: 6"):
        parse_metadata(relative_in_v2, flink_line="1.10.3")
