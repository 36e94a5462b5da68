"""The state half on recorded statetypes cases without Spark, reading saved values where it asks to.

    .venv/bin/python scripts/value_reader_check.py conformance/statetypes/statetypes-2.3-s41.jsonl.gz \
        [st-2.3-s41-00021 ...] [--all]

For each case (those named, else every case whose state half asks for stream bytes; ``--all``:
every case): the decision as check-restore makes it from the case's v1 / v2 specs and savepoint
(``udfs.restore.state_rules.decide_states``, the spec node's ``declared_states``, both jars' class
facts), then again with the requested streams' bytes (``values_from_files``), against what Flink
did (read as scripts/state_agreement.py reads it). A development tool: the agreement itself runs
the real check-restore (scripts/state_agreement.py).

The emulated reads themselves were checked against Flink's own serializers (real Kryo 2.24 / 5.6)
with ``harness/restore``'s ``value-check`` (ValueCheck.java: a stream, a state, an offset; it
prints what each value reads as, or the exception chain).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import state_vectors as sv  # noqa: E402
from udfs.restore import rules as rr  # noqa: E402
from udfs.restore import state_rules as sr  # noqa: E402
from udfs.restore.state_value_reads import values_from_files  # noqa: E402
from udfs.savepoint.metadata import parse_metadata  # noqa: E402
from udfs.savepoint.state_meta import decode_operator_states, local_file_reader  # noqa: E402


def classes(spec: dict[str, Any]) -> dict[str, sr.ClassFacts]:
    return {n: sr.ClassFacts.from_dict(n, f) for n, f in (spec.get("user_classes") or {}).items()}


def decide(case: dict[str, Any], folder: Path, with_values: bool) -> sr.StateDecision:
    """The state half as check_rows runs it (the topology half's matches, the spec's nodes)."""
    from udfs.compute.one_graph import compute_one

    md = parse_metadata((folder / "_metadata").read_bytes())
    saved = decode_operator_states(md, local_file_reader(folder))
    nodes, ops, vertices, _ = compute_one(case["v2"])
    profile = rr.RestoreProfile.for_line(case["v2"].get("flink_version"))
    saved_ops = [rr.SavedOperator.from_dict(vars(o)) for o in md.operators]
    new_vertices = [rr.NewVertex.from_dict(r) for r in vertices.to_dict("records")]
    topo = rr.decide(saved_ops, new_vertices, False, profile, "<savepoint>")
    spec_nodes = {n["id"]: n for n in case["v2"]["nodes"]}
    by_op = {r["operator_id"]: r for r in ops.to_dict("records")}
    vx = {r["jobvertex_id"]: r for r in vertices.to_dict("records")}
    matched = {}
    for o in topo.operators:
        if o.status == rr.MATCHED and o.generated_operator_id in by_op:
            row = by_op[o.generated_operator_id]
            v = vx[row["jobvertex_id"]]
            node = spec_nodes[int(row["node_id"])]
            matched[o.operator_id] = sr.NewOperator.from_rows(row, node, int(v["vertex_order"]), int(v["parallelism"]))
    ctx = sr.StateContext(
        saved_major=sr.savepoint_major(md.format_version, case["v1"].get("flink_version")),
        target_major=sr.line_major(case["v2"].get("flink_version")),
        restore_backend=sr.backend_family(case["v2"].get("state_backend")),
        modules=case["v2"].get("serializer_modules"),
        target_line=case["v2"].get("flink_version"),
    )
    order = [o.operator_id for o in md.operators]
    d = sr.decide_states(saved, matched, ctx, classes(case["v2"]), classes(case["v1"]), order)
    if with_values and d.value_requests:
        values = values_from_files(md, local_file_reader(folder), d.value_requests)
        d = sr.decide_states(saved, matched, ctx, classes(case["v2"]), classes(case["v1"]), order, values)
    return d


def unpack(case: dict[str, Any], set_dir: Path) -> Path:
    dest = Path(tempfile.mkdtemp(prefix="vrc-"))
    with tarfile.open(set_dir / case["savepoint"]["archive"]) as tar:
        tar.extractall(dest, filter="data")
    return dest / case["savepoint"]["dir_name"]


def flink(case: dict[str, Any]) -> dict[str, Any]:
    failed = case["verdict"] == "FAILED"
    return {"verdict": "FAILS" if failed else "RESTORES", "failure": sv.recorded_kind(case) if failed else None,
            "message": case["error_message"] if failed else None,
            "failure_stage": case["failure_stage"] if failed else None}  # fmt: skip


def row(d: sr.StateDecision) -> dict[str, Any]:
    fails = d.verdict == sr.FAILS
    return {"verdict": d.verdict, "failure": d.failure if fails else None, "message": d.message if fails else None,
            "failure_stage": d.failure_stage if fails else None, "uncertain": d.uncertain}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set", type=Path)
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args(argv)
    set_dir = args.set.parent / args.set.name.removesuffix(".jsonl.gz")
    with gzip.open(args.set, "rt") as f:
        cases = [c for c in map(json.loads, f) if not args.cases or c["case_id"] in args.cases]
    for case in cases:
        folder = unpack(case, set_dir)
        first = decide(case, folder, False)
        if not first.value_requests and not args.cases and not args.all:
            continue
        second = decide(case, folder, True)
        want, got = flink(case), row(second)
        same = all(want[k] == got[k] for k in want)
        print(f"{case['case_id']} {'AGREES' if same else 'differs'} requests={len(first.value_requests)}")
        print(f"   flink: {want}")
        print(f"   check: {got}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
