#!/usr/bin/env python3
"""Sanity checks for harness output (gzip JSON lines in the dev-vector format).

usage: python3 harness/check_vectors.py FILE.jsonl.gz [REFERENCE.jsonl.gz]
With a reference file (e.g. shared/vectors/flink-2.3-dev-s1.jsonl.gz) it also checks that
both use exactly the same set of keys at every level.
"""
import collections
import gzip
import json
import sys


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def keys(o, pre=""):
    out = set()
    if isinstance(o, dict):
        for k, v in o.items():
            kk = pre + ".N" if k.lstrip("-").isdigit() else pre + "." + k
            out.add(kk)
            out |= keys(v, kk)
    elif isinstance(o, list):
        for v in o:
            out |= keys(v, pre + "[]")
    return out


def check(g):
    errs = []
    exp = g["expected"]
    if "error" in exp:
        return errs
    nodes = {n["id"]: n for n in g["nodes"]}
    ops = exp["operators"]
    if set(int(k) for k in ops) != set(nodes):
        errs.append("operators != nodes")
    vids = [v["id"] for v in exp["job_vertices"]]
    if len(set(vids)) != len(vids):
        errs.append("duplicate vertex ids")
    for v in exp["job_vertices"]:
        if not v["operator_ids"]:
            errs.append("empty operator_ids " + v["id"])
        if len(v["operator_ids"]) != len(v["user_operator_ids"]):
            errs.append("operator/user id length mismatch")
        members = [k for k, o in ops.items() if o["jobvertex_id"] == v["id"] and o["in_vertex_operator_ids"]]
        if sorted(ops[k]["operator_id"] for k in members) != sorted(v["operator_ids"]):
            errs.append(f"vertex {v['id']} operator_ids differ from its members")
        if v["id"] != ops[str(v["head_node_id"])]["operator_id"]:
            errs.append("vertex id != head operator id")
    for k, o in ops.items():
        if o["jobvertex_id"] not in vids:
            errs.append(f"node {k} in unknown vertex")
    edge_keys = collections.Counter((e["source"], e["target"]) for e in g["edges"])
    per_target = collections.defaultdict(list)
    for e in exp["job_edges"]:
        if e["source_vertex"] not in vids or e["target_vertex"] not in vids:
            errs.append("job edge with unknown vertex")
        if (e["source_node"], e["target_node"]) not in edge_keys:
            errs.append("job edge without stream edge")
        per_target[e["target_vertex"]].append(e["input_index"])
    for t, idx in per_target.items():
        if idx != list(range(len(idx))):
            errs.append("input_index not 0..n-1 on " + t)
    return errs


def main():
    data = load(sys.argv[1])
    bad = 0
    for g in data:
        e = check(g)
        if e:
            bad += 1
            print(g["graph_id"], e[:3])
    errors = collections.Counter(g["expected"].get("error", "ok")[:100] for g in data)
    sizes = sorted(len(g["nodes"]) for g in data)
    print(f"{len(data)} graphs, {bad} failing checks; sizes min {sizes[0]} median {sizes[len(sizes) // 2]} "
          f"max {sizes[-1]}; >100 nodes: {sum(s > 100 for s in sizes)}")
    for k, v in errors.most_common():
        print(f"  {v:4d} {k}")
    if len(sys.argv) > 2:
        ref = load(sys.argv[2])
        a = set().union(*[keys(g) for g in ref])
        b = set().union(*[keys(g) for g in data])
        print("keys only in reference:", sorted(a - b))
        print("keys only in file:", sorted(b - a))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
