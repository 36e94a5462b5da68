"""``flink-jobgraph render``: its options and its run (the page itself: :mod:`pipeline.render.page`)."""

from __future__ import annotations

import argparse

from pipeline.options import fail, overrides

HELP = "draw a job's JobGraph (or two versions side by side) as a self-contained HTML page"


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
