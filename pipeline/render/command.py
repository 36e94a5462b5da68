"""``flink-jobgraph render`` and ``flink-jobgraph report``: their options and their runs (the pages
themselves: :mod:`pipeline.render.page`, :mod:`pipeline.render.report`)."""

from __future__ import annotations

import argparse

from pipeline.options import fail, overrides, write_summary

HELP = "draw a job's JobGraph (or two versions side by side) as a self-contained HTML page"
REPORT_HELP = (
    "the restore checks `check-restore` wrote into --output as one self-contained HTML page: the fleet's "
    "verdicts by failure kind and Flink line, every check worst first with Flink's message and the fixes, "
    "and each failing job's JobGraph diff with the operators the restore fails on marked"
)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    add_parser(sub)
    add_report_parser(sub)


def add_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("render", help=HELP, description=HELP)
    r.add_argument("--output", required=True, help="the folder `compute` wrote")
    r.add_argument("--graph-id", required=True, help="the job version to draw")
    r.add_argument("--compare", metavar="OTHER_ID", help="another version drawn beside it, changed operator IDs marked")
    r.add_argument("--to", required=True, help="the HTML file to write, e.g. page.html")
    r.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help=argparse.SUPPRESS)
    r.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.render.page import RenderError, render
    from pipeline.session import SetupError, get_spark
    from pipeline.settings import load_settings

    try:
        spark = get_spark(load_settings(overrides(args.set)))
        path = render(spark, args.output, args.graph_id, args.to, args.compare)
    except (RenderError, SetupError, ValueError) as e:
        return fail(e)
    print(f"render: {args.graph_id}" + (f" vs {args.compare}" if args.compare else "") + f" -> {path}")
    return 0


def add_report_parser(sub: argparse._SubParsersAction) -> None:
    from udfs.render.report import DEFAULT_MAX_DIFFS

    r = sub.add_parser(
        "report",
        help="a fleet's restore checks as one HTML page",
        description=REPORT_HELP + ". Exit code 0 when the page was written (whatever the verdicts), 2 when not.",
        epilog="example: flink-jobgraph check-restore --graphs specs/ --checks checks.jsonl --output out/ && "
        "flink-jobgraph report --output out/ --to report.html",
    )
    r.add_argument("--output", required=True, help="the folder `check-restore` wrote (restore_checks and the rest)")
    r.add_argument("--to", required=True, help="the HTML file to write, e.g. report.html")
    r.add_argument(
        "--max-diffs",
        type=int,
        default=DEFAULT_MAX_DIFFS,
        metavar="N",
        help=f"draw the JobGraph diffs of at most N failing job version pairs, the worst first (default "
        f"{DEFAULT_MAX_DIFFS}); the page lists the ones left out",
    )
    r.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    r.add_argument("--summary-json", help="also write the counts (checks per status, diffs drawn) to this file")
    r.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help=argparse.SUPPRESS)
    r.set_defaults(run=run_report)


def run_report(args: argparse.Namespace) -> int:
    from pipeline.progress import Progress
    from pipeline.render.page import RenderError
    from pipeline.render.report import report
    from pipeline.session import SetupError, get_spark
    from pipeline.settings import load_settings

    if args.max_diffs < 0:
        return fail("--max-diffs must be 0 or more")
    try:
        spark = get_spark(load_settings(overrides(args.set)))
        s = report(spark, args.output, args.to, args.max_diffs, Progress(not args.quiet))
    except (RenderError, SetupError, ValueError) as e:
        return fail(e)
    statuses = ", ".join(f"{k}={v}" for k, v in sorted(s.statuses.items()))
    left = f" ({s.diffs_left_out} left out)" if s.diffs_left_out else ""
    print(f"report: {s.checks} checks ({statuses}); {s.diffs} job diffs{left} -> {s.path}")
    write_summary(args.summary_json, s.as_dict())
    return 0
