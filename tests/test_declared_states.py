"""The node field ``declared_states`` (docs/spec-extensions.md) against what Flink really writes.

One job, ``StateStylesJob`` (harness/src/testjobs), declares state in every style users write: in
``open()`` with a class literal, a ``TypeHint``, ``Types.*``, ``TypeInformation.of`` and TTL; a
descriptor held in a field, one built in a helper method, a base class whose ``open()`` calls an
overridden method, a CheckpointedFunction's operator list and union list, broadcast state, window
aggregate and reduce, a window function's per-window and global state, serializer instances,
a user's own operator, timers; and four declarations the exporter cannot resolve before the job runs (a name built at
run time, a loop over a collection, a type from a method's argument, a lambda). Its POJO lives
under ``org.apache.flink.training`` in the job jar.

It is exported through the front door (``flink-jobgraph export``), then run for real on a Flink
MiniCluster (the harness's Flink plus flink-clients, ``target/flink-<line>/test-run-lib``) until every
state holds values and stopped with a canonical savepoint. The ground truth is that savepoint: for
every state Flink wrote, the serializer snapshot bytes equal the ones the exporter wrote for the
same operator and name (TTL states: Flink's TtlSerializer wraps the exported one), and every state
Flink wrote is declared, resolved or as an unresolved entry. Flink 2.3 and 1.20.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pipeline.export import harness as export_cmd
from udfs.savepoint.binary import Reader
from udfs.savepoint.metadata import parse_metadata
from udfs.savepoint.serializer_snapshots import SnapshotNode, read_serializer_snapshot
from udfs.savepoint.state_meta import read_keyed_proxy, read_operator_proxy
from udfs.spec.batch import parse_batch
from udfs.spec.contract import parse_graph

ROOT = Path(__file__).resolve().parent.parent
LINES = ("2.3", "1.20")
MAIN = "org.flinkjobgraph.testjobs.StateStylesJob"
TTL_SNAPSHOT = "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot"
# what the job's three run-time declarations register when it runs (the exporter cannot know them)
RUNTIME_ONLY = {"dyn-Long", "extra-a", "extra-b", "typed", "via-lambda"}
KEYED_KINDS = {"VALUE", "LIST", "MAP", "REDUCING", "AGGREGATING"}
OPERATOR_MODES = {"OPERATOR_LIST": "SPLIT_DISTRIBUTE", "OPERATOR_UNION_LIST": "UNION", "BROADCAST": "BROADCAST"}

FLINK_JOB = "org.flinkjobgraph.testjobs.FlinkStatesJob"
_RUNS: dict[tuple[str, str], dict] = {}


def _job_jar(classes: Path, out: Path) -> Path:
    """The test programs as a thin user jar, without their trap executor's service entry (a
    MiniCluster run picks Flink's local executor; the trap one would make the choice ambiguous)."""
    with zipfile.ZipFile(out, "w") as z:
        for f in sorted(classes.rglob("*")):
            rel = f.relative_to(classes).as_posix()
            if f.is_file() and not rel.startswith("META-INF/services/"):
                z.write(f, rel)
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Per line (built once): the exported spec and the savepoint of the same job run for real."""

    def get(line: str, main: str = MAIN) -> dict:
        if (line, main) in _RUNS:
            return _RUNS[(line, main)]
        root = tmp_path_factory.mktemp(f"declared-{line}")
        harness = export_cmd.ensure_harness(export_cmd.harness_dir(), line, quiet=True)
        build = harness.parent
        jar = _job_jar(build / "test-classes", root / "jobs.jar")
        (connector,) = sorted((build / "test-lib").glob("flink-connector-files-*.jar"))  # the FileSink
        spec_file = root / "spec.jsonl"
        p = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "export", "--jar", str(jar), "--classpath", str(connector),
             "--main-class", main, "--flink", line, "--expected", "--out", str(spec_file), "--", "export"],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )
        assert p.returncode == 0, p.stderr[-3000:]
        (spec,) = [json.loads(x) for x in spec_file.read_text().splitlines()]
        cp = os.pathsep.join([str(build / "lib" / "*"), str(build / "test-run-lib" / "*"), str(connector), str(jar)])
        sp_dir = root / "savepoints"
        r = subprocess.run(
            ["java", *[a for o in export_cmd.ADD_OPENS for a in ("--add-opens", f"{o}=ALL-UNNAMED")], "-cp", cp,
             main, f"run:{sp_dir}"],
            capture_output=True, text=True, timeout=300,
        )
        lines = [x for x in r.stdout.splitlines() if x.startswith("SAVEPOINT ")]
        assert r.returncode == 0 and lines, (r.stdout + r.stderr)[-3000:]
        savepoint = Path(lines[0].split(" ", 1)[1].removeprefix("file:"))
        _RUNS[(line, main)] = {"spec": spec, "saved": saved_states(savepoint), "stderr": p.stderr}
        return _RUNS[(line, main)]

    return get


def saved_states(savepoint: Path) -> dict[tuple[str, str], dict]:
    """(operator id, state name) -> {"options", "serializers": role -> (node, its bytes)} of every
    state in the savepoint (read by the project's own decoder, udfs/savepoint; the job's state is
    small, so every stream is inline in _metadata)."""
    meta = parse_metadata((savepoint / "_metadata").read_bytes())
    out: dict[tuple[str, str], dict] = {}
    for op in meta.operators:
        for s in op.state_streams:
            assert s.ref.location == "inline", s.ref.location
            data = s.ref.data
            proxy = (read_keyed_proxy if s.kind == "managed_keyed" else read_operator_proxy)(data)
            for info in list(proxy.states) + list(getattr(proxy, "broadcast_states", ())):
                out[(op.operator_id, info.name)] = {
                    "kind": s.kind,
                    "options": dict(info.options),
                    "serializers": {r: (n, data[n.offset : n.end]) for r, n in info.serializers.items()},
                }
    return out


def decoded(b64: str) -> tuple[SnapshotNode, bytes]:
    """An exported snapshot read as the key serializer's is (udfs.savepoint's reader): the tree and
    the bytes of its versioned snapshot (after the proxy's version int)."""
    data = base64.b64decode(b64)
    node = read_serializer_snapshot(Reader(data, 0)).node
    assert node.end == len(data)
    return node, data[node.offset : node.end]


def by_name(spec: dict) -> dict[str, dict]:
    return {n["name"]: n for n in spec["nodes"]}


def compare(spec: dict, saved: dict[tuple[str, str], dict]) -> tuple[int, set[str]]:
    """Checks every resolved declaration against the savepoint (the same operator and name: the
    same serializer snapshot bytes, value and broadcast key, the same keyed state type / operator
    distribution mode); a declaration made only on some paths (``conditional``) may be absent.
    Returns how many were compared and the names of the saved states no resolved entry covers."""
    operators = spec["expected"]["operators"]
    covered: set[tuple[str, str]] = set()
    checked = 0
    for node in spec["nodes"]:
        op = operators[str(node["id"])]["operator_id"]
        for d in node["declared_states"]:
            if d["unresolved"] is not None:
                assert d["serializer_snapshot"] is None
                continue
            mine_node, mine = decoded(d["serializer_snapshot"])
            for name in d.get("saved_as") or [d["name"]]:
                state = saved.get((op, name))
                if state is None and d.get("conditional"):
                    continue
                assert state is not None, f"{node['name']}: {name} declared, not in the savepoint"
                covered.add((op, name))
                their_node, theirs = state["serializers"]["VALUE_SERIALIZER"]
                if d["ttl"] is not None:
                    # Flink's TtlStateFactory wraps the value serializer: (timestamp, value)
                    assert their_node.class_name == TTL_SNAPSHOT
                    _, their_node = their_node.nested[1]
                    theirs = b""  # the nested snapshot's bytes, below
                if theirs:
                    assert mine == theirs, f"{node['name']}.{name}: {mine_node.to_dict()} != {their_node.to_dict()}"
                assert mine_node.describe() == their_node.describe(), f"{node['name']}.{name}"
                if d["kind"] in KEYED_KINDS:
                    assert state["options"].get("KEYED_STATE_TYPE") == d["kind"], (name, state["options"])
                elif d["kind"] in OPERATOR_MODES:
                    assert state["options"].get("OPERATOR_STATE_DISTRIBUTION_MODE") == OPERATOR_MODES[d["kind"]]
                if d["kind"] == "BROADCAST":
                    _, key = decoded(d["key_serializer_snapshot"])
                    assert key == state["serializers"]["KEY_SERIALIZER"][1]
                checked += 1
    return checked, {name for (op, name) in saved if (op, name) not in covered}


@pytest.mark.parametrize("line", LINES)
def test_declared_serializers_are_the_bytes_flink_writes(run, line):
    """The user functions' states: every resolved declaration is in the savepoint with the same
    serializer snapshot bytes, and every state in the savepoint is declared: resolved, or (the job's
    run-time declarations) by an unresolved entry."""
    spec = run(line)["spec"]
    checked, not_declared = compare(spec, run(line)["saved"])
    assert checked == 38
    assert not_declared == RUNTIME_ONLY
    helper = by_name(spec)["field-helper"]["declared_states"]
    assert sum(d["unresolved"] is not None for d in helper) == 4


@pytest.mark.parametrize("line", LINES)
def test_each_style_is_found_with_its_basis(run, line):
    """Where each declaration was found (basis, declared_in), TTL as Flink holds it, timers, and
    the reasons of the unresolved ones (class, method and why)."""
    spec = run(line)["spec"]
    nodes = by_name(spec)

    def states(name: str) -> dict[str | None, dict]:
        return {d["name"]: d for d in nodes[name]["declared_states"]}

    fn = "org.flinkjobgraph.testjobs.StateStylesLine$OpenStylesFn"
    keyed_process = "org.apache.flink.streaming.api.operators.KeyedProcessOperator#open"
    opened = states("open-styles")
    assert {k: (v["kind"], v["basis"], v["declared_in"]) for k, v in opened.items()} == {
        "user-timers": ("TIMERS", "flink_operator", keyed_process),
        "rides": ("VALUE", "bytecode", f"{fn}#open"),
        "pairs": ("LIST", "bytecode", f"{fn}#open"),
        "counts": ("MAP", "bytecode", f"{fn}#open"),
        "total": ("REDUCING", "bytecode", f"{fn}#open"),
        "avg": ("AGGREGATING", "bytecode", f"{fn}#open"),
        "session": ("VALUE", "bytecode", f"{fn}#open"),
    }
    assert opened["rides"]["type_info"].startswith("PojoType<org.apache.flink.training.jobgraphtest.Ride,")
    assert opened["pairs"]["type_info"] == "List<Java Tuple2<Long, String>>"  # the TypeHint's type
    assert opened["avg"]["type_info"] == "Java Tuple2<Long, Long>"
    assert opened["session"]["ttl"] == {
        "ttl_ms": 3_600_000, "update_type": "OnReadAndWrite", "state_visibility": "NeverReturnExpired",
        "time_characteristic": "ProcessingTime", "cleanup": [
            {"strategy": "FULL_STATE_SCAN_SNAPSHOT"},
            {"strategy": "INCREMENTAL_CLEANUP", "cleanup_size": 10, "run_cleanup_for_every_record": False}],
        "cleanup_in_background": True,
    }
    assert all(v["ttl"] is None for k, v in opened.items() if k != "session")
    timers = opened["user-timers"]
    assert timers["saved_as"] == ["_timer_state/processing_user-timers", "_timer_state/event_user-timers"]
    assert opened["user-timers"]["timers_registered_in"] == [f"{fn}#processElement"]

    job = "org.flinkjobgraph.testjobs.StateStylesJob"
    assert {k: (v["kind"], v["basis"]) for k, v in states("throttle").items()} == {
        "offsets": ("OPERATOR_LIST", "bytecode"), "marks": ("OPERATOR_UNION_LIST", "bytecode")}
    assert states("throttle")["offsets"]["declared_in"] == f"{job}$Throttle#initializeState"
    assert states("base-class")["by-name"]["declared_in"] == f"{job}$BaseRegisteredFn#register"
    # a hook the base class's open() calls: registered while the task restores
    base_open = "org.flinkjobgraph.testjobs.StateStylesLine$RegisteringBase#open"
    assert states("base-class")["by-name"]["called_from"] == base_open
    assert "called_from" not in opened["rides"]  # declared in open() itself
    assert states("Source: numbers")["SourceReaderState"]["basis"] == "flink_operator"
    rules = states("broadcast")["rules"]
    assert (rules["kind"], rules["basis"]) == ("BROADCAST", "descriptor_object")
    assert "broadcastStateDescriptors" in rules["declared_in"]
    for window, kind in (("window-aggregate", "AGGREGATING"), ("window-reduce", "REDUCING")):
        w = states(window)
        assert (w["window-contents"]["kind"], w["window-contents"]["basis"]) == (kind, "flink_operator")
        assert w["count"]["declared_in"] == "org.apache.flink.streaming.api.windowing.triggers.CountTrigger#onElement"
        assert w["window-timers"]["kind"] == "TIMERS"

    custom = states("custom-operator")
    assert {k: (v["kind"], v["basis"], v["declared_in"]) for k, v in custom.items()} == {
        "op-list": ("OPERATOR_LIST", "bytecode", f"{job}$CountingOperator#initializeState"),
        "op-seen": ("VALUE", "bytecode", f"{job}$CountingOperator#open"),
        "op-timers": ("TIMERS", "bytecode", f"{job}$CountingOperator#open"),
    }
    window_state = states("window-state")
    assert (window_state["per-window"]["kind"], window_state["global"]["kind"]) == ("VALUE", "LIST")
    assert window_state["per-window"]["declared_in"] == f"{job}$WindowStateFn#process"  # its context's windowState()

    helper = nodes["field-helper"]["declared_states"]
    resolved = {d["name"]: d for d in helper if d["unresolved"] is None}
    assert resolved["by-serializer"]["type_info"] is None  # built from serializer instances
    assert resolved["last-ride"]["basis"] == "descriptor_object"
    assert resolved["last-ride"]["declared_in"] == f"{job}$FieldAndHelperFn.lastDesc"
    assert resolved["last-ride"]["registered_in"] == f"{job}$FieldAndHelperFn#flatMap"
    assert (resolved["seen-ids"]["kind"], resolved["seen-ids"]["basis"]) == ("LIST", "bytecode")  # "seen-" + "ids"
    assert resolved["opaque"]["type_info"] == "GenericType<org.apache.flink.training.jobgraphtest.Opaque>"
    # a type information the job memoises in a static field of a class main() never initialised
    assert resolved["memoised"]["type_info"].startswith("PojoType<org.apache.flink.training.jobgraphtest.Ride,")
    unresolved = [d for d in helper if d["unresolved"] is not None]
    assert [d["name"] for d in unresolved] == [None, None, "typed", None]
    assert all(d["kind"] == "VALUE" and d["basis"] == "bytecode" for d in unresolved)
    name_at_run_time, loop, typed, lambda_ = (d["unresolved"] for d in unresolved)
    assert "does not reach" in lambda_ and f"{job}$FieldAndHelperFn#lambda$" in lambda_  # the safety net
    assert "a name built at run time in " + f"{job}$FieldAndHelperFn#flatMap" in name_at_run_time
    assert "a loop" in loop and f"{job}$FieldAndHelperFn#flatMap" in loop
    assert f"{job}$FieldAndHelperFn#registerTyped" in typed and "parameter 1" in typed
    # nodes with no state say so (an empty list), and every node has the field
    assert all(isinstance(n["declared_states"], list) for n in spec["nodes"])
    assert nodes["Filter"]["declared_states"] == []


@pytest.mark.parametrize("line", LINES)
def test_user_classes_describe_the_declared_states_classes(run, line):
    """The classes the declared states use are described whatever their package: a job's POJO under
    ``org.apache.flink.training`` (outside the main class's packages, named only by states declared
    in the functions), the POJO its field names, the Kryo class."""
    spec = run(line)["spec"]
    classes = spec["user_classes"]
    pkg = "org.apache.flink.training.jobgraphtest."
    ride_fields = [{"name": "driverId", "type": "long"}, {"name": "fare", "type": pkg + "Fare"}]
    assert classes[pkg + "Ride"] == {"kind": "pojo", "fields": [*ride_fields, {"name": "rideId", "type": "long"}]}
    assert classes[pkg + "Fare"]["kind"] == "pojo"
    assert classes[pkg + "Opaque"] == {"kind": "generic", "fields": [
        {"name": "id", "type": "long"}, {"name": "label", "type": "java.lang.String"}],
        "no_arg_constructor": "none"}
    assert not any(c.startswith("org.apache.flink.api.") for c in classes)  # Flink's own: never


@pytest.mark.parametrize("line", LINES)
def test_specs_with_declared_states_parse_as_before(run, line):
    """The field is optional and extra: both of the pipeline's parse paths accept the exported spec
    and give the same rows as without it, but for the field itself (its canonical JSON text, which
    only the restore check's state half reads)."""
    spec = run(line)["spec"]
    bare = json.loads(json.dumps(spec))
    for n in bare["nodes"]:
        del n["declared_states"]

    def without_field(nodes: list[dict]) -> list[dict]:
        return [{**n, "declared_states": None} for n in nodes]

    checked = parse_graph(spec).nodes
    assert without_field(checked) == parse_graph(bare).nodes
    pairs = zip(checked, spec["nodes"], strict=True)
    assert all(json.loads(n["declared_states"]) == m["declared_states"] for n, m in pairs)
    batch, rest = parse_batch([spec, bare])
    assert rest == []
    graphs = batch.parsed_graphs()
    assert graphs[0].nodes == checked and without_field(graphs[0].nodes) == graphs[1].nodes


@pytest.mark.parametrize("line", LINES)
def test_flink_operators_states_are_the_bytes_flink_writes(run, line):
    """Flink's own operators' states (basis flink_operator, read from Flink's code): a keyed
    reduce, a session window (with its merging-window-set), an interval join's buffers and cleanup
    timers, CEP, async I/O, a FileSink's writer and committer, the FLIP-27 source: each the bytes
    Flink writes, and nothing in the savepoint undeclared."""
    r = run(line, FLINK_JOB)
    checked, not_declared = compare(r["spec"], r["saved"])
    assert not_declared == set()
    assert checked == 22
    states = {(n["name"], d["name"]): d for n in r["spec"]["nodes"] for d in n["declared_states"]}
    assert states[("reduce", "_op_state")]["basis"] == "flink_operator"
    assert states[("session", "merging-window-set")]["kind"] == "LIST"
    assert states[("async", "_async_wait_operator_state_")]["kind"] == "OPERATOR_LIST"
    assert {d["name"] for (node, _), d in states.items() if node == "cep"} >= {"nfaStateName", "eventQueuesStateName"}
    assert all(d["unresolved"] is None for d in states.values())


def test_datastream_v2_declarations(tmp_path):
    """DataStream V2 (2.3): the process functions' ``usesStates()`` (basis state_declaration),
    converted as Flink's DefaultStateManager does and registered as the keyed backends register v2
    states (the v1 descriptor: a list's ListSerializer, a map's MapSerializer); a split list state
    of a non-keyed function is operator state; the V2 keyed operator's timer service."""
    build = export_cmd.ensure_harness(export_cmd.harness_dir(), "2.3", quiet=True).parent
    jar = _job_jar(build / "test-classes", tmp_path / "jobs.jar")
    p = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "export", "--jar", str(jar), "--main-class",
         "org.flinkjobgraph.testjobs.V2StateJob", "--flink", "2.3"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    (spec,) = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    states = {(n["name"], d["name"]): d for n in spec["nodes"] for d in n["declared_states"]}
    fn = "org.flinkjobgraph.testjobs.V2StateJob$"
    expected = {
        ("Process", "offsets"): ("OPERATOR_LIST", f"{fn}Offsets#usesStates", "LongSerializer$LongSerializerSnapshot"),
        ("KeyedProcess", "by-name"): ("MAP", f"{fn}Counting#usesStates", "MapSerializerSnapshot"),
        ("KeyedProcess", "count"): ("VALUE", f"{fn}Counting#usesStates", "LongSerializer$LongSerializerSnapshot"),
        ("KeyedProcess", "seen"): ("LIST", f"{fn}Counting#usesStates", "ListSerializerSnapshot"),
    }
    for key, (kind, where, snapshot) in expected.items():
        d = states[key]
        assert (d["kind"], d["basis"], d["declared_in"], d["unresolved"]) == (kind, "state_declaration", where, None)
        node, _ = decoded(d["serializer_snapshot"])
        assert node.class_name.endswith("." + snapshot), node.class_name
    assert [d["name"] for n in spec["nodes"] if n["name"] == "KeyedProcess" for d in n["declared_states"]] == [
        "processing timer", "by-name", "count", "seen"]
    assert states[("KeyedProcess", "processing timer")]["kind"] == "TIMERS"


def test_flink19_writes_declared_states(tmp_path):
    """Flink 1.9 (the harness adds Flink's shaded ASM 9, which 1.9 does not ship): the same reading,
    the snapshots written with 1.9's 3-argument writeSerializerSnapshot. Not checked against a 1.9
    savepoint (1.9's MiniCluster needs Java 8)."""
    build = export_cmd.ensure_harness(export_cmd.harness_dir(), "1.9", quiet=True).parent
    jar = _job_jar(build / "test-classes", tmp_path / "jobs.jar")
    p = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "export", "--jar", str(jar), "--main-class",
         "org.flinkjobgraph.testjobs.StateJob19", "--flink", "1.9"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    (spec,) = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    states = {(n["uid"], d["name"]): d for n in spec["nodes"] for d in n["declared_states"]}
    summary = {k: (d["kind"], d["basis"], decoded(d["serializer_snapshot"])[0].class_name.rsplit(".", 1)[1])
               for k, d in states.items()}
    assert summary == {
        ("open", "count"): ("VALUE", "bytecode", "LongSerializer$LongSerializerSnapshot"),
        ("open", "names"): ("LIST", "bytecode", "ListSerializerSnapshot"),
        ("window", "window-timers"): ("TIMERS", "flink_operator", "TimerSerializerSnapshot"),
        ("window", "window-contents"): ("REDUCING", "flink_operator", "LongSerializer$LongSerializerSnapshot"),
        ("window", "count"): ("REDUCING", "flink_operator", "LongSerializer$LongSerializerSnapshot"),
    }
    assert states[("open", "count")]["ttl"]["ttl_ms"] == 3_600_000
