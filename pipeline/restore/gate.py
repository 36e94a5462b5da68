"""The deploy gate: one job's restore check, for a CI pipeline.

``flink-jobgraph check-restore --savepoint PATH (--graphs SPEC | --jar JAR --main-class C --flink L)``
asks the fleet check about one (savepoint, new version) pair, without a manifest: the new
version comes as a spec or as the job's jar (exported on the way, nothing runs), the savepoint
as a folder, its ``_metadata``, or the folder a job's savepoints and retained checkpoints land
in (the newest is taken). It prints each problem with the operator, Flink's message and the fix,
writes a JUnit XML and a JSON report for the CI system when asked, and exits with a code the
pipeline can stop on (:data:`EXIT_CODES`). It runs the very same check as the fleet command
and reads its rows from the run's own tables; they land in ``--output`` when one is given
(without it nothing is written: a CI step pays for no Delta commits it would throw away).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.restore.inventory import find_savepoints

RESTORES_EXIT, FAILS_EXIT, USAGE_EXIT, ERROR_EXIT = 0, 1, 2, 3
EXIT_CODES = {
    RESTORES_EXIT: "the new version restores from the savepoint",
    FAILS_EXIT: "the new version would fail to restore (the printed problems say where and why)",
    USAGE_EXIT: "the check could not run (bad arguments, missing input, no Spark jars)",
    ERROR_EXIT: "the check could not be made (an unreadable savepoint, a graph Flink rejects)",
}


class GateError(ValueError):
    """The one-job check cannot start: a line of text for the user."""


@dataclass
class GateResult:
    check: dict[str, Any]
    problems: list[dict[str, Any]] = field(default_factory=list)
    fixes: list[dict[str, Any]] = field(default_factory=list)
    savepoint: str = ""
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        verdict = self.check.get("verdict")
        return RESTORES_EXIT if verdict == "RESTORES" else FAILS_EXIT if verdict == "FAILS" else ERROR_EXIT


def latest_savepoint(spark: SparkSession, path: str) -> str:
    """``path`` itself when it is a savepoint (a folder with ``_metadata``, or the file), else
    the newest savepoint or retained checkpoint below it (by its ``_metadata``'s modification
    time, as the last one written is the one to restore from)."""
    found = find_savepoints(spark, [path])
    if len(found) == 1:
        return found[0]
    if not found:
        raise GateError(f"no Flink _metadata file under {path}")
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()

    def mtime(folder: str) -> int:
        p = jvm.org.apache.hadoop.fs.Path(folder, "_metadata")
        return int(p.getFileSystem(conf).getFileStatus(p).getModificationTime())

    return max(found, key=mtime)


def one_graph_id(specs: Path, wanted: str | None) -> str:
    """The graph the check is about: ``wanted``, or the one graph of the spec file."""
    ids = [json.loads(line)["graph_id"] for line in _lines(specs)]
    if wanted:
        if wanted not in ids:
            raise GateError(f"--graph-id {wanted}: not in {specs} (it holds {', '.join(ids[:5]) or 'no graph'})")
        return wanted
    if len(ids) != 1:
        raise GateError(f"{specs} holds {len(ids)} graphs: pick one with --graph-id")
    return ids[0]


def _lines(path: Path) -> list[str]:
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        text = f.read()
    text = text.strip()
    if text.startswith("{") and "\n" not in text:
        return [text]
    try:
        return [json.dumps(json.loads(text))]  # one (pretty-printed) JSON object
    except json.JSONDecodeError:
        return [line for line in text.splitlines() if line.strip()]


def run_gate(
    spark: SparkSession,
    settings: Any,
    new_specs: Path,
    graph_id: str,
    savepoint: str,
    allow_non_restored_state: bool,
    output: str | None,
    progress: Any,
    previous_specs: Path | None = None,
    previous_graph_id: str | None = None,
    target_flink: str | None = None,
) -> GateResult:
    """Lay the one check out as the fleet command takes it (a graphs folder, a one-line
    manifest), run it, and read its rows back."""
    from pipeline.restore.check import run_checks

    start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="flink-jobgraph-gate-"))
    (work / "graphs").mkdir()
    lines = _lines(new_specs) + (_lines(previous_specs) if previous_specs else [])
    (work / "graphs" / "graphs.jsonl").write_text("\n".join(lines) + "\n")
    check = {"check_id": f"{graph_id} vs {savepoint}", "savepoint": savepoint, "graph_id": graph_id,
             "allow_non_restored_state": allow_non_restored_state}  # fmt: skip
    if previous_graph_id:
        check["savepoint_graph_id"] = previous_graph_id
    (work / "checks.jsonl").write_text(json.dumps(check) + "\n")
    try:
        # full: the gate reads its check's rows from this run, so the check is always decided
        run = run_checks(spark, str(work / "graphs"), str(work / "checks.jsonl"), output, settings, progress,
                         target_flink=target_flink, full=True)  # fmt: skip
        read = lambda t: run.tables[t].where(F.col("check_id") == check["check_id"])  # noqa: E731
        row = read("restore_checks").first()
        result = GateResult(
            check=row.asDict() if row else {"verdict": "ERROR", "message": "no result"},
            problems=[r.asDict() for r in read("restore_state_problems").collect()],
            fixes=[r.asDict() for r in read("restore_fixes").collect()],
            savepoint=savepoint,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result.seconds = round(time.perf_counter() - start, 1)
    return result


_STAGES = {
    "job_init": "at job start",
    "task_restore": "when a task restores its state",
    "task_running": "when the running job first reads the state",
}


def render(result: GateResult) -> list[str]:
    """The lines a CI log shows: the verdict, then per problem the operator, Flink's message and
    the fix."""
    c = result.check
    where = _STAGES.get(c.get("failure_stage") or "", "")
    head = f"check-restore: {c.get('verdict')}"
    if c.get("failure"):
        head += f" ({c['failure']}{', ' + where if where else ''})"
    lines = [head + f": {c.get('graph_id')} from {result.savepoint}"]
    if c.get("verdict") == "FAILS":
        op = c.get("operator_id")
        lines.append(f"  operator {op}" + (f", state '{c['state_name']}'" if c.get("state_name") else ""))
        lines.append(f"  Flink: {c.get('message')}")
    elif c.get("verdict") == "ERROR":
        lines.append(f"  why: {c.get('message')}")
    for f in result.fixes:
        name = f.get("counterpart_name") or f.get("old_name")
        target = f' on "{name}"' if name else (f" for state '{f['state_name']}'" if f.get("state_name") else "")
        proof = {True: " [proven: the patched job restores]", False: " [not enough alone]"}.get(f.get("verified"), "")
        lines.append(f"  fix{target}: {f.get('fix_code')}{proof}")
    for p in result.problems:
        if p.get("verdict") == "NOT_DECIDABLE":
            lines.append(f"  not decidable here: {p.get('failure')}: {p.get('undecidable_reason')}")
    if c.get("dropped_operator_ids"):
        lines.append(f"  state dropped (allowNonRestoredState): {', '.join(c['dropped_operator_ids'])}")
    return lines


def write_reports(prefix: str, result: GateResult) -> tuple[Path, Path]:
    """``<prefix>.xml`` (JUnit: one test case, a failure for FAILS, an error for ERROR) and
    ``<prefix>.json`` (the check's row, its state problems and its fixes)."""
    xml_path, json_path = Path(prefix + ".xml"), Path(prefix + ".json")
    c = result.check
    suite = ET.Element("testsuite", name="flink-jobgraph check-restore", tests="1",
                       failures=str(int(c.get("verdict") == "FAILS")), errors=str(int(c.get("verdict") == "ERROR")),
                       time=str(result.seconds))  # fmt: skip
    case = ET.SubElement(suite, "testcase", classname="restore", name=str(c.get("check_id")), time=str(result.seconds))
    text = "\n".join(render(result))
    if c.get("verdict") == "FAILS":
        ET.SubElement(case, "failure", message=str(c.get("message")), type=str(c.get("failure"))).text = text
    elif c.get("verdict") == "ERROR":
        ET.SubElement(case, "error", message=str(c.get("message")), type="ERROR").text = text
    ET.SubElement(case, "system-out").text = text
    xml_path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(xml_path, encoding="utf-8", xml_declaration=True)
    payload = {"exit_code": result.exit_code, "check": c, "state_problems": result.problems, "fixes": result.fixes}
    json_path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return xml_path, json_path
