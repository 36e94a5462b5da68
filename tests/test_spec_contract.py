"""SPEC section 1 defaults and the Java collection orders some Flink versions depend on.
Pure Python: no Spark needed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from udfs.flink.chain_walk import java_hash_order
from udfs.spec.contract import ContractError, parse_graph


def test_spec_defaults():
    pg = parse_graph(
        {
            "graph_id": "g",
            "nodes": [
                {"id": 1, "name": "Source: S", "parallelism": 1},
                {"id": 2, "name": "Source: F", "parallelism": 1, "source_kind": "FLIP27"},
                {"id": 3, "name": "Map", "parallelism": 1},
            ],
            "edges": [{"source": 1, "target": 3}, {"source": 2, "target": 3, "type_number": 1}],
        }
    )
    assert pg.graph["flink_version"] == "2.3"  # newest supported
    assert pg.graph["job_name"] == "g" and pg.graph["chaining_enabled"] is True
    assert pg.graph["job_type"] == "STREAMING" and pg.graph["dynamic"] is False
    n = {x["node_id"]: x for x in pg.nodes}
    # A source without source_kind is LEGACY, and a legacy source defaults to HEAD.
    assert (n[1]["is_source"], n[1]["source_kind"], n[1]["chaining_strategy"]) == (True, "LEGACY", "HEAD")
    assert (n[2]["source_kind"], n[2]["chaining_strategy"]) == ("FLIP27", "ALWAYS")
    assert (n[3]["is_source"], n[3]["source_kind"], n[3]["chaining_strategy"]) == (False, None, "ALWAYS")
    assert n[3]["max_parallelism"] == -1 and n[3]["slot_sharing_group"] == "default"
    e = pg.edges
    assert [(x["partitioner"], x["exchange_mode"], x["edge_idx"]) for x in e] == [("FORWARD", "UNDEFINED", 0)] * 1 + [
        ("FORWARD", "UNDEFINED", 1)
    ]


def test_versions_are_release_lines():
    base = {"graph_id": "g", "nodes": [{"id": 1, "name": "S", "parallelism": 1}], "edges": []}
    assert parse_graph({**base, "flink_version": "1.20.5"}).graph["flink_version"] == "1.20"
    with pytest.raises(ContractError) as e:
        parse_graph({**base, "flink_version": "1.14"})
    assert e.value.code == "UNSUPPORTED_VERSION" and "2.3" in str(e.value)


def test_uid_hash_is_lowercased_and_checked():
    base = {"graph_id": "g", "edges": []}
    pg = parse_graph(
        {**base, "nodes": [{"id": 1, "name": "S", "parallelism": 1, "uid_hash": "6F1880906BCCB25E249C898FC83CF5D4"}]}
    )
    assert pg.nodes[0]["uid_hash"] == "6f1880906bccb25e249c898fc83cf5d4"
    with pytest.raises(ContractError) as e:
        parse_graph({**base, "nodes": [{"id": 1, "name": "S", "parallelism": 1, "uid_hash": "6F18"}]})
    assert e.value.code == "BAD_UID_HASH"


def test_java_hash_order():
    # HashMap<Integer>: 16 buckets, bucket = k & 15 for small k, insertion order inside one.
    assert java_hash_order([5, 20]) == [20, 5]
    assert java_hash_order([3, 1, 2]) == [1, 2, 3]
    # Negative ids (1.x iterations): (k ^ (k >>> 16)) & 15, e.g. -1 -> bucket 0, -3 -> bucket 2.
    assert java_hash_order([1, 2, 3, -1, -3]) == [-1, 1, 2, -3, 3]
    # 13 keys exceed 0.75 * 16: the table has 32 buckets, so 20 now sorts after 5.
    keys = list(range(1, 13)) + [20]
    assert java_hash_order(keys) == keys


def test_source_id_order_must_list_the_sources():
    base = {"graph_id": "g", "nodes": [{"id": 1, "name": "S", "parallelism": 1}], "edges": []}
    assert parse_graph({**base, "source_id_order": [1]}).graph["source_id_order"] == [1]
    with pytest.raises(ContractError):
        parse_graph({**base, "source_id_order": [1, 2]})


@pytest.mark.parametrize("field, value", [("id", 2**31), ("id", -(2**31) - 1), ("parallelism", 2**40)])
def test_integers_must_fit_a_java_int(field, value):
    node = {"id": 1, "name": "Source: S", "parallelism": 1}
    node[field] = value
    with pytest.raises(ContractError) as e:
        parse_graph({"graph_id": "g", "nodes": [node], "edges": []})
    assert e.value.code == "BAD_FIELD" and "Java's int range" in str(e.value)


def test_java_int_bounds_are_accepted():
    pg = parse_graph({"graph_id": "g", "nodes": [{"id": 2**31 - 1, "name": "Source: S", "parallelism": 1}]})
    assert pg.nodes[0]["node_id"] == 2**31 - 1


def _outcome(obj):
    try:
        pg = parse_graph(obj)
    except ContractError as e:
        return ("error", e.code, str(e))
    return ("ok", pg.graph, pg.nodes, pg.edges)


# Values a field may take in the mutated graphs: good ones, wrong types, unknown enums,
# out-of-range ints, bools where ints go, None, and missing (the _MISSING marker).
_MISSING = object()
_FIELD_VALUES = {
    "name": ["Map", 7, None, _MISSING],
    "parallelism": [1, 4, 0, -1, 2**31, True, "2", None, _MISSING],
    "max_parallelism": [128, -1, None, 2**31, False, 1.5, _MISSING],
    "is_source": [True, False, None, 1, _MISSING],
    "source_kind": ["LEGACY", "FLIP27", "NEW", None, 3, _MISSING],
    "has_operator": [True, False, None, "yes", _MISSING],
    "chaining_strategy": ["ALWAYS", "HEAD", "NEVER", "HEAD_WITH_SOURCES", "SOMETIMES", None, ["ALWAYS"], _MISSING],
    "uid": ["u1", 12, None, _MISSING],
    "uid_hash": ["6F1880906BCCB25E249C898FC83CF5D4", "xyz", 5, None, _MISSING],
    "slot_sharing_group": ["default", "other", None, 4, _MISSING],
    "yielding": [True, False, 0, None, _MISSING],
    "source": [1, 2, 99, True, "1", None, 2**40, _MISSING],
    "target": [2, 3, 99, False, None, _MISSING],
    "partitioner": ["FORWARD", "HASH", "RESCALE", "ROUND_ROBIN", None, {}, _MISSING],
    "exchange_mode": ["UNDEFINED", "BATCH", "HYBRID_FULL", "EAGER", None, _MISSING],
    "type_number": [0, 1, -3, 2**31, True, "0", None, _MISSING],
    "output_tag": ["late", 5, None, _MISSING],
    "declared_states": [
        [],
        [{"name": "s", "kind": "VALUE", "serializer_snapshot": "AAAAAg==", "ttl": None, "conditional": True}],
        [{"name": None, "kind": None, "unresolved": "why", "saved_as": ["_timer_state/x"]}],
        [{"name": 3}],
        [{"kind": "FOLDING"}],
        [{"ttl": "1h"}],
        [{"saved_as": "x"}],
        [5],
        "[]",
        None,
        _MISSING,
    ],
}
_NODE_FIELDS = [
    k
    for k in _FIELD_VALUES
    if k not in ("source", "target", "partitioner", "exchange_mode", "type_number", "output_tag")
]
_EDGE_FIELDS = ["source", "target", "partitioner", "exchange_mode", "type_number", "output_tag"]


def _mutated_graphs(count: int):
    import random

    rng = random.Random(11)
    for _ in range(count):
        nodes = [{"id": i, "name": f"N{i}", "parallelism": 2} for i in (1, 2, 3)]
        edges = [{"source": 1, "target": 2}, {"source": 2, "target": 3}]
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.6:
                target, fields = rng.choice(nodes), _NODE_FIELDS
            else:
                target, fields = rng.choice(edges), _EDGE_FIELDS
            field = rng.choice(fields)
            value = rng.choice(_FIELD_VALUES[field])
            if value is _MISSING:
                target.pop(field, None)
            else:
                target[field] = value
        yield {"graph_id": "g", "nodes": nodes, "edges": edges}


def test_columnar_batch_path_accepts_exactly_what_the_checked_path_accepts():
    """The pipeline checks whole batches column-wise (udfs.spec.batch.parse_batch) and sends
    what it does not accept to parse_graph, which names the breach. On thousands of graphs
    with one to three broken or unusual fields, plus every golden graph, one batch: each graph
    the columnar path accepts, parse_graph accepts with the very same rows; and each graph
    parse_graph accepts, the columnar path accepts too (but the adaptive-batch partitioners,
    which it leaves to parse_graph)."""
    from udfs.spec.batch import parse_batch

    graphs = list(_mutated_graphs(3000))
    for path in sorted(Path(__file__).parent.glob("golden/**/*.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            graphs += [json.loads(line) for line in f if line.strip()]
    batch, rest = parse_batch(graphs)
    accepted = dict(zip(batch.positions, batch.parsed_graphs(), strict=True))
    assert sorted([*accepted, *rest]) == list(range(len(graphs)))
    left_to_checked = 0
    for i, g in enumerate(graphs):
        outcome = _outcome(g)
        if i in accepted:
            pg = accepted[i]
            assert outcome == ("ok", pg.graph, pg.nodes, pg.edges), i
        elif outcome[0] == "ok":
            partitioners = {e.get("partitioner") for e in g["edges"]}
            assert partitioners & {"FORWARD_FOR_UNSPECIFIED", "FORWARD_FOR_CONSECUTIVE_HASH"} or any(
                str(p).startswith("FORWARD_FOR_CONSECUTIVE_HASH[") for p in partitioners
            ), i
            left_to_checked += 1
    outcomes = [_outcome(g) for g in graphs[:3000]]
    kinds = {o[1] if o[0] == "error" else "ok" for o in outcomes}
    assert {"ok", "BAD_FIELD", "UNKNOWN_ENUM", "MISSING_FIELD", "DANGLING_EDGE", "BAD_UID_HASH"} <= kinds
    assert len(accepted) > 2500 and left_to_checked > 0


def test_declared_states_are_checked_and_kept_as_canonical_json():
    """Node field ``declared_states`` (docs/spec-extensions.md): optional; a list of entry objects,
    each field of its JSON type, the kind one of Flink's; a breach names the node, the entry and
    the field (BAD_FIELD). Kept as canonical JSON text in the stream rows, and turned back into the
    list by ``node_spec_fields``, so a spec rebuilt from rows (a fix proof) passes again."""
    from udfs.spec.contract import node_spec_fields

    entry = {"name": "rides", "kind": "VALUE", "serializer_snapshot": "AAAAAg==", "basis": "bytecode",
             "declared_in": "a.Fn#open", "ttl": {"ttl_ms": 1}, "extra": [1, 2]}  # fmt: skip

    def graph(declared: object) -> dict:
        node = {"id": 2, "name": "Map", "parallelism": 1, "declared_states": declared}
        return {"graph_id": "g", "nodes": [{"id": 1, "name": "S", "parallelism": 1}, node],
                "edges": [{"source": 1, "target": 2}]}  # fmt: skip

    nodes = {n["node_id"]: n for n in parse_graph(graph([entry])).nodes}
    assert nodes[1]["declared_states"] is None  # absent: not known (an older exporter)
    assert json.loads(nodes[2]["declared_states"]) == [entry]
    assert nodes[2]["declared_states"] == json.dumps([entry], sort_keys=True, separators=(",", ":"))
    assert node_spec_fields(nodes[2])["declared_states"] == [entry]
    assert node_spec_fields(nodes[1]) == nodes[1]
    assert parse_graph(graph([])).nodes[1]["declared_states"] == "[]"
    for bad, words in (
        ({"name": "x"}, "node 2 declared_states must be a list of objects"),
        ([entry, 7], "node 2 declared_states[1] must be a JSON object"),
        ([{**entry, "kind": "FOLDING"}], "node 2 declared_states[0] kind is 'FOLDING'; expected one of VALUE"),
        ([{**entry, "serializer_snapshot": 12}], "node 2 declared_states[0] serializer_snapshot must be a string"),
        ([{**entry, "ttl": 3600}], "node 2 declared_states[0] ttl must be a JSON object"),
        ([{**entry, "conditional": "yes"}], "node 2 declared_states[0] conditional must be true or false"),
        ([{**entry, "saved_as": ["a", 1]}], "node 2 declared_states[0] saved_as must be a list of strings"),
    ):
        with pytest.raises(ContractError) as e:
            parse_graph(graph(bad))
        assert e.value.code == "BAD_FIELD" and str(e.value).startswith(words), str(e.value)


def _batch_graph(partitioner: str, dynamic: bool, version: str = "2.3", par: int = -1) -> dict:
    return {
        "graph_id": "b",
        "flink_version": version,
        "job_type": "BATCH",
        "dynamic": dynamic,
        "nodes": [
            {"id": 1, "name": "Source: S", "parallelism": par, "source_kind": "FLIP27"},
            {"id": 2, "name": "Map", "parallelism": par, "parallelism_configured": True},
        ],
        "edges": [{"source": 1, "target": 2, "partitioner": partitioner}],
    }


def test_batch_fields_and_defaults():
    """What a BATCH job exports (docs/spec-extensions.md): FORWARD_FOR_UNSPECIFIED, parallelism
    -1 (ExecutionConfig.PARALLELISM_DEFAULT), parallelism_configured (Flink's default false),
    auto_parallelism_enabled (default true)."""
    pg = parse_graph(_batch_graph("FORWARD_FOR_UNSPECIFIED", dynamic=True))
    assert pg.graph["auto_parallelism_enabled"] is True
    assert [n["parallelism"] for n in pg.nodes] == [-1, -1]
    assert [n["parallelism_configured"] for n in pg.nodes] == [False, True]
    assert pg.edges[0]["partitioner"] == "FORWARD_FOR_UNSPECIFIED"
    off = {**_batch_graph("FORWARD_FOR_UNSPECIFIED", dynamic=True), "auto_parallelism_enabled": False}
    assert parse_graph(off).graph["auto_parallelism_enabled"] is False
    for bad in (0, -2):
        with pytest.raises(ContractError) as e:
            parse_graph(_batch_graph("FORWARD", dynamic=False, par=bad))
        assert e.value.code == "BAD_PARALLELISM"
    with pytest.raises(ContractError) as e:
        parse_graph({**_batch_graph("FORWARD", dynamic=True), "auto_parallelism_enabled": "yes"})
    assert e.value.code == "BAD_FIELD"


def test_batch_partitioners_outside_dynamic_graphs():
    with pytest.raises(ContractError) as e:
        parse_graph(_batch_graph("FORWARD_FOR_UNSPECIFIED", dynamic=False))
    assert e.value.code == "FLINK_REJECTED"
    assert str(e.value) == (
        "java.lang.IllegalStateException: ForwardForUnspecifiedPartitioner should only be used in dynamic graph."
    )
    with pytest.raises(ContractError) as e:
        parse_graph(_batch_graph("FORWARD_FOR_CONSECUTIVE_HASH", dynamic=False))
    assert e.value.code == "PARTITIONER_NEEDS_DYNAMIC_GRAPH"
    assert parse_graph(_batch_graph("FORWARD_FOR_CONSECUTIVE_HASH", dynamic=True)).edges[0]["partitioner"] == (
        "FORWARD_FOR_CONSECUTIVE_HASH"
    )
    for p in ("FORWARD_FOR_UNSPECIFIED", "FORWARD_FOR_CONSECUTIVE_HASH"):
        with pytest.raises(ContractError) as e:
            parse_graph(_batch_graph(p, dynamic=True, version="1.9", par=1))
        assert e.value.code == "UNSUPPORTED_PARTITIONER"


def test_named_consecutive_hash_partitioner():
    """FORWARD_FOR_CONSECUTIVE_HASH[<fields>] (a ForwardForConsecutiveHashPartitioner wrapping
    the table runtime's BinaryHashPartitioner) chains like FORWARD_FOR_CONSECUTIVE_HASH and,
    as a job edge, becomes HASH[<fields>], ALL_TO_ALL, as createJobGraph shows it."""
    import numpy as np

    from udfs.flink.chain_walk import distribution_pattern
    from udfs.flink.job_graph import job_edge_partitioners
    from udfs.spec.contract import base_partitioner, is_named_hash

    assert is_named_hash("FORWARD_FOR_CONSECUTIVE_HASH[k, s]") and is_named_hash("HASH[k]")
    assert not is_named_hash("FORWARD_FOR_CONSECUTIVE_HASH") and not is_named_hash("REBALANCE[k]")
    assert base_partitioner("FORWARD_FOR_CONSECUTIVE_HASH[k, s]") == "FORWARD_FOR_CONSECUTIVE_HASH"
    given = np.array(
        ["FORWARD_FOR_CONSECUTIVE_HASH[k, s]", "FORWARD_FOR_CONSECUTIVE_HASH", "FORWARD_FOR_UNSPECIFIED", "HASH[s]"],
        dtype=object,
    )
    shown = job_edge_partitioners(given)
    assert list(shown) == ["HASH[k, s]", "HASH", "RESCALE", "HASH[s]"]
    assert [distribution_pattern(p) for p in shown] == ["ALL_TO_ALL", "ALL_TO_ALL", "POINTWISE", "ALL_TO_ALL"]
