"""Properties of the computation over generated graphs (hypothesis), against the real code.

The hashing properties call the pure per-graph computation (udfs.compute.one_graph.compute_one,
the same steps the Spark executors run per graph); the file-layout property runs the real
pipeline (Spark, Delta) over a few layouts of the same lines.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from udfs.compute.one_graph import compute_one

PARTITIONERS = ["FORWARD", "REBALANCE", "RESCALE", "HASH", "BROADCAST", "SHUFFLE", "GLOBAL", "CUSTOM"]
NON_CHAINABLE = ["REBALANCE", "HASH", "BROADCAST", "SHUFFLE"]  # never chainable: not forward/rescale-like
VERSIONS = ["1.9", "1.20", "2.3"]
FAST = hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def graphs(draw: st.DrawFn, min_nodes: int = 2, max_nodes: int = 14) -> dict:
    """A valid stream graph as the exporter writes it: 1-3 sources, then operators that each
    read 1-2 earlier nodes (chains where the partitioner is FORWARD and parallelism matches,
    fan-out where several read the same node, fan-in where one reads two), uids on some,
    every partitioner, mixed parallelism and chaining strategies."""
    n = draw(st.integers(min_nodes, max_nodes))
    n_sources = draw(st.integers(1, min(3, n - 1)))
    par = st.sampled_from([1, 2, 2, 4])
    nodes, edges, uids = [], [], set()
    for i in range(n):
        is_source = i < n_sources
        uid = None
        if draw(st.booleans()):
            uid = draw(st.text("abcdefgh-_/0123456789", min_size=1, max_size=8))
            if uid in uids:
                uid = None
            else:
                uids.add(uid)
        kind = draw(st.sampled_from(["FLIP27", "LEGACY"])) if is_source else None
        strategy = (
            "HEAD" if kind == "LEGACY" else draw(st.sampled_from(["ALWAYS", "ALWAYS", "ALWAYS", "HEAD", "NEVER"]))
        )
        nodes.append(
            {
                "id": i + 1,
                "name": ("Source: S" if is_source else "Op") + str(i),
                "uid": uid,
                "uid_hash": None,
                "parallelism": draw(par),
                "max_parallelism": -1,
                "chaining_strategy": strategy,
                "slot_sharing_group": draw(st.sampled_from(["default", "default", "other"])),
                "is_source": is_source,
                "source_kind": kind,
                "yielding": (not is_source) and draw(st.integers(0, 9)) == 0,
                "has_operator": True,
            }
        )
        if not is_source:
            inputs = draw(st.lists(st.integers(0, i - 1), min_size=1, max_size=2, unique=True))
            for j in inputs:
                edges.append(
                    {
                        "source": j + 1,
                        "target": i + 1,
                        "partitioner": draw(st.sampled_from(["FORWARD", "FORWARD", *PARTITIONERS])),
                        "exchange_mode": "UNDEFINED",
                        "type_number": 0,
                        "output_tag": None,
                    }
                )
    gid = f"g-{draw(st.integers(0, 10**9))}"
    return {
        "graph_id": gid,
        "job_name": gid,
        "flink_version": draw(st.sampled_from(VERSIONS)),
        "chaining_enabled": draw(st.sampled_from([True, True, True, False])),
        "job_type": "STREAMING",
        "nodes": nodes,
        "edges": edges,
    }


def operator_ids(graph: dict) -> dict[int, str]:
    _, operators, _, _ = compute_one(graph)
    return dict(zip(operators["node_id"].astype(int), operators["operator_id"], strict=True))


def renumbered(graph: dict, new_ids: list[int]) -> dict:
    mapping = {n["id"]: new for n, new in zip(graph["nodes"], new_ids, strict=True)}
    out = json.loads(json.dumps(graph))
    for n in out["nodes"]:
        n["id"] = mapping[n["id"]]
    for e in out["edges"]:
        e["source"], e["target"] = mapping[e["source"]], mapping[e["target"]]
    return out


@st.composite
def graph_and_renumbering(draw: st.DrawFn) -> tuple[dict, list[int]]:
    """New ids for every node, any values (negative too: iterations), where the sources keep
    their relative order: Flink's hasher walks breadth-first from the sources sorted by id,
    and nothing else about an id reaches an operator ID."""
    g = draw(graphs())
    ids = draw(st.lists(st.integers(-1000, 10**6), min_size=len(g["nodes"]), max_size=len(g["nodes"]), unique=True))
    source_pos = [i for i, n in enumerate(g["nodes"]) if n["is_source"]]
    for pos, new in zip(source_pos, sorted(ids[i] for i in source_pos), strict=True):
        ids[pos] = new
    return g, ids


@FAST
@given(graph_and_renumbering())
def test_renumbering_nodes_keeps_every_operator_id(case):
    g, new_ids = case
    before = operator_ids(g)
    after = operator_ids(renumbered(g, new_ids))
    mapping = {n["id"]: new for n, new in zip(g["nodes"], new_ids, strict=True)}
    assert {mapping[k]: v for k, v in before.items()} == after


def test_renumbering_that_reorders_sources_can_change_ids():
    """Not vacuous: the source order is what the renumbering property must keep."""
    g = {
        "graph_id": "two-sources",
        "nodes": [
            {"id": 1, "name": "Source: A", "parallelism": 1, "is_source": True, "source_kind": "FLIP27"},
            {"id": 2, "name": "Source: B", "parallelism": 1, "is_source": True, "source_kind": "FLIP27"},
            {"id": 3, "name": "Join", "parallelism": 2},
        ],
        "edges": [
            {"source": 1, "target": 3, "partitioner": "HASH"},
            {"source": 2, "target": 3, "partitioner": "HASH"},
        ],
    }
    before = operator_ids(g)
    after = operator_ids(renumbered(g, [2, 1, 3]))
    assert before[1] != after[2]  # A was hashed first, now second


@FAST
@given(graphs(), graphs(), st.data(), st.text(min_size=1, max_size=40))
def test_uid_node_id_depends_only_on_its_uid(g1, g2, data, uid):
    """The same uid on any node of any two graphs (any version, position, inputs) gives the
    same operator ID, the one of a lone source with that uid."""
    ids = []
    for g in (g1, g2):
        node = data.draw(st.sampled_from(g["nodes"]))
        for n in g["nodes"]:
            if n["uid"] == uid:
                n["uid"] = None
        node["uid"] = uid
        ids.append(operator_ids(g)[node["id"]])
    lone = {"graph_id": "lone", "nodes": [{"id": 7, "name": "Source: X", "uid": uid, "parallelism": 3}], "edges": []}
    assert ids[0] == ids[1] == operator_ids(lone)[7]


def _ancestors(graph: dict, node: int) -> set[int]:
    up: dict[int, list[int]] = {}
    for e in graph["edges"]:
        up.setdefault(e["target"], []).append(e["source"])
    seen, todo = set(), [node]
    while todo:
        for p in up.get(todo.pop(), []):
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return seen


@st.composite
def uid_free_graph_and_downstream(draw: st.DrawFn) -> tuple[dict, int, str, dict]:
    g = draw(graphs())
    for n in g["nodes"]:
        n["uid"] = None
    parent = draw(st.sampled_from(g["nodes"]))["id"]
    partitioner = draw(st.sampled_from(NON_CHAINABLE))
    extra = {"uid": draw(st.sampled_from([None, "added"])), "parallelism": draw(st.sampled_from([1, 2, 4]))}
    return g, parent, partitioner, extra


@FAST
@given(uid_free_graph_and_downstream())
def test_downstream_operator_behind_non_chainable_edge_keeps_upstream_ids(case):
    """Without uids upstream, every ancestor of the new operator keeps its ID.

    The restriction is Flink's, not ours: a node with a uid is hashed as soon as the
    breadth-first walk reaches it, before its inputs, so an operator added behind it can be
    hashed before one of its ancestors and shift that ancestor's ``hashes.size()`` position.
    tests/test_exporter.py (``UidFirstJob``) shows real Flink 1.20 and 2.3 doing exactly that.
    """
    g, parent, partitioner, extra = case
    before = operator_ids(g)
    new_id = max(n["id"] for n in g["nodes"]) + 1
    grown = json.loads(json.dumps(g))
    grown["nodes"].append({"id": new_id, "name": "Added", **extra})
    grown["edges"].append({"source": parent, "target": new_id, "partitioner": partitioner})
    after = operator_ids(grown)
    upstream = _ancestors(grown, new_id)
    assert parent in upstream
    assert {k: after[k] for k in upstream} == {k: before[k] for k in upstream}
