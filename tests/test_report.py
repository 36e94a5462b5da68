"""``flink-jobgraph report``: the fleet restore report, from the tables of a real ``check-restore``.

The run is conftest's ``restore_run`` (the one test_restore_check.py checks against Flink: 120
real savepoints of Flink 1.20.5 and 2.3.0 with their edited jobs, both allowNonRestoredState
settings, an unreadable savepoint, an unknown graph). The page is opened in real headless
Chromium (tests/browser.py) and read as a person reads it: the counts it shows are the tables'
counts, the worst check comes first, a failing job's link opens its JobGraph diff with the lost
operator marked, the diff's search finds it, and nothing throws.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from pipeline.cli import main
from tests.browser import Browser
from udfs.render.layout import FAILING
from udfs.render.report import CheckLine, FixLine, report_page

MAX_DIFFS = 6  # fewer than the run's failing job versions: the page must say what it left out


@pytest.fixture(scope="module")
def page(restore_run, tmp_path_factory) -> tuple[Path, str]:
    _, out, *_ = restore_run
    to = tmp_path_factory.mktemp("report") / "report.html"
    summary = to.parent / "summary.json"
    args = ["report", "--output", out, "--to", str(to), "--max-diffs", str(MAX_DIFFS), "--summary-json", str(summary)]
    assert main(args) == 0
    return to, out


@pytest.fixture(scope="module")
def tables(spark, page) -> dict:
    """What the page should show, computed from the tables with Spark."""
    _, out = page
    read = lambda t: spark.read.format("delta").load(f"{out}/{t}")  # noqa: E731
    checks = read("restore_checks")
    status = F.when((F.col("verdict") == "RESTORES") & (F.col("decidable") == F.lit(False)), "NOT_DECIDABLE").otherwise(
        F.col("verdict")
    )
    lines = read("operators").select("graph_id", "flink_version").distinct()
    rows = checks.withColumn("status", status).join(lines, "graph_id", "left").collect()
    problems = Counter(r.check_id for r in read("restore_fixes").select("check_id").collect())
    problems.update(
        r.check_id for r in read("restore_state_problems").where("verdict = 'FAILS'").select("check_id").collect()
    )
    lost = read("restore_operator_matches").where("status = 'LOST'").select("check_id", "operator_id").collect()
    return {
        "status": Counter(r.status for r in rows),
        "failure": Counter(r.failure for r in rows if r.status == "FAILS"),
        "line": Counter((r.flink_version or "unknown", r.status) for r in rows),
        "problems": {r.check_id: problems.get(r.check_id, 0) for r in rows},
        "lost": lost,
        "failing_graphs": {r.graph_id for r in rows if r.status == "FAILS"},
    }


@pytest.fixture(scope="module")
def browser(page, tmp_path_factory):
    with Browser(tmp_path_factory.mktemp("chromium") / "profile", width=1500, height=1000) as b:
        b.open(page[0].as_uri())
        yield b


def test_the_counts_shown_are_the_tables(browser, tables, page) -> None:
    b = browser
    tiles = b.js("Object.fromEntries([...document.querySelectorAll('.tile')].map("
                 "(t) => [t.dataset.status, +t.querySelector('.n').textContent]))")  # fmt: skip
    assert tiles == dict(tables["status"])
    assert {"FAILS", "RESTORES", "ERROR"} <= set(tiles)
    by_failure = b.js("Object.fromEntries([...document.querySelectorAll('table.by-failure tr[data-failure]')].map("
                      "(r) => [r.dataset.failure, +r.cells[1].textContent]))")  # fmt: skip
    assert by_failure == dict(tables["failure"]) and len(by_failure) >= 2
    by_line = b.js("[...document.querySelectorAll('table.by-line tr')].slice(1).flatMap((r) => "
                   "[...r.querySelectorAll('td[data-status]')].map((c) => [r.cells[0].textContent, c.dataset.status, "
                   "+c.textContent]))")  # fmt: skip
    assert {(line, s): n for line, s, n in by_line if n} == dict(tables["line"])
    assert {line for line, _, _ in by_line} == {"1.20", "2.3", "unknown"}  # unknown: the unknown graph's check
    assert b.js("document.querySelectorAll('tr.check').length") == sum(tables["status"].values())
    summary = json.loads((page[0].parent / "summary.json").read_text())
    assert summary["statuses"] == dict(tables["status"]) and summary["diffs"] == MAX_DIFFS


def test_the_worst_check_comes_first(browser, tables) -> None:
    rows = browser.js("[...document.querySelectorAll('tr.check')].map((r) => [r.dataset.status, r.dataset.checkId])")
    order = ["FAILS", "ERROR", "NOT_DECIDABLE", "RESTORES"]
    ranks = [order.index(s) for s, _ in rows]
    assert ranks == sorted(ranks)
    failing = [c for s, c in rows if s == "FAILS"]
    most = max(tables["problems"][c] for c in failing)
    assert tables["problems"][failing[0]] == most
    assert [tables["problems"][c] for c in failing] == sorted((tables["problems"][c] for c in failing), reverse=True)
    # every check shows Flink's message and its fixes with their proof
    first = browser.js("(() => { const r = document.querySelector('tr.check'); return [r.querySelector("
                       "'td.message').textContent, r.querySelectorAll('td.fix li').length, "
                       "r.querySelector('td.fix').textContent]; })()")  # fmt: skip
    assert first[0].startswith("Failed to rollback to checkpoint/savepoint") and first[1] >= 1
    assert "proven" in first[2]


def test_a_failing_job_opens_its_diff_with_the_lost_operator_marked(browser, tables) -> None:
    b = browser
    assert b.js("document.querySelectorAll('details.diff').length") == MAX_DIFFS
    assert b.js("document.querySelectorAll('details.diff section.side').length") == 0  # nothing drawn until opened
    left_out = b.js("document.querySelector('.left-out').textContent")
    assert "not drawn (more than --max-diffs 6" in left_out
    # the version that took each savepoint is the manifest's savepoint_graph_id, as restore_checks
    # records it: <case>/v1 for the checks of <case>/v2, and each section says where it came from
    titles = b.js("[...document.querySelectorAll('details.diff > summary')].map((s) => s.firstChild.textContent)")
    assert len(titles) == MAX_DIFFS
    for title in titles:
        old, new = title.split(" vs ")
        assert old.removesuffix("/v1") == new.removesuffix("/v2") and old != new, title
    notes = b.js("[...document.querySelectorAll('details.diff > p.meta')].map((p) => p.textContent)")
    assert len(notes) == MAX_DIFFS and all("as the manifest's savepoint_graph_id says" in n for n in notes), notes
    check_id = b.js("document.querySelector('tr.check').dataset.checkId")
    b.js("document.querySelector('tr.check a.to-diff').click()")
    section = "document.querySelector('details.diff[open]')"
    assert b.js(f"{section}.id") == b.js("location.hash.slice(1)") == "diff-1"
    assert b.js(f"{section}.querySelectorAll('section.side svg').length") == 2
    assert check_id in b.js(f"{section}.querySelector('summary').textContent")
    old_side = f"{section}.querySelector('section.side')"
    lost = sorted(r.operator_id for r in tables["lost"] if r.check_id == check_id)
    assert lost
    for op in lost:
        # in the old version's box: its row filled with the failing colour, its name marked
        cell = b.js(f"""(() => {{ for (const t of {old_side}.querySelectorAll('svg text')) {{
            if (t.textContent === '{op}') {{ const g = t.closest('g.node');
              return [g.innerHTML.includes('fill="{FAILING}"'), g.textContent.includes('\\u2716')]; }} }}
            return null; }})()""")  # fmt: skip
        assert cell == [True, True], op
        assert b.js(f"[...{section}.querySelectorAll('table.changes tr.failing code')].map((c) => c.textContent)"
                    f".includes('{op}')")  # fmt: skip
    # the diff's search finds it (the panel's own node, though the new version has vertices with the same IDs)
    box = b.js(f"(() => {{ const r = {old_side}.querySelector('.tools input').getBoundingClientRect();"
               " return [r.left + r.width / 2, r.top + r.height / 2]; })()")  # fmt: skip
    b.click(*box)
    b.type(lost[0])
    b.key("Enter", 13)
    assert b.js(f"{old_side}.querySelector('.tools .hits').textContent") == "1 of 1"
    assert lost[0] in b.js(f"{old_side}.querySelector('g.node.current').textContent")
    # the checks' filter
    b.js("(() => { const i = document.querySelector('.filter input'); i.value = 'MAX_PARALLELISM';"
         " i.dispatchEvent(new Event('input')); })()")  # fmt: skip
    shown = b.js("[...document.querySelectorAll('tr.check')].filter((r) => !r.hidden).map((r) => r.dataset.status)")
    assert shown and set(shown) == {"FAILS"} and len(shown) == tables["failure"]["MAX_PARALLELISM_MISMATCH"]
    assert b.errors() == []


def test_no_restore_checks_is_a_one_line_error(spark, tmp_path, capsys) -> None:
    assert main(["report", "--quiet", "--output", str(tmp_path), "--to", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"flink-jobgraph: no restore_checks table in {tmp_path}: run `flink-jobgraph check-restore --output "
        f"{tmp_path}` first"
    )
    assert not (tmp_path / "r.html").exists()


def test_every_text_from_the_tables_is_escaped() -> None:
    nasty = "<script>alert(\"x\")</script> & 'q'"
    check = CheckLine(
        check_id=nasty, savepoint=nasty, graph_id=nasty, verdict="FAILS", failure=nasty, operator_id="a" * 32,
        operator_name=nasty, message=nasty, flink_version=nasty, fixes=[FixLine(nasty, False, nasty)],
        diff_note=nasty,
    )  # fmt: skip
    html = report_page(nasty, nasty, [check], [], [nasty])
    assert "<script>alert" not in html and html.count("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;") >= 9
    assert html.count("<script>") == 2  # the viewer's and the report's, nothing else


def test_a_large_fleet_lists_its_worst_checks_and_counts_all() -> None:
    """Past ``max_rows`` the list stops (the least bad go) and says what it does not list; the counts
    still cover every check."""
    import re

    checks = [CheckLine(f"c{i}", "sp", f"job@v{i}", v, decidable=d)
              for i, (v, d) in enumerate([("RESTORES", True), ("FAILS", True), ("RESTORES", False), ("ERROR", None),
                                          ("RESTORES", True)])]  # fmt: skip
    html = report_page("fleet", "", checks, [], max_rows=2)
    assert re.findall(r'<tr class="check [a-z_]+" data-status="(\w+)"', html) == ["FAILS", "ERROR"]
    assert "Listed: the 2 worst of 5 checks. Not listed (counted above): 1 NOT_DECIDABLE, 2 RESTORES." in html
    tiles = dict(re.findall(r'data-status="(\w+)" title="[^"]*"><span class="n">(\d+)', html))
    assert tiles == {"FAILS": "1", "ERROR": "1", "NOT_DECIDABLE": "1", "RESTORES": "2"}
    assert "<p>No job drawn.</p>" in html


def test_no_status_cell_wraps_on_a_laptop_screen(browser) -> None:
    """A status (RESTORES, NOT_DECIDABLE ...) in the check list and in the counts' heads stays on
    one line at the width of a laptop's browser window as at a wide one (the check list's other
    cells wrap anywhere to fit: a status cut as "RESTO/RES" is unreadable)."""
    lines = (
        "[...document.querySelectorAll('td.status, table.counts th, table.counts td[data-status]')]"
        ".filter((c) => c.offsetParent !== null).map((c) => {"  # the rows an earlier test's filter left shown
        " const r = document.createRange(); r.selectNodeContents(c);"
        " return [c.textContent, new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size]; })"
    )
    try:
        for width in (1500, 1000, 800):
            browser.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1,
                         mobile=False)  # fmt: skip
            cells = browser.js(lines)
            assert len(cells) > 10 and {n for _, n in cells} == {1}, (width, [c for c in cells if c[1] != 1][:5])
    finally:
        browser.call("Emulation.clearDeviceMetricsOverride")


def test_silent_losses_are_listed_with_their_check() -> None:
    """A check that restores but loses saved values (``restore_warnings``) shows each loss in its
    row, and the fleet line counts such checks; the texts escaped like every other."""
    import re

    loss = "state 'rides' of operator " + "a" * 32 + ": field 'driverId' of <x.TaxiRide> is gone from the class"
    checks = [CheckLine("c1", "sp", "job@v2", "RESTORES", losses=[loss]), CheckLine("c2", "sp", "job@v3", "RESTORES")]
    html = report_page("fleet", "", checks, [])
    rows = dict(re.findall(r'data-check-id="(\w+)">(.*?)</tr>', html))
    assert "lost: state &#x27;rides&#x27;" in rows["c1"] and "&lt;x.TaxiRide&gt;" in rows["c1"]
    assert "lost:" not in rows["c2"]
    assert "1 would restore but lose saved values" in html
