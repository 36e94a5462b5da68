"""Fix proofs on specs as ``export`` writes them (issue 41): the graph fields the stream tables keep
as JSON text (``user_classes``, ``serializer_modules``) go back into the patched spec as the
objects a spec holds, with ``state_backend`` and the nodes' ``declared_states`` beside them.

- a graph's rows turned back into a spec pass the contract again, field for field;
- every check of the committed statetypes sets (conformance/statetypes, seeds 21 and 31: v1 and
  v2 exported by the harness with those fields, real savepoints) that Flink failed at job start:
  one ``check-restore`` run decides them all, and every proposed fix is proven by the patched
  job (100 of 100), st-2.3-s31-00299's changed uid among them. Before the fix every proof of
  these sets ended in ``BAD_FIELD: user_classes must be a JSON object``.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

from udfs.compute.one_graph import compute_many
from udfs.restore.check_rows import spec_of
from udfs.spec.contract import JSON_TEXT_GRAPH_FIELDS, parse_graph

ROOT = Path(__file__).resolve().parent.parent
SETS = ROOT / "conformance" / "statetypes"
SET_NAMES = [f"statetypes-{s}-s21" for s in ("2.3", "1.20", "1.20to2.3", "1.20to2.0", "1.15to2.3")] + [
    f"statetypes-{s}-s31" for s in ("2.3", "1.20", "1.20to2.3", "1.20to2.0")
]
sys.path.insert(0, str(ROOT / "scripts"))

import state_agreement as sa  # noqa: E402


def _case(set_name: str, case_id: str) -> dict:
    with gzip.open(SETS / f"{set_name}.jsonl.gz", "rt") as f:
        return next(c for c in map(json.loads, f) if c["case_id"] == case_id)


def test_a_graphs_rows_make_a_spec_the_contract_accepts_again():
    """st-2.3-s31-00299's v2 as the harness exported it: its rows back as a spec (what a proof
    patches) parse to the same rows, and compute; the JSON-text fields are objects in the spec."""
    spec = _case("statetypes-2.3-s31", "st-2.3-s31-00299")["v2"]
    assert {"user_classes", "serializer_modules", "state_backend"} <= set(spec)
    pg = parse_graph(spec)
    assert all(isinstance(pg.graph[f], str) for f in JSON_TEXT_GRAPH_FIELDS)
    again = spec_of(pg.graph, pg.nodes, pg.edges)
    assert again["user_classes"] == spec["user_classes"] and again["serializer_modules"] == spec["serializer_modules"]
    round_trip = parse_graph(again)
    assert (round_trip.graph, round_trip.nodes, round_trip.edges) == (pg.graph, pg.nodes, pg.edges)
    (computed,) = compute_many([again])
    assert not isinstance(computed, Exception), computed


@pytest.fixture(scope="module")
def job_start_failures(spark, settings, tmp_path_factory):
    """One check-restore (nothing written) over every case of the sets that failed at job start."""
    from pipeline.restore.check import run_checks

    cases = [
        c for name in SET_NAMES for c in sa.read_set(SETS / f"{name}.jsonl.gz") if c["failure_stage"] == "job_init"
    ]
    root = tmp_path_factory.mktemp("fixproofs")
    sa.lay_out(cases, SETS, root)
    run = run_checks(spark, str(root / "graphs"), str(root / "checks.jsonl"), None, settings)
    return cases, run.tables["restore_checks"].toPandas(), run.tables["restore_fixes"].toPandas()


def test_every_fix_on_exported_specs_is_proven(job_start_failures):
    cases, checks, fixes = job_start_failures
    assert len(cases) == 100 and (checks["verdict"] == "FAILS").all()
    assert set(fixes["check_id"]) >= set(checks["check_id"])  # every failing check has its fix row
    spec_fixes = fixes[fixes["advice_code"].isna()]
    unproven = spec_fixes[spec_fixes["verified"] != True]  # noqa: E712 - a pandas column
    assert unproven.empty, unproven[["check_id", "fix_code", "verified_verdict", "verified_failure"]]
    (one,) = spec_fixes[spec_fixes["check_id"] == "st-2.3-s31-00299"].to_dict("records")
    assert (one["fix_code"], list(one["reasons"]), one["verified_verdict"]) == (
        '.setUidHash("c4c480dfd694dd77b0a91fa691d5b9e5")', ["UID_CHANGED"], "RESTORES",
    )  # fmt: skip
