"""Cross-version statetypes cases: v1 on one Flink line, v2 of the same program on another.

Why: an upgrade (Flink 1.20 -> 2.x) is where state types break silently (Kryo 2 -> 5, the
List/Map type extraction of 2.x); the two halves must run on the real Flink of each line, so
each runs in its own JVM with that line's restore-harness build:

1. ``flink-<from>`` build, ``statetypes --phase v1 --target <to>``: v1 from its thin jar
   (compiled against <from>), records through every state, a real savepoint / checkpoint, the
   folder archived into the cases folder, Flink <from>'s reading of it with v1's classes; the
   snapshot stays in the scratch folder;
2. ``flink-<to>`` build, ``statetypes --phase v2 --from <phase 1 output>``: v2 (its jar compiled
   against <to>) restores from each snapshot, runs until every state was accessed; Flink <to>'s
   verdict and its reading with v2's classes;
3. the summary (scripts/statetypes_summary.py) beside the set.

    .venv/bin/python scripts/statetypes_cross.py --from 1.20 --to 2.3 --seed 11 --count 40 \\
        --out-dir conformance/statetypes [--start 0] [--scratch /tmp/st-cross]

Writes ``<out-dir>/statetypes-<from>to<to>-s<seed>.jsonl.gz``, the cases folder of the same name
(savepoint archives, ``jars/flink-<line>/<variant>.jar``, ``jars/catalogue.json``) and
``.summary.txt``. Build both lines first (``mvn -f harness/restore/pom.xml -Pflink-<line> package``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import statetypes_summary  # noqa: E402


def harness_jar(line: str) -> Path:
    jar = ROOT / "harness" / "restore" / "target" / f"flink-{line}" / "flink-jobgraph-restore.jar"
    if not jar.exists():
        sys.exit(f"{jar} is missing: mvn -q -f harness/restore/pom.xml -Pflink-{line} package")
    return jar


def run(cmd: list[str], log: Path) -> None:
    print("$", " ".join(cmd), f"2> {log}", flush=True)
    with open(log, "w") as err:
        rc = subprocess.call(cmd, stderr=err)
    tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
    print("  ", *tail, flush=True)
    if rc != 0:
        sys.exit(f"failed ({rc}); see {log}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="src", required=True, help="Flink line of v1 (1.20, 1.15)")
    ap.add_argument("--to", dest="dst", required=True, help="Flink line of v2 (2.3, 2.0)")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--scratch", type=Path, default=None, help="where the snapshots wait between the halves")
    ap.add_argument("--java", default="java")
    a = ap.parse_args(argv)
    name = f"statetypes-{a.src}to{a.dst}-s{a.seed}"
    out = a.out_dir / f"{name}.jsonl.gz"
    cases = a.out_dir / name
    cases.mkdir(parents=True, exist_ok=True)
    scratch = a.scratch or Path(tempfile.mkdtemp(prefix="statetypes-cross-"))
    logs = Path(tempfile.mkdtemp(prefix="statetypes-logs-"))
    phase1 = logs / "phase1.jsonl.gz"
    common = ["--seed", str(a.seed), "--count", str(a.count), "--start", str(a.start)]
    try:
        run(
            [
                a.java,
                "-jar",
                str(harness_jar(a.src)),
                "statetypes",
                "--phase",
                "v1",
                "--target",
                a.dst,
                *common,
                "--out",
                str(phase1),
                "--cases-dir",
                str(cases),
                "--scratch",
                str(scratch),
            ],
            logs / "phase1.log",
        )
        run(
            [
                a.java,
                "-jar",
                str(harness_jar(a.dst)),
                "statetypes",
                "--phase",
                "v2",
                "--from",
                str(phase1),
                "--out",
                str(out),
                "--cases-dir",
                str(cases),
                "--scratch",
                str(scratch),
            ],
            logs / "phase2.log",
        )
        text = statetypes_summary.summarize(out, [logs / "phase1.log", logs / "phase2.log"])
        out.with_name(f"{name}.summary.txt").write_text(text)
        print(text.split("\n")[0])
        print(text.split("\n")[1])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(logs, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
