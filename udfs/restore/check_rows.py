"""One restore check, from the rows Spark groups for it to the rows of the three result tables.

The Spark side (``pipeline/restore/check.py``) hands each check its rows as (kind, JSON
payload) pairs: the check itself, the savepoint's operators, the new graph's job vertices,
operators, nodes and edges, and the same for the job version that took the savepoint when
the manifest names it. This module decides (``restore_rules``), explains and proposes fixes
(``restore_fix``), and returns (table, JSON row) pairs. No Spark here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pandas as pd

from udfs.restore import fixes as rf
from udfs.restore import rules as rr

NODE_FIELDS = ["node_id", "name", "uid", "uid_hash", "chaining_strategy"]
# The columns every result row starts with, whichever table it belongs to.
CHECK_KEY = ("check_id", "savepoint", "graph_id")


def _frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)


def _view(items: dict[str, list[dict]], prefix: str, chaining_enabled: bool) -> rf.GraphView | None:
    if not items.get(prefix + "op"):
        return None
    return rf.graph_view(
        _frame(items.get(prefix + "node", []), NODE_FIELDS),
        _frame(items.get(prefix + "edge", []), ["source", "target"]),
        _frame(items[prefix + "op"], ["node_id", "operator_id", "user_operator_id", "jobvertex_id"]),
        chaining_enabled,
    )


def saved_operators(items: list[dict]) -> list[rr.SavedOperator]:
    return [rr.SavedOperator.from_dict(r) for r in sorted(items, key=lambda r: r["operator_index"])]


def vertices(items: list[dict]) -> list[rr.NewVertex]:
    return [rr.NewVertex.from_dict(r) for r in items]


def check_rows(kinds: Iterable[str], payloads: Iterable[str], profiles: dict[str, dict]) -> list[tuple[str, str]]:
    """(table, JSON row) results of one check; ``profiles``: Flink line -> its ``restore`` rules."""
    items: dict[str, list[dict]] = {}
    for k, p in zip(kinds, payloads, strict=True):
        items.setdefault(k, []).append(json.loads(p))
    check = items["check"][0]
    head = {k: check.get(k) for k in CHECK_KEY}

    def result(verdict: str, failure: str | None, op: str | None, msg: str | None, dropped: list[str]) -> tuple:
        row = {**head, "verdict": verdict, "failure": failure, "operator_id": op, "message": msg,
               "dropped_operator_ids": dropped}  # fmt: skip
        return ("restore_checks", json.dumps(row))

    reason = check.get("error")
    if reason is None and not items.get("vx"):
        reason = "unknown graph: no job vertices for " + str(check.get("graph_id"))
    if reason is None and not items.get("sp"):
        reason = "savepoint has no operator states"
    version = check.get("flink_version")
    if reason is None and (version not in profiles):
        reason = f"no restore rules for Flink {version}"
    if reason is not None:
        return [result(rr.ERROR, reason, None, None, [])]

    saved = saved_operators(items["sp"])
    new_vertices = vertices(items["vx"])
    allow = bool(check.get("allow_non_restored_state"))
    prof = rr.RestoreProfile.from_dict(profiles[version])
    d = rr.decide(saved, new_vertices, allow, prof, check["savepoint"])
    out = [result(d.verdict, d.failure, d.operator_id, d.message, d.dropped_operator_ids)]

    new = _view(items, "", bool(check.get("chaining_enabled", True)))
    old = _view(items, "old_", bool(check.get("old_chaining_enabled", True)))
    nodes = {n.operator_id: n for n in new.nodes} if new else {}
    for o in d.operators:
        s = saved[o.operator_index]
        n = nodes.get(o.generated_operator_id) if o.generated_operator_id else None
        row = {**head, "operator_index": o.operator_index, "operator_id": o.operator_id, "has_state": s.has_state,
               "state_size": s.state_size, "saved_max_parallelism": s.max_parallelism, "status": o.status,
               "matched_via": o.matched_via, "jobvertex_id": o.jobvertex_id, "node_id": n.node_id if n else None,
               "name": n.name if n else None, "uid": n.uid if n else None}  # fmt: skip
        out.append(("restore_operator_matches", json.dumps(row)))

    if new is None:
        return out
    for f in plan_fixes(saved, new_vertices, old, new, items.get("sp", [])):
        out.append(("restore_fixes", json.dumps(fix_row(head, f))))
    return out


def plan_fixes(
    saved: list[rr.SavedOperator],
    new_vertices: list[rr.NewVertex],
    old: rf.GraphView | None,
    new: rf.GraphView,
    sp_rows: list[dict],
) -> list[rf.Fix]:
    """Fixes for every problem (not only the first Flink reports), one per patched node field."""
    probs = rr.all_problems(saved, new_vertices)
    names = {r["operator_id"]: (r.get("operator_name"), r.get("operator_uid")) for r in sp_rows}
    heads = {n.jobvertex_id: n.node_id for n in new.nodes if n.operator_id == n.jobvertex_id}
    fixes = [
        rf.explain(saved[i].operator_id, old, new, *names.get(saved[i].operator_id, (None, None)))
        for i in probs.unmapped
    ]
    fixes += [
        rf.max_parallelism_fix(saved[i].operator_id, saved[i].max_parallelism, new, heads[v.jobvertex_id])
        for i, v in probs.max_parallelism
        if v.jobvertex_id in heads
    ]
    for v, lowest in probs.parallelism:
        fixes += rf.parallelism_fixes(v.jobvertex_id, lowest, new)
    return rf.dedupe(fixes)


def fix_row(head: dict[str, Any], f: rf.Fix) -> dict[str, Any]:
    return {
        **head,
        "operator_id": f.operator_id,
        "old_node_id": f.old_node_id,
        "old_name": f.old_name,
        "old_uid": f.old_uid,
        "counterpart_node_id": f.counterpart_node_id,
        "counterpart_name": f.counterpart_name,
        "counterpart_uid": f.counterpart_uid,
        "counterpart_operator_id": f.counterpart_operator_id,
        "reasons": f.reasons,
        "fix_code": f.fix_code,
        "patch_node_id": f.patch[0] if f.patch else None,
        "patch_field": f.patch[1] if f.patch else None,
        "patch_value": str(f.patch[2]) if f.patch else None,
    }
