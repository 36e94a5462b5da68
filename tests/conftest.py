"""One SparkSession for the whole test run: local[2], few shuffle partitions, real Delta; and the
runs several test files read (all known-answer files computed once; one ``check-restore`` over
the real restore cases)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.session import get_spark
from pipeline.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
VECTORS = SHARED / "vectors"
GOLDEN = ROOT / "tests" / "golden"
RESTORE_VECTORS = VECTORS / "restore"  # real savepoints of Flink 1.20.5 and 2.3.0 and what Flink did
RESTORE_LINES = ("1.20", "2.3")
EXAMPLES = ROOT / "conformance" / "examples"  # Flink's own example programs (scripts/flink_examples.py)


@pytest.fixture(scope="session")
def settings():
    return load_settings({"spark.master": "local[2]", "spark.shuffle_partitions": 4})


@pytest.fixture(scope="session")
def spark(settings):
    session = get_spark(settings, app_name="flink-jobgraph-tests")
    yield session
    session.stop()


def vector_files() -> list[Path]:
    files = [VECTORS / "seed_vectors.jsonl", *sorted(VECTORS.glob("flink-*-dev-*.jsonl.gz"))]
    files += sorted(GOLDEN.glob("flink-*.jsonl.gz"))
    files += sorted(EXAMPLES.glob("flink-*.jsonl.gz"))
    return [f for f in files if f.exists()]


def compute_files(spark, settings, files: list[Path], root: Path, progress: bool = False):
    """Known-answer files computed in ONE pipeline run; returns (output folder, summary)."""
    from pipeline.compute.run import Progress, compute

    inp = root / "input"
    inp.mkdir()
    for f in files:
        shutil.copy(f, inp / f"{f.parent.name}-{f.name}")
    out = str(root / "out")
    return out, compute(spark, str(inp), out, settings, Progress(enabled=progress))


def assert_file_matches_flink(spark, out: str, path: Path) -> None:
    """Every graph of a known-answer file, compared with Flink's answer on every aspect."""
    from devtools.conformance import ASPECTS, compare_tables, read_vector_file

    graphs = list(read_vector_file(path))
    report = compare_tables(spark, out, graphs)
    assert report.graphs == len(graphs) > 0
    assert sum(report.checked[a] for a in ASPECTS) > 0
    assert report.ok(), report.table() + "\n" + "\n".join(report.mismatches)


@pytest.fixture(scope="session")
def conformance_run(spark, settings, tmp_path_factory):
    """All known-answer files computed in ONE pipeline run (the expensive part of CI)."""
    return compute_files(spark, settings, vector_files(), tmp_path_factory.mktemp("conformance"), progress=True)


def restore_cases(line: str) -> tuple[list[dict], dict[str, bytes]]:
    """The real restore cases of one Flink line and their ``_metadata`` files by name."""
    from devtools import restore_cases as rc

    base = RESTORE_VECTORS / f"savepoint-{line}-s11"
    return rc.read_cases(f"{base}.jsonl.gz"), rc.read_metadata_tar(f"{base}-metadata.tar.gz")


@pytest.fixture(scope="session")
def all_cases() -> tuple[list[dict], dict[str, bytes]]:
    cases, metadata = [], {}
    for line in RESTORE_LINES:
        c, m = restore_cases(line)
        cases += c
        metadata.update(m)
    return cases, metadata


@pytest.fixture(scope="session")
def restore_run(spark, settings, tmp_path_factory, all_cases):
    """One check-restore over the 120 cases (240 checks) + an unreadable savepoint + an unknown graph
    (test_restore_check.py checks its tables against Flink; test_report.py draws them)."""
    from devtools import restore_cases as rc
    from pipeline.restore.check import check_restore

    cases, metadata = all_cases
    folder = rc.write_case_fleet(cases, metadata, tmp_path_factory.mktemp("fleet"))
    # A job whose savepoint-taking version is not among the graphs (query 13's subject). Case N of
    # both lines is the same program (same IDs), so both v1s go.
    orphan = cases[60]
    gone = {orphan["v1"]["graph_id"], cases[0]["v1"]["graph_id"]}
    lines = (folder / "graphs" / "graphs.jsonl").read_text().splitlines()
    keep = [ln for ln in lines if json.loads(ln)["graph_id"] not in gone]
    (folder / "graphs" / "graphs.jsonl").write_text("\n".join(keep) + "\n")
    (folder / "bad").mkdir()
    (folder / "bad" / "_metadata").write_bytes(b"not a savepoint at all")
    extra = [
        {"check_id": "bad-savepoint", "savepoint": "bad", "graph_id": cases[0]["v2"]["graph_id"]},
        {"check_id": "unknown-graph", "savepoint": f"savepoints/{cases[0]['case_id']}", "graph_id": "nope@v9"},
    ]
    with open(folder / "checks.jsonl", "a") as f:
        f.write("".join(json.dumps(e) + "\n" for e in extra))
    out = str(tmp_path_factory.mktemp("out"))
    summary = check_restore(spark, str(folder / "graphs"), str(folder / "checks.jsonl"), out, settings)
    return summary, out, cases, metadata, orphan


def build_testjobs_jar(root: Path, line: str) -> dict[str, Path]:
    """The harness of ``line`` (built through the front door's build step on first use), the
    test programs (harness/src/testjobs) as a thin user jar under ``root``, and the connector
    jar they need beside it: {"harness", "jar", "connector"}."""
    import zipfile

    from pipeline.export import harness as export_cmd

    jar = export_cmd.ensure_harness(export_cmd.harness_dir(), line, quiet=True)
    classes = jar.parent / "test-classes"
    user_jar = root / f"testjobs-{line}.jar"
    with zipfile.ZipFile(user_jar, "w") as z:
        for f in sorted(classes.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(classes).as_posix())
    (connector,) = sorted((jar.parent / "test-lib").glob("flink-connector-files-*.jar"))
    return {"harness": jar, "jar": user_jar, "connector": connector}
