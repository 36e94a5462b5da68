"""The command line (help, exit codes, one-line reasons) and README's example SQL."""

from __future__ import annotations

import subprocess
import sys

from devtools.queries import example_queries
from pipeline.cli import main
from pipeline.compute.run import Progress, compute

from .conftest import ROOT


def test_help_needs_no_spark(capsys):
    try:
        main(["--help"])
    except SystemExit as e:
        assert e.code == 0
    out = capsys.readouterr().out
    assert "compute" in out and "ingest" in out and "2.3" in out


def test_missing_input_is_a_one_line_error(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline.cli",
            "compute",
            "--input",
            str(tmp_path / "nope"),
            "--output",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 2
    last = [ln for ln in proc.stderr.splitlines() if ln.startswith("flink-jobgraph:")]
    assert last == [f"flink-jobgraph: input path {tmp_path / 'nope'} does not exist"]


def test_bad_set_option_is_rejected(capsys):
    assert main(["compute", "--input", "x", "--output", "y", "--set", "nonsense"]) == 2
    assert "SECTION.KEY=VALUE" in capsys.readouterr().err


def test_example_queries_answer_on_the_samples(spark, settings, tmp_path):
    out = str(tmp_path / "demo")
    compute(spark, str(ROOT / "samples"), out, settings, Progress(enabled=False))
    results = [spark.sql(sql).collect() for _, sql in example_queries(out)]
    which, vertices, lost, errors = results[:4]  # queries appended later are checked by their own tests
    assert [(r.graph_id, r.node_id, r.uid) for r in which] == [("seed003-stateful-with-uids", 4, "count_uid")]
    assert [r.name for r in vertices] == [
        "Window Agg -> Enrich -> Sink: Kafka",
        "Source: Orders -> Parse -> Filter Bots",
    ]
    # v2 put a Filter between Parse and the window: the uid'd operators keep their IDs,
    # Parse (its chain output count changed), Enrich and the sink (positions shifted) do not.
    assert [r.name for r in lost] == ["Parse", "Enrich", "Sink: Kafka"]
    assert {r.error_code for r in errors} == {"DANGLING_EDGE", "DUPLICATE_UID", "UNKNOWN_ENUM"}
