"""Bundle the serializer snapshots and savepoints Flink keeps as test resources.

Flink's upgrade tests (``TypeSerializerUpgradeTestBase``) keep the snapshot each release wrote
as ``.../serializer-snapshot`` files, and its SQL restore and migration tests keep whole
savepoints (``_metadata`` and the files beside it). tests/test_state_meta.py decodes all of
them; this script packs them from a git directory of Flink's sources into one archive the test
reads, so CI runs that check without a copy of Flink's repository (the archive is ~250 KB).

    python scripts/flink_test_resources.py --git /path/to/flink/.git --ref HEAD
"""

from __future__ import annotations

import argparse
import io
import subprocess
import tarfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "savepoints" / "flink-test-resources.tar.xz"


def _git(git: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", git, *args], capture_output=True, check=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--git", required=True, help="a git directory of apache/flink (or a fork)")
    ap.add_argument("--ref", default="HEAD")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    names = _git(a.git, "ls-tree", "-r", "--name-only", a.ref).decode().split("\n")
    folders = {n.rsplit("/", 1)[0] for n in names if n.endswith("/_metadata")}
    keep = sorted(n for n in names if n.endswith("/serializer-snapshot") or (n and n.rsplit("/", 1)[0] in folders))
    commit = _git(a.git, "rev-parse", a.ref).decode().strip()
    date = _git(a.git, "log", "-1", "--format=%cI", a.ref).decode().strip()
    with tarfile.open(a.out, "w:xz") as tar:
        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))

        add("PROVENANCE", f"Flink sources at commit {commit} ({date}); {len(keep)} files\n".encode())
        for n in keep:
            add(n, _git(a.git, "show", f"{a.ref}:{n}"))
    print(f"{a.out}: {len(keep)} files from {commit}")


if __name__ == "__main__":
    main()
