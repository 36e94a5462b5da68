"""The deploy gate's steps as the command runs them: the job's jars exported (at the parallelism
the savepoint says the job runs at, unless ``-p`` says otherwise) while Spark starts, the
savepoint resolved where the user gave it, the one check decided by the fleet path
(:mod:`pipeline.restore.gate`), its lines printed and its reports written.

Spark's JVM and the exports' JVMs start side by side (on a CI runner's two cores the two starts
overlap instead of queueing); the exports wait for Spark only when the parallelism has to come
from a savepoint that only Spark can read (object storage).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.export.command import harness_args
from pipeline.export.harness import ExportError, ensure_harness, harness_dir, java_command
from pipeline.options import fail, overrides, write_summary
from pipeline.restore import gate
from pipeline.restore.inventory import NoSavepoints, newest_local_savepoint, newest_savepoint


@dataclass
class _Export:
    jar: str
    out: Path
    proc: subprocess.Popen
    log: Path


@dataclass
class _Run:
    """What one gate run started (to finish or stop) and what it noted for the user."""

    work: Path
    exports: dict[str, _Export] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    spark: Any = None
    savepoints: list[str] = field(default_factory=list)  # where the savepoint is (the newest below them)
    fallback: str | None = None  # a deployment's initialSavepointPath, when those hold none
    resource: dict[str, Any] | None = None  # the deployment resource's field mapping, for the report


def run_one_job(args: argparse.Namespace) -> int:
    """The deploy gate: exit 0 restores, 1 fails, 3 cannot be decided, 2 cannot run."""
    from pipeline.compute.read import InputError
    from pipeline.session import SetupError

    run = _Run(Path(tempfile.mkdtemp(prefix="flink-jobgraph-export-")))
    try:
        result = _decide(args, run)
    except (gate.GateError, ExportError, InputError, SetupError, ValueError, OSError) as e:
        _stop_spark(run)
        return fail(e)
    finally:
        for e in run.exports.values():  # an export still running when the check failed to start
            if e.proc.poll() is None:
                e.proc.kill()
                e.proc.wait()
        shutil.rmtree(run.work, ignore_errors=True)  # the exported specs: the tables keep what they hold
    result.fail_on_loss = bool(getattr(args, "fail_on_loss", False))
    lines = gate.render(result)
    if args.report:  # written first: a CI step's reader of stdout may stop early
        xml, js = gate.write_reports(args.report, result)
        lines.append(f"reports: {xml}, {js}")
    write_summary(args.summary_json, {"exit_code": result.exit_code, "check": result.check, "seconds": result.seconds})
    try:
        print("\n".join(lines), flush=True)
    except BrokenPipeError:  # `| head`: the exit code still says the verdict
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return result.exit_code


def _decide(args: argparse.Namespace, run: _Run) -> gate.GateResult:
    """Exports started, Spark started, the savepoint resolved, the check decided."""
    from pipeline.compute.run import Progress
    from pipeline.settings import load_settings

    nothing = _apply_resource(args, run) if args.resource else None
    if nothing is not None:
        return nothing
    run.savepoints = run.savepoints or [args.savepoint]
    _check_arguments(args)
    for specs, wanted, option in ((args.graphs, args.graph_id, "--graph-id"),
                                  (args.previous_graphs, args.previous_graph_id, "--previous-graph-id")):  # fmt: skip
        if specs:  # a wrong spec or graph id is told before Spark starts
            gate.one_graph_id(Path(specs), wanted, option)
    early = _savepoint(run)
    wants_parallelism = bool(args.jar or args.previous_jar) and not _parallelism_given(args)
    if early is not None and wants_parallelism:
        _take_parallelism(args, gate.saved_parallelisms(None, early), run.notes)
    if early is not None or not wants_parallelism:
        _start_exports(args, run)
    settings = load_settings(overrides(args.set))
    run.spark = _session(settings)
    savepoint = early or _savepoint(run, run.spark)
    if not run.exports and (args.jar or args.previous_jar):
        if wants_parallelism:
            _take_parallelism(args, gate.saved_parallelisms(run.spark, savepoint), run.notes)
        _start_exports(args, run)
    check = _gate_check(args, run, savepoint)
    run.notes += _parallelism_notes(check, gate.saved_parallelisms(run.spark, savepoint))
    result = gate.run_gate(run.spark, settings, check, args.output, Progress(not args.quiet))
    result.notes, result.resource = run.notes, run.resource
    return result


def _savepoint(run: _Run, spark: Any = None) -> str | None:
    """The savepoint to check: the newest below the places given (without Spark only when they
    are local: else None), or the deployment's initialSavepointPath when they hold none."""
    try:
        return newest_local_savepoint(run.savepoints) if spark is None else newest_savepoint(spark, run.savepoints)
    except NoSavepoints:
        if run.fallback is None:
            raise
        return newest_local_savepoint(run.fallback) or run.fallback


def _apply_resource(args: argparse.Namespace, run: _Run) -> gate.GateResult | None:
    """The command line completed from a FlinkDeployment / FlinkSessionJob (pipeline/restore/k8s.py):
    what the command line gives wins. A result when there is nothing to check (upgradeMode
    stateless, without --savepoint)."""
    from pipeline.restore import k8s

    resources = k8s.read_resources(args.resource)
    r = k8s.pick(resources, args.resource_name, args.resource)
    s = k8s.deploy_settings(r, resources, k8s.parse_maps(args.map))
    run.resource = s.report()
    run.notes.append(f"resource: {r.kind} {r.key} ({r.source})")
    run.notes += [f"not honoured: {name}: {why}" for name, why in s.not_honoured.items()]
    if args.flink and s.flink and args.flink != s.flink:
        run.notes.append(f"--flink {args.flink} given: the resource's flinkVersion ({s.flink}) is not used")
    args.flink = args.flink or s.flink
    args.main_class = args.main_class or s.entry_class
    args.program_args = args.program_args or (s.args or [])
    args.parallelism = args.parallelism if args.parallelism is not None else s.parallelism
    args.dynamic = [*s.dynamic, *args.dynamic]
    args.allow_non_restored_state = args.allow_non_restored_state or bool(s.allow_non_restored_state)
    if not args.graphs and not args.jar:
        if s.jar is None:
            raise gate.GateError(
                f"{r.source}: spec.job.jarURI {s.jar_uri or '(none)'} is not a jar on this machine: give it with "
                "--jar, or map its folder with --map (e.g. --map local:///opt/flink/usrlib=build/libs)"
            )
        args.jar = s.jar
    if args.savepoint:
        return None
    if s.redeploy_from_initial and s.initial_savepoint:
        run.savepoints = [s.initial_savepoint]
    elif s.upgrade_mode == "stateless":
        return gate.nothing_to_restore(f"{r.kind} {r.key}", "upgradeMode stateless: the operator upgrades the job "
                                       "without its state", run.notes, run.resource)  # fmt: skip
    elif s.savepoint_dirs or s.initial_savepoint:
        run.savepoints, run.fallback = s.savepoint_dirs, s.initial_savepoint
        run.savepoints = run.savepoints or [s.initial_savepoint]
    else:
        raise gate.GateError(f"{r.source}: no savepoint or checkpoint directory (flinkConfiguration "
                             "execution.checkpointing.savepoint-dir, state.savepoints.dir ...) and no "
                             "initialSavepointPath: give --savepoint")  # fmt: skip
    return None


def _check_arguments(args: argparse.Namespace) -> None:
    if bool(args.graphs) == bool(args.jar):
        raise gate.GateError("one job's check needs the new version as --graphs SPEC or as --jar JAR (one of them)")
    if args.checks:
        raise gate.GateError("--checks (a manifest) and --savepoint (one job) do not go together")
    if args.previous_graphs and args.previous_jar:
        raise gate.GateError("the previous version comes as --previous-graphs or as --previous-jar, not both")


def _parallelism_given(args: argparse.Namespace) -> bool:
    return args.parallelism is not None or any(kv.split("=", 1)[0] == "parallelism.default" for kv in args.dynamic)


def _take_parallelism(args: argparse.Namespace, saved: list[int], notes: list[str]) -> None:
    """Export at the parallelism the savepoint's job ran at: operators chain by their
    parallelism, so a job exported at another one can have other generated IDs."""
    p = gate.deployed_parallelism(saved)
    if p is None:
        return
    args.parallelism = p
    notes.append(
        f"exported at parallelism {p}, the savepoint's (most of its operators ran at {p}); "
        "-p sets the parallelism the job is deployed at"
    )


def _parallelism_notes(check: gate.GateCheck, saved: list[int]) -> list[str]:
    """A line when the new version runs at another parallelism than the savepoint's job."""
    deployed, new = gate.deployed_parallelism(saved), gate.spec_parallelism(check.new_lines)
    if deployed is None or new is None or deployed == new:
        return []
    return [
        f"the new version runs at parallelism {new} (most of its operators), the savepoint's job at {deployed}: "
        f"operators chain differently at another parallelism and their generated IDs change with it; if the job "
        f"is deployed at {deployed}, export it with -p {deployed}"
    ]


def _session(settings: Any) -> Any:
    """The gate's SparkSession: the one-job JVM options (docs/deploy-gate.md)."""
    from pipeline.session import get_spark_adding, set_session_confs

    spark = get_spark_adding(settings, settings.spark.one_job_java_options)
    set_session_confs(spark, "spark.one_job_spark_conf", settings.spark.one_job_spark_conf)
    return spark


def _stop_spark(run: _Run, wait_seconds: float = 60.0) -> None:
    """Stop a session the gate started before it gives up (exit 2), once the session's own
    start-up job (the Python workers' warm-up, pipeline/session.py) is done: a JVM stopped or
    torn down under a running task logs that task's end (a reset connection, a missing
    SparkEnv) as ERROR lines, which a CI log would show under a one-line reason."""
    import time

    if run.spark is None:
        return
    tracker = run.spark.sparkContext.statusTracker()
    until = time.monotonic() + wait_seconds
    while tracker.getActiveJobsIds() and time.monotonic() < until:
        time.sleep(0.1)
    run.spark.stop()


def _gate_check(args: argparse.Namespace, run: _Run, savepoint: str) -> gate.GateCheck:
    """The new and the previous version's graphs (exported or given), the previous one's graph
    renamed when both carry the job's name."""
    new_specs = _finish_export(run.exports["new"]) if "new" in run.exports else Path(args.graphs)
    graph_id = gate.one_graph_id(new_specs, None if "new" in run.exports else args.graph_id)
    new_lines = [ln for ln in gate.spec_lines(new_specs) if _graph_id(ln) == graph_id]
    previous_lines: list[str] = []
    previous_id = None
    if "previous" in run.exports or args.previous_graphs:
        old = _finish_export(run.exports["previous"]) if "previous" in run.exports else Path(args.previous_graphs)
        wanted = None if "previous" in run.exports else args.previous_graph_id
        previous_id = gate.one_graph_id(old, wanted, "--previous-graph-id")
        lines = [ln for ln in gate.spec_lines(old) if _graph_id(ln) == previous_id]
        previous_lines, previous_id = gate.previous_renamed(lines, previous_id, graph_id)
    return gate.GateCheck(new_lines, graph_id, savepoint, args.allow_non_restored_state, previous_lines,
                          previous_id, args.target_flink)  # fmt: skip


def _graph_id(line: str) -> str | None:
    import json

    return json.loads(line).get("graph_id")


def _start_exports(args: argparse.Namespace, run: _Run) -> None:
    if args.jar:
        run.exports["new"] = _start_export(args, args.jar, args.main_class, run.work / "new.jsonl", args.graph_id)
    if args.previous_jar:
        old_class = args.previous_main_class or args.main_class
        run.exports["previous"] = _start_export(
            args, args.previous_jar, old_class, run.work / "old.jsonl", args.previous_graph_id
        )


def _start_export(
    args: argparse.Namespace, jar: str, main_class: str | None, out: Path, graph_id: str | None
) -> _Export:
    """The jar's job being exported to ``out`` by the harness of ``--flink`` (nothing runs); its
    arguments are checked (and the harness built, on first use) before it starts."""
    if not main_class or not args.flink:
        raise ExportError("--jar needs --main-class and --flink")
    export = argparse.Namespace(
        jar=jar, main_class=main_class, out=str(out), classpath=args.classpath, graph_id=graph_id,
        parallelism=args.parallelism, dynamic=args.dynamic, config=None, expected=False, first=True,
        program_args=args.program_args, timeout=args.timeout,
    )  # fmt: skip
    cmd = [*java_command(ensure_harness(harness_dir(), args.flink, quiet=args.quiet)), *harness_args(export)]
    log = out.with_suffix(".log")
    with open(log, "wb") as sink:  # a file, not a pipe: nobody reads it while Spark starts
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
    return _Export(jar, out, proc, log)


def _finish_export(e: _Export) -> Path:
    """The exported spec, once its export ended; an ExportError with the harness's last line."""
    code = e.proc.wait()
    if code != 0 or not e.out.is_file():
        lines = e.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        raise ExportError(f"export of {e.jar} failed: {(lines[-1:] or [f'exit code {code}'])[0]}")
    return e.out
