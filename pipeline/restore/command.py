"""``flink-jobgraph check-restore``: its options and its run (SPEC section 5).

Exit code 0 when the run completed (whatever the verdicts); 2, with a one-line reason on
stderr, when it could not (a missing manifest or graphs path, jars not installed, a bad option).
"""

from __future__ import annotations

import argparse

from pipeline.options import add_run_options, fail, overrides, write_summary

HELP = "savepoints x new graphs -> restore_checks, restore_operator_matches, restore_fixes, savepoint_operators"


INVENTORY_HELP = "savepoints -> savepoint_operators, savepoint_states (every saved state's types), savepoint_errors"


def add_parser(sub: argparse._SubParsersAction) -> None:
    add_inventory_parser(sub)
    c = sub.add_parser("check-restore", help=HELP, description=HELP)
    c.add_argument(
        "--graphs",
        required=True,
        help="spec file or folder of the job versions to deploy (and older ones), or a folder `ingest` wrote",
    )
    c.add_argument(
        "--checks",
        required=True,
        help="JSON Lines manifest: check_id, savepoint (folder or _metadata; relative to the manifest), graph_id, "
        "allow_non_restored_state (default false), savepoint_graph_id (optional: the version that took it)",
    )
    c.add_argument("--output", required=True, help="folder that holds one Delta table per sub-folder")
    c.add_argument("--no-proof", action="store_true", help="propose fixes without recomputing the patched graphs")
    c.add_argument(
        "--target-flink",
        metavar="LINE",
        help="decide the state half as if the new jobs ran on this Flink line, e.g. 2.3 for the 1.x -> 2.x "
        "upgrade check (a manifest line's own target_flink wins)",
    )
    add_run_options(c)
    c.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.compute.read import InputError
    from pipeline.compute.run import Progress
    from pipeline.restore.check import check_restore
    from pipeline.session import SetupError, get_spark
    from pipeline.settings import load_settings
    from pipeline.tables import catalog

    try:
        settings = load_settings(overrides(args.set))
        spark = get_spark(settings)
        progress = Progress(not args.quiet)
        s = catalog.with_registration(
            spark,
            "check-restore",
            args.output,
            args.database,
            args.catalog,
            lambda: check_restore(
                spark, args.graphs, args.checks, args.output, settings, progress, not args.no_proof, args.target_flink
            ),
            progress.say,
        )
    except (InputError, SetupError, ValueError) as e:
        return fail(e)
    verdicts = ", ".join(f"{k}={v}" for k, v in sorted(s.verdicts.items()))
    print(
        f"check-restore: {s.checks} checks ({verdicts}); fixes proposed {s.fixes}, proven {s.fixes_verified} "
        f"({s.proof_rounds} proof rounds) -> {args.output}"
    )
    write_summary(args.summary_json, s.as_dict())
    return 0


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
    from pipeline.compute.run import Progress
    from pipeline.restore.inventory import NoSavepoints, inventory
    from pipeline.session import SetupError, get_spark
    from pipeline.settings import load_settings
    from pipeline.tables import catalog

    try:
        settings = load_settings(overrides(args.set))
        spark = get_spark(settings)
        progress = Progress(not args.quiet)
        s = catalog.with_registration(
            spark,
            "inventory",
            args.output,
            args.database,
            args.catalog,
            lambda: inventory(spark, args.savepoints, args.output, progress),
            progress.say,
        )
    except (NoSavepoints, SetupError, ValueError) as e:
        return fail(e)
    print(
        f"inventory: {s.savepoints} savepoints ({s.unreadable} unreadable), {s.operators} operators, "
        f"{s.states} states ({s.kryo_states} held by Kryo), {s.bytes_read} bytes read -> {args.output}"
    )
    write_summary(args.summary_json, s.as_dict())
    return 0
