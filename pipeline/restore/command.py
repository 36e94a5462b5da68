"""The ``check-restore`` subcommand's arguments and run, kept apart from ``pipeline/cli.py``'s
other commands (no Spark import here, so ``--help`` answers without starting a JVM)."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "savepoints x new graphs -> restore_checks, restore_operator_matches, restore_fixes, savepoint_operators"


def add_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("check-restore", help=HELP, description=HELP)
    c.add_argument("--graphs", required=True, help="spec file or folder of the job versions to deploy (and older ones)")
    c.add_argument(
        "--checks",
        required=True,
        help="JSON Lines manifest: check_id, savepoint (folder or _metadata; relative to the manifest), graph_id, "
        "allow_non_restored_state (default false), savepoint_graph_id (optional: the version that took it)",
    )
    c.add_argument("--output", required=True, help="folder that holds one Delta table per sub-folder")
    c.add_argument("--no-proof", action="store_true", help="propose fixes without recomputing the patched graphs")
    c.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    c.add_argument("--summary-json", help="also write the run summary to this file")
    c.add_argument(
        "--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="override conf/pipeline.json"
    )


def run(args: argparse.Namespace, overrides: dict[str, object]) -> int:
    from pipeline.compute.read import InputError
    from pipeline.compute.run import Progress
    from pipeline.restore.check import check_restore
    from pipeline.session import SetupError, get_spark
    from pipeline.settings import load_settings

    try:
        settings = load_settings(overrides)
        spark = get_spark(settings)
        s = check_restore(
            spark, args.graphs, args.checks, args.output, settings, Progress(not args.quiet), not args.no_proof
        )
    except (InputError, SetupError, ValueError) as e:
        print(f"flink-jobgraph: {e}", file=sys.stderr)
        return 2
    verdicts = ", ".join(f"{k}={v}" for k, v in sorted(s.verdicts.items()))
    print(
        f"check-restore: {s.checks} checks ({verdicts}); fixes proposed {s.fixes}, proven {s.fixes_verified} "
        f"({s.proof_rounds} proof rounds) -> {args.output}"
    )
    if args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump(s.as_dict(), f, indent=2)
    return 0
