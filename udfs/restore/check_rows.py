"""One restore check, from the rows Spark groups for it to the rows of the three result tables.

The Spark side (``pipeline/restore/check.py``) hands each check its rows as (kind, JSON
payload) pairs: the check itself, the savepoint's operators, the new graph's job vertices and
operators, its stream rows (graph, nodes, edges: the graph as the contract checks read it),
and the same for the job version that took the savepoint when the manifest names it. This
module decides (:mod:`udfs.restore.rules`), explains and proposes fixes
(:mod:`udfs.restore.fixes`), proves the fixes by computing the patched graph with the
pipeline's own per-graph code and deciding again, and returns (table, JSON row) pairs. No Spark
here.

A check is a generator that yields each patched graph it needs computed and receives its
records (:func:`udfs.compute.one_graph.compute_many`): :func:`check_rows_many` runs a
partition's checks in lockstep and computes each round's patched graphs as one batch: one graph
at a time, the proofs were half of a fleet's decide (docs/performance.md).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from udfs.compute.one_graph import GraphRecords, compute_many
from udfs.errors import CodedError
from udfs.restore import fixes as rf
from udfs.restore import rules as rr
from udfs.restore import state_rules as sr
from udfs.restore.state_fixes import advice_for
from udfs.restore.state_warnings import WARNING_FIELDS, RestoreWarning
from udfs.savepoint.state_streams import StreamHead, operator_states
from udfs.spec.contract import graph_spec_fields, node_spec_fields

NODE_FIELDS = ["node_id", "name", "uid", "uid_hash", "chaining_strategy", "max_parallelism"]
OPERATOR_FIELDS = ["node_id", "operator_id", "user_operator_id", "jobvertex_id", "chain_index"]
VERTEX_FIELDS = ["jobvertex_id", "parallelism", "max_parallelism", "operator_ids", "user_operator_ids", "vertex_order"]
# The columns every result row starts with, whichever table it belongs to.
CHECK_KEY = ("check_id", "savepoint", "graph_id")
# The reason a fix row carries when the check restores only because allowNonRestoredState drops
# the operator's state: the fix keeps that state.
STATE_DROPPED = "STATE_DROPPED_BY_ALLOW_NON_RESTORED_STATE"
# A fix can uncover the next problem: the patched graph is decided again, up to this many rounds.
PROOF_ROUNDS = 3


def _view(items: dict[str, list[dict]], prefix: str, chaining_enabled: bool) -> rf.GraphView | None:
    if not items.get(prefix + "op"):
        return None
    edges = sorted(items.get(prefix + "edge", []), key=lambda e: e.get("edge_idx", 0))
    return rf.graph_view_of_records(
        items.get(prefix + "node", []), [(e["source"], e["target"]) for e in edges], items[prefix + "op"],
        chaining_enabled,
    )  # fmt: skip


def saved_operators(items: list[dict]) -> list[rr.SavedOperator]:
    return [rr.SavedOperator.from_dict(r) for r in sorted(items, key=lambda r: r["operator_index"])]


def vertices(items: list[dict]) -> list[rr.NewVertex]:
    return [rr.NewVertex.from_dict(r) for r in items]


def external_pointer(check: dict[str, Any], sp_rows: list[dict]) -> str:
    """The savepoint as Flink names it in its messages: the folder that holds ``_metadata``,
    qualified by its file system (``file:/data/savepoints/savepoint-1``), whether the folder, its
    ``_metadata`` or a ``file:///`` URI was given (``AbstractFsCheckpointStorageAccess
    .resolveCheckpointPointer``: ``checkpointDir.makeQualified(fs).toString()``)."""
    path = next((r.get("metadata_path") for r in sp_rows if r.get("metadata_path")), None)
    if not path:
        return str(check.get("savepoint"))
    folder = path.rsplit("/", 1)[0]
    return "file:" + folder[len("file://") :] if folder.startswith("file:///") else folder


def spec_of(graph: dict[str, Any], nodes: list[dict], edges: list[dict]) -> dict[str, Any]:
    """The spec (SPEC section 1) of a graph from its stream rows: every field as the contract
    checks read it (defaults applied; the JSON-text fields as objects again), edges in their
    spec order."""
    spec = graph_spec_fields({k: v for k, v in graph.items() if k != "source_file"})
    spec["nodes"] = [
        node_spec_fields({("id" if k == "node_id" else k): v for k, v in n.items() if k != "graph_id"}) for n in nodes
    ]
    ordered = sorted(edges, key=lambda e: e["edge_idx"])
    spec["edges"] = [{k: v for k, v in e.items() if k not in ("graph_id", "edge_idx")} for e in ordered]
    return spec


def _patched(spec: dict[str, Any], patches: list[tuple[int, str, object]]) -> dict[str, Any]:
    nodes = {n["id"]: dict(n) for n in spec["nodes"]}
    for node_id, fld, value in patches:
        nodes[node_id][fld] = int(str(value)) if fld in ("parallelism", "max_parallelism") else value
    return {**spec, "nodes": list(nodes.values())}


# What a check receives for a patched graph it yielded: the graph's records, or why there are none.
Computed = GraphRecords | Exception
Rows = list[tuple[str, str]]
T = TypeVar("T")


def check_rows(kinds: Iterable[str], payloads: Iterable[str], prove: bool = True) -> Rows:
    """(table, JSON row) results of one check, decided by the rules of the new graph's Flink
    line; ``prove``: recompute the graph with the proposed fixes and decide again."""
    return run_alone(_check_steps(kinds, payloads, prove))


def check_rows_many(checks: list[tuple[Iterable[str], Iterable[str]]], prove: bool = True) -> list[Rows | Exception]:
    """:func:`check_rows` of each (kinds, payloads) check, or the exception its own steps
    raised (one check never fails another); the patched graphs of every proof round in one
    batch."""
    return run_batched([_check_steps(k, p, prove) for k, p in checks])


def run_batched(steps: list[Generator[dict[str, Any], Computed, T]]) -> list[T | Exception]:
    """Runs generators that yield spec graphs to compute, in lockstep: each round's graphs go to
    one :func:`compute_many`, each generator gets its graph's records back, until every one has
    returned (its value) or raised (its exception). A batch that raises as a whole (a bug
    outside one graph's steps) is computed again graph by graph, so the bug stays with its
    check."""
    results: list[T | Exception | None] = [None] * len(steps)
    waiting: dict[int, dict[str, Any]] = {}

    def advance(i: int, value: Computed | None) -> None:
        try:
            waiting[i] = steps[i].send(value)
        except StopIteration as stop:
            results[i] = stop.value
        except Exception as e:  # noqa: BLE001 - the check's own failure, reported as its row
            results[i] = e

    for i in range(len(steps)):
        advance(i, None)
    while waiting:
        batch = list(waiting.items())
        waiting.clear()
        try:
            computed = compute_many([spec for _, spec in batch])
        except Exception:  # noqa: BLE001
            computed = [_alone(spec) for _, spec in batch]
        for (i, _), got in zip(batch, computed, strict=True):
            advance(i, got)
    return results  # type: ignore[return-value]


def _alone(spec: dict[str, Any]) -> Computed:
    try:
        return compute_many([spec])[0]
    except Exception as e:  # noqa: BLE001
        return e


def run_alone(steps: Generator[dict[str, Any], Computed, T]) -> T:
    """One generator of :func:`run_batched` (one check, or one check's proof), its graphs
    computed one at a time; its exception raised."""
    return _raised(run_batched([steps])[0])


def _raised(value: T | Exception) -> T:
    if isinstance(value, Exception):
        raise value
    return value


def _check_steps(
    kinds: Iterable[str], payloads: Iterable[str], prove: bool
) -> Generator[dict[str, Any], Computed, Rows]:
    items: dict[str, list[dict]] = {}
    for k, p in zip(kinds, payloads, strict=True):
        items.setdefault(k, []).append(json.loads(p))
    check = items["check"][0]
    head = {k: check.get(k) for k in CHECK_KEY}
    prof, reason = _profile(check, items)
    if prof is None:  # the reason is the message too: an ERROR row always says why
        row = {**head, "verdict": rr.ERROR, "failure": reason, "operator_id": None, "message": reason,
               "dropped_operator_ids": [], "savepoint_graph_id": check.get("savepoint_graph_id")}  # fmt: skip
        return [("restore_checks", json.dumps(row))]

    saved = saved_operators(items["sp"])
    new_vertices = vertices(items["vx"])
    allow = bool(check.get("allow_non_restored_state"))
    d = rr.decide(saved, new_vertices, allow, prof, external_pointer(check, items["sp"]))
    out = _decision_rows(head, check, items, d, saved)
    new = _view(items, "", bool(check.get("chaining_enabled", True)))
    old = _view(items, "old_", bool(check.get("old_chaining_enabled", True)))
    out += _match_rows(head, d, saved, new)
    if new is None:
        return out
    fixes = plan_fixes(saved, new_vertices, old, new, items.get("sp", []))
    proof = None
    if prove and fixes and items.get("graph"):
        spec = spec_of(items["graph"][0], items.get("node", []), items.get("edge", []))
        pointer = external_pointer(check, items["sp"])
        proof = yield from proof_steps(spec, fixes, saved, allow, prof, pointer, old, items.get("sp", []))
    # With allowNonRestoredState the job starts, and the state of the operators it cannot map is
    # dropped: the fixes then say how to keep that state, and say so.
    dropped = d.dropped_operator_ids if d.verdict == rr.RESTORES and allow else []
    for f, rnd in proof.fixes if proof else [(f, 1) for f in fixes]:
        row = {**fix_row(head, f), "proof_round": rnd, "verified": None, "verified_verdict": None,
               "verified_failure": None}  # fmt: skip
        if f.operator_id in dropped:
            row["reasons"] = [STATE_DROPPED, *row["reasons"]]
        if proof:
            row.update(verified=proof.verdict == rr.RESTORES, verified_verdict=proof.verdict,
                       verified_failure=proof.failure)  # fmt: skip
        out.append(("restore_fixes", json.dumps(row)))
    return out


def _profile(check: dict[str, Any], items: dict[str, list[dict]]) -> tuple[rr.RestoreProfile | None, str | None]:
    """The restore rules of the new graph's Flink line, or why the check cannot be decided."""
    reason = check.get("error")
    if reason is None and not items.get("vx"):
        reason = "unknown graph: no job vertices for " + str(check.get("graph_id"))
    if reason is None and not items.get("sp"):
        reason = "savepoint has no operator states: " + str(check.get("savepoint"))
    version = check.get("flink_version")
    prof = rr.RestoreProfile.for_line(version)
    if reason is None and prof is None:
        reason = f"no restore rules for Flink {version}"
    return (prof, None) if reason is None else (None, reason)


def _decision_rows(
    head: dict[str, Any], check: dict[str, Any], items: dict[str, list[dict]], d: rr.Decision,
    saved: list[rr.SavedOperator],
) -> Rows:  # fmt: skip
    """The check's ``restore_checks`` row (both halves), and the state half's problems and advice."""
    state = _state_half(check, items, d, saved)
    row = restore_check_row(head, d.verdict, d.failure, d.operator_id, d.message, d.dropped_operator_ids, state)
    row["savepoint_graph_id"] = check.get("savepoint_graph_id")
    out = [("restore_checks", json.dumps(row))]
    if state is not None:
        out += [("restore_state_problems", json.dumps(problem_row(head, p))) for p in state.problems]
        out += [("restore_fixes", json.dumps(f)) for f in fix_rows(head, state.problems)]
        out += [("restore_warnings", json.dumps(warning_row(head, w))) for w in state.warnings]
        if "sv" not in items:  # the first pass: the streams whose bytes a second pass reads
            out += [(VALUE_REQUESTS, json.dumps({**head, "operator_id": r.operator_id, "stream_kind": r.stream_kind}))
                    for r in state.value_requests]  # fmt: skip
    return out


# The pseudo-table of a first pass: (check key, operator_id, stream_kind) whose stream bytes the
# state half needs (pipeline/restore/check.py reads them and decides those checks again).
VALUE_REQUESTS = "value_requests"


def value_source(rows: list[dict]) -> sr.ValueSource:
    """The ``sv`` rows a second pass gets (operator_id, stream_kind, subtask, the stream's bytes
    in base64, whether the reader's bound cut them short) as the state half's :class:`ValueSource`."""
    streams: dict[tuple[str, str], dict[int, bytes]] = {}
    cut = set()
    for r in rows:
        key = (r["operator_id"], r["stream_kind"])
        data = r.get("data")
        if data is None:
            continue
        streams.setdefault(key, {})[int(r["subtask"])] = base64.b64decode(data)
        if r.get("truncated"):
            cut.add((*key, int(r["subtask"])))
    return sr.ValueSource(streams, frozenset(cut))


def _match_rows(head: dict[str, Any], d: rr.Decision, saved: list[rr.SavedOperator], new: rf.GraphView | None) -> Rows:
    """``restore_operator_matches``: each saved operator, what became of it and the node it went to."""
    nodes = {n.operator_id: n for n in new.nodes} if new else {}
    out = []
    for o in d.operators:
        s = saved[o.operator_index]
        n = nodes.get(o.generated_operator_id) if o.generated_operator_id else None
        row = {**head, "operator_index": o.operator_index, "operator_id": o.operator_id, "has_state": s.has_state,
               "state_size": s.state_size, "saved_max_parallelism": s.max_parallelism, "status": o.status,
               "matched_via": o.matched_via, "jobvertex_id": o.jobvertex_id, "node_id": n.node_id if n else None,
               "name": n.name if n else None, "uid": n.uid if n else None}  # fmt: skip
        out.append(("restore_operator_matches", json.dumps(row)))
    return out


def _unreadable_streams(decision: sr.StateDecision, states: dict[str, Any], matched: dict[str, sr.NewOperator]) -> None:
    """A state stream of a restored operator that could not be read (a state file missing where
    the savepoint says, truncated, corrupt) leaves its types unknown: one NOT_DECIDABLE problem
    naming the file. (Flink itself would fail that restore in the task if the file is missing
    where it reads; a savepoint copied without its state files is the usual cause.)"""
    for op_id in matched:
        for error in states[op_id].errors if op_id in states else []:
            decision.problems.append(
                sr.StateProblem(
                    verdict=sr.NOT_DECIDABLE,
                    failure=sr.STATE_UNREADABLE,
                    operator_id=op_id,
                    state_name=None,
                    undecidable_reason=f"state stream {error}",
                    basis=["savepoint"],
                    certain=False,
                )
            )
            if decision.verdict == sr.RESTORES:
                decision.verdict = sr.NOT_DECIDABLE


def _state_half(
    check: dict[str, Any], items: dict[str, list[dict]], d: rr.Decision, saved: list[rr.SavedOperator]
) -> sr.StateDecision | None:
    """The state half of the check (:mod:`udfs.restore.state_rules`): the saved state types of
    every operator the new job restores (the topology half's matches) against what the new
    graph says of its types (the key serializer per keyed node, the user classes, the backend).
    None when the savepoint's state streams were not read."""
    heads = sorted(items.get("st", []), key=lambda r: (r["operator_index"], r["subtask"], r["stream_kind"]))
    if not heads:
        return None
    states = operator_states(StreamHead.from_row(r) for r in heads)
    graph = (items.get("graph") or [{}])[0]
    old_graph = (items.get("old_graph") or [{}])[0]
    nodes = {int(n["node_id"]): {**n, "id": n["node_id"]} for n in items.get("node", [])}
    ops = {o["operator_id"]: o for o in items.get("op", [])}
    order = {v["jobvertex_id"]: int(v.get("vertex_order") or 0) for v in items.get("vx", [])}
    parallelism = {v["jobvertex_id"]: v.get("parallelism") for v in items.get("vx", [])}
    matched: dict[str, sr.NewOperator] = {}
    for o in d.operators:
        op = ops.get(o.generated_operator_id or "")
        if o.status == rr.MATCHED and op is not None:
            node = nodes.get(int(op["node_id"]), {})
            vx = op["jobvertex_id"]
            matched[o.operator_id] = sr.NewOperator.from_rows(op, node, order.get(vx, 0), parallelism.get(vx))
    formats = {r.get("format_version") for r in items.get("sp", [])}
    target = check.get("target_flink") or check.get("flink_version")
    ctx = sr.StateContext(
        saved_major=sr.savepoint_major(next(iter(formats), None), check.get("old_flink_version")),
        target_major=sr.line_major(target),
        restore_backend=sr.backend_family(graph.get("state_backend")),
        modules=_modules(graph),
        target_line=target,
    )
    decision = sr.decide_states(
        states, matched, ctx, _class_facts(graph), _class_facts(old_graph), [s.operator_id for s in saved],
        value_source(items["sv"]) if "sv" in items else None,
    )  # fmt: skip
    _unreadable_streams(decision, states, matched)
    return decision


def restore_check_row(
    head: Mapping[str, Any],
    verdict: str,
    failure: str | None,
    operator_id: str | None,
    message: str | None,
    dropped: Sequence[str],
    state: sr.StateDecision | None,
) -> dict[str, Any]:
    """A ``restore_checks`` row from the topology half's result and the state half's decision,
    with SPEC section 5's columns and meaning unchanged and the state half's columns added. The
    JobMaster's checks run before any task: a topology failure is the one reported (stage
    ``job_init``). Else a state failure is (its kind, operator, message, stage). ``verdict`` keeps
    its three values: when the state half cannot decide, the row says RESTORES (nothing certainly
    fails) with ``decidable`` false and the reasons."""
    row: dict[str, Any] = {
        **head,
        "verdict": verdict,
        "failure": failure,
        "operator_id": operator_id,
        "message": message,
        "dropped_operator_ids": list(dropped),
        "failure_stage": sr.JOB_INIT if verdict == sr.FAILS else None,
        "state_name": None,
        "error_class": None,
        "decidable": True,
        "undecidable_reasons": None,
        "taken_as_unchanged": None,
        "states_checked_in_user_code": None,
        "loss_warnings": None,
    }
    if state is None or verdict != sr.RESTORES:
        return row
    row["taken_as_unchanged"] = list(state.taken_as_unchanged)
    row["states_checked_in_user_code"] = len(state.depends_on_user_code)
    row["loss_warnings"] = len(state.warnings)
    if state.verdict == sr.FAILS:
        # the reported state failure, in the topology half's columns and the state half's
        row.update(verdict=sr.FAILS, failure=state.failure, operator_id=state.operator_id, message=state.message)
        row.update(failure_stage=state.failure_stage, state_name=state.state_name, error_class=state.error_class)
        row["undecidable_reasons"] = [f"{k}: {v}" for k, v in state.uncertain.items()] or None
    elif state.verdict == sr.NOT_DECIDABLE:
        row["decidable"] = False
        row["undecidable_reasons"] = sorted(
            {f"{p.failure}: {p.undecidable_reason}" for p in state.problems if p.verdict == sr.NOT_DECIDABLE}
        )
    return row


def warning_row(head: Mapping[str, Any], w: RestoreWarning) -> dict[str, Any]:
    """A ``restore_warnings`` row: the check key, then the silent loss (:mod:`udfs.restore.state_warnings`)."""
    return {**head, **{f: list(v) if isinstance(v := getattr(w, f), list) else v for f in WARNING_FIELDS}}


def problem_row(head: Mapping[str, Any], p: sr.StateProblem) -> dict[str, Any]:
    """A ``restore_state_problems`` row: the check key, then every field of the problem."""
    row = dict(head)
    for f in fields(p):
        v = getattr(p, f.name)
        row[f.name] = list(v) if f.name == "order" else (dict(v) if isinstance(v, dict) else v)
    return row


# what only a spec fix has (a counterpart, a patch, the proof of the patched graph): null in advice rows
_SPEC_FIX_ONLY = dict.fromkeys(
    ("old_node_id", "old_name", "old_uid", "counterpart_node_id", "counterpart_name", "counterpart_uid",
     "counterpart_operator_id", "patch_node_id", "patch_field", "patch_value", "proof_round", "verified",
     "verified_verdict", "verified_failure")
)  # fmt: skip


def fix_rows(
    head: Mapping[str, Any], problems: Iterable[sr.StateProblem], old_types: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """``restore_fixes`` rows for the state problems that fail or cannot be decided: one per advice
    (:mod:`udfs.restore.state_fixes`), what the advice rests on in ``advice_basis``."""
    out = []
    for p in problems:
        if p.verdict == sr.RESTORES:
            continue
        for a in advice_for(p, old_types):
            out.append(
                {
                    **head,
                    **_SPEC_FIX_ONLY,
                    "operator_id": p.operator_id,
                    "reasons": list(dict.fromkeys(r for r in (p.failure, p.cause) if r)),
                    "fix_code": a.text,
                    "state_name": p.state_name,
                    "field_path": p.field_path,
                    "advice_code": a.code,
                    "advice_basis": a.verified,
                    "needs_real_restore": a.needs_real_restore,
                    "evidence": a.evidence,
                }
            )
    return out


def _modules(graph: dict[str, Any]) -> dict[str, bool] | None:
    raw = graph.get("serializer_modules")
    return json.loads(raw) if isinstance(raw, str) else raw


def _class_facts(graph: dict[str, Any]) -> dict[str, sr.ClassFacts]:
    raw = graph.get("user_classes")
    facts = json.loads(raw) if isinstance(raw, str) else (raw or {})
    return {name: sr.ClassFacts.from_dict(name, f) for name, f in facts.items()}


@dataclass
class Proof:
    """The fixes of every round (with the round that proposed each) and what Flink would do
    with the graph that has all of them applied."""

    fixes: list[tuple[rf.Fix, int]]
    verdict: str
    failure: str | None
    rounds: int


def proof_steps(
    spec: dict[str, Any],
    fixes: list[rf.Fix],
    saved: list[rr.SavedOperator],
    allow: bool,
    prof: rr.RestoreProfile,
    savepoint: str,
    old: rf.GraphView | None,
    sp_rows: list[dict],
) -> Generator[dict[str, Any], Computed, Proof]:
    """Apply every fix to the new graph, compute it again as the pipeline does (yielded, its
    records sent back), decide again; a fix can uncover the next problem, whose fixes join the
    next round (up to PROOF_ROUNDS). A fix that drops state (``--allowNonRestoredState``) is
    proven with that flag set. One check's proof alone: ``run_alone(proof_steps(...))``."""
    proven: list[tuple[rf.Fix, int]] = [(f, 1) for f in fixes]
    verdict, failure, rnd = rr.ERROR, None, 0
    edges = [(e["source"], e["target"]) for e in spec["edges"]]
    for rnd in range(1, PROOF_ROUNDS + 1):
        patches = [p for f, _ in proven for p in f.patches]
        with_allow = allow or any(f.fix_code == rf.ALLOW_NON_RESTORED for f, _ in proven)
        got = yield _patched(spec, patches)
        if isinstance(got, CodedError):  # the patched graph is one Flink would not build
            verdict, failure = rr.ERROR, f"patched graph rejected: {got.code}: {got}"
            break
        graph = _raised(got)
        new_vertices = vertices(graph.vertices)
        d = rr.decide(saved, new_vertices, with_allow, prof, savepoint)
        verdict, failure = d.verdict, d.failure
        if verdict == rr.RESTORES or rnd == PROOF_ROUNDS:
            break
        view = rf.graph_view_of_records(graph.nodes, edges, graph.operators, spec["chaining_enabled"])
        have = {_fix_key(f) for f, _ in proven}
        more = [f for f in plan_fixes(saved, new_vertices, old, view, sp_rows) if _fix_key(f) not in have]
        if not more:
            break
        proven += [(f, rnd + 1) for f in more]
    return Proof(proven, verdict, failure, rnd)


def _fix_key(f: rf.Fix) -> tuple:
    return (f.operator_id, f.fix_code, f.patch[0] if f.patch else None, f.patch[1] if f.patch else None)


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
    return rf.with_old_names(rf.environment_max_parallelism_fix(rf.dedupe(fixes), new), old)


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
        "patch_node_id": f.patch[0] if f.patch and not f.also else None,  # None: every node (the environment)
        "patch_field": f.patch[1] if f.patch else None,
        "patch_value": str(f.patch[2]) if f.patch else None,
    }
