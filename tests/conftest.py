"""One SparkSession for the whole test run: local[2], few shuffle partitions, real Delta."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.session import get_spark
from pipeline.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
VECTORS = SHARED / "vectors"
GOLDEN = ROOT / "tests" / "golden"
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
