"""Flink's own training job (apache/flink-training's long-ride-alerts) against real savepoints and
restores (issue 40): ``check-restore`` over the exported specs of v1 and six edited versions and
v1's real Flink 1.20.5 savepoint (tests/trainingjobs/README.md says how the data was made) says
what Flink did when each edit restored from it: the verdict, the failure stage, the message (and
the exception's class), and for the restores that went through, a loss warning for exactly the
values the probe of the restored state found lost, none where every value came back.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "trainingjobs"
FLINK = json.loads((DATA / "long-rides-1.20.flink.json").read_text())


@pytest.fixture(scope="module")
def checked(spark, settings, tmp_path_factory):
    """One fleet check-restore: every edited version (and v1 itself) against v1's savepoint; per
    check its restore_checks row and its restore_warnings rows."""
    from pipeline.restore.check import check_restore

    root = tmp_path_factory.mktemp("training")
    with tarfile.open(DATA / "long-rides-1.20.savepoint.tar.gz") as tar:
        tar.extractall(root / "sp", filter="data")
    (root / "graphs").mkdir()
    (root / "graphs" / "specs.jsonl").write_text((DATA / "long-rides-1.20.specs.jsonl").read_text())
    checks = [
        {"check_id": edit, "savepoint": f"sp/{FLINK['savepoint']}", "graph_id": f"long-rides@{edit}",
         "savepoint_graph_id": FLINK["savepoint_graph_id"]}
        for edit in [*FLINK["restores"], "base"]
    ]  # fmt: skip
    (root / "checks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in checks))
    check_restore(spark, str(root / "graphs"), str(root / "checks.jsonl"), str(root / "out"), settings)
    read = lambda t: spark.read.format("delta").load(str(root / "out" / t)).toPandas().to_dict("records")  # noqa: E731
    rows = {r["check_id"]: r for r in read("restore_checks")}
    warnings: dict[str, list[dict]] = {}
    for w in read("restore_warnings"):
        warnings.setdefault(w["check_id"], []).append(w)
    return rows, warnings, f"file:{root / 'sp' / FLINK['savepoint']}"


def test_the_data_is_what_the_readme_says():
    specs = [json.loads(x) for x in (DATA / "long-rides-1.20.specs.jsonl").read_text().splitlines()]
    assert sorted(g["graph_id"] for g in specs) == sorted(f"long-rides@{e}" for e in [*FLINK["restores"], "base"])
    base = next(g for g in specs if g["graph_id"] == "long-rides@base")
    rides = "org.apache.flink.training.exercises.common.datatypes.TaxiRide"
    assert base["user_classes"][rides]["kind"] == "pojo"  # a job's class under Flink's package prefix
    declared = [d for n in base["nodes"] for d in n.get("declared_states") or [] if d["name"] == "ride event"]
    assert [(d["kind"], d["basis"], d["unresolved"]) for d in declared] == [("VALUE", "bytecode", None)]


@pytest.mark.parametrize("edit", list(FLINK["restores"]))
def test_the_verdict_stage_and_message_are_flinks(checked, edit):
    rows, _, savepoint = checked
    flink, row = FLINK["restores"][edit], rows[edit]
    assert row["decidable"] is True
    if flink["verdict"] == "RESTORED":
        assert (row["verdict"], row["failure"], row["message"]) == ("RESTORES", None, None)
        return
    message = (row["message"] or "").replace(savepoint, "<savepoint>")
    assert (row["verdict"], row["failure_stage"], message) == ("FAILS", flink["failure_stage"], flink["error_message"])
    if flink["failure_stage"] != "job_init":  # the state half names Flink's root exception
        assert row["error_class"] == flink["error_class"]


@pytest.mark.parametrize("edit", [*FLINK["restores"], "base"])
def test_loss_warnings_are_the_values_flink_lost(checked, edit):
    """The probe's lost values: a state the new version reads under another name (none of its
    values present), a field at its default in every value (renamed: the old field's values
    dropped). No warning where every value came back (v1 against its own savepoint) or the
    restore fails."""
    rows, warnings, _ = checked
    flink = FLINK["restores"].get(edit, {"verdict": "RESTORED", "probe": FLINK["base_probe"]})
    got = sorted((w["state_name"], w["loss"], w["field_path"], w["renamed_to"]) for w in warnings.get(edit, []))
    if flink["verdict"] != "RESTORED":
        assert rows[edit]["verdict"] == "FAILS"
        return
    probe, want = flink["probe"], []
    if probe["present"] == 0:  # the new version does not read the saved state: it looks renamed
        want.append((probe["state"], "STATE_RENAMED", None, probe["read_as"]))
    for (new_field, n), old in zip(probe["fields_at_default"].items(), probe.get("lost_fields", []), strict=True):
        assert n == probe["present"]  # every value came back with the new field at its default
        want.append((probe["state"], "POJO_FIELD_RENAMED", f"value.fields.{old}", new_field))
    assert got == sorted(want)
    assert rows[edit]["loss_warnings"] == len(want)
