"""The same lines in any file layout and any order give the same tables: real Spark runs
over a few hypothesis-drawn layouts (split into files, gzip or not, single-object .json,
sub-folders, any line order) of known-answer graphs and a rejected one."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from pipeline.run import Progress, compute
from tests.conftest import VECTORS

# ---- the same lines in any file layout and order: real Spark runs ------------------------------

TABLES = ("operators", "job_vertices", "job_edges", "graph_errors")


def _tables(spark, out: str) -> dict[str, list]:
    """Every table's rows, but graph_errors' source_file: where a graph came from is the one
    thing a layout is allowed to change."""
    snap = {}
    for t in TABLES:
        rows = spark.read.format("delta").load(f"{out}/{t}").drop("source_file").collect()
        snap[t] = sorted(tuple(str(v) for v in r) for r in rows)
    return snap


def _fleet() -> list[str]:
    """Known-answer programs of two Flink lines (real exporter output) and a rejected graph."""
    lines = []
    for name, k in (("flink-2.3-dev-s1.jsonl.gz", 7), ("flink-1.20-dev-s1.jsonl.gz", 4)):
        with gzip.open(VECTORS / name, "rt", encoding="utf-8") as f:
            lines += [next(f).rstrip("\n") for _ in range(k)]
    bad = {
        "graph_id": "layout-bad",
        "nodes": [{"id": 1, "name": "S", "parallelism": 1}],
        "edges": [{"source": 1, "target": 9}],
    }
    return [*lines, json.dumps(bad)]


@st.composite
def layouts(draw: st.DrawFn, n_lines: int) -> list[list[int]]:
    """Line indexes per file, in file order: any split into 1-5 files, any order of lines."""
    order = draw(st.permutations(range(n_lines)))
    n_files = draw(st.integers(1, 5))
    cuts = sorted(draw(st.lists(st.integers(1, n_lines - 1), min_size=n_files - 1, max_size=n_files - 1)))
    bounds = [0, *cuts, n_lines]
    return [list(order[a:b]) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def write_layout(root, lines: list[str], files: list[list[int]], gz: list[bool]) -> None:
    root.mkdir(parents=True)
    for k, idx in enumerate(files):
        text = "".join(lines[i] + "\n" for i in idx)
        folder = root / f"part-{k % 2}"
        folder.mkdir(exist_ok=True)
        if gz[k % len(gz)]:
            with gzip.open(folder / f"f{k}.jsonl.gz", "wt", encoding="utf-8") as f:
                f.write(text)
        elif len(idx) == 1:
            (folder / f"f{k}.json").write_text(json.dumps(json.loads(lines[idx[0]]), indent=2))
        else:
            (folder / f"f{k}.jsonl").write_text(text)


@pytest.fixture(scope="module")
def layout_reference(spark, settings, tmp_path_factory):
    lines = _fleet()
    root = tmp_path_factory.mktemp("layout-ref")
    write_layout(root / "in", lines, [list(range(len(lines)))], [False])
    compute(spark, str(root / "in"), str(root / "out"), settings, Progress(enabled=False))
    ref = _tables(spark, str(root / "out"))
    assert len({r[0] for r in ref["job_vertices"]}) >= len(lines) - 2 and ref["graph_errors"]
    return lines, ref


@hsettings(max_examples=2, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_file_layout_and_line_order_gives_the_same_tables(
    spark, settings, layout_reference, tmp_path_factory, data
):
    lines, ref = layout_reference
    files = data.draw(layouts(len(lines)))
    gz = data.draw(st.lists(st.booleans(), min_size=1, max_size=3))
    root = tmp_path_factory.mktemp("layout")
    write_layout(root / "in", lines, files, gz)
    compute(spark, str(root / "in"), str(root / "out"), settings, Progress(enabled=False))
    assert _tables(spark, str(root / "out")) == ref
