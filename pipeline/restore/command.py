"""``flink-jobgraph check-restore``: its options and its run (SPEC section 5).

Exit code 0 when the run completed (whatever the verdicts); 2, with a one-line reason on
stderr, when it could not (a missing manifest or graphs path, jars not installed, a bad option).
"""

from __future__ import annotations

import argparse

from pipeline.export.command import DEFAULT_TIMEOUT
from pipeline.options import add_run_options, fail, write_summary

HELP = "savepoints x new graphs -> restore_checks, restore_operator_matches, restore_fixes, savepoint_operators"


INVENTORY_HELP = "savepoints -> savepoint_operators, savepoint_states (every saved state's types), savepoint_errors"


def add_parser(sub: argparse._SubParsersAction) -> None:
    add_inventory_parser(sub)
    c = sub.add_parser(
        "check-restore",
        help=HELP,
        description=HELP + ". For a fleet: --graphs and --checks (a manifest). For one job (a deploy gate): "
        "--savepoint with --graphs or --jar; it prints the problems and exits 1 when the deploy would fail.",
        epilog="exit codes (one job): " + "; ".join(f"{k} {v}" for k, v in sorted(EXIT_CODES.items())),
    )
    c.add_argument(
        "--graphs",
        help="spec file or folder of the job versions to deploy (and older ones), or a folder `ingest` wrote",
    )
    c.add_argument(
        "--checks",
        help="JSON Lines manifest: check_id, savepoint (folder or _metadata; relative to the manifest), graph_id, "
        "allow_non_restored_state (default false), savepoint_graph_id (optional: the version that took it), resource "
        "(optional: the job's FlinkDeployment / FlinkSessionJob YAML for the savepoint and the flag); or Flink "
        "Kubernetes Operator resources themselves (a YAML file or a folder of them: one check per job)",
    )
    c.add_argument("--output", help="folder that holds one Delta table per sub-folder (one job: optional)")
    c.add_argument("--no-proof", action="store_true", help="propose fixes without recomputing the patched graphs")
    c.add_argument(
        "--full",
        action="store_true",
        help="decide every check again (by default a check whose manifest line, savepoint _metadata and graphs "
        "are unchanged since the last run on --output keeps its rows)",
    )
    c.add_argument(
        "--target-flink",
        metavar="LINE",
        help="decide the state half as if the new jobs ran on this Flink line, e.g. 2.3 for the 1.x -> 2.x "
        "upgrade check (a manifest line's own target_flink wins)",
    )
    _add_one_job_options(c.add_argument_group("one job (instead of --checks)"))
    add_run_options(c)
    c.set_defaults(run=run)


def _add_one_job_options(one: argparse._ArgumentGroup) -> None:
    """The deploy gate's options (pipeline/restore/gate_run.py)."""
    one.add_argument(
        "--savepoint",
        help="the savepoint or retained checkpoint (folder or _metadata), or a folder holding several: the newest",
    )
    one.add_argument("--graph-id", help="the new version's graph in --graphs, when it holds several")
    one.add_argument("--jar", help="the new version's jar (exported first, nothing runs)")
    one.add_argument("--main-class", help="with --jar: the job's main class")
    one.add_argument("--flink", help="with --jar: the Flink line the job is built for, e.g. 1.20")
    one.add_argument("-p", "--parallelism", type=int, help="with --jar: parallelism.default, like flink run -p")
    one.add_argument("-D", dest="dynamic", action="append", default=[], metavar="KEY=VALUE",
                     help="with --jar: a Flink option, like flink run -D (repeatable)")  # fmt: skip
    one.add_argument("--classpath", action="append", default=[], metavar="DIR_OR_JAR",
                     help="with --jar: an extra jar or folder of jars (connectors, formats) for a thin "
                     "job jar, as export takes it (repeatable)")  # fmt: skip
    one.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                     help=f"with --jar: stop a main() that has not submitted its job after this long "
                     f"(default {DEFAULT_TIMEOUT}; 0: wait for ever), as export does")  # fmt: skip
    one.add_argument("--previous-graphs", help="spec of the version that took the savepoint (for the why)")
    one.add_argument("--previous-graph-id", help="its graph in --previous-graphs")
    one.add_argument("--previous-jar", help="the jar of the version that took the savepoint (exported first)")
    one.add_argument("--previous-main-class", help="its main class (default: --main-class)")
    one.add_argument("--allow-non-restored-state", action="store_true", help="as flink run --allowNonRestoredState")
    one.add_argument("--report", metavar="PREFIX", help="also write PREFIX.xml (JUnit) and PREFIX.json for CI")
    one.add_argument("--fail-on-loss", action="store_true",
                     help="exit 4 when it restores but saved values would be lost (restore_warnings)")  # fmt: skip
    one.add_argument("--resource", metavar="YAML",
                     help="the job's Flink Kubernetes Operator resource (FlinkDeployment or FlinkSessionJob; a file of "
                     "one or several documents): its entry class, args, parallelism, Flink version, configuration, "
                     "savepoint directories, upgradeMode and allowNonRestoredState; the command line wins")  # fmt: skip
    one.add_argument("--resource-name", metavar="NAME", help="with --resource: the job resource, when it holds several")
    one.add_argument("--map", action="append", default=[], metavar="PREFIX=PATH",
                     help="with --resource (or resources in --checks): a path inside the image or the pods on this "
                     "machine, e.g. local:///opt/"
                     "flink/usrlib=build/libs or file:///flink-data=/mnt/flink-data (repeatable)")  # fmt: skip
    one.add_argument("program_args", nargs="*", metavar="-- ARGS", help="with --jar: arguments for main()")


# The one-job check's exit codes (pipeline/restore/gate.py), here without importing Spark for --help.
EXIT_CODES = {
    0: "the new version restores",
    1: "it would fail to restore",
    2: "the check could not run",
    3: "the check could not be decided (ERROR)",
    4: "with --fail-on-loss: it restores, but saved values would be lost",
}


def run(args: argparse.Namespace) -> int:
    if args.savepoint or args.resource:
        return run_one_job(args)
    if not (args.graphs and args.checks and args.output):
        return fail("check-restore needs --graphs, --checks and --output (a fleet), or --savepoint (one job)")
    from pipeline.compute.read import InputError
    from pipeline.restore.check import check_restore
    from pipeline.restore.incremental import restore_rules_version
    from pipeline.restore.k8s import parse_maps
    from pipeline.restore.manifest import read_manifest
    from pipeline.runner import is_night, run_command

    def body(spark, settings, progress):
        # the manifest's records (its lines, or Kubernetes resources with --map), as the fleet path takes them
        checks = read_manifest(spark, args.checks, args.target_flink, parse_maps(args.map), progress.say)
        return check_restore(
            spark, args.graphs, checks, args.output, settings, progress, not args.no_proof, args.target_flink,
            args.full,
        )  # fmt: skip

    def rules(settings):
        return restore_rules_version(settings, not args.no_proof)

    s, code = run_command(args, "check-restore", body, (InputError,), is_night(args.output, args.full, rules))
    if s is None:
        return code
    verdicts = ", ".join(f"{k}={v}" for k, v in sorted(s.verdicts.items()))
    unchanged = f"; {s.checks_unchanged} unchanged, not decided again" if s.checks_unchanged else ""
    print(
        f"check-restore: {s.checks} checks ({verdicts}){unchanged}; fixes: {s.fixes_verified} proven, "
        f"{s.fixes_not_proven} not proven, {s.problems_without_fix} problems without a fix; "
        f"{s.state_advice} state advice -> {args.output}"
    )
    write_summary(args.summary_json, s.as_dict())
    return 0


def run_one_job(args: argparse.Namespace) -> int:
    """The deploy gate (pipeline/restore/gate_run.py): exit 0 restores, 1 fails, 3 cannot be decided."""
    from pipeline.restore.gate_run import run_one_job as gate

    return gate(args)


def add_inventory_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("inventory", help=INVENTORY_HELP, description=INVENTORY_HELP)
    c.add_argument(
        "--savepoints",
        required=True,
        nargs="+",
        metavar="PATH",
        help="savepoint or retained-checkpoint folders, their _metadata files, or folders to search for them "
        "(any URI Spark reads)",
    )
    c.add_argument("--output", required=True, help="folder that holds one Delta table per sub-folder")
    add_run_options(c)
    c.set_defaults(run=run_inventory)


def run_inventory(args: argparse.Namespace) -> int:
    from pipeline.restore.inventory import NoSavepoints, inventory
    from pipeline.runner import run_command

    def body(spark, settings, progress):
        return inventory(spark, args.savepoints, args.output, progress, settings.tables.deletion_vectors)

    s, code = run_command(args, "inventory", body, (NoSavepoints,))
    if s is None:
        return code
    print(
        f"inventory: {s.savepoints} savepoints ({s.unreadable} unreadable, {s.damaged_files} damaged state files), "
        f"{s.operators} operators, "
        f"{s.states} states ({s.kryo_states} held by Kryo), {s.bytes_read} bytes read -> {args.output}"
    )
    write_summary(args.summary_json, s.as_dict())
    return 0
