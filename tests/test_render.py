"""``flink-jobgraph render``: every sample graph drawn by Graphviz, pages opened in a real headless Chromium.

The samples go through ``compute`` (the shared session); every processed graph is rendered
(``dot`` is fast) and checked in the HTML; a few pages, the side-by-side comparison among
them, are loaded in Debian's ``chromium`` (``--dump-dom``: what the browser built from the
file) plus one screenshot.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.compute.run import Progress, compute
from pipeline.render.page import load_graphs, render

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def out(spark, settings, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("render") / "out")
    compute(spark, str(ROOT / "samples"), out, settings, Progress(enabled=False))
    return out


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    assert CHROMIUM, "chromium is not installed: make install installs it (apt-get install chromium)"
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp / 'chromium-profile'}",
            "--enable-logging=stderr",
            "--v=0",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _console_errors(stderr: str) -> list[str]:
    # Page errors and console messages reach Chromium's log as CONSOLE(...) lines.
    return [ln for ln in stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]


def test_every_sample_graph_renders_with_every_vertex(spark, out, tmp_path) -> None:
    graph_ids = sorted(
        r.graph_id
        for r in spark.read.format("delta").load(f"{out}/job_vertices").select("graph_id").distinct().collect()
    )
    assert len(graph_ids) == 28
    graphs = load_graphs(spark, out, graph_ids)
    for gid in graph_ids:
        page = render(spark, out, gid, str(tmp_path / f"{re.sub(r'[^A-Za-z0-9]+', '_', gid)}.html")).read_text()
        graph = graphs[gid]
        for v in graph.vertices:
            assert f'id="vertex_{v.jobvertex_id}"' in page
            assert f"Parallelism: {v.parallelism}" in page
            for o in v.operators:
                assert o.operator_id in page
        assert page.count('class="edge"') == len(graph.edges)
        # self-contained: nothing fetched (the only URLs are SVG's XML namespaces)
        assert not re.search(r"""(src|href)=["']?https?:""", page)
        assert "<script" not in page


def test_compare_page_in_headless_chromium(spark, out, tmp_path) -> None:
    page = tmp_path / "compare.html"
    assert (
        main(
            [
                "render",
                "--output",
                out,
                "--graph-id",
                "orders-enricher@v1",
                "--compare",
                "orders-enricher@v2",
                "--to",
                str(page),
            ]
        )
        == 0
    )
    graphs = load_graphs(spark, out, ["orders-enricher@v1", "orders-enricher@v2"])
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert not _console_errors(dom.stderr), _console_errors(dom.stderr)
    html = dom.stdout
    assert html.count("<svg") == 2
    for g in graphs.values():
        assert f'data-graph-id="{g.graph_id}"' in html
        for v in g.vertices:
            assert f'id="vertex_{v.jobvertex_id}"' in html
            for o in v.operators:
                assert o.operator_id in html
                assert html.count(o.name.replace(":", ":")) >= 1
    # v2 put Filter Bots between Parse and the window: Parse, Enrich and the sink have no uid
    # and change ID (README's restore example); the uid'd source and window keep theirs.
    changed = re.findall(r"<tr><td>(orders-enricher@v[12])</td><td>([^<]+)</td>", html)
    assert sorted(changed) == sorted(
        [("orders-enricher@v1", n) for n in ("Parse", "Enrich", "Sink: Kafka")]
        + [("orders-enricher@v2", n) for n in ("Parse", "Filter Bots", "Enrich", "Sink: Kafka")]
    )
    assert "ID changed: orders-enricher@v2 has 'Parse' as 5ee0d1876925ebe37a19bc90eaad4041" in html
    assert "no operator with this ID in orders-enricher@v1" in html  # Filter Bots is new

    shot = tmp_path / "compare.png"
    taken = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1600,1000", page.as_uri())
    assert taken.returncode == 0, taken.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a drawn page, not a blank one


def test_unknown_and_rejected_graphs_fail_with_a_reason(out, tmp_path, capsys) -> None:
    assert main(["render", "--output", out, "--graph-id", "nope", "--to", str(tmp_path / "x.html")]) == 2
    assert "no graph 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def test_compare_attaches_restore_reasons_and_pairs_by_uid_then_name() -> None:
    from udfs.render.layout import JobGraph, Operator, Vertex, compare_changes, to_dot

    def graph(gid: str, ops: list[Operator]) -> JobGraph:
        return JobGraph(gid, "1.20", (Vertex("a" * 32, "chain", 2, 128, "default", 0, tuple(ops)),), ())

    old = graph("job@1", [Operator(1, "Src", "1" * 32, "src", 1), Operator(2, "Map", "2" * 32, None, 2)])
    new = graph("job@2", [Operator(1, "Source", "3" * 32, "src", 1), Operator(2, "Map", "4" * 32, None, 2)])
    lost = "restore check c1 (savepoint sp-1): LOST (with state)"
    left, right = compare_changes(old, new, {"1" * 32: [lost]})
    assert left.reasons == {
        "1" * 32: ["ID changed: job@2 has 'Source' as " + "3" * 32, lost],
        "2" * 32: ["ID changed: job@2 has 'Map' as " + "4" * 32],
    }
    assert set(right.reasons) == {"3" * 32, "4" * 32}
    dot = to_dot(old, left)
    assert dot.count('BGCOLOR="#ffd7d5"') == 6  # both operator rows, three cells each


def test_compare_says_which_check_each_restore_outcome_came_from(spark, out, tmp_path) -> None:
    """One saved operator, two checks against the new version: SKIPPED (with state) in the check
    that allows non-restored state, LOST (with state) in the other. The page's cell names the check
    and savepoint of each outcome, and of each fix, instead of two bare statuses."""
    import shutil as sh

    from pipeline.tables.columns import FIXES_COLUMNS, MATCHES_COLUMNS, struct

    both = str(tmp_path / "out")
    sh.copytree(out, both)
    graphs = load_graphs(spark, both, ["orders-enricher@v1", "orders-enricher@v2"])
    parse = next(o for v in graphs["orders-enricher@v1"].vertices for o in v.operators if o.name == "Parse")
    new_parse = next(o for v in graphs["orders-enricher@v2"].vertices for o in v.operators if o.name == "Parse")
    checks = [("orders@v2 from sp-a", "/savepoints/orders/sp-a", "LOST"),
              ("orders@v2 from sp-b, allowNonRestoredState", "/savepoints/orders/sp-b", "SKIPPED")]  # fmt: skip
    matches = [
        {"check_id": c, "savepoint": sp, "graph_id": "orders-enricher@v2", "operator_index": 1,
         "operator_id": parse.operator_id, "has_state": True, "state_size": 1024, "status": status}
        for c, sp, status in checks
    ]  # fmt: skip
    fixes = [{"check_id": checks[0][0], "savepoint": checks[0][1], "graph_id": "orders-enricher@v2",
              "operator_id": parse.operator_id, "counterpart_operator_id": new_parse.operator_id,
              "reasons": ["upstream operator Filter Bots added"], "fix_code": '.setUidHash("x")'}]  # fmt: skip
    for name, rows, columns in (("restore_operator_matches", matches, MATCHES_COLUMNS),
                                ("restore_fixes", fixes, FIXES_COLUMNS)):  # fmt: skip
        schema = struct(columns)
        full = [{c: r.get(c) for c in schema.fieldNames()} for r in rows]
        spark.createDataFrame(full, schema).write.format("delta").save(f"{both}/{name}")

    page = tmp_path / "compare.html"
    assert main(["render", "--output", both, "--graph-id", "orders-enricher@v1", "--compare",
                 "orders-enricher@v2", "--to", str(page)]) == 0  # fmt: skip
    html = page.read_text()
    (cell,) = re.findall(r"<tr><td>orders-enricher@v1</td><td>Parse</td>.*?<td>([^<]*(?:<br>[^<]*)*)</td></tr>", html)
    lines = cell.split("<br>")
    assert lines == [
        "ID changed: orders-enricher@v2 has &#x27;Parse&#x27; as " + new_parse.operator_id,
        "restore check orders@v2 from sp-a (savepoint /savepoints/orders/sp-a): LOST (with state): "
        "the restore fails on it",
        "restore check orders@v2 from sp-b, allowNonRestoredState (savepoint /savepoints/orders/sp-b): "
        "SKIPPED (with state): its state is dropped (allowNonRestoredState)",
        "restore check orders@v2 from sp-a: upstream operator Filter Bots added (fix: .setUidHash(&quot;x&quot;))",
    ]
    # the new side's counterpart carries the fix with its check too
    (new_cell,) = re.findall(r"<tr><td>orders-enricher@v2</td><td>Parse</td>.*?<td>([^<]*(?:<br>[^<]*)*)</td></tr>",
                             html)  # fmt: skip
    assert "restore check orders@v2 from sp-a: upstream operator Filter Bots added" in new_cell
