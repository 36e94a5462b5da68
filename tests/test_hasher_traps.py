"""The traps of StreamGraphHasherV2, each on a small hand-built graph.

Expected IDs are derived by hand from Flink's algorithm, step by step in each test,
with murmur3 called directly (``_murmur``) and the byte fold written out (``_fold``):
they do not reuse the pipeline's traversal or hashing code. Flink's rules, as the
seeds (000, 003) quote ``StreamGraphHasherV2``:

- a generated hash feeds ``putInt(hashes.size())`` once, plus once per chainable
  output, where ``hashes.size()`` is how many nodes were hashed before this one;
- input hashes are folded in in-edge order: ``h[j] = (byte)(h[j] * 37 ^ in[j])``;
- the walk is breadth-first from the sources sorted by id; a node popped before all
  its inputs are hashed is dropped and re-enqueued later by its last parent;
- a node with a uid is hashed (murmur3 of the UTF-8 uid) on its first pop.

Each graph is checked twice: on the per-graph kernel, and through the Spark pipeline.
"""

from __future__ import annotations

import json
import struct

import mmh3
import pytest

from pipeline.compute.run import Progress, compute
from udfs.compute.one_graph import compute_one


def _murmur(data: bytes) -> bytes:
    return mmh3.hash_bytes(data, 0, True)


def _generated(position: int, chainable_outputs: int, inputs: list[bytes]) -> str:
    h = bytearray(_murmur(struct.pack("<i", position) * (1 + chainable_outputs)))
    for other in inputs:
        for j in range(16):
            h[j] = (h[j] * 37 ^ other[j]) & 0xFF
    return h.hex()


def _uid(uid: str) -> str:
    return _murmur(uid.encode("utf-8")).hex()


def node(i: int, name: str, **kw) -> dict:
    return {"id": i, "name": name, "parallelism": kw.pop("parallelism", 2), **kw}


def edge(s: int, t: int, partitioner: str = "FORWARD", **kw) -> dict:
    return {"source": s, "target": t, "partitioner": partitioner, **kw}


def graph(gid: str, nodes: list[dict], edges: list[dict]) -> dict:
    return {"graph_id": gid, "flink_version": "2.3", "nodes": nodes, "edges": edges}


def reached_before_input_hashed() -> tuple[dict, dict[int, str]]:
    # S(1) -> C(3) is created first, then S -> A(2) -> B(4) -> C.
    # Queue [1]: 1 hashed at 0, enqueues 3 then 2. 3 pops with input 4 unhashed: dropped.
    # 2 hashed at 1 (enqueues 4), 4 hashed at 2 (re-enqueues 3), 3 hashed at 3.
    # Chainable: 1->2 and 2->4 (FORWARD, one input, same parallelism); 1->3 and 4->3 are
    # not (C has two inputs). So k(1)=1, k(2)=1, k(4)=0, k(3)=0.
    g = graph(
        "trap-reached-early",
        [node(1, "Source: S", is_source=True, source_kind="FLIP27"), node(2, "A"), node(3, "C"), node(4, "B")],
        [edge(1, 3), edge(1, 2), edge(2, 4), edge(4, 3)],
    )
    h1 = bytes.fromhex(_generated(0, 1, []))
    h2 = bytes.fromhex(_generated(1, 1, [h1]))
    h4 = bytes.fromhex(_generated(2, 0, [h2]))
    h3 = _generated(3, 0, [h1, h4])  # in-edge order: 1->3 was created before 4->3
    return g, {1: h1.hex(), 2: h2.hex(), 4: h4.hex(), 3: h3}


def uid_in_the_middle() -> tuple[dict, dict[int, str]]:
    # S(1) -> U(3, uid "orders-agg") created first, then S -> A(2) -> U, and U -> Z(4).
    # Queue [1]: 1 at 0, enqueues 3, 2. U pops with A unhashed but has a uid: hashed at 1
    # (murmur3 of the uid), enqueues 4. A at 2, Z at 3. U's uid hash still counts in
    # hashes.size() for the nodes after it. k(1)=1 (1->2), k(2)=0 (U has two inputs).
    g = graph(
        "trap-uid-middle",
        [
            node(1, "Source: S", is_source=True, source_kind="FLIP27"),
            node(2, "A"),
            node(3, "U", uid="orders-agg"),
            node(4, "Z"),
        ],
        [edge(1, 3), edge(1, 2), edge(2, 3), edge(3, 4)],
    )
    h1 = bytes.fromhex(_generated(0, 1, []))
    h3 = bytes.fromhex(_uid("orders-agg"))
    h2 = _generated(2, 0, [h1])
    h4 = _generated(3, 0, [h3])
    return g, {1: h1.hex(), 3: h3.hex(), 2: h2, 4: h4}


def sources_out_of_order() -> tuple[dict, dict[int, str]]:
    # Sources 5 and 2 (5's edge created first); the walk starts from the sorted ids [2, 5]:
    # 2 at 0, 5 at 1, then J(7) at 2 with inputs in in-edge order 5 then 2. Legacy sources
    # (HEAD) with REBALANCE edges: nothing chains, k = 0 everywhere.
    g = graph(
        "trap-sources-order",
        [
            node(5, "Source: Late id", is_source=True, source_kind="LEGACY"),
            node(2, "Source: Early id", is_source=True, source_kind="LEGACY"),
            node(7, "Join"),
        ],
        [edge(5, 7, "REBALANCE", type_number=0), edge(2, 7, "REBALANCE", type_number=0)],
    )
    h2 = bytes.fromhex(_generated(0, 0, []))
    h5 = bytes.fromhex(_generated(1, 0, []))
    h7 = _generated(2, 0, [h5, h2])
    return g, {2: h2.hex(), 5: h5.hex(), 7: h7}


def several_chainable_outputs() -> tuple[dict, dict[int, str]]:
    # S(1) -> M(2) fans out FORWARD to X(3) and Y(4): both chainable, so M feeds its
    # position 1 + 2 = 3 times. The JobVertex is "Source: S -> M -> (X, Y)".
    g = graph(
        "trap-fan-out",
        [node(1, "Source: S", is_source=True, source_kind="FLIP27"), node(2, "M"), node(3, "X"), node(4, "Y")],
        [edge(1, 2), edge(2, 3), edge(2, 4)],
    )
    h1 = bytes.fromhex(_generated(0, 1, []))
    h2 = bytes.fromhex(_generated(1, 2, [h1]))
    h3 = _generated(2, 0, [h2])
    h4 = _generated(3, 0, [h2])
    return g, {1: h1.hex(), 2: h2.hex(), 3: h3, 4: h4}


def two_input_operator() -> tuple[dict, dict[int, str]]:
    # connect(): A(1) -> C(3) as input 1, B(2) -> C as input 2 (type numbers 1, 2), both
    # REBALANCE. Sorted sources [1, 2] at 0 and 1; C at 2, folding A then B.
    g = graph(
        "trap-two-input",
        [
            node(1, "Source: A", is_source=True, source_kind="FLIP27"),
            node(2, "Source: B", is_source=True, source_kind="FLIP27"),
            node(3, "CoMap"),
        ],
        [edge(1, 3, "REBALANCE", type_number=1), edge(2, 3, "REBALANCE", type_number=2)],
    )
    h1 = bytes.fromhex(_generated(0, 0, []))
    h2 = bytes.fromhex(_generated(1, 0, []))
    h3 = _generated(2, 0, [h1, h2])
    return g, {1: h1.hex(), 2: h2.hex(), 3: h3}


TRAPS = [
    reached_before_input_hashed,
    uid_in_the_middle,
    sources_out_of_order,
    several_chainable_outputs,
    two_input_operator,
]


@pytest.mark.parametrize("trap", TRAPS, ids=lambda t: t.__name__)
def test_trap_on_kernel(trap):
    g, expected = trap()
    nodes, *_ = compute_one(g)
    got = dict(zip(nodes["node_id"], nodes["operator_id"], strict=False))
    assert got == expected


def test_the_two_inputs_fold_in_in_edge_order():
    g, expected = two_input_operator()
    swapped = dict(g, edges=list(reversed(g["edges"])))
    h1, h2 = bytes.fromhex(expected[1]), bytes.fromhex(expected[2])
    nodes, *_ = compute_one(swapped)
    got = dict(zip(nodes["node_id"], nodes["operator_id"], strict=False))
    assert got[3] == _generated(2, 0, [h2, h1]) != expected[3]


def test_traps_through_spark(spark, settings, tmp_path):
    inp = tmp_path / "traps.jsonl"
    expected = {}
    with open(inp, "w") as f:
        for trap in TRAPS:
            g, exp = trap()
            expected[g["graph_id"]] = exp
            f.write(json.dumps(g) + "\n")
    out = str(tmp_path / "out")
    summary = compute(spark, str(inp), out, settings, Progress(enabled=False))
    assert summary.graphs_rejected == 0
    rows = spark.read.format("delta").load(f"{out}/operators").select("graph_id", "node_id", "operator_id").collect()
    got: dict[str, dict[int, str]] = {}
    for r in rows:
        got.setdefault(r.graph_id, {})[r.node_id] = r.operator_id
    assert got == expected
    names = {
        r.graph_id: r.name
        for r in spark.read.format("delta").load(f"{out}/job_vertices").where("graph_id = 'trap-fan-out'").collect()
    }
    assert names == {"trap-fan-out": "Source: S -> M -> (X, Y)"}
