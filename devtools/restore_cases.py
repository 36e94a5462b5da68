"""Real restore cases (``../shared/vectors/restore`` format) against the restore rules.

A case is one savepoint of a real job v1, an edited v2, and what Flink did when v2 started
from it. This module turns a case into the rules' inputs (v2's JobGraph from the project's
own computation, the savepoint's operators from its ``_metadata`` file or as Flink read
them), reads Flink's verdict in the rules' terms, and compares aspect by aspect. Used by
``scripts/restore_agreement.py`` and ``tests/test_restore_check.py``.
"""

from __future__ import annotations

import gzip
import json
import re
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from udfs.restore import rules as rr

PLACEHOLDER = "<savepoint>"
_ID = re.compile(r"\b[0-9a-f]{32}\b")
_KINDS = (
    ("Cannot map checkpoint/savepoint state", rr.UNMAPPED_STATE),
    ("Max parallelism mismatch", rr.MAX_PARALLELISM_MISMATCH),
    ("of the restored state is lower than the configured parallelism", rr.PARALLELISM_ABOVE_MAX),
    ("There is no operator for the state", rr.NO_OPERATOR_FOR_STATE),
)
ASPECTS = ("verdict", "failure", "operator_id", "message")


def restore_profile(version: str) -> rr.RestoreProfile:
    prof = rr.RestoreProfile.for_line(version)
    if prof is None:
        raise KeyError(f"profile {version} has no restore rules")
    return prof


def read_cases(path: str | Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_metadata_tar(path: str | Path) -> dict[str, bytes]:
    """``<case_id>.metadata`` -> the bytes of that case's ``_metadata`` file."""
    out: dict[str, bytes] = {}
    with tarfile.open(path, "r:gz") as tar:
        for m in tar.getmembers():
            if m.isfile():
                f = tar.extractfile(m)
                if f is not None:
                    out[Path(m.name).name] = f.read()
    return out


def saved_from_recorded(case: dict[str, Any]) -> list[rr.SavedOperator]:
    """The savepoint's operators as Flink itself read them (recorded by the harness)."""
    return [rr.SavedOperator.from_dict(o, subtask_count_key="subtask_states") for o in case["savepoint"]["operators"]]


def saved_from_metadata(data: bytes) -> list[rr.SavedOperator]:
    """The savepoint's operators from its ``_metadata`` bytes, through the project's reader."""
    from udfs.savepoint.metadata import parse_metadata  # helper H4's reader

    md = parse_metadata(data)
    return [rr.SavedOperator.from_dict(vars(o)) for o in md.operators]


def vertices_from_frame(vertices: Any) -> list[rr.NewVertex]:
    """``job_vertices`` rows (pandas) -> the rules' vertices."""
    return [rr.NewVertex.from_dict(r) for r in vertices.to_dict("records")]


def compute_vertices(spec: dict[str, Any]) -> list[rr.NewVertex]:
    """The new job's vertices by the project's own per-graph computation (no Spark)."""
    from udfs.compute.one_graph import compute_one

    _, _, vertices, _ = compute_one(spec)
    return vertices_from_frame(vertices)


@dataclass
class FlinkAnswer:
    verdict: str  # RESTORES | FAILS
    failure: str | None
    operator_id: str | None
    message: str | None
    stage: str | None  # job_init | task | None


def flink_answer(case: dict[str, Any], allow: bool) -> FlinkAnswer:
    sfx = "_allow_non_restored" if allow else ""
    verdict = case["verdict" + sfx]
    if verdict == "RESTORED":
        return FlinkAnswer(rr.RESTORES, None, None, None, None)
    msg = case["error_message" + sfx] or ""
    stage = case["failure_stage" + sfx]
    kind = next((k for text, k in _KINDS if text in msg), None)
    if stage != "job_init" or kind is None:
        kind = "TASK:" + str(case["error_class" + sfx])
    m = _ID.search(msg)
    return FlinkAnswer(rr.FAILS, kind, m.group(0) if m else None, msg, stage)


@dataclass
class Agreement:
    """Per aspect: cases compared, cases agreeing; and the task-stage failures counted apart."""

    compared: int = 0
    agree: dict[str, int] = field(default_factory=lambda: {a: 0 for a in ASPECTS})
    mismatches: list[str] = field(default_factory=list)
    task_stage: list[str] = field(default_factory=list)

    def all_agree(self) -> bool:
        return all(v == self.compared for v in self.agree.values())


def compare_case(
    case: dict[str, Any], saved: list[rr.SavedOperator], vertices: list[rr.NewVertex], allow: bool, agg: Agreement
) -> rr.Decision:
    prof = restore_profile(case["flink_version"])
    ours = rr.decide(saved, vertices, allow, prof, PLACEHOLDER)
    flink = flink_answer(case, allow)
    label = f"{case['case_id']} allow={allow}"
    if flink.stage == "task":
        agg.task_stage.append(f"{label}: Flink {flink.failure} in a task; tool says {ours.verdict}")
        return ours
    agg.compared += 1
    got = {a: getattr(ours, a) for a in ASPECTS}
    want = {a: getattr(flink, a) for a in ASPECTS}
    for a in ASPECTS:
        if got[a] == want[a]:
            agg.agree[a] += 1
        else:
            agg.mismatches.append(f"{label} {a}: tool {got[a]!r} vs Flink {want[a]!r}")
    return ours


def run_agreement(
    cases: Iterable[dict[str, Any]], metadata: dict[str, bytes] | None
) -> tuple[Agreement, Agreement, int]:
    """(agreement without, with allowNonRestoredState, cases read through the _metadata reader)."""
    without, with_allow = Agreement(), Agreement()
    via_reader = 0
    for case in cases:
        data = metadata.get(case["savepoint_metadata"]) if metadata else None
        if data is not None:
            saved = saved_from_metadata(data)
            via_reader += 1
        else:
            saved = saved_from_recorded(case)
        vertices = compute_vertices(case["v2"])
        compare_case(case, saved, vertices, False, without)
        compare_case(case, saved, vertices, True, with_allow)
    return without, with_allow, via_reader


def view_of(spec: dict[str, Any]) -> Any:
    """A job version's GraphView by the project's own per-graph computation (no Spark)."""
    import pandas as pd

    from udfs.compute.one_graph import compute_one
    from udfs.restore.fixes import graph_view

    nodes, operators, _, _ = compute_one(spec)
    edges = pd.DataFrame(spec.get("edges", []), columns=["source", "target"])
    return graph_view(nodes, edges, operators, spec.get("chaining_enabled", True))


def apply_patches(spec: dict[str, Any], patches: Iterable[tuple[int, str, object]]) -> dict[str, Any]:
    """A copy of ``spec`` with node fields set (a fix as the user would write it in code)."""
    out = json.loads(json.dumps(spec))
    by_id = {n["id"]: n for n in out["nodes"]}
    for node_id, fld, value in patches:
        by_id[node_id][fld] = value
    return out


def fixes_for(case: dict[str, Any], saved: list[rr.SavedOperator]) -> list[Any]:
    """The explained fixes for every problem of the case's v2 (not only the first that Flink reports)."""
    from udfs.restore.fixes import explain, max_parallelism_fix, parallelism_fixes

    vertices = compute_vertices(case["v2"])
    probs = rr.all_problems(saved, vertices)
    old, new = view_of(case["v1"]), view_of(case["v2"])
    heads = {n.jobvertex_id: n.node_id for n in new.nodes if n.operator_id == n.jobvertex_id}
    out = [explain(saved[i].operator_id, old, new) for i in probs.unmapped]
    out += [
        max_parallelism_fix(saved[i].operator_id, saved[i].max_parallelism, new, heads[v.jobvertex_id])
        for i, v in probs.max_parallelism
    ]
    for v, lowest in probs.parallelism:
        out += parallelism_fixes(v.jobvertex_id, lowest, new)
    return out


def prove_fixes(case: dict[str, Any], saved: list[rr.SavedOperator], rounds: int = 3) -> tuple[list[Any], rr.Decision]:
    """Apply the fixes to v2, recompute its JobGraph, decide again; a fix can uncover the next problem
    (a pinned operator now maps into a vertex with another max parallelism), so up to ``rounds`` rounds."""
    from udfs.restore.fixes import ALLOW_NON_RESTORED, dedupe

    prof = restore_profile(case["flink_version"])
    spec, fixes = case["v2"], []
    for _ in range(rounds):
        new = fixes_for({**case, "v2": spec}, saved)
        if not new:
            break
        fixes = dedupe(fixes + new)
        spec = apply_patches(case["v2"], [f.patch for f in fixes if f.patch])
    allow = any(f.fix_code == ALLOW_NON_RESTORED for f in fixes)
    return fixes, rr.decide(saved, compute_vertices(spec), allow, prof, PLACEHOLDER)


def write_case_fleet(cases: Iterable[dict[str, Any]], metadata: dict[str, bytes], folder: str | Path) -> Path:
    """A user's layout of the cases: ``graphs.jsonl`` (v1 and v2 specs), ``savepoints/<case>/_metadata``,
    and ``checks.jsonl`` (each case with and without allowNonRestoredState; savepoint paths relative)."""
    folder = Path(folder)
    (folder / "graphs").mkdir(parents=True, exist_ok=True)
    checks = []
    with open(folder / "graphs" / "graphs.jsonl", "w") as g:
        for c in cases:
            g.write(json.dumps(c["v1"]) + "\n")
            g.write(json.dumps(c["v2"]) + "\n")
            sp = folder / "savepoints" / c["case_id"]
            sp.mkdir(parents=True, exist_ok=True)
            (sp / "_metadata").write_bytes(metadata[c["savepoint_metadata"]])
            for allow in (False, True):
                checks.append({
                    "check_id": f"{c['case_id']}/{'allow' if allow else 'strict'}",
                    "savepoint": f"savepoints/{c['case_id']}",
                    "graph_id": c["v2"]["graph_id"],
                    "allow_non_restored_state": allow,
                    "savepoint_graph_id": c["v1"]["graph_id"],
                })  # fmt: skip
    (folder / "checks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in checks))
    return folder
