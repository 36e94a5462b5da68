"""``flink-jobgraph sql``: an output's tables opened for SQL.

A plain PySpark session cannot read the tables (``delta.`...``` needs Delta's jars and its SQL
extension, which the pipeline's session configures: :func:`pipeline.session.get_spark`), so this
command opens that session, registers every Delta table under ``--output`` as a view named after
its folder (``SELECT * FROM operators``), and runs the statements of ``-e``, of ``-f`` (a file
such as ``jobs/example_queries.sql``; ``{out}`` in it stands for the output folder), of standard
input, or typed at a prompt. ``delta.`<path>``` works as well, a relative path against the working
directory. Each result is printed as a table (``--format json``: one JSON object per row).

A statement that reads a ``delta.`{out}/<table>``` this output does not hold (the restore tables
before a ``check-restore``) is skipped with the table it lacks named; a statement Spark rejects
prints Spark's message on stderr and the next one runs. Exit code 0, 1 when a statement failed,
2 when the tables cannot be opened.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

from pipeline.options import fail, overrides

HELP = "open an output's tables for SQL: every table a view, delta.`path` queries, -e / -f / stdin / a prompt"
_DELTA_PATH = re.compile(r"delta\.`([^`]+)`")
_TITLE = re.compile(r"^--\s+(\d+\.\s.*)$")


@dataclass(frozen=True)
class Statement:
    """One SQL statement of a script, with the title its ``-- N. title`` comment gives it."""

    sql: str
    title: str | None = None


def add_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("sql", help=HELP, description=HELP + ". Exit code 1 when a statement failed.")
    c.add_argument("--output", required=True, help="the folder whose tables to open (any URI Spark reads)")
    what = c.add_mutually_exclusive_group()
    what.add_argument("-e", "--execute", metavar="SQL", help="the statements to run (';' between several)")
    what.add_argument("-f", "--file", metavar="FILE", help="a file of statements, e.g. jobs/example_queries.sql")
    c.add_argument("--format", choices=("table", "json"), default="table", help="how results print (default table)")
    c.add_argument("--max-rows", type=int, default=1000, help="rows printed per result at most (default 1000)")
    c.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a conf/pipeline.json setting")  # fmt: skip
    c.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.session import SetupError, get_spark
    from pipeline.settings import load_settings

    try:
        text = _script(args)
        spark = get_spark(load_settings(overrides(args.set)))
        views = open_tables(spark, args.output)
    except (SetupError, ValueError, OSError) as e:
        return fail(e)
    if not views:
        return fail(f"no Delta table under {args.output}")
    try:
        if text is None:  # a person at a terminal
            return _prompt(spark, args, views)
        todo = statements(text.replace("{out}", args.output.rstrip("/")))
        return 1 if [s for s in todo if not _run_one(spark, s, args)] else 0
    except BrokenPipeError:  # `| head` read enough: stop quietly, as other command-line tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _script(args: argparse.Namespace) -> str | None:
    """The statements to run: ``-e``, ``-f``, standard input when it is not a terminal; None for a prompt."""
    if args.execute is not None:
        return args.execute
    if args.file is not None:
        with open(args.file, encoding="utf-8") as f:
            return f.read()
    return None if sys.stdin.isatty() else sys.stdin.read()


def table_folders(spark: Any, output: str) -> list[str]:
    """The sub-folders of ``output`` that hold a Delta table (a ``_delta_log``), by name."""
    from pipeline.session import is_local_path, local_path

    if is_local_path(spark, output):
        root = local_path(output)
        if not os.path.isdir(root):
            raise ValueError(f"--output {output}: no such folder")
        return sorted(n for n in os.listdir(root) if os.path.isdir(os.path.join(root, n, "_delta_log")))
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(output)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    if not fs.exists(path):
        raise ValueError(f"--output {output}: no such folder")
    names = [s.getPath().getName() for s in fs.listStatus(path) if s.isDirectory()]
    return sorted(n for n in names if fs.exists(jvm.org.apache.hadoop.fs.Path(path, f"{n}/_delta_log")))


def open_tables(spark: Any, output: str) -> list[str]:
    """Every Delta table of ``output`` as a temporary view of its folder's name; their names."""
    names = table_folders(spark, output)
    for name in names:
        path = _absolute(spark, f"{output.rstrip('/')}/{name}")
        spark.read.format("delta").load(path).createOrReplaceTempView(name)
    return names


def _absolute(spark: Any, path: str) -> str:
    """A relative local path against this process's working directory (Spark's JVM resolves one
    against its own, which is not this process's once it has changed directory, as in a notebook)."""
    from pipeline.session import is_local_path

    if "://" in path or path.startswith(("/", "file:")) or not is_local_path(spark, path):
        return path
    return os.path.abspath(path)


def absolute_delta_paths(spark: Any, sql: str) -> str:
    """The statement with each relative local ``delta.`path``` made absolute (:func:`_absolute`)."""
    return _DELTA_PATH.sub(lambda m: f"delta.`{_absolute(spark, m.group(1))}`", sql)


def statements(text: str) -> list[Statement]:
    """The statements of a script, split at the ``;`` outside quotes, backticks and ``--``
    comments, each with the title of the last ``-- N. title`` comment before it (its indented
    ``--`` lines continue the title)."""
    out: list[Statement] = []
    sql: list[str] = []
    title: str | None = None
    quote: str | None = None
    for line in text.splitlines():
        comment = _TITLE.match(line.strip()) if quote is None else None
        if comment:
            title = comment.group(1)
            continue
        if quote is None and title and line.startswith("--  ") and not "".join(sql).strip() and line[2:].strip():
            title += " " + line[2:].strip()
            continue
        start = 0
        for i, ch in enumerate(line):
            if quote is None and line.startswith("--", i):
                break
            if ch in "'`\"":
                quote = None if quote == ch else (quote or ch)
            elif ch == ";" and quote is None:
                sql.append(line[start:i])
                out.append(Statement(_clean("\n".join(sql)), title))
                sql, title, start = [], None, i + 1
        sql.append(line[start:])
    rest = _clean("\n".join(sql))
    if rest:
        out.append(Statement(rest, title))
    return [s for s in out if s.sql]


def _clean(sql: str) -> str:
    return "\n".join(ln for ln in sql.splitlines() if not ln.strip().startswith("--")).strip()


def missing_tables(spark: Any, sql: str) -> list[str]:
    """The ``delta.`path``` tables a statement reads that do not exist (no ``_delta_log``)."""
    from pipeline.session import is_local_path, local_path

    gone = []
    for path in dict.fromkeys(_DELTA_PATH.findall(sql)):
        if is_local_path(spark, path):
            exists = os.path.isdir(os.path.join(local_path(path), "_delta_log"))
        else:
            log = spark._jvm.org.apache.hadoop.fs.Path(f"{path.rstrip('/')}/_delta_log")
            exists = bool(log.getFileSystem(spark._jsc.hadoopConfiguration()).exists(log))
        if not exists:
            gone.append(path)
    return gone


def _run_one(spark: Any, s: Statement, args: argparse.Namespace) -> bool:
    """Run and print one statement; False when Spark rejected it."""
    if s.title:
        print(f"\n{s.title}")
    gone = missing_tables(spark, s.sql)
    if gone:
        names = ", ".join(p.rstrip("/").rsplit("/", 1)[-1] for p in gone)
        print(f"(skipped: {args.output} holds no {names} table; check-restore and inventory write the restore "
              "and savepoint tables)")  # fmt: skip
        return True
    try:
        df = spark.sql(absolute_delta_paths(spark, s.sql))
        if args.format == "json":
            for row in df.limit(args.max_rows).toJSON().collect():
                print(row)
        else:
            df.show(args.max_rows, truncate=False)
    except BrokenPipeError:
        raise
    except Exception as e:  # noqa: BLE001 - Spark's AnalysisException, ParseException ...: the statement's error
        print(f"error: {_first_line(e)}", file=sys.stderr)
        return False
    return True


def _first_line(e: Exception) -> str:
    text = str(getattr(e, "desc", None) or e).strip()
    return (text.splitlines() or [type(e).__name__])[0]


def _prompt(spark: Any, args: argparse.Namespace, views: list[str]) -> int:
    """Statements typed at ``sql>``, each run when a line ends with ``;``; an empty line at the
    prompt or end of input ends it."""
    print(f"tables: {', '.join(views)} (views; delta.`path` works too). End a statement with ';', "
          "an empty line or Ctrl-D quits.")  # fmt: skip
    failed, lines = False, []
    while True:
        try:
            line = input("sql> " if not lines else "...> ")
        except EOFError:
            break
        if not line.strip() and not lines:
            break
        lines.append(line)
        if line.rstrip().endswith(";"):
            for s in statements("\n".join(lines)):
                failed |= not _run_one(spark, s, args)
            lines = []
    return 1 if failed else 0
