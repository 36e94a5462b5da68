"""Differential check of the savepoint readers against an earlier revision of themselves.

Loads ``udfs/savepoint/{binary,java_objects,metadata}.py`` as they are at ``--base`` (from git,
into a throwaway package) and compares them with the working tree's readers on the same bytes:

* ``parse_metadata(data, flink_line)`` for every real ``_metadata`` file (the restore sets'
  ``*.tar.gz`` of tests/golden/restore and /work/shared/vectors/restore, and the ``_metadata``
  inside each /work/shared/vectors/statetypes/*/*.savepoint.tar.gz), the files built after
  Flink's writers (tests/savepoints/synthetic) and rewritten by Flink (tests/savepoints/
  reserialized), and ``--mutations`` seeded mutants of them (truncations, bit flips, byte
  changes, insertions, deletions, chunks spliced from another file), each with every
  ``--lines`` value;
* ``read_object_stream`` (the serializer snapshots' Java-object walker) on every embedded
  ``ObjectOutputStream`` stream of the statetypes state files and every ``_metadata`` trailer,
  and ``--object-mutations`` mutants of them, on complete and partial readers;
* both Java-object walkers (the trailer's ``read_java_serialized_object`` and
  ``read_object_stream``) on ``--grammar-streams`` random streams built from the serialization
  grammar (objects, enums, arrays, classes, proxies, long strings, block data, resets, back
  references to earlier handles, class names Flink resolves in a trailer and others), half of
  them mutated, so that every construct reaches the walkers far more often than in real files.

Results must be identical: every field of the parse (``repr`` of the result, ``tags_seen``
sorted) or the same exception type, message and offset (and ``truncated`` / ``need_more``).
Each call runs under a time limit; a call that exceeds it counts as the outcome ``timeout``.

  .venv/bin/python scripts/diff_savepoint_readers.py --base 29815d6 --mutations 200000
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import glob
import importlib
import random
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from udfs.savepoint import binary, java_objects, metadata  # noqa: E402

ARCHIVES = (
    str(ROOT / "tests" / "golden" / "restore" / "*.tar.gz"),
    "/work/shared/vectors/restore/*.tar.gz",
    "/work/shared/vectors/statetypes/*/*.savepoint.tar.gz",
)
# Files built after Flink's writers for the layouts no real file has (format 2, the 1.11 / 1.14
# layouts, changelog, channel state, file merging) and real files rewritten by Flink as formats 3 and 5.
BUILT = (str(ROOT / "tests" / "savepoints" / "synthetic" / "*" / "_metadata"),)
REWRITTEN = (str(ROOT / "tests" / "savepoints" / "reserialized" / "*.tar.gz"),)
LINES = (None, "1.11", "1.14.6", "1.15", "1.20", "2.0", "2.3")
STREAM_HEADER = b"\xac\xed\x00\x05"


class CallTimeout(BaseException):
    """Raised by the alarm inside a call that runs too long (not an Exception: no reader catches it)."""


def _alarm(signum: int, frame: object) -> None:
    raise CallTimeout


def load_base(rev: str, tmp: Path) -> tuple[object, object, object]:
    """The three modules at ``rev``, imported as the package ``base_savepoint``."""
    pkg = tmp / "base_savepoint"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("binary", "java_objects", "metadata"):
        src = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:udfs/savepoint/{name}.py"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (pkg / f"{name}.py").write_text(src.replace("from udfs.savepoint.", "from base_savepoint."))
    sys.path.insert(0, str(tmp))
    return tuple(importlib.import_module(f"base_savepoint.{n}") for n in ("binary", "java_objects", "metadata"))


def real_files(archives: tuple[str, ...]) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """(name, bytes) of every ``_metadata`` file in the archives, and of every other file (the
    statetypes savepoints' state files)."""
    metas, others = [], []
    for pattern in archives:
        for path in sorted(glob.glob(pattern)):
            with tarfile.open(path) as tar:
                for m in tar.getmembers():
                    if not m.isfile():
                        continue
                    data = tar.extractfile(m).read()
                    name = f"{Path(path).name}:{m.name}"
                    if path.endswith(".savepoint.tar.gz") and not m.name.endswith("/_metadata"):
                        others.append((name, data))
                    else:
                        metas.append((name, data))
    return metas, others


def canonical(value: object) -> str:
    """One string for a result, equal for equal results of either revision.

    The trailer's class descriptors (only in corrupted trailers, as field values) were
    ``_ClassDesc`` and are now ``java_objects.JClassDesc`` with the same fields, suid included:
    the names are mapped."""
    if dataclasses.is_dataclass(value) and hasattr(value, "tags_seen"):
        value = dataclasses.replace(value, tags_seen=sorted(value.tags_seen))  # type: ignore[arg-type]
    return repr(value).replace("_ClassDesc(", "JClassDesc(")


def outcome(seconds: float, call: Callable[..., object], *args: object) -> tuple:
    """``call(*args)``'s result as a canonical string, or its exception, or a timeout."""
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return ("ok", canonical(call(*args)))
    except CallTimeout:
        return ("timeout",)
    except Exception as e:  # every exception is an outcome to compare, also a reader's crash
        extra = tuple(getattr(e, a, None) for a in ("message", "offset", "truncated", "need_more"))
        return ("error", type(e).__name__, str(e).replace("'_ClassDesc'", "'JClassDesc'"), *extra)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


CYCLE = "Java serialization: class hierarchy too deep"


def tally(stats: collections.Counter[str], kind: str, old: tuple, new: tuple, data: bytes, where: str) -> None:
    """Counts one pair of outcomes; prints (and keeps in /tmp) the first few that differ.

    One difference is expected and counted apart: where the base walks a cyclic class hierarchy
    of a trailer forever (a timeout), the new reader refuses it as too deep."""
    stats[f"{kind} {old[0]}{'' if old[0] != 'error' else ' ' + old[1]}"] += 1
    if old == new:
        return
    if old == ("timeout",) and new[0] == "error" and new[3] == CYCLE:
        stats[f"{kind}: base never returns (cyclic class hierarchy), new refuses it"] += 1
        return
    stats["DIFFERENT"] += 1
    if stats["DIFFERENT"] <= 5:
        print(f"DIFFERENT ({where}):\n  base: {old!s:.600}\n  new:  {new!s:.600}")
        Path(f"/tmp/diff-savepoint-readers-{stats['DIFFERENT']}.bin").write_bytes(data)


def mutate(rng: random.Random, pool: list[bytes], regions: list[tuple[int, int]]) -> bytes:
    """One seeded mutant of a pool file: 1-3 edits, each anywhere or inside the file's trailer / head."""
    i = rng.randrange(len(pool))
    d = bytearray(pool[i])
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if not d:
            break
        lo, hi = 0, len(d)
        where = rng.random()
        if where < 0.3 and regions[i][0] < min(regions[i][1], len(d)):
            lo, hi = regions[i][0], min(regions[i][1], len(d))  # the trailer (formats 4+)
        elif where < 0.45:
            hi = min(len(d), 512)  # header and first operators
        j = rng.randrange(lo, hi)
        kind = rng.random()
        if kind < 0.15:
            del d[j:]
        elif kind < 0.45:
            for _ in range(rng.randint(1, 4)):
                k = rng.randrange(lo, hi) if hi <= len(d) else rng.randrange(len(d))
                d[k] ^= 1 << rng.randrange(8)
        elif kind < 0.6:
            for _ in range(rng.randint(1, 3)):
                d[rng.randrange(len(d))] = rng.randrange(256)
        elif kind < 0.7:
            d[j:j] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind < 0.8:
            del d[j : j + rng.randint(1, 16)]
        else:
            src = pool[rng.randrange(len(pool))]
            a = rng.randrange(len(src))
            chunk = src[a : a + rng.randint(1, 256)]
            if rng.random() < 0.5:
                d[j : j + len(chunk)] = chunk
            else:
                d[j:j] = chunk
    return bytes(d)


def compare_metadata(base_md: object, files: list[tuple[str, bytes]], args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    pool = [d for _, d in files]
    regions = []
    for d in pool:
        try:
            regions.append((base_md.parse_metadata(d).body_end, len(d)))
        except base_md.MetadataError:
            regions.append((len(d), len(d)))
    stats: collections.Counter[str] = collections.Counter()
    started = time.time()
    for n in range(len(pool) + args.mutations):
        data = pool[n] if n < len(pool) else mutate(rng, pool, regions)
        for line in args.lines:
            old = outcome(args.seconds, base_md.parse_metadata, data, line)
            new = outcome(args.seconds, metadata.parse_metadata, data, line)
            kind = "file" if n < len(pool) else "mutant"
            tally(stats, kind, old, new, data, f"input {n}, line {line}")
        if n and n % 20000 == 0:
            print(f"  {n} inputs, {time.time() - started:.0f} s, {stats['DIFFERENT']} different", flush=True)
    print(f"_metadata: {len(pool)} files + {args.mutations} mutants, x {len(args.lines)} reading releases")
    for key, count in sorted(stats.items()):
        print(f"  {key}: {count}")


def embedded_streams(files: list[tuple[str, bytes]], metas: list[tuple[str, bytes]]) -> list[bytes]:
    """Each ObjectOutputStream found in the state files (from its header on), and each trailer."""
    found = []
    for _, data in files:
        at = data.find(STREAM_HEADER)
        while at >= 0:
            found.append(data[at : at + 65536])
            at = data.find(STREAM_HEADER, at + 1)
    for _, data in metas:
        at = data.find(STREAM_HEADER, max(0, len(data) - 4096))
        if at >= 0:
            found.append(data[at:])
    return found


def read_objects(binary_module: object, objects_module: object, data: bytes, complete: bool) -> str:
    """``read_object_stream``'s value as text, without the ``suid`` JClassDesc has gained."""
    value = objects_module.read_object_stream(binary_module.Reader(data, complete=complete))
    return re.sub(r", suid=-?\d+\)", ")", repr(value))


def compare_objects(base_bin: object, base_jo: object, pool: list[bytes], args: argparse.Namespace) -> None:
    rng = random.Random(args.seed + 1)
    regions = [(0, len(d)) for d in pool]
    stats: collections.Counter[str] = collections.Counter()
    for n in range(len(pool) + args.object_mutations):
        data = pool[n] if n < len(pool) else mutate(rng, pool, regions)
        for complete in (True, False):
            old = outcome(args.seconds, read_objects, base_bin, base_jo, data, complete)
            new = outcome(args.seconds, read_objects, binary, java_objects, data, complete)
            tally(stats, "stream", old, new, data, f"object stream {n}")
    print(f"Java object streams: {len(pool)} real + {args.object_mutations} mutants, x 2 (complete, partial)")
    for key, count in sorted(stats.items()):
        print(f"  {key}: {count}")


TRAILER_NAMES = (
    "org.apache.flink.runtime.checkpoint.CheckpointProperties",
    "org.apache.flink.runtime.checkpoint.CheckpointType",
    "org.apache.flink.runtime.checkpoint.SavepointType",
    "org.apache.flink.core.execution.SavepointFormatType",
    "org.apache.flink.runtime.checkpoint.SavepointType$PostCheckpointAction",
    "org.apache.flink.runtime.checkpoint.SnapshotType$SharingFilesStrategy",
    "java.lang.Enum",
    "java.util.ArrayList",
    "[I",
    "[J",
    "[Ljava.lang.Object;",
    "?",
)
CONSTANTS = ("CANONICAL", "NATIVE", "NONE", "SUSPEND", "TERMINATE", "FORWARD", "NO_SHARING", "Savepoint", "x")


class StreamBuilder:
    """A random, mostly well-formed ``ObjectOutputStream`` stream (protocol 2)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.out = bytearray(STREAM_HEADER)
        self.handles = 0

    def utf(self, text: str) -> None:
        raw = text.encode("utf-8", "surrogatepass")
        if self.rng.random() < 0.03:
            raw = bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 4)))
        self.out += len(raw).to_bytes(2, "big") + raw

    def ref(self) -> None:
        self.out += b"\x71" + (0x7E0000 + self.rng.randrange(-1, self.handles + 2)).to_bytes(4, "big", signed=True)

    def class_desc(self, depth: int, name: str | None = None) -> list[str]:
        """Writes a descriptor; returns the field type codes of its whole hierarchy (topmost first)."""
        rng = self.rng
        pick = rng.random()
        if depth > 6 or pick < 0.1:
            self.out += b"\x70"
            return []
        if pick < 0.2 and self.handles:
            self.ref()
            return [rng.choice("ZBCSIJFDL") for _ in range(rng.randint(0, 3))]
        if pick < 0.25:
            self.out += b"\x7d" + rng.randint(0, 2).to_bytes(4, "big")
            self.handles += 1
            for _ in range(self.out[-1]):
                self.utf("java.io.Serializable")
            self.annotation(depth)
            return self.class_desc(depth + 1)
        self.out += b"\x72"
        self.utf(name or rng.choice(TRAILER_NAMES))
        self.out += rng.choice((0, 2, 2, 1, -5)).to_bytes(8, "big", signed=True)
        self.handles += 1
        self.out.append(rng.choice((0x02, 0x02, 0x03, 0x12, 0x0C, 0x06, 0x00, 0x04, 0x1A)))
        codes = [rng.choice("ZBCSIJFDLL[L") for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.02:
            codes.append(chr(rng.randrange(256)))
        self.out += len(codes).to_bytes(2, "big")
        for i, code in enumerate(codes):
            self.out.append(ord(code) & 0xFF)
            self.utf(f"f{i}")
            if code in "L[":
                if rng.random() < 0.8:
                    self.out += b"\x74"
                    self.utf("Ljava/lang/Object;")
                    self.handles += 1
                else:
                    self.content(depth + 1)
        self.annotation(depth)
        return self.class_desc(depth + 1) + codes

    def primitive(self, code: str) -> None:
        size = {"Z": 1, "B": 1, "C": 2, "S": 2, "I": 4, "F": 4, "J": 8, "D": 8}.get(code, 1)
        self.out += bytes(self.rng.choice((0, 1, self.rng.randrange(256))) for _ in range(size))

    def annotation(self, depth: int) -> None:
        for _ in range(self.rng.choice((0, 0, 0, 1, 2))):
            self.content(depth + 1)
        self.out += b"\x78"

    def content(self, depth: int) -> None:
        rng = self.rng
        pick = rng.random()
        if depth > 8 or pick < 0.08:
            self.out += b"\x70"
        elif pick < 0.16 and self.handles:
            self.ref()
        elif pick < 0.3:
            self.out += b"\x74"
            self.utf(rng.choice(CONSTANTS))
            self.handles += 1
        elif pick < 0.33:
            raw = rng.choice(CONSTANTS).encode()
            self.out += b"\x7c" + rng.choice((len(raw), len(raw), -1, 1 << 40)).to_bytes(8, "big", signed=True) + raw
            self.handles += 1
        elif pick < 0.55:
            self.out += b"\x73"
            codes = self.class_desc(depth + 1)
            self.handles += 1
            for code in codes:
                if code in "L[":
                    self.content(depth + 1)
                else:
                    self.primitive(code)
            if rng.random() < 0.2:
                self.annotation(depth)
        elif pick < 0.68:
            self.out += b"\x7e"
            self.class_desc(depth + 1, rng.choice(TRAILER_NAMES[3:7]) if rng.random() < 0.7 else None)
            self.handles += 1
            if rng.random() < 0.2:
                self.content(depth + 1)
            else:
                self.out += b"\x74"
                self.utf(rng.choice(CONSTANTS))
        elif pick < 0.76:
            self.out += b"\x75"
            self.class_desc(depth + 1, rng.choice(TRAILER_NAMES[8:11]))
            self.handles += 1
            n = rng.randint(0, 3)
            self.out += n.to_bytes(4, "big")
            for _ in range(n):
                if rng.random() < 0.5:
                    self.out += bytes(rng.randrange(256) for _ in range(rng.choice((4, 8))))
                else:
                    self.content(depth + 1)
        elif pick < 0.8:
            self.out += b"\x76"
            self.class_desc(depth + 1)
            self.handles += 1
        elif pick < 0.86:
            n = rng.randint(0, 6)
            self.out += (b"\x77" + bytes([n])) if rng.random() < 0.7 else (b"\x7a" + n.to_bytes(4, "big"))
            self.out += bytes(rng.randrange(256) for _ in range(n))
        elif pick < 0.9:
            self.out += b"\x79" * rng.randint(1, 3)
            self.handles = 0
            self.content(depth)
        elif pick < 0.93:
            self.out += b"\x72" if rng.random() < 0.5 else b"\x7d"
            self.out.pop()
            self.class_desc(depth + 1)
        else:
            self.out.append(rng.choice((0x7B, 0x78, 0x00, 0x6F, 0x7F)))


def deep_stream(rng: random.Random) -> bytes:
    """Items, class hierarchies or proxy chains 30 - 80 levels deep (both walkers' nesting
    limits lie in between), with names a trailer may hold."""

    def utf(text: str) -> bytes:
        return len(text).to_bytes(2, "big") + text.encode()

    def desc(name: str, flags: int, fields: bytes = b"", count: int = 0, superclass: bytes = b"\x70") -> bytes:
        suid = 2 if name == TRAILER_NAMES[0] else 0
        head = b"\x72" + utf(name) + suid.to_bytes(8, "big") + bytes([flags]) + count.to_bytes(2, "big")
        return head + fields + b"\x78" + superclass

    levels = rng.randint(30, 80)
    mode = rng.choice(("items", "items", "hierarchy", "proxies"))
    if mode == "hierarchy":
        chain = b"\x70"
        for _ in range(levels):
            chain = desc(rng.choice(TRAILER_NAMES[:3]), 0x02, superclass=chain)
        return STREAM_HEADER + b"\x73" + chain
    if mode == "proxies":
        chain = b"\x70"
        for _ in range(levels):
            chain = b"\x7d" + (0).to_bytes(4, "big") + b"\x78" + chain
        return STREAM_HEADER + b"\x76" + chain
    one_field = b"L" + utf("f") + b"\x74" + utf("Ljava/lang/Object;")
    out = b"\x70"
    for _ in range(levels):
        kind = rng.choice(("object", "array", "annotation", "enum"))
        if kind == "object":
            out = b"\x73" + desc(TRAILER_NAMES[0], 0x02, one_field, 1) + out
        elif kind == "array":
            out = b"\x75" + desc("[Ljava.lang.Object;", 0x02) + (1).to_bytes(4, "big") + out
        elif kind == "annotation":
            out = b"\x73" + desc(TRAILER_NAMES[0], 0x03) + out + b"\x78"
        else:
            out = b"\x7e" + desc(TRAILER_NAMES[3], 0x12) + out
    return STREAM_HEADER + out


def grammar_streams(seed: int, n: int) -> list[bytes]:
    rng = random.Random(seed)
    streams = []
    for _ in range(n):
        if rng.random() < 0.1:
            streams.append(deep_stream(rng))
            continue
        b = StreamBuilder(rng)
        if rng.random() < 0.5:  # a CheckpointProperties-like object first
            b.out += b"\x73"
            codes = b.class_desc(0, TRAILER_NAMES[0])
            b.handles += 1
            for code in codes:
                if code in "L[":
                    b.content(1)
                else:
                    b.primitive(code)
        else:
            b.content(0)
        streams.append(bytes(b.out))
    return streams


def read_trailer(metadata_module: object, data: bytes) -> object:
    return metadata_module.read_java_serialized_object(data, 0)


def compare_grammar(base_bin: object, base_jo: object, base_md: object, args: argparse.Namespace) -> None:
    rng = random.Random(args.seed + 2)
    pool = grammar_streams(args.seed + 3, args.grammar_streams)
    regions = [(0, len(d)) for d in pool]
    stats: collections.Counter[str] = collections.Counter()
    for n, data in enumerate(pool):
        if n % 2:
            data = mutate(rng, pool, regions)
        for name, old_call, new_call in (
            ("trailer", (read_trailer, base_md, data), (read_trailer, metadata, data)),
            (
                "objects",
                (read_objects, base_bin, base_jo, data, True),
                (read_objects, binary, java_objects, data, True),
            ),
        ):
            old = outcome(args.seconds, *old_call)
            new = outcome(args.seconds, *new_call)
            tally(stats, name, old, new, data, f"{name}, stream {n}")
    print(f"grammar-built Java object streams: {len(pool)} (half mutated), x 2 walkers")
    for key, count in sorted(stats.items()):
        print(f"  {key}: {count}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="git revision whose readers are the reference")
    ap.add_argument("--mutations", type=int, default=200_000)
    ap.add_argument("--object-mutations", type=int, default=50_000)
    ap.add_argument("--grammar-streams", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=1.0, help="time limit of one call")
    ap.add_argument("--lines", type=lambda s: [None if x == "none" else x for x in s.split(",")],
                    default=list(LINES), help="reading releases, comma-separated, 'none' for the default")  # fmt: skip
    args = ap.parse_args()
    signal.signal(signal.SIGALRM, _alarm)
    sys.setrecursionlimit(1000)
    with tempfile.TemporaryDirectory() as tmp:
        base_bin, base_jo, base_md = load_base(args.base, Path(tmp))
        metas, others = real_files(ARCHIVES)
        extra = real_files(REWRITTEN)[0] + [
            (path, Path(path).read_bytes()) for b in BUILT for path in sorted(glob.glob(b))
        ]
        print(f"{len(metas)} real _metadata files, {len(extra)} more built or rewritten by Flink")
        compare_metadata(base_md, metas + extra, args)
        compare_objects(base_bin, base_jo, embedded_streams(others, metas), args)
        compare_grammar(base_bin, base_jo, base_md, args)


if __name__ == "__main__":
    main()
