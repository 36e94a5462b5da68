"""``flink-jobgraph``: the command line (SPEC section 4). One subcommand per capability; each
capability's ``command`` module declares its options and runs it."""

from __future__ import annotations

import argparse
import sys

from pipeline.compute import command as compute_command
from pipeline.export import command as export_command
from pipeline.render import command as render_command
from pipeline.restore import command as restore_command
from pipeline.tables import sql_command
from pipeline.version import __version__
from udfs.flink.profiles import supported_versions

EPILOG = """examples:
  flink-jobgraph compute --input samples/ --output out/
  flink-jobgraph ingest  --input fleet.jsonl.gz --output staged/
  flink-jobgraph compute --input staged/ --output out/
  flink-jobgraph check-restore --graphs specs/ --checks checks.jsonl --output out/
  spark-submit jobs/compute_jobgraphs.py --input fleet/ --output out/

tables written under --output (Delta, one sub-folder each):
  compute:       operators, job_vertices, job_edges, graph_errors, runs
  ingest:        stream_graphs, stream_nodes, stream_edges, graph_errors, runs
  check-restore: compute's, savepoint_operators, restore_checks, restore_operator_matches, restore_fixes

pages (self-contained HTML, read from those tables):
  render --output out/ --graph-id ID [--compare OTHER] --to page.html
  report --output out/ --to report.html   (the fleet's restore checks, each failing job's diff)

SQL over an output's tables (each a view; delta.`path` works too):
  sql --output out/ -e "SELECT name, parallelism FROM job_vertices WHERE graph_id = 'orders@v43'"
  sql --output out/ -f jobs/example_queries.sql
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="flink-jobgraph",
        description="Compute Flink-exact JobGraphs (operator IDs, chains, job vertices, job edges) "
        f"for many stream graphs at once, and whether new versions restore from savepoints. "
        f"Flink versions: {', '.join(supported_versions())}.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    compute_command.add_parsers(sub)
    restore_command.add_parser(sub)
    export_command.add_parser(sub).set_defaults(run=export_command.run)
    render_command.add_parsers(sub)
    sql_command.add_parser(sub)
    p.add_argument("--version", action="version", version=f"flink-jobgraph {__version__}")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
