"""``jobs/example_queries.sql`` as (title, sql) pairs for the tests, split and titled as
``flink-jobgraph sql -f`` splits them (:func:`pipeline.tables.sql_command.statements`).

python -m devtools.queries OUT   (the same as: flink-jobgraph sql --output OUT -f jobs/example_queries.sql)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from pipeline.settings import ROOT
from pipeline.tables.sql_command import statements

QUERY_FILE = ROOT / "jobs" / "example_queries.sql"


def _tables_present(sql: str, out: str) -> bool:
    """False when a query reads a table this output folder lacks (the restore tables exist only
    after ``check-restore``); only decidable for a local folder, so other URIs always run."""
    if "://" in out:
        return True
    return all((Path(out) / t).exists() for t in re.findall(r"delta\.`\{out\}/([a-z_]+)`", sql))


def example_queries(out: str, skip_missing_tables: bool = True) -> list[tuple[str, str]]:
    """(title, sql) pairs, with the output folder filled in."""
    pairs = []
    for s in statements(QUERY_FILE.read_text()):
        if skip_missing_tables and not _tables_present(s.sql, out):
            continue
        pairs.append((s.title or s.sql.splitlines()[0], s.sql.replace("{out}", str(Path(out).resolve()))))
    return pairs


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        print("usage: python -m devtools.queries OUT", file=sys.stderr)
        return 2
    from pipeline.cli import main as cli

    return cli(["sql", "--output", args[0], "-f", str(QUERY_FILE)])


if __name__ == "__main__":
    sys.exit(main())
