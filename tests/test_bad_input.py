"""Bad input: each broken graph gets one graph_errors row with a specific code and a
message a person can act on; the good graphs of the same run are processed normally."""

from __future__ import annotations

import json

import pytest

from pipeline.compute.run import Progress, compute

GOOD = {
    "graph_id": "good",
    "flink_version": "1.20",
    "nodes": [{"id": 1, "name": "Source: A", "parallelism": 2}, {"id": 2, "name": "Map", "parallelism": 2}],
    "edges": [{"source": 1, "target": 2, "partitioner": "REBALANCE"}],
}


def _variant(gid: str, **changes) -> dict:
    g = json.loads(json.dumps(GOOD))
    g["graph_id"] = gid
    g.update(changes)
    return g


BAD = {
    "DANGLING_EDGE": _variant("dangling", edges=[{"source": 1, "target": 9}]),
    "DUPLICATE_NODE_ID": _variant("dup-node", nodes=GOOD["nodes"] + [{"id": 2, "name": "Again", "parallelism": 2}]),
    "CYCLE": _variant(
        "cycle",
        nodes=GOOD["nodes"] + [{"id": 3, "name": "Loop", "parallelism": 2}],
        edges=[{"source": 1, "target": 2}, {"source": 2, "target": 3}, {"source": 3, "target": 2}],
    ),
    "BAD_UID_HASH": _variant("bad-uid-hash", nodes=[{**GOOD["nodes"][0], "uid_hash": "xyz"}, GOOD["nodes"][1]]),
    "DUPLICATE_UID": _variant(
        "dup-uid", nodes=[{**GOOD["nodes"][0], "uid": "same"}, {**GOOD["nodes"][1], "uid": "same"}]
    ),
    "BAD_PARALLELISM": _variant("zero-par", nodes=[GOOD["nodes"][0], {**GOOD["nodes"][1], "parallelism": 0}]),
    "NO_SOURCE": _variant(
        "no-source",
        nodes=[{**GOOD["nodes"][0], "is_source": False}, {**GOOD["nodes"][1], "is_source": False}],
    ),
    "UNKNOWN_ENUM": _variant("bad-enum", edges=[{"source": 1, "target": 2, "partitioner": "ROUND_ROBIN"}]),
    "UNSUPPORTED_VERSION": _variant("old-version", flink_version="1.3"),
    "MISSING_FIELD": _variant("no-name", nodes=[{"id": 1, "parallelism": 1}], edges=[]),
    "FLINK_REJECTED": _variant(
        "hybrid-streaming",
        edges=[{"source": 1, "target": 2, "partitioner": "REBALANCE", "exchange_mode": "HYBRID_FULL"}],
    ),
}


@pytest.fixture(scope="module")
def bad_run(spark, settings, tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    inp = root / "in"
    inp.mkdir()
    with open(inp / "mixed.jsonl", "w") as f:
        f.write(json.dumps(GOOD) + "\n")
        for g in BAD.values():
            f.write(json.dumps(g) + "\n")
        f.write('{"graph_id": "truncated", "nodes": [\n')
    (inp / "dup1.json").write_text(json.dumps(_variant("twice")))
    (inp / "dup2.json").write_text(json.dumps(_variant("twice")))
    out = str(root / "out")
    summary = compute(spark, str(inp), out, settings, Progress(enabled=False))
    errors = {r.graph_id: r for r in spark.read.format("delta").load(f"{out}/graph_errors").collect()}
    processed = {r.graph_id for r in spark.read.format("delta").load(f"{out}/job_vertices").collect()}
    return summary, errors, processed


@pytest.mark.parametrize("code", sorted(BAD))
def test_bad_graph_gets_its_error_code(bad_run, code):
    _, errors, processed = bad_run
    gid = BAD[code]["graph_id"]
    assert gid not in processed
    assert errors[gid].error_code == code
    assert len(errors[gid].message) > 15


def test_specific_messages(bad_run):
    _, errors, _ = bad_run
    assert "target 9" in errors["dangling"].message
    assert "cycle" in errors["cycle"].message
    assert 'Hash collision on user-specified ID "same"' in errors["dup-uid"].message
    assert "ROUND_ROBIN" in errors["bad-enum"].message
    assert "hybrid shuffle mode only supports batch job" in errors["hybrid-streaming"].message
    assert errors["truncated"].error_code == "INVALID_JSON"
    assert errors["twice"].error_code == "DUPLICATE_GRAPH_ID"
    assert "dup1.json" in errors["twice"].message and "dup2.json" in errors["twice"].message


def test_good_graph_processed_and_nothing_dropped(bad_run):
    summary, errors, processed = bad_run
    assert processed == {"good"}
    assert set(errors) == {g["graph_id"] for g in BAD.values()} | {"truncated", "twice"}
    assert summary.graphs_in == len(processed) + len(errors)


# Pure Python (no Spark): the per-batch code of the fused executor on its own.


def _texts_batch(*graphs: dict | str):
    import pandas as pd

    values = [g if isinstance(g, str) else json.dumps(g) for g in graphs]
    n = len(values)
    return pd.DataFrame(
        {
            "value": values,
            "source_file": ["f.jsonl"] * n,
            "graph_id": [None] * n,
            "error_code": [None] * n,
            "message": [None] * n,
            "line_key": [None] * n,
            "fingerprint": [None] * n,
            "node_count": pd.array([None] * n, dtype="Int32"),
        }
    )


def test_same_graph_id_twice_in_one_batch_is_not_computed():
    """Two copies in one Arrow batch crashed compute_batch (pandas InvalidIndexError); now
    each copy leaves only its ``graph`` row, for the run's duplicate check to reject."""
    from pipeline.compute.read import Limits
    from pipeline.compute.stage import _batch_rows

    rows, _ = _batch_rows(_texts_batch(GOOD, _variant("twice"), _variant("twice")), Limits(), None)
    graph_ids = [gid for part in rows["graph"] for gid in part["graph_id"]]
    assert sorted(graph_ids) == ["good", "twice", "twice"]
    computed = {gid for part in rows["vertex"] for gid in part["graph_id"]}
    assert computed == {"good"} and "error" not in rows


def test_compute_batch_refuses_repeated_ids():
    from pipeline.compute.read import parse_text
    from pipeline.compute.stage import _batch_frames
    from udfs.compute.batch import compute_batch

    pg = parse_text(json.dumps(GOOD), "f")
    with pytest.raises(ValueError, match="graph ids repeat"):
        compute_batch(*_batch_frames([(pg, "f"), (pg, "f")]))


def test_exception_in_one_graph_costs_that_graph_only():
    from pipeline.compute.read import Limits
    from pipeline.compute.stage import _batch_rows

    batch = _texts_batch(GOOD, _variant("victim"), _variant("other"))
    rows, _ = _batch_rows(batch, Limits(), "victim")
    errors = {part["graph_id"][0]: part for part in rows["error"]}
    assert set(errors) == {"victim"} and errors["victim"]["error_code"][0] == "INTERNAL_ERROR"
    assert "Traceback" in errors["victim"]["message"][0]
    assert {gid for part in rows["vertex"] for gid in part["graph_id"]} == {"good", "other"}


@pytest.mark.parametrize(
    "node, code",
    [
        (5, "BAD_FIELD"),
        ("id", "BAD_FIELD"),
        (None, "BAD_FIELD"),
        ({"id": 2, "name": {"x": 1}, "parallelism": 1}, "BAD_FIELD"),
    ],
)
def test_non_object_nodes_are_contract_errors(node, code):
    """A node that is not an object raised a TypeError in the contract check (which, before
    INTERNAL_ERROR rows, killed the whole run)."""
    from pipeline.compute.read import parse_text

    result = parse_text(json.dumps(_variant("g", nodes=[GOOD["nodes"][0], node])), "f")
    assert isinstance(result, dict) and result["error_code"] == code


def test_lone_surrogates_become_question_marks_as_in_java():
    from pipeline.compute.read import parse_text

    text = json.dumps(_variant("s", nodes=[{**GOOD["nodes"][0], "uid": "u\udc00"}, GOOD["nodes"][1]]))
    assert parse_text(text, "f").nodes[0]["uid"] == "u?"


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "u\\udc00"}',  # a lone surrogate escape: orjson refuses it (and Java reads "?")
        '{"a": NaN, "b": -Infinity}',  # not JSON, but Python's json reads it
        '{"a": 1.5e300, "b": -0.0, "c": "\\u00e9\\n", "d": [true, null]}',
        '{"a": 1,}',
        '{"a": [1, 2}',
        "",
        "[" * 5000 + "]" * 5000,
    ],
)
def test_load_text_reads_what_json_reads_and_words_errors_as_json_does(text):
    """load_text(fast=True) parses with orjson and leaves to json what orjson refuses: the
    value, or the INVALID_JSON message with json's wording and position, is json's."""
    from pipeline.compute.read import _LONE_SURROGATE_RE, _java_strings, load_text

    obj, error = load_text(text, "f.jsonl", fast=True)
    try:
        expected = json.loads(text)
        expected = _java_strings(expected) if _LONE_SURROGATE_RE.search(text) else expected
    except json.JSONDecodeError as e:
        assert obj is None and error["error_code"] == "INVALID_JSON"
        assert error["message"] == f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})"
        return
    except RecursionError:
        assert obj is None and error["error_code"] == "INVALID_JSON" and "nested deeper" in error["message"]
        return
    assert error is None
    assert json.dumps(obj) == json.dumps(expected)  # NaN == NaN here, and -0.0 keeps its sign


@pytest.mark.parametrize("big", ["123456789012345678901234567890", "18446744073709551616", "-9223372036854775809"])
def test_an_integer_past_64_bits_gets_the_error_json_values_give(big):
    """orjson reads an integer past 64 bits as a float; the batch path re-loads the graphs its
    columnar checks refuse with json, so the contract error names the integer, as before."""
    from pipeline.compute.read import Limits, parse_text
    from pipeline.compute.stage import _batch_rows

    text = json.dumps(_variant("big")).replace('"parallelism": 2', f'"parallelism": {big}', 1)
    assert big in text
    expected = parse_text(text, "f")  # json alone
    rows, _ = _batch_rows(_texts_batch(GOOD, text), Limits(), None)
    (error,) = rows["error"]
    assert (error["error_code"][0], error["message"][0]) == (expected["error_code"], expected["message"])
    assert big in expected["message"]


def test_gzip_members_are_read_wherever_the_pieces_fed_to_zlib_end():
    """A file of several gzip members (``cat a.gz b.gz``, or a writer that flushes members)
    is one text: the next member is found wherever it starts relative to the pieces the
    reader feeds zlib, including exactly at a piece's end. (It used to be located from the
    end of the file, so a member that ended before the last piece read as a corrupt stream.)"""
    import gzip
    import random

    from pipeline.compute.read import _gzip_chunks

    rnd = random.Random(7)
    parts = [bytes(rnd.getrandbits(8) for _ in range(n)) for n in (700, 1, 1500, 40)]
    members = [gzip.compress(p) for p in parts]
    content = b"".join(members)
    for step in range(1, len(content) + 2):  # every boundary between pieces and members
        assert b"".join(_gzip_chunks(content, step)) == b"".join(parts), step
    assert b"".join(_gzip_chunks(content + b"\0" * 9, 64)) == b"".join(parts)  # zero padding
    with pytest.raises(Exception, match="member 3"):
        list(_gzip_chunks(b"".join(members[:2]) + members[2][:-5] + members[3], 64))


def test_multi_member_gzip_file_larger_than_a_piece_is_read_whole(tmp_path, spark, settings):
    """End to end through compute: two members of which the first ends well before the
    last 1 MiB piece (the case that used to be a CORRUPT_GZIP error for a valid file)."""
    import gzip
    import random

    rnd = random.Random(3)
    members = []
    for i in range(2):
        noise = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(2_000_000))
        g = _variant(f"member-{i}", nodes=[{**GOOD["nodes"][0], "name": "Source: " + noise}, GOOD["nodes"][1]])
        members.append(gzip.compress(json.dumps(g).encode() + b"\n"))  # ~1.3 MB each: noise hardly compresses
    assert len(members[0]) > 1 << 20
    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "two-members.jsonl.gz").write_bytes(b"".join(members))
    out = tmp_path / "out"
    compute(spark, str(inp), str(out), settings, Progress(enabled=False))
    errors = spark.read.format("delta").load(str(out / "graph_errors")).collect()
    assert [(e["graph_id"], e["error_code"]) for e in errors] == []
    vertices = spark.read.format("delta").load(str(out / "job_vertices"))
    assert sorted(r[0] for r in vertices.select("graph_id").distinct().collect()) == ["member-0", "member-1"]
