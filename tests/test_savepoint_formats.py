"""The layout of the ``_metadata`` reader: one reader class per format version, as Flink has one
serializer class per version, and one error base and byte reader for the package.

What each format reads is tested on real and built files in tests/test_savepoint_metadata.py;
this file pins the structure those readers share and the one place where the trailer walker
refuses what it could otherwise walk forever.
"""

from __future__ import annotations

import importlib
import struct
from pathlib import Path

import pytest

from udfs.savepoint import binary, metadata
from udfs.savepoint.format_base import FormatBase
from udfs.savepoint.handles import HandleReader
from udfs.savepoint.releases import Flink111Handles, Flink114Handles, reading_release


def test_registry_has_one_module_and_class_per_format():
    assert sorted(metadata.FORMATS) == [2, 3, 4, 5, 6] == list(metadata.SUPPORTED_VERSIONS)
    for version, cls in metadata.FORMATS.items():
        module = importlib.import_module(f"udfs.savepoint.format_v{version}")
        assert getattr(module, f"FormatV{version}") is cls and cls.VERSION == version


def test_each_format_extends_the_one_it_changes():
    """As in Flink: V2 and V3 extend the shared base, V4 extends V3, V5 V4 and V6 V5."""
    f = metadata.FORMATS
    assert f[2].__bases__ == (FormatBase,) and f[3].__bases__ == (FormatBase,)
    assert [f[v].__bases__ for v in (4, 5, 6)] == [(f[3],), (f[4],), (f[5],)]


@pytest.mark.parametrize(
    ("line", "handles", "newest"),
    [
        (None, HandleReader, None),
        ("1.11.6", Flink111Handles, 3),
        ("1.14.6", Flink114Handles, 3),
        ("2.0", HandleReader, 5),
    ],
)
def test_reading_release_picks_layouts_and_newest_format(line, handles, newest):
    release = reading_release(line)
    assert release.handles is handles and release.newest_format == newest


def test_one_error_base_for_the_package():
    for cls in (metadata.MetadataError, binary.StateMetaError):
        e = cls("bad bytes", 7)
        assert isinstance(e, binary.SavepointReadError) and isinstance(e, ValueError)
        assert (e.message, e.offset, str(e)) == ("bad bytes", 7, "bad bytes (at byte 7)")
    assert not issubclass(metadata.MetadataError, binary.StateMetaError)


def test_trailer_with_a_cyclic_class_hierarchy_is_refused():
    """A class descriptor whose superclass is a reference to itself: refused with an error at its
    offset, not walked forever."""
    name = metadata.CHECKPOINT_PROPERTIES_CLASS.encode()
    desc = b"\x72" + struct.pack(">H", len(name)) + name + struct.pack(">q", 2) + b"\x02\x00\x00\x78"
    stream = b"\xac\xed\x00\x05\x73" + desc + b"\x71" + struct.pack(">i", 0x7E0000)
    with pytest.raises(metadata.MetadataError, match="class hierarchy too deep") as e:
        metadata.read_java_serialized_object(stream, 0)
    assert e.value.offset == 4


def test_mutated_trailers_fail_only_as_metadata_errors():
    """The V4+ trailer (a Java-serialized CheckpointProperties) mutated byte by byte: the reader
    returns or raises MetadataError, never another exception (a corrupt trailer once raised
    IndexError after a stream reset inside an object, and TypeError on an enum constant whose
    'name' was a class descriptor)."""
    import random
    import tarfile

    from udfs.savepoint.metadata import MetadataError, parse_metadata

    root = Path(__file__).resolve().parent / "golden" / "restore"
    blobs = []
    for tar_path in sorted(root.glob("*-metadata.tar.gz")):
        with tarfile.open(tar_path) as tar:
            for m in tar.getmembers()[:6]:
                f = tar.extractfile(m)
                if f is not None:
                    blobs.append(f.read())
    rng = random.Random(4242)
    tried = 0
    for data in blobs:
        meta = parse_metadata(data)
        if meta.trailer_bytes == 0:
            continue
        start, end = meta.body_end, meta.body_end + meta.trailer_bytes
        for _ in range(600):
            buf = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(start, end)
                buf[i] = rng.choice((0x79, 0x7E, 0x71, 0x72, 0x73, 0x70, rng.randrange(256)))  # reset, enum, ref...
            tried += 1
            try:
                parse_metadata(bytes(buf))
            except MetadataError:
                pass
    assert tried > 1000
