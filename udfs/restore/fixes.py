"""Why a saved operator's state is lost in the new job, and the one line that keeps it.

Flink's generated operator ID is a hash of exactly three things (``StreamGraphHasherV2``):
the node's breadth-first position (``hashes.size()`` when it is hashed), its number of
chainable outputs, and the hashes of its inputs; a ``uid`` replaces all that by the hash of
the uid. So, for a saved operator whose ID no new operator has, the counterpart in the new
job (same uid, else same name at the same rank) tells why the ID changed, by elimination:
the uid was removed or edited or added, chaining was switched, the chainable-output count
changed, an input's ID changed (upstream change), or else the position shifted.

The fix: ``.uid("<old uid>")`` where the old ID was a uid's hash (the uid gives the same
ID back), else ``.setUidHash("<old id>")`` (a user-defined ID that Flink matches state
against, leaving the generated ID and therefore every downstream ID alone). The pipeline
proves each fix by recomputing the patched graph and deciding again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

UID_REMOVED = "UID_REMOVED"
UID_CHANGED = "UID_CHANGED"
UID_ADDED = "UID_ADDED"
UID_HASH_CHANGED = "UID_HASH_CHANGED"
CHAINING_SWITCHED = "CHAINING_SWITCHED"
CHAINABLE_OUTPUTS_CHANGED = "CHAINABLE_OUTPUTS_CHANGED"
UPSTREAM_CHANGED = "UPSTREAM_CHANGED"
POSITION_SHIFTED = "POSITION_SHIFTED"
OPERATOR_REMOVED = "OPERATOR_REMOVED"
MAX_PARALLELISM_CHANGED = "MAX_PARALLELISM_CHANGED"
PARALLELISM_ABOVE_SAVED_MAX = "PARALLELISM_ABOVE_SAVED_MAX"
UNKNOWN_ORIGIN = "UNKNOWN_ORIGIN"
# No counterpart: the operator is gone, so only dropping its state lets the job start.
ALLOW_NON_RESTORED = "--allowNonRestoredState"  # the savepoint's job version is not among the graphs


@dataclass(frozen=True)
class GraphNode:
    node_id: int
    name: str
    uid: str | None
    uid_hash: str | None
    chaining_strategy: str
    operator_id: str
    user_operator_id: str | None
    jobvertex_id: str
    inputs: tuple[int, ...]  # source node ids of the in-edges
    outputs: tuple[int, ...]
    max_parallelism: int = -1  # as configured in the spec (-1: not set)


@dataclass(frozen=True)
class GraphView:
    """One job version: its nodes with computed IDs, in node-id order."""

    chaining_enabled: bool
    nodes: Sequence[GraphNode]

    def by_id(self) -> dict[int, GraphNode]:
        return {n.node_id: n for n in self.nodes}

    def with_operator_id(self, operator_id: str) -> GraphNode | None:
        for n in self.nodes:
            if n.user_operator_id == operator_id:
                return n
        return next((n for n in self.nodes if n.operator_id == operator_id), None)

    def chained_outputs(self, n: GraphNode) -> int:
        nodes = self.by_id()
        return sum(1 for t in n.outputs if t in nodes and nodes[t].jobvertex_id == n.jobvertex_id)

    def name_rank(self, n: GraphNode) -> int:
        return [m.node_id for m in self.nodes if m.name == n.name].index(n.node_id)


@dataclass
class Fix:
    operator_id: str  # the saved operator
    old_node_id: int | None
    old_name: str | None
    old_uid: str | None
    counterpart_node_id: int | None
    counterpart_name: str | None
    counterpart_uid: str | None
    counterpart_operator_id: str | None
    reasons: list[str] = field(default_factory=list)
    fix_code: str | None = None
    # How to patch the new spec to apply the fix: (node_id, field, value); ``also``: more nodes
    # patched the same way by the one line (a setting of the environment applies to every node).
    patch: tuple[int, str, object] | None = None
    also: tuple[tuple[int, str, object], ...] = ()

    @property
    def patches(self) -> list[tuple[int, str, object]]:
        return ([self.patch] if self.patch is not None else []) + list(self.also)


def counterpart(old: GraphNode, old_graph: GraphView, new: GraphView) -> GraphNode | None:
    """Most likely new node for ``old``: same uid; else same name at the same rank; else the only same name."""
    if old.uid:
        same_uid = [n for n in new.nodes if n.uid == old.uid]
        if same_uid:
            return same_uid[0]
    same_name = [n for n in new.nodes if n.name == old.name]
    rank = old_graph.name_rank(old)
    if rank < len(same_name):
        return same_name[rank]
    return same_name[0] if len(same_name) == 1 else None


def explain(
    operator_id: str,
    old_graph: GraphView | None,
    new: GraphView,
    saved_name: str | None = None,
    saved_uid: str | None = None,
) -> Fix:
    """Counterpart, reasons and the fix for one saved operator state that the new job does not map."""
    old = old_graph.with_operator_id(operator_id) if old_graph is not None else None
    if old is None:
        # Only what the savepoint itself says (2.0+ formats carry name and uid).
        cand = [n for n in new.nodes if saved_uid and n.uid == saved_uid] or [
            n for n in new.nodes if saved_name and n.name == saved_name
        ]
        c = cand[0] if len(cand) == 1 else None
        fix = Fix(operator_id, None, saved_name, saved_uid, *_cp(c), reasons=[UNKNOWN_ORIGIN])
        if c is not None:
            fix.fix_code = f'.setUidHash("{operator_id}")'
            fix.patch = (c.node_id, "uid_hash", operator_id)
        return fix
    c = counterpart(old, old_graph, new)
    fix = Fix(operator_id, old.node_id, old.name, old.uid, *_cp(c))
    if c is None:
        fix.reasons = [OPERATOR_REMOVED]
        fix.fix_code = ALLOW_NON_RESTORED
        return fix
    if old.user_operator_id == operator_id:
        fix.reasons = [UID_HASH_CHANGED]
    elif old.uid and not c.uid:
        fix.reasons = [UID_REMOVED]
    elif old.uid and c.uid != old.uid:
        fix.reasons = [UID_CHANGED]
    elif old.uid:
        fix.reasons = [UID_HASH_CHANGED]
    elif c.uid:
        fix.reasons = [UID_ADDED]
    else:
        fix.reasons = _generated_reasons(old, old_graph, c, new)
    if old.uid and old.user_operator_id != operator_id and not c.user_operator_id and _downstream_pinned(c, new):
        fix.fix_code = f'.uid("{old.uid}")'
        fix.patch = (c.node_id, "uid", old.uid)
    else:
        fix.fix_code = f'.setUidHash("{operator_id}")'
        fix.patch = (c.node_id, "uid_hash", operator_id)
    return fix


def _downstream_pinned(c: GraphNode, new: GraphView) -> bool:
    """True when no node downstream of ``c`` hashes its inputs: a new uid on ``c`` then moves no other ID."""
    nodes, todo, seen = new.by_id(), list(c.outputs), set()
    while todo:
        n = nodes.get(todo.pop())
        if n is None or n.node_id in seen:
            continue
        seen.add(n.node_id)
        if not n.uid:
            return False
        todo.extend(n.outputs)
    return True


def dedupe(fixes: list[Fix]) -> list[Fix]:
    """One fix per patched node field (several saved operators of one vertex give the same fix)."""
    seen: set = set()
    out = []
    for f in fixes:
        key = f.patch if f.patch is not None else (f.operator_id, f.fix_code)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _cp(c: GraphNode | None) -> tuple[int | None, str | None, str | None, str | None]:
    return (None, None, None, None) if c is None else (c.node_id, c.name, c.uid, c.operator_id)


def _generated_reasons(old: GraphNode, old_graph: GraphView, c: GraphNode, new: GraphView) -> list[str]:
    reasons = []
    if old_graph.chaining_enabled != new.chaining_enabled or old.chaining_strategy != c.chaining_strategy:
        reasons.append(CHAINING_SWITCHED)
    if old_graph.chained_outputs(old) != new.chained_outputs(c):
        reasons.append(CHAINABLE_OUTPUTS_CHANGED)
    old_in = sorted(old_graph.by_id()[i].operator_id for i in old.inputs)
    new_in = sorted(new.by_id()[i].operator_id for i in c.inputs)
    if old_in != new_in:
        reasons.append(UPSTREAM_CHANGED)
    # The hash's only other input is the breadth-first position.
    return reasons or [POSITION_SHIFTED]


def _int_or(value: object, default: int) -> int:
    """An int column's value from pandas (NaN / None where a frame had no value)."""
    return default if value is None or value != value else int(value)


def graph_view(nodes, edges, operators, chaining_enabled: bool) -> GraphView:  # noqa: ANN001 (pandas frames)
    """A job version from its ``stream_nodes``-like, ``stream_edges``-like and ``operators`` frames."""
    return graph_view_of_records(
        nodes.to_dict("records"), list(zip(edges["source"], edges["target"], strict=True)),
        operators.to_dict("records"), chaining_enabled,
    )  # fmt: skip


def graph_view_of_records(
    nodes: list[dict], edges: list[tuple[int, int]], operators: list[dict], chaining_enabled: bool
) -> GraphView:
    """A job version from its rows as dicts: a check's payloads (JSON without its null fields)
    are read so, without three pandas frames per job version and check (building them was a
    third of a 1,000-check run's decide, docs/benchmarks.md). A missing field reads as a frame
    built from the same dicts reads it (NaN, so ``str()`` is "nan")."""
    ins: dict[int, list[int]] = {}
    outs: dict[int, list[int]] = {}
    for s, t in edges:
        outs.setdefault(int(s), []).append(int(t))
        ins.setdefault(int(t), []).append(int(s))
    ops = {int(o["node_id"]): o for o in operators}
    out = []
    for r in sorted(nodes, key=lambda n: n["node_id"]):
        nid = int(r["node_id"])
        o = ops.get(nid)
        if o is None:
            continue
        uid, uid_hash, user_id = r.get("uid"), r.get("uid_hash"), o.get("user_operator_id")
        strategy = r.get("chaining_strategy")
        out.append(
            GraphNode(
                node_id=nid,
                name=r.get("name", math.nan),
                uid=uid if isinstance(uid, str) else None,
                uid_hash=uid_hash if isinstance(uid_hash, str) else None,
                chaining_strategy=str(math.nan if "chaining_strategy" not in r else strategy),
                operator_id=o.get("operator_id", math.nan),
                user_operator_id=user_id if isinstance(user_id, str) else None,
                jobvertex_id=o.get("jobvertex_id", math.nan),
                inputs=tuple(ins.get(nid, ())),
                outputs=tuple(outs.get(nid, ())),
                max_parallelism=_int_or(r.get("max_parallelism"), -1),
            )
        )
    return GraphView(bool(chaining_enabled), out)


def max_parallelism_fix(operator_id: str, saved_max: int, new: GraphView, head_node_id: int) -> Fix:
    """The vertex's configured max parallelism differs from the saved one: set it back on its head."""
    head = new.by_id()[head_node_id]
    return Fix(
        operator_id,
        None,
        None,
        None,
        *_cp(head),
        reasons=[MAX_PARALLELISM_CHANGED],
        fix_code=f".setMaxParallelism({saved_max})",
        patch=(head_node_id, "max_parallelism", saved_max),
    )


def environment_max_parallelism_fix(fixes: list[Fix], new: GraphView) -> list[Fix]:
    """One ``env.setMaxParallelism(n)`` for per-vertex max-parallelism fixes that all come from
    one setting: every node of the new job has the same configured max parallelism and every saved
    state asks for the same other one, which is what ``env.setMaxParallelism`` (or
    ``pipeline.max-parallelism``) gives. (A job that set the same value on every operator by hand
    looks the same; its fix is to set it back on each, which this one patch of every node also
    proves.) Other fixes are returned as they are."""
    mp = [f for f in fixes if MAX_PARALLELISM_CHANGED in f.reasons and f.patch and f.patch[1] == "max_parallelism"]
    configured = {n.max_parallelism for n in new.nodes}
    wanted = {f.patch[2] for f in mp if f.patch}
    if not mp or len(configured) != 1 or -1 in configured or len(wanted) != 1:
        return fixes
    value = wanted.pop()
    patches = tuple((n.node_id, "max_parallelism", value) for n in new.nodes)
    env = Fix(mp[0].operator_id, None, None, None, None, None, None, None, reasons=[MAX_PARALLELISM_CHANGED],
              fix_code=f"env.setMaxParallelism({value})", patch=patches[0], also=patches[1:])  # fmt: skip
    return [env, *(f for f in fixes if f not in mp)]


def with_old_names(fixes: list[Fix], old: GraphView | None) -> list[Fix]:
    """Fill a fix's saved operator's node, name and uid from the job version that took the
    savepoint, where the fix left them open."""
    if old is None:
        return fixes
    for f in fixes:
        if f.old_node_id is None:
            n = old.with_operator_id(f.operator_id)
            if n is not None:
                f.old_node_id, f.old_name, f.old_uid = n.node_id, n.name, n.uid
    return fixes


def parallelism_fixes(jobvertex_id: str, saved_max: int, new: GraphView) -> list[Fix]:
    """The vertex runs wider than the saved max parallelism allows: every chained node at most that."""
    return [
        Fix(
            jobvertex_id,
            None,
            None,
            None,
            *_cp(n),
            reasons=[PARALLELISM_ABOVE_SAVED_MAX],
            fix_code=f".setParallelism({saved_max})",
            patch=(n.node_id, "parallelism", saved_max),
        )
        for n in new.nodes
        if n.jobvertex_id == jobvertex_id
    ]
