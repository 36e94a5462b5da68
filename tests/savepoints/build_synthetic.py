"""Write the synthetic ``_metadata`` files of tests/savepoints/synthetic/ (layouts no real file has).

Each file is built with the writer-side helpers of tests/test_savepoint_metadata.py (which follow
Flink's ``serialize*`` methods). tests/savepoints/record_flink_reads.sh then lets real Flink
(1.20.5, 2.0.2, 2.3.0) read every file and records what it read; the CI test compares the
Python reader with those recordings. Run from the repository root:
``.venv/bin/python tests/savepoints/build_synthetic.py``.
"""

from __future__ import annotations

import gzip
import json
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.test_savepoint_metadata import (  # noqa: E402
    NULL,
    OID,
    RESTORE,
    _changelog,
    _format3_operators,
    byte_stream,
    channel_v1,
    file_handle,
    i8,
    i32,
    i64,
    incremental,
    key_groups,
    master_state,
    metadata,
    op_handle,
    operator,
    relative,
    segment,
    subtask,
)

OUT = Path(__file__).resolve().parent / "synthetic"


def real_trailer() -> bytes:
    """The CheckpointProperties trailer of a real Flink 1.20.5 savepoint (a Java object stream)."""
    from udfs.savepoint.metadata import parse_metadata

    with gzip.open(RESTORE / "savepoint-1.20-s11.jsonl.gz", "rt") as f:
        first = json.loads(f.readline())["savepoint_metadata"]
    with tarfile.open(RESTORE / "savepoint-1.20-s11-metadata.tar.gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(first))
        data = tar.extractfile(member).read()
    return data[parse_metadata(data).body_end :]


def cases() -> dict[str, tuple[bytes, str | None]]:
    """case name -> (file bytes, flink_line the Python reader needs for it)."""
    trailer = real_trailer()
    inc1 = incremental(False, byte_stream(3), [file_handle(100), file_handle(50)], [byte_stream(7)])
    v2 = metadata(
        2,
        [
            operator(2, OID[0], 2, 128, [
                (0, subtask(2, mo=op_handle(byte_stream(10)), mk=key_groups(3, file_handle(1234)))),
                (1, subtask(2, mk=inc1)),
            ]),
            operator(2, OID[1], 3, 128, []),
            operator(2, OID[2], 1, 128, [(0, subtask(2))]),
        ],
        masters=[master_state("hook-1", b"\x01\x02\x03")],
    )  # fmt: skip
    kg_in_stream = subtask(3, mo=op_handle(byte_stream(2), {"a": (1, [0]), "b": (2, [1, 2])}),
                           ro=op_handle(relative(9)), mk=key_groups(7, key_groups(3, byte_stream(5))),
                           rk=incremental(False, NULL, [relative(4)], [file_handle(6)]))  # fmt: skip
    merging = subtask(
        4,
        mo=op_handle(segment(321), segment_dirs=("file:/tmp/taskowned", "file:/tmp/shared", 0)),
        ro=op_handle(i8(16), segment_dirs=("file:/tmp/taskowned", "file:/tmp/shared", 1)),
        mk=key_groups(12, segment(111), handle_id="kg"),
    )
    merged_in = i8(3) + i32(0) + i64(44) + byte_stream(10) + i32(6) + b"\x00" * 6
    merged_out = i8(4) + i32(0) + i64(7) + file_handle(70) + i32(0)
    v6_channels = subtask(6, inputs=[merged_in, i8(1) + channel_v1(True, 2, byte_stream(2))],
                          outputs=[merged_out, i8(2) + channel_v1(False, 5, file_handle(1))])  # fmt: skip
    names = [
        operator(5, OID[5], 1, 128, [], name="Map\x00 → 😀 é", uid=""),
        operator(5, OID[6], 2, 256, [(1, subtask(5, mk=key_groups(7, relative(30))))], name="", uid="my-uid"),
        operator(5, OID[4], 2, 256, None, name="done", uid="done-uid"),
    ]
    return {
        "v2-flink-1.9-layout": (v2, None),
        "v3-finished-channel-coordinator": (metadata(3, _format3_operators(True), checkpoint_id=7), None),
        "v3-channel-flink-1.11-layout": (metadata(3, _format3_operators(False)), "1.11"),
        "v3-key-groups-in-stream-incremental-v1": (
            metadata(3, [operator(3, OID[1], 1, 128, [(0, kg_in_stream)])]),
            None,
        ),  # fmt: skip
        "v3-changelog-flink-1.14-layout": (
            metadata(3, [operator(3, OID[3], 1, 128, [(0, subtask(3, mk=_changelog("1.14")))])]),
            "1.14",
        ),  # fmt: skip # noqa: E501
        "v3-changelog-flink-1.15-layout": (
            metadata(3, [operator(3, OID[3], 1, 128, [(0, subtask(3, mk=_changelog("1.15")))])]),
            None,
        ),  # fmt: skip # noqa: E501
        "v3-changelog-flink-1.16-layout": (
            metadata(3, [operator(3, OID[3], 1, 128, [(0, subtask(3, mk=_changelog("1.16")))])]),
            None,
        ),  # fmt: skip # noqa: E501
        "v4-file-merging": (metadata(4, [operator(4, OID[4], 1, 128, [(0, merging)])], trailer=trailer), None),
        "v5-names-finished": (metadata(5, names, trailer=trailer), None),
        "v6-channel-state-v2": (metadata(6, [operator(6, OID[0], 1, 128, [(0, v6_channels)])], trailer=trailer), None),
    }


def main() -> None:
    manifest = {}
    for name, (data, line) in cases().items():
        folder = OUT / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "_metadata").write_bytes(data)
        manifest[name] = {"flink_line": line, "bytes": len(data)}
    (OUT / "cases.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"{len(manifest)} synthetic _metadata files under {OUT}")


if __name__ == "__main__":
    main()
