"""``flink-jobgraph sql`` (pipeline/tables/sql_command.py): an output's tables opened for SQL.

On the demo's output (``make demo``: ``compute`` over samples/), ``-f jobs/example_queries.sql``
answers every query whose tables the output holds, titled as the file titles them, and names the
tables of the others (the restore tables come with ``check-restore``); every table is a view;
``delta.`path``` works with a relative path; a statement Spark rejects says why on stderr and
the next one runs (exit code 1); a folder without tables exits 2.
"""

from __future__ import annotations

import os
import re

import pytest

from pipeline.cli import main
from pipeline.compute.run import Progress, compute
from pipeline.tables.sql_command import statements

from .conftest import ROOT

QUERIES = ROOT / "jobs" / "example_queries.sql"


@pytest.fixture(scope="module")
def demo(spark, settings, tmp_path_factory):
    """out/demo as `make demo` writes it."""
    out = tmp_path_factory.mktemp("out") / "demo"
    compute(spark, str(ROOT / "samples"), str(out), settings, Progress(enabled=False))
    return out


def test_the_example_queries_answer_on_the_demo(demo, capsys):
    assert main(["sql", "--output", str(demo), "-f", str(QUERIES)]) == 0
    printed = capsys.readouterr().out
    titles = re.findall(r"^(\d+)\. ", printed, re.M)
    assert titles == [str(n) for n in range(1, len(statements(QUERIES.read_text())) + 1)] and len(titles) == 13
    blocks = dict(re.findall(r"^(\d+)\. [^\n]*\n(.*?)(?=^\d+\. |\Z)", printed, re.M | re.S))
    # 1. which operator is 77fec417...: the uid'd count of the stateful sample
    assert re.search(r"\|seed003-stateful-with-uids\|4 +\|Map +\|count_uid", blocks["1"]), blocks["1"]
    # 2. the chains of orders-enricher@v2, in JobGraph order; 4. the rejected samples by code
    assert blocks["2"].index("Source: Orders -> Parse -> Filter Bots") > 0
    assert all(code in blocks["4"] for code in ("DANGLING_EDGE", "DUPLICATE_UID", "UNKNOWN_ENUM"))
    # 6-13 read the restore tables, which compute does not write: skipped, each naming what it lacks
    for n in range(6, 14):
        assert blocks[str(n)].startswith(f"(skipped: {demo} holds no "), (n, blocks[str(n)])
    assert "restore_checks" in blocks["6"] and "savepoint_states" in blocks["9"]


def test_every_table_is_a_view_and_delta_paths_work(spark, demo, capsys, monkeypatch):
    count = spark.read.format("delta").load(f"{demo}/operators").count()
    monkeypatch.chdir(demo.parent)  # delta.`demo/operators`: relative to the working directory
    sql = "SELECT count(*) AS n FROM operators; SELECT count(*) AS n FROM delta.`demo/operators`"
    assert main(["sql", "--output", "demo", "-e", sql, "--format", "json"]) == 0
    assert capsys.readouterr().out.split() == [f'{{"n":{count}}}'] * 2
    views = {t.name for t in spark.catalog.listTables() if t.isTemporary}
    assert {"operators", "job_vertices", "job_edges", "graph_errors", "runs"} <= views


def test_a_bad_statement_says_why_and_the_next_runs(demo, capsys, tmp_path):
    code = main(["sql", "--output", str(demo), "-e", "SELECT nope FROM operators; SELECT 1 AS one"])
    out, err = capsys.readouterr()
    assert code == 1 and "|one|" in out.replace(" ", ""), out
    assert err.startswith("error: ") and "nope" in err and len(err.splitlines()) == 1
    empty = tmp_path / "empty"
    os.mkdir(empty)
    assert main(["sql", "--output", str(empty), "-e", "SELECT 1"]) == 2
    assert capsys.readouterr().err == f"flink-jobgraph: no Delta table under {empty}\n"


def test_statements_split_at_semicolons_outside_quotes_and_comments():
    text = "-- 1. first; not a split\nSELECT ';' AS a, `x;y` -- a comment; too\nFROM t;\n"
    text += "-- 2. second\n--    more\nSELECT 2"
    got = statements(text)
    assert [(s.title, s.sql) for s in got] == [
        ("1. first; not a split", "SELECT ';' AS a, `x;y` -- a comment; too\nFROM t"),
        ("2. second more", "SELECT 2"),
    ]
