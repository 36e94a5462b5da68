"""``flink-jobgraph``: the command line of SPEC section 4.

Exit code 0 when the run completed, even if some graphs were rejected (they are in
graph_errors); non-zero, with a one-line reason on stderr, only when the run itself
could not complete.
"""

from __future__ import annotations

import argparse
import json
import sys

from pipeline.export import command as export_cmd
from pipeline.restore import command as restore_cli
from pipeline.version import __version__
from udfs.flink.profiles import supported_versions

EPILOG = """examples:
  flink-jobgraph compute --input samples/ --output out/
  flink-jobgraph ingest  --input fleet.jsonl.gz --output staged/
  flink-jobgraph compute --input staged/ --output out/
  spark-submit jobs/compute_jobgraphs.py --input fleet/ --output out/

tables written under --output (Delta, one sub-folder each):
  compute: operators, job_vertices, job_edges, graph_errors
  ingest:  stream_graphs, stream_nodes, stream_edges, graph_errors
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="flink-jobgraph",
        description="Compute Flink-exact JobGraphs (operator IDs, chains, job vertices, job edges) "
        f"for many stream graphs at once. Flink versions: {', '.join(supported_versions())}.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    for name, helptext in (
        ("ingest", "spec JSON -> Delta stream_graphs / stream_nodes / stream_edges"),
        ("compute", "spec JSON or an ingested folder -> operators, job_vertices, job_edges, graph_errors"),
    ):
        c = sub.add_parser(name, help=helptext, description=helptext)
        c.add_argument(
            "--input", required=True, help="spec file or folder (*.json, *.jsonl, .gz), or an ingested folder"
        )
        c.add_argument("--output", required=True, help="folder that holds one Delta table per sub-folder")
        c.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
        c.add_argument("--summary-json", help="also write the run summary (counts, stage times) to this file")
        c.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="SECTION.KEY=VALUE",
            help="override a conf/pipeline.json setting, e.g. chains.engine=dataframe",
        )
        add_catalog_args(c)
    restore_cli.add_parser(sub)
    export_cmd.add_parser(sub)
    _add_render_parser(sub)
    p.add_argument("--version", action="version", version=f"flink-jobgraph {__version__}")
    return p


def _add_render_parser(sub) -> None:
    helptext = "draw a job's JobGraph (or two versions side by side) as a self-contained HTML page"
    r = sub.add_parser("render", help=helptext, description=helptext)
    r.add_argument("--output", required=True, help="the folder `compute` wrote")
    r.add_argument("--graph-id", required=True, help="the job version to draw")
    r.add_argument("--compare", metavar="OTHER_ID", help="another version drawn beside it, changed operator IDs marked")
    r.add_argument("--to", required=True, help="the HTML file to write, e.g. page.html")
    r.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help=argparse.SUPPRESS)


def _render(args: argparse.Namespace) -> int:
    from pipeline.render.command import RenderError, render
    from pipeline.session import SetupError, get_spark
    from pipeline.settings import load_settings

    try:
        spark = get_spark(load_settings(_overrides(args.set)))
        path = render(spark, args.output, args.graph_id, args.to, args.compare)
    except (RenderError, SetupError, ValueError) as e:
        print(f"flink-jobgraph: {e}", file=sys.stderr)
        return 2
    print(f"render: {args.graph_id}" + (f" vs {args.compare}" if args.compare else "") + f" -> {path}")
    return 0


def add_catalog_args(c: argparse.ArgumentParser) -> None:
    """--database/--catalog, shared by every command that writes tables (pipeline/tables/catalog.py)."""
    c.add_argument(
        "--database",
        help="also register every output table as an external Delta table in this database of the "
        "session's catalog (created if missing), e.g. SELECT * FROM flink_jobgraph.operators",
    )
    c.add_argument("--catalog", help="with --database: the catalog that holds it (Unity Catalog), e.g. main")


def _overrides(pairs: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for pair in pairs:
        if "=" not in pair or "." not in pair.split("=", 1)[0]:
            raise ValueError(f"--set expects SECTION.KEY=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "check-restore":
        return restore_cli.run(args, _overrides(args.set))
    if args.command == "export":
        return export_cmd.run(args)
    if args.command == "render":
        return _render(args)
    if getattr(args, "catalog", None) and not getattr(args, "database", None):
        parser.error("--catalog needs --database")
    # Imported late so that --help answers without starting a JVM.
    from pipeline.compute.read import InputError
    from pipeline.compute.run import Progress, compute, ingest
    from pipeline.session import SetupError, get_spark
    from pipeline.settings import load_settings
    from pipeline.tables import catalog

    try:
        settings = load_settings(_overrides(args.set))
        spark = get_spark(settings)
        progress = Progress(enabled=not args.quiet)
        database = getattr(args, "database", None)
        if database:  # fail before the run when the tables could not be registered after it
            registration = catalog.Registration(
                args.output, tuple(catalog.COMMAND_TABLES[args.command]), database, args.catalog
            )
            catalog.check_catalog(spark, database, args.catalog)
            catalog.check_names_free(spark, registration)
        if args.command == "ingest":
            summary = ingest(spark, args.input, args.output, progress)
        else:
            summary = compute(spark, args.input, args.output, settings, progress)
        if database:
            names = catalog.register_tables(spark, registration)
            progress.say("catalog tables: " + ", ".join(names))
    except (InputError, SetupError, ValueError) as e:
        print(f"flink-jobgraph: {e}", file=sys.stderr)
        return 2
    print(
        f"{args.command}: {summary.graphs_in} graphs ({summary.graphs_processed} processed, "
        f"{summary.graphs_rejected} rejected), {summary.stream_nodes} stream nodes"
        + (f", {summary.job_vertices} job vertices, {summary.job_edges} job edges" if args.command == "compute" else "")
        + f" -> {args.output}"
    )
    if summary.errors_by_code:
        print("rejected by code: " + ", ".join(f"{k}={v}" for k, v in sorted(summary.errors_by_code.items())))
    if args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump(summary.as_dict(), f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
