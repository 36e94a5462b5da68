"""``flink-jobgraph render``: every sample graph drawn by Graphviz, pages opened in a real headless Chromium.

The samples go through ``compute`` (the shared session); every processed graph is rendered
(``dot`` is fast) and checked in the HTML; a few pages, the side-by-side comparison among
them, are loaded in Debian's ``chromium`` (``--dump-dom``: what the browser built from the
file) plus one screenshot. A job of several hundred vertices is used as a person would, in
Chromium driven over its DevTools pipe (tests/browser.py): wheel, drag, typed searches, and the
text measured where the browser draws it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.compute.run import Progress, compute
from pipeline.render.page import dot_svg, load_graphs, render
from tests.browser import Browser
from udfs.compute.one_graph import compute_one
from udfs.render.layout import Changes, Edge, JobGraph, Operator, Vertex, page, to_dot

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
        # self-contained: nothing fetched (the only URLs are SVG's XML namespaces), script inline
        assert not re.search(r"""(src|href)=["']?https?:""", page)
        assert not re.search(r"<script[^>]*\bsrc=", page)


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


def _sql_like_job(branches: int, seed: int = 7) -> dict:
    """A spec shaped like a large compiled SQL job: table sources, runs of Calc / Filter /
    WatermarkAssigner steps with the planner's long names, joins, group aggregations, sinks."""
    import random

    rnd = random.Random(seed)
    nodes: list[dict] = []
    edges: list[dict] = []

    def node(name: str, parallelism: int, uid: str | None = None, source: bool = False) -> int:
        n = {"id": len(nodes) + 1, "name": name, "parallelism": parallelism}
        if uid:
            n["uid"] = uid
        if source:
            n.update(is_source=True, chaining_strategy="HEAD")
        nodes.append(n)
        return n["id"]

    heads = [node(f"Source: TableSourceScan(table=[[default_catalog, default_database, orders_{s}]], "
                  "fields=[id, customer, amount, ts])", 4, uid=f"src-{s}", source=True) for s in range(8)]  # fmt: skip
    for _ in range(branches):
        cur = rnd.choice(heads[-20:])
        for k in range(rnd.randint(1, 4)):
            name = rnd.choice([f"Calc(select=[id, customer, amount * {k} AS amt{k}, ts], "
                               f"where=[(amount > {rnd.randint(1, 99)})])",
                               f"Filter {len(nodes)}",
                               "WatermarkAssigner(rowtime=[ts], watermark=[(ts - 5000:INTERVAL SECOND)])"])  # fmt: skip
            nxt = node(name, 4, uid=f"op-{len(nodes)}" if rnd.random() < 0.3 else None)
            edges.append({"source": cur, "target": nxt, "partitioner": "FORWARD"})
            cur = nxt
        if rnd.random() < 0.2:
            join = node("Join(joinType=[InnerJoin], where=[(id = id0)], select=[id, customer, amt, id0], "
                        "leftInputSpec=[NoUniqueKey], rightInputSpec=[NoUniqueKey])", 4)  # fmt: skip
            edges += [{"source": cur, "target": join, "partitioner": "HASH"},
                      {"source": rnd.choice(heads[:-1]), "target": join, "partitioner": "HASH"}]  # fmt: skip
            cur = join
        agg = node(f"GroupAggregate(groupBy=[customer], select=[customer, SUM(amount) AS total_{len(nodes)}])",
                   rnd.choice([2, 4, 8]), uid=f"agg-{len(nodes)}")  # fmt: skip
        edges.append({"source": cur, "target": agg, "partitioner": rnd.choice(["HASH", "REBALANCE"])})
        heads.append(agg)
    for h in heads[-5:]:
        sink = node(f"Sink: Sink(table=[default_catalog.default_database.out_{h}], fields=[customer, total])", 1,
                    uid=f"sink-{h}")  # fmt: skip
        edges.append({"source": h, "target": sink, "partitioner": "REBALANCE"})
    return {"graph_id": "large-sql-job@v1", "job_name": "large", "flink_version": "2.3", "nodes": nodes,
            "edges": edges}  # fmt: skip


def _job_graph(spec: dict) -> JobGraph:
    """The JobGraph as the pipeline computes it (one graph, without Spark), as render draws it."""
    _, ops, vertices, job_edges = compute_one(spec)
    by_vertex: dict[str, list[Operator]] = {}
    for o in ops.to_dict("records"):
        by_vertex.setdefault(o["jobvertex_id"], []).append(
            Operator(o["node_id"], o["name"], o["operator_id"], o["uid"], o["chain_index"] or 0))
    return JobGraph(
        spec["graph_id"], spec["flink_version"],
        tuple(Vertex(v["jobvertex_id"], v["name"], v["parallelism"], v["max_parallelism"], v["slot_sharing_group"],
                     v["vertex_order"], tuple(by_vertex[v["jobvertex_id"]]), v.get("effective_max_parallelism"))
              for v in vertices.to_dict("records")),
        tuple(Edge(e["source_jobvertex_id"], e["target_jobvertex_id"], e["ship_strategy"], e["distribution_pattern"],
                   e["input_index"]) for e in job_edges.to_dict("records")),
    )  # fmt: skip


# Every text of every vertex box, as the browser draws it (its range on the screen), against the box.
_OVERFLOWING_TEXT = """(() => { const out = []; const range = document.createRange();
  for (const g of document.querySelectorAll('g.node')) {
    const box = g.querySelector('polygon[fill="none"]').getBoundingClientRect();
    for (const t of g.querySelectorAll('text')) {
      range.selectNodeContents(t); const r = range.getBoundingClientRect();
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5) out.push(t.textContent.slice(0, 60)); } }
  return out; })()"""


def test_a_large_job_is_navigable_in_chromium(tmp_path) -> None:
    """A job of several hundred vertices: the page opens with the whole graph in its panel; the
    wheel zooms at the pointer, a drag pans; a search by operator ID, uid or name outlines the
    vertices that hold it and brings them into view one after the other; no line of text leaves
    its box at any zoom (at 100 % a few did by 15 px before: Graphviz measures fonts a little
    narrower than Chromium draws them)."""
    graph = _job_graph(_sql_like_job(150))
    assert len(graph.vertices) > 250
    html = tmp_path / "large.html"
    html.write_text(page(graph.graph_id, [(graph, dot_svg(to_dot(graph)), Changes())]))
    ordered = sorted(graph.vertices, key=lambda v: v.vertex_order)
    side = "document.querySelector('section.side')"
    nav = f"{side}.flinkJobGraph"

    def scale() -> float:
        return float(b.js(f"{side}.dataset.scale"))

    def in_view(vertex_id: str) -> bool:
        return b.js(f"""(() => {{ const v = {side}.querySelector('.view').getBoundingClientRect();
            const r = document.getElementById('vertex_{vertex_id}').getBoundingClientRect();
            return r.left >= v.left - 1 && r.right <= v.right + 1 && r.top >= v.top - 1 && r.bottom <= v.bottom + 1;
            }})()""")  # fmt: skip

    def search(text: str) -> str:
        box = b.js(f"(() => {{ const r = {side}.querySelector('.tools input').getBoundingClientRect();"
                   " return [r.left + r.width / 2, r.top + r.height / 2]; })()")  # fmt: skip
        b.click(*box)
        b.js(f"{side}.querySelector('.tools input').select()")
        b.type(text)
        b.key("Enter", 13)
        return b.js(f"{side}.querySelector('.tools .hits').textContent")

    def current() -> list[str]:
        return b.js("[...document.querySelectorAll('g.node.current')].map((n) => n.id.slice(7))")

    with Browser(tmp_path / "profile", width=1400, height=900) as b:
        b.open(html.as_uri())
        assert b.errors() == []
        # opens fitted: every vertex inside the panel
        assert scale() < 0.2
        assert all(in_view(v.jobvertex_id) for v in (ordered[0], ordered[-1]))
        # no text leaves its box, at 100 % and zoomed in and out
        for zoom in (1, 2, 0.5):
            b.js(f"{nav}.state.s = {zoom} * 4 / 3; {nav}.zoomAt(1, 0, 0)")
            assert scale() == zoom
            assert b.js(_OVERFLOWING_TEXT) == [], zoom
        b.js(f"{nav}.fit()")

        # search by operator ID: the one vertex, centred at 100 %
        target = ordered[-1]
        op = target.operators[-1]
        assert search(op.operator_id) == "1 of 1"
        assert current() == [target.jobvertex_id] and in_view(target.jobvertex_id) and scale() == 1.0
        # by uid: every vertex holding a uid that contains it; Enter steps to the next one
        sinks = [v.jobvertex_id for v in ordered if any((o.uid or "").startswith("sink-") for o in v.operators)]
        assert search("sink-") == f"1 of {len(sinks)}" and current() == [sinks[0]]
        b.key("Enter", 13)
        assert current() == [sinks[1]] and in_view(sinks[1])
        assert b.js("document.querySelectorAll('g.node.match').length") == len(sinks)
        # by a part of a name, in another case (the whole name is searched, not only what the box shows)
        name = next(o.name for v in ordered for o in v.operators if o.name.startswith("GroupAggregate"))
        total = name.split("AS ")[1].rstrip("])")
        holders = [v.jobvertex_id for v in ordered if any(total + "]" in o.name for o in v.operators)]
        assert search(total.upper()) == f"1 of {len(holders)}" and current() == [holders[0]]
        assert in_view(holders[0])
        assert search("no-such-operator") == "no match" and current() == []

        # the wheel zooms in at the pointer: the graph's point under it stays under it
        b.js(f"{nav}.fit()")
        view = b.js(f"{side}.querySelector('.view').getBoundingClientRect().toJSON()")
        px, py = view["left"] + 400, view["top"] + 300
        before = b.js(f"JSON.stringify({nav}.state)")
        b.wheel(px, py, -800)
        after = b.js(f"JSON.stringify({nav}.state)")
        import json

        s0, s1 = json.loads(before), json.loads(after)
        assert s1["s"] > s0["s"] * 3
        for axis, offset in (("x", 400), ("y", 300)):
            assert abs((s0[axis] + offset / s0["s"]) - (s1[axis] + offset / s1["s"])) < 1e-6 * s0["s"] + 0.01
        # a drag pans by the pointer's movement, exactly
        probe = ordered[len(ordered) // 2].jobvertex_id
        rect = f"document.getElementById('vertex_{probe}').getBoundingClientRect().toJSON()"
        r0 = b.js(rect)
        b.drag(px, py, -300, -200)
        r1 = b.js(rect)
        assert abs(r1["left"] - r0["left"] + 300) < 1 and abs(r1["top"] - r0["top"] + 200) < 1
        assert b.errors() == []
        shot = b.screenshot(tmp_path / "large.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
