"""The malformed-input corpus: every kind of broken (or merely unusual) input a user may
feed ``flink-jobgraph compute``, written into a folder at test time (some cases are tens of
MB, so nothing here is committed but this script).

    python tests/malformed/make_corpus.py OUT_DIR     # writes the corpus, lists its cases

:func:`make_corpus` returns one :class:`Case` per kind: where it is, and what the run must
make of it -- an exact error code, or (``code`` None) a processed graph, whose exact output
tests/test_malformed_corpus.py checks. Good graphs (``good-*``) sit in every file beside the
bad ones: they must all be processed.

The limits cases assume the run's ``limits.max_line_bytes`` = :data:`LINE_LIMIT` and
``limits.max_graph_elements`` = :data:`GRAPH_LIMIT` (lowered from the defaults so that the
cases stay a few MB; the defaults are checked to pass the 100,000-node graph and the 10 MB
name separately).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LINE_LIMIT = 16 << 20
GRAPH_LIMIT = 250_000
RAISE_IN_GRAPH = "internal-error-victim"  # the run's testing.raise_in_graph


@dataclass
class Case:
    kind: str  # what is wrong (or unusual) with the input
    file: str  # the file it is in, relative to the corpus folder
    graph_id: str | None  # None: a file-level case (its error row's graph_id is derived from the path)
    code: str | None  # the expected error code; None: processed (or, for a file, nothing at all)


def _node(i: int, name: str | None = None, **kw: Any) -> dict:
    return {"id": i, "name": name if name is not None else f"N{i}", "parallelism": 2, **kw}


def good(gid: str) -> dict:
    return {
        "graph_id": gid,
        "flink_version": "1.20",
        "nodes": [_node(1, "Source: A"), _node(2, "Map")],
        "edges": [{"source": 1, "target": 2, "partitioner": "REBALANCE"}],
    }


def _with(gid: str, **changes: Any) -> dict:
    g = good(gid)
    g.update(changes)
    return g


def _node_field(gid: str, field: str, value: Any) -> dict:
    g = good(gid)
    g["nodes"][1][field] = value
    return g


def _edge_field(gid: str, field: str, value: Any) -> dict:
    g = good(gid)
    g["edges"][0][field] = value
    return g


def _line(obj: Any) -> str:
    text = json.dumps(obj, ensure_ascii=False, allow_nan=True)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only its \uXXXX escape can be written in UTF-8
        text = json.dumps(obj, allow_nan=True)
    return text


# (kind, graph, expected code) -- one JSON Lines line each, all in graphs.jsonl
def graph_cases() -> list[tuple[str, dict | str, str | None]]:
    three = [_node(1, "Source: A"), _node(2, "B"), _node(3, "C")]
    uid3 = [_node(1, "Source: A", uid="a"), _node(2, "B", uid="b"), _node(3, "C", uid="c")]
    return [
        ("truncated JSON", '{"graph_id": "truncated", "nodes": [{"id": 1', "INVALID_JSON"),
        ("trailing comma", '{"graph_id": "trailing-comma", "nodes": [], }', "INVALID_JSON"),
        (
            "deep nesting (100,000 levels)",
            '{"graph_id": "deep-nesting", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "INVALID_JSON",
        ),
        ("node id a string", _node_field("node-id-string", "id", "2"), "BAD_FIELD"),
        ("node id a float", _node_field("node-id-float", "id", 2.5), "BAD_FIELD"),
        ("node id above Java int", _node_field("node-id-2^31", "id", 2**31), "BAD_FIELD"),
        ("node id below Java int", _node_field("node-id-below-int", "id", -(2**31) - 1), "BAD_FIELD"),
        ("node id 2^70", _node_field("node-id-2^70", "id", 2**70), "BAD_FIELD"),
        ("parallelism NaN", _node_field("parallelism-nan", "parallelism", float("nan")), "BAD_FIELD"),
        ("parallelism Infinity", _node_field("parallelism-inf", "parallelism", float("inf")), "BAD_FIELD"),
        ("parallelism a boolean", _node_field("parallelism-bool", "parallelism", True), "BAD_FIELD"),
        ("parallelism a string", _node_field("parallelism-string", "parallelism", "2"), "BAD_FIELD"),
        ("parallelism 0", _node_field("parallelism-zero", "parallelism", 0), "BAD_PARALLELISM"),
        ("max_parallelism a float", _node_field("max-par-float", "max_parallelism", 128.0), "BAD_FIELD"),
        ("name a nested object", _node_field("name-object", "name", {"en": "Map"}), "BAD_FIELD"),
        ("name a number", _node_field("name-number", "name", 7), "BAD_FIELD"),
        ("uid a list", _node_field("uid-list", "uid", ["u"]), "BAD_FIELD"),
        ("slot_sharing_group a number", _node_field("ssg-number", "slot_sharing_group", 3), "BAD_FIELD"),
        ("is_source a number", _node_field("is-source-number", "is_source", 1), "BAD_FIELD"),
        ("chaining_enabled a string", _with("chaining-enabled-string", chaining_enabled="yes"), "BAD_FIELD"),
        ("type_number below Java int", _edge_field("type-number-low", "type_number", -(2**31) - 1), "BAD_FIELD"),
        ("output_tag an object", _edge_field("output-tag-object", "output_tag", {"id": "late"}), "BAD_FIELD"),
        ("a node that is a number", _with("node-a-number", nodes=[_node(1, "Source: A"), 5]), "BAD_FIELD"),
        ("a node that is a string", _with("node-a-string", nodes=[_node(1, "Source: A"), "id"]), "BAD_FIELD"),
        ("an edge that is null", _with("edge-null", edges=[None]), "BAD_FIELD"),
        ("edges an object", _with("edges-object", edges={"source": 1}), "BAD_FIELD"),
        (
            "missing name",
            _with("missing-name", nodes=[_node(1, "Source: A"), {"id": 2, "parallelism": 2}]),
            "MISSING_FIELD",
        ),
        ("null parallelism", _node_field("null-parallelism", "parallelism", None), "MISSING_FIELD"),
        ("missing edge target", _with("missing-target", edges=[{"source": 1}]), "MISSING_FIELD"),
        ("missing nodes", {"graph_id": "missing-nodes", "edges": []}, "MISSING_FIELD"),
        ("empty nodes", _with("empty-nodes", nodes=[], edges=[]), "MISSING_FIELD"),
        ("self-loop", _with("self-loop", edges=[{"source": 1, "target": 2}, {"source": 2, "target": 2}]), "CYCLE"),
        (
            "cycle",
            _with(
                "cycle",
                nodes=three,
                edges=[{"source": 1, "target": 2}, {"source": 2, "target": 3}, {"source": 3, "target": 2}],
            ),
            "CYCLE",
        ),
        (
            "cycle through uid nodes",
            _with(
                "cycle-uids",
                nodes=uid3,
                edges=[{"source": 1, "target": 2}, {"source": 2, "target": 3}, {"source": 3, "target": 2}],
            ),
            "CYCLE",
        ),
        ("dangling edge", _with("dangling", edges=[{"source": 1, "target": 9}]), "DANGLING_EDGE"),
        (
            "duplicate node ids",
            _with("dup-node", nodes=[_node(1, "Source: A"), _node(2), _node(2)]),
            "DUPLICATE_NODE_ID",
        ),
        (
            "not a source, no in-edge",
            _with(
                "unreachable", nodes=[*three[:2], _node(3, "C", is_source=False)], edges=[{"source": 1, "target": 2}]
            ),
            "UNREACHABLE_NODE",
        ),
        ("unknown partitioner", _edge_field("bad-partitioner", "partitioner", "ROUND_ROBIN"), "UNKNOWN_ENUM"),
        ("unknown chaining strategy", _node_field("bad-strategy", "chaining_strategy", "SOMETIMES"), "UNKNOWN_ENUM"),
        ("unknown job_type", _with("bad-job-type", job_type="MICRO_BATCH"), "UNKNOWN_ENUM"),
        ("unknown version", _with("version-1.3", flink_version="1.3"), "UNSUPPORTED_VERSION"),
        ("version not a version", _with("version-banana", flink_version="banana"), "UNSUPPORTED_VERSION"),
        ("bad uid_hash (31 hex)", _node_field("uid-hash-31", "uid_hash", "a" * 31), "BAD_UID_HASH"),
        (
            "bad uid_hash (trailing newline)",
            _node_field("uid-hash-newline", "uid_hash", "a" * 32 + "\n"),
            "BAD_UID_HASH",
        ),
        (
            "duplicate uids",
            _with("dup-uid", nodes=[_node(1, "Source: A", uid="x"), _node(2, uid="x")]),
            "DUPLICATE_UID",
        ),
        (
            "hybrid shuffle in a streaming job",
            _edge_field("hybrid-streaming", "exchange_mode", "HYBRID_FULL"),
            "FLINK_REJECTED",
        ),
        ("duplicate graph_id, same file (1)", good("dup-same-file"), "DUPLICATE_GRAPH_ID"),
        ("duplicate graph_id, same file (2)", good("dup-same-file"), "DUPLICATE_GRAPH_ID"),
        ("duplicate graph_id, other file", good("dup-other-file"), "DUPLICATE_GRAPH_ID"),
        ("duplicate graph_id, one copy broken", '{"graph_id": "dup-one-broken", "nodes": [', "DUPLICATE_GRAPH_ID"),
        ("exception inside the per-graph code", good(RAISE_IN_GRAPH), "INTERNAL_ERROR"),
        # valid, unusual: processed, exact output checked by the test
        (
            "unicode names and uid",
            _with(
                "unicode",
                nodes=[
                    _node(1, "Source: 数据 🚀", uid="ユーザー🚀"),
                    _node(2, "Map: n\u0303 \u05e9\u05dc\u05d5\u05dd"),
                ],
            ),
            None,
        ),
        (
            "control characters in names",
            _with("control-chars", nodes=[_node(1, "Source: \t\n\r\u0000\u001b[31m"), _node(2, "Map\u0007\u2028")]),
            None,
        ),
        (
            "lone surrogate in name and uid",
            _with("lone-surrogate", nodes=[_node(1, "Source: A\ud800B", uid="u\udc00"), _node(2)]),
            None,
        ),
        (
            "negative node ids (iterations)",
            _with(
                "negative-ids",
                nodes=[_node(-1, "Source: A"), _node(-2)],
                edges=[{"source": -1, "target": -2, "partitioner": "REBALANCE"}],
            ),
            None,
        ),
        ("one node, no edges", _with("single-node", nodes=[_node(1, "Source: Only")], edges=[]), None),
        ("unknown fields, nested 200 deep", _with("unknown-deep", extra=json.loads("[" * 200 + "]" * 200)), None),
    ]


def _tree(gid: str, nodes: int, fanout: int = 10) -> dict:
    """``nodes`` nodes in a ``fanout``-ary tree of HASH edges: nothing chains, so the graph
    is large for parsing and hashing but not for the chain step (a long chain is another case)."""
    return {
        "graph_id": gid,
        "flink_version": "1.20",
        "nodes": [_node(1, "Source: S")] + [_node(i) for i in range(2, nodes + 1)],
        "edges": [{"source": (i - 2) // fanout + 1, "target": i, "partitioner": "HASH"} for i in range(2, nodes + 1)],
    }


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def make_corpus(root: Path) -> list[Case]:
    root.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []
    lines = [_line(good(f"good-{i}")) for i in range(3)]
    for kind, graph, code in graph_cases():
        if kind == "duplicate graph_id, other file":
            (root / "dup-other.jsonl").write_text(_line(good("good-dup-other")) + "\n" + _line(graph) + "\n")
        lines.append(graph if isinstance(graph, str) else _line(graph))
        gid = graph.get("graph_id") if isinstance(graph, dict) else None
        if kind == "duplicate graph_id, one copy broken":
            lines.append(_line(good("dup-one-broken")))
            gid = "dup-one-broken"
        elif gid is None and isinstance(graph, str) and '"graph_id": "' in graph:
            gid = graph.split('"graph_id": "', 1)[1].split('"', 1)[0]
        cases.append(Case(kind, "graphs.jsonl", gid or None, code))
    lines.append(_line(good("good-last")))
    (root / "graphs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # The cases without a graph_id to report (code asserted via their own file): one file each.
    for name, text, code in (
        ("no-id-single-quotes.jsonl", "{'graph_id': 'single-quotes'}", "INVALID_JSON"),
        ("no-id-empty-graph-id.jsonl", _line(_with("")), "BAD_FIELD"),
        ("no-id-a-list.jsonl", '[{"graph_id": "a-list"}]', "BAD_FIELD"),
        ("no-id-missing-graph-id.jsonl", _line({"nodes": []}), "MISSING_FIELD"),
        ("no-id-graph-id-number.jsonl", _line(_with(5)), "BAD_FIELD"),
        ("no-id-top-level-nan.jsonl", "NaN", "BAD_FIELD"),
    ):
        (root / name).write_text(text + "\n")
        cases.append(Case(f"no graph_id: {name}", name, None, code))

    big = {
        "a 100,000-node graph": (_tree("nodes-100k", 100_000), None),
        "a 30,000-way fan-out": (
            {
                "graph_id": "fanout-30k",
                "flink_version": "1.20",
                "nodes": [_node(1, "Source: S")] + [_node(i, f"M{i}") for i in range(2, 30_002)],
                "edges": [{"source": 1, "target": i} for i in range(2, 30_002)],
            },
            None,
        ),
        "a 1 MB uid": (_with("uid-1mb", nodes=[_node(1, "Source: A", uid="u" * (1 << 20)), _node(2)]), None),
        "a 10 MB name": (_with("name-10mb", nodes=[_node(1, "Source: A"), _node(2, "N" * 10_000_000)]), None),
        "a graph over limits.max_graph_elements": (_tree("too-large", GRAPH_LIMIT // 2 + 1000), "GRAPH_TOO_LARGE"),
        "a line over limits.max_line_bytes": (
            _with("line-too-long", nodes=[_node(1, "Source: A"), _node(2, "L" * (LINE_LIMIT + 1000))]),
            "LINE_TOO_LONG",
        ),
    }
    with open(root / "big.jsonl", "w", encoding="utf-8") as f:
        for kind, (graph, code) in big.items():
            f.write(_line(graph) + "\n")
            cases.append(Case(kind, "big.jsonl", graph["graph_id"], code))
        f.write(_line(good("good-big")) + "\n")

    # File-level cases: the file gets one error row (or, empty, nothing), the others go on.
    payload = ("\n".join(_line(good(f"good-gz-{i}")) for i in range(3)) + "\n").encode()
    rng = random.Random(7)
    flipped = bytearray(_gz(payload))
    flipped[-7] ^= 0x55  # inside the CRC-32 trailer
    files: dict[str, tuple[bytes, str | None]] = {
        "empty.jsonl": (b"", None),
        "blank-lines.jsonl": (b"\n \n\t\n", None),
        "binary.json": (bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + rng.randbytes(4096), "NOT_UTF8"),
        "latin-1.jsonl": (_line(_with("latin-1", nodes=[_node(1, "Source: café")])).encode("latin-1"), "NOT_UTF8"),
        "truncated.jsonl.gz": (_gz(payload)[:-40], "CORRUPT_GZIP"),
        "crc-mismatch.jsonl.gz": (bytes(flipped), "CORRUPT_GZIP"),
        "not-gzip.jsonl.gz": (payload, "CORRUPT_GZIP"),
        "empty.jsonl.gz": (b"", "CORRUPT_GZIP"),
        "gzip-then-garbage.jsonl.gz": (_gz(payload) + b"garbage", "CORRUPT_GZIP"),
    }
    for name, (data, code) in files.items():
        (root / name).write_bytes(data)
        cases.append(Case(f"file: {name}", name, None, code))
    os.mkfifo(root / "fifo.jsonl")
    cases.append(Case("file: a FIFO named *.jsonl", "fifo.jsonl", None, "NOT_A_FILE"))
    os.symlink(root / "nowhere.jsonl", root / "broken-link.json")
    cases.append(Case("file: a broken symbolic link", "broken-link.json", None, "FILE_UNREADABLE"))

    # Unusual but valid files: every graph in them is processed.
    good_files = {
        "bom-pretty.json": b"\xef\xbb\xbf" + json.dumps(good("bom-pretty"), indent=2).encode(),
        "crlf.jsonl": (_line(good("crlf-1")) + "\r\n" + _line(good("crlf-2")) + "\r\n").encode(),
        "two-members.jsonl.gz": _gz(_line(good("member-1")).encode() + b"\n")
        + _gz(_line(good("member-2")).encode() + b"\n"),
        "lines-in.json": (_line(good("json-lines-1")) + "\n" + _line(good("json-lines-2"))).encode(),
    }
    valid_ids = {
        "bom-pretty.json": ["bom-pretty"],
        "crlf.jsonl": ["crlf-1", "crlf-2"],
        "two-members.jsonl.gz": ["member-1", "member-2"],
        "lines-in.json": ["json-lines-1", "json-lines-2"],
    }
    for name, data in good_files.items():
        (root / name).write_bytes(data)
        cases.extend(Case(f"valid file: {name}", name, gid, None) for gid in valid_ids[name])
    return cases


GOOD_IDS = ("good-0", "good-1", "good-2", "good-last", "good-dup-other", "good-big")


if __name__ == "__main__":
    out = Path(sys.argv[1])
    for c in make_corpus(out):
        print(f"{c.code or 'processed':20} {c.file:28} {c.graph_id or '(file)':24} {c.kind}")
