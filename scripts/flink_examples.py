"""Export Flink's own example programs from Maven Central and record Flink's answer for each.

Programs no one here wrote: every class with a ``main`` in ``flink-examples-streaming`` and
``flink-examples-table`` of a Flink line, run through ``flink-jobgraph export --expected`` (the
user's front door: nothing is executed) as shipped and at ``-p 4``. The captured specs with
Flink's own ``createJobGraph`` answer go to ``conformance/examples/flink-<line>.jsonl.gz`` and one
status row per (program, variant) to ``conformance/examples/flink-<line>.status.json`` -- also for
programs that submit nothing or fail, with their one-line message, so nothing drops out silently.

tests/test_flink_examples.py computes the committed specs with the pipeline and compares every
aspect with Flink's answer; ``--check`` does the same here after exporting.

    python scripts/flink_examples.py --lines 1.20 2.3 [--check]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.export import harness as export_cmd  # noqa: E402

OUT = ROOT / "conformance" / "examples"
# Published example jars per harness line (Maven Central has no flink-examples-table for 1.20.x
# and no flink-examples-streaming for 1.20.1+).
ARTIFACTS = {
    "1.20": ["org.apache.flink:flink-examples-streaming:1.20.0"],
    "2.3": ["org.apache.flink:flink-examples-streaming:2.3.0", "org.apache.flink:flink-examples-table_2.12:2.3.0"],
}
# Jars the examples need beyond Flink's own and flink-connector-files (the harness's test-lib),
# as a user would add them with --classpath.
DEPENDENCIES = {
    "1.20": ["org.apache.flink:flink-csv:1.20.0", "org.jcuda:jcuda:10.0.0",
             "org.apache.flink:flink-connector-kafka:3.4.0-1.20", "org.apache.kafka:kafka-clients:3.9.1"],
    "2.3": ["org.apache.flink:flink-csv:2.3.0", "org.jcuda:jcuda:10.0.0",
            "org.apache.flink:flink-connector-kafka:4.0.1-2.0", "org.apache.kafka:kafka-clients:3.9.1"],
}
# Arguments a program needs to build its job at all (it prints its usage and returns otherwise).
PROGRAM_ARGS = {
    "org.apache.flink.streaming.examples.socket.SocketWindowWordCount": ["--port", "9999"],
    "org.apache.flink.streaming.examples.statemachine.KafkaEventsGeneratorJob": ["--kafka-topic", "events"],
}
# Mains in the example jars that are not Flink programs: run, they would do what they do for real.
NOT_FLINK_PROGRAMS = {
    "org.apache.flink.streaming.examples.statemachine.kafka.KafkaStandaloneGenerator":
        "a plain Kafka producer (no Flink job): its main() would write to a Kafka broker",
}
VARIANTS = {"shipped": [], "p4": ["-p", "4"]}
TIMEOUT_S = 600


def fetch(artifact: str, dest: Path) -> Path:
    """The example jar from Maven Central (through ~/.m2)."""
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mvn", "-q", "dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={dest}"],
                   check=True, capture_output=True)
    group, name, version = artifact.split(":")
    return dest / f"{name}-{version}.jar"


def main_classes(jar: Path) -> list[str]:
    """Top-level classes of the jar that declare ``public static void main(String[])``."""
    with zipfile.ZipFile(jar) as z:
        names = [n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class") and "$" not in n]
    found = []
    for i in range(0, len(names), 200):
        p = subprocess.run(["javap", "-public", "-cp", str(jar), *names[i:i + 200]],
                           capture_output=True, text=True)
        current = None
        for line in p.stdout.splitlines():
            m = re.match(r"(?:public )?(?:final )?(?:abstract )?class (\S+)", line.strip())
            if m:
                current = m.group(1)
            if "public static void main(java.lang.String[])" in line and current:
                found.append(current)
    return sorted(set(found))


def export_one(harness: list[str], jar: Path, cls: str, variant: str, line: str, cp: list[Path]) -> dict:
    # The class name below the examples' root package: two programs share a simple name
    # (DataStream and DataStream V2 WordCount).
    short = cls.removeprefix("org.apache.flink.").removeprefix("streaming.examples.")
    gid = f"ex-{line}:{short}:{variant}"
    cmd = [*harness, "export", "--main-class", cls, "--jar", str(jar), "--graph-id", gid, "--expected",
           *[a for c in cp for a in ("--classpath", str(c))], *VARIANTS[variant]]
    if cls in PROGRAM_ARGS:
        cmd += ["--", *PROGRAM_ARGS[cls]]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"program": cls, "variant": variant, "status": "timeout", "graphs": [], "message": f"> {TIMEOUT_S} s"}
    graphs = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    errors = [x for x in p.stderr.splitlines() if x.startswith(("error:", "flink-jobgraph export:"))]
    status = "captured" if p.returncode == 0 and graphs else "no-graph"
    return {"program": cls, "variant": variant, "status": status, "graphs": graphs,
            "message": (errors or p.stderr.strip().splitlines()[-1:] or [""])[0][:300]}


def export_line(line: str, workers: int, only: list[str]) -> tuple[list[dict], list[dict]]:
    built = export_cmd.ensure_harness(export_cmd.harness_dir(), line).parent
    tasks = []
    status = []
    with tempfile.TemporaryDirectory() as tmp:
        # A snapshot of the built harness, so a rebuild during the run cannot swap jars under it.
        target = Path(tmp) / "harness"
        for part in ("lib", "test-lib"):
            shutil.copytree(built / part, target / part)
        shutil.copy2(built / export_cmd.JAR_NAME, target / export_cmd.JAR_NAME)
        harness = export_cmd.java_command(target / export_cmd.JAR_NAME)
        cp = sorted((target / "test-lib").glob("flink-connector-files-*.jar"))
        cp += [fetch(dep, Path(tmp) / "deps") for dep in DEPENDENCIES[line]]
        for artifact in ARTIFACTS[line]:
            jar = fetch(artifact, Path(tmp))
            for cls in main_classes(jar):
                if only and not any(o in cls for o in only):
                    continue
                if cls in NOT_FLINK_PROGRAMS:
                    status += [{"program": cls, "variant": v, "status": "not-a-flink-program", "graph_ids": [],
                                "message": NOT_FLINK_PROGRAMS[cls]} for v in VARIANTS]
                else:
                    tasks += [(jar, cls, v) for v in VARIANTS]
        with ThreadPoolExecutor(workers) as pool:
            rows = list(pool.map(lambda t: export_one(harness, t[0], t[1], t[2], line, cp), tasks))
    specs: list[dict] = []
    for r in rows:
        graphs = r.pop("graphs")
        specs += graphs
        status.append({**r, "graph_ids": [g["graph_id"] for g in graphs]})
    return specs, status


def check(specs_by_line: dict[str, list[dict]]) -> bool:
    """Compute every exported graph with the pipeline and compare all aspects with Flink."""
    from devtools.conformance import compare_tables
    from pipeline.compute.run import Progress, compute
    from pipeline.session import get_spark
    from pipeline.settings import load_settings

    settings = load_settings()
    spark = get_spark(settings)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for line, specs in specs_by_line.items():
            inp = Path(tmp) / f"in-{line}"
            inp.mkdir()
            (inp / "specs.jsonl").write_text("".join(json.dumps(g) + "\n" for g in specs))
            out = str(Path(tmp) / f"out-{line}")
            compute(spark, str(inp), out, settings, Progress(enabled=False))
            report = compare_tables(spark, out, specs)
            print(f"Flink {line}: {report.graphs} graphs")
            print(report.table())
            for m in report.mismatches[:20]:
                print("  ", m)
            ok &= report.ok()
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", nargs="+", default=list(ARTIFACTS), choices=list(ARTIFACTS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="also compute and compare with the pipeline")
    ap.add_argument("--only", nargs="+", default=[], metavar="SUBSTRING",
                    help="re-export only the programs whose class name contains one of these; their rows "
                         "replace those in the existing files")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    all_specs = {}
    for line in args.lines:
        specs, status = export_line(line, args.workers, args.only)
        if args.only:
            redone = {r["program"] for r in status}
            old_status = json.loads((OUT / f"flink-{line}.status.json").read_text())
            kept = [r for r in old_status if r["program"] not in redone]
            kept_ids = {gid for r in kept for gid in r["graph_ids"]}
            with gzip.open(OUT / f"flink-{line}.jsonl.gz", "rt", encoding="utf-8") as f:
                specs += [g for g in map(json.loads, f) if g["graph_id"] in kept_ids]
            status += kept
        with gzip.open(OUT / f"flink-{line}.jsonl.gz", "wt", encoding="utf-8") as f:
            for g in sorted(specs, key=lambda g: g["graph_id"]):
                f.write(json.dumps(g, sort_keys=True) + "\n")
        status.sort(key=lambda r: (r["program"], r["variant"]))
        (OUT / f"flink-{line}.status.json").write_text(json.dumps(status, indent=1) + "\n")
        counts: dict[str, int] = {}
        for r in status:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        print(f"Flink {line}: {len(status)} exports {counts}, {len(specs)} graphs", flush=True)
        all_specs[line] = specs
    return 0 if not args.check or check(all_specs) else 1


if __name__ == "__main__":
    os.environ.setdefault("FLINK_JOBGRAPH_DRIVER_MEMORY", "3g")
    sys.exit(main())
