"""Run ``jobs/example_queries.sql`` against an output folder and print each result.

python -m devtools.queries OUT
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from pipeline.settings import ROOT, load_settings

QUERY_FILE = ROOT / "jobs" / "example_queries.sql"


def _tables_present(sql: str, out: str) -> bool:
    """False when a query reads a table this output folder lacks (the restore tables exist only
    after ``check-restore``); only decidable for a local folder, so other URIs always run."""
    if "://" in out:
        return True
    return all((Path(out) / t).exists() for t in re.findall(r"delta\.`\{out\}/([a-z_]+)`", sql))


def example_queries(out: str, skip_missing_tables: bool = True) -> list[tuple[str, str]]:
    """(title, sql) pairs, with the output folder filled in."""
    text = QUERY_FILE.read_text()
    pairs = []
    for chunk in text.split(";"):
        lines = [ln for ln in chunk.strip().splitlines()]
        titles = []
        for ln in lines:  # "-- N. title" and its indented "--    continuation" lines
            if ln.startswith("-- ") and ln[3:4].isdigit():
                titles.append(ln[2:].strip())
            elif titles and ln.startswith("--  ") and ln[2:].strip():
                titles[-1] += " " + ln[2:].strip()
        sql = "\n".join(ln for ln in lines if not ln.startswith("--")).strip()
        if sql and skip_missing_tables and not _tables_present(sql, out):
            continue
        if sql:
            pairs.append((titles[0] if titles else sql.splitlines()[0], sql.replace("{out}", str(Path(out).resolve()))))
    return pairs


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        print("usage: python -m devtools.queries OUT", file=sys.stderr)
        return 2
    from pipeline.session import get_spark

    spark = get_spark(load_settings())
    for title, sql in example_queries(args[0]):
        print(f"\n{title}")
        spark.sql(sql).show(truncate=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
