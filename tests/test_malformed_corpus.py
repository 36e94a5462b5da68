"""The malformed-input corpus (tests/malformed/make_corpus.py, 80+ cases of 60+ kinds) in
ONE ``compute`` run: each case ends with its exact error code, or, when valid, its exact
output; every good graph beside them is processed; nothing is dropped or doubled."""

from __future__ import annotations

import mmh3
import pytest

from pipeline.compute.read import Limits, file_error_id
from pipeline.compute.run import Progress, compute
from pipeline.settings import load_settings
from tests.malformed.make_corpus import GOOD_IDS, GRAPH_LIMIT, LINE_LIMIT, RAISE_IN_GRAPH, make_corpus


@pytest.fixture(scope="module")
def corpus_run(spark, settings, tmp_path_factory):
    root = tmp_path_factory.mktemp("malformed")
    inp = root / "in"
    cases = make_corpus(inp)
    run_settings = settings.with_overrides(
        {
            "limits.max_line_bytes": LINE_LIMIT,
            "limits.max_graph_elements": GRAPH_LIMIT,
            "testing.raise_in_graph": RAISE_IN_GRAPH,
        }
    )
    out = str(root / "out")
    summary = compute(spark, str(inp), out, run_settings, Progress(enabled=False))
    read = lambda t: spark.read.format("delta").load(f"{out}/{t}")  # noqa: E731
    errors = read("graph_errors").collect()
    vertices = read("job_vertices").select("graph_id", "name", "operator_ids").collect()
    operators = read("operators").groupBy("graph_id").count().collect()
    small_ops = read("operators").where("graph_id in ('unicode', 'lone-surrogate', 'uid-1mb', 'control-chars')")
    return {
        "inp": inp,
        "cases": cases,
        "summary": summary,
        "errors": errors,
        "vertices": vertices,
        "operator_counts": {r.graph_id: r["count"] for r in operators},
        "uid_ops": {(r.graph_id, r.node_id): r for r in small_ops.collect()},
    }


def _uri(run, name: str) -> str:
    return "file://" + str(run["inp"] / name)


def test_every_case_gets_its_exact_outcome(corpus_run):
    errors_by_id = {}
    for r in corpus_run["errors"]:
        assert r.graph_id not in errors_by_id, f"two error rows for {r.graph_id}"
        errors_by_id[r.graph_id] = r
    errors_by_file: dict[str, list] = {}
    for r in corpus_run["errors"]:
        errors_by_file.setdefault(r.source_file, []).append(r)
    processed = {r.graph_id for r in corpus_run["vertices"]}
    wrong = []
    for case in corpus_run["cases"]:
        if case.graph_id is not None:
            got = errors_by_id[case.graph_id].error_code if case.graph_id in errors_by_id else None
            if case.code is None and case.graph_id not in processed:
                got = got or "not processed"
        else:
            rows = errors_by_file.get(_uri(corpus_run, case.file), [])
            got = rows[0].error_code if len(rows) == 1 else f"{len(rows)} rows" if rows else None
        if got != case.code:
            wrong.append(f"{case.kind} ({case.file}, {case.graph_id}): expected {case.code}, got {got}")
    assert not wrong, "\n".join(wrong)
    assert len(corpus_run["cases"]) >= 80
    assert len({c.kind.split(" (")[0] for c in corpus_run["cases"]}) >= 60


def test_good_graphs_beside_them_are_processed(corpus_run):
    processed = {r.graph_id for r in corpus_run["vertices"]}
    assert set(GOOD_IDS) <= processed


def test_each_input_graph_ends_in_exactly_one_table(corpus_run):
    processed = {r.graph_id for r in corpus_run["vertices"]}
    rejected = [r.graph_id for r in corpus_run["errors"]]
    assert len(rejected) == len(set(rejected))
    assert not processed & set(rejected)
    expected = {c.graph_id for c in corpus_run["cases"] if c.graph_id is not None} | set(GOOD_IDS)
    file_level = [c for c in corpus_run["cases"] if c.graph_id is None and c.code is not None]
    # the no-graph_id lines have ids made up from their text; every file-level row, one from its path
    assert len(processed) + len(rejected) == len(expected) + len(file_level)
    for c in file_level:
        if not c.file.startswith("no-id-"):
            assert file_error_id(_uri(corpus_run, c.file)) in rejected, c.kind
    summary = corpus_run["summary"]
    assert summary.graphs_processed == len(processed)


def test_file_level_errors_name_the_file_and_reason(corpus_run):
    by_file = {
        r.source_file.rsplit("/", 1)[-1]: r for r in corpus_run["errors"] if r.graph_id.startswith("file-error:")
    }
    assert "byte 0 (0x89)" in by_file["binary.json"].message
    assert "truncated" in by_file["truncated.jsonl.gz"].message
    assert "incorrect data check" in by_file["crc-mismatch.jsonl.gz"].message
    assert "FIFO" in by_file["fifo.jsonl"].message
    assert "broken symbolic link" in by_file["broken-link.json"].message
    assert by_file["binary.json"].graph_id == file_error_id(by_file["binary.json"].source_file)


def test_internal_error_keeps_the_traceback_and_the_batch(corpus_run):
    row = next(r for r in corpus_run["errors"] if r.graph_id == RAISE_IN_GRAPH)
    assert row.error_code == "INTERNAL_ERROR"
    assert "Traceback (most recent call last)" in row.message and "raise_in_graph" in row.message
    processed = {r.graph_id for r in corpus_run["vertices"]}
    assert {"good-0", "good-1", "good-2", "good-last"} <= processed  # the same file, computed


def _hash(uid: str) -> str:
    """Flink's StreamGraphHasherV2 for a uid node: Guava murmur3_128(0).putString(uid, UTF_8);
    Java's getBytes(UTF_8) writes an unpaired surrogate as '?'."""
    return mmh3.hash_bytes(uid.encode("utf-8", "replace"), 0, True).hex()


def test_unusual_valid_graphs_exact_output(corpus_run):
    names = {}
    for r in corpus_run["vertices"]:
        names.setdefault(r.graph_id, []).append(r.name)
    assert sorted(names["unicode"]) == sorted(["Source: 数据 🚀", "Map: n\u0303 \u05e9\u05dc\u05d5\u05dd"])
    assert sorted(names["control-chars"]) == sorted(["Source: \t\n\r\u0000\u001b[31m", "Map\u0007\u2028"])
    assert sorted(names["lone-surrogate"]) == sorted(["Source: A?B", "N2"])
    assert sorted(names["name-10mb"]) == sorted(["Source: A", "N" * 10_000_000])
    assert names["single-node"] == ["Source: Only"]
    assert len(names["negative-ids"]) == 2 and len(names["unknown-deep"]) == 2
    ops = corpus_run["uid_ops"]
    assert ops[("unicode", 1)].operator_id == _hash("ユーザー🚀")
    assert ops[("lone-surrogate", 1)].operator_id == _hash("u\udc00") == _hash("u?")
    assert ops[("uid-1mb", 1)].operator_id == _hash("u" * (1 << 20))
    counts = corpus_run["operator_counts"]
    assert counts["nodes-100k"] == 100_000 and len(names["nodes-100k"]) == 100_000  # HASH edges: nothing chains
    assert counts["fanout-30k"] == 30_001 and len(names["fanout-30k"]) == 1  # every forward edge chains


def test_default_limits_pass_the_large_valid_cases(corpus_run):
    limits = Limits.from_settings(load_settings())
    sizes = [len(line.encode()) for line in (corpus_run["inp"] / "big.jsonl").read_text().splitlines()]
    assert max(sizes) < limits.max_line_bytes  # incl. the 10 MB name and the line over the lowered limit
    assert limits.max_graph_elements >= 2 * 100_000
