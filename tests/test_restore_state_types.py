"""``check-restore`` with the state half, through Spark, on the 80 real restores of
``../shared/vectors/statetypes`` (Flink 1.20.5 -> 2.3.0, and within 2.3.0), laid out as a user
would (graph specs, savepoint folders, a manifest):

- ``savepoint_states`` holds, per savepoint, exactly the rows of the pure-Python reader over the
  same folder (state streams read on the executors, only as far as their proxies go);
- every ``restore_checks`` row is the rules' decision from the same inputs (the topology half,
  then the state half) -- the Spark path adds nothing and loses nothing;
- on the 1.20 -> 2.3 upgrades, where the savepoint alone decides (v2 is v1's program and jar),
  verdict, failure kind, operator, message and failure stage agree with what Flink did, except
  where the row itself says an aspect is not decidable;
- every FAILS row has its state problem in ``restore_state_problems`` and advice in
  ``restore_fixes``.

The new key serializer (spec field ``state_key_serializer_snapshot``) is left out here: the
vectors' specs were exported without it, so key changes are taken as unchanged, and the rows
must say so (``taken_as_unchanged``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from udfs.restore import state_rules as sr
from udfs.restore.check_rows import restore_check_row
from udfs.savepoint.metadata import parse_metadata
from udfs.savepoint.state_meta import decode_operator_states, local_file_reader
from udfs.savepoint.state_rows import state_rows

from . import state_vectors as sv

ASPECTS = sv.ASPECTS


def _facts_dict(facts: dict[str, sr.ClassFacts]) -> dict:
    return {
        name: {
            "kind": f.kind,
            "fields": [{"name": n, "type": t} for n, t in f.fields],
            "enum_constants": list(f.enum_constants) if f.enum_constants is not None else None,
        }
        for name, f in facts.items()
    }


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    cases = sv.read_cases()
    root = tmp_path_factory.mktemp("statetypes")
    (root / "graphs").mkdir()
    lines, checks, folders = [], [], {}
    for c in cases:
        folder = sv.unpack(c, root / "savepoints" / c["case_id"])
        folders[c["case_id"]] = folder
        v1 = dict(c["v1"], user_classes=_facts_dict(sv.class_facts(c, "v1")))
        v2 = dict(c["v2"], user_classes=_facts_dict(sv.class_facts(c, "v2")))
        v2["state_backend"] = c["runtime"]["state_backend"]
        lines += [json.dumps(v1), json.dumps(v2)]
        checks.append({"check_id": c["case_id"], "savepoint": str(folder.relative_to(root)),
                       "graph_id": v2["graph_id"], "savepoint_graph_id": v1["graph_id"]})  # fmt: skip
    (root / "graphs" / "graphs.jsonl").write_text("\n".join(lines) + "\n")
    (root / "checks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in checks))
    return root, cases, folders


@pytest.fixture(scope="module")
def run(spark, settings, fleet, tmp_path_factory):
    from pipeline.restore.check import check_restore

    root, cases, folders = fleet
    out = str(tmp_path_factory.mktemp("out"))
    check_restore(spark, str(root / "graphs"), str(root / "checks.jsonl"), out, settings)
    read = lambda t: spark.read.format("delta").load(f"{out}/{t}").toPandas()  # noqa: E731
    tables = {t: read(t) for t in ("restore_checks", "savepoint_states", "restore_state_problems", "restore_fixes")}
    return {**tables, "_out": out}


def test_savepoint_states_are_the_readers_rows(run, fleet):
    root, cases, folders = fleet
    got = run["savepoint_states"]
    assert len(got) > 0
    for c in cases:
        folder = folders[c["case_id"]]
        given = str(folder.relative_to(root))
        ops = decode_operator_states(parse_metadata((folder / "_metadata").read_bytes()), local_file_reader(folder))
        want = state_rows(given, ops)
        rows = got[got["savepoint"] == given]
        key = ["operator_id", "state_name"]
        have = {tuple(r[k] for k in key): r for r in rows.to_dict("records")}
        assert len(have) == len(want), c["case_id"]
        for w in want:
            h = have[tuple(w[k] for k in key)]
            for col in ("state_kind", "key_type", "value_type", "serializer_tree", "uses_kryo", "first_kryo_path"):
                assert h[col] == w[col], (c["case_id"], w["state_name"], col)


def _expected(case: dict, folder: Path) -> tuple[dict, sr.StateDecision]:
    ci = sv.inputs(case, folder)
    for op in ci.matched.values():  # the specs carry no key serializer: taken as unchanged
        object.__setattr__(op, "key_serializer", None)
        object.__setattr__(op, "key_type", None)
    d = sv.decide(ci, values=True)  # as check-restore decides: with the saved values it asks for
    t = ci.topology
    row = restore_check_row({}, t.verdict, t.failure, t.operator_id, t.message, t.dropped_operator_ids, d)
    return row, d


def test_every_row_is_the_rules_decision(run, fleet):
    root, cases, folders = fleet
    rows = run["restore_checks"].set_index("check_id")
    for c in cases:
        want, _ = _expected(c, folders[c["case_id"]])
        got = rows.loc[c["case_id"]]
        for col in ("verdict", "failure", "operator_id", "failure_stage", "state_name", "decidable"):
            assert got[col] == want[col] or (got[col] is None and want[col] is None), (c["case_id"], col)
        message = (got["message"] or "").replace(f"file:{folders[c['case_id']]}", "<savepoint>")
        assert message == (want["message"] or ""), c["case_id"]
        assert list(got["taken_as_unchanged"] if got["taken_as_unchanged"] is not None else []) == list(
            want["taken_as_unchanged"] or []
        ), c["case_id"]


def test_the_upgrades_agree_with_flink(run, fleet):
    root, cases, folders = fleet
    rows = run["restore_checks"].set_index("check_id")
    upgrades = [c for c in cases if c["_set"].startswith("statetypes-1.20to2.3")]
    assert len(upgrades) == 40
    agree = 0
    for c in upgrades:
        flink = sv.recorded(c, sv.inputs(c, folders[c["case_id"]]))
        got = rows.loc[c["case_id"]]
        uncertain = " ".join(got["undecidable_reasons"] if got["undecidable_reasons"] is not None else [])
        for a in ASPECTS:
            value = got[a] if a != "verdict" else got["verdict"]
            if a == "failure_stage" and "failure_stage" in uncertain:
                continue  # the row says it cannot tell the stage (state first requested while running)
            assert value == flink[a] or (value is None and flink[a] is None), (c["case_id"], a, value, flink[a])
        agree += 1
    assert agree == 40


def test_failures_have_their_problem_and_advice(run):
    checks, problems, fixes = run["restore_checks"], run["restore_state_problems"], run["restore_fixes"]
    state_fails = checks[(checks["verdict"] == "FAILS") & (checks["failure_stage"] != "job_init")]
    assert len(state_fails) > 10
    for r in state_fails.itertuples():
        mine = problems[(problems["check_id"] == r.check_id) & (problems["verdict"] == "FAILS")]
        assert r.failure in set(mine["failure"]), r.check_id
        advice = fixes[(fixes["check_id"] == r.check_id) & fixes["advice_code"].notna()]
        assert len(advice) > 0, r.check_id


def test_the_state_fleet_queries_answer(spark, run, fleet, tmp_path_factory):
    """Queries 9-13 of jobs/example_queries.sql over this run's tables."""
    from devtools.queries import example_queries

    root, cases, folders = fleet
    out = run["_out"]
    queries = {t.split(".")[0]: sql for t, sql in example_queries(out)}
    kryo = spark.sql(queries["9"]).toPandas()
    states = run["savepoint_states"]
    assert len(kryo) == int(states["uses_kryo"].sum()) > 0
    pojo = spark.sql(queries["10"]).toPandas()
    assert set(pojo["pojo_field"]) == {"statetypes.user.PojoColl.tags", "statetypes.user.PojoColl.counts"}
    problems = spark.sql(queries["11"]).toPandas()
    checks = run["restore_checks"]
    assert set(problems["check_id"]) >= set(checks.loc[checks["failure_stage"].isin(["task_restore", "task_running"]),
                                                       "check_id"])  # fmt: skip
    no_uid = spark.sql(queries["12"]).toPandas()
    ops = spark.read.format("delta").load(f"{out}/operators").toPandas()
    matches = spark.read.format("delta").load(f"{out}/restore_operator_matches").toPandas()
    named = states[states["state_name"].notna()].merge(
        matches[matches["status"] == "MATCHED"], on=["savepoint", "operator_id"]
    ).merge(ops, on=["graph_id", "node_id"], suffixes=("", "_op"))
    expected = named[named["uid_op"].isna() & named["user_operator_id"].isna()]
    assert {(r.graph_id, r.node_id, r.state_name) for r in no_uid.itertuples()} == {
        (r.graph_id, r.node_id, r.state_name) for r in expected.itertuples()
    }
    largest = spark.sql(queries["13"]).toPandas()
    assert largest.groupby("savepoint")["rank_in_job"].max().max() <= 3 and len(largest) > 0


def _broken_copies(folders: dict, cases: list, dest: Path) -> dict[str, Path]:
    """Copies of a file-state savepoint: one state file truncated to 10 bytes, one deleted, one
    with bit flips in its head."""
    import random
    import shutil

    runtime = {c["case_id"]: c["runtime"] for c in cases}
    case = next(c for c in cases if runtime[c["case_id"]]["inline_threshold"] == "0b"
                and runtime[c["case_id"]]["state_backend"] == "hashmap")  # fmt: skip
    src = folders[case["case_id"]]
    out = {}
    for kind in ("truncated", "missing", "flipped"):
        copy = dest / kind / src.name
        shutil.copytree(src, copy)
        state = max((p for p in copy.iterdir() if p.name != "_metadata"), key=lambda p: p.stat().st_size)
        data = bytearray(state.read_bytes())
        if kind == "truncated":
            state.write_bytes(bytes(data[:10]))
        elif kind == "missing":
            state.unlink()
        else:
            rng = random.Random(7)
            for _ in range(40):
                i = rng.randrange(min(len(data), 400))
                data[i] ^= 1 << rng.randrange(8)
            state.write_bytes(bytes(data))
        out[kind] = copy
    return {**out, "case": case, "state_file": state.name}


def test_inventory_reads_a_fleet_and_names_what_it_cannot_read(spark, run, fleet, tmp_path, capsys):
    from pipeline.cli import main

    root, cases, folders = fleet
    broken = _broken_copies(folders, cases, tmp_path / "broken")
    out = str(tmp_path / "inv")
    args = ["inventory", "--quiet", "--savepoints", str(root / "savepoints"), str(tmp_path / "broken"),
            str(tmp_path / "no-such-folder"), "--output", out]  # fmt: skip
    assert main(args) == 0, capsys.readouterr().err
    said = capsys.readouterr().out
    assert said.startswith("inventory: 84 savepoints (1 unreadable, "), said
    states = spark.read.format("delta").load(f"{out}/savepoint_states").toPandas()
    errors = spark.read.format("delta").load(f"{out}/savepoint_errors").toPandas()
    # the missing folder, and the truncated and the deleted state file (each named); whole savepoints: nothing
    damaged = {kind: list(errors.loc[errors["savepoint"].str.endswith(str(broken[kind])), "error"])
               for kind in ("truncated", "missing", "flipped")}  # fmt: skip
    assert list(errors.loc[errors["savepoint"].str.endswith("no-such-folder"), "error"]) == [
        "savepoint path does not exist"
    ]
    assert len(errors) == 1 + sum(map(len, damaged.values()))
    assert damaged["truncated"] and all(broken["state_file"] in e and "truncated" in e for e in damaged["truncated"])
    assert damaged["missing"] and all(e.endswith("file does not exist") for e in damaged["missing"])
    # the same states as check-restore read for the same folders (named by their URI here)
    mine = run["savepoint_states"]
    for c in cases[:10]:
        folder = folders[c["case_id"]]
        here = states[states["savepoint"].str.endswith(str(folder).rstrip("/"))]
        there = mine[mine["savepoint"] == str(folder.relative_to(root))]
        key = ["operator_id", "state_name", "value_type", "serializer_tree"]
        assert sorted(map(tuple, here[key].values.tolist())) == sorted(map(tuple, there[key].values.tolist()))
    for kind in ("truncated", "missing", "flipped"):
        rows = states[states["savepoint"].str.endswith(str(broken[kind]))]
        assert len(rows) > 0, kind
        if kind != "flipped":  # a flipped bit may still read as a (different) valid proxy
            bad = rows[rows["unreadable_reason"].notna()]
            assert len(bad) > 0 and broken["state_file"] in " ".join(bad["unreadable_reason"]), kind


def test_a_check_whose_state_file_is_missing_says_it_cannot_decide_naming_it(spark, settings, fleet, tmp_path):
    """A state file missing or truncated where the savepoint says: the topology half's verdict
    stands, the state half is not decidable, and the row names the file."""
    from pipeline.restore.check import check_restore

    root, cases, folders = fleet
    broken = _broken_copies(folders, cases, tmp_path)
    case = broken["case"]
    graphs = tmp_path / "graphs.jsonl"
    graphs.write_text(json.dumps(case["v1"]) + "\n" + json.dumps(case["v2"]) + "\n")
    manifest = tmp_path / "checks.jsonl"
    manifest.write_text("".join(
        json.dumps({"check_id": kind, "savepoint": str(broken[kind]), "graph_id": case["v2"]["graph_id"]}) + "\n"
        for kind in ("truncated", "missing", "flipped")
    ))  # fmt: skip
    out = str(tmp_path / "out")
    check_restore(spark, str(graphs), str(manifest), out, settings)
    rows = {r["check_id"]: r for r in spark.read.format("delta").load(f"{out}/restore_checks").collect()}
    for kind in ("truncated", "missing"):
        row = rows[kind]
        assert row["verdict"] == "RESTORES" and row["decidable"] is False, kind
        reasons = " ".join(row["undecidable_reasons"])
        assert reasons.startswith("STATE_UNREADABLE: state stream managed_keyed[") and broken["state_file"] in reasons
    assert rows["flipped"]["verdict"] in ("RESTORES", "FAILS")  # decided or named, never an abort
