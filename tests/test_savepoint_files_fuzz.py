"""``inventory`` names every damaged state file of a real savepoint (issue 41): a fuzz over real
Flink savepoints and retained checkpoints of conformance/statetypes (1.20 and 2.3: heap and RocksDB,
canonical and native savepoints, an incremental RocksDB checkpoint with its shared files).

Every file the ``_metadata`` names is, one damage per copy of the savepoint: cut at several
lengths (0, 1, half, one byte short), deleted, and, where a state stream starts in it (its
serialization proxy), each of the four bytes of its header (the proxy's version) flipped. One
``inventory`` over all copies and the whole originals: it ends (nothing aborts), the originals get
no error row, and every damaged copy gets error rows in ``savepoint_errors`` that name the damaged
file and no other. (A RocksDB SST file's own bytes are RocksDB's: a flip inside one is not
something the savepoint's format lets a reader see, so only truncation and deletion reach them.)
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from udfs.savepoint.metadata import parse_metadata

ROOT = Path(__file__).resolve().parent.parent
SETS = ROOT / "conformance" / "statetypes"
CASES = {  # case -> its set: one of each kind of savepoint the sets hold
    "st-1.20-s31-00265": "statetypes-1.20-s31",  # heap backend, canonical savepoint
    "st-2.3-s31-00081": "statetypes-2.3-s31",  # heap backend, native savepoint
    "st-2.3-s31-00271": "statetypes-2.3-s31",  # RocksDB, native savepoint
    "st-1.20-s31-00243": "statetypes-1.20-s31",  # RocksDB, incremental retained checkpoint (shared files)
}


def _unpack(case_id: str, set_name: str, dest: Path) -> Path:
    with gzip.open(SETS / f"{set_name}.jsonl.gz", "rt") as f:
        case = next(c for c in map(json.loads, f) if c["case_id"] == case_id)
    with tarfile.open(SETS / set_name / case["savepoint"]["archive"]) as tar:
        tar.extractall(dest, filter="data")
    return dest / case["savepoint"]["dir_name"]


def _damages(folder: Path) -> list[tuple[str, str, object]]:
    """(file name, damage, argument) for every file the _metadata names."""
    meta = parse_metadata((folder / "_metadata").read_bytes())
    heads: dict[str, set[int]] = {}
    for op in meta.operators:
        for s in op.state_streams:
            if s.ref.location != "inline":
                heads.setdefault(os.path.basename(s.ref.path), set()).add(s.ref.offset)
    names = sorted({os.path.basename(f.ref.path) for f in meta.files})
    assert names and all((folder / n).is_file() for n in names)
    out: list[tuple[str, str, object]] = []
    for name in names:
        size = (folder / name).stat().st_size
        out += [(name, "cut", n) for n in sorted({0, 1, size // 2, size - 1}) if n < size]
        out.append((name, "delete", None))
        out += [(name, "flip", at + i) for at in sorted(heads.get(name, ())) for i in range(4)]
    return out


def _damage(folder: Path, name: str, how: str, arg: object) -> None:
    path = folder / name
    if how == "delete":
        path.unlink()
    elif how == "cut":
        with open(path, "r+b") as f:
            f.truncate(int(arg))
    else:
        data = bytearray(path.read_bytes())
        data[int(arg)] ^= 0xFF
        path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def fuzzed(spark, settings, tmp_path_factory):
    """The fleet of whole and damaged copies, and one inventory over it: (copies, error rows)."""
    from pipeline.restore.inventory import inventory

    root = tmp_path_factory.mktemp("fuzz")
    fleet = root / "fleet"
    copies: dict[str, str | None] = {}  # savepoint folder -> the damaged file's name (None: whole)
    for case_id, set_name in CASES.items():
        original = _unpack(case_id, set_name, root / "originals" / case_id)
        shutil.copytree(original, fleet / case_id / "whole" / original.name)
        copies[str(fleet / case_id / "whole" / original.name)] = None
        for i, (name, how, arg) in enumerate(_damages(original)):
            copy = fleet / case_id / f"{i:03d}-{how}" / original.name
            shutil.copytree(original, copy)
            _damage(copy, name, how, arg)
            copies[str(copy)] = name
    out = root / "out"
    summary = inventory(spark, [str(fleet)], str(out), deletion_vectors=settings.tables.deletion_vectors)
    rows = spark.read.format("delta").load(str(out / "savepoint_errors")).collect()
    return copies, summary, [(r["savepoint"].removeprefix("file:"), r["error"]) for r in rows]


def test_every_damaged_state_file_is_named_and_nothing_aborts(fuzzed):
    copies, summary, errors = fuzzed
    assert summary.savepoints == len(copies) > 100 and summary.unreadable == 0
    by_savepoint: dict[str, list[str]] = {}
    for savepoint, error in errors:
        by_savepoint.setdefault(savepoint, []).append(error)
    assert set(by_savepoint) <= set(copies)
    whole = [s for s, damaged in copies.items() if damaged is None]
    assert [by_savepoint.get(s) for s in whole] == [None] * len(CASES)
    missed = {s: n for s, n in copies.items() if n is not None and not by_savepoint.get(s)}
    assert not missed, f"{len(missed)} damaged copies without an error row: {sorted(missed.items())[:5]}"
    wrong = {s: e for s, n in copies.items() if n is not None for e in by_savepoint[s] if n not in e}
    assert not wrong, f"error rows naming another file than the damaged one: {sorted(wrong.items())[:5]}"
    assert summary.damaged_files == len(errors)


def test_each_damage_is_said_as_what_it_is(fuzzed):
    """A deleted file is missing, a cut one names its length and what the handles take, a flipped
    header says its proxy does not decode."""
    copies, _, errors = fuzzed
    kinds = {}
    for savepoint, error in errors:
        how = Path(savepoint).parent.name.split("-", 1)[1]
        kinds.setdefault(how, set()).add(
            "missing" if error.endswith("file does not exist") else "truncated" if "the file is truncated" in error
            else "proxy" if "serialization proxy does not decode" in error else error
        )  # fmt: skip
    assert kinds == {"delete": {"missing"}, "cut": {"truncated"}, "flip": {"proxy"}}, kinds
