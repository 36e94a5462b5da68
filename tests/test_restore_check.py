"""The restore check against real Flink: 120 real savepoints (Flink 1.20.5 and 2.3.0) and what
Flink did when the edited job started from each (../shared/vectors/restore).

- the rules, in-process, on every case through the real ``_metadata`` reader: verdict, failure
  kind, named operator and message agree with Flink on every case Flink decided at job start
  (or that restored), with allowNonRestoredState false and true; task-stage failures apart;
- hand-built inputs for the rules that the real cases do not reach (1.9's FLINK-16638, the
  default max parallelism formula, FLINK-13973);
- ONE real Spark ``check-restore`` over all 120 cases laid out as a user would (spec files,
  savepoint folders, a manifest with relative paths), plus an unreadable savepoint and an
  unknown graph (``restore_run`` in conftest.py): the tables agree with Flink, every proposed
  fix is proven by recomputing the patched graph, and the fleet SQL of jobs/example_queries.sql
  answers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from devtools import restore_cases as rc
from tests.conftest import RESTORE_LINES as LINES
from tests.conftest import restore_cases
from udfs.restore import rules as rr

TASK_STAGE = {"sp-{}-s11-00041", "sp-{}-s11-00054"}  # a changed key type: StateMigrationException in a task
# The fixtures all_cases and restore_run (ONE check-restore over all cases) are in conftest.py:
# the fleet report's tests (test_report.py) read the same run's tables.


@pytest.mark.parametrize("line", LINES)
def test_rules_agree_with_flink_on_every_real_case(line):
    cases, metadata = restore_cases(line)
    without, with_allow, via_reader = rc.run_agreement(cases, metadata)
    assert via_reader == 60  # every savepoint read from its real _metadata file, none from the recording
    for agg in (without, with_allow):
        assert agg.compared == 58
        assert agg.mismatches == []
        assert agg.all_agree()
        # Counted apart: Flink fails these in a task (key serializer); nothing in the specs or the
        # _metadata says the key type changed, so the tool cannot foresee them and says RESTORES.
        assert {t.split(" ")[0] for t in agg.task_stage} == {t.format(line) for t in TASK_STAGE}


GOLDEN = Path(__file__).resolve().parent / "golden" / "restore"


@pytest.mark.parametrize("name", ["savepoint-1.20-s7", "savepoint-2.3-s7", "savepoint-2.0-s7"])
def test_rules_agree_with_flink_on_the_harness_golden_sets(name):
    """The project's own harness's real restores (another seed, and Flink 2.0's format 5)."""
    cases = rc.read_cases(GOLDEN / f"{name}.jsonl.gz")
    without, with_allow, via_reader = rc.run_agreement(cases, rc.read_metadata_tar(GOLDEN / f"{name}-metadata.tar.gz"))
    assert via_reader == len(cases)
    for agg in (without, with_allow):
        assert agg.compared + len(agg.task_stage) == len(cases) and agg.compared > 0
        assert agg.mismatches == [] and agg.all_agree()


def test_reader_lists_operators_in_the_order_flink_walks(all_cases):
    cases, metadata = all_cases
    for c in cases:
        got = [o.operator_id for o in rc.saved_from_metadata(metadata[c["savepoint_metadata"]])]
        assert got == [o["operator_id"] for o in c["savepoint"]["operators"]], c["case_id"]


def _vertex(vid: str, ops: list[str], users: list[str | None], p: int = 2, maxp: int = -1) -> rr.NewVertex:
    return rr.NewVertex(vid, p, maxp, ops, users)


def test_user_defined_id_match_fails_in_1_9_but_restores_since_1_11():
    """FLINK-16638: 1.9/1.10 put user-defined IDs in the lookup only after a miss, and the
    completeness check then knows only generated IDs."""
    saved = [rr.SavedOperator("a" * 32, 2, 128, True, 2)]
    v = [_vertex("b" * 32, ["b" * 32], ["a" * 32])]
    old = rc.restore_profile("1.9")
    new = rc.restore_profile("1.20")
    d = rr.decide(saved, v, False, old, "sp")
    assert (d.verdict, d.failure, d.operator_id) == ("FAILS", rr.NO_OPERATOR_FOR_STATE, "a" * 32)
    assert d.message == "There is no operator for the state " + "a" * 32
    assert rr.decide(saved, v, True, old, "sp").verdict == "RESTORES"  # only logged with allowNonRestoredState
    d = rr.decide(saved, v, False, new, "sp")
    assert d.verdict == "RESTORES" and d.operators[0].matched_via == "user_defined"


def test_max_parallelism_rules():
    assert [rr.compute_default_max_parallelism(p) for p in (1, 85, 86, 100, 1000, 30000)] == [
        128, 128, 256, 256, 2048, 32768,
    ]  # fmt: skip
    saved = [rr.SavedOperator("a" * 32, 2, 128, False, 0)]  # no state: the check still runs
    prof = rc.restore_profile("2.3")
    # not configured: the vertex adopts the saved value, whatever its own default would be
    assert rr.decide(saved, [_vertex("a" * 32, ["a" * 32], [None], p=200)], False, prof, "sp").verdict == "RESTORES"
    d = rr.decide(saved, [_vertex("a" * 32, ["a" * 32], [None], p=2, maxp=256)], False, prof, "sp")
    assert (d.failure, d.operator_id) == (rr.MAX_PARALLELISM_MISMATCH, "a" * 32)
    assert "with max parallelism 128 to new program with max parallelism 256" in d.message


def test_flink_13973_user_defined_id_only_when_saved():
    """Since 1.14 a vertex takes its generated ID's state when the savepoint lacks the user-defined one."""
    saved = [rr.SavedOperator("a" * 32, 2, 128, True, 2)]
    v = [_vertex("a" * 32, ["a" * 32], ["c" * 32])]
    assert rr.decide(saved, v, False, rc.restore_profile("1.20"), "sp").dropped_operator_ids == []
    d = rr.decide(saved, v, False, rc.restore_profile("1.9"), "sp")  # 1.9 always uses the user-defined ID
    assert d.verdict == "RESTORES" and d.dropped_operator_ids == ["a" * 32]


def test_set_uid_hash_fix_turns_a_real_failure_into_a_restore(all_cases):
    cases, metadata = all_cases
    case = next(c for c in cases if c["case_id"] == "sp-1.20-s11-00001")  # a stateless operator inserted, swapped
    saved = rc.saved_from_metadata(metadata[case["savepoint_metadata"]])
    prof = rc.restore_profile("1.20")
    before = rr.decide(saved, rc.compute_vertices(case["v2"]), False, prof, rc.PLACEHOLDER)
    assert before.verdict == "FAILS" and before.failure == rr.UNMAPPED_STATE
    fixes, after = rc.prove_fixes(case, saved)
    assert [f.fix_code for f in fixes] == [
        '.setUidHash("677f0ba20c3cc95c54fcadbde472bd8f")',
        '.setUidHash("ecc20a2127f733410aab579b41b5f2be")',
    ]
    assert [f.counterpart_name for f in fixes] == ["GlobalWindows", "KeyedProcess"]
    assert after.verdict == "RESTORES"


def test_check_restore_agrees_with_flink_end_to_end(spark, restore_run):
    summary, out, cases, _, _ = restore_run
    got = {r["check_id"]: r.asDict() for r in spark.read.format("delta").load(f"{out}/restore_checks").collect()}
    assert summary.checks == len(got) == 242
    compared = 0
    for c in cases:
        for allow, tag in ((False, "strict"), (True, "allow")):
            flink = rc.flink_answer(c, allow)
            row = got[f"{c['case_id']}/{tag}"]
            if flink.stage == "task":
                assert row["verdict"] == "RESTORES"  # not foreseeable (see above)
                continue
            compared += 1
            message = row["message"]
            if message and rc.PLACEHOLDER in (flink.message or ""):
                # Flink names the savepoint by its qualified folder, as given or not: file:/.../<case>
                assert re.search(rf"file:/\S*/savepoints/{c['case_id']}\.", message), message
                message = re.sub(rf"file:/\S*/savepoints/{c['case_id']}", rc.PLACEHOLDER, message)
            assert (row["verdict"], row["failure"], row["operator_id"], message) == (
                flink.verdict, flink.failure, flink.operator_id, flink.message,
            ), row["check_id"]  # fmt: skip
    assert compared == 232
    assert got["bad-savepoint"]["verdict"] == "ERROR" and got["bad-savepoint"]["failure"].startswith(
        "unreadable savepoint"
    )
    assert (got["unknown-graph"]["verdict"], got["unknown-graph"]["failure"]) == ("ERROR", "unknown graph: nope@v9")


def test_every_proposed_fix_is_proven_by_recomputing(spark, restore_run):
    summary, out, cases, _, _ = restore_run
    fixes = spark.read.format("delta").load(f"{out}/restore_fixes").toPandas()
    checks = spark.read.format("delta").load(f"{out}/restore_checks").toPandas()
    failing = set(checks.loc[checks["verdict"] == "FAILS", "check_id"])
    assert failing and failing <= set(fixes["check_id"])
    proven = fixes[fixes["check_id"].isin(failing)]
    assert proven["verified"].all(), proven.loc[~proven["verified"], ["check_id", "fix_code", "verified_failure"]]
    uid_hash = proven[proven["fix_code"].str.startswith(".setUidHash", na=False)]
    assert len(uid_hash) > 0 and summary.fixes_verified == len(fixes[fixes["verified"]])
    one = fixes[(fixes["check_id"] == "sp-2.3-s11-00057/strict")].iloc[0]
    assert (one["counterpart_name"], list(one["reasons"]), one["fix_code"]) == (
        "Elastic: Committer", ["UPSTREAM_CHANGED"], '.setUidHash("c05490c66c5430e8899ba457291f89df")',
    )  # fmt: skip


def test_fleet_queries_answer(spark, restore_run):
    from devtools.queries import example_queries

    _, out, cases, metadata, orphan = restore_run
    queries = {t.split(".")[0]: sql for t, sql in example_queries(out)}
    failing = spark.sql(queries["6"]).toPandas()
    checks = spark.read.format("delta").load(f"{out}/restore_checks").toPandas()
    assert set(failing["check_id"]) == set(checks.loc[checks["verdict"] == "FAILS", "check_id"])
    assert len(failing) == 40
    named = failing[failing["failure"] == "UNMAPPED_STATE"]
    assert named["operator_name"].isna().all()  # a lost operator has no node in the new job

    no_uid = spark.sql(queries["7"]).toPandas()
    ops = spark.read.format("delta").load(f"{out}/operators").toPandas().set_index(["graph_id", "node_id"])
    assert len(no_uid) > 0
    for r in no_uid.itertuples():
        op = ops.loc[(r.graph_id, r.node_id)]
        assert op["uid"] is None and op["operator_id"] == r.operator_id

    orphans = spark.sql(queries["8"]).toPandas()
    known = set(ops["operator_id"]) | set(ops["user_operator_id"].dropna())
    expected = [
        (f"savepoints/{c['case_id']}", o.operator_id)
        for c in cases
        for o in rc.saved_from_metadata(metadata[c["savepoint_metadata"]])
        if o.operator_id not in known
    ]
    assert expected and {s.split("/")[-1] for s, _ in expected} == {cases[0]["case_id"], orphan["case_id"]}
    assert list(zip(orphans["savepoint"], orphans["operator_id"], strict=True)) == expected


def _three_vertex_job(max_parallelism: int) -> dict:
    nodes = [{"id": i, "name": n, "parallelism": 2, "max_parallelism": max_parallelism, "uid": f"u{i}"}
             for i, n in ((1, "Source: S"), (2, "Map"), (3, "Sink: K"))]  # fmt: skip
    edges = [{"source": 1, "target": 2, "partitioner": "REBALANCE"}, {"source": 2, "target": 3, "partitioner": "HASH"}]
    return {"graph_id": "env-mp", "flink_version": "2.3", "nodes": nodes, "edges": edges}


def test_a_changed_environment_max_parallelism_gets_one_environment_fix_that_is_proven():
    """env.setMaxParallelism(64) -> 128 changes every vertex: one line at the environment restores,
    not one .setMaxParallelism per vertex; the saved operators' old names come from the old job."""
    from udfs.compute.one_graph import compute_one
    from udfs.restore import check_rows as cr
    from udfs.restore import fixes as rf

    old_spec, new_spec = _three_vertex_job(64), _three_vertex_job(128)
    old_nodes, old_ops, _, _ = compute_one(old_spec)
    nodes, ops, vertices, _ = compute_one(new_spec)
    saved = [rr.SavedOperator(o, 2, 64, True, 2) for o in old_ops["operator_id"]]
    new_vertices = cr.vertices(vertices.to_dict("records"))
    prof = rc.restore_profile("2.3")
    d = rr.decide(saved, new_vertices, False, prof, "sp")
    assert d.failure == rr.MAX_PARALLELISM_MISMATCH
    edges = pd.DataFrame(new_spec["edges"], columns=["source", "target"])
    view = rf.graph_view(nodes, edges, ops, True)
    old_view = rf.graph_view(old_nodes, edges, old_ops, True)
    fixes = cr.plan_fixes(saved, new_vertices, old_view, view, [])
    assert [f.fix_code for f in fixes] == ["env.setMaxParallelism(64)"]
    assert len(fixes[0].patches) == 3 and (fixes[0].old_name, fixes[0].old_uid) == ("Source: S", "u1")
    proof = cr.run_alone(cr.proof_steps(new_spec, fixes, saved, False, prof, "sp", old_view, []))
    assert proof.verdict == rr.RESTORES


def test_effective_max_parallelism_is_what_flink_shows():
    """job_vertices.effective_max_parallelism: the configured value, else Flink's default for the
    vertex's parallelism (computeDefaultMaxParallelism), -1 where the scheduler picks the parallelism."""
    import numpy as np

    from udfs.compute.one_graph import compute_one
    from udfs.flink.job_graph import effective_max_parallelism

    got = effective_max_parallelism(np.array([4, 100, 2, -1]), np.array([-1, -1, 64, -1]))
    assert got.tolist() == [128, 256, 64, -1]
    _, _, vertices, _ = compute_one(_three_vertex_job(-1))
    assert vertices["effective_max_parallelism"].tolist() == [128, 128, 128]


def test_a_graph_view_of_payload_records_is_the_view_of_their_frames():
    """A check's graph views are built from its payloads' dicts (JSON without null fields),
    no longer from pandas frames of them: the very same view, missing fields included (a
    frame reads them as NaN), on real graphs computed as the pipeline does."""
    import json as _json

    from udfs.compute.one_graph import compute_one
    from udfs.restore import check_rows as cr
    from udfs.restore import fixes as rf

    samples = Path(__file__).resolve().parents[1] / "samples"
    specs = [_json.loads((samples / f).read_text()) for f in ("wordcount.json", "stateful-with-uids.json")]
    specs += [_json.loads(line) for line in (samples / "fleet-sample.jsonl").read_text().splitlines()[:6]]
    for spec in specs:
        nodes, ops, _, _ = compute_one(spec)
        # as _payload's to_json gives them: null fields left out
        node_rows = [{k: v for k, v in r.items() if v is not None and v == v} for r in
                     nodes[cr.NODE_FIELDS].to_dict("records")]  # fmt: skip
        op_rows = [{k: v for k, v in r.items() if v is not None and v == v} for r in
                   ops[cr.OPERATOR_FIELDS].to_dict("records")]  # fmt: skip
        edges = [(e["source"], e["target"]) for e in spec["edges"]]
        for drop in ((), ("uid", "uid_hash", "max_parallelism", "chaining_strategy")):
            rows = [{k: v for k, v in r.items() if k not in drop} for r in node_rows]
            framed = rf.graph_view(
                pd.DataFrame(rows, columns=cr.NODE_FIELDS), pd.DataFrame(edges, columns=["source", "target"]),
                pd.DataFrame(op_rows, columns=cr.OPERATOR_FIELDS), spec.get("chaining_enabled", True),
            )  # fmt: skip
            assert rf.graph_view_of_records(rows, edges, op_rows, spec.get("chaining_enabled", True)) == framed
            assert framed.nodes, spec["graph_id"]


def test_graphs_computed_in_one_batch_are_the_graphs_computed_alone():
    """The restore check computes a partition's patched graphs in one batch (compute_many):
    each graph's operators and vertices are the ones compute_one gives it alone, a repeated
    graph id included (two checks of one job), and a graph the contract or Flink rejects gets
    the very error compute_one raises, without failing its neighbours."""
    import json as _json

    from tests.test_bad_input import BAD
    from udfs.compute.one_graph import compute_many, compute_one
    from udfs.errors import CodedError

    samples = Path(__file__).resolve().parents[1] / "samples"
    specs = [_json.loads(line) for line in (samples / "fleet-sample.jsonl").read_text().splitlines()[:12]]
    specs.insert(3, BAD["FLINK_REJECTED"])
    specs.insert(5, BAD["DUPLICATE_NODE_ID"])
    again = _json.loads(_json.dumps(specs[0]))
    for n in again["nodes"]:
        n["parallelism"] = 7
    specs.append(again)  # the same graph_id as specs[0], other vertices
    got = compute_many(specs)
    assert len(got) == len(specs)
    for spec, result in zip(specs, got, strict=True):
        try:
            nodes, ops, vertices, _ = compute_one(spec)
        except CodedError as e:
            assert isinstance(result, CodedError), spec["graph_id"]
            assert (result.code, str(result)) == (e.code, str(e))
            continue
        assert ops.to_dict("records") == result.operators, spec["graph_id"]
        assert vertices.to_dict("records") == result.vertices, spec["graph_id"]
        assert [n["node_id"] for n in result.nodes] == nodes["node_id"].tolist()
    assert {type(r).__name__ for r in got} >= {"GraphRecords", "ContractError", "HashingError"}
    assert got[0].vertices != got[-1].vertices and got[-1].vertices[0]["graph_id"] == specs[0]["graph_id"]


def test_proofs_run_in_lockstep_batches_prove_what_each_proves_alone(all_cases):
    """Every real failing case's fixes proven together (run_batched: one compute_many per round
    for all of them) give each case the proof it gets alone, rounds included; a check whose own
    steps raise gets its exception back and the others their proofs."""
    from udfs.restore import check_rows as cr

    cases, metadata = all_cases
    args = []
    for c in cases:
        if c["flink_version"] not in ("1.20", "2.3"):
            continue
        saved = rc.saved_from_metadata(metadata[c["savepoint_metadata"]])
        new_vertices = rc.compute_vertices(c["v2"])
        prof = rc.restore_profile(c["flink_version"])
        if rr.decide(saved, new_vertices, False, prof, rc.PLACEHOLDER).verdict != rr.FAILS:
            continue
        old = rc.view_of(c["v1"])
        fixes = cr.plan_fixes(saved, new_vertices, old, rc.view_of(c["v2"]), [])
        if fixes:
            spec = {"chaining_enabled": True, **c["v2"]}
            args.append((spec, fixes, saved, False, prof, rc.PLACEHOLDER, old, []))
    assert len(args) >= 30
    alone = [cr.run_alone(cr.proof_steps(*a)) for a in args]
    broken = (args[0][0] | {"edges": None}, *args[0][1:])  # its own steps raise (no edges to read)
    together = cr.run_batched([cr.proof_steps(*a) for a in [*args[:5], broken, *args[5:]]])
    assert isinstance(together.pop(5), TypeError)
    assert together == alone
    # two of them need a second round: their batch then holds only the graphs still unproven
    assert {p.verdict for p in alone} == {rr.RESTORES} and sorted({p.rounds for p in alone}) == [1, 2]
