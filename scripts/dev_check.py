"""Fast development loop: run the per-graph steps on vector files in plain pandas.

Not the product path (that is Spark, see pipeline/); this only exists to iterate on
Flink semantics in seconds. Usage: python scripts/dev_check.py FILE.jsonl.gz [...]
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from udfs.compute.one_graph import compute_one  # noqa: E402
from udfs.flink.hashing import HashingError  # noqa: E402
from udfs.spec.contract import ContractError  # noqa: E402

run_one = compute_one


def compare(obj):
    exp = obj["expected"]
    try:
        nodes, ops, verts, jedges = run_one(obj)
    except (ContractError, HashingError) as e:
        if "error" in exp:
            return []
        return [f"rejected: {e}"]
    if "error" in exp:
        return [f"expected error {exp['error'][:80]}"]
    diffs = []
    opid = dict(zip(nodes.node_id, nodes.operator_id, strict=False))
    ops = ops.set_index("node_id")
    uh = dict(zip(nodes.node_id, nodes.uid_hash, strict=False))
    for nid, e in exp["operators"].items():
        nid = int(nid)
        if isinstance(e, list):
            got = [opid[nid], ops.loc[nid, "jobvertex_id"]]
            if got != e:
                diffs.append(f"node {nid}: {got} != {e}")
            continue
        got = {
            "operator_id": opid[nid],
            "user_operator_id": uh[nid],
            "jobvertex_id": ops.loc[nid, "jobvertex_id"],
            "chain_head_node_id": int(ops.loc[nid, "chain_head_node_id"]),
            "chain_index": int(ops.loc[nid, "chain_index"]),
            "is_chain_head": bool(ops.loc[nid, "is_chain_head"]),
            "is_chain_end": bool(ops.loc[nid, "is_chain_end"]),
            "in_vertex_operator_ids": bool(ops.loc[nid, "in_vertex_operator_ids"]),
        }
        for k, v in got.items():
            if e[k] != v:
                diffs.append(f"node {nid} {k}: got {v} want {e[k]}")
    ev = exp["job_vertices"]
    if isinstance(ev, dict):
        got = dict(zip(verts.jobvertex_id, verts.name, strict=False))
        if got != ev:
            diffs.append(f"vertices {got} != {ev}")
        return diffs
    gotv = [
        {
            "id": r.jobvertex_id,
            "name": r.name,
            "head_node_id": r.head_node_id,
            "parallelism": r.parallelism,
            "max_parallelism": r.max_parallelism,
            "slot_sharing_group": r.slot_sharing_group,
            "operator_ids": list(r.operator_ids),
            "user_operator_ids": list(r.user_operator_ids),
        }
        for r in verts.itertuples()
    ]
    if gotv != ev:
        for a, b in zip(gotv, ev, strict=False):
            if a != b:
                diffs.append(f"vertex got {a}\n      want {b}")
                break
        if len(gotv) != len(ev):
            diffs.append(f"vertex count {len(gotv)} != {len(ev)}")
    gote = [
        {
            "source_vertex": r.source_jobvertex_id,
            "target_vertex": r.target_jobvertex_id,
            "source_node": r.source_node_id,
            "target_node": r.target_node_id,
            "input_index": r.input_index,
            "distribution_pattern": r.distribution_pattern,
            "ship_strategy_name": r.ship_strategy,
        }
        for r in jedges.itertuples()
    ]
    key = lambda d: (d["target_vertex"], d["input_index"])  # noqa: E731
    if sorted(gote, key=key) != sorted(exp["job_edges"], key=key):
        a = sorted(gote, key=key)
        b = sorted(exp["job_edges"], key=key)
        for x, y in zip(a, b, strict=False):
            if x != y:
                diffs.append(f"edge got {x}\n     want {y}")
                break
        if len(a) != len(b):
            diffs.append(f"edge count {len(a)} != {len(b)}")
    return diffs


def main():
    total = bad = 0
    for path in sys.argv[1:]:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            for line in f:
                obj = json.loads(line)
                total += 1
                d = compare(obj)
                if d:
                    bad += 1
                    if bad <= 5:
                        print(obj["graph_id"], len(obj["nodes"]), "nodes")
                        for x in d[:4]:
                            print("   ", x)
    print(f"{total - bad}/{total} graphs match")


if __name__ == "__main__":
    main()
