"""SPEC section 1 defaults and the Java collection orders some Flink versions depend on.
Pure Python: no Spark needed."""

from __future__ import annotations

import pytest

from pipeline.spec_contract import ContractError, parse_graph
from udfs.chain_builder import java_hash_order


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
