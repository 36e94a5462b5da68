"""The deploy gate: one job's restore check, for a CI pipeline.

``flink-jobgraph check-restore --savepoint PATH (--graphs SPEC | --jar JAR --main-class C --flink L)``
asks the fleet check about one (savepoint, new version) pair, without a manifest: the new
version comes as a spec or as the job's jar (exported on the way, nothing runs), the savepoint
as a folder, its ``_metadata``, or the folder a job's savepoints and retained checkpoints land
in (the newest is taken). It prints each problem with the operator, Flink's message and the fix,
writes a JUnit XML and a JSON report for the CI system when asked, and exits with a code the
pipeline can stop on (:data:`EXIT_CODES`). It runs the very same check as the fleet command: its
one check goes to the fleet path as the record a manifest line becomes
(:func:`pipeline.restore.manifest.check_record`), its savepoint resolved where the user gave it,
and its rows are read from the run's own tables; they land in ``--output`` when one is given
(without it nothing is written: a CI step pays for no Delta commits it would throw away).

The job's steps from a jar (:mod:`pipeline.restore.gate_run`) pick the parallelism the job runs
at from the savepoint when none is given: a job exported at another parallelism chains its
operators otherwise, and their generated IDs change with it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.restore.manifest import check_record
from pipeline.session import local_path
from udfs.savepoint.metadata import parse_metadata

RESTORES_EXIT, FAILS_EXIT, USAGE_EXIT, ERROR_EXIT, LOSS_EXIT = 0, 1, 2, 3, 4
EXIT_CODES = {
    RESTORES_EXIT: "the new version restores from the savepoint",
    FAILS_EXIT: "the new version would fail to restore (the printed problems say where and why)",
    USAGE_EXIT: "the check could not run (bad arguments, missing input, no Spark jars)",
    ERROR_EXIT: "the check could not be made (an unreadable savepoint, a graph Flink rejects)",
    LOSS_EXIT: "with --fail-on-loss: the new version restores, but saved values would be lost (the printed losses)",
}
# The graph id the previous version's graph gets when it has the new version's (a job keeps its
# name from version to version, and the export names a graph after its job).
PREVIOUS_SUFFIX = "@previous"


class GateError(ValueError):
    """The one-job check cannot start: a line of text for the user."""


@dataclass
class GateResult:
    check: dict[str, Any]
    problems: list[dict[str, Any]] = field(default_factory=list)
    fixes: list[dict[str, Any]] = field(default_factory=list)
    matches: list[dict[str, Any]] = field(default_factory=list)
    savepoint: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # what the gate chose or could not honour
    resource: dict[str, Any] | None = None  # a deployment resource's fields: used, no effect, not honoured
    head: str | None = None  # the first line, when no check ran (nothing to restore)
    warnings: list[dict[str, Any]] = field(default_factory=list)  # restore_warnings: silent losses
    fail_on_loss: bool = False  # --fail-on-loss: a restore that would lose saved values exits LOSS_EXIT

    @property
    def exit_code(self) -> int:
        verdict = self.check.get("verdict")
        if verdict == "RESTORES":
            return LOSS_EXIT if self.fail_on_loss and self.warnings else RESTORES_EXIT
        return FAILS_EXIT if verdict == "FAILS" else ERROR_EXIT


@dataclass(frozen=True)
class GateCheck:
    """The one check, resolved: the new version's graph (and the previous one's), the savepoint
    folder as a URI or absolute path, and the flags a manifest line would carry."""

    new_lines: list[str]
    graph_id: str
    savepoint: str
    allow_non_restored_state: bool = False
    previous_lines: list[str] = field(default_factory=list)
    previous_graph_id: str | None = None
    target_flink: str | None = None


def saved_parallelisms(spark: SparkSession | None, savepoint: str) -> list[int]:
    """Every operator's parallelism as the savepoint holds it (empty when its ``_metadata``
    cannot be read: the check itself then says why). Read on the driver: one small file."""
    try:
        if spark is None or savepoint.startswith("file:"):
            target = local_path(savepoint)
            target = target if os.path.isfile(target) else os.path.join(target, "_metadata")
            data = Path(target).read_bytes()
        else:
            data = _hadoop_bytes(spark, savepoint)
        return [op.parallelism for op in parse_metadata(data).operators]
    except Exception:  # noqa: BLE001 - any unreadable file: the check reports it with the reason
        return []


def _hadoop_bytes(spark: SparkSession, savepoint: str) -> bytes:
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(savepoint)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    if fs.getFileStatus(path).isDirectory():
        path = jvm.org.apache.hadoop.fs.Path(path, "_metadata")
    stream = fs.open(path)
    try:
        return bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
    finally:
        stream.close()


def deployed_parallelism(parallelisms: list[int]) -> int | None:
    """The parallelism a job ran at (``parallelism.default``, ``-p``), from its operators' as
    the savepoint holds them: the most common one (ties: the highest). The operators a job sets
    apart (a non-parallel source at 1, an explicit ``setParallelism``) are the fewer."""
    if not parallelisms:
        return None
    counts = Counter(parallelisms)
    return max(counts, key=lambda p: (counts[p], p))


def spec_parallelism(lines: list[str]) -> int | None:
    """The parallelism most nodes of a spec's graph run at (the one graph of ``lines``)."""
    nodes = [n.get("parallelism") for line in lines[:1] for n in json.loads(line).get("nodes", [])]
    return deployed_parallelism([p for p in nodes if isinstance(p, int) and p > 0])


def one_graph_id(specs: Path, wanted: str | None, option: str = "--graph-id") -> str:
    """The graph the check is about: ``wanted`` (given with ``option``), or the one graph of the
    spec file."""
    ids = [json.loads(line)["graph_id"] for line in spec_lines(specs)]
    if wanted:
        if wanted not in ids:
            raise GateError(f"{option} {wanted}: not in {specs} (it holds {', '.join(ids[:5]) or 'no graph'})")
        return wanted
    if len(ids) != 1:
        raise GateError(f"{specs} holds {len(ids)} graphs: pick one with {option}")
    return ids[0]


def spec_lines(path: Path) -> list[str]:
    """The spec file's graphs, one JSON text each (JSON Lines, gzipped or not, or one
    pretty-printed JSON object)."""
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


def previous_renamed(lines: list[str], graph_id: str, new_id: str) -> tuple[list[str], str]:
    """The previous version's graphs, its graph ``graph_id`` renamed when the new version's
    graph has the same id (both versions of a job keep its name, which the export takes as the
    graph id): ``<id>@previous``. The id in the printed lines and the tables is then that."""
    if graph_id != new_id:
        return lines, graph_id
    renamed = graph_id + PREVIOUS_SUFFIX
    out = []
    for line in lines:
        obj = json.loads(line)
        if obj.get("graph_id") == graph_id:
            obj["graph_id"] = renamed
            line = json.dumps(obj)
        out.append(line)
    return out, renamed


def run_gate(spark: SparkSession, settings: Any, gate: GateCheck, output: str | None, progress: Any) -> GateResult:
    """Hand the one check to the fleet path (its graphs in a temporary folder, the check as a
    record), run it, and read its rows back."""
    from pipeline.restore.check import run_checks

    start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="flink-jobgraph-gate-"))
    (work / "graphs").mkdir()
    (work / "graphs" / "graphs.jsonl").write_text("\n".join(gate.new_lines + gate.previous_lines) + "\n")
    check = {"check_id": f"{gate.graph_id} vs {gate.savepoint}", "savepoint": gate.savepoint,
             "graph_id": gate.graph_id, "allow_non_restored_state": gate.allow_non_restored_state}  # fmt: skip
    if gate.previous_graph_id:
        check["savepoint_graph_id"] = gate.previous_graph_id
    record = check_record(check, "--savepoint", os.getcwd(), gate.target_flink)
    try:
        # full: the gate reads its check's rows from this run, so the check is always decided
        run = run_checks(spark, str(work / "graphs"), [record], output, settings, progress,
                         target_flink=gate.target_flink, full=True)  # fmt: skip
        read = lambda t: run.tables[t].where(F.col("check_id") == check["check_id"])  # noqa: E731
        row = read("restore_checks").first()
        result = GateResult(
            check=row.asDict() if row else {"verdict": "ERROR", "message": "no result"},
            problems=[r.asDict() for r in read("restore_state_problems").collect()],
            fixes=[r.asDict() for r in read("restore_fixes").collect()],
            matches=[r.asDict() for r in read("restore_operator_matches").collect()],
            savepoint=gate.savepoint,
            warnings=[r.asDict() for r in read("restore_warnings").collect()],
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


def nothing_to_restore(what: str, why: str, notes: list[str], resource: dict[str, Any] | None) -> GateResult:
    """The result when the deploy restores no state (a stateless upgrade): it starts, exit 0."""
    check = {"check_id": what, "verdict": "RESTORES", "graph_id": what, "message": why}
    return GateResult(check, notes=notes, resource=resource, head=f"check-restore: NOTHING TO RESTORE: {what}: {why}")


def render(result: GateResult) -> list[str]:
    """The lines a CI log shows: the verdict, then per problem the operator, Flink's message and
    the fix, then what happens to the saved operators the new version does not have; each line
    once."""
    if result.head:
        return [result.head, *[f"  note: {n}" for n in result.notes]]
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
    lines += [_fix_line(f, bool(c.get("savepoint_graph_id"))) for f in result.fixes]
    for p in result.problems:
        if p.get("verdict") == "NOT_DECIDABLE":
            lines.append(f"  not decidable here: {p.get('failure')}: {p.get('undecidable_reason')}")
    lines += _unmapped_lines(result)
    if c.get("verdict") == "RESTORES":
        lines += _loss_lines(result)
    lines += [f"  note: {n}" for n in result.notes]
    return list(dict.fromkeys(lines))


def _loss_lines(result: GateResult) -> list[str]:
    """The saved values a restore Flink accepts would not carry over (``restore_warnings``): Flink
    reports none of them. With --fail-on-loss they fail the gate (exit 4)."""
    out = []
    for w in sorted(result.warnings, key=lambda w: (str(w.get("operator_id")), str(w.get("state_name")))):
        where = f" ({w['field_path']})" if w.get("field_path") else ""
        state = f"state '{w.get('state_name')}'{where}"
        out.append(f"  loss: {state} of operator {w.get('operator_id')}: {w.get('detail')}")
    if out and result.fail_on_loss:
        out.append(f"  --fail-on-loss: exit {LOSS_EXIT} ({len(out)} loss{'es' if len(out) > 1 else ''})")
    return out


def _fix_line(f: dict[str, Any], knows_previous: bool) -> str:
    """A fix as a line: where it goes, the code, and whether the patched job was proven to
    restore; a problem without a fix says why there is none."""
    name = f.get("counterpart_name") or f.get("old_name")
    target = f' on "{name}"' if name else (f" for state '{f['state_name']}'" if f.get("state_name") else "")
    if f.get("fix_code") is None:
        if "UNKNOWN_ORIGIN" not in (f.get("reasons") or []):
            why = "no operator of the new version is its counterpart (same uid, or same name)"
        elif knows_previous:
            why = ("the previous version given has no operator of this ID either: is it the version (and the "
                   "parallelism) that took the savepoint?")  # fmt: skip
        else:
            why = ("the savepoint does not say which operator it was: give the version that took it "
                   "(--previous-jar or --previous-graphs) to name it and the line that fixes it")  # fmt: skip
        return f"  no fix for operator {f.get('operator_id')}{target}: {why}"
    proof = ""
    if f.get("verified") is True:
        proof = " [proven: the patched job restores]"
    elif f.get("verified") is False:
        still = " ".join(str(x) for x in (f.get("verified_verdict"), f.get("verified_failure")) if x)
        proof = f" [not proven: the patched job still gives {still}]" if still else " [not proven]"
    return f"  fix{target}: {f.get('fix_code')}{proof}"


def _unmapped_lines(result: GateResult) -> list[str]:
    """The saved operators the new version does not have, by what Flink does with them: state
    dropped only under allowNonRestoredState (SKIPPED); stateless ones Flink skips whatever the
    flag (DROPPED_EMPTY); a matched state the vertex does not take (MATCHED_NOT_ASSIGNED)."""
    by_status: dict[str, list[str]] = {}
    for m in sorted(result.matches, key=lambda m: m.get("operator_index") or 0):
        by_status.setdefault(str(m.get("status")), []).append(str(m.get("operator_id")))
    texts = {
        "SKIPPED": "state dropped (allowNonRestoredState)",
        "MATCHED_NOT_ASSIGNED": "state not restored (the vertex takes the state of its other ID)",
        "DROPPED_EMPTY": "stateless in the savepoint, not in the new version (nothing to restore)",
    }
    return [f"  {texts[s]}: {', '.join(by_status[s])}" for s in texts if by_status.get(s)]


def write_reports(prefix: str, result: GateResult) -> tuple[Path, Path]:
    """``<prefix>.xml`` (JUnit: one test case, a failure for FAILS (and, with --fail-on-loss, for
    a restore that loses saved values), an error for ERROR, each loss a property) and
    ``<prefix>.json`` (the check's row, its state problems, its fixes, its losses and the notes)."""
    xml_path, json_path = Path(prefix + ".xml"), Path(prefix + ".json")
    c = result.check
    suite = ET.Element("testsuite", name="flink-jobgraph check-restore", tests="1",
                       failures=str(int(c.get("verdict") == "FAILS")), errors=str(int(c.get("verdict") == "ERROR")),
                       time=str(result.seconds))  # fmt: skip
    case = ET.SubElement(suite, "testcase", classname="restore", name=str(c.get("check_id")), time=str(result.seconds))
    text = "\n".join(render(result))
    if c.get("verdict") == "FAILS":
        ET.SubElement(case, "failure", message=str(c.get("message")), type=str(c.get("failure"))).text = text
    elif result.exit_code == LOSS_EXIT:
        suite.set("failures", "1")
        lost = f"{len(result.warnings)} silent loss(es) of saved values (--fail-on-loss)"
        ET.SubElement(case, "failure", message=lost, type="LOSS").text = text
    elif c.get("verdict") == "ERROR":
        ET.SubElement(case, "error", message=str(c.get("message")), type="ERROR").text = text
    if result.warnings:
        props = ET.SubElement(case, "properties")
        for w in result.warnings:
            value = f"{w.get('operator_id')}/{w.get('state_name')} {w.get('field_path') or ''}: {w.get('detail')}"
            ET.SubElement(props, "property", name=f"loss.{w.get('loss')}", value=value.replace("  ", " "))
    ET.SubElement(case, "system-out").text = text
    xml_path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(xml_path, encoding="utf-8", xml_declaration=True)
    payload = {"exit_code": result.exit_code, "check": c, "state_problems": result.problems, "fixes": result.fixes,
               "loss_warnings": result.warnings, "notes": result.notes}  # fmt: skip
    if result.resource is not None:
        payload["resource"] = result.resource
    json_path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return xml_path, json_path
