"""``flink-jobgraph compute`` and ``ingest``: their options and their run.

Exit code 0 when the run completed, even if some graphs were rejected (they are in
``graph_errors``); 2, with a one-line reason on stderr, when the run itself could not start
or complete (missing input, no spec files, jars not installed, a bad option).
"""

from __future__ import annotations

import argparse

from pipeline.options import add_run_options, write_summary

HELP = {
    "ingest": "spec JSON -> Delta stream_graphs / stream_nodes / stream_edges",
    "compute": "spec JSON or an ingested folder -> operators, job_vertices, job_edges, graph_errors",
}


def add_parsers(sub: argparse._SubParsersAction) -> None:
    for name, helptext in HELP.items():
        c = sub.add_parser(name, help=helptext, description=helptext)
        c.add_argument(
            "--input", required=True, help="spec file or folder (*.json, *.jsonl, .gz), or an ingested folder"
        )
        c.add_argument("--output", required=True, help="folder that holds one Delta table per sub-folder")
        if name == "compute":
            c.add_argument(
                "--full",
                action="store_true",
                help="recompute every graph; by default a graph whose spec, Flink line profile and rules "
                "are those the output already holds (graph_fingerprints) keeps its rows",
            )
        add_run_options(c)
        c.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Imported here so that --help answers without starting a JVM.
    from pipeline.compute.fingerprints import rules_version as compute_rules
    from pipeline.compute.read import InputError
    from pipeline.compute.run import compute, ingest
    from pipeline.runner import is_night, run_command

    def body(spark, settings, progress):
        if args.command == "ingest":
            return ingest(spark, args.input, args.output, progress, settings)
        return compute(spark, args.input, args.output, settings, progress, full=args.full)

    night = is_night(args.output, args.full, compute_rules) if args.command == "compute" else None
    summary, code = run_command(args, args.command, body, (InputError,), night)
    if summary is None:
        return code
    print(
        f"{args.command}: {summary.graphs_in} graphs ({summary.graphs_processed} processed, "
        f"{summary.graphs_rejected} rejected"
        + (f", {summary.graphs_skipped} unchanged and kept" if summary.graphs_skipped else "")
        + f"), {summary.stream_nodes} stream nodes"
        + (f", {summary.job_vertices} job vertices, {summary.job_edges} job edges" if args.command == "compute" else "")
        + f" -> {args.output}"
    )
    if summary.errors_by_code:
        print("rejected by code: " + ", ".join(f"{k}={v}" for k, v in sorted(summary.errors_by_code.items())))
    write_summary(args.summary_json, summary.as_dict())
    return 0
