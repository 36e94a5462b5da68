"""Step 1, per graph: SPEC section 1 for one graph -- defaults applied, the contract checked,
rows out (the columns of the stream tables, :data:`GRAPH_COLUMNS` etc.).

This runs for each graph the columnar checks over a batch (:mod:`udfs.spec.batch`) do not
accept, in the per-graph stage (:mod:`pipeline.compute.stage`), and for a single graph
(:mod:`udfs.compute.one_graph`), so a graph that breaks the contract is turned into one
``graph_errors`` row right where it is read, and never reaches the later steps. The
checks are the ones a person can act on: each error names the offending node or edge.
"""

from __future__ import annotations

import json
import re
from collections import Counter, deque
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from udfs.errors import CodedError
from udfs.flink.profiles import batch_rules, load_profile, newest_version, supported_versions

CHAINING_STRATEGIES = ("ALWAYS", "HEAD", "NEVER", "HEAD_WITH_SOURCES")
SOURCE_KINDS = ("LEGACY", "FLIP27")
PARTITIONERS = (
    "FORWARD",
    "REBALANCE",
    "RESCALE",
    "HASH",
    "BROADCAST",
    "SHUFFLE",
    "GLOBAL",
    "CUSTOM",
    "FORWARD_FOR_CONSECUTIVE_HASH",
    # What StreamGraph.addEdge puts on an edge without a partitioner in a dynamic (adaptive
    # batch) graph; createJobGraph turns it into FORWARD (chained) or RESCALE (not chained).
    "FORWARD_FOR_UNSPECIFIED",
)
EXCHANGE_MODES = ("UNDEFINED", "PIPELINED", "BATCH", "HYBRID_FULL", "HYBRID_SELECTIVE")
JOB_TYPES = ("STREAMING", "BATCH")
# ExecutionConfig.PARALLELISM_DEFAULT: no parallelism set (BATCH jobs without parallelism.default).
PARALLELISM_DEFAULT = -1
UID_HASH_RE = re.compile(r"^[0-9a-fA-F]{32}$")


# The rows parse_graph builds, as the stream tables hold them (pipeline/tables/stream_tables.py,
# what ``ingest`` writes); every table carries graph_id.
GRAPH_COLUMNS = [
    "graph_id",
    "job_name",
    "flink_version",
    "chaining_enabled",
    "chain_operators_with_different_max_parallelism",
    "job_type",
    "dynamic",
    "auto_parallelism_enabled",
    "source_id_order",
    # the new job's state facts (SPEC extension, docs/spec-extensions.md): only the restore
    # check's state half reads them
    "state_backend",
    "user_classes",
    "serializer_modules",
    "source_file",
]
NODE_COLUMNS = [
    "graph_id",
    "node_id",
    "name",
    "uid",
    "uid_hash",
    "parallelism",
    "max_parallelism",
    "chaining_strategy",
    "slot_sharing_group",
    "is_source",
    "source_kind",
    "yielding",
    "has_operator",
    "parallelism_configured",
    "state_key_serializer_snapshot",
    # what the node's operator and functions declare (SPEC extension, docs/spec-extensions.md), as
    # canonical JSON text: only the restore check's state half reads it
    "declared_states",
]
EDGE_COLUMNS = ["graph_id", "edge_idx", "source", "target", "partitioner", "exchange_mode", "type_number", "output_tag"]
ERROR_COLUMNS = ["graph_id", "error_code", "message", "source_file"]


# SPEC section 1's defaults, the one place both parse paths take them from (the checked path
# here, the columnar one in udfs/spec/batch.py). A field missing from a node or an edge means
# its default; the three node defaults that depend on other fields are functions below.
NODE_DEFAULTS: dict[str, Any] = {
    "uid": None,
    "uid_hash": None,
    "slot_sharing_group": "default",
    "yielding": False,
    "has_operator": True,
    "parallelism_configured": False,
    "state_key_serializer_snapshot": None,
    "declared_states": None,
}
EDGE_DEFAULTS: dict[str, Any] = {
    "partitioner": "FORWARD",
    "exchange_mode": "UNDEFINED",
    "type_number": 0,
    "output_tag": None,
}


def default_source_kind(is_source: Any) -> str | None:
    """A source's kind when the spec does not say: LEGACY (a SourceFunction), else none."""
    return "LEGACY" if is_source else None


def default_chaining_strategy(strategy: str | None, has_operator: Any, source_kind: Any) -> str | None:
    """HEAD for a legacy source, else ALWAYS (FLIP-27 sources included); none without an operator."""
    if strategy is not None or not has_operator:
        return strategy
    return "HEAD" if source_kind == "LEGACY" else "ALWAYS"


def default_max_parallelism(value: Any) -> Any:
    """-1 (not configured) when the spec does not set it."""
    return -1 if value is None else value


class ContractError(CodedError):
    """A graph that breaks the input contract (SPEC section 1)."""


@dataclass
class ParsedGraph:
    graph: dict[str, Any]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)


def normalize_version(value: Any) -> str:
    """'1.20', '1.20.5' and 1.2 (a JSON number) all name a release line 'major.minor'."""
    if value is None:
        return newest_version()
    text = str(value).strip()
    m = re.match(r"^(\d+)\.(\d+)", text)
    if not m:
        raise ContractError("UNSUPPORTED_VERSION", f"flink_version {value!r} is not of the form major.minor")
    version = f"{int(m.group(1))}.{int(m.group(2))}"
    if version not in _supported_set():
        raise ContractError(
            "UNSUPPORTED_VERSION",
            f"flink_version {text} has no profile; supported: {', '.join(supported_versions())}",
        )
    return version


@cache
def _supported_set() -> frozenset[str]:
    return frozenset(supported_versions())


def _enum(value: Any, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ContractError("UNKNOWN_ENUM", f"{what} is {_short(value)}; expected one of {', '.join(allowed)}")
    return value


JAVA_INT_MIN, JAVA_INT_MAX = -(2**31), 2**31 - 1


def _int(value: Any, what: str) -> int:
    # Every integer of the spec is a Java int in Flink (StreamNode ids, parallelism, typeNumber);
    # out of that range it would also overflow the int32 columns of the stream tables.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ContractError("BAD_FIELD", f"{what} must be an integer, got {_short(value)}")
    if not JAVA_INT_MIN <= value <= JAVA_INT_MAX:
        raise ContractError("BAD_FIELD", f"{what} {value} is outside Java's int range (Flink stores it as an int)")
    return value


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ContractError("BAD_FIELD", f"{what} must be true or false, got {_short(value)}")
    return value


def _str(value: Any, what: str, nullable: bool = False) -> str | None:
    # Names, uids, slot sharing groups and output tags are Java Strings in Flink; a number or
    # an object there is a broken export, not a name to print with str().
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise ContractError("BAD_FIELD", f"{what} must be a string, got {_short(value)}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _json_object_text(value: Any, what: str) -> str | None:
    """An optional JSON object, kept as canonical JSON text (one column, whatever its shape)."""
    if value is None:
        return None
    return json.dumps(_object(value, what), sort_keys=True, separators=(",", ":"))


# The graph fields the stream rows keep as canonical JSON text (one column whatever their shape);
# a spec holds them as JSON objects, and the contract rejects a string there.
JSON_TEXT_GRAPH_FIELDS = ("user_classes", "serializer_modules")


def graph_spec_fields(row: dict[str, Any]) -> dict[str, Any]:
    """A graph row of the stream tables back in the spec's form: its JSON-text fields as the
    objects the spec holds, so that a spec rebuilt from rows (a fix proof's patched graph) passes
    the contract that made the rows. The inverse of :func:`graph_fields` for those fields."""
    out = dict(row)
    for name in JSON_TEXT_GRAPH_FIELDS:
        if isinstance(out.get(name), str):
            out[name] = json.loads(out[name])
    return out


def _modules_text(value: Any) -> str | None:
    """Graph field ``serializer_modules``: optional module -> whether the job's class path loads it."""
    text = _json_object_text(value, "serializer_modules")
    bad = [k for k, v in (value or {}).items() if not isinstance(v, bool)]
    if bad:
        raise ContractError("BAD_FIELD", f"serializer_modules values must be true or false, not for {_short(bad)}")
    return text


# node field declared_states (docs/spec-extensions.md): the kinds an entry may have, and each field's
# JSON type (entries may carry more fields: they are kept as given)
DECLARED_KINDS = ("VALUE", "LIST", "MAP", "REDUCING", "AGGREGATING", "BROADCAST", "OPERATOR_LIST",
                  "OPERATOR_UNION_LIST", "TIMERS")  # fmt: skip
_DECLARED_TEXT = ("name", "serializer_snapshot", "key_serializer_snapshot", "type_info", "basis", "declared_in",
                  "registered_in", "called_from", "unresolved", "serializer")  # fmt: skip
_DECLARED_LISTS = ("saved_as", "timers_registered_in")


def declared_states_text(value: Any, where: str) -> str | None:
    """Node field ``declared_states``: a list of entry objects, each field of its JSON type, kept
    as canonical JSON text (one column whatever its shape); None when the field is absent."""
    if value is None:
        return None
    what = f"{where} declared_states"
    if not isinstance(value, list):
        raise ContractError("BAD_FIELD", f"{what} must be a list of objects, got {_short(value)}")
    for i, entry in enumerate(value):
        _declared_entry(entry, f"{what}[{i}]")
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _declared_entry(entry: Any, what: str) -> None:
    e = _object(entry, what)
    for key in _DECLARED_TEXT:
        _str(e.get(key), f"{what} {key}", nullable=True)
    kind = e.get("kind")
    if kind is not None and kind not in DECLARED_KINDS:
        raise ContractError("BAD_FIELD", f"{what} kind is {_short(kind)}; expected one of {', '.join(DECLARED_KINDS)}")
    if e.get("ttl") is not None:
        _object(e["ttl"], f"{what} ttl")
    if "conditional" in e:
        _bool(e["conditional"], f"{what} conditional")
    for key in _DECLARED_LISTS:
        items = e.get(key)
        if items is not None and (not isinstance(items, list) or not all(isinstance(x, str) for x in items)):
            raise ContractError("BAD_FIELD", f"{what} {key} must be a list of strings, got {_short(items)}")


def node_spec_fields(row: dict[str, Any]) -> dict[str, Any]:
    """A node row of the stream tables back in the spec's form (``declared_states`` as the list the
    spec holds): the inverse of the checked path for that field, so a spec rebuilt from rows passes
    the contract again."""
    out = dict(row)
    if isinstance(out.get("declared_states"), str):
        out["declared_states"] = json.loads(out["declared_states"])
    return out


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ContractError("BAD_FIELD", f"{what} must be a JSON object, got {_short(value)}")
    return value


def _require(obj: dict[str, Any], key: str, what: str) -> Any:
    if key not in obj or obj[key] is None:
        raise ContractError("MISSING_FIELD", f"{what} has no '{key}'")
    return obj[key]


def graph_fields(obj: Any) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """The graph-level fields with their SPEC defaults, and the raw node and edge lists;
    raises ContractError on a breach at the graph level."""
    if not isinstance(obj, dict):
        raise ContractError("BAD_FIELD", "a graph must be a JSON object")
    graph_id = _require(obj, "graph_id", "the graph")
    if not isinstance(graph_id, str) or not graph_id:
        raise ContractError("BAD_FIELD", f"graph_id must be a non-empty string, got {_short(graph_id)}")
    version = normalize_version(obj.get("flink_version"))
    job_type = _enum(obj.get("job_type", "STREAMING"), JOB_TYPES, "job_type")
    graph = {
        "graph_id": graph_id,
        "job_name": _str(obj.get("job_name"), "job_name", nullable=True) or graph_id,
        "flink_version": version,
        "chaining_enabled": _bool(obj.get("chaining_enabled", True), "chaining_enabled"),
        "chain_operators_with_different_max_parallelism": _bool(
            obj.get("chain_operators_with_different_max_parallelism", True),
            "chain_operators_with_different_max_parallelism",
        ),
        "job_type": job_type,
        "dynamic": _bool(obj.get("dynamic", False), "dynamic"),
        # StreamGraph.isAutoParallelismEnabled (execution.batch.adaptive.auto-parallelism.enabled,
        # default true); read for dynamic graphs only
        "auto_parallelism_enabled": _bool(obj.get("auto_parallelism_enabled", True), "auto_parallelism_enabled"),
        "state_backend": _str(obj.get("state_backend"), "state_backend", nullable=True),
        "user_classes": _json_object_text(obj.get("user_classes"), "user_classes"),
        "serializer_modules": _modules_text(obj.get("serializer_modules")),
    }
    raw_nodes = obj.get("nodes")
    raw_edges = obj.get("edges", [])
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise ContractError("MISSING_FIELD", "the graph has no nodes")
    if not isinstance(raw_edges, list):
        raise ContractError("BAD_FIELD", "edges must be a list")

    return graph, raw_nodes, raw_edges


def parse_graph(obj: Any) -> ParsedGraph:
    """Apply SPEC defaults and check the contract; raises ContractError on the first breach.

    This is the checked path, one graph at a time: the authority on what the contract
    accepts and on the error that names a breach. The pipeline runs the columnar fast path
    over whole batches (:mod:`udfs.spec.batch`) and this only for the graphs that path does
    not accept."""
    graph, raw_nodes, raw_edges = graph_fields(obj)
    graph_id = graph["graph_id"]
    ids = [_int(_require(_object(n, f"node #{i}"), "id", "a node"), "node id") for i, n in enumerate(raw_nodes)]
    dupes = sorted(i for i, c in Counter(ids).items() if c > 1)
    if dupes:
        raise ContractError("DUPLICATE_NODE_ID", f"node ids {dupes} occur more than once")
    known = set(ids)

    edges = []
    in_degree: Counter[int] = Counter()
    for idx, e in enumerate(raw_edges):
        row = _edge_row_checked(e, idx, known, graph_id)
        edges.append(row)
        in_degree[row["target"]] += 1

    nodes = []
    uids: Counter[str] = Counter()
    for n in raw_nodes:
        row = _node_row_checked(n, in_degree, graph_id)
        if row["uid"] is not None:
            uids[row["uid"]] += 1
        nodes.append(row)

    dup_uids = sorted(u for u, c in uids.items() if c > 1)
    if dup_uids:
        raise ContractError(
            "DUPLICATE_UID",
            f'Hash collision on user-specified ID "{dup_uids[0]}". Most likely cause is a non-unique ID. '
            "Please check that all IDs are unique.",
        )
    if not any(nd["is_source"] for nd in nodes):
        raise ContractError("NO_SOURCE", "the graph has no source node (no node with is_source, none without in-edges)")
    orphans = sorted(nd["node_id"] for nd in nodes if in_degree[nd["node_id"]] == 0 and not nd["is_source"])
    if orphans:
        raise ContractError("UNREACHABLE_NODE", f"nodes {orphans[:10]} have no in-edges but are not sources")
    _check_acyclic(ids, edges)
    source_ids = [nd["node_id"] for nd in nodes if nd["is_source"]]
    graph["source_id_order"] = _source_order(obj.get("source_id_order"), source_ids)
    _check_batch_partitioners(graph, edges)
    return ParsedGraph(graph, nodes, edges)


FFU_NOT_DYNAMIC = (
    "java.lang.IllegalStateException: ForwardForUnspecifiedPartitioner should only be used in dynamic graph."
)


def _check_batch_partitioners(graph: dict[str, Any], edges: list[dict[str, Any]]) -> None:
    """The two partitioners only adaptive batch (dynamic) graphs have.

    A line without the partitioner class cannot have produced the graph
    (UNSUPPORTED_PARTITIONER). Outside a dynamic graph, Flink's createJobGraph rejects them:
    a ForwardForUnspecifiedPartitioner always with the message of FFU_NOT_DYNAMIC (reported as
    FLINK_REJECTED); a ForwardForConsecutiveHashPartitioner with a message that depends on
    where the hasher or the chain walk meets it first, which is not reproduced
    (PARTITIONER_NEEDS_DYNAMIC_GRAPH).
    """
    dynamic_only = {"FORWARD_FOR_UNSPECIFIED", "FORWARD_FOR_CONSECUTIVE_HASH"}
    used = {base_partitioner(e["partitioner"]) for e in edges} & dynamic_only
    if not used:
        return
    version = graph["flink_version"]
    has_class = {
        "FORWARD_FOR_UNSPECIFIED": bool(batch_rules(version).get("forward_for_unspecified")),
        "FORWARD_FOR_CONSECUTIVE_HASH": load_profile(version).chain.forward_for_consecutive_hash,
    }
    for name in sorted(used):
        if not has_class[name]:
            raise ContractError(
                "UNSUPPORTED_PARTITIONER", f"partitioner {name} does not exist in Flink {version} (added in 1.15)"
            )
    if graph["dynamic"]:
        return
    if "FORWARD_FOR_CONSECUTIVE_HASH" in used:
        raise ContractError(
            "PARTITIONER_NEEDS_DYNAMIC_GRAPH",
            "FORWARD_FOR_CONSECUTIVE_HASH in a graph that is not dynamic: Flink's createJobGraph rejects it "
            "(IllegalStateException), with a message this tool does not reproduce",
        )
    raise ContractError("FLINK_REJECTED", FFU_NOT_DYNAMIC)


# The value sets of the checks, here and in the columnar path over whole batches
# (udfs/spec/batch.py), which accepts exactly the graphs parse_graph accepts.
_PARTITIONER_SET = frozenset(PARTITIONERS)


def is_named_hash(partitioner: str) -> bool:
    """The table runtime's ``BinaryHashPartitioner`` (SQL jobs' keyed exchanges): a hash
    partitioner whose ``toString()`` -- the ship strategy name Flink gives the job edge -- is
    ``HASH[<key fields>]``. The exporter writes that name as the partitioner; for chaining and
    the distribution pattern it is HASH. A ``ForwardForConsecutiveHashPartitioner`` wrapping
    one is written ``FORWARD_FOR_CONSECUTIVE_HASH[<key fields>]``: createJobGraph replaces it
    by that hash partitioner where it becomes a job edge, and the edge shows its name."""
    return partitioner.endswith("]") and partitioner.startswith(("HASH[", "FORWARD_FOR_CONSECUTIVE_HASH["))


def base_partitioner(partitioner: str) -> str:
    """The partitioner class a spec value stands for: ``HASH[k]`` -> HASH,
    ``FORWARD_FOR_CONSECUTIVE_HASH[k]`` -> FORWARD_FOR_CONSECUTIVE_HASH, others as they are."""
    return partitioner.split("[", 1)[0]


def _partitioner(value: Any, what: str) -> str:
    if isinstance(value, str) and is_named_hash(value):
        return value
    if value not in PARTITIONERS:
        raise ContractError(
            "UNKNOWN_ENUM", f"{what} is {_short(value)}; expected one of {', '.join(PARTITIONERS)}, HASH[<fields>]"
        )
    return value


_EXCHANGE_SET = frozenset(EXCHANGE_MODES)
_STRATEGY_SET = frozenset(CHAINING_STRATEGIES)
_SOURCE_KIND_SET = frozenset(SOURCE_KINDS)


def _edge_row_checked(e: Any, idx: int, known: set[int], graph_id: str) -> dict[str, Any]:
    where = f"edge #{idx}"
    _object(e, where)
    s = _int(_require(e, "source", where), f"{where} source")
    t = _int(_require(e, "target", where), f"{where} target")
    for end, nid in (("source", s), ("target", t)):
        if nid not in known:
            raise ContractError("DANGLING_EDGE", f"{where} ({s} -> {t}) has {end} {nid}, which is not a node")
    get = lambda k: e.get(k, EDGE_DEFAULTS[k])  # noqa: E731
    tag = _str(get("output_tag"), f"{where} output_tag", nullable=True)
    return {
        "graph_id": graph_id,
        "edge_idx": idx,
        "source": s,
        "target": t,
        "partitioner": _partitioner(get("partitioner"), f"{where} partitioner"),
        "exchange_mode": _enum(get("exchange_mode"), EXCHANGE_MODES, f"{where} exchange_mode"),
        "type_number": _int(get("type_number"), f"{where} type_number"),
        "output_tag": tag,
    }


def _node_row_raw(n: dict[str, Any], in_degree: Counter[int], graph_id: str) -> dict[str, Any]:
    """The node's row with the SPEC defaults applied but nothing checked yet.

    The checked path then names the first value that is wrong. A default derived from a
    wrong value (a source kind from a non-bool ``is_source``) is never kept: the value it
    came from is rejected. (udfs/spec/batch.py applies the same defaults column-wise;
    tests/test_spec_contract.py checks both give the same rows.)
    """
    get = n.get
    nid = n["id"]
    is_source = get("is_source", in_degree[nid] == 0)
    has_operator = get("has_operator", NODE_DEFAULTS["has_operator"])
    source_kind = n["source_kind"] if "source_kind" in n else default_source_kind(is_source)
    return {
        **{k: get(k, v) for k, v in NODE_DEFAULTS.items()},
        "graph_id": graph_id,
        "node_id": nid,
        "name": get("name"),
        "parallelism": get("parallelism"),
        "max_parallelism": default_max_parallelism(get("max_parallelism")),
        "chaining_strategy": default_chaining_strategy(get("chaining_strategy"), has_operator, source_kind),
        "is_source": is_source,
        "source_kind": source_kind,
        "has_operator": has_operator,
    }


def _node_row_checked(n: Any, in_degree: Counter[int], graph_id: str) -> dict[str, Any]:
    row = _node_row_raw(n, in_degree, graph_id)
    where = f"node {row['node_id']}"
    _str(_require(row, "name", where), f"{where} name")
    parallelism = _int(_require(row, "parallelism", where), f"{where} parallelism")
    if parallelism < 1 and parallelism != PARALLELISM_DEFAULT:
        raise ContractError(
            "BAD_PARALLELISM", f"{where} has parallelism {parallelism}; it must be >= 1 or -1 (the default)"
        )
    _int(row["max_parallelism"], f"{where} max_parallelism")
    _bool(row["is_source"], f"{where} is_source")
    if row["source_kind"] is not None:
        _enum(row["source_kind"], SOURCE_KINDS, f"{where} source_kind")
    _bool(row["has_operator"], f"{where} has_operator")
    if row["chaining_strategy"] is not None:
        _enum(row["chaining_strategy"], CHAINING_STRATEGIES, f"{where} chaining_strategy")
    _str(row["uid"], f"{where} uid", nullable=True)
    uid_hash = row["uid_hash"]
    if uid_hash is not None:
        if not isinstance(uid_hash, str) or not UID_HASH_RE.fullmatch(uid_hash):
            raise ContractError("BAD_UID_HASH", f"{where} uid_hash {_short(uid_hash)} is not 32 hex characters")
        row["uid_hash"] = uid_hash.lower()
    _str(row["slot_sharing_group"], f"{where} slot_sharing_group", nullable=True)
    _bool(row["yielding"], f"{where} yielding")
    _bool(row["parallelism_configured"], f"{where} parallelism_configured")
    _str(row["state_key_serializer_snapshot"], f"{where} state_key_serializer_snapshot", nullable=True)
    row["declared_states"] = declared_states_text(row["declared_states"], where)
    return row


def _source_order(value: Any, source_ids: list[int]) -> list[int] | None:
    """Optional ``source_id_order``: the iteration order of Flink's ``getSourceIDs()``."""
    if value is None:
        return None
    if not isinstance(value, list) or sorted(_int(v, "source_id_order entry") for v in value) != sorted(source_ids):
        raise ContractError(
            "BAD_FIELD", f"source_id_order must list exactly the source node ids {sorted(source_ids)}, got {value!r}"
        )
    return list(value)


def _check_acyclic(ids: list[int], edges: list[dict[str, Any]]) -> None:
    out: dict[int, list[int]] = {i: [] for i in ids}
    indeg = {i: 0 for i in ids}
    for e in edges:
        out[e["source"]].append(e["target"])
        indeg[e["target"]] += 1
    ready = deque(i for i in ids if indeg[i] == 0)
    seen = 0
    while ready:
        v = ready.popleft()
        seen += 1
        for t in out[v]:
            indeg[t] -= 1
            if indeg[t] == 0:
                ready.append(t)
    if seen != len(ids):
        in_cycle = sorted(i for i in ids if indeg[i] > 0)[:10]
        raise ContractError("CYCLE", f"the edges form a cycle through nodes {in_cycle}; a StreamGraph is acyclic")
