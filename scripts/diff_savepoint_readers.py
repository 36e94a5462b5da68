"""Differential check of the savepoint readers against an earlier revision of themselves.

Loads ``udfs/savepoint/{binary,java_objects,metadata}.py`` as they are at ``--base`` (from git,
into a throwaway package) and compares them with the working tree's readers on the same bytes:

* ``parse_metadata(data, flink_line)`` for every real ``_metadata`` file (the restore sets'
  ``*.tar.gz`` of tests/golden/restore and /work/shared/vectors/restore, and the ``_metadata``
  inside each /work/shared/vectors/statetypes/*/*.savepoint.tar.gz) and ``--mutations`` seeded
  mutants of them (truncations, bit flips, byte changes, insertions, deletions, chunks spliced
  from another file), each with every ``--lines`` value;
* ``read_object_stream`` (the serializer snapshots' Java-object walker) on every embedded
  ``ObjectOutputStream`` stream of the statetypes state files and every ``_metadata`` trailer,
  and ``--object-mutations`` mutants of them, on complete and partial readers.

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


def real_files() -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """(name, bytes) of every real ``_metadata`` file, and of every other file of the statetypes savepoints."""
    metas, others = [], []
    for pattern in ARCHIVES:
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
    """One string for a result, equal for equal results of either revision."""
    if dataclasses.is_dataclass(value) and hasattr(value, "tags_seen"):
        value = dataclasses.replace(value, tags_seen=sorted(value.tags_seen))  # type: ignore[arg-type]
    text = repr(value).replace("_ClassDesc(", "JClassDesc(")
    return re.sub(r", suid=-?\d+\)", ")", text)


def outcome(seconds: float, call: Callable[..., object], *args: object) -> tuple:
    """``call(*args)``'s result as a canonical string, or its exception, or a timeout."""
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return ("ok", canonical(call(*args)))
    except CallTimeout:
        return ("timeout",)
    except Exception as e:  # every exception is an outcome to compare, also a reader's crash
        extra = tuple(getattr(e, a, None) for a in ("message", "offset", "truncated", "need_more"))
        return ("error", type(e).__name__, str(e), *extra)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


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
            kind = "real" if n < len(pool) else "mutant"
            stats[f"{kind} {old[0]}{'' if old[0] != 'error' else ' ' + old[1]}"] += 1
            if old != new:
                stats["DIFFERENT"] += 1
                if stats["DIFFERENT"] <= 5:
                    print(f"DIFFERENT (input {n}, line {line}):\n  base: {old!s:.600}\n  new:  {new!s:.600}")
                    Path(f"/tmp/diff-metadata-{n}.bin").write_bytes(data)
        if n and n % 20000 == 0:
            print(f"  {n} inputs, {time.time() - started:.0f} s, {stats['DIFFERENT']} different", flush=True)
    print(f"_metadata: {len(pool)} real files + {args.mutations} mutants, x {len(args.lines)} reading releases")
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


def read_objects(binary_module: object, objects_module: object, data: bytes, complete: bool) -> object:
    return objects_module.read_object_stream(binary_module.Reader(data, complete=complete))


def compare_objects(base_bin: object, base_jo: object, pool: list[bytes], args: argparse.Namespace) -> None:
    rng = random.Random(args.seed + 1)
    regions = [(0, len(d)) for d in pool]
    stats: collections.Counter[str] = collections.Counter()
    for n in range(len(pool) + args.object_mutations):
        data = pool[n] if n < len(pool) else mutate(rng, pool, regions)
        for complete in (True, False):
            old = outcome(args.seconds, read_objects, base_bin, base_jo, data, complete)
            new = outcome(args.seconds, read_objects, binary, java_objects, data, complete)
            stats[f"{old[0]}{'' if old[0] != 'error' else ' ' + old[1]}"] += 1
            if old != new:
                stats["DIFFERENT"] += 1
                if stats["DIFFERENT"] <= 5:
                    print(f"DIFFERENT (object stream {n}):\n  base: {old!s:.600}\n  new:  {new!s:.600}")
                    Path(f"/tmp/diff-objects-{n}.bin").write_bytes(data)
    print(f"Java object streams: {len(pool)} real + {args.object_mutations} mutants, x 2 (complete, partial)")
    for key, count in sorted(stats.items()):
        print(f"  {key}: {count}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="git revision whose readers are the reference")
    ap.add_argument("--mutations", type=int, default=200_000)
    ap.add_argument("--object-mutations", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=5.0, help="time limit of one call")
    ap.add_argument("--lines", type=lambda s: [None if x == "none" else x for x in s.split(",")],
                    default=list(LINES), help="reading releases, comma-separated, 'none' for the default")  # fmt: skip
    args = ap.parse_args()
    signal.signal(signal.SIGALRM, _alarm)
    sys.setrecursionlimit(1000)
    with tempfile.TemporaryDirectory() as tmp:
        base_bin, base_jo, base_md = load_base(args.base, Path(tmp))
        metas, others = real_files()
        compare_metadata(base_md, metas, args)
        compare_objects(base_bin, base_jo, embedded_streams(others, metas), args)


if __name__ == "__main__":
    main()
