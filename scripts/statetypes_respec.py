"""Re-export the v1 / v2 specs of statetypes sets with the current exporter, leaving the real restores as recorded.

    .venv/bin/python scripts/statetypes_respec.py conformance/statetypes/statetypes-2.3-s21.jsonl.gz [...]

Why not regenerate: a set's programs, jars and runtime settings are deterministic in (seed, index),
but what Flink did (records before the savepoint, timings, a heap savepoint's HashMap order) is not;
rerunning 363 restores to add two spec fields would replace the ground truth the rest of the
project was checked against. The spec is the one part the exporter alone decides, so each side
is built again (``statetypes-respec`` of the restore harness: the recorded program, from the
case's own jar in ``<set>/jars``, the recorded runtime settings, with the Flink line that side ran
on; nothing runs) and its spec is spliced in, after checking that it is exactly the recorded spec
plus the exporter's new fields (:data:`NEW_FIELDS`). Builds the restore harness of each line it
needs (``mvn -o``; one build and one JVM at a time).
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "harness" / "restore"
# What the exporter writes now that the recorded specs lack, or writes differently (docs/spec-extensions.md):
# graph fields, and node fields (declared_states: what each operator declares, exporter changes since)
NEW_FIELDS = ("state_backend", "serializer_modules", "user_classes", "user_classes_skipped")
NEW_NODE_FIELDS = ("declared_states",)


def lines_of(set_name: str) -> tuple[str, str]:
    """(v1 line, v2 line) from a set name: ``statetypes-2.3-s21`` or ``statetypes-1.20to2.3-s21``."""
    middle = set_name.split("-")[1]
    if "to" in middle:
        a, b = middle.split("to")
        return a, b
    return middle, middle


def harness_jar(line: str) -> Path:
    jar = HARNESS / "target" / f"flink-{line}" / "flink-jobgraph-restore.jar"
    subprocess.run(["mvn", "-q", "-o", "-f", str(HARNESS / "pom.xml"), f"-Pflink-{line}", "package"], check=True)
    return jar


def respec_side(cases_file: Path, side: str, line: str, tmp: Path) -> dict[str, dict[str, Any]]:
    """case_id -> the spec this build's exporter writes for that side."""
    out = tmp / f"{side}.jsonl"
    cases_dir = cases_file.parent / cases_file.name.removesuffix(".jsonl.gz")
    cmd = ["java", "-jar", str(harness_jar(line)), "statetypes-respec", "--in", str(cases_file),
           "--cases-dir", str(cases_dir), "--side", side, "--out", str(out)]  # fmt: skip
    subprocess.run(cmd, check=True)
    specs = {}
    for raw in out.read_text().splitlines():
        d = json.loads(raw)
        specs[d["case_id"]] = d["spec"]
    return specs


def _bare(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec without the exporter's new fields (graph and node level)."""
    out = {k: v for k, v in spec.items() if k not in NEW_FIELDS}
    if isinstance(out.get("nodes"), list):
        out["nodes"] = [{k: v for k, v in n.items() if k not in NEW_NODE_FIELDS} for n in out["nodes"]]
    return out


def splice(rec: dict[str, Any], side: str, spec: dict[str, Any]) -> list[str]:
    """Put the new spec in; returns the differences (other than the new fields) from the recorded one."""
    old = rec[side]
    bare, old_bare = _bare(spec), _bare(old)
    problems = [f"{side}.{k}" for k in sorted(set(bare) | set(old_bare)) if bare.get(k) != old_bare.get(k)]
    if not problems:
        rec[side] = spec
    return problems


def respec(cases_file: Path) -> int:
    name = cases_file.name.removesuffix(".jsonl.gz")
    v1_line, v2_line = lines_of(name)
    with gzip.open(cases_file, "rt") as f:
        records = [json.loads(x) for x in f if x.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        new = {"v1": respec_side(cases_file, "v1", v1_line, Path(tmp)),
               "v2": respec_side(cases_file, "v2", v2_line, Path(tmp))}  # fmt: skip
    bad = 0
    for rec in records:
        for side in ("v1", "v2"):
            spec = new[side].get(rec["case_id"])
            problems = ["missing"] if spec is None else splice(rec, side, spec)
            if problems:
                bad += 1
                print(f"{rec['case_id']}: the re-exported {side} spec differs: {problems}", file=sys.stderr)
    if bad:
        print(f"{name}: {bad} specs differ from the recorded ones; nothing written", file=sys.stderr)
        return 1
    with open(cases_file, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        for rec in records:
            gz.write((json.dumps(rec) + "\n").encode())
    print(f"{name}: {len(records)} cases, v1 on {v1_line} and v2 on {v2_line} re-exported", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sets", nargs="+", type=Path, help="statetypes set files (.jsonl.gz), their folders beside them")
    args = p.parse_args(argv)
    return max(respec(s) for s in args.sets)


if __name__ == "__main__":
    sys.exit(main())
