"""--database against a REAL metastore: Spark's embedded Hive metastore on Derby, in a tmp dir.

The shared test session has Spark's in-memory catalog (no Hive support), so the CLI runs in
a subprocess whose session uses a Hive metastore, and a second, separate subprocess reads
the tables back by name in SQL: what survives is what the metastore persisted, not
anything held in one JVM.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.tables import catalog

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "orders-enricher.jsonl"
RESTORE_SET = ROOT.parent / "shared" / "vectors" / "restore" / "savepoint-2.3-s11"


def _hive_env(tmp: Path) -> dict[str, str]:
    """A session with Spark's embedded Hive metastore (Derby) kept under ``tmp``."""
    env = dict(os.environ)
    env["PYSPARK_SUBMIT_ARGS"] = " ".join(
        [
            "--conf spark.sql.catalogImplementation=hive",
            f"--conf spark.sql.warehouse.dir={tmp / 'warehouse'}",
            f"--conf spark.hadoop.javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={tmp / 'metastore_db'};"
            "create=true",
            "pyspark-shell",
        ]
    )
    env.setdefault("FLINK_JOBGRAPH_DRIVER_MEMORY", "2g")
    env["FLINK_JOBGRAPH_MASTER"] = "local[2]"
    env["PYTHONPATH"] = str(ROOT)
    return env


def _run(script: str, tmp: Path) -> subprocess.CompletedProcess:
    # cwd=tmp: Derby writes derby.log into the working directory.
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=tmp,
        env=_hive_env(tmp),
        capture_output=True,
        text=True,
        timeout=1800,  # generous: a shared, loaded machine took >10 min for what takes ~1 min idle
    )


WRITER = f"""
    import contextlib, io, json, sys
    from pipeline.cli import main

    def cli(*argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(list(argv) + ["--quiet"])
        return {{"code": code, "stderr": err.getvalue()}}

    results = {{
        "ingest": cli("ingest", "--input", "{SAMPLE}", "--output", "staged", "--database", "fj_staged"),
        "compute": cli("compute", "--input", "staged", "--output", "out", "--database", "flink_jobgraph"),
        # the same names over ANOTHER folder: refused before the run, nothing re-pointed
        "clash": cli("compute", "--input", "staged", "--output", "elsewhere", "--database", "flink_jobgraph"),
    }}
    # check-restore registers its tables too (compute's and the four restore tables)
    from devtools import restore_cases as rc
    cases = rc.read_cases("{RESTORE_SET}.jsonl.gz")[:1]
    rc.write_case_fleet(cases, rc.read_metadata_tar("{RESTORE_SET}-metadata.tar.gz"), "fleet")
    results["restore"] = cli("check-restore", "--graphs", "fleet/graphs", "--checks", "fleet/checks.jsonl",
                             "--output", "rout", "--database", "fj_restore")
    # registering again over the same folders (what every later run does) changes nothing
    from pipeline.tables import catalog
    from pyspark.sql import SparkSession
    spark = SparkSession.getActiveSession()
    results["again"] = catalog.register_tables(
        spark, catalog.Registration("out", tuple(catalog.COMMAND_TABLES["compute"]), "flink_jobgraph")
    )
    print("RESULT " + json.dumps(results))
"""

READER = """
    import json
    from pipeline.session import get_spark
    from pipeline.settings import load_settings

    spark = get_spark(load_settings())
    q = lambda sql: [r.asDict() for r in spark.sql(sql).collect()]
    out = {
        "impl": spark.conf.get("spark.sql.catalogImplementation"),
        "tables": sorted(
            f"{r['namespace']}.{r['tableName']}"
            for db in ("flink_jobgraph", "fj_staged", "fj_restore")
            for r in q(f"SHOW TABLES IN {db}")
        ),
        "operators": q("SELECT graph_id, name, uid, operator_id FROM flink_jobgraph.operators"),
        "vertices": q(
            "SELECT v.graph_id, v.name, v.parallelism, count(o.operator_id) AS n "
            "FROM flink_jobgraph.job_vertices v JOIN flink_jobgraph.operators o "
            "ON o.graph_id = v.graph_id AND o.jobvertex_id = v.jobvertex_id GROUP BY 1, 2, 3"
        ),
        "stream_nodes": q("SELECT count(*) AS n FROM fj_staged.stream_nodes")[0]["n"],
        "restore_checks": q("SELECT count(*) AS n FROM fj_restore.restore_checks")[0]["n"],
        "detail": q("DESCRIBE DETAIL flink_jobgraph.operators")[0]["location"],
        "type": [
            r["data_type"] for r in q("DESCRIBE TABLE EXTENDED flink_jobgraph.job_edges") if r["col_name"] == "Type"
        ],
        "elsewhere": q("SHOW TABLES IN flink_jobgraph LIKE 'x*'"),
    }
    print("RESULT " + json.dumps(out, default=str))
"""


def _result(proc: subprocess.CompletedProcess) -> dict:
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"rc={proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


def test_tables_registered_in_a_hive_metastore_and_read_back_by_name(tmp_path: Path) -> None:
    written = _result(_run(WRITER, tmp_path))
    assert written["ingest"]["code"] == 0, written["ingest"]["stderr"]
    assert written["compute"]["code"] == 0, written["compute"]["stderr"]
    assert written["restore"]["code"] == 0, written["restore"]["stderr"]
    assert written["again"] == [f"flink_jobgraph.{t}" for t in catalog.COMMAND_TABLES["compute"]]
    assert written["clash"]["code"] == 2
    assert "flink_jobgraph`.`operators` already exists at" in written["clash"]["stderr"]
    assert not (tmp_path / "elsewhere").exists(), "the clash must be refused before the run writes anything"
    assert (tmp_path / "metastore_db").is_dir()

    read = _result(_run(READER, tmp_path))  # a new JVM: only the metastore carries the names over
    assert read["impl"] == "hive"
    assert read["tables"] == sorted(
        [f"flink_jobgraph.{t}" for t in catalog.COMMAND_TABLES["compute"]]
        + [f"fj_staged.{t}" for t in catalog.COMMAND_TABLES["ingest"]]
        + [f"fj_restore.{t}" for t in catalog.COMMAND_TABLES["check-restore"]]
    )
    assert read["restore_checks"] == 2  # one case, with and without allowNonRestoredState
    ops = {(r["graph_id"], r["name"]): r for r in read["operators"]}
    assert len(read["operators"]) == 11  # 5 in v1, 6 in v2, once each after the re-run
    # the uid'd source keeps its ID across versions, Parse (no uid) does not: README's example
    assert ops[("orders-enricher@v1", "Source: Orders")]["operator_id"] == "c22cf63a4da6caf9dc3f39526c6a3188"
    assert ops[("orders-enricher@v2", "Source: Orders")]["uid"] == "orders-src"
    assert ops[("orders-enricher@v1", "Parse")]["operator_id"] == "741e3e71242943519c49946b0a7bc5f7"
    assert ops[("orders-enricher@v2", "Parse")]["operator_id"] == "5ee0d1876925ebe37a19bc90eaad4041"
    vertices = {(r["graph_id"], r["name"]): (r["parallelism"], r["n"]) for r in read["vertices"]}
    assert vertices[("orders-enricher@v2", "Source: Orders -> Parse -> Filter Bots")] == (4, 3)
    assert read["stream_nodes"] == 11
    assert read["detail"] == f"file:{tmp_path / 'out' / 'operators'}"
    assert read["type"] == ["EXTERNAL"]


def test_in_memory_catalog_is_refused_before_the_run(spark) -> None:
    # The shared session has no metastore: a database there would vanish with the JVM.
    with pytest.raises(catalog.CatalogError, match="needs a persistent catalog"):
        catalog.check_catalog(spark, "flink_jobgraph")


@pytest.mark.parametrize("bad", ["flink-jobgraph", "a.b", "1abc", "x`y", ""])
def test_bad_names_are_refused(bad: str) -> None:
    with pytest.raises(catalog.CatalogError):
        catalog.qualified(bad, "operators")
