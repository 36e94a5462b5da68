"""Differential fuzz of udfs/savepoint/metadata.py against real Flink's reader.

Mutates real ``_metadata`` files (truncation, 1-3 bit flips), lets real Flink read every
mutant (tests/savepoints/MetadataProbe.java, compiled against a directory of Flink jars, e.g.
the restore harness build's target/flink-<line>/lib) and the Python reader, and prints how
often they agree: both fail, or both parse with the same operators (id, parallelism, max
parallelism, has_state, state_size, subtask counts, finished flags, name, uid).

  .venv/bin/python scripts/fuzz_savepoint_metadata_vs_flink.py --files 'DIR/*.metadata' \\
      --flink-lib harness/restore/target/flink-2.3/lib --n 1000 --seed 1
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from udfs.savepoint.metadata import MetadataError, parse_metadata  # noqa: E402


def mutate(rng: random.Random, data: bytes) -> bytes:
    d = bytearray(data)
    if rng.random() < 0.3:
        return bytes(d[: rng.randrange(len(d))])
    for _ in range(rng.randint(1, 3)):
        j = rng.randrange(len(d))
        d[j] ^= 1 << rng.randrange(8)
    return bytes(d)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", required=True, help="glob of real _metadata files to mutate")
    ap.add_argument("--flink-lib", required=True, help="directory with flink-runtime and its dependency jars")
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    sources = sorted(glob.glob(args.files))
    if not sources:
        sys.exit(f"no files match {args.files}")
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp) / "classes"
        classpath = f"{args.flink_lib}/*"
        subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", classpath,
                        str(ROOT / "tests" / "savepoints" / "MetadataProbe.java")], check=True)  # fmt: skip
        files = []
        for i in range(args.n):
            folder = Path(tmp) / f"{i:05d}"
            folder.mkdir()
            (folder / "_metadata").write_bytes(mutate(rng, Path(rng.choice(sources)).read_bytes()))
            files.append(folder / "_metadata")
        out = subprocess.run(["java", "-cp", f"{classes}:{classpath}", "MetadataProbe", *map(str, files)],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        flink = {r["file"]: r for r in map(json.loads, out.splitlines())}
        verdicts: collections.Counter[str] = collections.Counter()
        examples: dict[str, list[str]] = collections.defaultdict(list)
        for f in files:
            want = flink[f.parent.name]
            try:
                meta, error = parse_metadata(f.read_bytes()), None
            except MetadataError as e:
                meta, error = None, str(e)
            if "error" in want and error:
                kind = "agree: both fail"
            elif "error" in want:
                kind = "DIFFER: Flink fails, Python parses"
                examples[kind].append(want["error"][:160])
            elif error:
                kind = "DIFFER: Python fails, Flink parses"
                examples[kind].append(error)
            else:
                ops = [{k: getattr(o, k) for k in w} for o, w in zip(meta.operators, want["operators"], strict=False)]
                same = ops == want["operators"] and len(meta.operators) == len(want["operators"])
                same = same and meta.checkpoint_id == want["checkpoint_id"]
                same = same and meta.unparsed_bytes == want["remaining_bytes"]
                kind = "agree: both parse, same result" if same else "DIFFER: both parse, different result"
            verdicts[kind] += 1
    agree = sum(v for k, v in verdicts.items() if k.startswith("agree"))
    print(f"{args.n} mutants of {len(sources)} files, seed {args.seed}: {agree} agree ({100 * agree / args.n:.1f} %)")
    for kind, count in sorted(verdicts.items()):
        print(f"  {count:6d}  {kind}")
    for kind, items in examples.items():
        for item in items[:5]:
            print(f"    {kind}: {item}")


if __name__ == "__main__":
    main()
