"""The options every table-writing command shares, and how a command says it cannot run.

Kept free of Spark imports, so that ``flink-jobgraph --help`` answers without starting (or
even loading) a JVM.
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["Summary", "add_run_options", "fail", "overrides", "write_summary"]


class Summary:
    """What a command's run counted (a dataclass of its own per command), as ``--summary-json``
    writes it."""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def add_run_options(c: argparse.ArgumentParser, catalog: bool = True) -> None:
    """--quiet, --summary-json, --set, and (``catalog``) --database / --catalog."""
    c.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    c.add_argument("--summary-json", help="also write the run summary (counts, stage times) to this file")
    c.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override a conf/pipeline.json setting, e.g. chains.engine=dataframe",
    )
    if catalog:
        c.add_argument(
            "--database",
            help="also register every output table as an external Delta table in this database of the "
            "session's catalog (created if missing), e.g. SELECT * FROM flink_jobgraph.operators",
        )
        c.add_argument("--catalog", help="with --database: the catalog that holds it (Unity Catalog), e.g. main")


def overrides(pairs: list[str]) -> dict[str, object]:
    """``--set SECTION.KEY=VALUE`` pairs; a value is JSON when it parses as JSON, else a string."""
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


def fail(message: object, command: str = "flink-jobgraph") -> int:
    """A run that cannot start or complete: one line on stderr, exit code 2."""
    print(f"{command}: {message}", file=sys.stderr)
    return 2


def write_summary(path: str | None, summary: dict) -> None:
    if path:
        with open(path, "w") as f:
            json.dump(summary, f, indent=2)
